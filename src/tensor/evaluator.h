#pragma once
// CPU sum-factorization evaluator for tensor-product Lagrange elements on [0,1]^dim: values and
// reference gradients at the points of a tensor-product quadrature rule, on cells and on faces,
// and the transposed (integration) operations. Gradients at quadrature points use the collocation
// derivative on the quadrature points (exact, since n_q >= n_b).
#include <array>
#include <vector>

#include "fe/lagrange.h"
#include "fe/quadrature.h"
#include "tensor/contract.h"

namespace tcfem::tensor {

template <int dim, typename Number>
class Evaluator {
 public:
  Evaluator(const fe::LagrangeBasis1D& basis, const fe::Quadrature1D& quad);

  int n_b() const { return n_b_; }
  int n_q() const { return n_q_; }
  int dofs_per_cell() const { return cube(n_b_, dim); }
  int points_per_cell() const { return cube(n_q_, dim); }
  int points_per_face() const { return cube(n_q_, dim - 1); }
  const fe::Quadrature1D& quadrature() const { return quad_; }

  /// uq = (B x ... x B) u
  void values(const Number* u, Number* uq) const;
  /// grad[d * n_q^dim + q] = d/dxi_d of the interpolant with values uq at the quadrature points
  void gradients_from_values(const Number* uq, Number* grad) const;
  /// uq += sum_d Dq_d^T grad_d  (transpose of gradients_from_values, accumulating)
  void integrate_gradients(const Number* grad, Number* uq) const;
  /// u = (B^T x ... x B^T) uq  (transpose of values), or u += with `add`
  void integrate_values(const Number* uq, Number* u, bool add = false) const;

  /// Values and reference gradients at the face points of face xi_d = side (side 0 or 1):
  /// val[q], grad[e * n_q^(dim-1) + q]; face points lexicographic over the directions != d.
  void face_evaluate(const Number* u, int d, int side, Number* val, Number* grad) const;
  /// u += transpose of face_evaluate applied to (val, grad) coefficients.
  void face_integrate(const Number* val, const Number* grad, int d, int side, Number* u) const;

  /// 1D tables: B(q,i), Db(q,i) = phi_i'(x_q), Dq(q,p) collocation derivative, end values/derivatives.
  const std::vector<Number>& B() const { return B_; }
  const std::vector<Number>& Db() const { return Db_; }
  const std::vector<Number>& Dq() const { return Dq_; }
  const std::vector<Number>& end_values(int side) const { return end_val_[side]; }
  const std::vector<Number>& end_derivatives(int side) const { return end_der_[side]; }

  static int cube(int n, int p) {
    int r = 1;
    for (int i = 0; i < p; ++i) r *= n;
    return r;
  }

 private:
  int n_b_, n_q_;
  fe::Quadrature1D quad_;
  std::vector<Number> B_, Db_, Dq_;
  std::array<std::vector<Number>, 2> end_val_, end_der_;
  mutable std::vector<Number> t0_, t1_, t2_;
};

}  // namespace tcfem::tensor
