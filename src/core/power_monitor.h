#pragma once
// The board power of a GPU through NVML (loaded at run time from the driver's libnvidia-ml.so.1,
// so that builds need no NVML and machines without it report "not available"): a thread samples
// the power draw while a run goes on, and the board's energy counter gives the energy used.
#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace tcfem {

class PowerMonitor {
 public:
  /// Opens NVML for the device with this PCI bus id; available() says whether it worked.
  explicit PowerMonitor(const std::string& pci_bus_id, double interval_seconds = 0.05);
  ~PowerMonitor();
  PowerMonitor(const PowerMonitor&) = delete;
  PowerMonitor& operator=(const PowerMonitor&) = delete;

  bool available() const { return available_; }
  const std::string& reason() const { return reason_; }  ///< why not available
  void start();
  void stop();
  /// Samples (seconds since start, watts).
  const std::vector<std::array<double, 2>>& samples() const { return samples_; }
  /// Energy between start and stop (J): the board's counter where it has one, else the samples
  /// integrated by the trapezoidal rule.
  double energy_joules() const { return energy_; }
  double seconds() const { return seconds_; }
  double average_watts() const { return seconds_ > 0 ? energy_ / seconds_ : 0.0; }

 private:
  struct Api;
  Api* api_ = nullptr;
  void* device_ = nullptr;
  bool available_ = false;
  std::string reason_;
  double interval_;
  std::atomic<bool> running_{false};
  std::thread sampler_;
  std::vector<std::array<double, 2>> samples_;
  std::chrono::steady_clock::time_point t0_;
  unsigned long long counter0_ = 0;
  bool counter_ = false;
  double energy_ = 0, seconds_ = 0;
};

}  // namespace tcfem
