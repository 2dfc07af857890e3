// Builds without the CUDA backend: no device operators.
#include "core/error.h"
#include "operators/device/device_operator.h"

namespace tcfem::operators {

bool device_kernel_supported(const DeviceKernelKey&) { return false; }
std::vector<std::string> describe_device_kernels() { return {}; }
DeviceKernelKey with_fastest_stored_geometry_variant(DeviceKernelKey key) { return key; }

template <int dim>
std::unique_ptr<DeviceOperator> make_device_operator(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                     const DeviceKernelKey&, const DeviceTuning&,
                                                     const Coefficient&, const jit::DeviceSource&) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

template std::unique_ptr<DeviceOperator> make_device_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                 const DeviceKernelKey&, const DeviceTuning&,
                                                                 const Coefficient&, const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_device_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                 const DeviceKernelKey&, const DeviceTuning&,
                                                                 const Coefficient&, const jit::DeviceSource&);

}  // namespace tcfem::operators
