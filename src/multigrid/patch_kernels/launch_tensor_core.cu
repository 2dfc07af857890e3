// Instantiations of the vertex-patch smoother kernels with Contraction::tensor_core (see multigrid/patch_kernels/launch.h).
#include "multigrid/patch_kernels/launch.cuh"

namespace tcfem::multigrid::patch_kernels {
template PatchLauncher<double> patch_launcher<2, double, Contraction::tensor_core>(int, KernelKind);
template PatchLauncher<double> patch_launcher<3, double, Contraction::tensor_core>(int, KernelKind);
template PatchLauncher<float> patch_launcher<2, float, Contraction::tensor_core>(int, KernelKind);
template PatchLauncher<float> patch_launcher<3, float, Contraction::tensor_core>(int, KernelKind);
template PatchKernelInfo patch_kernel_info<2, double, Contraction::tensor_core>(int, KernelKind, int);
template PatchKernelInfo patch_kernel_info<3, double, Contraction::tensor_core>(int, KernelKind, int);
template PatchKernelInfo patch_kernel_info<2, float, Contraction::tensor_core>(int, KernelKind, int);
template PatchKernelInfo patch_kernel_info<3, float, Contraction::tensor_core>(int, KernelKind, int);
}  // namespace tcfem::multigrid::patch_kernels
