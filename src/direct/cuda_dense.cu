// cuSOLVER Cholesky inversion for the direct solver's setup (Pi^{-1}).
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <climits>
#include <string>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "core/memory.h"
#include "direct/cuda_dense.h"

namespace tcfem::direct {
namespace {

void cusolver_check(cusolverStatus_t s, const char* what, const char* file, int line) {
  if (s != CUSOLVER_STATUS_SUCCESS)
    throw DeviceError(std::string("cuSOLVER error ") + std::to_string(static_cast<int>(s)) + " in " + what + " at " +
                      file + ":" + std::to_string(line));
}
#define TCFEM_CUSOLVER_CHECK(call) cusolver_check((call), #call, __FILE__, __LINE__)


/// a(i, j) = a(j, i) for i < j: the upper triangle from the lower one (n x n, leading dimension n).
__global__ void mirror_lower_kernel(int n, double* __restrict__ a) {
  const std::int64_t j = blockIdx.y * std::int64_t(blockDim.y) + threadIdx.y;
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i < j && j < n) a[i + j * n] = a[j + i * std::int64_t(n)];
}

void cublas_check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("cuBLAS error ") + std::to_string(static_cast<int>(s)) + " in " + what + " at " +
                      file + ":" + std::to_string(line));
}
#define TCFEM_CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)

/// A library handle for a scope: created (checked) on construction, destroyed at its end.
template <typename Handle, typename Status, Status (*create)(Handle*), Status (*destroy)(Handle),
          void (*check)(Status, const char*, const char*, int)>
class LibraryHandle {
 public:
  LibraryHandle() { check(create(&h_), "the handle's creation", __FILE__, __LINE__); }
  ~LibraryHandle() { destroy(h_); }
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
  Handle get() const { return h_; }

 private:
  Handle h_ = nullptr;
};
using CusolverHandle = LibraryHandle<cusolverDnHandle_t, cusolverStatus_t, &cusolverDnCreate, &cusolverDnDestroy,
                                     &cusolver_check>;
using CublasHandle = LibraryHandle<cublasHandle_t, cublasStatus_t, &cublasCreate_v2, &cublasDestroy_v2, &cublas_check>;

/// a = the n x n identity (leading dimension n).
__global__ void identity_kernel(std::int64_t n, double* __restrict__ a) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n * n;
       t += std::int64_t(gridDim.x) * blockDim.x)
    a[t] = t % n == t / n ? 1.0 : 0.0;
}

int device_info(const DeviceBuffer<int>& info) {
  int h = 0;
  info.copy_to_host(&h, 1);
  return h;
}

}  // namespace

void cuda_cholesky_factor_in_place(std::int64_t n, double* d_a, const char* what) {
  if (n == 0) return;
  if (n > INT_MAX / 2)
    throw InputError(std::string("the device factorization of ") + what + " is limited to 32-bit sizes (n = " +
                     std::to_string(n) + ")");
  const int ni = static_cast<int>(n);
  CusolverHandle handle;
  int lwork = 0;
  TCFEM_CUSOLVER_CHECK(cusolverDnDpotrf_bufferSize(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d_a, ni, &lwork));
  DeviceBuffer<double> work(static_cast<std::size_t>(std::max(lwork, 1)));
  DeviceBuffer<int> info(1);
  TCFEM_CUSOLVER_CHECK(cusolverDnDpotrf(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d_a, ni, work.data(),
                                        static_cast<int>(work.size()), info.data()));
  if (const int i = device_info(info); i != 0)
    throw Error(std::string("Cholesky factorization of ") + what + " failed (cuSOLVER info " + std::to_string(i) +
                "): the matrix is not positive definite");
}

void cuda_cholesky_inverse_in_place(std::int64_t n, double* d_l, const char* what) {
  if (n == 0) return;
  const int ni = static_cast<int>(n);
  std::size_t free = 0, total = 0;
  TCFEM_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const double copy_bytes = 8.0 * double(n) * double(n);
  if (n <= 12000 && copy_bytes < 0.25 * double(free)) {
    // W = L^{-1} (a triangular solve on the identity), then (L L^T)^{-1} = W^T W (syrk): two BLAS-3
    // calls, where potri's triangular inverse and product take thousands of small launches
    DeviceBuffer<double> w(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
    identity_kernel<<<static_cast<unsigned>(std::min<std::int64_t>((n * n + 255) / 256, 65535)), 256>>>(n, w.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    const CublasHandle blas;
    const double one = 1.0, zero = 0.0;
    TCFEM_CUBLAS_CHECK(cublasDtrsm(blas.get(), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                   CUBLAS_DIAG_NON_UNIT, ni, ni, &one, d_l, ni, w.data(), ni));
    TCFEM_CUBLAS_CHECK(
        cublasDsyrk(blas.get(), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, ni, ni, &one, w.data(), ni, &zero, d_l, ni));
    const dim3 threads(32, 8);
    const dim3 blocks(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((n + 7) / 8));
    mirror_lower_kernel<<<blocks, threads>>>(ni, d_l);
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // w goes out of scope
    return;
  }
  CusolverHandle handle;
  int lwork = 0;
  TCFEM_CUSOLVER_CHECK(cusolverDnDpotri_bufferSize(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d_l, ni, &lwork));
  DeviceBuffer<double> work(static_cast<std::size_t>(std::max(lwork, 1)));
  DeviceBuffer<int> info(1);
  TCFEM_CUSOLVER_CHECK(cusolverDnDpotri(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d_l, ni, work.data(),
                                        static_cast<int>(work.size()), info.data()));
  if (const int i = device_info(info); i != 0)
    throw Error(std::string("inversion of ") + what + " failed (cuSOLVER info " + std::to_string(i) + ")");
  const dim3 threads(32, 8);
  const dim3 blocks(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((n + 7) / 8));
  mirror_lower_kernel<<<blocks, threads>>>(ni, d_l);
  TCFEM_CUDA_CHECK_LAUNCH();
}

double cuda_spd_inverse_bytes(std::int64_t n) { return 8.0 * double(n) * double(n) * 1.05 + 256e6; }

void cuda_spd_inverse(std::int64_t n, double* a, std::int64_t lda, const char* what) {
  if (n == 0) return;
  const DeviceInfo device = require_device("--backend cuda");
  if (n > INT_MAX / 2)
    throw InputError(std::string("the device inversion of ") + what + " is limited to 32-bit sizes (n = " +
                     std::to_string(n) + ")");
  const double need = cuda_spd_inverse_bytes(n);
  if (need > double(device.free_memory))
    throw InputError(std::string("inverting ") + what + " (n = " + std::to_string(n) + ") on the device needs about " +
                     format_bytes(need) + ", but only " + format_bytes(double(device.free_memory)) + " is free");
  const int ni = static_cast<int>(n);
  DeviceBuffer<double> d(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  TCFEM_CUDA_CHECK(cudaMemcpy2D(d.data(), n * sizeof(double), a, lda * sizeof(double), n * sizeof(double),
                                static_cast<std::size_t>(n), cudaMemcpyHostToDevice));
  CusolverHandle handle;
  int lwork_factor = 0, lwork_inverse = 0;
  TCFEM_CUSOLVER_CHECK(
      cusolverDnDpotrf_bufferSize(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d.data(), ni, &lwork_factor));
  TCFEM_CUSOLVER_CHECK(
      cusolverDnDpotri_bufferSize(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d.data(), ni, &lwork_inverse));
  DeviceBuffer<double> work(static_cast<std::size_t>(std::max(std::max(lwork_factor, lwork_inverse), 1)));
  DeviceBuffer<int> info(1);
  TCFEM_CUSOLVER_CHECK(cusolverDnDpotrf(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d.data(), ni, work.data(),
                                        static_cast<int>(work.size()), info.data()));
  if (const int i = device_info(info); i != 0)
    throw Error(std::string("Cholesky factorization of ") + what + " failed (cuSOLVER info " + std::to_string(i) +
                "): the matrix is not positive definite");
  TCFEM_CUSOLVER_CHECK(cusolverDnDpotri(handle.get(), CUBLAS_FILL_MODE_LOWER, ni, d.data(), ni, work.data(),
                                        static_cast<int>(work.size()), info.data()));
  if (const int i = device_info(info); i != 0)
    throw Error(std::string("inversion of ") + what + " failed (cuSOLVER info " + std::to_string(i) + ")");
  const dim3 threads(32, 8);
  const dim3 blocks(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((n + 7) / 8));
  mirror_lower_kernel<<<blocks, threads>>>(ni, d.data());
  TCFEM_CUDA_CHECK_LAUNCH();
  TCFEM_CUDA_CHECK(cudaMemcpy2D(a, lda * sizeof(double), d.data(), n * sizeof(double), n * sizeof(double),
                                static_cast<std::size_t>(n), cudaMemcpyDeviceToHost));
}

}  // namespace tcfem::direct
