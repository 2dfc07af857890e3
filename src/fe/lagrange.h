#pragma once
// Lagrange interpolation bases in 1D and the small dense matrices built from them.
#include <vector>

#include "fe/quadrature.h"

namespace tcfem::fe {

/// Lagrange polynomials on given distinct nodes in [0,1]; basis i is 1 at node i, 0 at the others.
class LagrangeBasis1D {
 public:
  explicit LagrangeBasis1D(std::vector<double> nodes);
  /// Gauss-Lobatto nodes of degree k (k+1 nodes, both end points included), 1 <= k <= 8 in tcfem.
  static LagrangeBasis1D gauss_lobatto(int degree);

  int size() const { return static_cast<int>(nodes_.size()); }
  int degree() const { return size() - 1; }
  const std::vector<double>& nodes() const { return nodes_; }
  double value(int i, double x) const;
  double derivative(int i, double x) const;

 private:
  std::vector<double> nodes_;
};

/// Row-major dense matrix with n_rows x n_cols entries, small and 1D.
struct Matrix1D {
  int n_rows = 0, n_cols = 0;
  std::vector<double> data;
  double operator()(int i, int j) const { return data[i * n_cols + j]; }
  double& operator()(int i, int j) { return data[i * n_cols + j]; }
};

/// values(q, i) = phi_i(x_q)
Matrix1D basis_values(const LagrangeBasis1D& basis, const std::vector<double>& points);
/// derivatives(q, i) = phi_i'(x_q)
Matrix1D basis_derivatives(const LagrangeBasis1D& basis, const std::vector<double>& points);
/// M(i,j) = int_0^1 phi_i phi_j, integrated with the given rule.
Matrix1D mass_matrix(const LagrangeBasis1D& basis, const Quadrature1D& quad);
/// K(i,j) = int_0^1 phi_i' phi_j', integrated with the given rule.
Matrix1D stiffness_matrix(const LagrangeBasis1D& basis, const Quadrature1D& quad);
/// Exactly integrated 1D mass and stiffness on [0,1] (Gauss with degree+1 points).
Matrix1D exact_mass_matrix(const LagrangeBasis1D& basis);
Matrix1D exact_stiffness_matrix(const LagrangeBasis1D& basis);

}  // namespace tcfem::fe
