#pragma once
// The launchers of the vertex-patch smoother kernels, one per (dim, degree, Number, kind,
// contraction): a dispatch table over the degree 1..8. The instantiations are split by contraction
// over multigrid/patch_kernels/launch_dense.cu and multigrid/patch_kernels/launch_even_odd.cu so that they compile in
// parallel. No CUDA headers here.
#include <vector>

#include "multigrid/patch_kernels/block.h"

namespace tcfem::multigrid::patch_kernels {

/// Launches the kernel for one color on the default stream: the 1D matrices (host copy,
/// dim * (2 ni nf + ni ni) entries, in the form of the contraction) travel by value as a kernel
/// parameter; `carveout`: cudaFuncAttributePreferredSharedMemoryCarveout of the launch (percent of
/// the maximum, -1 the driver's choice).
template <typename Number>
using PatchLauncher = void (*)(const PatchKernelParams<Number>& p, const std::vector<Number>& matrices, int carveout);

/// The launcher of degree k (1..8) and `kind` with contraction `con`.
template <int dim, typename Number, Contraction con>
PatchLauncher<Number> patch_launcher(int k, KernelKind kind);

/// What the device makes of one kernel: registers per thread, block size, dynamic shared memory
/// per block and resident blocks per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor, after the
/// attributes a launch with `carveout` sets).
struct PatchKernelInfo {
  int registers = 0, threads = 0, shared_bytes = 0, blocks_per_sm = 0;
};
template <int dim, typename Number, Contraction con>
PatchKernelInfo patch_kernel_info(int k, KernelKind kind, int carveout);

}  // namespace tcfem::multigrid::patch_kernels
