#include "solvers/block_orthogonalization.h"

#include <cmath>

#include "solvers/blas_lapack.h"

namespace tcfem::solvers {

void block_dot(const BlockBasis& v, const double* w, double* c) {
  blas::gemv(true, v.n, v.k, 1.0, v.data, v.ld, w, 0.0, c);
}

void block_subtract(const BlockBasis& v, const double* c, double* w) {
  blas::gemv(false, v.n, v.k, -1.0, v.data, v.ld, c, 1.0, w);
}

double orthogonalize_cgs2(const BlockBasis& v, double* w, double* h, double* c2, const Communicator& comm) {
  const auto k = std::size_t(v.k);
  block_dot(v, w, h);
  comm.sum(h, k);
  block_subtract(v, h, w);
  // the second pass's products and ||w||^2 in one reduction
  block_dot(v, w, c2);
  double s1 = 0.0;
  for (std::int64_t i = 0; i < v.n; ++i) s1 += w[i] * w[i];
  c2[k] = s1;
  comm.sum(c2, k + 1);
  s1 = c2[k];
  block_subtract(v, c2, w);
  double c2_squared = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    h[i] += c2[i];
    c2_squared += c2[i] * c2[i];
  }
  // ||w - V c2||^2 = ||w||^2 - ||c2||^2 for orthonormal V: after the first pass c2 is a rounding-
  // level correction and the difference keeps full accuracy; where w lay (nearly) in the span of V
  // (the difference below a quarter of ||w||^2) the norm is summed again
  const double s2 = s1 - c2_squared;
  if (s2 > 0.25 * s1) return std::sqrt(s2);
  double s = 0.0;
  for (std::int64_t i = 0; i < v.n; ++i) s += w[i] * w[i];
  return std::sqrt(comm.sum(s));
}

}  // namespace tcfem::solvers
