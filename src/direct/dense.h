#pragma once
// Dense linear algebra of the direct solver: thin wrappers over BLAS and LAPACK (Fortran interface,
// column-major storage, 64-bit sizes checked against the 32-bit BLAS integers). Every matrix is a
// pointer to column-major storage with a leading dimension.
#include <cstdint>
#include <vector>

namespace tcfem::direct {

enum class Transpose { no, yes };

/// C = alpha op(A) op(B) + beta C with op(A) m x k, op(B) k x n (dgemm).
void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc);
/// The same in FP32 (sgemm).
void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

/// Lower triangle of C = alpha op(A) op(A)^T + beta C (dsyrk 'L'): Transpose::no: A is n x k and
/// op(A) = A; Transpose::yes: A is k x n and op(A) = A^T.
void syrk_lower(Transpose t, std::int64_t n, std::int64_t k, double alpha, const double* a, std::int64_t lda,
                double beta, double* c, std::int64_t ldc);

/// B = L^{-1} B for the lower triangular n x n matrix L and n x m B (dtrsm 'L','L','N','N').
void solve_lower(std::int64_t n, std::int64_t m, const double* l, std::int64_t ldl, double* b, std::int64_t ldb);
/// B = L^{-T} B (dtrsm 'L','L','T','N').
void solve_lower_transposed(std::int64_t n, std::int64_t m, const double* l, std::int64_t ldl, double* b,
                            std::int64_t ldb);

/// Cholesky factorization A = L L^T in place (lower triangle; the strict upper triangle is zeroed).
/// Throws tcfem::Error naming `what` if A is not positive definite.
void cholesky_factor(std::int64_t n, double* a, std::int64_t lda, const char* what);
/// The inverse of the SPD matrix A from its Cholesky factor (in place, dpotri), returned full
/// (both triangles filled).
void cholesky_inverse(std::int64_t n, double* l, std::int64_t lda, const char* what);

/// Eigenvalues of the symmetric n x n matrix A (lower triangle referenced; A is destroyed), ascending.
std::vector<double> symmetric_eigenvalues(std::int64_t n, double* a, std::int64_t lda);
/// Eigenvalues of the symmetric tridiagonal matrix with diagonal `alpha` and off-diagonal `beta`
/// (beta.size() == alpha.size() - 1), ascending.
std::vector<double> tridiagonal_eigenvalues(std::vector<double> alpha, std::vector<double> beta);

/// y = A x for a symmetric n x n matrix (lower triangle referenced; dsymv).
void symmetric_multiply(std::int64_t n, const double* a, std::int64_t lda, const double* x, double* y);

/// Name of the BLAS library this build links (for reports).
const char* blas_library_name();

}  // namespace tcfem::direct
