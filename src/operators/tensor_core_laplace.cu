// The tensor-core kernel family (registered in device_registry.cu).
#include "operators/device_variants.h"

namespace tcfem::operators {

bool tensor_core_supports(const DeviceKernelKey&) { return false; }

std::string describe_tensor_core() { return "tensor-core: none yet"; }

template <int dim>
std::unique_ptr<DeviceOperator> make_tensor_core_operator(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                   const DeviceKernelKey&) {
  return nullptr;
}

template std::unique_ptr<DeviceOperator> make_tensor_core_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                               const DeviceKernelKey&);
template std::unique_ptr<DeviceOperator> make_tensor_core_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                               const DeviceKernelKey&);

}  // namespace tcfem::operators
