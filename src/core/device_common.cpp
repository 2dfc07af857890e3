#include "core/device.h"
#include "core/error.h"

namespace tcfem {

DeviceInfo require_device(const std::string& option) {
  DeviceInfo info = query_device(0);
  if (!info.available) throw InputError(option + ": no usable CUDA device (" + info.reason + ")");
  return info;
}

}  // namespace tcfem
