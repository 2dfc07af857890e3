// The serial communicator of a build without MPI (TCFEM_WITH_MPI=OFF): one rank.
#include <cstdlib>

#include "core/communicator.h"

namespace tcfem {

bool mpi_available() { return false; }
std::string mpi_library_version() { return ""; }
bool mpi_device_aware() { return false; }
Communicator Communicator::world() { return Communicator(); }
Communicator Communicator::from_fortran_handle(int) {
  throw InputError("an MPI communicator was given, but this build of tcfem has no MPI (TCFEM_WITH_MPI=OFF)");
}
void Communicator::sum(double*, std::size_t) const {}
void Communicator::sum(float*, std::size_t) const {}
double Communicator::max(double v) const { return v; }
long long Communicator::max(long long v) const { return v; }
long long Communicator::min(long long v) const { return v; }
std::vector<double> Communicator::all_gather(double v) const { return {v}; }
void Communicator::broadcast(std::string&, int) const {}
void Communicator::barrier() const {}
void Communicator::exchange(const std::vector<Message>& receives, const std::vector<Message>& sends, int) const {
  TCFEM_ASSERT(receives.empty() && sends.empty(), "messages on a serial communicator");
}
void Communicator::abort(int code) const { std::exit(code); }
MpiSession::MpiSession(int&, char**&, bool) {}
MpiSession::~MpiSession() = default;

}  // namespace tcfem
