#pragma once
// Checking every CUDA runtime call and kernel launch.
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace tcfem {

/// A failed CUDA call (exit code 1 in the tool).
class DeviceError : public Error {
 public:
  using Error::Error;
};

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw DeviceError(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") in " +
                      what + " at " + file + ":" + std::to_string(line));
}

}  // namespace tcfem

#define TCFEM_CUDA_CHECK(call) ::tcfem::cuda_check((call), #call, __FILE__, __LINE__)
/// After a kernel launch: catches launch-configuration errors (and, synchronously, nothing more).
#define TCFEM_CUDA_CHECK_LAUNCH() ::tcfem::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
