#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <cstdlib>
#include <limits>
#include <mutex>

#include "core/communicator.h"

namespace tcfem {
namespace {

MPI_Comm native(int handle) { return MPI_Comm_f2c(handle); }

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(std::string(what) + " failed: " + std::string(text, std::size_t(length)));
}

bool mpi_initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

}  // namespace

bool mpi_available() { return true; }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, std::size_t(length));
  if (const auto eol = s.find_first_of("\r\n,"); eol != std::string::npos) s.resize(eol);
  while (!s.empty() && (s.back() == ',' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

bool mpi_device_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return mpi_initialized() && MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

Communicator Communicator::world() {
  if (!mpi_initialized()) return Communicator();
  // made once MPI runs (the split into hosts is a collective call: every rank makes it together)
  static std::once_flag once;
  static Communicator w;
  std::call_once(once, [] { w = from_fortran_handle(MPI_Comm_c2f(MPI_COMM_WORLD)); });
  return w;
}

Communicator Communicator::from_fortran_handle(int handle) {
  if (!mpi_initialized())
    throw InputError("an MPI communicator was given, but MPI is not initialized (call MPI_Init first)");
  const MPI_Comm comm = MPI_Comm_f2c(handle);
  if (comm == MPI_COMM_NULL) throw InputError("the MPI communicator is MPI_COMM_NULL");
  Communicator c;
  c.handle_ = handle;
  check(MPI_Comm_rank(comm, &c.rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &c.size_), "MPI_Comm_size");
  MPI_Comm local;
  check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, c.rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  MPI_Comm_rank(local, &c.local_rank_);
  MPI_Comm_size(local, &c.local_size_);
  MPI_Comm_free(&local);
  return c;
}

void Communicator::sum(double* values, std::size_t n) const {
  if (!distributed() || n == 0) return;
  TCFEM_ASSERT(n <= std::size_t(std::numeric_limits<int>::max()), "reduction too long");
  check(MPI_Allreduce(MPI_IN_PLACE, values, int(n), MPI_DOUBLE, MPI_SUM, native(handle_)), "MPI_Allreduce");
}

void Communicator::sum(float* values, std::size_t n) const {
  if (!distributed() || n == 0) return;
  TCFEM_ASSERT(n <= std::size_t(std::numeric_limits<int>::max()), "reduction too long");
  check(MPI_Allreduce(MPI_IN_PLACE, values, int(n), MPI_FLOAT, MPI_SUM, native(handle_)), "MPI_Allreduce");
}

double Communicator::max(double v) const {
  if (!distributed()) return v;
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, native(handle_)), "MPI_Allreduce");
  return v;
}

long long Communicator::max(long long v) const {
  if (!distributed()) return v;
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_MAX, native(handle_)), "MPI_Allreduce");
  return v;
}

long long Communicator::min(long long v) const {
  if (!distributed()) return v;
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_MIN, native(handle_)), "MPI_Allreduce");
  return v;
}

std::vector<double> Communicator::all_gather(double v) const {
  std::vector<double> out(std::size_t(size_), v);
  if (!distributed()) return out;
  check(MPI_Allgather(&v, 1, MPI_DOUBLE, out.data(), 1, MPI_DOUBLE, native(handle_)), "MPI_Allgather");
  return out;
}

void Communicator::broadcast(std::string& text, int root) const {
  if (!distributed()) return;
  long long n = static_cast<long long>(text.size());
  check(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, native(handle_)), "MPI_Bcast");
  text.resize(std::size_t(n));
  if (n > 0) check(MPI_Bcast(text.data(), int(n), MPI_CHAR, root, native(handle_)), "MPI_Bcast");
}

void Communicator::barrier() const {
  if (distributed()) check(MPI_Barrier(native(handle_)), "MPI_Barrier");
}

void Communicator::exchange(const std::vector<Message>& receives, const std::vector<Message>& sends, int tag) const {
  if (!distributed()) {
    TCFEM_ASSERT(receives.empty() && sends.empty(), "messages on a serial communicator");
    return;
  }
  std::vector<MPI_Request> requests;
  requests.reserve(receives.size() + sends.size());
  for (const auto& m : receives) {
    TCFEM_ASSERT(m.bytes <= std::size_t(std::numeric_limits<int>::max()), "message too long");
    requests.emplace_back();
    check(MPI_Irecv(m.data, int(m.bytes), MPI_BYTE, m.rank, tag, native(handle_), &requests.back()), "MPI_Irecv");
  }
  for (const auto& m : sends) {
    TCFEM_ASSERT(m.bytes <= std::size_t(std::numeric_limits<int>::max()), "message too long");
    requests.emplace_back();
    check(MPI_Isend(m.data, int(m.bytes), MPI_BYTE, m.rank, tag, native(handle_), &requests.back()), "MPI_Isend");
  }
  check(MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

void Communicator::abort(int code) const {
  if (distributed()) MPI_Abort(native(handle_), code);
  std::exit(code);
}

MpiSession::MpiSession(int& argc, char**& argv, bool enable) {
  if (!enable || mpi_initialized()) return;
  int provided = 0;
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // errors come back as codes, checked by every call (no abort inside the library)
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  initialized_ = true;
}

MpiSession::~MpiSession() {
  if (initialized_ && mpi_initialized()) MPI_Finalize();
}

}  // namespace tcfem
