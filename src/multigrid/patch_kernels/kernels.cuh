#pragma once
// The CUDA kernels of the vertex-patch smoother: the block program of multigrid/patch_kernels/block.h as a kernel
// (the 1D matrices a __grid_constant__ parameter: FMAs read them from the constant bank; the
// even-odd kernels bounded to PatchLayout::min_blocks resident blocks per SM), and the
// two vector kernels of a step (residual from a product, Dirichlet copy).
#include <cuda_runtime.h>

#include "multigrid/patch_kernels/block.h"

namespace tcfem::multigrid::patch_kernels {

template <int dim, int k, typename Number, KernelKind kind, Contraction con>
__global__ void __launch_bounds__(patch_layout(dim, k, sizeof(Number), kind, con).threads)
    patch_kernel(const __grid_constant__ PatchKernelParams<Number> p,
                 const __grid_constant__ PatchMatrices<dim, k, Number> matrices) {
  extern __shared__ __align__(16) unsigned char patch_smem_raw[];
  patch_block<dim, k, Number, kind, con>(ThreadGroup{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)},
                                         static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                         static_cast<int>(blockIdx.z), p, matrices,
                                         reinterpret_cast<Number*>(patch_smem_raw));
}

/// The same kernel with a resident-block bound (PatchLayout::min_blocks > 1, even-odd kernels of
/// 8-byte values). Kept apart: an explicit bound of 1 makes ptxas spend up to 255 registers.
template <int dim, int k, typename Number, KernelKind kind, Contraction con>
__global__ void __launch_bounds__(patch_layout(dim, k, sizeof(Number), kind, con).threads,
                                  patch_layout(dim, k, sizeof(Number), kind, con).min_blocks)
    patch_kernel_bounded(const __grid_constant__ PatchKernelParams<Number> p,
                         const __grid_constant__ PatchMatrices<dim, k, Number> matrices) {
  extern __shared__ __align__(16) unsigned char patch_smem_raw[];
  patch_block<dim, k, Number, kind, con>(ThreadGroup{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)},
                                         static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                         static_cast<int>(blockIdx.z), p, matrices,
                                         reinterpret_cast<Number*>(patch_smem_raw));
}

/// The kernel a launch of (dim, k, Number, kind, con) uses.
template <int dim, int k, typename Number, KernelKind kind, Contraction con>
constexpr auto patch_kernel_of() {
  if constexpr (con == Contraction::even_odd && patch_layout(dim, k, sizeof(Number), kind, con).min_blocks > 1)
    return &patch_kernel_bounded<dim, k, Number, kind, con>;
  else
    return &patch_kernel<dim, k, Number, kind, con>;
}

/// r = b - r (r holds A x on entry); one entry per thread (a grid-stride loop streams slower).
template <typename Number>
__global__ void residual_from_product_kernel(Number* r, const Number* b, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) r[i] = b[i] - r[i];
}

/// x += y, one entry per thread.
template <typename Number>
__global__ void add_kernel(Number* x, const Number* y, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += y[i];
}

/// The surrogate weights of one color's patches from the cell metric on the device (what
/// patch_kernel_weights computes on the host, to the bit): w[j dim + d] the mean of metric[cell dim
/// + d] over the 2^dim cells around the vertex of patch j (cells numbered lexicographically,
/// n0 x n1 (x n2) of them; patch_metric_mean). One patch per thread.
template <int dim, typename Number>
__global__ void patch_weights_kernel(int3 count, int3 parity, int n0, int n1, long long n_patches,
                                     const double* __restrict__ metric, Number* __restrict__ w) {
  const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (j >= n_patches) return;
  const int cnt[3] = {count.x, count.y, count.z}, par[3] = {parity.x, parity.y, parity.z};
  int v[3] = {0, 0, 0};
  color_patch_vertex<dim>(j, cnt, par, v);
  const auto number = [n0, n1](const int* c) -> long long {
    long long cell = c[dim - 1];
    for (int d = dim - 2; d >= 0; --d) cell = cell * (d == 0 ? n0 : n1) + c[d];
    return cell;
  };
  double g[dim];
  patch_metric_mean<dim>(v, number, metric, g);
  for (int d = 0; d < dim; ++d) w[j * dim + d] = static_cast<Number>(g[d]);
}

/// x_i = b_i on the constrained (Dirichlet) nodes.
template <typename Number>
__global__ void set_constrained_kernel(Number* x, const Number* b, const long long* idx, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    x[idx[i]] = b[idx[i]];
}

}  // namespace tcfem::multigrid::patch_kernels
