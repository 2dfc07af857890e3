// Fortran BLAS/LAPACK; character arguments carry the hidden length arguments of the gfortran
// calling convention.
#include "solvers/blas_lapack.h"

#include <cstddef>
#include <limits>
#include <string>

#include "core/error.h"

namespace {
using blas_int = int;
using fortran_length = std::size_t;
}  // namespace

extern "C" {
void dgemv_(const char* trans, const blas_int* m, const blas_int* n, const double* alpha, const double* a,
            const blas_int* lda, const double* x, const blas_int* incx, const double* beta, double* y,
            const blas_int* incy, fortran_length);
void dsygv_(const blas_int* itype, const char* jobz, const char* uplo, const blas_int* n, double* a,
            const blas_int* lda, double* b, const blas_int* ldb, double* w, double* work, const blas_int* lwork,
            blas_int* info, fortran_length, fortran_length);
void dstev_(const char* jobz, const blas_int* n, double* d, double* e, double* z, const blas_int* ldz, double* work,
            blas_int* info, fortran_length);
void dpotrf_(const char* uplo, const blas_int* n, double* a, const blas_int* lda, blas_int* info, fortran_length);
void dpotrs_(const char* uplo, const blas_int* n, const blas_int* nrhs, const double* a, const blas_int* lda,
             double* b, const blas_int* ldb, blas_int* info, fortran_length);
void dpotri_(const char* uplo, const blas_int* n, double* a, const blas_int* lda, blas_int* info, fortran_length);
}

namespace tcfem::solvers::blas {

namespace {
blas_int to_blas(std::int64_t v) {
  TCFEM_ASSERT(v >= 0 && v <= std::numeric_limits<blas_int>::max(), "size exceeds the BLAS integer range");
  return static_cast<blas_int>(v);
}
}  // namespace

void gemv(bool trans, std::int64_t m, std::int64_t n, double alpha, const double* a, std::int64_t lda,
          const double* x, double beta, double* y) {
  if (m == 0 || n == 0) {
    const std::int64_t ny = trans ? n : m;
    for (std::int64_t i = 0; i < ny; ++i) y[i] = beta == 0.0 ? 0.0 : beta * y[i];
    return;
  }
  const blas_int bm = to_blas(m), bn = to_blas(n), la = to_blas(lda), one = 1;
  dgemv_(trans ? "T" : "N", &bm, &bn, &alpha, a, &la, x, &one, &beta, y, &one, 1);
}

void generalized_eigenproblem(int n, const std::vector<double>& a, const std::vector<double>& b,
                              std::vector<double>& eigenvalues, std::vector<double>& vectors) {
  TCFEM_ASSERT(a.size() == std::size_t(n) * n && b.size() == std::size_t(n) * n, "eigenproblem sizes");
  vectors = a;
  std::vector<double> bb = b;
  eigenvalues.assign(n, 0.0);
  const blas_int itype = 1, bn = n;
  blas_int info = 0, lwork = -1;
  double query = 0;
  dsygv_(&itype, "V", "L", &bn, vectors.data(), &bn, bb.data(), &bn, eigenvalues.data(), &query, &lwork, &info, 1, 1);
  lwork = std::max<blas_int>(static_cast<blas_int>(query), 3 * n);
  std::vector<double> work(lwork);
  dsygv_(&itype, "V", "L", &bn, vectors.data(), &bn, bb.data(), &bn, eigenvalues.data(), work.data(), &lwork, &info,
         1, 1);
  if (info != 0) throw Error("dsygv failed with info " + std::to_string(info));
}

std::vector<double> tridiagonal_eigenvalues(std::vector<double> d, std::vector<double> e) {
  const blas_int n = to_blas(static_cast<std::int64_t>(d.size()));
  if (n == 0) return d;
  TCFEM_ASSERT(e.size() + 1 == d.size(), "tridiagonal sizes");
  e.push_back(0.0);
  blas_int info = 0, ldz = 1;
  double z = 0, work = 0;
  dstev_("N", &n, d.data(), e.data(), &z, &ldz, &work, &info, 1);
  if (info != 0) throw Error("dstev failed with info " + std::to_string(info));
  return d;
}

namespace {
/// An in-place LAPACK routine on the lower triangle of the n x n matrix a (dpotrf, dpotri);
/// Error "`failed` info N)" when it reports one.
template <class Routine>
void lower_in_place(Routine routine, std::int64_t n, std::vector<double>& a, const char* failed) {
  TCFEM_ASSERT(a.size() == std::size_t(n) * std::size_t(n), "Cholesky matrix size");
  if (n == 0) return;
  const blas_int bn = to_blas(n);
  blas_int info = 0;
  routine("L", &bn, a.data(), &bn, &info, 1);
  if (info != 0) throw Error(std::string(failed) + " info " + std::to_string(info) + ")");
}
}  // namespace

void cholesky_factor(std::int64_t n, std::vector<double>& a) {
  lower_in_place(dpotrf_, n, a, "coarse-grid Cholesky factorization failed (dpotrf");
}

void cholesky_inverse(std::int64_t n, std::vector<double>& a) {
  lower_in_place(dpotri_, n, a, "inversion of the Cholesky factor failed (dpotri");
  const std::size_t m = std::size_t(n);
  for (std::size_t j = 1; j < m; ++j)
    for (std::size_t i = 0; i < j; ++i) a[i + j * m] = a[j + i * m];  // the upper triangle from the lower
}

void cholesky_solve(std::int64_t n, const std::vector<double>& factor, double* x) {
  if (n == 0) return;
  const blas_int bn = to_blas(n), one = 1;
  blas_int info = 0;
  dpotrs_("L", &bn, &one, factor.data(), &bn, x, &bn, &info, 1);
  if (info != 0) throw Error("dpotrs failed with info " + std::to_string(info));
}

}  // namespace tcfem::solvers::blas
