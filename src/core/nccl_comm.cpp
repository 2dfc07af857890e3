// NCCL communicators and grouped point-to-point messages on CUDA streams.
#include <nccl.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "core/cuda_check.h"
#include "core/nccl_comm.h"

namespace tcfem {
namespace {

void check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  std::string text = std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(nullptr); last && *last) text += std::string(" (") + last + ")";
  throw Error(text);
}

}  // namespace

struct NcclComm::Impl {
  ncclComm_t comm = nullptr;
};

bool nccl_available() { return true; }

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch (since 2.9)
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::shared_ptr<NcclComm> NcclComm::get(const Communicator& comm) {
  static std::mutex mutex;
  static std::vector<std::pair<Communicator, std::weak_ptr<NcclComm>>> made;
  std::lock_guard lock(mutex);
  for (auto& [c, w] : made)
    if (c == comm)
      if (auto p = w.lock()) return p;
  // rank 0's unique id, on every rank (an error on rank 0 reaches every rank)
  std::string id(sizeof(ncclUniqueId), '\0');
  collective(comm, [&] {
    if (comm.rank() == 0) {
      ncclUniqueId u;
      check(ncclGetUniqueId(&u), "ncclGetUniqueId");
      id.assign(reinterpret_cast<const char*>(&u), sizeof u);
    }
  });
  comm.broadcast(id, 0);
  ncclUniqueId u;
  std::copy(id.begin(), id.end(), reinterpret_cast<char*>(&u));
  auto p = std::shared_ptr<NcclComm>(new NcclComm());
  p->impl_ = std::make_unique<Impl>();
  collective(comm, [&] { check(ncclCommInitRank(&p->impl_->comm, comm.size(), u, comm.rank()), "ncclCommInitRank"); });
  std::erase_if(made, [](const auto& e) { return e.second.expired(); });
  made.emplace_back(comm, p);
  return p;
}

NcclComm::~NcclComm() {
  if (impl_ && impl_->comm) ncclCommDestroy(impl_->comm);  // no throw from a destructor
}

void NcclComm::exchange(const std::vector<Message>& receives, const std::vector<Message>& sends, bool fp32,
                        cudaStream_t stream) {
  const ncclDataType_t type = fp32 ? ncclFloat32 : ncclFloat64;
  check(ncclGroupStart(), "ncclGroupStart");
  for (const auto& m : receives)
    if (m.count) check(ncclRecv(m.data, m.count, type, m.rank, impl_->comm, stream), "ncclRecv");
  for (const auto& m : sends)
    if (m.count) check(ncclSend(m.data, m.count, type, m.rank, impl_->comm, stream), "ncclSend");
  check(ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace tcfem
