#pragma once
// `--backend auto|cpu|cuda` of solve and bench: auto takes cuda where a usable CUDA device is
// present and the run's options have a device path, cpu otherwise; the choice and its reason open
// the summary.
#include <CLI/CLI.hpp>
#include <string>

#include "core/device.h"
#include "core/device_exchange.h"
#include "core/error.h"
#include "core/parallel.h"

namespace tcfem::app {

struct BackendChoice {
  std::string backend;  ///< cpu or cuda
  std::string reason;   ///< why, for the summary's first line and the report
};

/// cpu_only: why these options run on the CPU only (empty: they have a device path).
inline BackendChoice resolve_backend(const std::string& requested, const std::string& cpu_only) {
  if (requested != "auto") return {requested, "requested"};
  if (!cpu_only.empty()) return {"cpu", "auto: " + cpu_only};
  const DeviceInfo d = query_device();
  if (!d.available) return {"cpu", "auto: no usable CUDA device (" + d.reason + ")"};
  return {"cuda", "auto: " + d.name + " found"};
}

/// Checks --threads and makes it the host thread count (0: all hardware threads).
inline void apply_threads(int threads) {
  if (threads < 0 || threads > max_host_threads)
    throw InputError("--threads: value " + std::to_string(threads) + " is not allowed; allowed: integers 0.." +
                     std::to_string(max_host_threads) + " (0: all hardware threads)");
  set_host_threads(threads);
}

/// Adds the options every computing command shares: --backend (auto, cpu, cuda), --tuning FILE and
/// --threads N.
inline void add_run_options(CLI::App* cmd, std::string& backend, std::string& tuning_file, int& threads) {
  cmd->add_option("--backend", backend,
                  "auto (cuda where a usable CUDA device is present and the options have a device path, else "
                  "cpu), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--tuning", tuning_file,
                  "Kernel choices of the device kernel families, a JSON file (docs/user_guide.md, \"Tuning\")");
  cmd->add_option("--threads", threads, "Host threads of the CPU loops; 0: all hardware threads")
      ->capture_default_str();
}

/// Adds --exchange and --exchange-overlap (solve and bench: the ghost exchange of a distributed
/// run with --backend cuda).
inline void add_exchange_options(CLI::App* cmd, std::string& exchange, std::string& overlap) {
  cmd->add_option("--exchange", exchange,
                  "Ghost exchange of distributed runs on the GPU (mpirun -np N ... --backend cuda): auto (cuda-ipc "
                  "where all ranks share a host, else nccl in a build with NCCL, else cuda-aware where the MPI "
                  "library reports CUDA support, else host-staged), nccl (NCCL send and receive queued on a stream: the "
                  "host never waits for an exchange), host-staged (through pinned host buffers), cuda-aware (device "
                  "buffers in the MPI calls) or cuda-ipc (device-to-device copies into the neighbours' mapped "
                  "buffers, one host)")
      ->check(CLI::IsMember({"auto", "nccl", "host-staged", "cuda-aware", "cuda-ipc"}))
      ->capture_default_str();
  cmd->add_option("--exchange-overlap", overlap,
                  "Distributed runs on the GPU: on (the ghost exchange before an apply runs beside the apply's "
                  "interior cells, which read no ghost value; the cells touching the cuts follow once the ghosts "
                  "arrived; the cuda-core kernels, the generic and tensor-core ones exchange first) or off (every "
                  "apply waits for its exchange)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
}

/// The exchange options named by --exchange (auto: none, the run's default path) and --exchange-overlap.
inline ExchangeOptions exchange_options(const std::string& exchange, const std::string& overlap) {
  ExchangeOptions e;
  if (exchange == "host-staged") e.path = ExchangePath::host_staged;
  if (exchange == "cuda-aware") e.path = ExchangePath::device_mpi;
  if (exchange == "cuda-ipc") e.path = ExchangePath::cuda_ipc;
  if (exchange == "nccl") e.path = ExchangePath::nccl;
  e.overlap = overlap == "on";
  return e;
}

}  // namespace tcfem::app
