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
/// parameter.
template <typename Number>
using PatchLauncher = void (*)(const PatchKernelParams<Number>& p, const std::vector<Number>& matrices);

/// The launcher of degree k (1..8) and `kind` with contraction `con`.
template <int dim, typename Number, Contraction con>
PatchLauncher<Number> patch_launcher(int k, KernelKind kind);

/// What the device makes of one kernel: registers per thread, block size, dynamic shared memory
/// per block and resident blocks per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor, after the
/// attributes a launch sets).
struct PatchKernelInfo {
  int registers = 0, threads = 0, shared_bytes = 0, blocks_per_sm = 0;
};
template <int dim, typename Number, Contraction con>
PatchKernelInfo patch_kernel_info(int k, KernelKind kind);

/// The shared-memory carveout the launches ask for (cudaFuncAttributePreferredSharedMemoryCarveout,
/// percent of the maximum): TCFEM_PATCH_CARVEOUT = 0..100, or -1 for the driver's choice; default
/// 100 (all of the unified L1/shared array that the blocks may need as shared memory).
int patch_carveout();

}  // namespace tcfem::multigrid::patch_kernels
