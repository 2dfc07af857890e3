#include "problem/poisson.h"

#include <cmath>
#include <memory>
#include <numbers>

#include "core/parallel.h"

#include "fe/lagrange.h"
#include "mesh/geometry_field.h"
#include "operators/geometry_data.h"
#include "tensor/evaluator.h"

namespace tcfem::problem {

using std::numbers::pi;

template <int dim>
double exact_solution(const mesh::Point<dim>& x) {
  double u = 1.0;
  for (int d = 0; d < dim; ++d) u *= std::sin(pi * x[d]);
  return u;
}

template <int dim>
mesh::Point<dim> exact_gradient(const mesh::Point<dim>& x) {
  mesh::Point<dim> g;
  for (int d = 0; d < dim; ++d) {
    double v = pi * std::cos(pi * x[d]);
    for (int e = 0; e < dim; ++e)
      if (e != d) v *= std::sin(pi * x[e]);
    g[d] = v;
  }
  return g;
}

template <int dim>
double right_hand_side(const mesh::Point<dim>& x) {
  return dim * pi * pi * exact_solution<dim>(x);
}

namespace {
// The geometry of one cell at the Gauss(k+2) points: x[dim][nq], J[dim*dim][nq], weights w[nq].
// Cartesian cells: x = (c + xi) h and J = diag(h) directly; other cells: the isoparametric map of
// the mapped nodes. One per thread (the evaluator holds scratch memory).
template <int dim>
struct CellPoints {
  CellPoints(const mesh::BoxMesh<dim>& mesh, int degree)
      : quad(fe::gauss(degree + 2)), ev(fe::LagrangeBasis1D::gauss_lobatto(degree), quad), geometry(mesh, degree),
        cartesian(mesh.geometry() == mesh::GeometryKind::cartesian), h(mesh.cell_size()), origin(mesh.origin()) {
    nq = ev.points_per_cell();
    nodes.resize(dim * ev.dofs_per_cell());
    x.resize(dim * nq);
    J.resize(dim * dim * nq);
    w.resize(nq);
    for (int q = 0; q < nq; ++q) {
      int r = q;
      w[q] = 1.0;
      for (int d = 0; d < dim; ++d) {
        w[q] *= quad.weights[r % quad.size()];
        r /= quad.size();
      }
    }
  }
  void reinit(const std::array<int, dim>& c) {
    if (!cartesian) {
      geometry.cell_nodes(c, nodes.data());
      operators::cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
      return;
    }
    const int n = quad.size();
    for (int q = 0; q < nq; ++q) {
      int r = q;
      for (int d = 0; d < dim; ++d) {
        x[d * nq + q] = origin[d] + (c[d] + quad.points[r % n]) * h[d];
        r /= n;
      }
    }
    // sin and cos of pi x_d per direction and 1D point (the same x_d as above)
    for (int d = 0; d < dim; ++d) {
      sin_1d[d].resize(n);
      cos_1d[d].resize(n);
      for (int i = 0; i < n; ++i) {
        const double xd = origin[d] + (c[d] + quad.points[i]) * h[d];
        sin_1d[d][i] = std::sin(pi * xd);
        cos_1d[d][i] = std::cos(pi * xd);
      }
    }
    if (!jacobian_set) {  // constant
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b)
          for (int q = 0; q < nq; ++q) J[(a * dim + b) * nq + q] = a == b ? h[a] : 0.0;
      jacobian_set = true;
    }
  }
  mesh::Point<dim> point(int q) const {
    mesh::Point<dim> p;
    for (int d = 0; d < dim; ++d) p[d] = x[d * nq + q];
    return p;
  }
  /// exact_solution and exact_gradient at point q: on Cartesian cells from the 1D tables, with the
  /// arithmetic of those functions (the same values bit for bit)
  double exact(int q) const {
    if (!cartesian) return exact_solution<dim>(point(q));
    const int n = quad.size();
    double u = 1.0;
    for (int d = 0, r = q; d < dim; ++d, r /= n) u *= sin_1d[d][r % n];
    return u;
  }
  mesh::Point<dim> exact_grad(int q) const {
    if (!cartesian) return exact_gradient<dim>(point(q));
    const int n = quad.size();
    std::array<int, dim> i;
    for (int d = 0, r = q; d < dim; ++d, r /= n) i[d] = r % n;
    mesh::Point<dim> g;
    for (int d = 0; d < dim; ++d) {
      double v = pi * cos_1d[d][i[d]];
      for (int e = 0; e < dim; ++e)
        if (e != d) v *= sin_1d[e][i[e]];
      g[d] = v;
    }
    return g;
  }
  fe::Quadrature1D quad;
  tensor::Evaluator<dim, double> ev;
  std::array<std::vector<double>, dim> sin_1d, cos_1d;
  mesh::MappedCellNodes<dim> geometry;  // computed per cell: no stored geometry field
  bool cartesian;
  mesh::Point<dim> h, origin;
  bool jacobian_set = false;
  int nq = 0;
  std::vector<double> nodes, x, J, w;
};

// Cells per thread and batch of the parallel cell loops.
constexpr std::size_t cells_per_thread_batch = 2048;

// The owned cells in batches of consecutive cell numbers: per_cell(state, cell, slot, thread) runs
// in parallel over a batch (slot = position in the batch), then after_batch(first, count) runs on
// the calling thread, so that results can be combined in the sequential cell order.
template <int dim, typename State, typename PerCell, typename AfterBatch>
void for_each_cell_batch(const mesh::BoxMesh<dim>& mesh, std::vector<std::unique_ptr<State>>& states,
                         PerCell&& per_cell, AfterBatch&& after_batch) {
  const int threads = static_cast<int>(states.size());
  const std::size_t n_cells = mesh.n_owned_cells();
  const std::size_t batch = cells_per_thread_batch * static_cast<std::size_t>(threads);
  for (std::size_t first = 0; first < n_cells; first += batch) {
    const std::size_t count = std::min(batch, n_cells - first);
    parallel_chunks(
        0, count,
        [&](std::size_t b, std::size_t e, int t) {
          for (std::size_t slot = b; slot < e; ++slot) per_cell(*states[t], first + slot, slot);
        },
        threads);
    after_batch(first, count);
  }
}

template <int dim, typename State, typename... Args>
std::vector<std::unique_ptr<State>> make_states(int threads, const Args&... args) {
  std::vector<std::unique_ptr<State>> states;
  for (int t = 0; t < threads; ++t) states.push_back(std::make_unique<State>(args...));
  return states;
}

int cell_loop_threads(std::size_t n_cells) {
  // small meshes: one thread (thread start-up would cost more than the work)
  return n_cells < cells_per_thread_batch ? 1 : host_threads();
}

template <int dim>
std::array<std::array<double, dim>, dim> jacobian_at(const std::vector<double>& J, int q, int nq) {
  std::array<std::array<double, dim>, dim> Jq;
  for (int a = 0; a < dim; ++a)
    for (int b = 0; b < dim; ++b) Jq[a][b] = J[(a * dim + b) * nq + q];
  return Jq;
}
}  // namespace

template <int dim>
Vector<double> assemble_rhs(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs) {
  Vector<double> b = fe::make_vector<double>(dofs);
  const int n = dofs.dofs_per_cell();
  struct State : CellPoints<dim> {
    State(const mesh::BoxMesh<dim>& m, int k) : CellPoints<dim>(m, k) {}
    std::vector<double> fq;
  };
  const int threads = cell_loop_threads(mesh.n_owned_cells());
  auto states = make_states<dim, State>(threads, mesh, dofs.degree());
  // cell vectors in parallel, summed into b in the sequential cell order (results independent of
  // the thread count)
  std::vector<double> local(std::min(mesh.n_owned_cells(), cells_per_thread_batch * threads) * n);
  std::vector<index_t> idx(n);
  for_each_cell_batch<dim>(
      mesh, states,
      [&](State& s, std::size_t cell, std::size_t slot) {
        s.reinit(mesh.cell_index(cell));
        const int nq = s.nq;
        s.fq.resize(nq);
        for (int q = 0; q < nq; ++q) {
          std::array<std::array<double, dim>, dim> inv;
          const double det = operators::invert<dim>(jacobian_at<dim>(s.J, q, nq), inv);
          s.fq[q] = dim * pi * pi * s.exact(q) * det * s.w[q];  // right_hand_side(x_q)
        }
        s.ev.integrate_values(s.fq.data(), local.data() + slot * n);
      },
      [&](std::size_t first, std::size_t count) {
        for (std::size_t slot = 0; slot < count; ++slot) {
          dofs.cell_dof_indices(mesh.cell_index(first + slot), idx.data());
          const double* l = local.data() + slot * n;
          for (int i = 0; i < n; ++i) b[idx[i]] += l[i];
        }
      });
  b.compress();  // distributed cg: the ghost nodes' sums to their owners
  if (dofs.disc() == fe::Disc::cg) {
    const auto& mask = dofs.boundary_mask();
    parallel_chunks(0, b.size(), [&](std::size_t i0, std::size_t i1, int) {
      for (std::size_t i = i0; i < i1; ++i)
        if (mask[i]) b[i] = 0.0;
    }, host_threads(), std::size_t(1) << 16);
  }
  return b;
}

template <int dim>
Errors compute_errors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u) {
  const int n = dofs.dofs_per_cell();
  struct State : CellPoints<dim> {
    State(const mesh::BoxMesh<dim>& m, int k, int n_dofs) : CellPoints<dim>(m, k), idx(n_dofs), local(n_dofs) {}
    std::vector<index_t> idx;
    std::vector<double> local, uq, grad;
  };
  u.update_ghost_values();  // distributed: the cells' nodes owned by other ranks
  const int threads = cell_loop_threads(mesh.n_owned_cells());
  auto states = make_states<dim, State>(threads, mesh, dofs.degree(), n);
  // per-cell sums in parallel, added in the sequential cell order
  std::vector<std::array<long double, 2>> cell_sums(std::min(mesh.n_owned_cells(), cells_per_thread_batch * threads));
  long double e0 = 0.0L, e1 = 0.0L;
  for_each_cell_batch<dim>(
      mesh, states,
      [&](State& s, std::size_t cell, std::size_t slot) {
        const auto c = mesh.cell_index(cell);
        s.reinit(c);
        const int nq = s.nq;
        s.uq.resize(nq);
        s.grad.resize(dim * nq);
        dofs.cell_dof_indices(c, s.idx.data());
        for (int i = 0; i < n; ++i) s.local[i] = u[s.idx[i]];
        s.ev.values(s.local.data(), s.uq.data());
        s.ev.gradients_from_values(s.uq.data(), s.grad.data());
        long double c0 = 0.0L, c1 = 0.0L;
        for (int q = 0; q < nq; ++q) {
          std::array<std::array<double, dim>, dim> inv;
          const double jxw = operators::invert<dim>(jacobian_at<dim>(s.J, q, nq), inv) * s.w[q];
          const double diff = s.uq[q] - s.exact(q);
          c0 += diff * diff * jxw;
          const auto g = s.exact_grad(q);
          for (int a = 0; a < dim; ++a) {
            double gh = 0.0;  // physical gradient: J^{-T} ref gradient
            for (int b = 0; b < dim; ++b) gh += inv[b][a] * s.grad[b * nq + q];
            c1 += (gh - g[a]) * (gh - g[a]) * jxw;
          }
        }
        cell_sums[slot] = {c0, c1};
      },
      [&](std::size_t, std::size_t count) {
        for (std::size_t slot = 0; slot < count; ++slot) {
          e0 += cell_sums[slot][0];
          e1 += cell_sums[slot][1];
        }
      });
  return sum_errors(mesh.partition().comm, e0, e1);
}

template <int dim>
void cell_node_values(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u,
                      std::vector<double>& points, std::vector<double>& values) {
  const mesh::MappedCellNodes<dim> geometry(mesh, dofs.degree());
  const int n = dofs.dofs_per_cell();
  const std::size_t n_cells = mesh.n_owned_cells();
  points.assign(n_cells * n * 3, 0.0);
  values.assign(n_cells * n, 0.0);
  parallel_chunks(0, n_cells, [&](std::size_t c0, std::size_t c1, int) {
    std::vector<double> nodes(dim * n);
    std::vector<index_t> idx(n);
    for (std::size_t cell = c0; cell < c1; ++cell) {
      const auto c = mesh.cell_index(cell);
      geometry.cell_nodes(c, nodes.data());
      dofs.cell_dof_indices(c, idx.data());
      for (int i = 0; i < n; ++i) {
        for (int d = 0; d < dim; ++d) points[(cell * n + i) * 3 + d] = nodes[d * n + i];
        values[cell * n + i] = u[idx[i]];
      }
    }
  }, host_threads(), 256);
}

template double exact_solution<2>(const mesh::Point<2>&);
template double exact_solution<3>(const mesh::Point<3>&);
template mesh::Point<2> exact_gradient<2>(const mesh::Point<2>&);
template mesh::Point<3> exact_gradient<3>(const mesh::Point<3>&);
template double right_hand_side<2>(const mesh::Point<2>&);
template double right_hand_side<3>(const mesh::Point<3>&);
template Vector<double> assemble_rhs<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&);
template Vector<double> assemble_rhs<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&);
template Errors compute_errors<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const Vector<double>&);
template Errors compute_errors<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const Vector<double>&);
template void cell_node_values<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const Vector<double>&,
                                  std::vector<double>&, std::vector<double>&);
template void cell_node_values<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const Vector<double>&,
                                  std::vector<double>&, std::vector<double>&);

}  // namespace tcfem::problem
