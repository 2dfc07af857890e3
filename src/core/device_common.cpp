#include "core/device.h"
#include "core/error.h"

#include <atomic>

namespace tcfem {

namespace {
std::atomic<int>& device_setting() {
  static std::atomic<int> id{0};
  return id;
}
}  // namespace

void set_process_device(int id) { device_setting() = id < 0 ? 0 : id; }
int process_device() { return device_setting(); }

DeviceInfo require_device(const std::string& option) {
  DeviceInfo info = query_device(-1);
  if (!info.available) throw InputError(option + ": no usable CUDA device (" + info.reason + ")");
  return info;
}

}  // namespace tcfem
