#pragma once
// The BLAS and LAPACK routines of the multigrid solver and FGMRES, as thin wrappers over the
// Fortran interface (column-major, checked 32-bit sizes). Linked through the target
// tcfem_blas_lapack (src/direct/blas_lapack.cmake), shared with the direct solver.
#include <cstdint>
#include <vector>

namespace tcfem::solvers::blas {

/// y = alpha A x + beta y (trans = false) or y = alpha A^T x + beta y (trans = true); A is m x n
/// column-major with leading dimension lda (dgemv).
void gemv(bool trans, std::int64_t m, std::int64_t n, double alpha, const double* a, std::int64_t lda,
          const double* x, double beta, double* y);

/// Generalized symmetric-definite eigenproblem A v = lambda B v (dsygv, itype 1): A and B are
/// n x n row- or column-major (symmetric), eigenvalues ascending, eigenvectors as columns of
/// `vectors` (column-major n x n) normalized to V^T B V = I.
void generalized_eigenproblem(int n, const std::vector<double>& a, const std::vector<double>& b,
                              std::vector<double>& eigenvalues, std::vector<double>& vectors);

/// Eigenvalues (ascending) of the symmetric tridiagonal matrix with diagonal d and off-diagonal e
/// (e.size() == d.size() - 1) (dstev).
std::vector<double> tridiagonal_eigenvalues(std::vector<double> d, std::vector<double> e);

/// Cholesky factorization of the SPD n x n matrix (column-major, in place, lower triangle; dpotrf).
/// Throws tcfem::Error if the matrix is not positive definite.
void cholesky_factor(std::int64_t n, std::vector<double>& a);
/// Replaces the factor of cholesky_factor by the whole inverse A^{-1}, both triangles (dpotri).
void cholesky_inverse(std::int64_t n, std::vector<double>& a);
/// x = A^{-1} x from the factor of cholesky_factor (dpotrs), for one right-hand side.
void cholesky_solve(std::int64_t n, const std::vector<double>& factor, double* x);

}  // namespace tcfem::solvers::blas
