#pragma once
// The CUDA kernels of the vertex-patch smoother: the block program of patch_block.h as a kernel
// (the 1D matrices a __grid_constant__ parameter: FMAs read them from the constant bank; the
// even-odd kernels bounded to PatchLayout::min_blocks resident blocks per SM), and the
// two vector kernels of a step (residual from a product, Dirichlet copy).
#include <cuda_runtime.h>

#include "multigrid/patch_block.h"

namespace tcfem::multigrid::patch_kernels {

template <int dim, int k, typename Number, KernelKind kind, Contraction con>
__global__ void __launch_bounds__(patch_layout(dim, k, sizeof(Number), kind).threads,
                                  con == Contraction::even_odd ? patch_layout(dim, k, sizeof(Number), kind).min_blocks : 1)
    patch_kernel(const __grid_constant__ PatchKernelParams<Number> p,
                 const __grid_constant__ PatchMatrices<dim, k, Number> matrices) {
  extern __shared__ __align__(16) unsigned char patch_smem_raw[];
  patch_block<dim, k, Number, kind, con>(ThreadGroup{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)},
                                    static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                    static_cast<int>(blockIdx.z), p, matrices, reinterpret_cast<Number*>(patch_smem_raw));
}

/// r = b - r (r holds A x on entry).
template <typename Number>
__global__ void residual_from_product_kernel(Number* r, const Number* b, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    r[i] = b[i] - r[i];
}

/// x_i = b_i on the constrained (Dirichlet) nodes.
template <typename Number>
__global__ void set_constrained_kernel(Number* x, const Number* b, const long long* idx, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    x[idx[i]] = b[idx[i]];
}

}  // namespace tcfem::multigrid::patch_kernels
