#include <algorithm>
#include <chrono>
#include <vector>

#include "core/communicator.h"
#include "core/device_buffer.h"
#include "core/device_exchange.h"
#include "core/nccl_comm.h"

namespace tcfem {
namespace {

template <typename T>
__global__ void gather(const T* v, const std::int64_t* idx, std::int64_t n, T* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = v[idx[i]];
}

template <typename T>
__global__ void scatter(const T* in, const std::int64_t* idx, std::int64_t n, T* v) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    v[idx[i]] = in[i];
}

int grid_for(std::int64_t n) { return int(std::min<std::int64_t>((n + 255) / 256, 4096)); }

}  // namespace

const char* to_string(ExchangePath p) {
  switch (p) {
    case ExchangePath::device_mpi: return "CUDA-aware MPI (device buffers)";
    case ExchangePath::cuda_ipc: return "CUDA IPC (device-to-device copies between the ranks of one host)";
    case ExchangePath::nccl: {
      static const std::string text = "NCCL " + nccl_version() + " (send and receive queued on a stream)";
      return text.c_str();
    }
    default: return "MPI on the host (staged through pinned buffers)";
  }
}

ExchangePath default_exchange_path(const Communicator& comm) {
  // every rank on one host (the same answer on every rank)
  if (comm.min(static_cast<long long>(comm.local_size() == comm.size())) == 1) return ExchangePath::cuda_ipc;
  if (nccl_available()) return ExchangePath::nccl;
  if (mpi_device_aware()) return ExchangePath::device_mpi;
  return ExchangePath::host_staged;
}

ExchangePath choose_exchange_path(const Communicator& comm, std::optional<ExchangePath> requested) {
  const ExchangePath path = requested ? *requested : default_exchange_path(comm);
  if (path == ExchangePath::cuda_ipc && comm.min(static_cast<long long>(comm.local_size() == comm.size())) == 0)
    throw InputError("--exchange cuda-ipc: the ranks run on more than one host; use --exchange auto");
  if (path == ExchangePath::device_mpi && !mpi_device_aware())
    throw InputError("--exchange cuda-aware: the MPI library (" + mpi_library_version() +
                     ") reports no CUDA support; use --exchange host-staged or auto");
  if (path == ExchangePath::nccl && !nccl_available())
    throw InputError("--exchange nccl: this build of tcfem has no NCCL (it was not found when tcfem was configured); "
                     "use --exchange auto");
  return path;
}

struct DeviceGhostExchange::Impl {
  Communicator comm;
  ExchangePath path;
  std::vector<int> recv_rank, send_rank;
  std::vector<std::size_t> recv_offset, send_offset;  // per neighbour, and the total at the end
  DeviceBuffer<std::int64_t> recv_idx, send_idx;
  DeviceBuffer<double> recv_buf, send_buf;
  DeviceBuffer<std::uint8_t> mask;
  PinnedBuffer<double> recv_host, send_host;
  // cuda_ipc: each send neighbour's receive buffer mapped here (its base, to close) and where this
  // rank's part starts (in entries of the vector's type: a float exchange uses the first half of
  // the same buffers)
  std::vector<void*> mapped;
  std::vector<std::uint64_t> remote_offset;
  // nccl: the run's NCCL communicator, and the messages' completion on the copies stream
  std::shared_ptr<NcclComm> nccl;
  cudaEvent_t received = nullptr;
  // the pack's completion, and the stream of the device copies (not synchronized with the
  // default stream, so that the copies pass the work queued after the pack)
  cudaEvent_t packed = nullptr;
  cudaStream_t copies = nullptr;
  double seconds = 0.0;
  long calls = 0;
  ~Impl() {
    for (void* p : mapped) cudaIpcCloseMemHandle(p);
    if (packed) cudaEventDestroy(packed);
    if (received) cudaEventDestroy(received);
    if (copies) cudaStreamDestroy(copies);
  }
};

namespace {
/// What a rank tells each rank that sends to it: its receive buffer's handle and where in it that
/// sender's entries go.
struct IpcOffer {
  cudaIpcMemHandle_t handle;
  std::uint64_t offset = 0;
  std::uint64_t valid = 0;
};
}  // namespace

DeviceGhostExchange::DeviceGhostExchange(const GhostLayout& layout, ExchangePath path) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.comm = layout.communicator();
  m.path = path;
  const auto& plan = layout.plan();
  std::vector<std::int64_t> r, s;
  for (const auto& n : plan.receives) {
    m.recv_rank.push_back(n.rank);
    m.recv_offset.push_back(r.size());
    r.insert(r.end(), n.indices.begin(), n.indices.end());
  }
  m.recv_offset.push_back(r.size());
  for (const auto& n : plan.sends) {
    m.send_rank.push_back(n.rank);
    m.send_offset.push_back(s.size());
    s.insert(s.end(), n.indices.begin(), n.indices.end());
  }
  m.send_offset.push_back(s.size());
  m.recv_idx = DeviceBuffer<std::int64_t>(r);
  m.send_idx = DeviceBuffer<std::int64_t>(s);
  m.recv_buf.allocate(r.size());
  m.send_buf.allocate(s.size());
  if (path == ExchangePath::host_staged) {
    m.recv_host.allocate(r.size());
    m.send_host.allocate(s.size());
  }
  if (path == ExchangePath::cuda_ipc) {
    // a receive buffer for every rank at least (cudaIpcGetMemHandle needs an allocation)
    if (r.empty()) m.recv_buf.allocate(1);
    std::vector<IpcOffer> offers(m.recv_rank.size()), taken(m.send_rank.size());
    cudaIpcMemHandle_t handle{};
    TCFEM_CUDA_CHECK(cudaIpcGetMemHandle(&handle, m.recv_buf.data()));
    for (std::size_t i = 0; i < offers.size(); ++i) offers[i] = {handle, m.recv_offset[i], 1};
    std::vector<Communicator::Message> recvs, sends;
    for (std::size_t i = 0; i < taken.size(); ++i) recvs.push_back({m.send_rank[i], &taken[i], sizeof(IpcOffer)});
    for (std::size_t i = 0; i < offers.size(); ++i) sends.push_back({m.recv_rank[i], &offers[i], sizeof(IpcOffer)});
    m.comm.exchange(recvs, sends, 204);
    for (const auto& t : taken) {
      TCFEM_ASSERT(t.valid == 1, "CUDA IPC: a neighbour sent no buffer");
      void* base = nullptr;
      TCFEM_CUDA_CHECK(cudaIpcOpenMemHandle(&base, t.handle, cudaIpcMemLazyEnablePeerAccess));
      m.mapped.push_back(base);
      m.remote_offset.push_back(t.offset);
    }
  }
  if (path == ExchangePath::nccl) {
    m.nccl = NcclComm::get(m.comm);
    TCFEM_CUDA_CHECK(cudaEventCreateWithFlags(&m.received, cudaEventDisableTiming));
  }
  TCFEM_CUDA_CHECK(cudaEventCreateWithFlags(&m.packed, cudaEventDisableTiming));
  TCFEM_CUDA_CHECK(cudaStreamCreateWithFlags(&m.copies, cudaStreamNonBlocking));
  std::vector<std::uint8_t> mask(layout.n_local(), 1);
  for (const auto g : plan.ghosts) mask[std::size_t(g)] = 0;
  m.mask = DeviceBuffer<std::uint8_t>(mask);
}

DeviceGhostExchange::~DeviceGhostExchange() = default;

template <typename T>
void DeviceGhostExchange::begin(T* v) {
  auto& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t ns = std::int64_t(m.send_offset.back());
  if (ns > 0) {
    gather<<<grid_for(ns), 256>>>(v, m.send_idx.data(), ns, reinterpret_cast<T*>(m.send_buf.data()));
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  // also marks this rank's earlier unpacks (queued before) done: its receive buffer is free then
  TCFEM_CUDA_CHECK(cudaEventRecord(m.packed, 0));
  m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename T>
void DeviceGhostExchange::end(T* v) {
  auto& m = *impl_;
  T* send_buf = reinterpret_cast<T*>(m.send_buf.data());
  T* recv_buf = reinterpret_cast<T*>(m.recv_buf.data());
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t nr = std::int64_t(m.recv_offset.back()), ns = std::int64_t(m.send_offset.back());
  auto unpack = [&] {
    if (nr > 0) {
      scatter<<<grid_for(nr), 256>>>(recv_buf, m.recv_idx.data(), nr, v);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
    m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++m.calls;
  };
  if (m.path == ExchangePath::nccl) {
    // stream-ordered: the messages after the pack (and this rank's earlier unpacks, so the receive
    // buffer is free), the unpack after the messages (so the send buffer is free for the next pack)
    std::vector<NcclComm::Message> recvs, sends;
    for (std::size_t i = 0; i < m.recv_rank.size(); ++i)
      recvs.push_back({m.recv_rank[i], recv_buf + m.recv_offset[i], m.recv_offset[i + 1] - m.recv_offset[i]});
    for (std::size_t i = 0; i < m.send_rank.size(); ++i)
      sends.push_back({m.send_rank[i], send_buf + m.send_offset[i], m.send_offset[i + 1] - m.send_offset[i]});
    TCFEM_CUDA_CHECK(cudaStreamWaitEvent(m.copies, m.packed, 0));
    m.nccl->exchange(recvs, sends, sizeof(T) == 4, m.copies);
    TCFEM_CUDA_CHECK(cudaEventRecord(m.received, m.copies));
    TCFEM_CUDA_CHECK(cudaStreamWaitEvent(0, m.received, 0));
    unpack();
    return;
  }
  TCFEM_CUDA_CHECK(cudaEventSynchronize(m.packed));
  if (m.path == ExchangePath::cuda_ipc) {
    // handshake: each rank's receive buffer is free (its earlier unpacks finished before its pack)
    std::vector<char> ready_in(m.send_rank.size()), ready_out(m.recv_rank.size(), 1);
    std::vector<Communicator::Message> recvs, sends;
    for (std::size_t i = 0; i < m.send_rank.size(); ++i) recvs.push_back({m.send_rank[i], &ready_in[i], 1});
    for (std::size_t i = 0; i < m.recv_rank.size(); ++i) sends.push_back({m.recv_rank[i], &ready_out[i], 1});
    m.comm.exchange(recvs, sends, 202);
    for (std::size_t i = 0; i < m.send_rank.size(); ++i) {
      const std::size_t count = m.send_offset[i + 1] - m.send_offset[i];
      if (count)
        TCFEM_CUDA_CHECK(cudaMemcpyAsync(static_cast<T*>(m.mapped[i]) + m.remote_offset[i],
                                         send_buf + m.send_offset[i], count * sizeof(T), cudaMemcpyDeviceToDevice,
                                         m.copies));
    }
    TCFEM_CUDA_CHECK(cudaStreamSynchronize(m.copies));  // written into the neighbours' buffers
    // handshake: the data is there
    std::vector<char> done_in(m.recv_rank.size()), done_out(m.send_rank.size(), 1);
    recvs.clear();
    sends.clear();
    for (std::size_t i = 0; i < m.recv_rank.size(); ++i) recvs.push_back({m.recv_rank[i], &done_in[i], 1});
    for (std::size_t i = 0; i < m.send_rank.size(); ++i) sends.push_back({m.send_rank[i], &done_out[i], 1});
    m.comm.exchange(recvs, sends, 203);
    unpack();
    return;
  }
  const bool staged = m.path == ExchangePath::host_staged;
  T* send = staged ? reinterpret_cast<T*>(m.send_host.data()) : send_buf;
  T* recv = staged ? reinterpret_cast<T*>(m.recv_host.data()) : recv_buf;
  if (staged && ns > 0) {
    TCFEM_CUDA_CHECK(cudaMemcpyAsync(send, send_buf, ns * sizeof(T), cudaMemcpyDeviceToHost, m.copies));
    TCFEM_CUDA_CHECK(cudaStreamSynchronize(m.copies));
  }
  std::vector<Communicator::Message> recvs, sends;
  for (std::size_t i = 0; i < m.recv_rank.size(); ++i)
    recvs.push_back({m.recv_rank[i], recv + m.recv_offset[i], (m.recv_offset[i + 1] - m.recv_offset[i]) * sizeof(T)});
  for (std::size_t i = 0; i < m.send_rank.size(); ++i)
    sends.push_back({m.send_rank[i], send + m.send_offset[i], (m.send_offset[i + 1] - m.send_offset[i]) * sizeof(T)});
  m.comm.exchange(recvs, sends, 201);
  if (staged && nr > 0) {
    TCFEM_CUDA_CHECK(cudaMemcpyAsync(recv_buf, recv, nr * sizeof(T), cudaMemcpyHostToDevice, m.copies));
    TCFEM_CUDA_CHECK(cudaStreamSynchronize(m.copies));
  }
  unpack();
}

void DeviceGhostExchange::update_ghosts(double* v) {
  begin(v);
  end(v);
}
void DeviceGhostExchange::update_ghosts(float* v) {
  begin(v);
  end(v);
}
void DeviceGhostExchange::begin_update(double* v) { begin(v); }
void DeviceGhostExchange::begin_update(float* v) { begin(v); }
void DeviceGhostExchange::end_update(double* v) { end(v); }
void DeviceGhostExchange::end_update(float* v) { end(v); }

const std::uint8_t* DeviceGhostExchange::owned_mask() const { return impl_->mask.data(); }
ExchangePath DeviceGhostExchange::path() const { return impl_->path; }
std::size_t DeviceGhostExchange::bytes_sent() const { return impl_->send_offset.back() * sizeof(double); }
int DeviceGhostExchange::neighbours() const {
  std::vector<int> all = impl_->recv_rank;
  all.insert(all.end(), impl_->send_rank.begin(), impl_->send_rank.end());
  std::sort(all.begin(), all.end());
  return int(std::unique(all.begin(), all.end()) - all.begin());
}
double DeviceGhostExchange::seconds() const { return impl_->seconds; }
long DeviceGhostExchange::calls() const { return impl_->calls; }

}  // namespace tcfem
