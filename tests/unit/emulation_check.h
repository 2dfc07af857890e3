#pragma once
// The check of a block program's host emulation against the CPU operator: a random input (uniform
// in [-1, 1), rounded to the emulation's storage type), the CPU operator's result in double, and
// the relative 2-norm difference of the emulated result (infinity where it is not finite).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "core/vector.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/device/ghosted_apply.h"
#include "operators/geometry_data.h"
#include "mesh/geometry_field.h"
#include "tensor/evaluator.h"

namespace tcfem::test_inputs {

/// Points a program's stored geometry p.coef at `coef` (Stored = Number), or p.coef_fp32 at the
/// returned rounding of it to fp32 with p.coef null (Stored = float), so that only it can be read.
template <typename Stored, typename Number, class Params, class Coef>
std::vector<float> point_stored_data(Params& p, const Coef& coef) {
  std::vector<float> rounded;
  if constexpr (std::is_same_v<Stored, Number>) {
    p.coef = coef.data();
  } else {
    rounded.assign(coef.begin(), coef.end());
    p.coef = nullptr;
    p.coef_fp32 = rounded.data();
  }
  return rounded;
}

/// The coefficient at the points of `quad` of every cell, [cell * q^dim + point] (points x
/// fastest), from the geometry field as the CPU operator evaluates it: the host's twin of the
/// device's a_points (the matrix-free programs at points that are not the nodes).
template <int dim, typename Number>
std::vector<Number> coefficient_at_points(const mesh::BoxMesh<dim>& mesh, const fe::Quadrature1D& quad,
                                          int degree, const operators::Coefficient& a) {
  const mesh::GeometryField<dim> geometry(mesh, degree);
  const tensor::Evaluator<dim, double> ev(fe::LagrangeBasis1D::gauss_lobatto(degree), quad);
  const int nq = ev.points_per_cell(), nb = ev.dofs_per_cell();
  std::vector<double> nodes(dim * nb), x(dim * nq), J(dim * dim * nq);
  std::vector<Number> out(mesh.n_owned_cells() * nq);
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    geometry.cell_nodes(mesh.cell_index(cell), nodes.data());
    operators::cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
    for (int i = 0; i < nq; ++i) {
      double xq[dim];
      for (int d = 0; d < dim; ++d) xq[d] = x[d * nq + i];
      out[cell * nq + i] = Number(a(xq));
    }
  }
  return out;
}

/// ||y - A x|| / ||A x|| for y = emulate(x) (emulate(const Number* x, Number* y) over n entries,
/// y poisoned with NaN before).
template <int dim, typename Number, class Emulate>
double emulation_error(const operators::MatrixFreeOperator<dim, double>& A, std::size_t n, std::uint64_t seed,
                       Emulate&& emulate) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<double> x(n), ref(n);
  std::vector<Number> xs(n), out(n, std::numeric_limits<Number>::quiet_NaN());
  for (std::size_t i = 0; i < n; ++i) x[i] = xs[i] = static_cast<Number>(dist(rng));
  A.vmult(ref, x);
  emulate(xs.data(), out.data());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(double(out[i]))) return std::numeric_limits<double>::infinity();
    diff += (ref[i] - out[i]) * (ref[i] - out[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

/// The launches of a split apply (the geometry programs' split_apply): the cells of `interior`,
/// then those around it (operators::cells_around), each a copy of p restricted to its cells;
/// run(params, zero) emulates one (zero: the first, which zeroes dst).
template <int dim, class Params, class Run>
void emulate_split(const Params& p, const operators::CellRange& interior, Run&& run) {
  int n[3] = {1, 1, 1};
  for (int d = 0; d < dim; ++d) n[d] = p.n_cells[d];
  std::vector<operators::CellRange> regions{interior};
  for (const auto& r : operators::cells_around(dim, n, interior)) regions.push_back(r);
  bool first = true;
  for (const auto& r : regions) {
    Params q = p;
    std::int64_t cells = 1;
    for (int d = 0; d < dim; ++d) {
      q.region_lo[d] = r.lo[d];
      q.region_n[d] = r.hi[d] - r.lo[d];
      cells *= r.hi[d] - r.lo[d];
    }
    q.total_cells = cells;
    run(q, first);
    first = false;
  }
}

/// A curved map of the unit box without separable structure (a quarter annulus, bent and sheared
/// further in 3D).
template <int dim>
mesh::Domain<dim> curved_domain() {
  mesh::Point<dim> lo, hi;
  lo.fill(0.0);
  hi.fill(1.0);
  return mesh::Domain<dim>::box(lo, hi, [](const mesh::Point<dim>& X) {
    mesh::Point<dim> x = X;
    x[0] = (1.0 + X[0]) * std::cos(0.5 * M_PI * X[1]);
    x[1] = (1.0 + X[0]) * std::sin(0.5 * M_PI * X[1]) + 0.1 * X[0] * X[0];
    if constexpr (dim == 3) {
      x[0] += 0.05 * X[2] * X[2];
      x[2] = X[2] + 0.1 * X[0] * X[1];
    }
    return x;
  });
}

/// The cg Laplacian's configuration with a variable coefficient (1..4 on the curved domain).
inline operators::OperatorConfig curved_config(int k, fe::QuadratureKind kind) {
  operators::OperatorConfig cfg;
  cfg.disc = fe::Disc::cg;
  cfg.degree = k;
  cfg.quadrature = kind;
  cfg.coefficient = [](const double* x) { return 1.0 + x[0] * x[0] + 0.5 * x[1]; };
  return cfg;
}

}  // namespace tcfem::test_inputs
