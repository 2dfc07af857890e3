#include "multigrid/device/vector.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "core/communicator.h"

namespace tcfem::multigrid::device {
namespace {

constexpr int block = 256;
constexpr int reduce_grid = 1024;  // fixed: the order of the partial sums does not depend on n

int grid_for(std::size_t n) {
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>((n + block - 1) / block, 65535)));
}

bool timing_on = false;

template <typename Number>
__global__ void fill_kernel(Number* x, Number v, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = v;
}

template <typename Number>
__global__ void axpy_kernel(Number a, const Number* x, Number* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] += a * x[i];
}

template <typename Number>
__global__ void sadd_kernel(Number a, const Number* x, Number* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] + a * y[i];
}

template <typename Number>
__global__ void scale_copy_kernel(Number a, const Number* x, Number* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = a * x[i];
}

template <typename Number>
__global__ void residual_kernel(Number* r, const Number* b, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    r[i] = b[i] - r[i];
}

template <typename Number>
__global__ void multiply_kernel(const Number* d, const Number* r, Number* z, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    z[i] = d[i] * r[i];
}

template <typename To, typename From>
__global__ void convert_kernel(To* dst, const From* src, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = static_cast<To>(src[i]);
}

/// partial[blockIdx.x] = sum over the block's entries of x_i y_i (in double)
/// (only the entries with mask 1 where a mask is given)
template <typename Number>
__global__ void partial_dot_kernel(const Number* x, const Number* y, std::int64_t n, const std::uint8_t* mask,
                                   double* partial) {
  using Reduce = cub::BlockReduce<double, block>;
  __shared__ typename Reduce::TempStorage tmp;
  double s = 0.0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (!mask || mask[i]) s += double(x[i]) * double(y[i]);
  s = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void finish_sum_kernel(const double* partial, int n, double* result) {
  using Reduce = cub::BlockReduce<double, block>;
  __shared__ typename Reduce::TempStorage tmp;
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
  s = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) *result = s;
}

/// Columns of one pass of multi_dot.
constexpr int multi_columns = 8;

/// partial[c reduce_grid + blockIdx.x] = the block's share of sum_i V[i + c n] w[i], c < k <= 8,
/// and with `square` of sum_i w[i]^2 at c = k (only the entries with mask 1 where a mask is given)
__global__ void partial_multi_dot_kernel(const double* __restrict__ V, std::int64_t n, int k, bool square,
                                         const double* __restrict__ w, const std::uint8_t* __restrict__ mask,
                                         double* __restrict__ partial) {
  using Reduce = cub::BlockReduce<double, block>;
  __shared__ typename Reduce::TempStorage tmp;
  double s[multi_columns + 1];
#pragma unroll
  for (int c = 0; c <= multi_columns; ++c) s[c] = 0.0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double wi = (!mask || mask[i]) ? w[i] : 0.0;
#pragma unroll
    for (int c = 0; c < multi_columns; ++c)
      if (c < k) s[c] += V[i + c * n] * wi;
    if (square) s[multi_columns] += wi * wi;
  }
#pragma unroll
  for (int c = 0; c <= multi_columns; ++c) {
    const bool sq = square && c == k;  // the squares go to column k
    if (c >= k && !sq) break;          // uniform over the block
    const double t = Reduce(tmp).Sum(sq ? s[multi_columns] : s[c]);
    if (threadIdx.x == 0) partial[c * reduce_grid + blockIdx.x] = t;
    __syncthreads();  // tmp is reused
  }
}

/// c[blockIdx.x] = sum of the `grid` partial sums of column blockIdx.x
__global__ void finish_multi_sum_kernel(const double* partial, int grid, double* c) {
  using Reduce = cub::BlockReduce<double, block>;
  __shared__ typename Reduce::TempStorage tmp;
  double s = 0.0;
  for (int i = threadIdx.x; i < grid; i += blockDim.x) s += partial[blockIdx.x * reduce_grid + i];
  s = Reduce(tmp).Sum(s);
  if (threadIdx.x == 0) c[blockIdx.x] = s;
}

/// y_i += alpha sum_c V[i + c n] a[c]
__global__ void multi_axpy_kernel(double alpha, const double* __restrict__ V, std::int64_t n, int k,
                                  const double* __restrict__ a, double* __restrict__ y) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int c = 0; c < k; ++c) s += V[i + c * n] * __ldg(a + c);
    y[i] += alpha * s;
  }
}

/// Scratch of the reductions: partial sums on the device and a pinned host word.
struct DotScratch {
  DeviceBuffer<double> partial{reduce_grid + 1};
  double* host = nullptr;
  DotScratch() { TCFEM_CUDA_CHECK(cudaMallocHost(&host, sizeof(double))); }
  ~DotScratch() {
    if (host) cudaFreeHost(host);
  }
};
DotScratch& scratch() {
  static DotScratch s;
  return s;
}
DeviceBuffer<double>& multi_scratch() {
  static DeviceBuffer<double> partial(std::size_t(multi_columns + 1) * reduce_grid);
  return partial;
}

}  // namespace

void set_component_timing(bool on) { timing_on = on; }
bool component_timing() { return timing_on; }

void synchronize() { TCFEM_CUDA_CHECK(cudaDeviceSynchronize()); }

template <typename Number>
void set_zero(DeviceVector<Number>& x) {
  if (x.size()) TCFEM_CUDA_CHECK(cudaMemsetAsync(x.data(), 0, x.size() * sizeof(Number)));
}

template <typename Number>
void fill(DeviceVector<Number>& x, Number value) {
  if (!x.size()) return;
  fill_kernel<<<grid_for(x.size()), block>>>(x.data(), value, std::int64_t(x.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
void copy(DeviceVector<Number>& dst, const DeviceVector<Number>& src) {
  TCFEM_ASSERT(dst.size() == src.size(), "device vector sizes differ");
  if (src.size() && dst.data() != src.data())
    TCFEM_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(Number), cudaMemcpyDeviceToDevice));
}

template <typename Number>
void axpy(double a, const DeviceVector<Number>& x, DeviceVector<Number>& y) {
  TCFEM_ASSERT(x.size() == y.size(), "device vector sizes differ");
  if (!x.size()) return;
  axpy_kernel<<<grid_for(x.size()), block>>>(static_cast<Number>(a), x.data(), y.data(), std::int64_t(x.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
void sadd(double a, const DeviceVector<Number>& x, DeviceVector<Number>& y) {
  TCFEM_ASSERT(x.size() == y.size(), "device vector sizes differ");
  if (!x.size()) return;
  sadd_kernel<<<grid_for(x.size()), block>>>(static_cast<Number>(a), x.data(), y.data(), std::int64_t(x.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
void scale_copy(double a, const DeviceVector<Number>& x, DeviceVector<Number>& y) {
  TCFEM_ASSERT(x.size() == y.size(), "device vector sizes differ");
  if (!x.size()) return;
  scale_copy_kernel<<<grid_for(x.size()), block>>>(static_cast<Number>(a), x.data(), y.data(),
                                                   std::int64_t(x.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
void residual_from_product(DeviceVector<Number>& r, const DeviceVector<Number>& b) {
  TCFEM_ASSERT(r.size() == b.size(), "device vector sizes differ");
  if (!r.size()) return;
  residual_kernel<<<grid_for(r.size()), block>>>(r.data(), b.data(), std::int64_t(r.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
void multiply(const DeviceVector<Number>& d, const DeviceVector<Number>& r, DeviceVector<Number>& z) {
  TCFEM_ASSERT(d.size() == r.size() && r.size() == z.size(), "device vector sizes differ");
  if (!r.size()) return;
  multiply_kernel<<<grid_for(r.size()), block>>>(d.data(), r.data(), z.data(), std::int64_t(r.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

bool spread(const DeviceReduction* red) { return red && red->comm && red->comm->distributed(); }

template <typename Number>
double dot(const DeviceVector<Number>& x, const DeviceVector<Number>& y, const DeviceReduction* red) {
  TCFEM_ASSERT(x.size() == y.size(), "device vector sizes differ");
  double result = 0.0;
  if (x.size()) {
    auto& s = scratch();
    const int grid = static_cast<int>(std::min<std::size_t>((x.size() + block - 1) / block, reduce_grid));
    partial_dot_kernel<<<grid, block>>>(x.data(), y.data(), std::int64_t(x.size()), red ? red->owned : nullptr,
                                        s.partial.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    finish_sum_kernel<<<1, block>>>(s.partial.data(), grid, s.partial.data() + reduce_grid);
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(
        cudaMemcpyAsync(s.host, s.partial.data() + reduce_grid, sizeof(double), cudaMemcpyDeviceToHost));
    TCFEM_CUDA_CHECK(cudaStreamSynchronize(0));
    result = *s.host;
  }
  if (spread(red)) result = red->comm->sum(result);
  return result;
}

template <typename Number>
double norm(const DeviceVector<Number>& x, const DeviceReduction* red) {
  return std::sqrt(std::max(0.0, dot(x, x, red)));
}

void multi_dot(const double* V, std::size_t n, int k, const double* w, double* c, const DeviceReduction* red,
               bool with_square) {
  if (k <= 0) return;
  const int values = k + (with_square ? 1 : 0);
  if (n == 0) {
    TCFEM_CUDA_CHECK(cudaMemsetAsync(c, 0, std::size_t(values) * sizeof(double)));
  } else {
    auto& partial = multi_scratch();
    const int grid = static_cast<int>(std::min<std::size_t>((n + block - 1) / block, reduce_grid));
    for (int c0 = 0; c0 < k; c0 += multi_columns) {
      const int kc = std::min(multi_columns, k - c0);
      const bool square = with_square && c0 + kc == k;  // with the last pass
      partial_multi_dot_kernel<<<grid, block>>>(V + std::size_t(c0) * n, std::int64_t(n), kc, square, w,
                                                red ? red->owned : nullptr, partial.data());
      TCFEM_CUDA_CHECK_LAUNCH();
      finish_multi_sum_kernel<<<kc + (square ? 1 : 0), block>>>(partial.data(), grid, c + c0);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  }
  if (!spread(red)) return;
  // the ranks' sums added on the host, one message for the values
  std::vector<double> h(static_cast<std::size_t>(values));
  TCFEM_CUDA_CHECK(cudaMemcpy(h.data(), c, h.size() * sizeof(double), cudaMemcpyDeviceToHost));
  red->comm->sum(h.data(), h.size());
  TCFEM_CUDA_CHECK(cudaMemcpy(c, h.data(), h.size() * sizeof(double), cudaMemcpyHostToDevice));
}

void multi_axpy(double alpha, const double* V, std::size_t n, int k, const double* a, double* y) {
  if (k <= 0 || n == 0) return;
  multi_axpy_kernel<<<grid_for(n), block>>>(alpha, V, std::int64_t(n), k, a, y);
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename To, typename From>
void convert(DeviceVector<To>& dst, const DeviceVector<From>& src) {
  TCFEM_ASSERT(dst.size() == src.size(), "device vector sizes differ");
  if (!src.size()) return;
  convert_kernel<<<grid_for(src.size()), block>>>(dst.data(), src.data(), std::int64_t(src.size()));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template void set_zero<double>(DeviceVector<double>&);
template void fill<double>(DeviceVector<double>&, double);
template void copy<double>(DeviceVector<double>&, const DeviceVector<double>&);
template void axpy<double>(double, const DeviceVector<double>&, DeviceVector<double>&);
template void sadd<double>(double, const DeviceVector<double>&, DeviceVector<double>&);
template void scale_copy<double>(double, const DeviceVector<double>&, DeviceVector<double>&);
template void residual_from_product<double>(DeviceVector<double>&, const DeviceVector<double>&);
template void multiply<double>(const DeviceVector<double>&, const DeviceVector<double>&,
                               DeviceVector<double>&);
template double dot<double>(const DeviceVector<double>&, const DeviceVector<double>&, const DeviceReduction*);
template double norm<double>(const DeviceVector<double>&, const DeviceReduction*);
template void set_zero<float>(DeviceVector<float>&);
template void fill<float>(DeviceVector<float>&, float);
template void copy<float>(DeviceVector<float>&, const DeviceVector<float>&);
template void axpy<float>(double, const DeviceVector<float>&, DeviceVector<float>&);
template void sadd<float>(double, const DeviceVector<float>&, DeviceVector<float>&);
template void scale_copy<float>(double, const DeviceVector<float>&, DeviceVector<float>&);
template void residual_from_product<float>(DeviceVector<float>&, const DeviceVector<float>&);
template void multiply<float>(const DeviceVector<float>&, const DeviceVector<float>&,
                               DeviceVector<float>&);
template double dot<float>(const DeviceVector<float>&, const DeviceVector<float>&, const DeviceReduction*);
template double norm<float>(const DeviceVector<float>&, const DeviceReduction*);
template void convert<float, double>(DeviceVector<float>&, const DeviceVector<double>&);
template void convert<double, float>(DeviceVector<double>&, const DeviceVector<float>&);
template void convert<double, double>(DeviceVector<double>&, const DeviceVector<double>&);
template void convert<float, float>(DeviceVector<float>&, const DeviceVector<float>&);

}  // namespace tcfem::multigrid::device
