// Tests of the multigrid level hierarchy and grid transfer: prolongation reproduces coarse finite
// element functions (piecewise polynomials) exactly at the fine nodes, and restriction is the
// exact transpose of prolongation, for cg (with Dirichlet constraints) and dg, 2D and 3D,
// Cartesian and deformed levels, several degrees.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "fe/lagrange.h"
#include "multigrid/level_hierarchy.h"
#include "multigrid/host/transfer.h"
#include "random_inputs.h"

namespace {
using namespace tcfem;
using test_inputs::random_vector;
using multigrid::LevelHierarchy;
using multigrid::MatrixFreeTransfer;

TEST(MultigridHierarchy, LevelsByHalving) {
  LevelHierarchy<3> h({8, 8, 8}, mesh::GeometryKind::deformed, fe::Disc::cg, 2);
  ASSERT_EQ(h.n_levels(), 4);
  EXPECT_EQ(h.mesh(0).n_cells()[0], 1);
  EXPECT_EQ(h.mesh(3).n_cells()[2], 8);
  EXPECT_EQ(h.mesh(1).geometry(), mesh::GeometryKind::deformed);
  LevelHierarchy<2> g({12, 6}, mesh::GeometryKind::cartesian, fe::Disc::dg, 1);
  ASSERT_EQ(g.n_levels(), 2);  // 12x6 -> 6x3 (3 is odd)
  EXPECT_EQ(g.mesh(0).n_cells()[1], 3);
  LevelHierarchy<2> limited({16, 16}, mesh::GeometryKind::cartesian, fe::Disc::cg, 1, 2);
  EXPECT_EQ(limited.n_levels(), 2);
}

TEST(MultigridTransfer, InterpolationMatrixRowsAtCoarseCellEndsAreUnitVectors) {
  for (int k = 1; k <= 8; ++k) {
    const auto p = multigrid::prolongation_matrix_1d(k);
    for (int i = 0; i <= k; ++i) {
      EXPECT_EQ(p[0 * (k + 1) + i], i == 0 ? 1.0 : 0.0);
      EXPECT_EQ(p[2 * k * (k + 1) + i], i == k ? 1.0 : 0.0);
    }
  }
}

/// Value at x of the cg or dg function u of `dofs` on the (Cartesian parameter) mesh.
template <int dim>
double evaluate(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u,
                const std::array<double, dim>& x) {
  const int k = dofs.degree(), nb = k + 1;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  std::array<int, dim> c;
  std::array<double, dim> xi;
  for (int d = 0; d < dim; ++d) {
    const int n = mesh.n_cells()[d];
    c[d] = std::min(n - 1, static_cast<int>(std::floor(x[d] * n)));
    xi[d] = x[d] * n - c[d];
  }
  std::vector<index_t> idx(dofs.dofs_per_cell());
  dofs.cell_dof_indices(c, idx.data());
  const auto& mask = dofs.boundary_mask();
  double v = 0.0;
  for (int i = 0; i < dofs.dofs_per_cell(); ++i) {
    int r = i;
    double phi = 1.0;
    for (int d = 0; d < dim; ++d) {
      phi *= basis.value(r % nb, xi[d]);
      r /= nb;
    }
    const double ui = (dofs.disc() == fe::Disc::cg && mask[idx[i]]) ? 0.0 : u[idx[i]];
    v += phi * ui;
  }
  return v;
}

struct TransferCase {
  int dim;
  fe::Disc disc;
  mesh::GeometryKind geometry;
  int degree;
};

std::string transfer_case_name(const ::testing::TestParamInfo<TransferCase>& info) {
  const auto& c = info.param;
  return std::to_string(c.dim) + "d" + (c.disc == fe::Disc::cg ? "Cg" : "Dg") +
         (c.geometry == mesh::GeometryKind::cartesian ? "Cartesian" : "Deformed") + "K" + std::to_string(c.degree);
}

class TransferTest : public ::testing::TestWithParam<TransferCase> {
 protected:
  template <int dim>
  void check_reproduces_coarse_functions() {
    const auto& c = GetParam();
    std::array<int, dim> n;
    n.fill(4);
    LevelHierarchy<dim> h(n, c.geometry, c.disc, c.degree);
    const int f = h.finest();
    MatrixFreeTransfer<dim, double> t(h.mesh(f - 1), h.dofs(f - 1), h.mesh(f), h.dofs(f));
    auto uc = random_vector<double>(h.dofs(f - 1).n_local(), 11);
    Vector<double> uf(h.dofs(f).n_local(), std::nan(""));
    t.prolongate(uf, uc);
    // every fine node: its value is the coarse function at the node (in parameter coordinates)
    const int k = c.degree, nb = k + 1;
    const auto nodes = fe::LagrangeBasis1D::gauss_lobatto(k).nodes();
    std::vector<index_t> idx(h.dofs(f).dofs_per_cell());
    double max_err = 0.0;
    for (std::size_t cell = 0; cell < h.mesh(f).n_owned_cells(); ++cell) {
      const auto cf = h.mesh(f).cell_index(cell);
      h.dofs(f).cell_dof_indices(cf, idx.data());
      for (int i = 0; i < h.dofs(f).dofs_per_cell(); ++i) {
        std::array<double, dim> x;
        int r = i;
        for (int d = 0; d < dim; ++d) {
          x[d] = (cf[d] + nodes[r % nb]) / h.mesh(f).n_cells()[d];
          r /= nb;
        }
        // for dg, evaluate inside the fine cell's parent
        if (c.disc == fe::Disc::dg)
          for (int d = 0; d < dim; ++d) {
            const double lo = (cf[d] / 2) * 2.0 / h.mesh(f).n_cells()[d];
            const double hi = lo + 2.0 / h.mesh(f).n_cells()[d];
            x[d] = std::clamp(x[d], lo + 1e-15, hi - 1e-15);
          }
        const double expected = evaluate<dim>(h.mesh(f - 1), h.dofs(f - 1), uc, x);
        max_err = std::max(max_err, std::abs(uf[idx[i]] - expected));
      }
    }
    EXPECT_LT(max_err, 1e-12);
    for (std::size_t i = 0; i < uf.size(); ++i) ASSERT_FALSE(std::isnan(uf[i])) << "fine entry " << i << " unset";
  }

  template <int dim>
  void check_transpose() {
    const auto& c = GetParam();
    std::array<int, dim> n;
    n.fill(dim == 2 || c.degree == 1 ? 4 : 2);
    LevelHierarchy<dim> h(n, c.geometry, c.disc, c.degree);
    const int f = h.finest();
    MatrixFreeTransfer<dim, double> t(h.mesh(f - 1), h.dofs(f - 1), h.mesh(f), h.dofs(f));
    const auto u = random_vector<double>(h.dofs(f - 1).n_local(), 3);
    const auto v = random_vector<double>(h.dofs(f).n_local(), 4);
    Vector<double> pu(v.size()), rv(u.size());
    t.prolongate(pu, u);
    t.restrict_to_coarse(rv, v);
    const double lhs = pu.dot(v), rhs = u.dot(rv);
    EXPECT_NEAR(lhs, rhs, 1e-13 * (std::abs(lhs) + pu.norm() * v.norm()));
    // float transfer agrees with double
    MatrixFreeTransfer<dim, float> tf(h.mesh(f - 1), h.dofs(f - 1), h.mesh(f), h.dofs(f));
    Vector<float> uf(u.size()), puf(v.size());
    for (std::size_t i = 0; i < u.size(); ++i) uf[i] = static_cast<float>(u[i]);
    tf.prolongate(puf, uf);
    double diff = 0.0;
    for (std::size_t i = 0; i < v.size(); ++i) diff += std::pow(double(puf[i]) - pu[i], 2);
    EXPECT_LT(std::sqrt(diff), 1e-5 * pu.norm());
  }
};

TEST_P(TransferTest, ProlongationReproducesCoarseFunctions) {
  if (GetParam().dim == 2)
    check_reproduces_coarse_functions<2>();
  else
    check_reproduces_coarse_functions<3>();
}

TEST_P(TransferTest, RestrictionIsTransposeOfProlongation) {
  if (GetParam().dim == 2)
    check_transpose<2>();
  else
    check_transpose<3>();
}

std::vector<TransferCase> transfer_cases() {
  std::vector<TransferCase> cases;
  for (int dim : {2, 3})
    for (auto disc : {fe::Disc::cg, fe::Disc::dg})
      for (auto g : {mesh::GeometryKind::cartesian, mesh::GeometryKind::deformed})
        for (int k : {1, 2, 3, 5})
          if (dim == 2 || k <= 3) cases.push_back({dim, disc, g, k});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Multigrid, TransferTest, ::testing::ValuesIn(transfer_cases()), transfer_case_name);

TEST(MultigridTransfer, ProlongationOfAGlobalPolynomialIsItsFineInterpolant) {
  // u = prod_d x_d (1 - x_d) x_d^(k-2): degree k per direction, zero on the boundary
  const int k = 3;
  LevelHierarchy<3> h({4, 4, 4}, mesh::GeometryKind::cartesian, fe::Disc::cg, k);
  auto interpolate = [&](int level) {
    const auto& dofs = h.dofs(level);
    const auto& ext = dofs.lattice_extent();
    const auto nodes = fe::LagrangeBasis1D::gauss_lobatto(k).nodes();
    const int n = h.mesh(level).n_cells()[0];
    Vector<double> u(dofs.n_local());
    for (long p2 = 0; p2 < ext[2]; ++p2)
      for (long p1 = 0; p1 < ext[1]; ++p1)
        for (long p0 = 0; p0 < ext[0]; ++p0) {
          double v = 1.0;
          for (long p : {p0, p1, p2}) {
            const long c = std::min<long>(p / k, n - 1);
            const double x = (c + nodes[p - c * k]) / n;
            v *= x * (1 - x) * x;
          }
          u[dofs.lattice_index({p0, p1, p2})] = v;
        }
    return u;
  };
  const auto uc = interpolate(1), uf_expected = interpolate(2);
  MatrixFreeTransfer<3, double> t(h.mesh(1), h.dofs(1), h.mesh(2), h.dofs(2));
  Vector<double> uf(uf_expected.size());
  t.prolongate(uf, uc);
  double err = 0.0;
  for (std::size_t i = 0; i < uf.size(); ++i) err = std::max(err, std::abs(uf[i] - uf_expected[i]));
  EXPECT_LT(err, 1e-14);
}

}  // namespace
