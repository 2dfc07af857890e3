#include "fe/quadrature.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tcfem::fe {
namespace {

// Legendre polynomial P_n and its derivative at x in [-1,1], by the three-term recurrence.
void legendre(int n, long double x, long double& p, long double& dp) {
  long double p0 = 1.0L, p1 = x;
  if (n == 0) {
    p = 1.0L;
    dp = 0.0L;
    return;
  }
  for (int j = 2; j <= n; ++j) {
    const long double p2 = ((2 * j - 1) * x * p1 - (j - 1) * p0) / j;
    p0 = p1;
    p1 = p2;
  }
  p = p1;
  // derivative from P_n and P_{n-1}; at the end points use the closed form
  if (std::fabs(1.0L - x * x) < 1e-30L)
    dp = (x > 0 ? 1.0L : (n % 2 ? 1.0L : -1.0L)) * n * (n + 1) / 2.0L;
  else
    dp = n * (x * p1 - p0) / (x * x - 1.0L);
}

}  // namespace

Quadrature1D gauss(int n) {
  if (n < 1) throw InputError("gauss quadrature needs at least 1 point");
  Quadrature1D q;
  q.points.resize(n);
  q.weights.resize(n);
  const long double pi = std::numbers::pi_v<long double>;
  for (int i = 0; i < n; ++i) {
    long double x = std::cos(pi * (i + 0.75L) / (n + 0.5L));  // descending initial guesses
    long double p = 0, dp = 0;
    for (int it = 0; it < 100; ++it) {
      legendre(n, x, p, dp);
      const long double dx = p / dp;
      x -= dx;
      if (std::fabs(dx) < 1e-19L) break;
    }
    legendre(n, x, p, dp);
    const long double w = 2.0L / ((1.0L - x * x) * dp * dp);
    // map [-1,1] -> [0,1], ascending order
    q.points[n - 1 - i] = static_cast<double>((1.0L + x) / 2.0L);
    q.weights[n - 1 - i] = static_cast<double>(w / 2.0L);
  }
  return q;
}

Quadrature1D gauss_lobatto(int n) {
  if (n < 2) throw InputError("Gauss-Lobatto quadrature needs at least 2 points");
  Quadrature1D q;
  q.points.resize(n);
  q.weights.resize(n);
  const int m = n - 1;  // interior points are the roots of P'_m
  const long double pi = std::numbers::pi_v<long double>;
  for (int i = 0; i < n; ++i) {
    long double x;
    if (i == 0)
      x = -1.0L;
    else if (i == m)
      x = 1.0L;
    else {
      x = -std::cos(pi * i / m);  // Chebyshev-Gauss-Lobatto guess
      // Newton on P'_m: P''_m = (2x P'_m - m(m+1) P_m) / (1 - x^2)
      for (int it = 0; it < 100; ++it) {
        long double p = 0, dp = 0;
        legendre(m, x, p, dp);
        const long double d2p = (2.0L * x * dp - m * (m + 1) * p) / (1.0L - x * x);
        const long double dx = dp / d2p;
        x -= dx;
        if (std::fabs(dx) < 1e-19L) break;
      }
    }
    long double p = 0, dp = 0;
    legendre(m, x, p, dp);
    const long double w = 2.0L / (m * (m + 1) * p * p);
    q.points[i] = static_cast<double>((1.0L + x) / 2.0L);
    q.weights[i] = static_cast<double>(w / 2.0L);
  }
  return q;
}

Quadrature1D make_quadrature(QuadratureKind kind, int degree) {
  switch (kind) {
    case QuadratureKind::gauss_k2: return gauss(degree + 2);
    case QuadratureKind::gll_k1: return gauss_lobatto(degree + 1);
    case QuadratureKind::gauss_k1: return gauss(degree + 1);
  }
  throw Error("unknown quadrature kind");
}

const char* to_string(QuadratureKind kind) {
  switch (kind) {
    case QuadratureKind::gauss_k2: return "bp3";
    case QuadratureKind::gll_k1: return "bp5";
    case QuadratureKind::gauss_k1: return "gauss-k1";
  }
  return "?";
}

}  // namespace tcfem::fe
