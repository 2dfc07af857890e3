// Hardware ceilings of CUDA device 0, measured with small throughput kernels. Each kernel keeps its
// results alive through a store that the (runtime) data never triggers, so nothing is optimized away.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "arch/mma_atoms.cuh"
#include "bench/ceilings.h"
#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"

namespace tcfem::bench {
namespace {

// ---- kernels ------------------------------------------------------------------------------------

constexpr int copy_block = 256;
constexpr int copy_words_per_thread = 2;  // 16-byte words; a block copies 8 KiB in one pass

/// dst = src over n 16-byte words, each word read and written once.
__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, std::int64_t n) {
  const std::int64_t base = std::int64_t(blockIdx.x) * copy_block * copy_words_per_thread + threadIdx.x;
  int4 v[copy_words_per_thread];
#pragma unroll
  for (int j = 0; j < copy_words_per_thread; ++j) {
    const std::int64_t i = base + j * copy_block;
    if (i < n) v[j] = src[i];
  }
#pragma unroll
  for (int j = 0; j < copy_words_per_thread; ++j) {
    const std::int64_t i = base + j * copy_block;
    if (i < n) dst[i] = v[j];
  }
}

constexpr int fma_chains = 8;  // independent dependency chains per thread

/// fma_chains * iters FMAs per thread on CUDA cores.
template <typename T>
__global__ void fma_kernel(T mul, T add, int iters, T* sink) {
  T a[fma_chains];
#pragma unroll
  for (int j = 0; j < fma_chains; ++j) a[j] = T(threadIdx.x + j) * T(1e-3);
#pragma unroll 4
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < fma_chains; ++j) {
      if constexpr (std::is_same_v<T, double>) a[j] = fma(a[j], mul, add);
      else a[j] = fmaf(a[j], mul, add);
    }
  }
  T s = 0;
#pragma unroll
  for (int j = 0; j < fma_chains; ++j) s += a[j];
  if (s == T(-1)) *sink = s;  // the chains stay positive
}

constexpr int mma_accumulators = 8;  // independent accumulators per warp

/// mma_accumulators * iters mma.sync instructions of `Atom` per warp.
template <class Atom>
__global__ void mma_kernel(int iters, typename Atom::ValueC* sink) {
  using ValueA = typename Atom::ValueA;
  using ValueB = typename Atom::ValueB;
  using ValueC = typename Atom::ValueC;
  const int lane = static_cast<int>(threadIdx.x % 32);
  typename Atom::FragA a;
  typename Atom::FragB b;
  typename Atom::FragC c[mma_accumulators];
#pragma unroll
  for (int i = 0; i < Atom::a_elements; ++i) Atom::set_a(a, i, ValueA(1e-3 * (lane + i)));
#pragma unroll
  for (int i = 0; i < Atom::b_elements; ++i) Atom::set_b(b, i, ValueB(1e-3 * (lane + 2 * i + 1)));
#pragma unroll
  for (int j = 0; j < mma_accumulators; ++j) Atom::fill_c(c[j], ValueC(0));
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < mma_accumulators; ++j) Atom::mma(c[j], a, b, c[j]);
  }
  ValueC s = 0;
#pragma unroll
  for (int j = 0; j < mma_accumulators; ++j)
#pragma unroll
    for (int i = 0; i < Atom::c_elements; ++i) s += Atom::get_c(c[j], i);
  if (s == ValueC(-1)) *sink = s;  // all products are non-negative
}

constexpr int shared_words = 2048;  // float4: 32 KiB per block
constexpr int shared_block = 512;

/// iters conflict-free 16-byte shared-memory loads per thread (a warp reads 512 contiguous bytes).
__global__ void shared_load_kernel(int iters, float* sink) {
  __shared__ float4 buf[shared_words];
  for (int i = threadIdx.x; i < shared_words; i += blockDim.x)
    buf[i] = make_float4(float(i), float(2 * i), float(3 * i), float(4 * i));
  __syncthreads();
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  int idx = threadIdx.x;
#pragma unroll 8
  for (int i = 0; i < iters; ++i) {
    const float4 v = buf[idx];
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
    idx = (idx + 32) & (shared_words - 1);
  }
  if (acc.x + acc.y + acc.z + acc.w == -1.f) *sink = acc.x;  // all entries are non-negative
}

// ---- timing -------------------------------------------------------------------------------------

class EventPair {
 public:
  EventPair() {
    TCFEM_CUDA_CHECK(cudaEventCreate(&start));
    TCFEM_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  cudaEvent_t start = nullptr, stop = nullptr;
};

/// Shortest of `runs` timed executions of `launch` (after one untimed execution), in seconds.
template <class Launch>
double best_seconds(int runs, const Launch& launch) {
  EventPair e;
  launch();
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < runs; ++r) {
    TCFEM_CUDA_CHECK(cudaEventRecord(e.start));
    launch();
    TCFEM_CUDA_CHECK(cudaEventRecord(e.stop));
    TCFEM_CUDA_CHECK(cudaEventSynchronize(e.stop));
    float ms = 0.0f;
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&ms, e.start, e.stop));
    best = std::min(best, 1e-3 * double(ms));
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  return best;
}

template <typename T>
double measure_fma(int runs, int sm_count, T* sink) {
  const int grid = sm_count * 8, block = 256, iters = 1 << 16;
  const double t = best_seconds(runs, [&] {
    fma_kernel<T><<<grid, block>>>(T(0.999999), T(1e-7), iters, sink);
    TCFEM_CUDA_CHECK_LAUNCH();
  });
  return 2.0 * fma_chains * double(iters) * double(grid) * block / t * 1e-12;
}

template <class Atom>
double measure_mma(int runs, int sm_count, typename Atom::ValueC* sink) {
  const int grid = sm_count * 8, block = 256, iters = 1 << 13;
  const double t = best_seconds(runs, [&] {
    mma_kernel<Atom><<<grid, block>>>(iters, sink);
    TCFEM_CUDA_CHECK_LAUNCH();
  });
  const double warps = double(grid) * block / 32;
  return 2.0 * Atom::M * Atom::N * Atom::K * mma_accumulators * double(iters) * warps / t * 1e-12;
}

}  // namespace

Ceilings measure_ceilings(const CeilingOptions& options) {
  const DeviceInfo info = require_device("--ceilings");
  TCFEM_ASSERT(options.runs >= 1, "ceilings: runs >= 1");
  Ceilings c;
  c.runs = options.runs;
  c.sm_major = info.sm_major;
  c.sm_minor = info.sm_minor;
  const int sms = info.sm_count;

  // DRAM: bytes read + written
  std::size_t bytes = options.dram_buffer_bytes
                          ? options.dram_buffer_bytes
                          : std::min<std::size_t>(std::size_t(4) << 30, info.free_memory / 4);
  bytes = bytes / sizeof(int4) * sizeof(int4);
  if (bytes < (std::size_t(1) << 20))
    throw InputError("--ceilings: too little free device memory for the DRAM copy (" + std::to_string(bytes) +
                     " bytes per buffer)");
  c.dram_buffer_bytes = bytes;
  {
    const std::size_t words = bytes / sizeof(int4);
    DeviceBuffer<int4> a(words), b(words);
    TCFEM_CUDA_CHECK(cudaMemset(a.data(), 1, bytes));
    const std::size_t per_block = std::size_t(copy_block) * copy_words_per_thread;
    const unsigned grid = static_cast<unsigned>((words + per_block - 1) / per_block);
    double t = best_seconds(c.runs, [&] {
      copy_kernel<<<grid, copy_block>>>(a.data(), b.data(), static_cast<std::int64_t>(words));
      TCFEM_CUDA_CHECK_LAUNCH();
    });
    c.dram_copy_kernel_tb_per_s = 2.0 * double(bytes) / t * 1e-12;
    t = best_seconds(c.runs, [&] {
      TCFEM_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
    });
    c.dram_memcpy_tb_per_s = 2.0 * double(bytes) / t * 1e-12;
  }

  DeviceBuffer<double> sink64(1);
  DeviceBuffer<float> sink32(1);
  c.fp64_fma_tflop_per_s = measure_fma<double>(c.runs, sms, sink64.data());
  c.fp32_fma_tflop_per_s = measure_fma<float>(c.runs, sms, sink32.data());

  const auto fp64_shape = arch::select_fp64_atom(info.sm_major, info.sm_minor);
  if (fp64_shape != arch::Fp64Shape::simt)
    c.dmma_m8n8k4_tflop_per_s = measure_mma<arch::Sm80_M8N8K4_F64>(c.runs, sms, sink64.data());
  if (fp64_shape == arch::Fp64Shape::m16n8k16)
    c.dmma_m16n8k16_tflop_per_s = measure_mma<arch::Sm90_M16N8K16_F64>(c.runs, sms, sink64.data());
  if (arch::has_fp32_tensor_cores(info.sm_major, info.sm_minor)) {
    c.hmma_f16_tflop_per_s = measure_mma<arch::Sm80_M16N8K16_F16>(c.runs, sms, sink32.data());
    c.tf32_mma_tflop_per_s = measure_mma<arch::Sm80_M16N8K8_TF32>(c.runs, sms, sink32.data());
  }

  {
    const int grid = sms * 4, iters = 1 << 15;
    const double t = best_seconds(c.runs, [&] {
      shared_load_kernel<<<grid, shared_block>>>(iters, sink32.data());
      TCFEM_CUDA_CHECK_LAUNCH();
    });
    c.shared_load_tb_per_s = 16.0 * double(iters) * double(grid) * shared_block / t * 1e-12;
  }
  return c;
}

}  // namespace tcfem::bench
