// The solve phase of the direct solver on a CUDA device: cuBLAS GEMM for the products with Pi^{-1}
// and the C_k^{-1} (FP64 with DMMA tensor cores, FP32, FP16 tensor cores with FP32 accumulation)
// and sparse kernels for B, B^T, D_k, D_k^T.
// Layout of the many right-hand sides: right-hand side fastest. Every node of a block (C, E, and
// the interior nodes of class k) has a slot s, and entry (slot s, right-hand side r) is stored at
// r + nrhs_pad * s; interior node j of cell c of class k has slot c + cells_k * j. So a sparse
// product reads and writes each node's nrhs values as one contiguous, coalesced run (a warp per
// row, lanes over right-hand sides), and the dense products are GEMMs with the vectors on the left:
//   X_E^T = R_E^T Pi^{-1}   ((nrhs_pad x |E|) (|E| x |E|)),
//   X_k^T = Y_k^T C_k^{-1}  ((nrhs_pad cells_k x npc) (npc x npc)),
// using the symmetry of the inverses. Counts are padded to multiples of 8 (16-byte aligned FP16
// columns, what the tensor-core GEMM kernels want); padding entries hold zeros.
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>

#include "arch/number_formats.h"
#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/memory.h"
#include "direct/solve_phase.h"

namespace tcfem::direct {

void cublas_check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("cuBLAS error ") + cublasGetStatusName(s) + " in " + what + " at " + file + ":" +
                      std::to_string(line));
}

}  // namespace tcfem::direct

#define TCFEM_CUBLAS_CHECK(call) ::tcfem::direct::cublas_check((call), #call, __FILE__, __LINE__)

namespace tcfem::direct {
namespace {

constexpr std::int64_t pad8(std::int64_t n) { return (n + 7) / 8 * 8; }

template <Precision P>
struct Types;
template <>
struct Types<Precision::fp64> {
  using Matrix = double;
  using Vector = double;
  static constexpr cudaDataType matrix_type = CUDA_R_64F, input_type = CUDA_R_64F, vector_type = CUDA_R_64F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
  static constexpr const char* name = "cuBLAS GemmEx FP64 (FP64 tensor cores where the device has them)";
};
template <>
struct Types<Precision::fp32> {
  using Matrix = float;
  using Vector = float;
  static constexpr cudaDataType matrix_type = CUDA_R_32F, input_type = CUDA_R_32F, vector_type = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // plain FP32, no TF32
  static constexpr const char* name = "cuBLAS GemmEx FP32 (CUDA cores, no TF32)";
};
template <>
struct Types<Precision::tf32> {
  using Matrix = float;
  using Vector = float;
  static constexpr cudaDataType matrix_type = CUDA_R_32F, input_type = CUDA_R_32F, vector_type = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  static constexpr const char* name = "cuBLAS GemmEx FP32 data on TF32 tensor cores, FP32 accumulation";
};
template <>
struct Types<Precision::tf32x3> {
  using Matrix = float;
  using Vector = float;
  static constexpr cudaDataType matrix_type = CUDA_R_32F, input_type = CUDA_R_32F, vector_type = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  static constexpr const char* name =
      "cuBLAS GemmEx, three TF32 tensor-core GEMMs per product on hi/lo splits (FP32 accuracy)";
};
template <>
struct Types<Precision::fp16> {
  using Matrix = __half;
  using Vector = float;
  static constexpr cudaDataType matrix_type = CUDA_R_16F, input_type = CUDA_R_16F, vector_type = CUDA_R_32F;
  static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  static constexpr const char* name = "cuBLAS GemmEx FP16 inputs, FP32 accumulation (tensor cores)";
};

template <typename M>
M host_convert(double v) {
  if constexpr (std::is_same_v<M, __half>) {
    __half_raw raw;
    raw.x = arch::float_to_fp16_bits(static_cast<float>(v));
    return __half(raw);
  } else {
    return static_cast<M>(v);
  }
}

__device__ inline double to_acc(double v) { return v; }
__device__ inline float to_acc(float v) { return v; }
__device__ inline float to_acc(__half v) { return __half2float(v); }

/// Length of the row segments of the sparse products: one warp per segment, one entry per lane.
constexpr int segment_length = 32;

/// y(slot, r) -= sum_p values[p] x(cols[p], r) over the segments of a CSR matrix whose rows and
/// columns are slots, for all right-hand sides r < nrhs; entries at r + ld * slot. Rows are split
/// into segments of at most 32 entries (the hierarchical basis couples a few edge nodes to
/// thousands of interior nodes), one warp per segment: the lanes load the segment's columns and
/// values at once and broadcast them, and each lane accumulates eight right-hand sides in
/// registers, so every access to x and y is a coalesced run and the x loads are independent.
/// Segments of rows split into several are added with atomics (their summation order, and so the
/// last bits of those rows, may vary between runs). With round_input, x is rounded to FP16 first.
template <typename M, typename V, bool round_input>
__global__ void __launch_bounds__(256)
    multi_subtract_kernel(std::int64_t segments, const std::int32_t* __restrict__ segment_slot,
                          const std::int64_t* __restrict__ segment_begin, const std::int32_t* __restrict__ segment_info,
                          const std::int32_t* __restrict__ cols, const M* __restrict__ values, std::int64_t nrhs,
                          std::int64_t ld, const V* __restrict__ x, V* __restrict__ y) {
  constexpr int per_lane = 8;
  const std::int64_t segment = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (segment >= segments) return;
  const std::int64_t begin = segment_begin[segment];
  const int info = segment_info[segment];  // length, negative: the row has several segments
  const int length = info < 0 ? -info : info;
  const std::int32_t my_col = lane < length ? cols[begin + lane] : 0;
  const V my_value = lane < length ? to_acc(values[begin + lane]) : V(0);
  V* yrow = y + std::int64_t(segment_slot[segment]) * ld;
  for (std::int64_t r0 = 0; r0 < nrhs; r0 += 32 * per_lane) {
    V acc[per_lane];
#pragma unroll
    for (int t = 0; t < per_lane; ++t) acc[t] = 0;
#pragma unroll 4
    for (int q = 0; q < length; ++q) {
      const std::int32_t col = __shfl_sync(0xffffffffu, my_col, q);
      const V a = __shfl_sync(0xffffffffu, my_value, q);
      const V* xrow = x + std::int64_t(col) * ld;
#pragma unroll
      for (int t = 0; t < per_lane; ++t) {
        const std::int64_t r = r0 + lane + 32 * t;
        if (r < nrhs) {
          V xv = xrow[r];
          if constexpr (round_input) xv = __half2float(__float2half_rn(xv));
          acc[t] += a * xv;
        }
      }
    }
#pragma unroll
    for (int t = 0; t < per_lane; ++t) {
      const std::int64_t r = r0 + lane + 32 * t;
      if (r < nrhs) {
        if (info < 0)
          atomicAdd(yrow + r, -acc[t]);
        else
          yrow[r] -= acc[t];
      }
    }
  }
}

/// hi = tf32(x), lo = tf32(x - hi), the operands of the 3xTF32 product.
__global__ void split_tf32_kernel(std::int64_t n, const float* __restrict__ in, float* __restrict__ hi,
                                  float* __restrict__ lo) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float x = in[i];
    const float h = arch::round_to_tf32(x);
    hi[i] = h;
    lo[i] = arch::round_to_tf32(x - h);
  }
}

__global__ void to_half_kernel(std::int64_t n, const float* __restrict__ in, __half* __restrict__ out) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2half_rn(in[i]);
}

/// A sparse matrix on the device as row segments of at most segment_length entries (empty rows
/// dropped), rows and columns as slots.
template <typename M>
struct DeviceCsr {
  std::int64_t segments = 0;
  DeviceBuffer<std::int32_t> segment_slot;   ///< the row's slot
  DeviceBuffer<std::int64_t> segment_begin;  ///< first entry
  DeviceBuffer<std::int32_t> segment_info;   ///< entries; negated when the row has several segments
  DeviceBuffer<std::int32_t> cols;
  DeviceBuffer<M> values;
};

template <Precision P>
class CudaSolvePhase final : public SolvePhase {
  using M = typename Types<P>::Matrix;
  using V = typename Types<P>::Vector;

 public:
  explicit CudaSolvePhase(const PrehandledSystem& s) : s_(s) {
    const DeviceInfo info = require_device("--backend cuda");
    device_name_ = info.name;
    const double need = cuda_solve_phase_bytes(s, P, 1);
    if (double(info.free_memory) < need)
      throw InputError("--level: the CUDA solve phase needs an estimated " + format_bytes(need) +
                       " of device memory, but only " + format_bytes(double(info.free_memory)) + " is free");
    cudaEvent_t t0, t1;
    TCFEM_CUDA_CHECK(cudaEventCreate(&t0));
    TCFEM_CUDA_CHECK(cudaEventCreate(&t1));
    start_ = t0;
    stop_ = t1;
    TCFEM_CUDA_CHECK(cudaStreamCreate(&stream_));
    TCFEM_CUBLAS_CHECK(cublasCreate(&handle_));
    TCFEM_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
    const auto t_setup = std::chrono::steady_clock::now();
    ne_pad_ = pad8(s.n_edge);
    npc_pad_ = pad8(s.nodes_per_cell);
    pi_ = upload_padded(s.pi_inverse, s.n_edge, ne_pad_);
    for (const auto& c : s.class_inverse) class_.push_back(upload_padded(c, s.nodes_per_cell, npc_pad_));
    if constexpr (P == Precision::tf32x3) {
      pi_lo_ = upload_padded(s.pi_inverse, s.n_edge, ne_pad_, true);
      for (const auto& c : s.class_inverse) class_lo_.push_back(upload_padded(c, s.nodes_per_cell, npc_pad_, true));
    }
    // slots: C and E nodes are their own indices; interior node j of cell c of class k: c + cells_k j
    const std::int64_t npc = std::max<std::int64_t>(s.nodes_per_cell, 1);
    auto identity = [](std::int64_t i) { return i; };
    b_ = upload_csr(s.b, identity, identity);
    bt_ = upload_csr(s.bt, identity, identity);
    for (std::size_t k = 0; k < s.d.size(); ++k) {
      const std::int64_t cells = s.class_cells[k];
      auto interior = [cells, npc](std::int64_t q) { return q / npc + cells * (q % npc); };
      d_.push_back(upload_csr(s.d[k], identity, interior));
      dt_.push_back(upload_csr(s.dt[k], interior, identity));
    }
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    setup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count();
  }
  ~CudaSolvePhase() override {
    if (handle_) cublasDestroy(handle_);
    if (stream_) cudaStreamDestroy(stream_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    for (auto e : events_) cudaEventDestroy(e);
  }
  CudaSolvePhase(const CudaSolvePhase&) = delete;
  CudaSolvePhase& operator=(const CudaSolvePhase&) = delete;

  void load(const BlockVectors<double>& b) override {
    nrhs_ = b.nrhs;
    nrhs_pad_ = pad8(nrhs_);
    for (auto* buf : {&bc_, &be_, &xc_, &xe_, &re_}) *buf = DeviceBuffer<V>();
    half_ = DeviceBuffer<__half>();
    split_hi_ = DeviceBuffer<float>();
    split_lo_ = DeviceBuffer<float>();
    bi_.clear();
    xi_.clear();
    yi_.clear();
    for (std::size_t k = 0; k < s_.class_cells.size(); ++k)
      if (s_.class_cells[k] * pad8(nrhs_) > INT_MAX)
        throw InputError("--rhs: cells x right-hand sides exceeds the 32-bit GEMM size; use fewer right-hand sides");
    // b, x and scratch for every block, plus the FP16 copy of the largest GEMM input
    double largest = double(ne_pad_), rows = double(s_.n_coarse) * 2 + double(ne_pad_) * 3;
    for (const auto cells : s_.class_cells) {
      rows += 3.0 * double(cells * npc_pad_);
      largest = std::max(largest, double(cells * npc_pad_));
    }
    const double need = double(pad8(nrhs_)) * (rows * sizeof(V) + (P == Precision::fp16     ? 2.0 * largest
                                                             : P == Precision::tf32x3 ? 8.0 * largest
                                                                                      : 0.0));
    std::size_t free_b = 0, total_b = 0;
    TCFEM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (need > 0.95 * double(free_b))
      throw InputError("--rhs: " + std::to_string(nrhs_) + " right-hand sides need an estimated " + format_bytes(need) +
                       " of device memory, but only " + format_bytes(double(free_b)) + " is free");
    scale_ = column_scales(b);
    bc_ = upload_vectors(b.c, s_.n_coarse, s_.n_coarse);
    be_ = upload_vectors(b.e, s_.n_edge, ne_pad_);
    for (std::size_t k = 0; k < b.i.size(); ++k) {
      bi_.push_back(upload_class_vectors(b.i[k], k));
      xi_.emplace_back(bi_.back().size());
      yi_.emplace_back(bi_.back().size());
    }
    xc_ = DeviceBuffer<V>(bc_.size());
    xe_ = DeviceBuffer<V>(be_.size());
    re_ = DeviceBuffer<V>(be_.size());
    if constexpr (P == Precision::fp16) half_ = DeviceBuffer<__half>(static_cast<std::size_t>(largest * nrhs_pad_));
    if constexpr (P == Precision::tf32x3) {
      split_hi_ = DeviceBuffer<float>(static_cast<std::size_t>(largest * nrhs_pad_));
      split_lo_ = DeviceBuffer<float>(static_cast<std::size_t>(largest * nrhs_pad_));
    }
  }

  double run() override {
    marks_.clear();
    TCFEM_CUDA_CHECK(cudaEventRecord(start_, stream_));
    // (4): r_E = b_E - B^T b_C - sum_k D_k C_k^{-1} b_k; x_E = Pi^{-1} r_E
    copy(re_, be_);
    mark(SolveComponent::copies);
    subtract(bt_, bc_.data(), re_.data());
    mark(SolveComponent::sparse);
    for (std::size_t k = 0; k < class_.size(); ++k) {
      class_gemm(k, bi_[k], yi_[k]);
      subtract(d_[k], yi_[k].data(), re_.data());
      mark(SolveComponent::sparse);
    }
    const void* r = input(re_);
    mark(SolveComponent::copies);
    gemm(nrhs_pad_, ne_pad_, ne_pad_, r, nrhs_pad_, pi_.data(), pi_lo_.data(), ne_pad_, xe_.data(), nrhs_pad_);
    mark(SolveComponent::gemm_pi);
    // (5): x_C = b_C - B x_E
    copy(xc_, bc_);
    mark(SolveComponent::copies);
    subtract(b_, xe_.data(), xc_.data());
    mark(SolveComponent::sparse);
    // (6): x_k = C_k^{-1} (b_k - D_k^T x_E)
    for (std::size_t k = 0; k < class_.size(); ++k) {
      copy(yi_[k], bi_[k]);
      mark(SolveComponent::copies);
      subtract(dt_[k], xe_.data(), yi_[k].data());
      mark(SolveComponent::sparse);
      class_gemm(k, yi_[k], xi_[k]);
    }
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    TCFEM_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    times_ = {};
    cudaEvent_t previous = start_;
    for (std::size_t i = 0; i < marks_.size(); ++i) {
      float part = 0;
      TCFEM_CUDA_CHECK(cudaEventElapsedTime(&part, previous, events_[i]));
      times_[static_cast<int>(marks_[i])] += part * 1e-3;
      previous = events_[i];
    }
    return ms * 1e-3;
  }

  ComponentSeconds breakdown() const override { return times_; }

  BlockVectors<double> result() const override {
    BlockVectors<double> x;
    x.nrhs = nrhs_;
    x.c = download(xc_, s_.n_coarse);
    x.e = download(xe_, s_.n_edge);
    for (std::size_t k = 0; k < xi_.size(); ++k) {
      // slots c + cells j, right-hand side fastest, back to the host layout
      const std::int64_t cells = s_.class_cells[k], npc = s_.nodes_per_cell;
      const auto h = xi_[k].to_host();
      std::vector<double> out(static_cast<std::size_t>(cells * npc * nrhs_));
      for (std::int64_t j = 0; j < npc; ++j)
        for (std::int64_t c = 0; c < cells; ++c) {
          const V* src = h.data() + (c + cells * j) * nrhs_pad_;
          for (std::int64_t r = 0; r < nrhs_; ++r) out[j + c * npc + r * cells * npc] = double(src[r]) / scale_[r];
        }
      x.i.push_back(std::move(out));
    }
    return x;
  }

  std::string description() const override { return std::string("cuda, ") + Types<P>::name + ", " + device_name_; }
  double setup_seconds() const override { return setup_seconds_; }

 private:

  /// The n x n matrix `a` on the device as an ld x ld matrix, zero-padded; converted and copied
  /// in blocks of columns so that no full-size host copy is made. tf32x3: the hi part of the
  /// split, or with `low` the lo part.
  DeviceBuffer<M> upload_padded(const std::vector<double>& a, std::int64_t n, std::int64_t ld, bool low = false) {
    DeviceBuffer<M> d(static_cast<std::size_t>(ld * ld));
    if (ld == 0) return d;
    TCFEM_CUDA_CHECK(cudaMemset(d.data(), 0, d.size() * sizeof(M)));
    const std::int64_t block = std::max<std::int64_t>(1, (std::int64_t(1) << 24) / std::max<std::int64_t>(n, 1));
    std::vector<M> staging(static_cast<std::size_t>(n * std::min(block, n)));
    for (std::int64_t j0 = 0; j0 < n; j0 += block) {
      const std::int64_t cols = std::min(block, n - j0);
      for (std::int64_t j = 0; j < cols; ++j)
        for (std::int64_t i = 0; i < n; ++i) {
          const double v = a[i + (j0 + j) * n];
          if constexpr (P == Precision::tf32x3)
            staging[i + j * n] = low ? split_tf32(v).lo : split_tf32(v).hi;
          else
            staging[i + j * n] = host_convert<M>(v);
        }
      TCFEM_CUDA_CHECK(cudaMemcpy2D(d.data() + j0 * ld, ld * sizeof(M), staging.data(), n * sizeof(M), n * sizeof(M),
                                    cols, cudaMemcpyHostToDevice));
    }
    return d;
  }

  /// pad_cols: the columns are I_k indices (cell * npc + j), moved to cell * npc_pad + j;
  /// row_source (D_k^T): the rows are I_k indices, spread to padded rows (padding rows empty).
  /// The nonempty rows of `m` as segments, rows and columns mapped to slots.
  template <class RowSlot, class ColSlot>
  DeviceCsr<M> upload_csr(const CsrMatrix& m, RowSlot row_slot, ColSlot col_slot) {
    std::vector<std::int32_t> slot, info;
    std::vector<std::int64_t> begin;
    for (std::int64_t i = 0; i < m.n_rows; ++i) {
      const std::int64_t b = m.row_ptr[i], e = m.row_ptr[i + 1];
      const bool split = e - b > segment_length;
      for (std::int64_t p = b; p < e; p += segment_length) {
        const auto length = static_cast<std::int32_t>(std::min<std::int64_t>(segment_length, e - p));
        slot.push_back(static_cast<std::int32_t>(row_slot(i)));
        begin.push_back(p);
        info.push_back(split ? -length : length);
      }
    }
    std::vector<std::int32_t> cols(m.cols.size());
    std::vector<M> values(m.values.size());
    for (std::size_t p = 0; p < cols.size(); ++p) {
      cols[p] = static_cast<std::int32_t>(col_slot(m.cols[p]));
      values[p] = host_convert<M>(m.values[p]);
    }
    DeviceCsr<M> d;
    d.segments = static_cast<std::int64_t>(slot.size());
    d.segment_slot = DeviceBuffer<std::int32_t>(slot);
    d.segment_begin = DeviceBuffer<std::int64_t>(begin);
    d.segment_info = DeviceBuffer<std::int32_t>(info);
    d.cols = DeviceBuffer<std::int32_t>(cols);
    d.values = DeviceBuffer<M>(values);
    return d;
  }

  V host_vector_value(double v) const {
    if constexpr (P == Precision::fp16) return arch::Fp16Format::round(static_cast<float>(v));
    return static_cast<V>(v);
  }
  /// rows x nrhs (host, column-major) to slots 0..slots-1 with the right-hand side fastest.
  DeviceBuffer<V> upload_vectors(const std::vector<double>& v, std::int64_t rows, std::int64_t slots) const {
    std::vector<V> h(static_cast<std::size_t>(slots * nrhs_pad_), V(0));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t r = 0; r < nrhs_; ++r) h[r + i * nrhs_pad_] = host_vector_value(v[i + r * rows] * scale_[r]);
    return DeviceBuffer<V>(h);
  }
  /// Interior nodes of class k: node j of cell c to slot c + cells j (npc_pad slots per cell).
  DeviceBuffer<V> upload_class_vectors(const std::vector<double>& v, std::size_t k) const {
    const std::int64_t cells = s_.class_cells[k], npc = s_.nodes_per_cell;
    std::vector<V> h(static_cast<std::size_t>(cells * npc_pad_ * nrhs_pad_), V(0));
    for (std::int64_t j = 0; j < npc; ++j)
      for (std::int64_t c = 0; c < cells; ++c) {
        V* dst = h.data() + (c + cells * j) * nrhs_pad_;
        for (std::int64_t r = 0; r < nrhs_; ++r)
          dst[r] = host_vector_value(v[j + c * npc + r * cells * npc] * scale_[r]);
      }
    return DeviceBuffer<V>(h);
  }
  std::vector<double> download(const DeviceBuffer<V>& d, std::int64_t rows) const {
    const auto h = d.to_host();
    std::vector<double> out(static_cast<std::size_t>(rows * nrhs_));
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t r = 0; r < nrhs_; ++r) out[i + r * rows] = double(h[r + i * nrhs_pad_]) / scale_[r];
    return out;
  }

  void copy(DeviceBuffer<V>& dst, const DeviceBuffer<V>& src) {
    if (src.size())
      TCFEM_CUDA_CHECK(
          cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(V), cudaMemcpyDeviceToDevice, stream_));
  }
  /// y -= A x on slot-indexed blocks of nrhs_pad_ entries per slot.
  void subtract(const DeviceCsr<M>& a, const V* x, V* y) {
    if (a.segments == 0 || nrhs_ == 0) return;
    const int threads = 256, warps_per_block = threads / 32;
    const auto blocks = static_cast<unsigned>((a.segments + warps_per_block - 1) / warps_per_block);
    multi_subtract_kernel<M, V, P == Precision::fp16><<<blocks, threads, 0, stream_>>>(
        a.segments, a.segment_slot.data(), a.segment_begin.data(), a.segment_info.data(), a.cols.data(),
        a.values.data(), nrhs_, nrhs_pad_, x, y);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  /// The GEMM input: the vectors themselves, (fp16) their FP16 copy, or (tf32x3) the hi part of
  /// their split (the lo part in split_lo_).
  const void* input(const DeviceBuffer<V>& v) {
    if constexpr (P == Precision::tf32x3) {
      const std::int64_t n = static_cast<std::int64_t>(v.size());
      const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65535));
      if (n) split_tf32_kernel<<<blocks, 256, 0, stream_>>>(n, v.data(), split_hi_.data(), split_lo_.data());
      TCFEM_CUDA_CHECK_LAUNCH();
      return split_hi_.data();
    }
    if constexpr (P == Precision::fp16) {
      const std::int64_t n = static_cast<std::int64_t>(v.size());
      const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65535));
      if (n) to_half_kernel<<<blocks, 256, 0, stream_>>>(n, v.data(), half_.data());
      TCFEM_CUDA_CHECK_LAUNCH();
      return half_.data();
    }
    return v.data();
  }
  /// c = a b (m x k times k x n); tf32x3: a_hi b_hi + a_hi b_lo + a_lo b_hi with a_lo = a_low and
  /// b_lo in split_lo_ (b is the hi part from input()).
  /// c = a b (m x k times k x n) with the vectors `a` (from input()) on the left and the symmetric
  /// inverse b; tf32x3: a_hi b_hi + a_lo b_hi + a_hi b_lo with a_lo in split_lo_ and b_lo = b_low.
  void gemm(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, std::int64_t lda, const M* b,
            const M* b_low, std::int64_t ldb, V* c, std::int64_t ldc) {
    if (m == 0 || n == 0) return;
    const V one = 1, zero = 0;
    auto product = [&](const void* x, const M* y, const V* beta) {
      TCFEM_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(n), int(k), &one, x,
                                      Types<P>::input_type, int(lda), y, Types<P>::matrix_type, int(ldb), beta, c,
                                      Types<P>::vector_type, int(ldc), Types<P>::compute, CUBLAS_GEMM_DEFAULT));
    };
    product(a, b, &zero);
    if constexpr (P == Precision::tf32x3) {
      product(split_lo_.data(), b, &one);
      product(a, b_low, &one);
    } else {
      (void)b_low;
    }
  }
  void class_gemm(std::size_t k, const DeviceBuffer<V>& in, DeviceBuffer<V>& out) {
    if (s_.nodes_per_cell == 0) return;
    const void* b = input(in);
    mark(SolveComponent::copies);
    const std::int64_t rows = s_.class_cells[k] * nrhs_pad_;  // (right-hand side, cell) pairs
    gemm(rows, npc_pad_, npc_pad_, b, rows, class_[k].data(), P == Precision::tf32x3 ? class_lo_[k].data() : nullptr,
         npc_pad_, out.data(), rows);
    mark(SolveComponent::gemm_classes);
  }
  /// Records an event after the work queued so far; the time since the previous mark is
  /// attributed to component c (read after the run).
  void mark(SolveComponent c) {
    if (marks_.size() == events_.size()) {
      cudaEvent_t e;
      TCFEM_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    TCFEM_CUDA_CHECK(cudaEventRecord(events_[marks_.size()], stream_));
    marks_.push_back(c);
  }

  const PrehandledSystem& s_;
  std::string device_name_;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::vector<cudaEvent_t> events_;
  std::vector<SolveComponent> marks_;
  ComponentSeconds times_{};
  std::int64_t ne_pad_ = 0, npc_pad_ = 0, nrhs_ = 0, nrhs_pad_ = 0;
  DeviceBuffer<M> pi_, pi_lo_;
  std::vector<DeviceBuffer<M>> class_, class_lo_;
  DeviceCsr<M> b_, bt_;
  std::vector<DeviceCsr<M>> d_, dt_;
  DeviceBuffer<V> bc_, be_, xc_, xe_, re_;
  std::vector<DeviceBuffer<V>> bi_, xi_, yi_;
  DeviceBuffer<__half> half_;
  DeviceBuffer<float> split_hi_, split_lo_;
  std::vector<double> scale_;
  double setup_seconds_ = 0.0;
};

}  // namespace

std::unique_ptr<SolvePhase> make_cuda_solve_phase(const PrehandledSystem& system, Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return std::make_unique<CudaSolvePhase<Precision::fp64>>(system);
    case Precision::fp32:
      return std::make_unique<CudaSolvePhase<Precision::fp32>>(system);
    case Precision::tf32:
      return std::make_unique<CudaSolvePhase<Precision::tf32>>(system);
    case Precision::tf32x3:
      return std::make_unique<CudaSolvePhase<Precision::tf32x3>>(system);
    case Precision::fp16:
      return std::make_unique<CudaSolvePhase<Precision::fp16>>(system);
  }
  throw Error("make_cuda_solve_phase: unknown precision");
}

}  // namespace tcfem::direct
