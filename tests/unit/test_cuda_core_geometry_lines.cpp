// The lines program of the general-geometry cuda-core kernel (3D BP5 and BP3) on the CPU: the even-odd
// products against the full matrices, the host emulation (the phase functions the kernel calls)
// against the CPU operator on the general path, and the searched layout under the bank model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "fe/quadrature.h"
#include "operators/cuda_core/geometry_lines_setup.h"
#include "operators/cuda_core/layouts.h"
#include "operators/cpu/laplace_operator.h"
#include "emulation_check.h"
#include "operators/geometry_data.h"
#include "mesh/geometry_field.h"

namespace {
using namespace tcfem;
using namespace tcfem::operators::cuda_core;

/// Largest |M u - eo_apply(M, u)| for a random (anti-)centrosymmetric r x c matrix.
template <int r, int c, int sigma>
double eo_error(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> M(r * c);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) {
      const int mi = r - 1 - i, mj = c - 1 - j;
      if (i * c + j < mi * c + mj)
        M[i * c + j] = dist(rng);
      else if (i * c + j == mi * c + mj)
        M[i * c + j] = sigma > 0 ? dist(rng) : 0.0;
      else
        M[i * c + j] = sigma * M[mi * c + mj];
    }
  EXPECT_LT(eo_symmetry_defect(M.data(), r, c, sigma), 1e-15);
  const auto A = make_eo_matrix<r, c, sigma, double>(M.data());
  double u[c], v[r];
  for (int j = 0; j < c; ++j) u[j] = dist(rng);
  eo_apply<false>(A, u, v);
  double err = 0;
  for (int i = 0; i < r; ++i) {
    double s = 0;
    for (int j = 0; j < c; ++j) s += M[i * c + j] * u[j];
    err = std::max(err, std::abs(s - v[i]));
  }
  // accumulate: v += M u doubles the result
  eo_apply<true>(A, u, v);
  for (int i = 0; i < r; ++i) {
    double s = 0;
    for (int j = 0; j < c; ++j) s += M[i * c + j] * u[j];
    err = std::max(err, std::abs(2 * s - v[i]));
  }
  return err;
}

TEST(CudaCoreGeometryLines, EvenOddProducts) {
  std::mt19937_64 rng(7);
  EXPECT_LT((eo_error<2, 2, -1>(rng)), 1e-14);
  EXPECT_LT((eo_error<3, 3, -1>(rng)), 1e-14);
  EXPECT_LT((eo_error<4, 4, -1>(rng)), 1e-14);
  EXPECT_LT((eo_error<7, 7, -1>(rng)), 1e-14);
  EXPECT_LT((eo_error<10, 10, -1>(rng)), 1e-14);
  EXPECT_LT((eo_error<5, 5, 1>(rng)), 1e-14);
  EXPECT_LT((eo_error<6, 6, 1>(rng)), 1e-14);
  EXPECT_LT((eo_error<6, 5, 1>(rng)), 1e-14);
  EXPECT_LT((eo_error<5, 6, 1>(rng)), 1e-14);
  EXPECT_LT((eo_error<7, 4, -1>(rng)), 1e-14);
  EXPECT_LT((eo_error<4, 7, -1>(rng)), 1e-14);
}

template <int k, fe::QuadratureKind kind, typename Number>
double lines_error(const std::array<int, 3>& nc, mesh::GeometryKind geo, std::uint64_t seed, bool reverse, int cells,
                   bool padded, int block_limit = 0) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == fe::QuadratureKind::gll_k1;
  mesh::BoxMesh<3> mesh(nc, geo);
  fe::DofLayout<3> dofs(mesh, fe::Disc::cg, k);
  operators::OperatorConfig cfg;
  cfg.disc = fe::Disc::cg;
  cfg.degree = k;
  cfg.quadrature = kind;
  cfg.cartesian_fast_path = false;
  operators::MatrixFreeOperator<3, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto setup = make_geom_lines_setup<k, q, Number>(mesh, kind, cells, padded, block_limit);
  const auto p = setup.host_params();
  const std::size_t n = dofs.n_local();
  return test_inputs::emulation_error<3, Number>(
      A, n, seed, [&](const Number* x, Number* y) { emulate_geom_lines<k, q, colloc, Number>(p, x, y, n, reverse); });
}

template <int k, fe::QuadratureKind kind>
void check_lines(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(kind);
  using G = mesh::GeometryKind;
  const std::array<int, 3> m3 = k <= 2 ? std::array<int, 3>{5, 4, 4} : std::array<int, 3>{3, 2, 3};
  EXPECT_LT((lines_error<k, kind, double>(m3, G::deformed, seeds(), false, 0, true)), 1e-12) << what;
  EXPECT_LT((lines_error<k, kind, double>(m3, G::deformed, seeds(), true, 0, true)), 1e-12) << "rev " << what;
  EXPECT_LT((lines_error<k, kind, double>(m3, G::deformed, seeds(), true, 2, false)), 1e-12) << "cells=2 odd " << what;
  EXPECT_LT((lines_error<k, kind, double>(m3, G::deformed, seeds(), false, 1, true)), 1e-12) << "cells=1 " << what;
  EXPECT_LT((lines_error<k, kind, double>(m3, G::deformed, seeds(), true, 0, true, 2)), 1e-12) << "limit 2 " << what;
  EXPECT_LT((lines_error<k, kind, float>(m3, G::deformed, seeds(), false, 0, true)), 1e-5) << "fp32 " << what;
  EXPECT_LT((lines_error<k, kind, double>({1, 2, 1}, G::deformed, seeds(), false, 0, true)), 1e-12) << what;
  EXPECT_LT((lines_error<k, kind, double>({2, 1, 2}, G::cartesian, seeds(), false, 0, true)), 1e-12) << "cart " << what;
}

template <int... K>
void check_lines_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_lines<K + 1, fe::QuadratureKind::gll_k1>(seeds), ...);
  (check_lines<K + 1, fe::QuadratureKind::gauss_k2>(seeds), ...);
  (check_lines<K + 1, fe::QuadratureKind::gauss_k1>(seeds), ...);
}

TEST(CudaCoreGeometryLines, EmulatedKernelMatchesCpu) {
  std::mt19937_64 seeds(20261122);
  check_lines_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

/// The lines program with stored geometry (partial assembly) on a curved map with a variable
/// coefficient (Neumann on the faces that `dirichlet` leaves out): the host emulation against the CPU operator, the cell data from
/// compute_cell_geometry in the storage type (Stored = float with Number = double: computed in
/// double, rounded to fp32, read from p.coef_fp32 alone).
template <int k, fe::QuadratureKind kind, typename Number, typename Stored = Number>
double stored_lines_error(const std::array<int, 3>& nc, std::uint64_t seed, bool reverse, int cells,
                          const fe::DirichletFaces<3>& dirichlet = fe::all_dirichlet<3>(),
                          const operators::CellRange* split = nullptr) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == fe::QuadratureKind::gll_k1;
  const mesh::BoxMesh<3> mesh(nc, test_inputs::curved_domain<3>());
  fe::DofLayout<3> dofs(mesh, fe::Disc::cg, k, dirichlet);
  const auto cfg = test_inputs::curved_config(k, kind);
  operators::MatrixFreeOperator<3, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto geometry = operators::compute_cell_geometry<3, Number>(
      mesh, mesh::GeometryField<3>(mesh, k), fe::make_quadrature(kind, k), cfg.coefficient);
  const auto setup = make_geom_lines_setup<k, q, Number>(mesh, kind, cells, true, 0, true);
  auto p = setup.host_params();
  const auto rounded = test_inputs::point_stored_data<Stored, Number>(p, geometry.coef);
  p.dirichlet = fe::dirichlet_bits(dirichlet);
  const std::size_t n = dofs.n_local();
  return test_inputs::emulation_error<3, Number>(A, n, seed, [&](const Number* x, Number* y) {
    if (!split) {
      emulate_geom_lines<k, q, colloc, Number, true, false, false, false, Stored>(p, x, y, n, reverse);
      return;
    }
    test_inputs::emulate_split<3>(p, *split, [&](const auto& g, bool zero) {
      emulate_geom_lines<k, q, colloc, Number, true, false, false, false, Stored>(g, x, y, n, reverse, zero);
    });
  });
}

template <int k, fe::QuadratureKind kind>
void check_stored_lines(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(kind);
  const std::array<int, 3> m3 = k <= 2 ? std::array<int, 3>{4, 3, 3} : std::array<int, 3>{3, 2, 2};
  EXPECT_LT((stored_lines_error<k, kind, double>(m3, seeds(), false, 0)), 1e-12) << what;
  EXPECT_LT((stored_lines_error<k, kind, double>(m3, seeds(), true, 2)), 1e-12) << "rev cells=2 " << what;
  EXPECT_LT((stored_lines_error<k, kind, double>({1, 2, 1}, seeds(), false, 0)), 1e-12) << what;
  EXPECT_LT((stored_lines_error<k, kind, float>(m3, seeds(), false, 0)), 1e-5) << "fp32 " << what;
  // fp64 with the stored data rounded to fp32: the rounding's 6e-8 per value, not fp32 arithmetic
  EXPECT_LT((stored_lines_error<k, kind, double, float>(m3, seeds(), true, 2, {false, true, true, false, false, true})),
            1e-6)
      << "fp64, fp32 stored, Neumann " << what;
  EXPECT_LT((stored_lines_error<k, kind, double>(m3, seeds(), true, 0, {false, true, true, false, false, true})),
            1e-12)
      << "Neumann " << what;
  // the apply split around interior cells: the interior, then up to six launches around it
  const operators::CellRange cut{{1, 1, 1}, {3, 2, 2}};
  EXPECT_LT((stored_lines_error<k, kind, double>({4, 3, 3}, seeds(), false, 0, fe::all_dirichlet<3>(), &cut)), 1e-12)
      << "split " << what;
  EXPECT_LT((stored_lines_error<k, kind, float>({4, 3, 3}, seeds(), true, 2, {false, true, true, false, false, true},
                                                &cut)),
            1e-5)
      << "split fp32 Neumann " << what;
}

template <int... K>
void check_stored_lines_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_stored_lines<K + 1, fe::QuadratureKind::gll_k1>(seeds), ...);
  (check_stored_lines<K + 1, fe::QuadratureKind::gauss_k2>(seeds), ...);
}

TEST(CudaCoreGeometryLines, StoredGeometryEmulationMatchesCpu) {
  std::mt19937_64 seeds(20261124);
  check_stored_lines_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

/// The cells of a map as the node field finds them.
enum class Cells { trilinear, quadratic, curved };

/// The lines program with the geometry recomputed from the node field (matrix-free, BP5 and BP3):
/// the host emulation against the CPU operator on a curved map (the displacement from the
/// trilinear cells stored), on a map quadratic in each coordinate (the displacement on the Q2
/// lattice, k >= 3) or on an affine image of the box (trilinear cells: no displacement), with or
/// without a variable coefficient (BP3: given at the points).
template <int k, typename Number, fe::QuadratureKind kind = fe::QuadratureKind::gll_k1>
double node_lines_error(const std::array<int, 3>& nc, const mesh::Domain<3>& domain, bool coefficient,
                        std::uint64_t seed, bool reverse, int cells, Cells kind_of_cells,
                        const fe::DirichletFaces<3>& dirichlet = fe::all_dirichlet<3>(),
                        const operators::CellRange* split = nullptr) {
  constexpr bool colloc = kind == fe::QuadratureKind::gll_k1;
  constexpr int q = colloc ? k + 1 : k + 2;
  const mesh::BoxMesh<3> mesh(nc, domain);
  fe::DofLayout<3> dofs(mesh, fe::Disc::cg, k, dirichlet);
  auto cfg = test_inputs::curved_config(k, kind);
  if (!coefficient) cfg.coefficient = {};
  operators::MatrixFreeOperator<3, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto nodes =
      operators::compute_node_geometry<Number>(mesh, mesh::GeometryField<3>(mesh, k), cfg.coefficient);
  // Q1 node fields (k = 1) are trilinear whatever the map; Q2 lattice values below k only
  EXPECT_EQ(!nodes.disp.empty(), kind_of_cells != Cells::trilinear && k > 1) << "largest displacement " << nodes.max_disp;
  EXPECT_EQ(!nodes.disp2.empty(), kind_of_cells == Cells::quadratic && k >= 3);
  // trilinear cells take the program without the displacement (as the operator does)
  const bool trilinear = nodes.disp.empty();
  const auto setup = make_geom_lines_setup<k, q, Number>(mesh, kind, cells, true, 0, false, true, trilinear);
  EXPECT_EQ(setup.base.layout.buffers, trilinear ? 4 : 10);
  auto p = setup.host_params();
  p.vertices = nodes.vertices.data();
  p.n_vertices = nodes.n_vertices;
  // cells of geometry order 2 read the Q2 lattice only (as the device operator, which frees disp)
  p.disp = nodes.disp.empty() || !nodes.disp2.empty() ? nullptr : nodes.disp.data();
  p.n_nodes = nodes.n_nodes;
  p.disp2 = nodes.disp2.empty() ? nullptr : nodes.disp2.data();
  p.n_nodes2 = nodes.n_nodes2;
  std::vector<Number> a_points;
  if (colloc) {
    p.a_nodes = nodes.a_nodes.empty() ? nullptr : nodes.a_nodes.data();
  } else if (coefficient) {
    a_points = test_inputs::coefficient_at_points<3, Number>(mesh, fe::make_quadrature(kind, k), k, cfg.coefficient);
    p.a_points = a_points.data();
  }
  p.dirichlet = fe::dirichlet_bits(dirichlet);
  const std::size_t n = dofs.n_local();
  auto run = [&](const auto& g, const Number* x, Number* y, bool zero) {
    if (trilinear)
      emulate_geom_lines<k, q, colloc, Number, false, true, true>(g, x, y, n, reverse, zero);
    else
      emulate_geom_lines<k, q, colloc, Number, false, true>(g, x, y, n, reverse, zero);
  };
  return test_inputs::emulation_error<3, Number>(A, n, seed, [&](const Number* x, Number* y) {
    if (!split) {
      run(p, x, y, true);
      return;
    }
    test_inputs::emulate_split<3>(p, *split, [&](const auto& g, bool zero) { run(g, x, y, zero); });
  });
}

/// An image of the unit box quadratic in each coordinate (cells of geometry order 2).
mesh::Domain<3> quadratic_domain() {
  mesh::Point<3> lo{0.0, 0.0, 0.0}, hi{1.0, 1.0, 1.0};
  return mesh::Domain<3>::box(lo, hi, [](const mesh::Point<3>& X) {
    return mesh::Point<3>{X[0] + 0.3 * X[1] * X[1] - 0.1 * X[0] * X[1] * X[2] * X[2],
                          X[1] + 0.2 * X[2] * X[2] * X[0] + 0.1 * X[0] * X[0],
                          1.5 * X[2] - 0.2 * X[0] * X[0] * X[1] * X[1] + 0.1 * X[1]};
  });
}

/// An affine image of the unit box (trilinear cells).
mesh::Domain<3> affine_domain() {
  mesh::Point<3> lo{0.0, 0.0, 0.0}, hi{1.0, 1.0, 1.0};
  return mesh::Domain<3>::box(lo, hi, [](const mesh::Point<3>& X) {
    return mesh::Point<3>{2.0 * X[0] + 0.3 * X[1], 0.5 * X[1] - 0.2 * X[2] + 1.0, 0.8 * X[2] + 0.1 * X[0]};
  });
}

template <int k>
void check_node_lines(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k);
  const std::array<int, 3> m3 = k <= 2 ? std::array<int, 3>{4, 3, 3} : std::array<int, 3>{3, 2, 2};
  const auto curved = test_inputs::curved_domain<3>();
  EXPECT_LT((node_lines_error<k, double>(m3, curved, true, seeds(), false, 0, Cells::curved)), 1e-12) << what;
  EXPECT_LT((node_lines_error<k, double>(m3, curved, true, seeds(), true, 2, Cells::curved)), 1e-12) << "rev cells=2 " << what;
  EXPECT_LT((node_lines_error<k, double>({1, 2, 1}, curved, false, seeds(), false, 0, Cells::curved)), 1e-12) << what;
  EXPECT_LT((node_lines_error<k, float>(m3, curved, true, seeds(), false, 0, Cells::curved)), 1e-5) << "fp32 " << what;
  EXPECT_LT((node_lines_error<k, double>(m3, curved, true, seeds(), true, 0, Cells::curved,
                                         {false, true, true, false, false, true})),
            1e-12)
      << "Neumann " << what;
  EXPECT_LT((node_lines_error<k, double>(m3, affine_domain(), true, seeds(), false, 0, Cells::trilinear)), 1e-12)
      << "trilinear " << what;
  EXPECT_LT((node_lines_error<k, float>(m3, affine_domain(), false, seeds(), false, 0, Cells::trilinear)), 1e-5)
      << "trilinear fp32 " << what;
  // cells of geometry order 2: the displacement from the Q2 lattice (k >= 3)
  const auto quadratic = quadratic_domain();
  EXPECT_LT((node_lines_error<k, double>(m3, quadratic, true, seeds(), false, 0, Cells::quadratic)), 1e-12)
      << "quadratic " << what;
  EXPECT_LT((node_lines_error<k, double>(m3, quadratic, false, seeds(), true, 2, Cells::quadratic,
                                         {false, true, true, false, false, true})),
            1e-12)
      << "quadratic Neumann rev cells=2 " << what;
  EXPECT_LT((node_lines_error<k, float>(m3, quadratic, true, seeds(), false, 0, Cells::quadratic)), 1e-5)
      << "quadratic fp32 " << what;
  // the apply split around interior cells
  const operators::CellRange cut{{1, 1, 1}, {3, 2, 2}};
  EXPECT_LT((node_lines_error<k, double>({4, 3, 3}, curved, true, seeds(), false, 0, Cells::curved, fe::all_dirichlet<3>(),
                                         &cut)),
            1e-12)
      << "split " << what;
  EXPECT_LT((node_lines_error<k, double>({4, 3, 3}, affine_domain(), true, seeds(), true, 0, Cells::trilinear,
                                         fe::all_dirichlet<3>(), &cut)),
            1e-12)
      << "split trilinear " << what;
  EXPECT_LT((node_lines_error<k, double>({4, 3, 3}, quadratic, true, seeds(), false, 0, Cells::quadratic,
                                         fe::all_dirichlet<3>(), &cut)),
            1e-12)
      << "split quadratic " << what;
  // BP3: the displacement interpolated to the points, the coefficient given at the points
  constexpr auto bp3 = fe::QuadratureKind::gauss_k2;
  EXPECT_LT((node_lines_error<k, double, bp3>(m3, curved, true, seeds(), false, 0, Cells::curved)), 1e-12)
      << "bp3 " << what;
  EXPECT_LT((node_lines_error<k, double, bp3>(m3, curved, true, seeds(), true, 2, Cells::curved,
                                              {false, true, true, false, false, true})),
            1e-12)
      << "bp3 Neumann rev cells=2 " << what;
  EXPECT_LT((node_lines_error<k, float, bp3>(m3, curved, true, seeds(), false, 0, Cells::curved)), 1e-5)
      << "bp3 fp32 " << what;
  EXPECT_LT((node_lines_error<k, double, bp3>(m3, affine_domain(), true, seeds(), true, 0, Cells::trilinear)), 1e-12)
      << "bp3 trilinear " << what;
  EXPECT_LT((node_lines_error<k, double, bp3>(m3, quadratic, false, seeds(), false, 2, Cells::quadratic)), 1e-12)
      << "bp3 quadratic " << what;
  EXPECT_LT((node_lines_error<k, double, bp3>({4, 3, 3}, curved, true, seeds(), false, 0, Cells::curved,
                                              fe::all_dirichlet<3>(), &cut)),
            1e-12)
      << "bp3 split " << what;
}

template <int... K>
void check_node_lines_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_node_lines<K + 1>(seeds), ...);
}

TEST(CudaCoreGeometryLines, NodeGeometryEmulationMatchesCpu) {
  std::mt19937_64 seeds(20261125);
  check_node_lines_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

TEST(CudaCoreGeometryLines, NodeGeometrySizes) {
  // a curved map: every vertex and node, the displacement kept, no coefficient values
  const mesh::BoxMesh<3> mesh({2, 2, 2}, test_inputs::curved_domain<3>());
  const auto g = operators::compute_node_geometry<double>(mesh, mesh::GeometryField<3>(mesh, 2));
  EXPECT_EQ(g.n_nodes, 125);
  EXPECT_EQ(g.n_vertices, 27);
  EXPECT_EQ(g.disp.size(), 3u * 125u);
  EXPECT_GT(g.max_disp, 1e-4);
  EXPECT_TRUE(g.a_nodes.empty());
  EXPECT_TRUE(g.disp2.empty());  // degree 2: the Q_k lattice is the Q2 one
  // cells of geometry order 2 at k = 3: the Q2 lattice beside the Q_k one; not for a curved map
  const mesh::BoxMesh<3> quadratic({2, 1, 3}, quadratic_domain());
  const auto g2 = operators::compute_node_geometry<double>(quadratic, mesh::GeometryField<3>(quadratic, 3));
  EXPECT_EQ(g2.n_nodes2, 5 * 3 * 7);
  EXPECT_EQ(g2.disp2.size(), 3u * 5 * 3 * 7);
  EXPECT_EQ(g2.disp.size(), 3u * 7 * 4 * 10);
  const auto g3 = operators::compute_node_geometry<float>(mesh, mesh::GeometryField<3>(mesh, 3));
  EXPECT_TRUE(g3.disp2.empty());
  EXPECT_EQ(g3.n_nodes2, 0);
  // far from the origin on finer cells: d = x - I_1 x is rounded to the coordinates' magnitude,
  // far above the unit roundoff of d itself; the Q2 cells are still found
  const auto quad = quadratic_domain();
  const mesh::Domain<3> far = mesh::Domain<3>::box({0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}, [quad](const mesh::Point<3>& X) {
    auto x = quad.map(X);
    x[0] += 1000.0;
    x[2] -= 500.0;
    return x;
  });
  for (int k : {3, 5}) {
    const mesh::BoxMesh<3> fine({10, 8, 9}, far);
    const auto f64 = operators::compute_node_geometry<double>(fine, mesh::GeometryField<3>(fine, k));
    EXPECT_FALSE(f64.disp2.empty()) << "k=" << k << ", largest displacement " << f64.max_disp;
    const auto f32 = operators::compute_node_geometry<float>(fine, mesh::GeometryField<3>(fine, k));
    EXPECT_FALSE(f32.disp2.empty()) << "fp32 k=" << k;
  }
}

/// Worst conflict degree of all accesses of a layout.
int lines_conflicts(const GeomLinesLayout& L, int n, int bytes) {
  int worst = 1;
  for_each_geom_lines_access(L, n, [&](char, const std::array<long, warp_lanes>& a) {
    worst = std::max(worst, access_cost(a, bytes).degree);
  });
  return worst;
}

TEST(CudaCoreGeometryLines, LayoutConflicts) {
  for (int k = 1; k <= 8; ++k)
    for (int q : {k + 1, k + 2})
    for (int bytes : {8, 4}) {
      const int n = k + 1;
      const auto L = geom_lines_layout(q);
      const auto B = geom_lines_best_layout(L, n, bytes);
      const long w0 = geom_lines_wavefronts(L, n, bytes), w1 = geom_lines_wavefronts(B, n, bytes);
      // ideal: every access one wavefront per 16 (fp64) or 32 (fp32) active lanes
      long ideal = 0;
      for_each_geom_lines_access(B, n, [&](char, const std::array<long, warp_lanes>& a) {
        const int per = bytes == 8 ? 16 : 32;
        for (int h = 0; h < warp_lanes / per; ++h) {
          bool any = false;
          for (int l = h * per; l < (h + 1) * per; ++l) any = any || a[l] >= 0;
          ideal += any ? 1 : 0;
        }
      });
      std::printf("lines layout k=%d q=%d %d B: sx %d sp %d sb %d cell stride %d, wavefronts %ld -> %ld (ideal %ld), "
                  "worst degree %d -> %d, %d B per block, %d blocks per SM\n",
                  k, q, bytes, B.sx, B.sp, B.sb, B.cell_stride, w0, w1, ideal, lines_conflicts(L, n, bytes),
                  lines_conflicts(B, n, bytes), B.smem_elements() * bytes, geom_lines_blocks_per_sm(B, bytes));
      EXPECT_LE(w1, w0);
      EXPECT_GE(B.sx, B.q);
      EXPECT_GE(B.sp, B.q * B.sx);
      EXPECT_GE(B.cell_stride, 4 * B.sb);
      // at most 3-way (odd q: the x lines, y lines and columns want different plane strides)
      EXPECT_LE(lines_conflicts(B, n, bytes), 3) << "k=" << k << " q=" << q << " " << bytes << " B";
      // the padding costs no resident blocks; at least three blocks per SM
      EXPECT_EQ(geom_lines_blocks_per_sm(B, bytes), geom_lines_blocks_per_sm(L, bytes)) << "k=" << k << " q=" << q;
      EXPECT_GE(geom_lines_blocks_per_sm(B, bytes), 3) << "k=" << k << " q=" << q;
      // with a register limit of 3 (or 2) resident blocks: no more wavefronts, still that many blocks
      for (int limit : {3, 2}) {
        const auto R = geom_lines_best_layout(L, n, bytes, limit);
        const int expect = std::min(limit, geom_lines_blocks_per_sm(L, bytes));
        std::printf("  register limit %d: sx %d sp %d cell stride %d, wavefronts %ld, worst degree %d, %d blocks per SM\n",
                    limit, R.sx, R.sp, R.cell_stride, geom_lines_wavefronts(R, n, bytes),
                    lines_conflicts(R, n, bytes), geom_lines_blocks_per_sm(R, bytes));
        EXPECT_LE(geom_lines_wavefronts(R, n, bytes), w1);
        EXPECT_GE(geom_lines_blocks_per_sm(R, bytes), expect);
      }
    }
}

}  // namespace
