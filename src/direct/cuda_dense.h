#pragma once
// Dense FP64 factorizations of the direct solver's setup on a CUDA device (cuSOLVER). Declared
// without CUDA headers; builds without the CUDA backend throw InputError.
#include <cstdint>

namespace tcfem::direct {

/// Replaces the SPD n x n matrix `a` (column-major, leading dimension lda; its lower triangle is
/// read) by its full inverse, computed on the device by Cholesky factorization and inversion from
/// the factor (cuSOLVER potrf + potri, FP64). Throws InputError without a device or when its free
/// memory does not hold the matrix, Error when the matrix is not positive definite (`what` names it).
void cuda_spd_inverse(std::int64_t n, double* a, std::int64_t lda, const char* what);

/// Replaces the SPD n x n matrix `d_a` in device memory (column-major, leading dimension n; its lower
/// triangle is read) by its Cholesky factor L in the lower triangle (cuSOLVER potrf, FP64). Error
/// when the matrix is not positive definite (`what` names it).
void cuda_cholesky_factor_in_place(std::int64_t n, double* d_a, const char* what);

/// Replaces the Cholesky factor L (lower triangle of `d_l`, as cuda_cholesky_factor_in_place leaves
/// it) by the whole inverse (L L^T)^{-1}, both triangles, in FP64: W = L^{-1} by cuBLAS trsm on the
/// identity and W^T W by syrk where n <= 12000 and the copy takes under a quarter of the free device
/// memory, else cuSOLVER potri (in place).
void cuda_cholesky_inverse_in_place(std::int64_t n, double* d_l, const char* what);

/// Device memory cuda_spd_inverse needs for an n x n matrix (matrix and workspace estimate).
double cuda_spd_inverse_bytes(std::int64_t n);

}  // namespace tcfem::direct
