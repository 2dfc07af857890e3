#pragma once
// Function qualifiers for code shared by the host (g++ or nvcc host pass) and the device.
// Plain C++ compilers see empty qualifiers, so headers built on these stay usable without CUDA.

#if defined(__CUDACC__)
#define TCFEM_HOST_DEVICE __host__ __device__
#define TCFEM_DEVICE __device__
#else
#define TCFEM_HOST_DEVICE
#define TCFEM_DEVICE
#endif
