// Tests of the matrix-free operators against independently assembled sparse matrices
// (operators/cpu/sparse_matrix.h: full evaluation of the basis at every quadrature point), for 2D and
// 3D, cg and dg, Cartesian (fast and general path) and deformed meshes, degrees 1..8, and both
// general-path quadratures; plus symmetry, definiteness, diagonal and float-precision checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cpu/sparse_matrix.h"

namespace {
using namespace tcfem;
using operators::Form;
using operators::MatrixFreeOperator;
using operators::OperatorConfig;
using operators::SparseMatrix;

constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

/// Geometry and path of a case: Cartesian with the fast path, Cartesian through the general path
/// (with Gauss k+2 or Gauss-Lobatto k+1), and the deformed box with either quadrature.
enum class Variant { cartesian_fast, cartesian_general_gauss, cartesian_general_gll, deformed_gauss, deformed_gll };

const char* name(Variant v) {
  switch (v) {
    case Variant::cartesian_fast: return "CartesianFast";
    case Variant::cartesian_general_gauss: return "CartesianGeneralGauss";
    case Variant::cartesian_general_gll: return "CartesianGeneralGll";
    case Variant::deformed_gauss: return "DeformedGauss";
    case Variant::deformed_gll: return "DeformedGll";
  }
  return "?";
}

struct Case {
  fe::Disc disc;
  Variant variant;
  int degree;
};

// readable parameter in gtest and ctest output
void PrintTo(const Case& c, std::ostream* os) {
  *os << (c.disc == fe::Disc::cg ? "cg " : "dg ") << name(c.variant) << " k=" << c.degree;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto& c = info.param;
  return std::string(c.disc == fe::Disc::cg ? "Cg" : "Dg") + name(c.variant) + "K" + std::to_string(c.degree);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (auto disc : {fe::Disc::cg, fe::Disc::dg})
    for (auto v : {Variant::cartesian_fast, Variant::cartesian_general_gauss, Variant::cartesian_general_gll,
                   Variant::deformed_gauss, Variant::deformed_gll})
      for (int k = 1; k <= 8; ++k) cases.push_back({disc, v, k});
  return cases;
}

/// Small meshes with different cell counts per direction (distinct h_d); fewer cells for the
/// expensive high degrees in 3D, with the interior faces in different directions.
template <int dim>
std::array<int, dim> mesh_cells(int k) {
  if constexpr (dim == 2) {
    return k % 2 ? std::array<int, 2>{4, 3} : std::array<int, 2>{3, 4};
  } else {
    if (k <= 2) return {3, 3, 2};
    if (k <= 4) return {2, 3, 2};
    if (k == 5) return {2, 2, 2};
    if (k == 6) return {2, 1, 2};
    if (k == 7) return {1, 2, 2};
    return {2, 1, 1};
  }
}

OperatorConfig make_config(const Case& c) {
  OperatorConfig cfg;
  cfg.disc = c.disc;
  cfg.degree = c.degree;
  cfg.cartesian_fast_path = c.variant == Variant::cartesian_fast;
  const bool gll = c.variant == Variant::cartesian_general_gll || c.variant == Variant::deformed_gll;
  // the fast path ignores the quadrature; give it the "wrong" one to make sure of that
  cfg.quadrature = gll || c.variant == Variant::cartesian_fast ? fe::QuadratureKind::gll_k1
                                                                 : fe::QuadratureKind::gauss_k2;
  return cfg;
}

Vector<double> random_vector(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = uniform(rng);
  return v;
}

/// ||a - b|| / ||b|| in the 2-norm (NaN anywhere makes it NaN, which fails every bound).
double rel_diff(const Vector<double>& a, const Vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0.0, nb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    nb += b[i] * b[i];
  }
  return std::sqrt(d / nb);
}

template <typename Number>
Vector<Number> poisoned(std::size_t n) {
  return Vector<Number>(n, std::numeric_limits<Number>::quiet_NaN());
}

template <int dim>
Vector<double> apply(const MatrixFreeOperator<dim, double>& op, const Vector<double>& u) {
  auto v = poisoned<double>(u.size());
  op.vmult(v, u);
  return v;
}

Vector<double> apply(const SparseMatrix& A, const Vector<double>& u) {
  auto v = poisoned<double>(u.size());
  A.vmult(v, u);
  return v;
}

template <int dim>
void check_case(const Case& c, std::uint64_t seed) {
  const bool deformed = c.variant == Variant::deformed_gauss || c.variant == Variant::deformed_gll;
  const mesh::BoxMesh<dim> mesh(mesh_cells<dim>(c.degree),
                                deformed ? mesh::GeometryKind::deformed : mesh::GeometryKind::cartesian);
  const fe::DofLayout<dim> dofs(mesh, c.disc, c.degree);
  const OperatorConfig cfg = make_config(c);
  const std::size_t n = dofs.n_local();
  ASSERT_EQ(n, dofs.n_dofs());
  std::mt19937_64 rng(seed);
  for (const Form form : {Form::laplace, Form::mass}) {
    SCOPED_TRACE(form == Form::laplace ? "form laplace" : "form mass");
    const SparseMatrix A = operators::assemble_operator<dim>(mesh, dofs, cfg, form);
    ASSERT_EQ(A.n_rows(), n);
    const MatrixFreeOperator<dim, double> op(mesh, dofs, cfg, form);
    EXPECT_EQ(op.path(), c.variant == Variant::cartesian_fast ? operators::Path::cartesian : operators::Path::general);

    // vmult equals the assembled matrix on fresh random vectors
    for (int t = 0; t < 3; ++t) {
      const auto u = random_vector(n, rng);
      EXPECT_LE(rel_diff(apply(op, u), apply(A, u)), 1e-12) << "trial " << t;
    }

    // symmetry: u.Av = v.Au relative to |u.Av|; v = u/2 + w keeps u.Av away from zero (u.Au > 0)
    for (int t = 0; t < 2; ++t) {
      const auto u = random_vector(n, rng);
      auto v = random_vector(n, rng);
      v.add(0.5, u);
      const double uAv = u.dot(apply(op, v)), vAu = v.dot(apply(op, u));
      EXPECT_LE(std::abs(uAv - vAu), 1e-12 * std::abs(uAv)) << "trial " << t << ": " << uAv << " vs " << vAu;
    }

    // positive definite on random vectors and on the constant vector
    for (int t = 0; t < 4; ++t) {
      const auto u = t < 3 ? random_vector(n, rng) : Vector<double>(n, 1.0);
      EXPECT_GT(u.dot(apply(op, u)), 0.0) << "trial " << t;
    }

    // diagonal
    const Vector<double> diag_ref = A.diagonal();
    auto diag = poisoned<double>(n);
    op.compute_diagonal(diag);
    ASSERT_EQ(diag.size(), n);
    EXPECT_LE(rel_diff(diag, diag_ref), 1e-12);
    for (std::size_t i = 0; i < n; ++i) ASSERT_GT(diag[i], 0.0) << "diagonal entry " << i;

    // float instantiation agrees with double (same, float-representable input)
    {
      const MatrixFreeOperator<dim, float> opf(mesh, dofs, cfg, form);
      const auto u = random_vector(n, rng);
      Vector<float> uf(n);
      Vector<double> ur(n);
      for (std::size_t i = 0; i < n; ++i) {
        uf[i] = static_cast<float>(u[i]);
        ur[i] = uf[i];
      }
      auto vf = poisoned<float>(n);
      opf.vmult(vf, uf);
      Vector<double> vfd(n);
      for (std::size_t i = 0; i < n; ++i) vfd[i] = vf[i];
      EXPECT_LE(rel_diff(vfd, apply(op, ur)), 1e-5);
      auto df = poisoned<float>(n);
      opf.compute_diagonal(df);
      Vector<double> dfd(n);
      for (std::size_t i = 0; i < n; ++i) dfd[i] = df[i];
      EXPECT_LE(rel_diff(dfd, diag_ref), 1e-5);
    }

    // the general path on a Cartesian mesh (Gauss quadrature) agrees with the fast path
    if (c.variant == Variant::cartesian_general_gauss) {
      OperatorConfig fast_cfg = cfg;
      fast_cfg.cartesian_fast_path = true;
      const MatrixFreeOperator<dim, double> fast(mesh, dofs, fast_cfg, form);
      EXPECT_EQ(fast.path(), operators::Path::cartesian);
      OperatorConfig k1_cfg = cfg;
      k1_cfg.quadrature = fe::QuadratureKind::gauss_k1;
      const MatrixFreeOperator<dim, double> general_k1(mesh, dofs, k1_cfg, form);
      const auto u = random_vector(n, rng);
      const auto ref = apply(fast, u);
      EXPECT_LE(rel_diff(apply(op, u), ref), 1e-12);
      EXPECT_LE(rel_diff(apply(general_k1, u), ref), 1e-12);
      auto dfast = poisoned<double>(n);
      fast.compute_diagonal(dfast);
      EXPECT_LE(rel_diff(diag, dfast), 1e-12);
    }
  }
}

std::uint64_t seed_of(int dim, const Case& c) {
  return 0x5EED0000u + 10000u * dim + 1000u * static_cast<unsigned>(c.disc) + 100u * static_cast<unsigned>(c.variant) +
         static_cast<unsigned>(c.degree);
}

class Operator2D : public ::testing::TestWithParam<Case> {};
class Operator3D : public ::testing::TestWithParam<Case> {};

TEST_P(Operator2D, MatchesAssembledMatrix) { check_case<2>(GetParam(), seed_of(2, GetParam())); }
TEST_P(Operator3D, MatchesAssembledMatrix) { check_case<3>(GetParam(), seed_of(3, GetParam())); }

INSTANTIATE_TEST_SUITE_P(AllCases, Operator2D, ::testing::ValuesIn(all_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(AllCases, Operator3D, ::testing::ValuesIn(all_cases()), case_name);

// ---- properties of the assembled matrices ----------------------------------------------------

TEST(AssembledMatrix, CgLaplaceBoundaryRowsAreIdentity) {
  const mesh::BoxMesh<2> mesh({3, 2}, mesh::GeometryKind::deformed);
  const fe::DofLayout<2> dofs(mesh, fe::Disc::cg, 3);
  OperatorConfig cfg;
  cfg.disc = fe::Disc::cg;
  cfg.degree = 3;
  const auto A = operators::assemble_operator<2>(mesh, dofs, cfg, Form::laplace);
  const auto& bmask = dofs.boundary_mask();
  std::size_t n_boundary = 0;
  for (std::size_t r = 0; r < A.n_rows(); ++r) {
    if (!bmask[r]) continue;
    ++n_boundary;
    EXPECT_EQ(A.row_ptr()[r + 1] - A.row_ptr()[r], 1u);
    EXPECT_EQ(A.el(r, r), 1.0);
  }
  EXPECT_EQ(n_boundary, (10u * 7u) - (8u * 5u));
  // no interior row couples to a boundary column
  for (std::size_t r = 0; r < A.n_rows(); ++r)
    for (std::size_t p = A.row_ptr()[r]; p < A.row_ptr()[r + 1]; ++p)
      if (A.cols()[p] != r) {
        EXPECT_FALSE(bmask[A.cols()[p]]);
      }
}

TEST(AssembledMatrix, MassMatrixIntegratesConstantsToTheVolume) {
  // 1^T M 1 = |Omega| = 1 (the deformation fixes the boundary), also with collocated quadrature
  for (auto disc : {fe::Disc::cg, fe::Disc::dg})
    for (auto quad : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
      const mesh::BoxMesh<3> mesh({2, 2, 3}, mesh::GeometryKind::deformed);
      const fe::DofLayout<3> dofs(mesh, disc, 2);
      OperatorConfig cfg;
      cfg.disc = disc;
      cfg.degree = 2;
      cfg.quadrature = quad;
      const auto M = operators::assemble_operator<3>(mesh, dofs, cfg, Form::mass);
      const Vector<double> one(dofs.n_local(), 1.0);
      Vector<double> Mone;
      M.vmult(Mone, one);
      // the Q_2 geometry keeps the flat boundary of the box, so its volume is exactly 1; Gauss k+2
      // integrates det J (degree 5 per direction) exactly, Gauss-Lobatto k+1 does not
      EXPECT_NEAR(one.dot(Mone), 1.0, quad == fe::QuadratureKind::gauss_k2 ? 1e-13 : 1e-2);
    }
  const mesh::BoxMesh<2> mesh({3, 4}, mesh::GeometryKind::cartesian);
  const fe::DofLayout<2> dofs(mesh, fe::Disc::dg, 4);
  OperatorConfig cfg;
  cfg.disc = fe::Disc::dg;
  cfg.degree = 4;
  const auto M = operators::assemble_operator<2>(mesh, dofs, cfg, Form::mass);
  const Vector<double> one(dofs.n_local(), 1.0);
  Vector<double> Mone;
  M.vmult(Mone, one);
  EXPECT_NEAR(one.dot(Mone), 1.0, 1e-14);
}

TEST(AssembledMatrix, DgLaplaceIsSymmetric) {
  const mesh::BoxMesh<2> mesh({2, 3}, mesh::GeometryKind::deformed);
  const fe::DofLayout<2> dofs(mesh, fe::Disc::dg, 2);
  OperatorConfig cfg;
  cfg.disc = fe::Disc::dg;
  cfg.degree = 2;
  const auto A = operators::assemble_operator<2>(mesh, dofs, cfg, Form::laplace);
  double max_entry = 0.0;
  for (double v : A.values()) max_entry = std::max(max_entry, std::abs(v));
  for (std::size_t r = 0; r < A.n_rows(); ++r)
    for (std::size_t p = A.row_ptr()[r]; p < A.row_ptr()[r + 1]; ++p) {
      const std::size_t col = A.cols()[p];
      ASSERT_TRUE(A.in_pattern(col, r));
      EXPECT_NEAR(A.values()[p], A.el(col, r), 1e-13 * max_entry);
    }
}

TEST(AssembledMatrix, ElementsOverTheThreadsEqualOneThread) {
  // large elements (k = 4, 5 on a deformed mesh) are formed in batches over the host threads and
  // added with the rows split over them: the same matrix to the bit as on one thread
  const mesh::BoxMesh<3> mesh({3, 2, 3}, mesh::GeometryKind::deformed);
  for (int k : {4, 5}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const fe::DofLayout<3> dofs(mesh, fe::Disc::cg, k);
    OperatorConfig cfg;
    cfg.degree = k;
    cfg.coefficient = [](const double* x) { return 1.0 + x[0] * x[1] + 0.5 * x[2]; };
    set_host_threads(1);
    const auto one = operators::assemble_operator<3>(mesh, dofs, cfg, Form::laplace);
    set_host_threads(5);
    const auto several = operators::assemble_operator<3>(mesh, dofs, cfg, Form::laplace);
    set_host_threads(0);
    ASSERT_EQ(one.nnz(), several.nnz());
    EXPECT_EQ(one.cols(), several.cols());
    std::size_t differ = 0;
    for (std::size_t p = 0; p < one.nnz(); ++p) differ += one.values()[p] != several.values()[p];
    EXPECT_EQ(differ, 0u);
  }
}

TEST(AssembledMatrix, CartesianKroneckerCellsEqualQuadrature) {
  // Cartesian cells are assembled from the exact 1D matrices; Gauss k+2 quadrature of the general
  // path integrates the same integrands exactly, so the matrices agree to rounding
  const mesh::BoxMesh<3> mesh({3, 2, 4}, mesh::GeometryKind::cartesian);
  for (auto disc : {fe::Disc::cg, fe::Disc::dg})
    for (int k : {1, 3, 5})
      for (auto form : {Form::laplace, Form::mass}) {
        SCOPED_TRACE(std::string(disc == fe::Disc::cg ? "cg" : "dg") + " k=" + std::to_string(k) +
                     (form == Form::laplace ? " laplace" : " mass"));
        const fe::DofLayout<3> dofs(mesh, disc, k);
        OperatorConfig cfg;
        cfg.disc = disc;
        cfg.degree = k;
        const auto fast = operators::assemble_operator<3>(mesh, dofs, cfg, form);
        cfg.cartesian_fast_path = false;
        cfg.quadrature = fe::QuadratureKind::gauss_k2;
        const auto quad = operators::assemble_operator<3>(mesh, dofs, cfg, form);
        ASSERT_EQ(fast.nnz(), quad.nnz());
        double max_entry = 0.0, max_diff = 0.0;
        for (std::size_t p = 0; p < quad.nnz(); ++p) {
          ASSERT_EQ(fast.cols()[p], quad.cols()[p]);
          max_entry = std::max(max_entry, std::abs(quad.values()[p]));
          max_diff = std::max(max_diff, std::abs(fast.values()[p] - quad.values()[p]));
        }
        EXPECT_LE(max_diff, 1e-13 * max_entry);
      }
}

TEST(AssembledMatrix, PatternSizeMatchesEstimate) {
  // without constraints the estimate is the exact pattern size
  const mesh::BoxMesh<3> mesh({3, 2, 2}, mesh::GeometryKind::cartesian);
  for (int k = 1; k <= 3; ++k) {
    const fe::DofLayout<3> cg(mesh, fe::Disc::cg, k), dg(mesh, fe::Disc::dg, k);
    OperatorConfig cfg;
    cfg.degree = k;
    cfg.disc = fe::Disc::cg;
    EXPECT_EQ(operators::assemble_operator<3>(mesh, cg, cfg, Form::mass).nnz(),
              operators::estimated_nnz<3>(mesh, cg, Form::mass));
    EXPECT_LT(operators::assemble_operator<3>(mesh, cg, cfg, Form::laplace).nnz(),
              operators::estimated_nnz<3>(mesh, cg, Form::laplace));
    cfg.disc = fe::Disc::dg;
    for (auto form : {Form::mass, Form::laplace})
      EXPECT_EQ(operators::assemble_operator<3>(mesh, dg, cfg, form).nnz(), operators::estimated_nnz<3>(mesh, dg, form));
  }
}

TEST(AssembledMatrix, RefusesTooManyNonzerosAndMismatchedConfig) {
  const mesh::BoxMesh<3> mesh({16, 16, 16}, mesh::GeometryKind::cartesian);
  const fe::DofLayout<3> dofs(mesh, fe::Disc::dg, 8);
  OperatorConfig cfg;
  cfg.disc = fe::Disc::dg;
  cfg.degree = 8;
  EXPECT_GT(operators::estimated_nnz<3>(mesh, dofs, Form::laplace), SparseMatrix::max_nnz);
  EXPECT_THROW(operators::assemble_operator<3>(mesh, dofs, cfg, Form::laplace), InputError);
  EXPECT_THROW(operators::assemble_operator<3>(mesh, dofs, cfg, Form::mass), InputError);
  cfg.degree = 7;
  EXPECT_THROW(operators::assemble_operator<3>(mesh, dofs, cfg, Form::mass), InputError);
  cfg.degree = 8;
  cfg.disc = fe::Disc::cg;
  EXPECT_THROW(operators::assemble_operator<3>(mesh, dofs, cfg, Form::mass), InputError);
}

// ---- SparseMatrix ----------------------------------------------------------------------------

TEST(SparseMatrix, VmultDiagonalAndElementAccess) {
  // [[2, 0, 1], [0, 0, 0], [-1, 3, 4]] with an empty middle row
  const SparseMatrix A(3, 3, {0, 2, 2, 5}, {0, 2, 0, 1, 2}, {2.0, 1.0, -1.0, 3.0, 4.0});
  EXPECT_EQ(A.n_rows(), 3u);
  EXPECT_EQ(A.n_cols(), 3u);
  EXPECT_EQ(A.nnz(), 5u);
  EXPECT_EQ(A.el(0, 0), 2.0);
  EXPECT_EQ(A.el(0, 1), 0.0);
  EXPECT_EQ(A.el(2, 1), 3.0);
  EXPECT_EQ(A.el(1, 1), 0.0);
  EXPECT_TRUE(A.in_pattern(0, 2));
  EXPECT_FALSE(A.in_pattern(1, 0));
  EXPECT_FALSE(A.in_pattern(5, 0));
  const auto d = A.diagonal();
  EXPECT_EQ(d[0], 2.0);
  EXPECT_EQ(d[1], 0.0);
  EXPECT_EQ(d[2], 4.0);
  Vector<double> x(3), y(3, nan_value);
  x[0] = 1.0;
  x[1] = 2.0;
  x[2] = 3.0;
  A.vmult(y, x);
  EXPECT_EQ(y[0], 5.0);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_EQ(y[2], 17.0);
  Vector<double> wrong(2);
  EXPECT_THROW(A.vmult(y, wrong), Error);
}

TEST(SparseMatrix, RejectsInconsistentStructure) {
  EXPECT_THROW(SparseMatrix(2, 2, {0, 1}, {0}, {1.0}), Error);                   // row_ptr too short
  EXPECT_THROW(SparseMatrix(2, 2, {0, 2, 2}, {1, 0}, {1.0, 1.0}), Error);        // unsorted
  EXPECT_THROW(SparseMatrix(2, 2, {0, 1, 2}, {0, 2}, {1.0, 1.0}), Error);        // column out of range
  EXPECT_THROW(SparseMatrix(2, 2, {0, 1, 2}, {0, 1}, {1.0}), Error);             // values too short
}

}  // namespace
