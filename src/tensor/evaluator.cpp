#include "tensor/evaluator.h"

#include <algorithm>

namespace tcfem::tensor {

template <int dim, typename Number>
Evaluator<dim, Number>::Evaluator(const fe::LagrangeBasis1D& basis, const fe::Quadrature1D& quad)
    : n_b_(basis.size()), n_q_(quad.size()), quad_(quad) {
  const auto b = fe::basis_values(basis, quad.points);
  const auto db = fe::basis_derivatives(basis, quad.points);
  const auto dq = fe::basis_derivatives(fe::LagrangeBasis1D(quad.points), quad.points);
  B_.assign(b.data.begin(), b.data.end());
  Db_.assign(db.data.begin(), db.data.end());
  Dq_.assign(dq.data.begin(), dq.data.end());
  for (int s = 0; s < 2; ++s) {
    end_val_[s].resize(n_b_);
    end_der_[s].resize(n_b_);
    for (int i = 0; i < n_b_; ++i) {
      end_val_[s][i] = static_cast<Number>(basis.value(i, s));
      end_der_[s][i] = static_cast<Number>(basis.derivative(i, s));
    }
  }
  const int n = std::max(n_b_, n_q_);
  t0_.resize(cube(n, dim));
  t1_.resize(cube(n, dim));
  t2_.resize(cube(n, dim));
}

template <int dim, typename Number>
void Evaluator<dim, Number>::values(const Number* u, Number* uq) const {
  std::array<int, 3> s = cube_sizes<dim>(n_b_);
  const Number* in = u;
  for (int d = 0; d < dim; ++d) {
    Number* out = (d == dim - 1) ? uq : (d % 2 ? t1_.data() : t0_.data());
    apply_1d<false, false>(B_.data(), n_q_, n_b_, d, s, in, out);
    s[d] = n_q_;
    in = out;
  }
}

template <int dim, typename Number>
void Evaluator<dim, Number>::gradients_from_values(const Number* uq, Number* grad) const {
  const auto s = cube_sizes<dim>(n_q_);
  const int nq = cube(n_q_, dim);
  for (int d = 0; d < dim; ++d) apply_1d<false, false>(Dq_.data(), n_q_, n_q_, d, s, uq, grad + d * nq);
}

template <int dim, typename Number>
void Evaluator<dim, Number>::integrate_gradients(const Number* grad, Number* uq) const {
  const auto s = cube_sizes<dim>(n_q_);
  const int nq = cube(n_q_, dim);
  for (int d = 0; d < dim; ++d) apply_1d<true, true>(Dq_.data(), n_q_, n_q_, d, s, grad + d * nq, uq);
}

template <int dim, typename Number>
void Evaluator<dim, Number>::integrate_values(const Number* uq, Number* u, bool add) const {
  std::array<int, 3> s = cube_sizes<dim>(n_q_);
  const Number* in = uq;
  for (int d = dim - 1; d >= 0; --d) {
    if (d == 0) {
      if (add)
        apply_1d<true, true>(B_.data(), n_q_, n_b_, d, s, in, u);
      else
        apply_1d<true, false>(B_.data(), n_q_, n_b_, d, s, in, u);
      break;
    }
    Number* out = (d % 2) ? t0_.data() : t1_.data();
    apply_1d<true, false>(B_.data(), n_q_, n_b_, d, s, in, out);
    s[d] = n_b_;
    in = out;
  }
}

template <int dim, typename Number>
void Evaluator<dim, Number>::face_evaluate(const Number* u, int d, int side, Number* val, Number* grad) const {
  const int nf = cube(n_q_, dim - 1);
  std::array<int, 3> s = cube_sizes<dim>(n_b_);
  // restrict to the face: value and normal derivative (sizes[d] becomes 1)
  apply_1d<false, false>(end_val_[side].data(), 1, n_b_, d, s, u, t0_.data());
  apply_1d<false, false>(end_der_[side].data(), 1, n_b_, d, s, u, t1_.data());
  s[d] = 1;
  // interpolate tangentially to the face quadrature points
  Number* v = t0_.data();
  Number* nd = t1_.data();
  Number* tmp = t2_.data();
  for (int e = 0; e < dim; ++e) {
    if (e == d) continue;
    apply_1d<false, false>(B_.data(), n_q_, n_b_, e, s, v, tmp);
    std::swap(v, tmp);
    apply_1d<false, false>(B_.data(), n_q_, n_b_, e, s, nd, tmp);
    std::swap(nd, tmp);
    s[e] = n_q_;
  }
  std::copy(v, v + nf, val);
  std::copy(nd, nd + nf, grad + d * nf);
  for (int e = 0; e < dim; ++e)
    if (e != d) apply_1d<false, false>(Dq_.data(), n_q_, n_q_, e, s, v, grad + e * nf);
}

template <int dim, typename Number>
void Evaluator<dim, Number>::face_integrate(const Number* val, const Number* grad, int d, int side,
                                            Number* u) const {
  const int nf = cube(n_q_, dim - 1);
  std::array<int, 3> s = cube_sizes<dim>(n_q_);
  s[d] = 1;
  Number* v = t0_.data();
  Number* nd = t1_.data();
  Number* tmp = t2_.data();
  std::copy(val, val + nf, v);
  std::copy(grad + d * nf, grad + (d + 1) * nf, nd);
  for (int e = 0; e < dim; ++e)
    if (e != d) apply_1d<true, true>(Dq_.data(), n_q_, n_q_, e, s, grad + e * nf, v);
  for (int e = dim - 1; e >= 0; --e) {
    if (e == d) continue;
    apply_1d<true, false>(B_.data(), n_q_, n_b_, e, s, v, tmp);
    std::swap(v, tmp);
    apply_1d<true, false>(B_.data(), n_q_, n_b_, e, s, nd, tmp);
    std::swap(nd, tmp);
    s[e] = n_b_;
  }
  // extend along d: u += end_val (x) v + end_der (x) nd
  apply_1d<true, true>(end_val_[side].data(), 1, n_b_, d, s, v, u);
  apply_1d<true, true>(end_der_[side].data(), 1, n_b_, d, s, nd, u);
}

template class Evaluator<2, double>;
template class Evaluator<3, double>;
template class Evaluator<2, float>;
template class Evaluator<3, float>;

}  // namespace tcfem::tensor
