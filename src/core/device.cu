#include <cstdio>
#include <map>
#include <mutex>

#include "core/cuda_check.h"
#include "core/device.h"

namespace tcfem {

bool built_with_cuda() { return true; }

namespace {
/// The properties of a device that do not change while the process runs (the query takes
/// milliseconds: the clock rates and cudaGetDeviceProperties' hundred attributes), by device id.
DeviceInfo device_properties(int id);
}  // namespace

DeviceInfo query_device(int id) {
  if (id < 0) id = process_device();
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;
  DeviceInfo info;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = known.find(id);
    if (it != known.end()) {
      info = it->second;
    } else {
      info = device_properties(id);
      if (info.available) known.emplace(id, info);
    }
  }
  if (!info.available) return info;
  TCFEM_CUDA_CHECK(cudaSetDevice(id));
  std::size_t free_b = 0, total_b = 0;
  TCFEM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  info.free_memory = free_b;
  return info;
}

namespace {
DeviceInfo device_properties(int id) {
  DeviceInfo info;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error state
    return info;
  }
  if (count <= id) {
    info.reason = count == 0 ? "no CUDA device found" : "device " + std::to_string(id) + " does not exist";
    return info;
  }
  cudaDeviceProp p{};
  e = cudaGetDeviceProperties(&p, id);
  if (e != cudaSuccess) {
    info.reason = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e);
    return info;
  }
  info.available = true;
  info.name = p.name;
  char bus[32];
  std::snprintf(bus, sizeof bus, "%08X:%02X:%02X.0", unsigned(p.pciDomainID), unsigned(p.pciBusID), unsigned(p.pciDeviceID));
  info.pci_bus_id = bus;
  info.sm_major = p.major;
  info.sm_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, id);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, id);
  info.clock_ghz = clock_khz * 1e-6;
  info.memory_clock_ghz = mem_clock_khz * 1e-6;
  info.memory_bus_bits = p.memoryBusWidth;
  info.total_memory = p.totalGlobalMem;
  info.shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
  return info;
}
}  // namespace

}  // namespace tcfem
