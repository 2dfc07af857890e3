// Built without NCCL: no NCCL communicator.
#include "core/nccl_comm.h"

namespace tcfem {

struct NcclComm::Impl {};

std::shared_ptr<NcclComm> NcclComm::get(const Communicator&) {
  throw Error("this build of tcfem has no NCCL (configure with NCCL's nccl.h and libnccl found: TCFEM_WITH_NCCL)");
}
NcclComm::~NcclComm() = default;
void NcclComm::exchange(const std::vector<Message>&, const std::vector<Message>&, bool, cudaStream_t) {
  throw Error("this build of tcfem has no NCCL");
}

}  // namespace tcfem
