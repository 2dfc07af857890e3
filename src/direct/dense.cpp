// BLAS and LAPACK through their Fortran interface (every implementation exports it). Character
// arguments carry the hidden length arguments of the gfortran calling convention.
#include "direct/dense.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>

#include "core/error.h"

#ifndef TCFEM_BLAS_NAME
#define TCFEM_BLAS_NAME "unknown BLAS"
#endif

using blas_int = int;
using fortran_length = std::size_t;

extern "C" {
void dgemm_(const char* ta, const char* tb, const blas_int* m, const blas_int* n, const blas_int* k,
            const double* alpha, const double* a, const blas_int* lda, const double* b, const blas_int* ldb,
            const double* beta, double* c, const blas_int* ldc, fortran_length, fortran_length);
void sgemm_(const char* ta, const char* tb, const blas_int* m, const blas_int* n, const blas_int* k, const float* alpha,
            const float* a, const blas_int* lda, const float* b, const blas_int* ldb, const float* beta, float* c,
            const blas_int* ldc, fortran_length, fortran_length);
void dsyrk_(const char* uplo, const char* trans, const blas_int* n, const blas_int* k, const double* alpha,
            const double* a, const blas_int* lda, const double* beta, double* c, const blas_int* ldc, fortran_length,
            fortran_length);
void dtrsm_(const char* side, const char* uplo, const char* trans, const char* diag, const blas_int* m,
            const blas_int* n, const double* alpha, const double* a, const blas_int* lda, double* b,
            const blas_int* ldb, fortran_length, fortran_length, fortran_length, fortran_length);
void dsymv_(const char* uplo, const blas_int* n, const double* alpha, const double* a, const blas_int* lda,
            const double* x, const blas_int* incx, const double* beta, double* y, const blas_int* incy, fortran_length);
void dpotrf_(const char* uplo, const blas_int* n, double* a, const blas_int* lda, blas_int* info, fortran_length);
void dpotri_(const char* uplo, const blas_int* n, double* a, const blas_int* lda, blas_int* info, fortran_length);
void dsyevd_(const char* jobz, const char* uplo, const blas_int* n, double* a, const blas_int* lda, double* w,
             double* work, const blas_int* lwork, blas_int* iwork, const blas_int* liwork, blas_int* info,
             fortran_length, fortran_length);
void dstev_(const char* jobz, const blas_int* n, double* d, double* e, double* z, const blas_int* ldz, double* work,
            blas_int* info, fortran_length);
}

namespace tcfem::direct {
namespace {

blas_int to_blas(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<blas_int>::max())
    throw Error(std::string("dense: ") + what + " = " + std::to_string(v) + " exceeds the 32-bit BLAS integer range");
  return static_cast<blas_int>(v);
}
blas_int ld(std::int64_t v) { return to_blas(std::max<std::int64_t>(v, 1), "leading dimension"); }
const char* trans_char(Transpose t) { return t == Transpose::no ? "N" : "T"; }

}  // namespace

void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const blas_int bm = to_blas(m, "m"), bn = to_blas(n, "n"), bk = to_blas(k, "k");
  const blas_int la = ld(lda), lb = ld(ldb), lc = ld(ldc);
  dgemm_(trans_char(ta), trans_char(tb), &bm, &bn, &bk, &alpha, a, &la, b, &lb, &beta, c, &lc, 1, 1);
}

void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const blas_int bm = to_blas(m, "m"), bn = to_blas(n, "n"), bk = to_blas(k, "k");
  const blas_int la = ld(lda), lb = ld(ldb), lc = ld(ldc);
  sgemm_(trans_char(ta), trans_char(tb), &bm, &bn, &bk, &alpha, a, &la, b, &lb, &beta, c, &lc, 1, 1);
}

void syrk_lower(Transpose t, std::int64_t n, std::int64_t k, double alpha, const double* a, std::int64_t lda,
                double beta, double* c, std::int64_t ldc) {
  if (n == 0) return;
  const blas_int bn = to_blas(n, "n"), bk = to_blas(k, "k"), la = ld(lda), lc = ld(ldc);
  dsyrk_("L", trans_char(t), &bn, &bk, &alpha, a, &la, &beta, c, &lc, 1, 1);
}

void solve_lower(std::int64_t n, std::int64_t m, const double* l, std::int64_t ldl, double* b, std::int64_t ldb) {
  if (n == 0 || m == 0) return;
  const blas_int bn = to_blas(n, "n"), bm = to_blas(m, "m"), la = ld(ldl), lb = ld(ldb);
  const double one = 1.0;
  dtrsm_("L", "L", "N", "N", &bn, &bm, &one, l, &la, b, &lb, 1, 1, 1, 1);
}

void solve_lower_transposed(std::int64_t n, std::int64_t m, const double* l, std::int64_t ldl, double* b,
                            std::int64_t ldb) {
  if (n == 0 || m == 0) return;
  const blas_int bn = to_blas(n, "n"), bm = to_blas(m, "m"), la = ld(ldl), lb = ld(ldb);
  const double one = 1.0;
  dtrsm_("L", "L", "T", "N", &bn, &bm, &one, l, &la, b, &lb, 1, 1, 1, 1);
}

void cholesky_factor(std::int64_t n, double* a, std::int64_t lda, const char* what) {
  if (n == 0) return;
  const blas_int bn = to_blas(n, "n"), la = ld(lda);
  blas_int info = 0;
  dpotrf_("L", &bn, a, &la, &info, 1);
  if (info != 0)
    throw Error(std::string("Cholesky factorization of ") + what + " failed (LAPACK info " + std::to_string(info) +
                "): the matrix is not positive definite");
  for (std::int64_t j = 1; j < n; ++j)
    for (std::int64_t i = 0; i < j; ++i) a[i + j * lda] = 0.0;
}

void cholesky_inverse(std::int64_t n, double* l, std::int64_t lda, const char* what) {
  if (n == 0) return;
  const blas_int bn = to_blas(n, "n"), la = ld(lda);
  blas_int info = 0;
  dpotri_("L", &bn, l, &la, &info, 1);
  if (info != 0)
    throw Error(std::string("inversion of ") + what + " failed (LAPACK info " + std::to_string(info) + ")");
  for (std::int64_t j = 1; j < n; ++j)
    for (std::int64_t i = 0; i < j; ++i) l[i + j * lda] = l[j + i * lda];
}

std::vector<double> symmetric_eigenvalues(std::int64_t n, double* a, std::int64_t lda) {
  std::vector<double> w(static_cast<std::size_t>(n));
  if (n == 0) return w;
  const blas_int bn = to_blas(n, "n"), la = ld(lda);
  blas_int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double work_query = 0.0;
  dsyevd_("N", "L", &bn, a, &la, w.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1, 1);
  lwork = static_cast<blas_int>(work_query) + 1;
  liwork = std::max<blas_int>(iwork_query, 1);
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<blas_int> iwork(static_cast<std::size_t>(liwork));
  dsyevd_("N", "L", &bn, a, &la, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  if (info != 0) throw Error("symmetric eigenvalue solver (dsyevd) failed, LAPACK info " + std::to_string(info));
  return w;
}

std::vector<double> tridiagonal_eigenvalues(std::vector<double> alpha, std::vector<double> beta) {
  const std::int64_t n = static_cast<std::int64_t>(alpha.size());
  if (n == 0) return {};
  TCFEM_ASSERT(beta.size() + 1 == alpha.size(), "tridiagonal_eigenvalues: beta must have n - 1 entries");
  const blas_int bn = to_blas(n, "n"), one = 1;
  blas_int info = 0;
  double z = 0.0, work = 0.0;
  beta.push_back(0.0);  // dstev reads n - 1 entries; keep the pointer valid for n == 1
  dstev_("N", &bn, alpha.data(), beta.data(), &z, &one, &work, &info, 1);
  if (info != 0) throw Error("tridiagonal eigenvalue solver (dstev) failed, LAPACK info " + std::to_string(info));
  return alpha;
}

void symmetric_multiply(std::int64_t n, const double* a, std::int64_t lda, const double* x, double* y) {
  if (n == 0) return;
  const blas_int bn = to_blas(n, "n"), la = ld(lda), inc = 1;
  const double one = 1.0, zero = 0.0;
  dsymv_("L", &bn, &one, a, &la, x, &inc, &zero, y, &inc, 1);
}

const char* blas_library_name() { return TCFEM_BLAS_NAME; }

}  // namespace tcfem::direct
