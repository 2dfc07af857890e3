// Device query of builds without the CUDA backend.
#include "core/device.h"

namespace tcfem {

bool built_with_cuda() { return false; }

DeviceInfo query_device(int) {
  DeviceInfo info;
  info.reason = "this build of tcfem has no CUDA backend (nvcc was not found at configure time)";
  return info;
}

}  // namespace tcfem
