#include <sstream>

#include "core/error.h"
#include "operators/device/device_operator.h"

namespace tcfem::operators {

std::string_view to_string(Variant v) {
  switch (v) {
    case Variant::generic: return "generic";
    case Variant::cuda_core: return "cuda-core";
    case Variant::tensor_core: return "tensor-core";
  }
  return "?";
}

Variant variant_from_string(std::string_view name) {
  for (auto v : {Variant::generic, Variant::cuda_core, Variant::tensor_core})
    if (name == to_string(v)) return v;
  throw InputError("--variant: value " + std::string(name) + " is not allowed; allowed: generic, cuda-core, tensor-core");
}

std::string DeviceKernelKey::to_string() const {
  std::ostringstream s;
  s << dim << "D " << fe::to_string(disc) << " Q" << degree << (form == Form::mass ? " mass" : " laplace") << ", "
    << (cartesian ? "cartesian"
                  : std::string("general/") + fe::to_string(quadrature) +
                        (general_field ? std::string("/field/") + operators::to_string(geometry_form) : "") +
                        (fp32_stored_fp64(*this) ? "/stored-fp32" : ""))
    << ", "
    << precision::to_string(precision) << ", " << operators::to_string(variant);
  return s.str();
}

void DeviceOperator::vmult_interior(void*, const void*) const {
  throw Error("DeviceOperator::vmult_interior: the operator's apply is not split (split_apply)");
}
void DeviceOperator::vmult_rest(void*, const void*) const {
  throw Error("DeviceOperator::vmult_rest: the operator's apply is not split (split_apply)");
}

}  // namespace tcfem::operators
