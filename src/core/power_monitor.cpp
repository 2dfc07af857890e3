#include "core/power_monitor.h"

#include <dlfcn.h>

namespace tcfem {

// the NVML entry points used, by their C signatures (nvml.h): return 0 on success
struct PowerMonitor::Api {
  void* library = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*handle_by_pci)(const char*, void**) = nullptr;
  int (*power_usage)(void*, unsigned*) = nullptr;                      // milliwatts
  int (*total_energy)(void*, unsigned long long*) = nullptr;           // millijoules
};

PowerMonitor::PowerMonitor(const std::string& pci_bus_id, double interval_seconds) : interval_(interval_seconds) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    reason_ = "NVML (libnvidia-ml.so.1) not found";
    return;
  }
  api_ = new Api;
  api_->library = lib;
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  api_->init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  api_->shutdown = reinterpret_cast<int (*)()>(sym("nvmlShutdown"));
  api_->handle_by_pci = reinterpret_cast<int (*)(const char*, void**)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  api_->power_usage = reinterpret_cast<int (*)(void*, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
  api_->total_energy = reinterpret_cast<int (*)(void*, unsigned long long*)>(sym("nvmlDeviceGetTotalEnergyConsumption"));
  if (!api_->init || !api_->shutdown || !api_->handle_by_pci || !api_->power_usage) {
    reason_ = "NVML lacks the power functions";
    return;
  }
  if (api_->init() != 0) {
    reason_ = "nvmlInit failed";
    api_->shutdown = nullptr;
    return;
  }
  if (api_->handle_by_pci(pci_bus_id.c_str(), &device_) != 0) {
    reason_ = "NVML does not know the device " + pci_bus_id;
    return;
  }
  unsigned mw = 0;
  if (api_->power_usage(device_, &mw) != 0) {
    reason_ = "the device reports no power draw";
    return;
  }
  available_ = true;
}

PowerMonitor::~PowerMonitor() {
  if (running_) stop();
  if (api_) {
    if (api_->shutdown) api_->shutdown();
    dlclose(api_->library);
    delete api_;
  }
}

void PowerMonitor::start() {
  if (!available_ || running_) return;
  samples_.clear();
  t0_ = std::chrono::steady_clock::now();
  counter_ = api_->total_energy && api_->total_energy(device_, &counter0_) == 0;
  running_ = true;
  sampler_ = std::thread([this] {
    while (running_) {
      unsigned mw = 0;
      if (api_->power_usage(device_, &mw) == 0)
        samples_.push_back({std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(), 1e-3 * mw});
      std::this_thread::sleep_for(std::chrono::duration<double>(interval_));
    }
  });
}

void PowerMonitor::stop() {
  if (!running_) return;
  running_ = false;
  sampler_.join();
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  unsigned long long counter1 = 0;
  if (counter_ && api_->total_energy(device_, &counter1) == 0 && counter1 > counter0_) {
    energy_ = 1e-3 * double(counter1 - counter0_);
  } else {
    energy_ = 0;
    for (std::size_t i = 1; i < samples_.size(); ++i)
      energy_ += 0.5 * (samples_[i][1] + samples_[i - 1][1]) * (samples_[i][0] - samples_[i - 1][0]);
    if (samples_.size() >= 2) seconds_ = samples_.back()[0] - samples_.front()[0];
  }
}

}  // namespace tcfem
