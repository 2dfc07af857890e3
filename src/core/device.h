#pragma once
// Device query, usable without CUDA headers. Builds without CUDA report "not available".
#include <cstddef>
#include <string>

namespace tcfem {

struct DeviceInfo {
  bool available = false;
  std::string reason;  ///< why not available
  std::string name;
  int sm_major = 0, sm_minor = 0, sm_count = 0;
  double clock_ghz = 0.0, memory_clock_ghz = 0.0;
  int memory_bus_bits = 0;
  std::size_t total_memory = 0, free_memory = 0;
  std::size_t shared_memory_per_block_optin = 0;
  std::string pci_bus_id;  ///< domain:bus:device.function, as NVML names it
};

/// True if this build contains the CUDA backend.
bool built_with_cuda();
/// The CUDA device of this process: 0 unless set (a distributed run gives each rank the device of
/// its rank on the host). Every device query and allocation of the library uses it.
void set_process_device(int id);
int process_device();
/// Properties of CUDA device `id` (-1: the process's device), which becomes the current device;
/// `available` is false (with a reason) when there is none.
DeviceInfo query_device(int id = -1);
/// Throws InputError naming `option` unless the process's CUDA device is usable.
DeviceInfo require_device(const std::string& option);

}  // namespace tcfem
