#pragma once
// Definition of patch_launcher (multigrid/patch_kernels/launch.h), included by the instantiation files
// multigrid/patch_kernels/launch_dense.cu, multigrid/patch_kernels/launch_even_odd.cu and
// multigrid/patch_kernels/launch_tensor_core.cu.
#include <algorithm>
#include <array>
#include <utility>

#include "core/cuda_check.h"
#include "core/error.h"
#include "multigrid/patch_kernels/kernels.cuh"
#include "multigrid/patch_kernels/launch.h"

namespace tcfem::multigrid::patch_kernels {

template <int dim, int k, typename Number, KernelKind kind, Contraction con>
void launch_patch_kernel(const PatchKernelParams<Number>& p, const std::vector<Number>& matrices, int carveout) {
  constexpr PatchLayout L = patch_layout(dim, k, sizeof(Number), kind, con);
  PatchMatrices<dim, k, Number> m;
  TCFEM_ASSERT(matrices.size() == sizeof(m.m) / sizeof(Number), "patch matrix size");
  std::copy(matrices.begin(), matrices.end(), m.m);
  const auto kernel = patch_kernel_of<dim, k, Number, kind, con>();
  constexpr int shared_bytes = shared_bytes_of(L, con);
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
  const dim3 blocks((p.count[0] + L.patches - 1) / L.patches, p.count[1], dim == 3 ? p.count[2] : 1);
  kernel<<<blocks, L.threads, shared_bytes>>>(p, m);
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <int dim, int k, typename Number, KernelKind kind, Contraction con>
PatchKernelInfo query_patch_kernel(int carveout) {
  constexpr PatchLayout L = patch_layout(dim, k, sizeof(Number), kind, con);
  const auto kernel = patch_kernel_of<dim, k, Number, kind, con>();
  constexpr int shared_bytes = shared_bytes_of(L, con);
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes));
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
  cudaFuncAttributes attr{};
  TCFEM_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  PatchKernelInfo info;
  info.registers = attr.numRegs;
  info.threads = L.threads;
  info.shared_bytes = shared_bytes;
  TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info.blocks_per_sm, kernel, L.threads, shared_bytes));
  return info;
}

template <int dim, typename Number, KernelKind kind, Contraction con, int... ks>
constexpr std::array<PatchKernelInfo (*)(int), sizeof...(ks)> info_table(std::integer_sequence<int, ks...>) {
  return {&query_patch_kernel<dim, ks + 1, Number, kind, con>...};
}

template <int dim, typename Number, Contraction con>
PatchKernelInfo patch_kernel_info(int k, KernelKind kind, int carveout) {
  constexpr auto seq = std::make_integer_sequence<int, 8>();
  static constexpr auto fused = info_table<dim, Number, KernelKind::fused, con>(seq);
  static constexpr auto residual = info_table<dim, Number, KernelKind::residual, con>(seq);
  static constexpr auto from_buffer = info_table<dim, Number, KernelKind::solve_from_buffer, con>(seq);
  static constexpr auto from_vector = info_table<dim, Number, KernelKind::solve_from_vector, con>(seq);
  TCFEM_ASSERT(k >= 1 && k <= 8, "patch kernel degree");
  switch (kind) {
    case KernelKind::fused: return fused[k - 1](carveout);
    case KernelKind::residual: return residual[k - 1](carveout);
    case KernelKind::solve_from_buffer: return from_buffer[k - 1](carveout);
    case KernelKind::solve_from_vector: return from_vector[k - 1](carveout);
  }
  throw Error("unknown patch kernel kind");
}

/// The launchers of one (dim, Number, kind, con) for the degrees 1..8, indexed by k - 1.
template <int dim, typename Number, KernelKind kind, Contraction con, int... ks>
constexpr std::array<PatchLauncher<Number>, sizeof...(ks)> launcher_table(std::integer_sequence<int, ks...>) {
  return {&launch_patch_kernel<dim, ks + 1, Number, kind, con>...};
}

template <int dim, typename Number, Contraction con>
PatchLauncher<Number> patch_launcher(int k, KernelKind kind) {
  constexpr auto seq = std::make_integer_sequence<int, 8>();
  static constexpr auto fused = launcher_table<dim, Number, KernelKind::fused, con>(seq);
  static constexpr auto residual = launcher_table<dim, Number, KernelKind::residual, con>(seq);
  static constexpr auto from_buffer = launcher_table<dim, Number, KernelKind::solve_from_buffer, con>(seq);
  static constexpr auto from_vector = launcher_table<dim, Number, KernelKind::solve_from_vector, con>(seq);
  TCFEM_ASSERT(k >= 1 && k <= 8, "patch kernel degree");
  switch (kind) {
    case KernelKind::fused: return fused[k - 1];
    case KernelKind::residual: return residual[k - 1];
    case KernelKind::solve_from_buffer: return from_buffer[k - 1];
    case KernelKind::solve_from_vector: return from_vector[k - 1];
  }
  throw Error("unknown patch kernel kind");
}

}  // namespace tcfem::multigrid::patch_kernels
