#pragma once
// Builders of the kernel families, called by the registry (operators/device/registry.cu). Each returns
// nullptr when it has no kernel for the key; `*_supports` answers without building.
#include <memory>
#include <string>

#include "operators/device/device_operator.h"

namespace tcfem::operators {

template <int dim>
std::unique_ptr<DeviceOperator> make_generic_device_operator(const mesh::BoxMesh<dim>& mesh,
                                                             const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                             const Coefficient& coefficient,
                                                             const jit::DeviceSource& coefficient_source);
bool generic_supports(const DeviceKernelKey& key);
std::string describe_generic();

template <int dim>
std::unique_ptr<DeviceOperator> make_cuda_core_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                        const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                        const Coefficient& coefficient,
                                                        const jit::DeviceSource& coefficient_source);
bool cuda_core_supports(const DeviceKernelKey& key);
/// The cuda-core cg Laplacian on general geometry, in the storage type Number
/// (operators/cuda_core/geometry_fp64.cu, operators/cuda_core/geometry_fp32.cu): key.general_field
/// with the stored cell data of any geometry and coefficient, else the 1D tables of the deformed box.
template <int dim, typename Number>
std::unique_ptr<DeviceOperator> make_cuda_core_geometry_operator(const mesh::BoxMesh<dim>& mesh,
                                                                 const fe::DofLayout<dim>& dofs,
                                                                 const DeviceKernelKey& key,
                                                                 const DeviceTuning& tuning,
                                                                 const Coefficient& coefficient,
                                                                 const jit::DeviceSource& coefficient_source);
/// The fp64 cuda-core cg Laplacian on general geometry with its stored cell data rounded to fp32
/// (GeometryStorage::fp32; operators/cuda_core/geometry_fp64_stored32.cu): key.general_field, pa,
/// BP3 and BP5 quadrature.
template <int dim>
std::unique_ptr<DeviceOperator> make_cuda_core_geometry_stored_fp32_operator(const mesh::BoxMesh<dim>& mesh,
                                                                             const fe::DofLayout<dim>& dofs,
                                                                             const DeviceKernelKey& key,
                                                                             const DeviceTuning& tuning,
                                                                             const Coefficient& coefficient,
                                                                             const jit::DeviceSource& coefficient_source);
/// The cuda-core dg (SIPG) Laplacian on general geometry with stored cell and face data, in the
/// storage type Number (operators/cuda_core/dg_geometry_fp64.cu, operators/cuda_core/dg_geometry_fp32.cu):
/// key.general_field, stored geometry (pa), BP3 and BP5 quadrature.
template <int dim, typename Number>
std::unique_ptr<DeviceOperator> make_cuda_core_dg_geometry_operator(const mesh::BoxMesh<dim>& mesh,
                                                                    const fe::DofLayout<dim>& dofs,
                                                                    const DeviceKernelKey& key,
                                                                    const DeviceTuning& tuning,
                                                                    const Coefficient& coefficient,
                                                                    const jit::DeviceSource& coefficient_source);
std::string describe_cuda_core();

template <int dim>
std::unique_ptr<DeviceOperator> make_tensor_core_operator(const mesh::BoxMesh<dim>& mesh,
                                                          const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                          const DeviceTuning& tuning, const Coefficient& coefficient,
                                                          const jit::DeviceSource& coefficient_source);
bool tensor_core_supports(const DeviceKernelKey& key);
std::string describe_tensor_core();

/// The operator configuration of a key.
inline OperatorConfig config_of(const DeviceKernelKey& key) {
  OperatorConfig c;
  c.disc = key.disc;
  c.degree = key.degree;
  c.quadrature = key.quadrature;
  c.cartesian_fast_path = key.cartesian;
  return c;
}

}  // namespace tcfem::operators
