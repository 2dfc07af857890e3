// The general-geometry cuda-core cg Laplacian operators in fp32 (operators/cuda_core/geometry_kernels.cuh;
// their kernels are in the units of one degree each, geometry_degree.cu.in).
#include "operators/cuda_core/geometry_kernels.cuh"

namespace tcfem::operators {

template <>
std::unique_ptr<DeviceOperator> make_cuda_core_geometry_operator<2, float>(
    const mesh::BoxMesh<2>& mesh, const fe::DofLayout<2>& dofs, const DeviceKernelKey& key, const DeviceTuning& tuning,
    const Coefficient& coefficient, const jit::DeviceSource& coefficient_source) {
  return cuda_core::make_geom_operator_typed<2, float>(mesh, dofs, key, tuning, coefficient, coefficient_source);
}

template <>
std::unique_ptr<DeviceOperator> make_cuda_core_geometry_operator<3, float>(
    const mesh::BoxMesh<3>& mesh, const fe::DofLayout<3>& dofs, const DeviceKernelKey& key, const DeviceTuning& tuning,
    const Coefficient& coefficient, const jit::DeviceSource& coefficient_source) {
  return cuda_core::make_geom_operator_typed<3, float>(mesh, dofs, key, tuning, coefficient, coefficient_source);
}

}  // namespace tcfem::operators
