#pragma once
// The processes of a distributed run (MPI ranks) and the collective operations the layers above
// need: reductions of Krylov dot products and error integrals, the point-to-point messages of the
// ghost exchange (fe/dof_exchange.h), and error agreement, so that an error raised on some ranks
// reaches every rank instead of leaving the others waiting in a collective.
// Built without MPI (TCFEM_WITH_MPI=OFF) every communicator is the serial one: one rank, and the
// operations are copies or nothing.
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"

namespace tcfem {

/// Whether this build of tcfem has MPI.
bool mpi_available();
/// The MPI library's version line ("" without MPI).
std::string mpi_library_version();
/// Whether the MPI library takes device (GPU) buffers in its messages (CUDA-aware MPI), as the
/// library itself reports at run time (Open MPI: MPIX_Query_cuda_support); false without MPI.
bool mpi_device_aware();
/// Whether this build of tcfem has NCCL (the stream-ordered ghost exchange of distributed GPU
/// runs, core/nccl_comm.h), and the NCCL library's version at run time ("" without NCCL).
bool nccl_available();
std::string nccl_version();

class Communicator {
 public:
  /// The serial communicator: one rank.
  Communicator() = default;
  /// MPI_COMM_WORLD when MPI is initialized (MpiSession), else the serial communicator.
  static Communicator world();
  /// The communicator of a Fortran handle (MPI_Comm_c2f), for callers that hold their own
  /// communicator (the public API). Collective over its ranks. Throws InputError without MPI in
  /// the build, before MPI_Init, or for MPI_COMM_NULL.
  static Communicator from_fortran_handle(int handle);

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// The rank among the ranks of the same host (the GPU a rank takes), and their number.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  bool distributed() const { return size_ > 1; }
  bool operator==(const Communicator& o) const { return handle_ == o.handle_ && size_ == o.size_; }

  /// In-place sums over the ranks.
  void sum(double* values, std::size_t n) const;
  void sum(float* values, std::size_t n) const;
  double sum(double v) const {
    sum(&v, 1);
    return v;
  }
  double max(double v) const;
  long long max(long long v) const;
  long long min(long long v) const;
  /// Every rank's value, indexed by rank.
  std::vector<double> all_gather(double v) const;
  /// Every rank gets `text` of rank `root`.
  void broadcast(std::string& text, int root) const;
  void barrier() const;

  /// One message of a neighbour exchange: `bytes` at `data` to or from rank `rank`.
  struct Message {
    int rank = 0;
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  /// Posts every receive, then every send, and waits for all of them (nonblocking point-to-point;
  /// the messages of one pair of ranks match in the order given).
  void exchange(const std::vector<Message>& receives, const std::vector<Message>& sends, int tag) const;

  /// Ends every rank's process with `code` (MPI_Abort): the last resort for an error that not
  /// every rank saw, so that none waits forever.
  [[noreturn]] void abort(int code) const;

 private:
  int handle_ = -1;  // the communicator's Fortran handle (MPI_Comm_c2f); -1: serial
  int rank_ = 0, size_ = 1;
  int local_rank_ = 0, local_size_ = 1;
  friend class MpiSession;
};

/// MPI for the life of a process (the command-line tool's main): MPI_Init_thread on construction,
/// MPI_Finalize on destruction. Without MPI in the build, or when `enable` is false, nothing.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv, bool enable);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool initialized_ = false;
};

/// An error that every rank raised together (through `collective`): every rank may exit with it,
/// no rank waits for another.
class CollectiveInputError : public InputError {
 public:
  using InputError::InputError;
};
class CollectiveError : public Error {
 public:
  using Error::Error;
};

/// Runs f on every rank of comm. When f throws on any rank, every rank throws the error of the
/// lowest failing rank (an InputError as CollectiveInputError, anything else as CollectiveError),
/// so that a failure on some ranks (a cell with det J <= 0 in one sub-box, a coefficient <= 0 at
/// one point) ends every rank instead of leaving the others waiting. Serial: f's own exception.
template <typename F>
void collective(const Communicator& comm, F&& f) {
  if (!comm.distributed()) {
    f();
    return;
  }
  long long code = 0;
  std::string message;
  try {
    f();
  } catch (const InputError& e) {
    code = 2;
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = 1;
    message = "out of memory";
  } catch (const std::exception& e) {
    code = 1;
    message = e.what();
  }
  const long long worst = comm.max(code);
  if (worst == 0) return;
  // the message of the lowest rank that failed with the worst code
  const long long root = comm.min(code == worst ? comm.rank() : comm.size());
  comm.broadcast(message, int(root));
  // name the rank where not every rank failed
  if (comm.sum(code != 0 ? 1.0 : 0.0) < double(comm.size())) message = "rank " + std::to_string(root) + ": " + message;
  if (worst == 2) throw CollectiveInputError(message);
  throw CollectiveError(message);
}

}  // namespace tcfem
