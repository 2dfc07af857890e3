// Tests of the vertex-patch smoothers against plain references built from the assembled sparse
// matrix (operators/cpu/sparse_matrix.h): one patch solve (fast diagonalization) equals a dense solve
// of the assembled patch matrix; the localized residual equals the global one; patches of one color
// are independent; one multiplicative sweep (fused, separate and global variants, forward and
// backward) equals the sequential reference of Eq. (7) of seed 004 with a global residual before
// every patch; the additive sweep likewise. Plus the Chebyshev smoother's eigenvalue estimate and
// the coarse solvers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <tuple>

#include "multigrid/host/chebyshev_smoother.h"
#include "multigrid/host/coarse_solver.h"
#include "multigrid/host/multigrid.h"
#include "multigrid/host/patch_smoother.h"
#include "operators/cpu/sparse_matrix.h"
#include "random_inputs.h"
#include "../support/curved_domains.h"

namespace {
using namespace tcfem;
using test_inputs::random_vector;
using multigrid::MatrixFreeLevelOperator;
using multigrid::PatchVariant;
using multigrid::SweepOrder;
using multigrid::VertexPatchSmoother;

/// Solves the dense SPD system a x = b (row-major n x n) by Gaussian elimination in long double.
std::vector<double> dense_solve(std::vector<double> a, std::vector<double> b) {
  const std::size_t n = b.size();
  std::vector<long double> m(a.begin(), a.end()), r(b.begin(), b.end());
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t i = p + 1; i < n; ++i) {
      const long double f = m[i * n + p] / m[p * n + p];
      for (std::size_t j = p; j < n; ++j) m[i * n + j] -= f * m[p * n + j];
      r[i] -= f * r[p];
    }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    long double s = r[i];
    for (std::size_t j = i + 1; j < n; ++j) s -= m[i * n + j] * x[j];
    x[i] = static_cast<double>(s / m[i * n + i]);
  }
  return x;
}

std::vector<double> dense_block(const operators::SparseMatrix& a, const std::vector<index_t>& idx) {
  const std::size_t n = idx.size();
  std::vector<double> m(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) m[i * n + j] = a.el(idx[i], idx[j]);
  return m;
}

/// The 1D rule of the Kronecker-path operator (exact on Cartesian cells).
fe::Quadrature1D exact_rule(int k) { return fe::gauss(k + 1); }

double rel_diff(const Vector<double>& a, const Vector<double>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    s += b[i] * b[i];
  }
  return std::sqrt(d / s);
}

template <int dim>
struct PatchProblem {
  PatchProblem(int n, int k, mesh::GeometryKind g = mesh::GeometryKind::cartesian,
               const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>())
      : mesh(make_cells(n), g), dofs(mesh, fe::Disc::cg, k, dirichlet), config(make_config(k)), op(mesh, dofs, config) {}
  static std::array<int, dim> make_cells(int n) {
    std::array<int, dim> c;
    c.fill(n);
    c[0] = n + 1;  // anisotropic counts: h differs between directions
    return c;
  }
  static operators::OperatorConfig make_config(int k) {
    operators::OperatorConfig c;
    c.disc = fe::Disc::cg;
    c.degree = k;
    return c;
  }
  operators::SparseMatrix assemble() const {
    return operators::assemble_operator<dim>(mesh, dofs, config, operators::Form::laplace);
  }
  mesh::BoxMesh<dim> mesh;
  fe::DofLayout<dim> dofs;
  operators::OperatorConfig config;
  MatrixFreeLevelOperator<dim, double> op;
};

template <int dim>
void check_patch_solve(int k) {
  PatchProblem<dim> s(3, k);
  VertexPatchSmoother<dim, double> smoother(s.mesh, s.dofs, exact_rule(k), false, PatchVariant::fused, 1.0, s.op);
  const auto a = s.assemble();
  const auto& patch = smoother.colors()[1].front();
  std::vector<index_t> idx;
  smoother.inner_dof_indices(patch, idx);
  ASSERT_EQ(idx.size(), std::size_t(std::pow(2 * k - 1, dim)));
  const auto r = random_vector<double>(idx.size(), 5);
  std::vector<double> rhs(r.data(), r.data() + r.size());
  const auto expected = dense_solve(dense_block(a, idx), rhs);
  Vector<double> y = r;
  smoother.local_solve(patch, y.data());
  Vector<double> e(expected.size());
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = expected[i];
  EXPECT_LT(rel_diff(y, e), 1e-12) << "k=" << k;
  // the localized residual equals b - A u of the assembled matrix on the inner nodes
  const auto u = random_vector<double>(s.dofs.n_local(), 6);
  const auto b = random_vector<double>(s.dofs.n_local(), 7);
  Vector<double> au(u.size());
  a.vmult(au, u);
  std::vector<double> local(idx.size());
  for (const auto& p : {smoother.colors()[0].front(), smoother.colors().back().back()}) {
    smoother.inner_dof_indices(p, idx);
    smoother.local_residual(p, u, b, local.data());
    double err = 0, nrm = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      const double ref = b[idx[i]] - au[idx[i]];
      err = std::max(err, std::abs(local[i] - ref));
      nrm = std::max(nrm, std::abs(ref));
    }
    EXPECT_LT(err, 1e-12 * nrm) << "k=" << k;
  }
}

TEST(VertexPatch, LocalSolveEqualsDenseSolve2D) {
  for (int k = 1; k <= 6; ++k) check_patch_solve<2>(k);
}
TEST(VertexPatch, LocalSolveEqualsDenseSolve3D) {
  for (int k = 1; k <= 3; ++k) check_patch_solve<3>(k);
}

template <int dim>
void check_coloring(int n, int k, const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>()) {
  PatchProblem<dim> s(n, k, mesh::GeometryKind::cartesian, dirichlet);
  VertexPatchSmoother<dim, double> smoother(s.mesh, s.dofs, exact_rule(k), false, PatchVariant::fused, 1.0, s.op);
  ASSERT_EQ(smoother.colors().size(), std::size_t(1 << dim));
  std::size_t expected_patches = 1;  // one more vertex per Neumann face and direction
  for (int d = 0; d < dim; ++d)
    expected_patches *= s.mesh.n_cells()[d] - 1 + !dirichlet[2 * d] + !dirichlet[2 * d + 1];
  EXPECT_EQ(smoother.n_patches(), expected_patches);
  std::vector<int> covered(s.dofs.n_local(), 0);
  std::vector<index_t> inner, full;
  for (const auto& color : smoother.colors()) {
    std::vector<int> owner(s.dofs.n_local(), -1);  // patch of this color whose full patch holds the node
    for (std::size_t p = 0; p < color.size(); ++p) {
      smoother.patch_dof_indices(color[p], full);
      for (auto i : full) {
        // no inner node of another patch of the same color may lie in this patch (and vice versa)
        if (owner[i] >= 0) {
          std::vector<index_t> other;
          smoother.inner_dof_indices(color[owner[i]], other);
          ASSERT_TRUE(std::find(other.begin(), other.end(), i) == other.end()) << "patches of one color overlap";
        }
        owner[i] = static_cast<int>(p);
      }
      smoother.inner_dof_indices(color[p], inner);
      for (auto i : inner) {
        ASSERT_FALSE(s.dofs.boundary_mask()[i]);
        ++covered[i];
      }
    }
    // inner nodes of one color's patches are pairwise disjoint and outside the other patches
    std::vector<int> count(s.dofs.n_local(), 0);
    for (const auto& v : color) {
      smoother.inner_dof_indices(v, inner);
      for (auto i : inner) ++count[i];
    }
    for (const auto& v : color) {
      smoother.patch_dof_indices(v, full);
      smoother.inner_dof_indices(v, inner);
      std::set<index_t> own(inner.begin(), inner.end());
      for (auto i : full) {
        if (!own.count(i)) {
          ASSERT_EQ(count[i], 0) << "a patch's boundary node is inner to a patch of its color";
        }
      }
    }
  }
  for (std::size_t i = 0; i < covered.size(); ++i) {
    if (!s.dofs.boundary_mask()[i]) {
      EXPECT_GT(covered[i], 0) << "unconstrained node " << i << " in no patch";
    }
  }
}

TEST(VertexPatch, ColorsShareNoDofs) {
  check_coloring<2>(5, 2);
  check_coloring<2>(4, 1);
  check_coloring<3>(4, 2);
}

// Neumann faces: the patches of the vertices on them cover the face's unknowns, and the colors
// stay independent (every face kind: low and high Neumann faces, edges and corners between them)
TEST(VertexPatch, BoundaryPatchesOnNeumannFacesShareNoDofsAndCoverEveryUnknown) {
  check_coloring<2>(5, 2, {false, true, true, false});
  check_coloring<2>(4, 1, {false, false, false, false});
  check_coloring<2>(4, 3, {true, false, false, true});
  check_coloring<3>(4, 2, {false, true, true, false, true, false});
  check_coloring<3>(3, 1, {false, false, false, false, true, true});
}

/// The sequential reference: patches in the smoother's order (colors forward or backward), a
/// global residual of the assembled matrix before every patch, a dense local solve.
template <int dim>
Vector<double> sequential_sweep(const VertexPatchSmoother<dim, double>& smoother, const operators::SparseMatrix& a,
                                const fe::DofLayout<dim>& dofs, Vector<double> x, const Vector<double>& b,
                                SweepOrder order, double omega) {
  const int nc = static_cast<int>(smoother.colors().size());
  std::vector<index_t> idx;
  Vector<double> ax(x.size());
  for (int ci = 0; ci < nc; ++ci) {
    const auto& color = smoother.colors()[order == SweepOrder::forward ? ci : nc - 1 - ci];
    for (const auto& v : color) {
      smoother.inner_dof_indices(v, idx);
      for (std::size_t i = 0; i < x.size(); ++i)
        if (dofs.boundary_mask()[i]) x[i] = 0.0;  // the constrained space
      a.vmult(ax, x);
      std::vector<double> r(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) r[i] = b[idx[i]] - ax[idx[i]];
      const auto y = dense_solve(dense_block(a, idx), r);
      for (std::size_t i = 0; i < idx.size(); ++i) x[idx[i]] += omega * y[i];
    }
  }
  for (std::size_t i = 0; i < x.size(); ++i)
    if (dofs.boundary_mask()[i]) x[i] = b[i];
  return x;
}

template <int dim>
void check_sweep(int n, int k, const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>()) {
  PatchProblem<dim> s(n, k, mesh::GeometryKind::cartesian, dirichlet);
  const auto a = s.assemble();
  const auto x0 = random_vector<double>(s.dofs.n_local(), 21);
  const auto b = random_vector<double>(s.dofs.n_local(), 22);
  for (auto variant : {PatchVariant::fused, PatchVariant::separate, PatchVariant::global})
    for (auto order : {SweepOrder::forward, SweepOrder::backward}) {
      VertexPatchSmoother<dim, double> smoother(s.mesh, s.dofs, exact_rule(k), false, variant, 1.0, s.op);
      Vector<double> x = x0;
      smoother.smooth(x, b, order);
      const auto ref = sequential_sweep<dim>(smoother, a, s.dofs, x0, b, order, 1.0);
      EXPECT_LT(rel_diff(x, ref), 1e-12) << "variant " << multigrid::to_string(variant) << " k=" << k;
    }
}

TEST(VertexPatch, MultiplicativeSweepEqualsSequentialReference2D) {
  check_sweep<2>(5, 1);
  check_sweep<2>(4, 3);
}
TEST(VertexPatch, MultiplicativeSweepEqualsSequentialReference3D) {
  check_sweep<3>(4, 1);
  check_sweep<3>(3, 2);
}

// boundary patches: the local solve is the exact inverse of the assembled patch matrix (Cartesian
// cells, exact quadrature) and the localized residual the assembled residual at the patch's
// unknowns, for a patch on a face, on an edge and at a corner of Neumann faces; the sweeps (fused
// and separate with localized residuals, global) are the sequential reference
template <int dim>
void check_boundary_patches(int n, int k, const fe::DirichletFaces<dim>& dirichlet) {
  PatchProblem<dim> s(n, k, mesh::GeometryKind::cartesian, dirichlet);
  VertexPatchSmoother<dim, double> smoother(s.mesh, s.dofs, exact_rule(k), false, PatchVariant::fused, 1.0, s.op);
  EXPECT_EQ(smoother.variant(), PatchVariant::fused);
  const auto a = s.assemble();
  const auto x = random_vector<double>(s.dofs.n_local(), 62), b = random_vector<double>(s.dofs.n_local(), 63);
  Vector<double> x0 = x, ax(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (s.dofs.boundary_mask()[i]) x0[i] = 0.0;  // the constrained space
  a.vmult(ax, x0);
  // the boundary patches with the most and the fewest unknowns and one in between
  std::vector<std::array<int, dim>> boundary;
  for (const auto& color : smoother.colors())
    for (const auto& v : color)
      if (smoother.boundary_patch(v)) boundary.push_back(v);
  ASSERT_FALSE(boundary.empty());
  std::vector<index_t> idx;
  const auto size = [&](const std::array<int, dim>& v) {
    smoother.inner_dof_indices(v, idx);
    return idx.size();
  };
  std::sort(boundary.begin(), boundary.end(), [&](const auto& p, const auto& q) { return size(p) < size(q); });
  for (const auto& v : {boundary.front(), boundary[boundary.size() / 2], boundary.back()}) {
    smoother.inner_dof_indices(v, idx);
    ASSERT_LE(idx.size(), std::size_t(std::pow(2 * k - 1, dim)));  // fewer from k = 2 on (k = 1: the vertex)
    if (k > 1) {
      ASSERT_LT(idx.size(), std::size_t(std::pow(2 * k - 1, dim)));
    }
    for (const auto i : idx) ASSERT_FALSE(s.dofs.boundary_mask()[i]);
    const auto r = random_vector<double>(idx.size(), 61);
    const auto expected = dense_solve(dense_block(a, idx), std::vector<double>(r.data(), r.data() + r.size()));
    Vector<double> y = r, e(expected.size());
    smoother.local_solve(v, y.data());
    for (std::size_t i = 0; i < e.size(); ++i) e[i] = expected[i];
    EXPECT_LT(rel_diff(y, e), 1e-12) << "k=" << k << " patch with " << idx.size() << " unknowns";
    Vector<double> local(idx.size()), assembled(idx.size());
    std::fill(local.data(), local.data() + local.size(), std::numeric_limits<double>::quiet_NaN());
    smoother.local_residual(v, x, b, local.data());
    for (std::size_t i = 0; i < idx.size(); ++i) assembled[i] = b[idx[i]] - ax[idx[i]];
    EXPECT_LT(rel_diff(local, assembled), 1e-12) << "k=" << k << " residual of a patch with " << idx.size() << " unknowns";
  }
  check_sweep<dim>(n, k, dirichlet);
}

TEST(VertexPatch, BoundaryPatchSolveIsTheExactPatchInverse2D) {
  for (int k = 1; k <= 5; ++k) {
    check_boundary_patches<2>(4, k, {false, true, true, false});
    check_boundary_patches<2>(3, k, {false, false, false, false});
  }
}
TEST(VertexPatch, BoundaryPatchSolveIsTheExactPatchInverse3D) {
  for (int k = 1; k <= 3; ++k) check_boundary_patches<3>(3, k, {true, false, false, true, false, true});
  check_boundary_patches<3>(2, 2, {false, false, false, false, false, false});
}

TEST(VertexPatch, GaussLobattoQuadratureGivesThePatchMatricesOfTheOperator) {
  // the general path with k+1 Gauss-Lobatto points (BP5) under-integrates the mass terms; the patch
  // matrices built with the same rule are still the operator's patch matrices on Cartesian cells
  for (int k : {2, 3}) {
    mesh::BoxMesh<3> mesh({4, 3, 3}, mesh::GeometryKind::cartesian);
    fe::DofLayout<3> dofs(mesh, fe::Disc::cg, k);
    operators::OperatorConfig config;
    config.degree = k;
    config.cartesian_fast_path = false;
    config.quadrature = fe::QuadratureKind::gll_k1;
    MatrixFreeLevelOperator<3, double> op(mesh, dofs, config);
    ASSERT_EQ(op.matrix_free().path(), operators::Path::general);
    const auto a = operators::assemble_operator<3>(mesh, dofs, config, operators::Form::laplace);
    const auto rule = fe::make_quadrature(config.quadrature, k);
    VertexPatchSmoother<3, double> smoother(mesh, dofs, rule, false, PatchVariant::fused, 1.0, op);
    std::vector<index_t> idx;
    smoother.inner_dof_indices(smoother.colors()[0].front(), idx);
    const auto r = random_vector<double>(idx.size(), 81);
    const auto expected = dense_solve(dense_block(a, idx), std::vector<double>(r.data(), r.data() + r.size()));
    Vector<double> y = r, e(expected.size());
    smoother.local_solve(smoother.colors()[0].front(), y.data());
    for (std::size_t i = 0; i < e.size(); ++i) e[i] = expected[i];
    EXPECT_LT(rel_diff(y, e), 1e-12) << "k=" << k;
    const auto x0 = random_vector<double>(dofs.n_local(), 82);
    const auto b = random_vector<double>(dofs.n_local(), 83);
    Vector<double> x = x0;
    smoother.smooth(x, b, SweepOrder::forward);
    const auto ref = sequential_sweep<3>(smoother, a, dofs, x0, b, SweepOrder::forward, 1.0);
    EXPECT_LT(rel_diff(x, ref), 1e-12) << "k=" << k;
  }
}

/// A constant coefficient on an anisotropic Cartesian box, the general path (quadrature data):
/// the separable surrogates of its cell metric are the patch matrices themselves.
struct AnisotropicBoxLevel {
  AnisotropicBoxLevel(const std::array<int, 3>& cells, int k)
      : mesh(cells, mesh::Domain<3>::box({0.0, -1.0, 0.5}, {2.0, 0.5, 1.0})),
        dofs(mesh, fe::Disc::cg, k),
        config(make_config(k)),
        op(mesh, dofs, config) {}
  static operators::OperatorConfig make_config(int k) {
    operators::OperatorConfig c;
    c.degree = k;
    c.quadrature = fe::QuadratureKind::gauss_k2;
    c.coefficient = [](const double*) { return 2.5; };
    return c;
  }
  mesh::BoxMesh<3> mesh;
  fe::DofLayout<3> dofs;
  operators::OperatorConfig config;
  MatrixFreeLevelOperator<3, double> op;
};

TEST(VertexPatch, SeparableSurrogateIsTheExactPatchOnCartesianCells) {
  for (int k : {1, 2, 3}) {
    AnisotropicBoxLevel level({4, 3, 3}, k);
    const auto& [mesh, dofs, config, op] = std::tie(level.mesh, level.dofs, level.config, level.op);
    ASSERT_EQ(op.matrix_free().path(), operators::Path::general);
    const auto metric = op.matrix_free().cell_metric();
    ASSERT_EQ(metric.size(), mesh.n_owned_cells() * 3);
    const auto h = mesh.cell_size();
    EXPECT_NEAR(metric[3 * 5 + 1], 2.5 * h[0] * h[2] / h[1], 1e-12);
    const auto a = operators::assemble_operator<3>(mesh, dofs, config, operators::Form::laplace);
    VertexPatchSmoother<3, double> smoother(mesh, dofs, fe::make_quadrature(config.quadrature, k), false,
                                            PatchVariant::global, 1.0, op, metric);
    ASSERT_TRUE(smoother.surrogate());
    for (const auto& patch : {smoother.colors()[0].front(), smoother.colors()[3].back()}) {
      std::vector<index_t> idx;
      smoother.inner_dof_indices(patch, idx);
      const auto r = random_vector<double>(idx.size(), 91);
      const auto expected = dense_solve(dense_block(a, idx), std::vector<double>(r.data(), r.data() + r.size()));
      Vector<double> y = r, e(expected.size());
      smoother.local_solve(patch, y.data());
      for (std::size_t i = 0; i < e.size(); ++i) e[i] = expected[i];
      EXPECT_LT(rel_diff(y, e), 1e-11) << "k=" << k;
    }
  }
}

TEST(VertexPatch, SeparableSurrogateOnACurvedMeshWithAVariableCoefficient) {
  // the quarter annulus with a coefficient varying 10x: the surrogate's weights are the patch
  // means of the cell metric, the sweep is the sequential reference with the surrogate's local
  // solves, and the smoother contracts the error of A x = 0
  const int k = 2;
  mesh::BoxMesh<2> mesh({6, 6}, test_domains::quarter_annulus<2>());
  fe::DofLayout<2> dofs(mesh, fe::Disc::cg, k);
  operators::OperatorConfig config;
  config.degree = k;
  config.coefficient = test_domains::annulus_coefficient;
  MatrixFreeLevelOperator<2, double> op(mesh, dofs, config);
  const auto metric = op.matrix_free().cell_metric();
  VertexPatchSmoother<2, double> smoother(mesh, dofs, fe::make_quadrature(config.quadrature, k), false,
                                          PatchVariant::global, 1.0, op, metric);
  EXPECT_EQ(smoother.variant(), PatchVariant::global);
  EXPECT_FALSE(smoother.surrogate_residuals());
  // the weights of one patch are the mean of its four cells
  const std::array<int, 2> v{2, 3};
  const auto g = smoother.patch_metric(v);
  for (int d = 0; d < 2; ++d) {
    double mean = 0.0;
    for (int cy : {2, 3})
      for (int cx : {1, 2}) mean += 0.25 * metric[mesh.cell_number({cx, cy}) * 2 + d];
    EXPECT_NEAR(g[d], mean, 1e-13 * mean);
    EXPECT_GT(g[d], 0.0);
  }
  // in the angular direction the cells are longer (h_theta = pi r / 2 / 6 > h_r = 1 / 6): g_0 > g_1
  EXPECT_GT(g[0], g[1]);
  const auto a = operators::assemble_operator<2>(mesh, dofs, config, operators::Form::laplace);
  // the sweep against a sequential reference whose local solves are the surrogate's
  const auto x0 = random_vector<double>(dofs.n_local(), 95);
  const auto b = random_vector<double>(dofs.n_local(), 96);
  Vector<double> x = x0;
  smoother.smooth(x, b, SweepOrder::forward);
  Vector<double> ref = x0, ax(x0.size());
  std::vector<index_t> idx;
  for (const auto& color : smoother.colors())
    for (const auto& p : color) {
      for (std::size_t i = 0; i < ref.size(); ++i)
        if (dofs.boundary_mask()[i]) ref[i] = 0.0;
      a.vmult(ax, ref);
      smoother.inner_dof_indices(p, idx);
      std::vector<double> r(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) r[i] = b[idx[i]] - ax[idx[i]];
      smoother.local_solve(p, r.data());
      for (std::size_t i = 0; i < idx.size(); ++i) ref[idx[i]] += r[i];
    }
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (dofs.boundary_mask()[i]) ref[i] = b[i];
  EXPECT_LT(rel_diff(x, ref), 1e-12);
  // smoothing A e = 0 from a random start: the energy norm decreases in every step
  Vector<double> e = random_vector<double>(dofs.n_local(), 97), zero(dofs.n_local()), ae(dofs.n_local());
  zero.fill(0.0);
  auto energy = [&](Vector<double>& v) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (dofs.boundary_mask()[i]) v[i] = 0.0;
    a.vmult(ae, v);
    double s = 0.0;
    for (std::size_t i = 0; i < v.size(); ++i) s += v[i] * ae[i];
    return s;
  };
  double last = energy(e);
  for (int step = 0; step < 4; ++step) {
    smoother.smooth(e, zero, step % 2 ? SweepOrder::backward : SweepOrder::forward);
    const double now = energy(e);
    EXPECT_LT(now, 0.9 * last) << "step " << step;
    last = now;
  }
}

/// The step of the surrogate residuals by its definition: r = b - A x (assembled A), the sweep over
/// the colors on y from 0 with each patch's residual r_I - S_{I,F} y_F of its surrogate S = sum_d
/// g_d M .. L_d .. M (dense Kronecker products of the unit cells' 1D matrices over the patch's full
/// node box), the surrogate's local solve, then x + y.
template <int dim>
Vector<double> surrogate_residual_step(const VertexPatchSmoother<dim, double>& smoother,
                                       const operators::SparseMatrix& a, const fe::DofLayout<dim>& dofs,
                                       const fe::Quadrature1D& quadrature, const Vector<double>& x0,
                                       const Vector<double>& b, SweepOrder order) {
  const int k = dofs.degree(), nf = 2 * k + 1;
  const auto p1 = multigrid::patch_matrices_1d(k, 1.0, quadrature);
  Vector<double> xz = x0, r(x0.size()), y(x0.size());
  for (std::size_t i = 0; i < xz.size(); ++i)
    if (dofs.boundary_mask()[i]) xz[i] = 0.0;
  a.vmult(r, xz);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = b[i] - r[i];
  y.fill(0.0);
  std::vector<index_t> inner, full;
  const int nc = static_cast<int>(smoother.colors().size());
  for (int ci = 0; ci < nc; ++ci)
    for (const auto& v : smoother.colors()[order == SweepOrder::forward ? ci : nc - 1 - ci]) {
      smoother.inner_dof_indices(v, inner);
      smoother.patch_dof_indices(v, full);
      const auto g = smoother.patch_metric(v);
      std::vector<double> ri(inner.size());
      std::size_t row = 0;
      for (std::size_t i = 0; i < full.size(); ++i) {
        std::array<int, dim> ii;
        bool is_inner = true;
        for (int d = 0, t = int(i); d < dim; ++d, t /= nf) {
          ii[d] = t % nf;
          is_inner = is_inner && ii[d] > 0 && ii[d] < nf - 1;
        }
        if (!is_inner) continue;
        double sy = 0.0;
        for (std::size_t j = 0; j < full.size(); ++j) {
          double term = 0.0;
          for (int dl = 0; dl < dim; ++dl) {
            double prod = g[dl];
            for (int d = 0, t = int(j); d < dim; ++d, t /= nf) {
              const auto& m = d == dl ? p1.stiffness : p1.mass;
              prod *= m[ii[d] * nf + t % nf];
            }
            term += prod;
          }
          sy += term * y[full[j]];
        }
        EXPECT_EQ(full[i], inner[row]);
        ri[row] = r[inner[row]] - sy;
        ++row;
      }
      smoother.local_solve(v, ri.data());
      for (std::size_t q = 0; q < inner.size(); ++q) y[inner[q]] += ri[q];
    }
  Vector<double> x = x0;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = dofs.boundary_mask()[i] ? b[i] : x0[i] + y[i];
  return x;
}

template <int dim>
void check_surrogate_residuals(const std::array<int, dim>& cells, int k) {
  mesh::BoxMesh<dim> mesh(cells, test_domains::quarter_annulus<dim>());
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k);
  operators::OperatorConfig config;
  config.degree = k;
  config.coefficient = test_domains::annulus_coefficient;
  MatrixFreeLevelOperator<dim, double> op(mesh, dofs, config);
  const auto metric = op.matrix_free().cell_metric();
  const auto quadrature = fe::make_quadrature(config.quadrature, k);
  const auto a = operators::assemble_operator<dim>(mesh, dofs, config, operators::Form::laplace);
  const auto x0 = random_vector<double>(dofs.n_local(), 61);
  const auto b = random_vector<double>(dofs.n_local(), 62);
  for (auto variant : {PatchVariant::fused, PatchVariant::separate})
    for (auto order : {SweepOrder::forward, SweepOrder::backward}) {
      VertexPatchSmoother<dim, double> smoother(mesh, dofs, quadrature, false, variant, 1.0, op, metric);
      ASSERT_TRUE(smoother.surrogate_residuals());
      EXPECT_EQ(smoother.variant(), variant);
      Vector<double> x = x0;
      smoother.smooth(x, b, order);
      const auto ref = surrogate_residual_step<dim>(smoother, a, dofs, quadrature, x0, b, order);
      EXPECT_LT(rel_diff(x, ref), 1e-12) << dim << "D k=" << k << " " << multigrid::to_string(variant);
    }
}

TEST(VertexPatch, SurrogateResidualsOnACurvedMeshAreTheSweepOfTheSurrogates) {
  check_surrogate_residuals<2>({6, 5}, 2);
  check_surrogate_residuals<2>({4, 4}, 3);
  check_surrogate_residuals<3>({4, 3, 3}, 2);
}

TEST(VertexPatch, SurrogateResidualsEqualTheGlobalResidualWhereTheSurrogatesAreExact) {
  // Cartesian cells, a constant coefficient, the general path: the surrogates are the patch
  // matrices, so one level residual per step gives what one per color gives
  for (int k : {1, 2, 3}) {
    AnisotropicBoxLevel level({4, 5, 3}, k);
    const auto& [mesh, dofs, config, op] = std::tie(level.mesh, level.dofs, level.config, level.op);
    const auto metric = op.matrix_free().cell_metric();
    const auto quadrature = fe::make_quadrature(config.quadrature, k);
    const auto x0 = random_vector<double>(dofs.n_local(), 71);
    const auto b = random_vector<double>(dofs.n_local(), 72);
    VertexPatchSmoother<3, double> global(mesh, dofs, quadrature, false, PatchVariant::global, 1.0, op, metric);
    VertexPatchSmoother<3, double> local(mesh, dofs, quadrature, false, PatchVariant::fused, 1.0, op, metric);
    ASSERT_TRUE(local.surrogate_residuals());
    for (auto order : {SweepOrder::forward, SweepOrder::backward}) {
      Vector<double> xg = x0, xl = x0;
      global.smooth(xg, b, order);
      local.smooth(xl, b, order);
      EXPECT_LT(rel_diff(xl, xg), 1e-11) << "k=" << k;
    }
  }
}

TEST(VertexPatch, SmoothingFromZeroEqualsTheStepFromZero) {
  // x = 0 on entry: smooth_from_zero (the surrogate residuals sweep x itself with b) gives what
  // smooth gives, on the annulus with surrogates and on Cartesian cells, every variant
  mesh::BoxMesh<3> annulus({4, 3, 3}, test_domains::quarter_annulus<3>());
  mesh::BoxMesh<3> box({4, 3, 3}, mesh::GeometryKind::cartesian);
  for (const auto* mesh : {&annulus, &box}) {
    const bool curved = mesh == &annulus;
    fe::DofLayout<3> dofs(*mesh, fe::Disc::cg, 2);
    operators::OperatorConfig config;
    config.degree = 2;
    if (curved) config.coefficient = test_domains::annulus_coefficient;
    MatrixFreeLevelOperator<3, double> op(*mesh, dofs, config);
    const auto metric = curved ? op.matrix_free().cell_metric() : std::vector<double>{};
    const auto quadrature = curved ? fe::make_quadrature(config.quadrature, 2) : exact_rule(2);
    const auto b = random_vector<double>(dofs.n_local(), 81);
    for (auto variant : {PatchVariant::fused, PatchVariant::separate, PatchVariant::global})
      for (auto order : {SweepOrder::forward, SweepOrder::backward}) {
        VertexPatchSmoother<3, double> smoother(*mesh, dofs, quadrature, false, variant, 1.0, op, metric);
        Vector<double> x(dofs.n_local()), z(dofs.n_local());
        x.fill(0.0);
        z.fill(0.0);
        smoother.smooth(x, b, order);
        smoother.smooth_from_zero(z, b, order);
        EXPECT_LT(rel_diff(z, x), 1e-15) << (curved ? "annulus " : "box ") << multigrid::to_string(variant);
      }
  }
}

TEST(VertexPatch, AdditiveSweepEqualsReference) {
  PatchProblem<2> s(4, 2);
  const auto a = s.assemble();
  const double omega = 0.5;
  VertexPatchSmoother<2, double> smoother(s.mesh, s.dofs, exact_rule(2), true, PatchVariant::global, omega, s.op);
  auto x = random_vector<double>(s.dofs.n_local(), 31);
  const auto b = random_vector<double>(s.dofs.n_local(), 32);
  auto ref = x;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (s.dofs.boundary_mask()[i]) ref[i] = 0.0;
  Vector<double> ax(x.size());
  a.vmult(ax, ref);
  auto x_in = ref;
  std::vector<index_t> idx;
  for (const auto& color : smoother.colors())
    for (const auto& v : color) {
      smoother.inner_dof_indices(v, idx);
      std::vector<double> r(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) r[i] = b[idx[i]] - ax[idx[i]];
      const auto y = dense_solve(dense_block(a, idx), r);
      for (std::size_t i = 0; i < idx.size(); ++i) ref[idx[i]] += omega * y[i];
    }
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (s.dofs.boundary_mask()[i]) ref[i] = b[i];
  smoother.smooth(x_in, b, SweepOrder::forward);
  EXPECT_LT(rel_diff(x_in, ref), 1e-12);
}

TEST(VertexPatch, FloatSweepAgreesWithDouble) {
  PatchProblem<3> s(3, 3);
  MatrixFreeLevelOperator<3, float> opf(s.mesh, s.dofs, s.config);
  VertexPatchSmoother<3, double> sd(s.mesh, s.dofs, exact_rule(3), false, PatchVariant::fused, 1.0, s.op);
  VertexPatchSmoother<3, float> sf(s.mesh, s.dofs, exact_rule(3), false, PatchVariant::fused, 1.0, opf);
  auto xd = random_vector<double>(s.dofs.n_local(), 41);
  const auto bd = random_vector<double>(s.dofs.n_local(), 42);
  Vector<float> xf(xd.size()), bf(xd.size());
  for (std::size_t i = 0; i < xd.size(); ++i) {
    xf[i] = static_cast<float>(xd[i]);
    bf[i] = static_cast<float>(bd[i]);
  }
  sd.smooth(xd, bd, SweepOrder::forward);
  sf.smooth(xf, bf, SweepOrder::forward);
  Vector<double> xfd(xd.size());
  for (std::size_t i = 0; i < xd.size(); ++i) xfd[i] = xf[i];
  EXPECT_LT(rel_diff(xfd, xd), 1e-5);
}

TEST(VertexPatch, DeformedMeshUsesGlobalResidualAndCartesianPatchInverse) {
  PatchProblem<2> s(4, 2, mesh::GeometryKind::deformed);
  VertexPatchSmoother<2, double> smoother(s.mesh, s.dofs, exact_rule(2), false, PatchVariant::fused, 1.0, s.op);
  EXPECT_EQ(smoother.variant(), PatchVariant::global);
  // one sweep reduces the error of A x = 0 from a smooth-free random start in the energy norm
  const auto a = s.assemble();
  auto x = random_vector<double>(s.dofs.n_local(), 51);
  Vector<double> zero(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (s.dofs.boundary_mask()[i]) x[i] = 0.0;
  auto energy = [&](const Vector<double>& v) {
    Vector<double> av(v.size());
    a.vmult(av, v);
    return av.dot(v);
  };
  const double e0 = energy(x);
  smoother.smooth(x, zero, SweepOrder::forward);
  EXPECT_LT(energy(x), 0.5 * e0);
}

TEST(VertexPatch, DgIsRejected) {
  mesh::BoxMesh<2> mesh({4, 4}, mesh::GeometryKind::cartesian);
  fe::DofLayout<2> dofs(mesh, fe::Disc::dg, 2);
  operators::OperatorConfig c;
  c.disc = fe::Disc::dg;
  MatrixFreeLevelOperator<2, double> op(mesh, dofs, c);
  EXPECT_THROW((VertexPatchSmoother<2, double>(mesh, dofs, exact_rule(2), false, PatchVariant::fused, 1.0, op)), InputError);
}

TEST(ChebyshevSmoother, EigenvalueEstimateBoundsTheSpectrum) {
  PatchProblem<2> s(6, 2);
  const auto a = s.assemble();
  Vector<double> diag;
  s.op.matrix_free().compute_diagonal(diag);
  Vector<double> inv(diag.size());
  for (std::size_t i = 0; i < diag.size(); ++i) inv[i] = 1.0 / diag[i];
  const double est = multigrid::estimate_largest_eigenvalue<double>(s.op, inv, s.dofs.boundary_mask(), 12);
  // power iteration on D^{-1} A restricted to the unconstrained DoFs
  auto v = random_vector<double>(diag.size(), 61);
  Vector<double> w(v.size());
  double lambda = 0;
  for (int it = 0; it < 2000; ++it) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (s.dofs.boundary_mask()[i]) v[i] = 0;
    a.vmult(w, v);
    for (std::size_t i = 0; i < v.size(); ++i) w[i] = s.dofs.boundary_mask()[i] ? 0.0 : w[i] * inv[i];
    lambda = w.norm() / v.norm();
    v = w;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] /= lambda;
  }
  EXPECT_LE(est, lambda * (1 + 1e-6));
  EXPECT_GE(1.2 * est, lambda);
}

TEST(CoarseSolver, CholeskyAndCgSolveTheCoarseProblem) {
  PatchProblem<3> s(2, 3);
  const auto a = s.assemble();
  const auto b = random_vector<double>(s.dofs.n_local(), 71);
  multigrid::CholeskyCoarseSolver<3, double> chol(s.mesh, s.dofs, s.config);
  Vector<double> diag;
  s.op.matrix_free().compute_diagonal(diag);
  multigrid::CgCoarseSolver<double> cg(s.op, diag, 1e-13);
  for (int which = 0; which < 2; ++which) {
    Vector<double> x(b.size()), ax(b.size());
    if (which == 0)
      chol.solve(x, b);
    else
      cg.solve(x, b);
    a.vmult(ax, x);
    for (std::size_t i = 0; i < ax.size(); ++i) ax[i] -= b[i];
    EXPECT_LT(ax.norm(), 1e-11 * b.norm()) << (which == 0 ? "cholesky" : "cg");
  }
  multigrid::CholeskyCoarseSolver<3, float> cholf(s.mesh, s.dofs, s.config);
  Vector<float> bf(b.size()), xf(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) bf[i] = static_cast<float>(b[i]);
  cholf.solve(xf, bf);
  Vector<double> x(b.size()), ax(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) x[i] = xf[i];
  a.vmult(ax, x);
  for (std::size_t i = 0; i < ax.size(); ++i) ax[i] -= b[i];
  EXPECT_LT(ax.norm(), 1e-5 * b.norm());
}

}  // namespace
