// The registry of device operators: dispatches a runtime key to the kernel families.
#include "arch/capability.h"
#include "core/device.h"
#include "core/error.h"
#include "operators/device/variants.h"

namespace tcfem::operators {

bool device_kernel_supported(const DeviceKernelKey& key) {
  switch (key.variant) {
    case Variant::generic: return generic_supports(key);
    case Variant::cuda_core: return cuda_core_supports(key);
    case Variant::tensor_core: return tensor_core_supports(key);
  }
  return false;
}

DeviceKernelKey with_fastest_stored_geometry_variant(DeviceKernelKey key) {
  auto t = key;
  t.variant = fastest_stored_geometry_variant(key);
  if (t.variant == key.variant || !device_kernel_supported(t)) return key;
  if (t.variant == Variant::tensor_core) {
    const DeviceInfo d = query_device();
    if (!d.available || arch::select_fp64_atom(d.sm_major, d.sm_minor) != arch::Fp64Shape::m16n8k16) return key;
  }
  return t;
}

std::vector<std::string> describe_device_kernels() {
  return {describe_generic(), describe_cuda_core(), describe_tensor_core()};
}

template <int dim>
std::unique_ptr<DeviceOperator> make_device_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                     const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                     const Coefficient& coefficient,
                                                     const jit::DeviceSource& coefficient_source) {
  TCFEM_ASSERT(key.dim == dim, "kernel key dimension does not match the mesh");
  if (dofs.disc() == fe::Disc::cg && !dofs.all_faces_dirichlet() && !key.general_field)
    throw InputError("Neumann boundary parts with --disc cg: the kernel " + key.to_string() +
                     " constrains every boundary node; the general-geometry keys (set_geometry) serve these layouts");
  if (coefficient && key.cartesian)
    throw InputError("a variable coefficient needs the general-geometry kernels (" + key.to_string() + ")");
  std::unique_ptr<DeviceOperator> op;
  switch (key.variant) {
    case Variant::generic: op = make_generic_device_operator<dim>(mesh, dofs, key, coefficient, coefficient_source); break;
    case Variant::cuda_core:
      op = make_cuda_core_operator<dim>(mesh, dofs, key, tuning, coefficient, coefficient_source);
      break;
    case Variant::tensor_core:
      op = make_tensor_core_operator<dim>(mesh, dofs, key, tuning, coefficient, coefficient_source);
      break;
  }
  if (!op) {
    std::string msg = "no kernel for " + key.to_string() + "; this build has:";
    for (const auto& line : describe_device_kernels()) msg += " [" + line + "]";
    throw InputError(msg);
  }
  return op;
}

template std::unique_ptr<DeviceOperator> make_device_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                 const DeviceKernelKey&, const DeviceTuning&,
                                                                 const Coefficient&, const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_device_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                 const DeviceKernelKey&, const DeviceTuning&,
                                                                 const Coefficient&, const jit::DeviceSource&);

}  // namespace tcfem::operators
