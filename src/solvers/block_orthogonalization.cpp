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
  block_dot(v, w, h);
  comm.sum(h, std::size_t(v.k));
  block_subtract(v, h, w);
  block_dot(v, w, c2);
  comm.sum(c2, std::size_t(v.k));
  block_subtract(v, c2, w);
  for (std::int64_t i = 0; i < v.k; ++i) h[i] += c2[i];
  double s = 0.0;
  for (std::int64_t i = 0; i < v.n; ++i) s += w[i] * w[i];
  return std::sqrt(comm.sum(s));
}

}  // namespace tcfem::solvers
