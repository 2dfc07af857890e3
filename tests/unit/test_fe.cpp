// Tests of the 1D finite element building blocks: Gauss and Gauss-Lobatto rules, the Lagrange
// basis on Gauss-Lobatto nodes and the 1D mass and stiffness matrices.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"

namespace {
using namespace tcfem;

double integrate_monomial(const fe::Quadrature1D& q, int p) {
  long double s = 0.0L;
  for (int i = 0; i < q.size(); ++i) s += static_cast<long double>(q.weights[i]) * std::pow(q.points[i], p);
  return static_cast<double>(s);
}

double factorial(int n) {
  double f = 1.0;
  for (int i = 2; i <= n; ++i) f *= i;
  return f;
}

// ---- quadrature -----------------------------------------------------------------------------

TEST(Quadrature, GaussExactUpToDegree2nMinus1AndNot2n) {
  for (int n = 1; n <= 10; ++n) {
    const auto q = fe::gauss(n);
    ASSERT_EQ(q.size(), n);
    for (int p = 0; p <= 2 * n - 1; ++p)
      EXPECT_NEAR(integrate_monomial(q, p), 1.0 / (p + 1), 1e-14) << "n " << n << " p " << p;
    // error of the n-point rule on x^{2n} over [0,1]: (n!)^4 / ((2n+1) ((2n)!)^2) > 0
    const double expected_error = std::pow(factorial(n), 4) / ((2 * n + 1) * std::pow(factorial(2 * n), 2));
    const double error = 1.0 / (2 * n + 1) - integrate_monomial(q, 2 * n);
    EXPECT_GT(error, 0.5 * expected_error) << "n " << n;
    EXPECT_LT(error, 1.5 * expected_error) << "n " << n;
  }
}

TEST(Quadrature, GaussLobattoExactUpToDegree2nMinus3AndNot2nMinus2) {
  for (int n = 2; n <= 10; ++n) {
    const auto q = fe::gauss_lobatto(n);
    ASSERT_EQ(q.size(), n);
    for (int p = 0; p <= 2 * n - 3; ++p)
      EXPECT_NEAR(integrate_monomial(q, p), 1.0 / (p + 1), 1e-14) << "n " << n << " p " << p;
    // error on x^{2n-2} over [0,1]: -n (n-1)^3 ((n-2)!)^4 / ((2n-1) ((2n-2)!)^2) (overestimates)
    const double expected_error =
        n * std::pow(n - 1, 3) * std::pow(factorial(n - 2), 4) / ((2 * n - 1) * std::pow(factorial(2 * n - 2), 2));
    const double error = integrate_monomial(q, 2 * n - 2) - 1.0 / (2 * n - 1);
    EXPECT_GT(error, 0.5 * expected_error) << "n " << n;
    EXPECT_LT(error, 1.5 * expected_error) << "n " << n;
  }
}

TEST(Quadrature, PointsIncreasingInsideUnitIntervalAndWeightsPositive) {
  for (int n = 1; n <= 12; ++n) {
    for (int lobatto = 0; lobatto < 2; ++lobatto) {
      if (lobatto && n < 2) continue;
      const auto q = lobatto ? fe::gauss_lobatto(n) : fe::gauss(n);
      EXPECT_NEAR(std::accumulate(q.weights.begin(), q.weights.end(), 0.0), 1.0, 1e-14);
      for (int i = 0; i < n; ++i) {
        EXPECT_GT(q.weights[i], 0.0);
        EXPECT_GE(q.points[i], 0.0);
        EXPECT_LE(q.points[i], 1.0);
        if (!lobatto) {
          EXPECT_GT(q.points[i], 0.0);
          EXPECT_LT(q.points[i], 1.0);
        }
        if (i > 0) {
          EXPECT_LT(q.points[i - 1], q.points[i]);
        }
        // symmetric about 1/2
        EXPECT_NEAR(q.points[i] + q.points[n - 1 - i], 1.0, 1e-15);
        EXPECT_NEAR(q.weights[i], q.weights[n - 1 - i], 1e-15);
      }
    }
  }
}

TEST(Quadrature, GaussLobattoNodesIncludeEndPointsAndAreSymmetric) {
  for (int k = 1; k <= 8; ++k) {
    const auto q = fe::gauss_lobatto(k + 1);
    ASSERT_EQ(q.size(), k + 1);
    EXPECT_EQ(q.points.front(), 0.0);
    EXPECT_EQ(q.points.back(), 1.0);
    for (int i = 0; i <= k; ++i) EXPECT_NEAR(q.points[i] + q.points[k - i], 1.0, 1e-15) << "k " << k;
    // the Lagrange basis of degree k uses exactly these nodes
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    ASSERT_EQ(basis.size(), k + 1);
    EXPECT_EQ(basis.degree(), k);
    for (int i = 0; i <= k; ++i) EXPECT_EQ(basis.nodes()[i], q.points[i]);
  }
}

TEST(Quadrature, MakeQuadratureSizes) {
  for (int k = 1; k <= 8; ++k) {
    EXPECT_EQ(fe::make_quadrature(fe::QuadratureKind::gauss_k2, k).size(), k + 2);
    EXPECT_EQ(fe::make_quadrature(fe::QuadratureKind::gauss_k1, k).size(), k + 1);
    const auto gll = fe::make_quadrature(fe::QuadratureKind::gll_k1, k);
    EXPECT_EQ(gll.size(), k + 1);
    EXPECT_EQ(gll.points.front(), 0.0);
    EXPECT_EQ(gll.points.back(), 1.0);
  }
}

TEST(Quadrature, RejectsTooFewPoints) {
  EXPECT_THROW(fe::gauss(0), InputError);
  EXPECT_THROW(fe::gauss_lobatto(1), InputError);
}

// ---- Lagrange basis -------------------------------------------------------------------------

TEST(LagrangeBasis, KroneckerPropertyAtNodes) {
  for (int k = 1; k <= 8; ++k) {
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    for (int i = 0; i <= k; ++i)
      for (int j = 0; j <= k; ++j)
        EXPECT_NEAR(basis.value(i, basis.nodes()[j]), i == j ? 1.0 : 0.0, 1e-14) << "k " << k;
  }
}

TEST(LagrangeBasis, PartitionOfUnityAtRandomPoints) {
  std::mt19937_64 rng(101);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int k = 1; k <= 8; ++k) {
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    for (int t = 0; t < 50; ++t) {
      const double x = uniform(rng);
      double sum = 0.0, dsum = 0.0;
      for (int i = 0; i <= k; ++i) {
        sum += basis.value(i, x);
        dsum += basis.derivative(i, x);
      }
      EXPECT_NEAR(sum, 1.0, 1e-13) << "k " << k << " x " << x;
      EXPECT_NEAR(dsum, 0.0, 1e-11) << "k " << k << " x " << x;
    }
  }
}

TEST(LagrangeBasis, InterpolantOfMonomialsAndDerivativesExact) {
  std::mt19937_64 rng(102);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int k = 1; k <= 8; ++k) {
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    for (int p = 0; p <= k; ++p) {
      for (int t = 0; t < 20; ++t) {
        const double x = uniform(rng);
        double v = 0.0, dv = 0.0;
        for (int i = 0; i <= k; ++i) {
          const double coef = std::pow(basis.nodes()[i], p);
          v += coef * basis.value(i, x);
          dv += coef * basis.derivative(i, x);
        }
        EXPECT_NEAR(v, std::pow(x, p), 1e-13) << "k " << k << " p " << p << " x " << x;
        const double exact_dv = p == 0 ? 0.0 : p * std::pow(x, p - 1);
        EXPECT_NEAR(dv, exact_dv, 1e-11 * (1.0 + p)) << "k " << k << " p " << p << " x " << x;
      }
    }
    // degree k+1 is not reproduced (the interpolant differs somewhere between the nodes)
    double max_diff = 0.0;
    for (int t = 0; t <= 100; ++t) {
      const double x = t / 100.0;
      double v = 0.0;
      for (int i = 0; i <= k; ++i) v += std::pow(basis.nodes()[i], k + 1) * basis.value(i, x);
      max_diff = std::max(max_diff, std::abs(v - std::pow(x, k + 1)));
    }
    EXPECT_GT(max_diff, 1e-6) << "k " << k;
  }
}

TEST(LagrangeBasis, TablesMatchPointwiseEvaluation) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(4);
  const auto q = fe::gauss(6);
  const auto B = fe::basis_values(basis, q.points);
  const auto D = fe::basis_derivatives(basis, q.points);
  ASSERT_EQ(B.n_rows, 6);
  ASSERT_EQ(B.n_cols, 5);
  for (int p = 0; p < 6; ++p)
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(B(p, i), basis.value(i, q.points[p]));
      EXPECT_EQ(D(p, i), basis.derivative(i, q.points[p]));
    }
}

TEST(LagrangeBasis, RejectsInvalidInput) {
  EXPECT_THROW(fe::LagrangeBasis1D(std::vector<double>{}), InputError);
  EXPECT_THROW(fe::LagrangeBasis1D(std::vector<double>{0.0, 0.5, 0.5}), InputError);
  EXPECT_THROW(fe::LagrangeBasis1D::gauss_lobatto(0), InputError);
}

// ---- 1D matrices ----------------------------------------------------------------------------

TEST(Matrices1D, MassMatrixSumsToOneAndIsSymmetric) {
  for (int k = 1; k <= 8; ++k) {
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    for (int variant = 0; variant < 3; ++variant) {
      const auto M = variant == 0   ? fe::exact_mass_matrix(basis)
                     : variant == 1 ? fe::mass_matrix(basis, fe::gauss(k + 2))
                                    : fe::mass_matrix(basis, fe::gauss_lobatto(k + 1));
      ASSERT_EQ(M.n_rows, k + 1);
      ASSERT_EQ(M.n_cols, k + 1);
      double sum = 0.0;
      for (int i = 0; i <= k; ++i)
        for (int j = 0; j <= k; ++j) {
          sum += M(i, j);
          EXPECT_NEAR(M(i, j), M(j, i), 1e-16);
        }
      EXPECT_NEAR(sum, 1.0, 1e-14) << "k " << k << " variant " << variant;
    }
    // Gauss-Lobatto collocation lumps the mass matrix: diagonal, equal to the weights
    const auto gll = fe::gauss_lobatto(k + 1);
    const auto Ml = fe::mass_matrix(basis, gll);
    for (int i = 0; i <= k; ++i)
      for (int j = 0; j <= k; ++j) EXPECT_NEAR(Ml(i, j), i == j ? gll.weights[i] : 0.0, 1e-15);
    // exact mass matrix equals Gauss k+2 (both exact for degree 2k)
    const auto Me = fe::exact_mass_matrix(basis), Mg = fe::mass_matrix(basis, fe::gauss(k + 2));
    for (int i = 0; i < (k + 1) * (k + 1); ++i) EXPECT_NEAR(Me.data[i], Mg.data[i], 1e-15);
  }
}

TEST(Matrices1D, MassMatrixIntegratesProductsOfInterpolants) {
  // u = x^a, v = x^b interpolated (exact for a, b <= k): v^T M u = 1 / (a + b + 1)
  for (int k = 1; k <= 8; ++k) {
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    const auto M = fe::exact_mass_matrix(basis);
    for (int a = 0; a <= k; ++a)
      for (int b = 0; b <= k; ++b) {
        double s = 0.0;
        for (int i = 0; i <= k; ++i)
          for (int j = 0; j <= k; ++j) s += std::pow(basis.nodes()[i], b) * M(i, j) * std::pow(basis.nodes()[j], a);
        EXPECT_NEAR(s, 1.0 / (a + b + 1), 1e-13) << "k " << k;
      }
  }
}

TEST(Matrices1D, StiffnessMatrixAnnihilatesConstantsAndIntegratesDerivatives) {
  for (int k = 1; k <= 8; ++k) {
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    const auto K = fe::exact_stiffness_matrix(basis);
    double scale = 0.0;
    for (double v : K.data) scale = std::max(scale, std::abs(v));
    for (int i = 0; i <= k; ++i) {
      double row = 0.0;
      for (int j = 0; j <= k; ++j) {
        row += K(i, j);
        EXPECT_NEAR(K(i, j), K(j, i), 1e-14 * scale);
      }
      EXPECT_NEAR(row, 0.0, 1e-13 * scale) << "k " << k << " row " << i;
      EXPECT_GT(K(i, i), 0.0);
    }
    // x^a, x^b: int a b x^{a+b-2} = a b / (a + b - 1)
    for (int a = 1; a <= k; ++a)
      for (int b = 1; b <= k; ++b) {
        double s = 0.0;
        for (int i = 0; i <= k; ++i)
          for (int j = 0; j <= k; ++j) s += std::pow(basis.nodes()[i], b) * K(i, j) * std::pow(basis.nodes()[j], a);
        EXPECT_NEAR(s, double(a * b) / (a + b - 1), 1e-11 * scale) << "k " << k;
      }
    // Gauss-Lobatto with k+1 points integrates the stiffness integrand (degree 2k-2) exactly
    const auto Kl = fe::stiffness_matrix(basis, fe::gauss_lobatto(k + 1));
    for (int i = 0; i < (k + 1) * (k + 1); ++i) EXPECT_NEAR(Kl.data[i], K.data[i], 1e-13 * scale);
  }
}

}  // namespace
