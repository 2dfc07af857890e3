// The general-geometry cuda-core cg Laplacian operators in fp64 with the stored geometry rounded to
// fp32 (GeometryStorage::fp32; operators/cuda_core/geometry_kernels.cuh; their kernels are in the
// units of one degree each, geometry_degree.cu.in).
#include "operators/cuda_core/geometry_kernels.cuh"

namespace tcfem::operators {

template <int dim>
std::unique_ptr<DeviceOperator> make_cuda_core_geometry_stored_fp32_operator(
    const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
    const DeviceTuning& tuning, const Coefficient& coefficient, const jit::DeviceSource& coefficient_source) {
  return cuda_core::make_geom_stored_fp32_operator<dim>(mesh, dofs, key, tuning, coefficient, coefficient_source,
                                                        std::make_integer_sequence<int, 8>{});
}

template std::unique_ptr<DeviceOperator> make_cuda_core_geometry_stored_fp32_operator<2>(
    const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const DeviceKernelKey&, const DeviceTuning&, const Coefficient&,
    const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_cuda_core_geometry_stored_fp32_operator<3>(
    const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const DeviceKernelKey&, const DeviceTuning&, const Coefficient&,
    const jit::DeviceSource&);

}  // namespace tcfem::operators
