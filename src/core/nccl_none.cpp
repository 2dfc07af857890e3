// Built without NCCL.
#include "core/communicator.h"

namespace tcfem {

bool nccl_available() { return false; }
std::string nccl_version() { return ""; }

}  // namespace tcfem
