#pragma once
// One-dimensional quadrature rules on the reference interval [0,1].
#include <vector>

namespace tcfem::fe {

/// Points (increasing) and weights of a 1D rule on [0,1]; the weights sum to 1.
struct Quadrature1D {
  std::vector<double> points;
  std::vector<double> weights;
  int size() const { return static_cast<int>(points.size()); }
};

/// n-point Gauss-Legendre rule (exact for polynomials of degree 2n-1), n >= 1.
Quadrature1D gauss(int n);

/// n-point Gauss-Lobatto rule including both end points (exact for degree 2n-3), n >= 2.
Quadrature1D gauss_lobatto(int n);

/// Kinds of quadrature used by operators on general geometry (CEED bake-off naming).
enum class QuadratureKind {
  gauss_k2,  ///< BP3: q = k+2 Gauss points per direction
  gll_k1,    ///< BP5: q = k+1 Gauss-Lobatto points per direction (collocated with the nodes)
  gauss_k1,  ///< q = k+1 Gauss points per direction
};

/// The rule of `kind` for polynomial degree k.
Quadrature1D make_quadrature(QuadratureKind kind, int degree);
const char* to_string(QuadratureKind kind);

}  // namespace tcfem::fe
