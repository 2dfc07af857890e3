#pragma once
// NCCL point-to-point messages between the GPUs of a distributed run, queued on CUDA streams: the
// ghost exchange's stream-ordered path (core/device_exchange.h). One NCCL communicator per MPI
// communicator, made collectively on first use (rank 0's unique id broadcast over MPI) and shared
// by every exchange that holds it. Built with NCCL where CMake finds it (TCFEM_WITH_NCCL); without
// it nccl_available() (core/communicator.h) is false and NcclComm::get throws.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"

namespace tcfem {

class NcclComm {
 public:
  /// The NCCL communicator of comm's ranks (each on its current CUDA device): made on the first
  /// call, collectively over comm, and kept while a caller holds it. Throws Error without NCCL in
  /// the build or when NCCL fails to set up.
  static std::shared_ptr<NcclComm> get(const Communicator& comm);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// One message: `count` entries at `data` (device memory) to or from rank `rank`.
  struct Message {
    int rank = 0;
    void* data = nullptr;
    std::size_t count = 0;
  };
  /// Queues every receive and send on `stream` as one group (entries of 4 bytes, floats, when
  /// fp32, else doubles); returns without waiting for them. Every pair of ranks must queue their
  /// messages to each other in the same order. Messages of no entries are left out.
  void exchange(const std::vector<Message>& receives, const std::vector<Message>& sends, bool fp32,
                cudaStream_t stream);

 private:
  NcclComm() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcfem
