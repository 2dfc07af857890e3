#include "multigrid/device/chebyshev_smoother.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "solvers/blas_lapack.h"

namespace tcfem::multigrid {
namespace {

constexpr int block = 256;
int grid_for(std::size_t n) {
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>((n + block - 1) / block, 65535)));
}
/// r_i = 0.5 + u_i (u_i in [0, 1) from the CPU's generator state after i + 1 steps), 0 where
/// constrained. The affine map s -> a s + c is raised to the power i + 1 by squaring (mod 2^64).
/// `global`: the entries' indices on one process where the vector is spread over ranks (null: i).
template <typename Number>
__global__ void random_start_kernel(Number* r, const unsigned char* constrained, const std::int64_t* global,
                                    std::int64_t n) {
  constexpr std::uint64_t a = 6364136223846793005ull, c = 1442695040888963407ull, s0 = 0x9e3779b97f4a7c15ull;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t ra = 1, rc = 0, ba = a, bc = c, m = std::uint64_t(global ? global[i] : i) + 1;
    while (m) {
      if (m & 1) {
        ra = ba * ra;
        rc = ba * rc + bc;
      }
      bc = ba * bc + bc;
      ba = ba * ba;
      m >>= 1;
    }
    const std::uint64_t state = ra * s0 + rc;
    const double u = double(state >> 11) * 0x1.0p-53;
    r[i] = (constrained && constrained[i]) ? Number(0) : static_cast<Number>(0.5 + u);
  }
}

/// out = D^{-1} in, 0 where constrained
template <typename Number>
__global__ void precondition_kernel(const Number* inv, const Number* in, const unsigned char* constrained, Number* out,
                                    std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = (constrained && constrained[i]) ? Number(0) : inv[i] * in[i];
}

template <typename Number>
__global__ void zero_constrained_kernel(Number* x, const unsigned char* constrained, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (constrained[i]) x[i] = Number(0);
}

/// z = D^{-1} (b - z) (z holds A x on entry), 0 where constrained; then d = c1 d + c2 z and x += d.
template <typename Number>
__global__ void chebyshev_step_kernel(const Number* inv, const Number* b, const unsigned char* constrained, Number* z,
                                      Number* d, Number* x, Number c1, Number c2, bool first, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const Number zi = (constrained && constrained[i]) ? Number(0) : inv[i] * (b[i] - z[i]);
    z[i] = zi;
    const Number di = first ? c2 * zi : c1 * d[i] + c2 * zi;
    d[i] = di;
    x[i] += di;
  }
}

/// x_i = b_i where constrained
template <typename Number>
__global__ void set_constrained_kernel(Number* x, const Number* b, const unsigned char* constrained, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (constrained[i]) x[i] = b[i];
}

}  // namespace

template <typename Number>
double estimate_largest_eigenvalue_device(const LevelOperator<DeviceVector<Number>>& op,
                                          const DeviceVector<Number>& inverse_diagonal,
                                          const DeviceBuffer<unsigned char>* constrained, int steps,
                                          const device::DeviceReduction* red, const std::int64_t* global) {
  const std::size_t n = op.size();
  const std::int64_t nn = std::int64_t(n);
  const unsigned char* mask = constrained && constrained->size() ? constrained->data() : nullptr;
  DeviceVector<Number> x(n), r(n), z(n), p(n), ap(n);
  device::set_zero(x);
  random_start_kernel<<<grid_for(n), block>>>(r.data(), mask, global, nn);
  TCFEM_CUDA_CHECK_LAUNCH();
  auto precondition = [&](DeviceVector<Number>& out, const DeviceVector<Number>& in) {
    precondition_kernel<<<grid_for(n), block>>>(inverse_diagonal.data(), in.data(), mask, out.data(), nn);
    TCFEM_CUDA_CHECK_LAUNCH();
  };
  precondition(z, r);
  device::copy(p, z);
  double rz = device::dot(r, z, red);
  const double rz0 = rz;
  std::vector<double> alphas, betas;
  for (int it = 0; it < steps && rz > 1e-24 * rz0; ++it) {
    op.vmult(ap, p);
    if (mask) {
      zero_constrained_kernel<<<grid_for(n), block>>>(ap.data(), mask, nn);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
    const double pap = device::dot(p, ap, red);
    if (!(pap > 0.0)) break;
    const double alpha = rz / pap;
    alphas.push_back(alpha);
    device::axpy(alpha, p, x);
    device::axpy(-alpha, ap, r);
    precondition(z, r);
    const double rz_new = device::dot(r, z, red);
    const double beta = rz_new / rz;
    betas.push_back(beta);
    device::sadd(beta, z, p);
    rz = rz_new;
  }
  const std::size_t m = alphas.size();
  if (m == 0) return 1.0;
  std::vector<double> diag(m), off(m - 1);
  for (std::size_t j = 0; j < m; ++j) {
    diag[j] = 1.0 / alphas[j] + (j > 0 ? betas[j - 1] / alphas[j - 1] : 0.0);
    if (j + 1 < m) off[j] = std::sqrt(betas[j]) / alphas[j];
  }
  return solvers::blas::tridiagonal_eigenvalues(diag, off).back();
}

namespace {
/// d <- 1 / d; counts the entries that are not positive.
template <typename Number>
__global__ void invert_diagonal_kernel(Number* d, unsigned long long* bad, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (!(d[i] > Number(0))) atomicAdd(bad, 1ull);
    d[i] = Number(1) / d[i];
  }
}

template <typename Number>
DeviceVector<Number> upload(const std::vector<Number>& host) {
  DeviceVector<Number> v;
  v.copy_from_host(host);
  return v;
}
}  // namespace

template <typename Number>
DeviceChebyshevSmoother<Number>::DeviceChebyshevSmoother(const LevelOperator<DeviceVector<Number>>& op,
                                                         const std::vector<Number>& diagonal,
                                                         const std::vector<char>& constrained, int degree,
                                                         double range, int eigenvalue_steps, double lambda_max,
                                                         const device::DeviceReduction* reduction,
                                                         const std::vector<std::int64_t>& global)
    : DeviceChebyshevSmoother(op, upload(diagonal), constrained, degree, range, eigenvalue_steps, lambda_max,
                              reduction, global) {}

template <typename Number>
DeviceChebyshevSmoother<Number>::DeviceChebyshevSmoother(const LevelOperator<DeviceVector<Number>>& op,
                                                         DeviceVector<Number> diagonal,
                                                         const std::vector<char>& constrained, int degree,
                                                         double range, int eigenvalue_steps, double lambda_max,
                                                         const device::DeviceReduction* reduction,
                                                         const std::vector<std::int64_t>& global)
    : op_(&op), degree_(degree) {
  if (degree < 1) throw InputError("Chebyshev smoother degree must be >= 1");
  if (!(range > 1.0)) throw InputError("Chebyshev smoothing range must be > 1");
  TCFEM_ASSERT(diagonal.size() == op.size(), "diagonal size");
  inverse_diagonal_ = std::move(diagonal);
  {
    DeviceBuffer<unsigned long long> bad(1);
    TCFEM_CUDA_CHECK(cudaMemset(bad.data(), 0, sizeof(unsigned long long)));
    const std::int64_t n = std::int64_t(inverse_diagonal_.size());
    invert_diagonal_kernel<Number><<<grid_for(n), block>>>(inverse_diagonal_.data(), bad.data(), n);
    TCFEM_CUDA_CHECK_LAUNCH();
    unsigned long long count = 0;
    bad.copy_to_host(&count, 1);
    TCFEM_ASSERT(count == 0, "Chebyshev smoother needs a positive diagonal");
  }
  if (!constrained.empty()) {
    TCFEM_ASSERT(constrained.size() == op.size(), "constraint mask size");
    constrained_ = DeviceBuffer<unsigned char>(std::vector<unsigned char>(constrained.begin(), constrained.end()));
    has_constraints_ = true;
  }
  if (lambda_max > 0.0) {
    lambda_max_ = lambda_max;
  } else {
    TCFEM_ASSERT(global.empty() || global.size() == op.size(), "global index list size");
    const DeviceBuffer<std::int64_t> d_global(global);
    lambda_max_ = 1.2 * estimate_largest_eigenvalue_device(op, inverse_diagonal_, &constrained_, eigenvalue_steps,
                                                           reduction, global.empty() ? nullptr : d_global.data());
  }
  lambda_min_ = lambda_max_ / range;
  z_.resize(op.size());
  d_.resize(op.size());
}

template <typename Number>
void DeviceChebyshevSmoother<Number>::smooth(DeviceVector<Number>& x, const DeviceVector<Number>& b,
                                             SweepOrder) const {
  const double theta = 0.5 * (lambda_max_ + lambda_min_);
  const double delta = 0.5 * (lambda_max_ - lambda_min_);
  const double sigma = theta / delta;
  double rho = 1.0 / sigma;
  const std::int64_t n = std::int64_t(x.size());
  const unsigned char* mask = has_constraints_ ? constrained_.data() : nullptr;
  op_->vmult(z_, x);
  chebyshev_step_kernel<<<grid_for(n), block>>>(inverse_diagonal_.data(), b.data(), mask, z_.data(), d_.data(),
                                                x.data(), Number(0), static_cast<Number>(1.0 / theta), true, n);
  TCFEM_CUDA_CHECK_LAUNCH();
  for (int k = 1; k < degree_; ++k) {
    const double rho_new = 1.0 / (2.0 * sigma - rho);
    op_->vmult(z_, x);
    chebyshev_step_kernel<<<grid_for(n), block>>>(inverse_diagonal_.data(), b.data(), mask, z_.data(), d_.data(),
                                                  x.data(), static_cast<Number>(rho_new * rho),
                                                  static_cast<Number>(2.0 * rho_new / delta), false, n);
    TCFEM_CUDA_CHECK_LAUNCH();
    rho = rho_new;
  }
  if (mask) {
    set_constrained_kernel<<<grid_for(n), block>>>(x.data(), b.data(), mask, n);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
}

template double estimate_largest_eigenvalue_device<double>(const LevelOperator<DeviceVector<double>>&,
                                                           const DeviceVector<double>&,
                                                           const DeviceBuffer<unsigned char>*, int,
                                                           const device::DeviceReduction*, const std::int64_t*);
template double estimate_largest_eigenvalue_device<float>(const LevelOperator<DeviceVector<float>>&,
                                                          const DeviceVector<float>&,
                                                          const DeviceBuffer<unsigned char>*, int,
                                                          const device::DeviceReduction*, const std::int64_t*);
template class DeviceChebyshevSmoother<double>;
template class DeviceChebyshevSmoother<float>;

}  // namespace tcfem::multigrid
