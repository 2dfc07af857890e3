// The solve phase of the direct solver on a CUDA device: cuBLAS GEMM for the products with Pi^{-1}
// and the C_k^{-1} (FP64 with DMMA tensor cores, FP32, FP16 tensor cores with FP32 accumulation)
// and CSR kernels for B, B^T, D_k, D_k^T. Leading dimensions are padded to multiples of 8 entries
// (16-byte aligned FP16 columns, what the tensor-core GEMM kernels want); padding rows and columns
// hold zeros.
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

/// y[:, r] -= A x[:, r] for a CSR matrix A; with round_input, x is rounded to FP16 first.
template <typename M, typename V, bool round_input>
__global__ void csr_subtract_kernel(std::int64_t rows, const std::int64_t* __restrict__ row_ptr,
                                    const std::int32_t* __restrict__ cols, const M* __restrict__ values,
                                    std::int64_t nrhs, const V* __restrict__ x, std::int64_t ldx, V* __restrict__ y,
                                    std::int64_t ldy) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows) return;
  const std::int64_t begin = row_ptr[i], end = row_ptr[i + 1];
  if (begin == end) return;
  for (std::int64_t r = blockIdx.y; r < nrhs; r += gridDim.y) {
    V s = 0;
    for (std::int64_t p = begin; p < end; ++p) {
      V xv = x[cols[p] + r * ldx];
      if constexpr (round_input) xv = __half2float(__float2half_rn(xv));
      s += to_acc(values[p]) * xv;
    }
    y[i + r * ldy] -= s;
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

template <typename M>
struct DeviceCsr {
  std::int64_t rows = 0;
  DeviceBuffer<std::int64_t> row_ptr;
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
    b_ = upload_csr(s.b, nullptr);
    bt_ = upload_csr(s.bt, nullptr);
    for (const auto& m : s.d) d_.push_back(upload_csr(m, nullptr, true));
    for (const auto& m : s.dt) dt_.push_back(upload_csr(m, &m));
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
    for (auto* buf : {&bc_, &be_, &xc_, &xe_, &re_}) *buf = DeviceBuffer<V>();
    half_ = DeviceBuffer<__half>();
    split_hi_ = DeviceBuffer<float>();
    split_lo_ = DeviceBuffer<float>();
    bi_.clear();
    xi_.clear();
    yi_.clear();
    for (std::size_t k = 0; k < s_.class_cells.size(); ++k)
      if (s_.class_cells[k] * nrhs_ > INT_MAX)
        throw InputError("--rhs: cells x right-hand sides exceeds the 32-bit GEMM size; use fewer right-hand sides");
    // b, x and scratch for every block, plus the FP16 copy of the largest GEMM input
    double largest = double(ne_pad_), rows = double(s_.n_coarse) * 2 + double(ne_pad_) * 3;
    for (const auto cells : s_.class_cells) {
      rows += 3.0 * double(cells * npc_pad_);
      largest = std::max(largest, double(cells * npc_pad_));
    }
    const double need = double(nrhs_) * (rows * sizeof(V) + (P == Precision::fp16     ? 2.0 * largest
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
    if constexpr (P == Precision::fp16) half_ = DeviceBuffer<__half>(static_cast<std::size_t>(largest * nrhs_));
    if constexpr (P == Precision::tf32x3) {
      split_hi_ = DeviceBuffer<float>(static_cast<std::size_t>(largest * nrhs_));
      split_lo_ = DeviceBuffer<float>(static_cast<std::size_t>(largest * nrhs_));
    }
  }

  double run() override {
    const std::int64_t nc = s_.n_coarse;
    marks_.clear();
    TCFEM_CUDA_CHECK(cudaEventRecord(start_, stream_));
    // (4): r_E = b_E - B^T b_C - sum_k D_k C_k^{-1} b_k; x_E = Pi^{-1} r_E
    copy(re_, be_);
    mark(SolveComponent::copies);
    subtract(bt_, bc_.data(), nc, re_.data(), ne_pad_);
    mark(SolveComponent::sparse);
    for (std::size_t k = 0; k < class_.size(); ++k) {
      class_gemm(k, bi_[k], yi_[k]);
      subtract(d_[k], yi_[k].data(), class_ld(k), re_.data(), ne_pad_);
      mark(SolveComponent::sparse);
    }
    const void* r = input(re_);
    mark(SolveComponent::copies);
    gemm(ne_pad_, nrhs_, ne_pad_, pi_.data(), pi_lo_.data(), ne_pad_, r, ne_pad_, xe_.data(), ne_pad_);
    mark(SolveComponent::gemm_pi);
    // (5): x_C = b_C - B x_E
    copy(xc_, bc_);
    mark(SolveComponent::copies);
    subtract(b_, xe_.data(), ne_pad_, xc_.data(), nc);
    mark(SolveComponent::sparse);
    // (6): x_k = C_k^{-1} (b_k - D_k^T x_E)
    for (std::size_t k = 0; k < class_.size(); ++k) {
      copy(yi_[k], bi_[k]);
      mark(SolveComponent::copies);
      subtract(dt_[k], xe_.data(), ne_pad_, yi_[k].data(), class_ld(k));
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
    x.c = download(xc_, s_.n_coarse, s_.n_coarse);
    x.e = download(xe_, s_.n_edge, ne_pad_);
    for (std::size_t k = 0; k < xi_.size(); ++k) {
      // cell-major padded columns back to the host layout
      const std::int64_t cells = s_.class_cells[k], npc = s_.nodes_per_cell;
      const auto h = xi_[k].to_host();
      std::vector<double> out(static_cast<std::size_t>(cells * npc * nrhs_));
      for (std::int64_t r = 0; r < nrhs_; ++r)
        for (std::int64_t c = 0; c < cells; ++c)
          for (std::int64_t j = 0; j < npc; ++j)
            out[j + c * npc + r * cells * npc] = double(h[j + c * npc_pad_ + r * cells * npc_pad_]) / scale_[r];
      x.i.push_back(std::move(out));
    }
    return x;
  }

  std::string description() const override { return std::string("cuda, ") + Types<P>::name + ", " + device_name_; }
  double setup_seconds() const override { return setup_seconds_; }

 private:
  std::int64_t class_ld(std::size_t k) const { return s_.class_cells[k] * npc_pad_; }

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
  DeviceCsr<M> upload_csr(const CsrMatrix& m, const CsrMatrix* row_source, bool pad_cols = false) {
    const std::int64_t npc = std::max<std::int64_t>(s_.nodes_per_cell, 1);
    std::vector<std::int64_t> row_ptr;
    std::vector<std::int32_t> cols(m.cols.begin(), m.cols.end());
    if (pad_cols)
      for (auto& c : cols) c = static_cast<std::int32_t>(c / npc * npc_pad_ + c % npc);
    if (row_source) {
      const std::int64_t cells = m.n_rows / npc;
      row_ptr.assign(static_cast<std::size_t>(cells * npc_pad_ + 1), 0);
      for (std::int64_t c = 0; c < cells; ++c)
        for (std::int64_t j = 0; j < npc_pad_; ++j) {
          const std::int64_t src = j < npc ? c * npc + j : -1;
          row_ptr[c * npc_pad_ + j + 1] = src >= 0 ? m.row_ptr[src + 1] : row_ptr[c * npc_pad_ + j];
        }
    } else {
      row_ptr = m.row_ptr;
    }
    std::vector<M> values(m.values.size());
    for (std::size_t p = 0; p < values.size(); ++p) values[p] = host_convert<M>(m.values[p]);
    DeviceCsr<M> d;
    d.rows = static_cast<std::int64_t>(row_ptr.size()) - 1;
    d.row_ptr = DeviceBuffer<std::int64_t>(row_ptr);
    d.cols = DeviceBuffer<std::int32_t>(cols);
    d.values = DeviceBuffer<M>(values);
    return d;
  }

  V host_vector_value(double v) const {
    if constexpr (P == Precision::fp16) return arch::Fp16Format::round(static_cast<float>(v));
    return static_cast<V>(v);
  }
  DeviceBuffer<V> upload_vectors(const std::vector<double>& v, std::int64_t rows, std::int64_t ld) const {
    std::vector<V> h(static_cast<std::size_t>(ld * nrhs_), V(0));
    for (std::int64_t r = 0; r < nrhs_; ++r)
      for (std::int64_t i = 0; i < rows; ++i) h[i + r * ld] = host_vector_value(v[i + r * rows] * scale_[r]);
    return DeviceBuffer<V>(h);
  }
  DeviceBuffer<V> upload_class_vectors(const std::vector<double>& v, std::size_t k) const {
    const std::int64_t cells = s_.class_cells[k], npc = s_.nodes_per_cell;
    std::vector<V> h(static_cast<std::size_t>(cells * npc_pad_ * nrhs_), V(0));
    for (std::int64_t r = 0; r < nrhs_; ++r)
      for (std::int64_t c = 0; c < cells; ++c)
        for (std::int64_t j = 0; j < npc; ++j)
          h[j + c * npc_pad_ + r * cells * npc_pad_] = host_vector_value(v[j + c * npc + r * cells * npc] * scale_[r]);
    return DeviceBuffer<V>(h);
  }
  std::vector<double> download(const DeviceBuffer<V>& d, std::int64_t rows, std::int64_t ld) const {
    const auto h = d.to_host();
    std::vector<double> out(static_cast<std::size_t>(rows * nrhs_));
    for (std::int64_t r = 0; r < nrhs_; ++r)
      for (std::int64_t i = 0; i < rows; ++i) out[i + r * rows] = double(h[i + r * ld]) / scale_[r];
    return out;
  }

  void copy(DeviceBuffer<V>& dst, const DeviceBuffer<V>& src) {
    if (src.size())
      TCFEM_CUDA_CHECK(
          cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(V), cudaMemcpyDeviceToDevice, stream_));
  }
  void subtract(const DeviceCsr<M>& a, const V* x, std::int64_t ldx, V* y, std::int64_t ldy) {
    if (a.rows == 0 || a.cols.size() == 0 || nrhs_ == 0) return;
    const int threads = 256;
    const dim3 grid(static_cast<unsigned>((a.rows + threads - 1) / threads),
                    static_cast<unsigned>(std::min<std::int64_t>(nrhs_, 65535)));
    csr_subtract_kernel<M, V, P == Precision::fp16><<<grid, threads, 0, stream_>>>(
        a.rows, a.row_ptr.data(), a.cols.data(), a.values.data(), nrhs_, x, ldx, y, ldy);
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
  void gemm(std::int64_t m, std::int64_t n, std::int64_t k, const M* a, const M* a_low, std::int64_t lda,
            const void* b, std::int64_t ldb, V* c, std::int64_t ldc) {
    if (m == 0 || n == 0) return;
    const V one = 1, zero = 0;
    auto product = [&](const M* x, const void* y, const V* beta) {
      TCFEM_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(n), int(k), &one, x,
                                      Types<P>::matrix_type, int(lda), y, Types<P>::input_type, int(ldb), beta, c,
                                      Types<P>::vector_type, int(ldc), Types<P>::compute, CUBLAS_GEMM_DEFAULT));
    };
    product(a, b, &zero);
    if constexpr (P == Precision::tf32x3) {
      product(a, split_lo_.data(), &one);
      product(a_low, b, &one);
    } else {
      (void)a_low;
    }
  }
  void class_gemm(std::size_t k, const DeviceBuffer<V>& in, DeviceBuffer<V>& out) {
    if (s_.nodes_per_cell == 0) return;
    const void* b = input(in);
    mark(SolveComponent::copies);
    gemm(npc_pad_, s_.class_cells[k] * nrhs_, npc_pad_, class_[k].data(),
         P == Precision::tf32x3 ? class_lo_[k].data() : nullptr, npc_pad_, b, npc_pad_, out.data(), npc_pad_);
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
  std::int64_t ne_pad_ = 0, npc_pad_ = 0, nrhs_ = 0;
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
