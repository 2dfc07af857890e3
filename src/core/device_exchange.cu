#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
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

// ---- cuda_ipc_stream: the kernels move the messages and signal through flags in device memory
// Every update of an exchange has a sequence number s (1, 2, ...; both sides count alike). A
// sender's pack waits until each receiver has unpacked message s - 1 (its `consumed` flag, in the
// sender's memory, written by the receiver), writes its entries straight into the receivers'
// mapped buffers and, once every block has written, sets each receiver's `ready` flag to s (in the
// receiver's memory). A receiver's unpack waits until every sender's `ready` flag reaches s, reads
// its buffer, and, once every block has read, sets each sender's `consumed` flag to s. Flags are
// written with release and read with acquire semantics at system scope; a wait longer than
// stream_ipc_timeout_ns traps (a neighbour that never signals ends the run with an error instead
// of a hang).

constexpr int max_ipc_neighbours = 26;  // a sub-box of a 3D box meets at most 26 others
constexpr unsigned long long stream_ipc_timeout_ns = 60ull * 1000 * 1000 * 1000;

struct StreamIpcArgs {
  int n_send = 0, n_recv = 0;
  unsigned long long seq = 0;
  // sends: the receivers' buffers (base, where this rank's entries start in entries of the
  // vector's type), their ready flags, and where each neighbour's entries start in the send list
  char* remote_data[max_ipc_neighbours] = {};
  long long remote_offset[max_ipc_neighbours] = {};
  unsigned long long* remote_ready[max_ipc_neighbours] = {};
  long long send_begin[max_ipc_neighbours + 1] = {};
  // receives: the senders' consumed flags
  unsigned long long* remote_consumed[max_ipc_neighbours] = {};
  // this rank's flags: ready[n_recv], consumed[n_send]; block counters of the pack and the unpack
  unsigned long long* ready = nullptr;
  unsigned long long* consumed = nullptr;
  unsigned* counters = nullptr;
};

__device__ inline unsigned long long load_acquire_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ inline void store_release_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ inline unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Waits until *flag >= value (thread 0 of a block); traps after the timeout.
__device__ inline void wait_flag(const unsigned long long* flag, unsigned long long value, const char* what) {
  if (load_acquire_sys(flag) >= value) return;
  const unsigned long long start = global_timer_ns();
  while (load_acquire_sys(flag) < value) {
    __nanosleep(100);
    if (global_timer_ns() - start > stream_ipc_timeout_ns) {
      printf("tcfem: the CUDA IPC exchange waited %llu s for a neighbour's %s signal of update %llu\n",
             stream_ipc_timeout_ns / 1000000000ull, what, value);
      __trap();
    }
  }
}

/// Whether this block is the last of the grid to pass (counter reset for the next launch); thread 0.
__device__ inline bool last_block(unsigned* counter) {
  __threadfence_system();
  const unsigned done = atomicAdd(counter, 1u);
  if (done != gridDim.x - 1) return false;
  *counter = 0;
  __threadfence_system();
  return true;
}

template <typename T>
__global__ void stream_ipc_pack(const T* v, const std::int64_t* idx, std::int64_t n, StreamIpcArgs a) {
  if (threadIdx.x == 0)
    for (int i = 0; i < a.n_send; ++i) wait_flag(a.consumed + i, a.seq - 1, "consumed");
  __syncthreads();
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x) {
    int s = 0;
    while (j >= a.send_begin[s + 1]) ++s;
    T* out = reinterpret_cast<T*>(a.remote_data[s]) + a.remote_offset[s] + (j - a.send_begin[s]);
    *out = v[idx[j]];
  }
  __threadfence_system();  // this thread's writes before the signal
  __syncthreads();
  if (threadIdx.x == 0 && last_block(a.counters))
    for (int i = 0; i < a.n_send; ++i) store_release_sys(a.remote_ready[i], a.seq);
}

template <typename T>
__global__ void stream_ipc_unpack(const T* in, const std::int64_t* idx, std::int64_t n, T* v, StreamIpcArgs a) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < a.n_recv; ++i) wait_flag(a.ready + i, a.seq, "ready");
    __threadfence();
  }
  __syncthreads();
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x)
    v[idx[j]] = __ldcg(in + j);  // written by another GPU: past L1
  __threadfence_system();  // this thread's reads of the buffer before the signal
  __syncthreads();
  if (threadIdx.x == 0 && last_block(a.counters + 1))
    for (int i = 0; i < a.n_recv; ++i) store_release_sys(a.remote_consumed[i], a.seq);
}

}  // namespace

const char* to_string(ExchangePath p) {
  switch (p) {
    case ExchangePath::device_mpi: return "CUDA-aware MPI (device buffers)";
    case ExchangePath::cuda_ipc: return "CUDA IPC (device-to-device copies between the ranks of one host)";
    case ExchangePath::cuda_ipc_stream:
      return "CUDA IPC, stream-ordered (kernels write into the neighbours' buffers and signal through device flags)";
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
  if ((path == ExchangePath::cuda_ipc || path == ExchangePath::cuda_ipc_stream) &&
      comm.min(static_cast<long long>(comm.local_size() == comm.size())) == 0)
    throw InputError(std::string("--exchange ") +
                     (path == ExchangePath::cuda_ipc ? "cuda-ipc" : "cuda-ipc-stream") +
                     ": the ranks run on more than one host; use --exchange auto");
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
  // cuda_ipc_stream: the kernels' arguments but for the sequence number (this rank's flags
  // ready[n_recv], consumed[n_send] and two block counters in a pool slot), and the update count
  StreamIpcArgs stream_args;
  unsigned long long seq = 0;
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

/// cuda_ipc_stream: what a rank tells each neighbour: the handles of its receive buffer and of its
/// flags, where the neighbour's entries go in the buffer and its ready slot (if the neighbour
/// sends to it), and the slot of the neighbour's consumed flag (if it sends to the neighbour).
struct StreamIpcOffer {
  cudaIpcMemHandle_t data, flags;  // flags: the pool holding this rank's flags, which start at flags_offset
  std::int64_t flags_offset = 0, offset = -1, ready_slot = -1, consumed_slot = -1;
  std::uint64_t valid = 0;
};

/// cuda_ipc_stream's flags come from pools that live as long as the process: a neighbour may still
/// set a flag (its last `consumed` signal) after the exchange that used the slot is gone, so slots
/// are never handed out twice and pools never freed. Pools are zeroed when made.
struct FlagPool {
  unsigned long long* base = nullptr;
  std::size_t used = 0, capacity = 0;
  cudaIpcMemHandle_t handle{};
};

/// n zeroed flags of this process's current pool (a new pool where it is full): the device
/// pointer, the pool's handle and the slots' offset in it.
unsigned long long* allocate_flags(std::size_t n, cudaIpcMemHandle_t& handle, std::int64_t& offset) {
  static std::mutex mutex;
  static std::vector<FlagPool> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  if (pools.empty() || pools.back().used + n > pools.back().capacity) {
    FlagPool p;
    p.capacity = std::max<std::size_t>(std::size_t(1) << 16, n);
    void* ptr = nullptr;
    TCFEM_CUDA_CHECK(cudaMalloc(&ptr, p.capacity * sizeof(unsigned long long)));
    p.base = static_cast<unsigned long long*>(ptr);
    TCFEM_CUDA_CHECK(cudaMemset(p.base, 0, p.capacity * sizeof(unsigned long long)));
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    TCFEM_CUDA_CHECK(cudaIpcGetMemHandle(&p.handle, p.base));
    pools.push_back(p);
  }
  FlagPool& p = pools.back();
  handle = p.handle;
  offset = std::int64_t(p.used);
  p.used += n;
  return p.base + offset;
}

/// A neighbour's flag pool mapped into this process (once per pool: a handle opens only once).
unsigned long long* mapped_flags(const cudaIpcMemHandle_t& handle) {
  static std::mutex mutex;
  static std::vector<std::pair<cudaIpcMemHandle_t, void*>> opened;
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [h, base] : opened)
    if (std::memcmp(&h, &handle, sizeof handle) == 0) return static_cast<unsigned long long*>(base);
  void* base = nullptr;
  TCFEM_CUDA_CHECK(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess));
  opened.emplace_back(handle, base);
  return static_cast<unsigned long long*>(base);
}

int index_of(const std::vector<int>& ranks, int r) {
  const auto it = std::find(ranks.begin(), ranks.end(), r);
  return it == ranks.end() ? -1 : int(it - ranks.begin());
}
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
  if (path == ExchangePath::cuda_ipc_stream) {
    const int n_recv = int(m.recv_rank.size()), n_send = int(m.send_rank.size());
    if (n_recv > max_ipc_neighbours || n_send > max_ipc_neighbours)
      throw Error("CUDA IPC exchange: more than " + std::to_string(max_ipc_neighbours) + " neighbours");
    if (r.empty()) m.recv_buf.allocate(1);
    // the two 32-bit block counters share the last word
    cudaIpcMemHandle_t flags_handle{};
    std::int64_t flags_offset = 0;
    unsigned long long* flags = allocate_flags(std::size_t(n_recv + n_send + 1), flags_handle, flags_offset);
    std::vector<int> nbrs = m.recv_rank;
    nbrs.insert(nbrs.end(), m.send_rank.begin(), m.send_rank.end());
    std::sort(nbrs.begin(), nbrs.end());
    nbrs.erase(std::unique(nbrs.begin(), nbrs.end()), nbrs.end());
    cudaIpcMemHandle_t data_handle{};
    TCFEM_CUDA_CHECK(cudaIpcGetMemHandle(&data_handle, m.recv_buf.data()));
    std::vector<StreamIpcOffer> out(nbrs.size()), in(nbrs.size());
    for (std::size_t j = 0; j < nbrs.size(); ++j) {
      auto& o = out[j];
      o.data = data_handle;
      o.flags = flags_handle;
      o.flags_offset = flags_offset;
      o.valid = 1;
      if (const int i = index_of(m.recv_rank, nbrs[j]); i >= 0) {
        o.offset = std::int64_t(m.recv_offset[std::size_t(i)]);
        o.ready_slot = i;
      }
      if (const int i = index_of(m.send_rank, nbrs[j]); i >= 0) o.consumed_slot = n_recv + i;
    }
    std::vector<Communicator::Message> recvs, sends;
    for (std::size_t j = 0; j < nbrs.size(); ++j) {
      recvs.push_back({nbrs[j], &in[j], sizeof(StreamIpcOffer)});
      sends.push_back({nbrs[j], &out[j], sizeof(StreamIpcOffer)});
    }
    m.comm.exchange(recvs, sends, 205);
    auto& a = m.stream_args;
    a.n_send = n_send;
    a.n_recv = n_recv;
    a.ready = flags;
    a.consumed = flags + n_recv;
    a.counters = reinterpret_cast<unsigned*>(flags + n_recv + n_send);
    for (std::size_t j = 0; j < nbrs.size(); ++j) {
      const auto& t = in[j];
      TCFEM_ASSERT(t.valid == 1, "CUDA IPC: a neighbour sent no buffer");
      unsigned long long* remote_flags = mapped_flags(t.flags) + t.flags_offset;
      if (const int i = index_of(m.send_rank, nbrs[j]); i >= 0) {  // this rank sends to neighbour j
        TCFEM_ASSERT(t.offset >= 0 && t.ready_slot >= 0, "CUDA IPC: a receiver offered no slot");
        void* data_base = nullptr;
        TCFEM_CUDA_CHECK(cudaIpcOpenMemHandle(&data_base, t.data, cudaIpcMemLazyEnablePeerAccess));
        m.mapped.push_back(data_base);
        a.remote_data[i] = static_cast<char*>(data_base);
        a.remote_offset[i] = t.offset;
        a.remote_ready[i] = remote_flags + t.ready_slot;
      }
      if (const int i = index_of(m.recv_rank, nbrs[j]); i >= 0) {  // and receives from it
        TCFEM_ASSERT(t.consumed_slot >= 0, "CUDA IPC: a sender offered no slot");
        a.remote_consumed[i] = remote_flags + t.consumed_slot;
      }
    }
    for (int i = 0; i <= n_send; ++i) a.send_begin[i] = std::int64_t(m.send_offset[std::size_t(i)]);
    m.comm.barrier();  // every rank's flags are mapped before any signals
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
  if (m.path == ExchangePath::cuda_ipc_stream) {
    // stream-ordered: waits on the device for the receivers' earlier unpacks, writes, signals
    StreamIpcArgs a = m.stream_args;
    a.seq = ++m.seq;
    stream_ipc_pack<T><<<std::max(1, grid_for(ns)), 256>>>(v, m.send_idx.data(), ns, a);
    TCFEM_CUDA_CHECK_LAUNCH();
    m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return;
  }
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
  if (m.path == ExchangePath::cuda_ipc_stream) {
    StreamIpcArgs a = m.stream_args;
    a.seq = m.seq;
    stream_ipc_unpack<T><<<std::max(1, grid_for(nr)), 256>>>(recv_buf, m.recv_idx.data(), nr, v, a);
    TCFEM_CUDA_CHECK_LAUNCH();
    m.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++m.calls;
    return;
  }
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
