#pragma once
// The ghost exchange of vectors in device memory (the GPU side of core/vector.h's GhostLayout):
// owners' entries packed by a kernel, sent to the ranks that hold them as ghosts and unpacked by
// a kernel. Four paths: device buffers handed to a CUDA-aware MPI library; NCCL's point-to-point
// messages queued on a stream (stream-ordered: the host never waits for an exchange); between the
// ranks of one host, copies from device to device (CUDA IPC: each rank maps its neighbours'
// receive buffers and writes into them over NVLink or PCIe, with MPI messages only for the
// handshakes); or copies through pinned host buffers and MPI on the host. Usable without CUDA
// headers; built with the CUDA backend only.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/communicator.h"
#include "core/vector.h"

namespace tcfem {

enum class ExchangePath {
  host_staged,  ///< device -> pinned host buffers -> MPI -> pinned host buffers -> device
  device_mpi,   ///< device buffers in the MPI calls (a CUDA-aware MPI library)
  cuda_ipc,     ///< ranks of one host: device-to-device copies into the neighbours' mapped buffers
  nccl,         ///< NCCL send and receive queued on a stream (a build with NCCL)
};
const char* to_string(ExchangePath p);

/// How a distributed GPU run moves its ghost values: the path (none: default_exchange_path) and
/// whether the exchange before an operator apply runs beside the apply's interior cells (where the
/// operator splits its apply: DeviceOperator::split_apply).
struct ExchangeOptions {
  std::optional<ExchangePath> path;
  bool overlap = true;
};

/// The fastest path a run has: cuda_ipc where every rank is on one host (on two H200s as fast as
/// nccl, within 2%, docs/performance.md); else nccl in a build with NCCL; else device_mpi where the
/// MPI library reports CUDA support at run time (mpi_device_aware); else host_staged. Collective.
ExchangePath default_exchange_path(const Communicator& comm);
/// The path a run asked for (`requested`; none: default_exchange_path), checked: cuda_ipc needs
/// every rank on one host, device_mpi a CUDA-aware MPI library and nccl a build with NCCL
/// (InputError naming the option --exchange otherwise). Collective.
ExchangePath choose_exchange_path(const Communicator& comm, std::optional<ExchangePath> requested);

class DeviceGhostExchange {
 public:
  /// Collective over the layout's communicator (cuda_ipc: the ranks swap their buffers' handles;
  /// nccl: the first exchange of a communicator sets up its NCCL communicator).
  DeviceGhostExchange(const GhostLayout& layout, ExchangePath path);
  ~DeviceGhostExchange();
  DeviceGhostExchange(const DeviceGhostExchange&) = delete;
  DeviceGhostExchange& operator=(const DeviceGhostExchange&) = delete;

  /// Ghost entries of the device vector v (n_local doubles) get their owners' values. Ordered
  /// on the default stream: it waits for the work queued before it; the unpack is queued after.
  void update_ghosts(double* v);
  /// The same for a vector of floats (the messages carry floats).
  void update_ghosts(float* v);
  /// update_ghosts in two halves, for work that reads no ghost queued between them (the interior
  /// cells of an apply): begin_update queues the pack of v's owned entries on the default stream
  /// and returns; end_update waits for the pack only (not for the work queued after it), moves
  /// the messages (their device copies on a stream of their own) and queues the unpack on the
  /// default stream. Nothing may change v's owned entries in between. The nccl path waits for
  /// nothing: the messages are queued on the exchange's stream after the pack, the unpack after
  /// them, and both calls return at once.
  void begin_update(double* v);
  void begin_update(float* v);
  void end_update(double* v);
  void end_update(float* v);
  /// Device array of n_local bytes: 1 on owned entries, 0 on ghosts (masked dot products).
  const std::uint8_t* owned_mask() const;
  ExchangePath path() const;
  /// Bytes this rank sends in one update of a vector of doubles.
  std::size_t bytes_sent() const;
  int neighbours() const;
  /// Wall time in update_ghosts (begin_update and end_update) and its calls (nccl: the time to
  /// queue the work, which the host does not wait for).
  double seconds() const;
  long calls() const;

 private:
  template <typename T>
  void begin(T* v);
  template <typename T>
  void end(T* v);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcfem
