// The general-geometry cuda-core kernels on the CPU: (1) the 1D-table geometry of the deformed box
// against the isoparametric GeometryField of the reference (Jacobians and flux coefficients at
// every quadrature point); (2) the block programs run by the host emulator (the phase functions the
// kernel calls) against the CPU operator on the general path; (3) the shared-memory access patterns
// of the layouts under the bank model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "mesh/geometry_field.h"
#include "operators/cuda_core/geometry_setup.h"
#include "operators/cuda_core/layouts.h"
#include "operators/geometry_data.h"
#include "operators/cpu/laplace_operator.h"
#include "emulation_check.h"

namespace {
using namespace tcfem;
using namespace tcfem::operators::cuda_core;
using fe::QuadratureKind;

constexpr QuadratureKind kinds[] = {QuadratureKind::gll_k1, QuadratureKind::gauss_k2, QuadratureKind::gauss_k1};

/// Largest deviation of the table Jacobians and flux coefficients from the reference's, relative
/// to the largest entry.
template <int dim>
std::pair<double, double> table_geometry_error(const std::array<int, dim>& nc, int k, QuadratureKind kind) {
  mesh::BoxMesh<dim> mesh(nc, mesh::GeometryKind::deformed);
  mesh::GeometryField<dim> field(mesh, k);
  const auto quad = fe::make_quadrature(kind, k);
  const int q = quad.size();
  const auto tables = deformed_tables<dim>(mesh, k, quad);
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  tensor::Evaluator<dim, double> ev(basis, quad);
  const auto cells = operators::compute_cell_geometry<dim, double>(mesh, field, quad);
  const int nq = ev.points_per_cell(), nb = ev.dofs_per_cell();
  std::vector<double> nodes(dim * nb), x(dim * nq), J(dim * dim * nq);
  double err_j = 0, max_j = 0, err_c = 0, max_c = 0;
  std::array<double, 3> eps{}, inv_h{};
  double hprod = 1;
  for (int d = 0; d < dim; ++d) {
    eps[d] = tables.eps[d];
    inv_h[d] = 1.0 / tables.h[d];
    hprod *= tables.h[d];
  }
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto c = mesh.cell_index(cell);
    field.cell_nodes(c, nodes.data());
    operators::cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
    for (int p = 0; p < nq; ++p) {
      std::array<int, dim> i;
      double w = 1;
      for (int d = 0, r = p; d < dim; ++d, r /= q) {
        i[d] = r % q;
        w *= quad.weights[i[d]];
      }
      const auto Jt = deformed_jacobian<dim>(tables, q, c, i);
      for (int r = 0; r < dim; ++r)
        for (int j = 0; j < dim; ++j) {
          const double ref = J[(r * dim + j) * nq + p];
          err_j = std::max(err_j, std::abs(Jt[r][j] - ref));
          max_j = std::max(max_j, std::abs(ref));
        }
      // flux coefficients: the scaled flux of the unit vectors (v = H^{-1} e_j, f = H^{-1} g) gives
      // the columns of C
      double s[3], ds[3], b[3];
      for (int d = 0; d < dim; ++d) {
        s[d] = tables.s[d][std::size_t(c[d]) * q + i[d]];
        ds[d] = tables.ds[d][std::size_t(c[d]) * q + i[d]];
      }
      deformed_b<dim>(s, ds, b);
      for (int j = 0; j < dim; ++j) {
        double u[3] = {0, 0, 0};
        u[j] = inv_h[j];
        deformed_flux<dim>(eps.data(), w * hprod, b, u);
        for (int r = 0; r < dim; ++r) {
          const double ref = cells.coef[(cell * operators::n_sym<dim> + operators::sym_index<dim>(r, j)) * nq + p];
          err_c = std::max(err_c, std::abs(inv_h[r] * u[r] - ref));
          max_c = std::max(max_c, std::abs(ref));
        }
      }
    }
  }
  return {err_j / max_j, err_c / max_c};
}

TEST(CudaCoreGeometry, TableJacobiansMatchGeometryField) {
  for (int k = 1; k <= 8; ++k)
    for (auto kind : kinds) {
      const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(kind);
      // the reference differentiates through the collocation derivative on the q points, whose
      // round-off reaches 1.6e-13 at k = 8 (the tables differentiate the 1D interpolant directly)
      const double tol = k <= 6 ? 1e-13 : 3e-13;
      const auto e3 = table_geometry_error<3>({3, 2, 4}, k, kind);
      EXPECT_LT(e3.first, tol) << "3D J " << what;
      EXPECT_LT(e3.second, tol) << "3D C " << what;
      const auto e2 = table_geometry_error<2>({5, 3}, k, kind);
      EXPECT_LT(e2.first, tol) << "2D J " << what;
      EXPECT_LT(e2.second, tol) << "2D C " << what;
    }
}

template <int dim, int k, QuadratureKind kind, typename Number>
double emulated_error(const std::array<int, dim>& nc, mesh::GeometryKind geo, std::uint64_t seed, bool reverse,
                      bool tuned = false) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == QuadratureKind::gll_k1;
  mesh::BoxMesh<dim> mesh(nc, geo);
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k);
  operators::OperatorConfig cfg;
  cfg.disc = fe::Disc::cg;
  cfg.degree = k;
  cfg.quadrature = kind;
  cfg.cartesian_fast_path = false;
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto setup = make_geom_setup<dim, k, q, Number>(mesh, kind);
  auto p = setup.host_params();
  if (tuned) {
    // the launch shape of the knobs: fewer cells per block, the searched stride
    constexpr auto L = geom_layout(dim, k, q);
    p.cells = std::max(1, L.cells > 2 ? (L.cells - 1) / 2 : 1);
    p.cell_stride = geom_best_cell_stride(L, int(sizeof(Number)));
  }
  const std::size_t n = dofs.n_local();
  return test_inputs::emulation_error<dim, Number>(
      A, n, seed, [&](const Number* x, Number* y) { emulate_geom<dim, k, q, colloc, Number>(p, x, y, n, reverse); });
}

template <int k, QuadratureKind kind>
void check_emulation(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(kind);
  using G = mesh::GeometryKind;
  // several blocks with a partial last one, single-cell directions, the Cartesian box (eps = 0)
  const std::array<int, 3> m3 = k <= 2 ? std::array<int, 3>{5, 4, 4} : std::array<int, 3>{3, 2, 3};
  EXPECT_LT((emulated_error<3, k, kind, double>(m3, G::deformed, seeds(), false)), 1e-12) << "3D " << what;
  EXPECT_LT((emulated_error<3, k, kind, double>(m3, G::deformed, seeds(), true)), 1e-12) << "3D rev " << what;
  EXPECT_LT((emulated_error<3, k, kind, double>(m3, G::deformed, seeds(), true, true)), 1e-12) << "3D tuned " << what;
  EXPECT_LT((emulated_error<3, k, kind, float>(m3, G::deformed, seeds(), false, true)), 1e-5) << "3D fp32 tuned " << what;
  EXPECT_LT((emulated_error<3, k, kind, float>(m3, G::deformed, seeds(), false)), 1e-5) << "3D fp32 " << what;
  EXPECT_LT((emulated_error<3, k, kind, double>({1, 2, 1}, G::deformed, seeds(), false)), 1e-12) << "3D " << what;
  EXPECT_LT((emulated_error<3, k, kind, double>({2, 1, 2}, G::cartesian, seeds(), false)), 1e-12) << "3D cart " << what;
  EXPECT_LT((emulated_error<2, k, kind, double>({12, 9}, G::deformed, seeds(), false)), 1e-12) << "2D " << what;
  EXPECT_LT((emulated_error<2, k, kind, double>({12, 9}, G::deformed, seeds(), true)), 1e-12) << "2D rev " << what;
  EXPECT_LT((emulated_error<2, k, kind, double>({12, 9}, G::deformed, seeds(), true, true)), 1e-12) << "2D tuned " << what;
  EXPECT_LT((emulated_error<2, k, kind, float>({12, 9}, G::deformed, seeds(), false)), 1e-5) << "2D fp32 " << what;
  EXPECT_LT((emulated_error<2, k, kind, double>({1, 3}, G::deformed, seeds(), false)), 1e-12) << "2D " << what;
  EXPECT_LT((emulated_error<2, k, kind, double>({3, 2}, G::cartesian, seeds(), false)), 1e-12) << "2D cart " << what;
}

template <int... K>
void check_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_emulation<K + 1, QuadratureKind::gll_k1>(seeds), ...);
  (check_emulation<K + 1, QuadratureKind::gauss_k2>(seeds), ...);
  (check_emulation<K + 1, QuadratureKind::gauss_k1>(seeds), ...);
}

TEST(CudaCoreGeometry, EmulatedKernelMatchesCpu) {
  std::mt19937_64 seeds(20261121);
  check_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

/// The points program with stored geometry (partial assembly), 2D and 3D, on a curved map with a
/// variable coefficient (Dirichlet data on the faces of `dirichlet`, Neumann on the others): the
/// host emulation against the CPU operator, the cell data from compute_cell_geometry in the
/// storage type (Stored = float with Number = double: computed in double, rounded to fp32, and read
/// from p.coef_fp32 alone).
template <int dim, int k, QuadratureKind kind, typename Number, typename Stored = Number>
double stored_error(const std::array<int, dim>& nc, std::uint64_t seed, bool reverse,
                    const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>(),
                    const operators::CellRange* split = nullptr) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == QuadratureKind::gll_k1;
  const mesh::BoxMesh<dim> mesh(nc, test_inputs::curved_domain<dim>());
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k, dirichlet);
  const auto cfg = test_inputs::curved_config(k, kind);
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto geometry = operators::compute_cell_geometry<dim, Number>(
      mesh, mesh::GeometryField<dim>(mesh, k), fe::make_quadrature(kind, k), cfg.coefficient);
  const auto setup = make_geom_setup<dim, k, q, Number>(mesh, kind, true);
  auto p = setup.host_params();
  const auto rounded = test_inputs::point_stored_data<Stored, Number>(p, geometry.coef);
  p.dirichlet = fe::dirichlet_bits(dirichlet);
  const std::size_t n = dofs.n_local();
  return test_inputs::emulation_error<dim, Number>(A, n, seed, [&](const Number* x, Number* y) {
    if (!split) {
      emulate_geom<dim, k, q, colloc, Number, true, false, Stored>(p, x, y, n, reverse);
      return;
    }
    test_inputs::emulate_split<dim>(p, *split, [&](const auto& g, bool zero) {
      emulate_geom<dim, k, q, colloc, Number, true, false, Stored>(g, x, y, n, reverse, zero);
    });
  });
}

template <int k, QuadratureKind kind>
void check_stored(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(kind);
  EXPECT_LT((stored_error<2, k, kind, double>({7, 5}, seeds(), false)), 1e-12) << "2D " << what;
  EXPECT_LT((stored_error<2, k, kind, double>({7, 5}, seeds(), true)), 1e-12) << "2D rev " << what;
  EXPECT_LT((stored_error<2, k, kind, double>({1, 3}, seeds(), false)), 1e-12) << "2D " << what;
  EXPECT_LT((stored_error<2, k, kind, float>({7, 5}, seeds(), false)), 1e-5) << "2D fp32 " << what;
  // fp64 with the stored data rounded to fp32: the rounding's 6e-8 per value, not fp32 arithmetic
  EXPECT_LT((stored_error<2, k, kind, double, float>({7, 5}, seeds(), true, {false, true, true, false})), 1e-6)
      << "2D fp64, fp32 stored, Neumann " << what;
  const std::array<int, 3> m3 = k <= 2 ? std::array<int, 3>{4, 3, 3} : std::array<int, 3>{2, 2, 3};
  EXPECT_LT((stored_error<3, k, kind, double>(m3, seeds(), true)), 1e-12) << "3D rev " << what;
  EXPECT_LT((stored_error<3, k, kind, double, float>(m3, seeds(), false)), 1e-6) << "3D fp64, fp32 stored " << what;
  // Neumann faces: their nodes are free
  EXPECT_LT((stored_error<2, k, kind, double>({7, 5}, seeds(), true, {false, true, true, false})), 1e-12)
      << "2D Neumann " << what;
  EXPECT_LT((stored_error<3, k, kind, double>(m3, seeds(), false, {true, false, false, true, false, false})), 1e-12)
      << "3D Neumann " << what;
  // the apply split around interior cells (a rank's ghosted box): the interior, then the cells
  // around it in up to 2 dim launches, each cell once
  const operators::CellRange cut2{{1, 1}, {6, 4}}, cut3{{1, 1, 1}, {3, 2, 2}}, z_cut3{{0, 0, 1}, {4, 3, 2}};
  EXPECT_LT((stored_error<2, k, kind, double>({7, 5}, seeds(), true, fe::all_dirichlet<2>(), &cut2)), 1e-12)
      << "2D split " << what;
  EXPECT_LT((stored_error<3, k, kind, double>({4, 3, 3}, seeds(), false, {true, false, false, true, false, false},
                                              &cut3)),
            1e-12)
      << "3D split Neumann " << what;
  EXPECT_LT((stored_error<3, k, kind, float>({4, 3, 3}, seeds(), false, fe::all_dirichlet<3>(), &z_cut3)), 1e-5)
      << "3D split z fp32 " << what;
}

template <int... K>
void check_stored_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_stored<K + 1, QuadratureKind::gll_k1>(seeds), ...);
  (check_stored<K + 1, QuadratureKind::gauss_k2>(seeds), ...);
}

TEST(CudaCoreGeometry, StoredGeometryEmulationMatchesCpu) {
  std::mt19937_64 seeds(20261124);
  check_stored_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

/// The 2D points program with the geometry recomputed from the node field (matrix-free, BP5 and
/// BP3): the host emulation against the CPU operator on the quarter annulus (the displacement from
/// the bilinear cells) or on an affine image of the square (bilinear cells: no displacement), with
/// or without a variable coefficient (BP3: given at the points). quadratic: the domain is a map
/// quadratic in each coordinate (cells of geometry order 2: from k = 3 the displacement on the Q2
/// lattice only).
template <int k, typename Number, QuadratureKind kind = QuadratureKind::gll_k1>
double node_error(const std::array<int, 2>& nc, const mesh::Domain<2>& domain, bool coefficient, bool bilinear,
                  std::uint64_t seed, bool reverse, const fe::DirichletFaces<2>& dirichlet = fe::all_dirichlet<2>(),
                  const operators::CellRange* split = nullptr, bool quadratic = false) {
  constexpr bool colloc = kind == QuadratureKind::gll_k1;
  constexpr int q = colloc ? k + 1 : k + 2;
  const mesh::BoxMesh<2> mesh(nc, domain);
  fe::DofLayout<2> dofs(mesh, fe::Disc::cg, k, dirichlet);
  auto cfg = test_inputs::curved_config(k, kind);
  if (!coefficient) cfg.coefficient = {};
  operators::MatrixFreeOperator<2, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto nodes = operators::compute_node_geometry<Number>(mesh, mesh::GeometryField<2>(mesh, k), cfg.coefficient);
  // Q1 node fields (k = 1) are bilinear whatever the map
  EXPECT_EQ(nodes.disp.empty(), bilinear || k == 1) << "largest displacement " << nodes.max_disp;
  EXPECT_EQ(!nodes.disp2.empty(), quadratic && k >= 3);
  EXPECT_EQ(nodes.a_nodes.empty(), !coefficient);
  const bool cells_bilinear = nodes.disp.empty();
  using Disp = GeomProgram<2, k, q, colloc, Number, false, false, Number, true>;
  using Bilinear = GeomProgram<2, k, q, colloc, Number, false, false, Number, true, true>;
  const GeomLayout L = cells_bilinear ? Bilinear::L : Disp::L;
  EXPECT_EQ(L.buffers, cells_bilinear ? 3 : colloc ? 4 : 6);
  const auto setup = make_geom_setup<2, k, q, Number>(mesh, kind, true, L.buffers);
  auto p = setup.host_params();
  p.cell_stride = geom_best_cell_stride(L, int(sizeof(Number)));
  p.vertices = nodes.vertices.data();
  p.n_vertices = nodes.n_vertices;
  p.disp = cells_bilinear || !nodes.disp2.empty() ? nullptr : nodes.disp.data();
  p.n_nodes = nodes.n_nodes;
  p.disp2 = nodes.disp2.empty() ? nullptr : nodes.disp2.data();
  p.n_nodes2 = nodes.n_nodes2;
  std::vector<Number> a_points;
  if (colloc) {
    p.a_nodes = nodes.a_nodes.empty() ? nullptr : nodes.a_nodes.data();
  } else if (coefficient) {
    a_points = test_inputs::coefficient_at_points<2, Number>(mesh, fe::make_quadrature(kind, k), k, cfg.coefficient);
    p.a_points = a_points.data();
  }
  p.dirichlet = fe::dirichlet_bits(dirichlet);
  const std::size_t n = dofs.n_local();
  auto run = [&](const auto& g, const Number* x, Number* y, bool zero) {
    if (cells_bilinear)
      emulate_geom<2, k, q, colloc, Number, false, false, Number, true, true>(g, x, y, n, reverse, zero);
    else
      emulate_geom<2, k, q, colloc, Number, false, false, Number, true>(g, x, y, n, reverse, zero);
  };
  return test_inputs::emulation_error<2, Number>(A, n, seed, [&](const Number* x, Number* y) {
    if (!split) {
      run(p, x, y, true);
      return;
    }
    test_inputs::emulate_split<2>(p, *split, [&](const auto& g, bool zero) { run(g, x, y, zero); });
  });
}

/// An image of the unit square quadratic in each coordinate (cells of geometry order 2).
mesh::Domain<2> quadratic_domain2() {
  return mesh::Domain<2>::box({0.0, 0.0}, {1.0, 1.0}, [](const mesh::Point<2>& X) {
    return mesh::Point<2>{X[0] + 0.3 * X[1] * X[1], X[1] + 0.1 * X[0] * X[0] - 0.2 * X[0] * X[1]};
  });
}

/// An affine image of the unit square (bilinear cells).
mesh::Domain<2> affine_domain2() {
  return mesh::Domain<2>::box({0.0, 0.0}, {1.0, 1.0}, [](const mesh::Point<2>& X) {
    return mesh::Point<2>{2.0 * X[0] + 0.3 * X[1], 0.5 * X[1] - 0.2 * X[0] + 1.0};
  });
}

template <int k>
void check_nodes(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k);
  const auto curved = test_inputs::curved_domain<2>();
  EXPECT_LT((node_error<k, double>({7, 5}, curved, true, false, seeds(), false)), 1e-12) << what;
  EXPECT_LT((node_error<k, double>({7, 5}, curved, true, false, seeds(), true)), 1e-12) << "rev " << what;
  // cells of geometry order 2: the Q2 lattice from k = 3 (BP5, BP3, fp32, Neumann faces, split)
  const auto quadratic = quadratic_domain2();
  const operators::CellRange inner{{2, 1, 0}, {5, 4, 1}};
  EXPECT_LT((node_error<k, double>({7, 5}, quadratic, true, false, seeds(), false, fe::all_dirichlet<2>(), nullptr,
                                   true)),
            1e-12)
      << "quadratic " << what;
  EXPECT_LT((node_error<k, float>({7, 5}, quadratic, true, false, seeds(), true, {false, true, true, false}, nullptr,
                                  true)),
            1e-5)
      << "quadratic fp32 Neumann " << what;
  EXPECT_LT((node_error<k, double, QuadratureKind::gauss_k2>({7, 5}, quadratic, true, false, seeds(), false,
                                                             {true, false, true, true}, &inner, true)),
            1e-12)
      << "quadratic bp3 Neumann split " << what;
  EXPECT_LT((node_error<k, double>({1, 3}, curved, false, false, seeds(), false)), 1e-12) << what;
  EXPECT_LT((node_error<k, float>({7, 5}, curved, true, false, seeds(), false)), 1e-5) << "fp32 " << what;
  EXPECT_LT((node_error<k, double>({7, 5}, curved, true, false, seeds(), true, {false, true, true, false})), 1e-12)
      << "Neumann " << what;
  EXPECT_LT((node_error<k, double>({7, 5}, affine_domain2(), true, true, seeds(), false)), 1e-12)
      << "bilinear " << what;
  EXPECT_LT((node_error<k, float>({7, 5}, affine_domain2(), false, true, seeds(), true)), 1e-5)
      << "bilinear fp32 " << what;
  // a Cartesian box with a coefficient: bilinear cells
  EXPECT_LT((node_error<k, double>({6, 4}, mesh::Domain<2>::unit(mesh::GeometryKind::cartesian), true, true, seeds(), false,
                                   {true, false, true, true})),
            1e-12)
      << "box Neumann " << what;
  const operators::CellRange cut{{1, 1}, {6, 4}};
  EXPECT_LT((node_error<k, double>({7, 5}, curved, true, false, seeds(), false, fe::all_dirichlet<2>(), &cut)), 1e-12)
      << "split " << what;
  EXPECT_LT((node_error<k, double>({7, 5}, affine_domain2(), true, true, seeds(), true, fe::all_dirichlet<2>(), &cut)),
            1e-12)
      << "split bilinear " << what;
  // BP3: the displacement interpolated to the points, the coefficient given at the points
  constexpr auto bp3 = QuadratureKind::gauss_k2;
  EXPECT_LT((node_error<k, double, bp3>({7, 5}, curved, true, false, seeds(), false)), 1e-12) << "bp3 " << what;
  EXPECT_LT((node_error<k, double, bp3>({7, 5}, curved, true, false, seeds(), true, {false, true, true, false})), 1e-12)
      << "bp3 Neumann rev " << what;
  EXPECT_LT((node_error<k, float, bp3>({7, 5}, curved, true, false, seeds(), false)), 1e-5) << "bp3 fp32 " << what;
  EXPECT_LT((node_error<k, double, bp3>({7, 5}, affine_domain2(), true, true, seeds(), true)), 1e-12)
      << "bp3 bilinear " << what;
  EXPECT_LT((node_error<k, double, bp3>({7, 5}, curved, false, false, seeds(), false, fe::all_dirichlet<2>(), &cut)),
            1e-12)
      << "bp3 split " << what;
}

template <int... K>
void check_nodes_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_nodes<K + 1>(seeds), ...);
}

TEST(CudaCoreGeometry, NodeGeometryEmulationMatchesCpu) {
  std::mt19937_64 seeds(20261127);
  check_nodes_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

TEST(CudaCoreGeometry, NodeGeometrySizes2D) {
  // a curved map: every vertex and node, the displacement kept, no coefficient values
  const mesh::BoxMesh<2> mesh({3, 2}, test_inputs::curved_domain<2>());
  const auto g = operators::compute_node_geometry<double>(mesh, mesh::GeometryField<2>(mesh, 2));
  EXPECT_EQ(g.n_nodes, 7 * 5);
  EXPECT_EQ(g.n_vertices, 4 * 3);
  EXPECT_EQ(g.vertices.size(), 2u * 12u);
  EXPECT_EQ(g.disp.size(), 2u * 35u);
  EXPECT_GT(g.max_disp, 1e-4);
  EXPECT_TRUE(g.a_nodes.empty());
  EXPECT_TRUE(g.disp2.empty());  // k = 2: no Q2 lattice below the degree
  // the vertices are the map's at the lattice's corners
  const auto x = test_inputs::curved_domain<2>().map(mesh::Point<2>{1.0, 1.0});
  EXPECT_NEAR(g.vertices[11], x[0], 1e-14);
  EXPECT_NEAR(g.vertices[12 + 11], x[1], 1e-14);
}

TEST(CellsAround, CoverEveryCellOnce) {
  // the inner box and the boxes around it hold every cell of the box exactly once; an empty inner
  // box (or one outside) leaves the whole box as one
  const int n3[3] = {5, 4, 6};
  const std::vector<operators::CellRange> inners{{{1, 1, 1}, {4, 3, 5}}, {{0, 0, 2}, {5, 4, 3}}, {{0, 1, 0}, {5, 3, 6}},
                                                 {{2, 0, 0}, {9, 4, 9}}, {{3, 3, 3}, {3, 4, 5}}, {{-2, 1, 1}, {2, 3, 4}}};
  for (const auto& inner : inners) {
    std::vector<int> count(5 * 4 * 6, 0);
    bool empty = false;
    for (int d = 0; d < 3; ++d) empty = empty || std::min(inner.hi[d], n3[d]) <= std::max(inner.lo[d], 0);
    auto regions = operators::cells_around(3, n3, inner);
    if (empty) {
      ASSERT_EQ(regions.size(), 1u);
    } else {
      EXPECT_LE(regions.size(), 6u);
      operators::CellRange clipped = inner;
      for (int d = 0; d < 3; ++d) {
        clipped.lo[d] = std::clamp(inner.lo[d], 0, n3[d]);
        clipped.hi[d] = std::clamp(inner.hi[d], 0, n3[d]);
      }
      regions.push_back(clipped);
    }
    for (const auto& r : regions)
      for (int z = r.lo[2]; z < r.hi[2]; ++z)
        for (int y = r.lo[1]; y < r.hi[1]; ++y)
          for (int x = r.lo[0]; x < r.hi[0]; ++x) {
            ASSERT_TRUE(x >= 0 && x < 5 && y >= 0 && y < 4 && z >= 0 && z < 6);
            ++count[(z * 4 + y) * 5 + x];
          }
    for (const int c : count) EXPECT_EQ(c, 1);
  }
  const int n2[2] = {7, 3};
  const auto r2 = operators::cells_around(2, n2, operators::CellRange{{1, 1}, {6, 2}});
  int cells = 0;
  for (const auto& r : r2) cells += (r.hi[0] - r.lo[0]) * (r.hi[1] - r.lo[1]);
  EXPECT_EQ(r2.size(), 4u);
  EXPECT_EQ(cells, 7 * 3 - 5);
}

/// Worst conflict degree of the buffer ('S', 'R', 'C') and table ('T') accesses.
std::pair<int, int> geom_conflicts(int dim, int k, int q, int bytes) {
  const auto L = geom_layout(dim, k, q);
  int buf = 1, tab = 1;
  for_each_geom_access(L, [&](char name, const std::array<long, warp_lanes>& a) {
    const int d = access_cost(a, bytes).degree;
    if (name == 'T')
      tab = std::max(tab, d);
    else
      buf = std::max(buf, d);
  });
  return {buf, tab};
}

TEST(CudaCoreGeometry, LayoutConflicts) {
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int q : {k + 1, k + 2})
        for (int bytes : {8, 4}) {
          const auto c = geom_conflicts(dim, k, q, bytes);
          const auto L = geom_layout(dim, k, q);
          // at least three blocks per SM (228 KB)
          EXPECT_LE(L.smem_elements() * bytes, 64 * 1024) << dim << "D k=" << k << " q=" << q;
          // tables: conflict-free; buffers: at most 4-way (x-direction reads of lanes in different
          // rows and cells; documented in docs/cuda_core_kernels.md)
          EXPECT_EQ(c.second, 1) << dim << "D k=" << k << " q=" << q << " " << bytes << " B";
          EXPECT_LE(c.first, 4) << dim << "D k=" << k << " q=" << q << " " << bytes << " B";
          // the searched cell stride: no more wavefronts than the odd stride, at most 32 more elements
          const int s = geom_best_cell_stride(L, bytes);
          EXPECT_GE(s, 3 * L.Q);
          EXPECT_LT(s, 3 * L.Q + 32);
          EXPECT_LE(geom_buffer_wavefronts(geom_tuned_layout(L, L.cells, s), bytes), geom_buffer_wavefronts(L, bytes))
              << dim << "D k=" << k << " q=" << q << " " << bytes << " B";
          EXPECT_LE((L.cells * s + L.table_elements()) * bytes, 75 * 1024);  // still three blocks per SM
          // memoized: the search's own answer, again on a second call, and per layout (4 buffers:
          // the 2D program from nodes with a displacement; fewer cells per block)
          EXPECT_EQ(s, geom_search_cell_stride(L, bytes));
          EXPECT_EQ(geom_best_cell_stride(L, bytes), s);
          if (dim == 2) {
            const auto L4 = geom_tuned_layout(geom_layout(dim, k, q, 4), std::max(1, L.cells / 3), 4 * L.Q);
            EXPECT_EQ(geom_best_cell_stride(L4, bytes), geom_search_cell_stride(L4, bytes));
          }
        }
}

}  // namespace
