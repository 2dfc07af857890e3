#include "multigrid/device/coarse_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "direct/cuda_dense.h"
#include "multigrid/host/coarse_solver.h"
#include "solvers/blas_lapack.h"
#include "solvers/device_blas.h"

namespace tcfem::multigrid {

template <typename Number>
DeviceCholeskyCoarseSolver<Number>::DeviceCholeskyCoarseSolver(const std::vector<double>& factor, std::size_t n)
    : n_(n), factor_(factor), work_(n), result_(n) {
  TCFEM_ASSERT(factor.size() == n * n, "Cholesky factor size");
  if (n > std::size_t(std::numeric_limits<int>::max() / 2)) throw InputError("coarse Cholesky factor too large");
  direct::cuda_cholesky_inverse_in_place(static_cast<std::int64_t>(n), factor_.data(), "the coarsest-level matrix");
  keep_inverse();
}

template <typename Number>
DeviceCholeskyCoarseSolver<Number>::DeviceCholeskyCoarseSolver(std::size_t n)
    : n_(n), factor_(n * n), work_(n), result_(n) {
  if (n > std::size_t(std::numeric_limits<int>::max() / 2)) throw InputError("coarse Cholesky factor too large");
  TCFEM_CUDA_CHECK(cudaMemset(factor_.data(), 0, n * n * sizeof(double)));
}

namespace {
__global__ void narrow(std::int64_t n, const double* in, float* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = float(in[i]);
}
}  // namespace

template <typename Number>
void DeviceCholeskyCoarseSolver<Number>::keep_inverse() {
  if constexpr (sizeof(Number) == 4) {
    const std::int64_t entries = std::int64_t(n_ * n_);
    inverse32_.allocate(std::size_t(entries));
    if (entries == 0) return;
    narrow<<<int(std::min<std::int64_t>((entries + 255) / 256, 65535)), 256>>>(entries, factor_.data(),
                                                                              inverse32_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    factor_ = DeviceBuffer<double>();
    work_ = DeviceVector<double>();
    result_ = DeviceVector<double>();
  }
}

namespace {
/// dense[i + n * cols[p]] = values[p] for the entries p of row i (one warp per row).
__global__ void csr_to_dense(std::int64_t n, const std::size_t* row_ptr, const std::uint32_t* cols,
                             const double* values, double* dense) {
  const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t i = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32; i < n; i += warps)
    for (std::size_t p = row_ptr[i] + threadIdx.x % 32; p < row_ptr[i + 1]; p += 32)
      dense[i + n * std::int64_t(cols[p])] = values[p];
}
}  // namespace

template <typename Number>
std::unique_ptr<DeviceCholeskyCoarseSolver<Number>> DeviceCholeskyCoarseSolver<Number>::factor_on_device(
    const operators::SparseMatrix& a) {
  TCFEM_ASSERT(a.n_rows() == a.n_cols(), "coarse matrix is square");
  const std::size_t n = a.n_rows();
  auto solver = std::make_unique<DeviceCholeskyCoarseSolver<Number>>(n);
  if (n == 0) return solver;
  if (n <= max_host_inverse_coarse_dofs) {
    // small: factored and inverted on the host (milliseconds), the device's solver libraries left
    // unloaded (their first use costs tens of milliseconds)
    std::vector<double> dense(n * n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t p = a.row_ptr()[i]; p < a.row_ptr()[i + 1]; ++p) dense[i + n * a.cols()[p]] = a.values()[p];
    solvers::blas::cholesky_factor(static_cast<std::int64_t>(n), dense);
    solvers::blas::cholesky_inverse(static_cast<std::int64_t>(n), dense);
    solver->factor_.copy_from_host(dense.data(), n * n);
    solver->keep_inverse();
    return solver;
  }
  const DeviceBuffer<std::size_t> row_ptr(a.row_ptr());
  const DeviceBuffer<std::uint32_t> cols(a.cols());
  const DeviceBuffer<double> values(a.values());
  const int threads = 256;
  const int blocks = int(std::min<std::size_t>((n * 32 + threads - 1) / threads, 65535));
  csr_to_dense<<<blocks, threads>>>(std::int64_t(n), row_ptr.data(), cols.data(), values.data(),
                                    solver->factor_.data());
  TCFEM_CUDA_CHECK_LAUNCH();
  direct::cuda_cholesky_factor_in_place(static_cast<std::int64_t>(n), solver->factor_.data(),
                                        "the coarsest-level matrix");
  direct::cuda_cholesky_inverse_in_place(static_cast<std::int64_t>(n), solver->factor_.data(),
                                         "the coarsest-level matrix");
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the CSR arrays go out of scope
  solver->keep_inverse();
  return solver;
}

template <typename Number>
std::unique_ptr<DeviceCholeskyCoarseSolver<Number>> DeviceCholeskyCoarseSolver<Number>::factor_on_device(
    const std::vector<double>& matrix, std::size_t n) {
  auto solver = std::make_unique<DeviceCholeskyCoarseSolver<Number>>(n);
  TCFEM_ASSERT(matrix.size() == n * n, "coarse matrix size");
  solver->factor_.copy_from_host(matrix.data(), n * n);
  direct::cuda_cholesky_factor_in_place(static_cast<std::int64_t>(n), solver->factor_.data(),
                                        "the coarsest-level matrix");
  direct::cuda_cholesky_inverse_in_place(static_cast<std::int64_t>(n), solver->factor_.data(),
                                         "the coarsest-level matrix");
  solver->keep_inverse();
  return solver;
}

template <typename Number>
void DeviceCholeskyCoarseSolver<Number>::solve(DeviceVector<Number>& x, const DeviceVector<Number>& b) const {
  TCFEM_ASSERT(x.size() == n_ && b.size() == n_, "coarse solver vector sizes");
  if (n_ == 0) return;
  const auto h = solvers::device_blas_handle();
  const int n = int(n_);
  if constexpr (sizeof(Number) == 4) {
    // fp32: one pass over the rounded inverse (half the bytes of the fp64 one)
    const float one = 1.0f, zero = 0.0f;
    TCFEM_DEVICE_BLAS_CHECK(cublasSgemv(h, CUBLAS_OP_N, n, n, &one, inverse32_.data(), n, b.data(), 1, &zero,
                                        x.data(), 1));
    return;
  }
  device::convert(work_, b);
  // x = A^{-1} b: one pass over the inverse (two triangular solves are latency-bound: 2.4 ms at
  // n = 11,025 on the H200, against one read of the 0.97 GB matrix)
  const double one = 1.0, zero = 0.0;
  TCFEM_DEVICE_BLAS_CHECK(cublasDgemv(h, CUBLAS_OP_N, n, n, &one, factor_.data(), n, work_.data(), 1, &zero,
                                      result_.data(), 1));
  device::convert(x, result_);
}

template <typename Number>
DeviceCgCoarseSolver<Number>::DeviceCgCoarseSolver(const LevelOperator<DeviceVector<Number>>& op,
                                                   const std::vector<Number>& diagonal, double tolerance)
    : op_(&op), tolerance_(std::max(tolerance, 10.0 * double(std::numeric_limits<Number>::epsilon()))) {
  const std::size_t n = op.size();
  TCFEM_ASSERT(diagonal.size() == n, "diagonal size");
  std::vector<Number> inv(n);
  for (std::size_t i = 0; i < n; ++i) {
    TCFEM_ASSERT(diagonal[i] > Number(0), "Jacobi preconditioner needs a positive diagonal");
    inv[i] = Number(1) / diagonal[i];
  }
  inverse_diagonal_.copy_from_host(inv);
  r_.resize(n);
  z_.resize(n);
  p_.resize(n);
  ap_.resize(n);
}

template <typename Number>
void DeviceCgCoarseSolver<Number>::solve(DeviceVector<Number>& x, const DeviceVector<Number>& b) const {
  // solvers::solve_cg with x = 0 and the Jacobi preconditioner, on device vectors
  device::set_zero(x);
  device::copy(r_, b);  // r = b - A 0
  const double bnorm = device::norm(b);
  const double scale = bnorm > 0 ? bnorm : 1.0;
  double rnorm = bnorm;
  last_iterations_ = 0;
  if (rnorm <= tolerance_ * scale) return;
  device::multiply(inverse_diagonal_, r_, z_);
  device::copy(p_, z_);
  double rz = device::dot(r_, z_);
  for (int it = 1; it <= 10000; ++it) {
    op_->vmult(ap_, p_);
    const double pap = device::dot(p_, ap_);
    if (!(pap > 0.0) || !std::isfinite(pap)) break;
    const double alpha = rz / pap;
    device::axpy(alpha, p_, x);
    device::axpy(-alpha, ap_, r_);
    rnorm = device::norm(r_);
    last_iterations_ = it;
    if (!std::isfinite(rnorm) || rnorm <= tolerance_ * scale) break;
    device::multiply(inverse_diagonal_, r_, z_);
    const double rz_new = device::dot(r_, z_);
    device::sadd(rz_new / rz, z_, p_);
    rz = rz_new;
  }
}

template <int dim, typename Number>
std::unique_ptr<CoarseSolver<DeviceVector<Number>>> make_device_coarse_solver(
    CoarseSolverKind kind, const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
    const operators::OperatorConfig& config, const LevelOperator<DeviceVector<Number>>& op,
    const std::vector<Number>& diagonal, double cg_tolerance, CoarseSolverKind& chosen) {
  if (kind == CoarseSolverKind::automatic)
    kind = dofs.n_local() <= max_device_dense_coarse_dofs ? CoarseSolverKind::cholesky : CoarseSolverKind::cg;
  chosen = kind;
  if (kind == CoarseSolverKind::cholesky) {
    return DeviceCholeskyCoarseSolver<Number>::factor_on_device(coarse_matrix<dim>(mesh, dofs, config));
  }
  return std::make_unique<DeviceCgCoarseSolver<Number>>(op, diagonal, cg_tolerance);
}

template class DeviceCholeskyCoarseSolver<double>;
template class DeviceCholeskyCoarseSolver<float>;
template class DeviceCgCoarseSolver<double>;
template class DeviceCgCoarseSolver<float>;
template std::unique_ptr<CoarseSolver<DeviceVector<double>>> make_device_coarse_solver<2, double>(
    CoarseSolverKind, const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const operators::OperatorConfig&,
    const LevelOperator<DeviceVector<double>>&, const std::vector<double>&, double, CoarseSolverKind&);
template std::unique_ptr<CoarseSolver<DeviceVector<double>>> make_device_coarse_solver<3, double>(
    CoarseSolverKind, const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const operators::OperatorConfig&,
    const LevelOperator<DeviceVector<double>>&, const std::vector<double>&, double, CoarseSolverKind&);
template std::unique_ptr<CoarseSolver<DeviceVector<float>>> make_device_coarse_solver<2, float>(
    CoarseSolverKind, const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const operators::OperatorConfig&,
    const LevelOperator<DeviceVector<float>>&, const std::vector<float>&, double, CoarseSolverKind&);
template std::unique_ptr<CoarseSolver<DeviceVector<float>>> make_device_coarse_solver<3, float>(
    CoarseSolverKind, const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const operators::OperatorConfig&,
    const LevelOperator<DeviceVector<float>>&, const std::vector<float>&, double, CoarseSolverKind&);

}  // namespace tcfem::multigrid
