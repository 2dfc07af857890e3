#pragma once
// cuBLAS for the device solvers: one handle on the default stream (pointer mode host), created on
// first use, and the checked call. Includes CUDA headers: for .cu files only.
#include <cublas_v2.h>

#include <string>

#include "core/cuda_check.h"

namespace tcfem::solvers {

inline void device_blas_check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("cuBLAS error ") + cublasGetStatusName(s) + " in " + what + " at " + file + ":" +
                      std::to_string(line));
}

/// The handle of this process (default stream, host pointer mode), created on first use and never destroyed.
cublasHandle_t device_blas_handle();

}  // namespace tcfem::solvers

#define TCFEM_DEVICE_BLAS_CHECK(call) ::tcfem::solvers::device_blas_check((call), #call, __FILE__, __LINE__)
