#include "solvers/device_krylov.h"

#include <chrono>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "solvers/arnoldi_least_squares.h"
#include "solvers/device_blas.h"

namespace tcfem::solvers {

cublasHandle_t device_blas_handle() {
  // created once and kept for the life of the process: destroying it from a static destructor
  // could run after the CUDA runtime has shut down
  static const cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    TCFEM_DEVICE_BLAS_CHECK(cublasCreate(&h));
    TCFEM_DEVICE_BLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    return h;
  }();
  return handle;
}

namespace {
using clock_type = std::chrono::steady_clock;
namespace dev = multigrid::device;

/// Adds its lifetime to a counter; waits for the device at both ends when component timing is on.
class Stopwatch {
 public:
  explicit Stopwatch(double* target) : target_(target), start_(now()) {}
  ~Stopwatch() {
    if (target_) *target_ += std::chrono::duration<double>(now() - start_).count();
  }

 private:
  static clock_type::time_point now() {
    if (dev::component_timing()) dev::synchronize();
    return clock_type::now();
  }
  double* target_;
  clock_type::time_point start_;
};

int blas_int(std::size_t n) {
  if (n > std::size_t(INT_MAX)) throw InputError("FGMRES on the device: vectors longer than 2^31 entries");
  return int(n);
}

void report_progress(const SolverControl& control, clock_type::time_point t0, clock_type::time_point& last, int it,
                     double rel) {
  if (!control.progress) return;
  const auto now = clock_type::now();
  if (std::chrono::duration<double>(now - last).count() >= control.progress_interval) {
    control.progress(it, rel, std::chrono::duration<double>(now - t0).count());
    last = now;
  }
}
}  // namespace

SolverResult solve_fgmres_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                                 const DeviceLinearMap& P, const SolverControl& control,
                                 const FgmresSettings& settings, KrylovTimes* times, const DeviceReduction* red) {
  if (settings.restart < 1) throw InputError("--restart: FGMRES needs a Krylov basis of at least 1 vector");
  KrylovTimes local_times;
  if (!times) times = &local_times;
  const auto t0 = clock_type::now();
  auto last_report = t0;
  const std::size_t n = b.size();
  const int ni = blas_int(n);
  const int m = settings.restart;
  const auto h = device_blas_handle();
  SolverResult res;
  DeviceBuffer<double> V(n * (m + 1)), Z(n * m), coeffs(2 * (m + 1)), y_dev(m);
  ArnoldiLeastSquares ls(m);
  std::vector<double> y(m), c_host(2 * (m + 1));
  DeviceVectorD r(n), w(n), zj(n), vj(n);
  const double bnorm = dev::norm(b, red);
  const double scale = bnorm > 0 ? bnorm : 1.0;

  auto true_residual = [&]() {
    A(r, x);
    Stopwatch s(&times->vector_ops);
    dev::residual_from_product(r, b);
    return dev::norm(r, red);
  };
  auto column = [&](DeviceBuffer<double>& basis, int j) { return basis.data() + std::size_t(j) * n; };
  double beta = 0.0;
  if (settings.zero_initial_guess) {
    dev::copy(r, b);
    beta = bnorm;
  } else {
    beta = true_residual();
  }
  res.initial_residual = beta;
  res.history.push_back(beta / scale);
  res.final_relative_residual = beta / scale;
  if (beta <= control.tolerance * scale) {
    res.converged = true;
    return res;
  }
  int it = 0;
  while (it < control.max_iterations) {
    {
      Stopwatch s(&times->vector_ops);
      const double inv = 1.0 / beta;
      TCFEM_CUDA_CHECK(cudaMemcpyAsync(column(V, 0), r.data(), n * sizeof(double), cudaMemcpyDeviceToDevice));
      TCFEM_DEVICE_BLAS_CHECK(cublasDscal(h, ni, &inv, column(V, 0), 1));
      ls.start(beta);
    }
    int j_end = 0;
    bool breakdown = false;
    for (int j = 0; j < m && it < control.max_iterations; ++j) {
      TCFEM_CUDA_CHECK(cudaMemcpyAsync(vj.data(), column(V, j), n * sizeof(double), cudaMemcpyDeviceToDevice));
      P(zj, vj);
      TCFEM_CUDA_CHECK(cudaMemcpyAsync(column(Z, j), zj.data(), n * sizeof(double), cudaMemcpyDeviceToDevice));
      A(w, zj);
      double* hcol = ls.column(j);
      double hnext;
      {
        // CGS2: c1 = V^T w, w -= V c1, c2 = V^T w, w -= V c2, h = c1 + c2; ||w||^2 with the
        // second pass's products (one reduction fewer, as on the CPU: solvers/block_orthogonalization.h)
        Stopwatch s(&times->orthogonalization);
        const int k = j + 1;
        double* c1 = coeffs.data();
        double* c2 = coeffs.data() + (m + 1);  // k + 1 <= m + 1 values
        dev::multi_dot(V.data(), n, k, w.data(), c1, red);
        dev::multi_axpy(-1.0, V.data(), n, k, c1, w.data());
        dev::multi_dot(V.data(), n, k, w.data(), c2, red, true);
        dev::multi_axpy(-1.0, V.data(), n, k, c2, w.data());
        TCFEM_CUDA_CHECK(cudaMemcpy(c_host.data(), coeffs.data(), 2 * (m + 1) * sizeof(double), cudaMemcpyDeviceToHost));
        double c2_squared = 0.0;
        for (int i = 0; i < k; ++i) {
          hcol[i] = c_host[i] + c_host[(m + 1) + i];
          c2_squared += c_host[(m + 1) + i] * c_host[(m + 1) + i];
        }
        // ||w - V c2||^2 = ||w||^2 - ||c2||^2 for orthonormal V; where w lay (nearly) in the span
        // of V (the difference below a quarter of ||w||^2) the norm is summed again
        const double s1 = c_host[(m + 1) + k], s2 = s1 - c2_squared;
        hnext = s2 > 0.25 * s1 ? std::sqrt(s2) : dev::norm(w, red);
      }
      hcol[j + 1] = hnext;
      {
        Stopwatch s(&times->vector_ops);
        if (hnext > 0.0) {
          const double inv = 1.0 / hnext;
          TCFEM_CUDA_CHECK(cudaMemcpyAsync(column(V, j + 1), w.data(), n * sizeof(double), cudaMemcpyDeviceToDevice));
          TCFEM_DEVICE_BLAS_CHECK(cublasDscal(h, ni, &inv, column(V, j + 1), 1));
        }
      }
      ++it;
      j_end = j + 1;
      const double estimate = ls.add_column(j);  // Givens rotations on the host, as on the CPU
      res.history.push_back(estimate / scale);
      if (!std::isfinite(estimate)) {
        breakdown = true;
        break;
      }
      report_progress(control, t0, last_report, it, estimate / scale);
      if (estimate <= control.tolerance * scale || !(hnext > 0.0)) break;
    }
    {
      // y = H^{-1} g (upper triangular j_end x j_end), x += Z y
      Stopwatch s(&times->vector_ops);
      ls.solve(j_end, y.data());
      if (j_end > 0) {
        y_dev.copy_from_host(y.data(), j_end);
        dev::multi_axpy(1.0, Z.data(), n, j_end, y_dev.data(), x.data());
      }
    }
    res.iterations = it;
    beta = true_residual();
    res.final_relative_residual = beta / scale;
    if (!std::isfinite(beta) || breakdown) break;
    if (beta <= control.tolerance * scale) {
      res.converged = true;
      break;
    }
  }
  return res;
}

SolverResult solve_cg_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                             const DeviceLinearMap& P, const SolverControl& control, const DeviceReduction* red) {
  const auto t0 = clock_type::now();
  auto last_report = t0;
  SolverResult res;
  const std::size_t n = b.size();
  DeviceVectorD r(n), z(n), p(n), Ap(n);
  A(Ap, x);
  dev::copy(r, Ap);
  dev::residual_from_product(r, b);
  const double bnorm = dev::norm(b, red);
  const double scale = bnorm > 0 ? bnorm : 1.0;
  double rnorm = dev::norm(r, red);
  res.initial_residual = rnorm;
  res.history.push_back(rnorm / scale);
  if (rnorm <= control.tolerance * scale) {
    res.converged = true;
    res.final_relative_residual = rnorm / scale;
    return res;
  }
  P(z, r);
  dev::copy(p, z);
  double rz = dev::dot(r, z, red);
  for (int it = 1; it <= control.max_iterations; ++it) {
    A(Ap, p);
    const double pAp = dev::dot(p, Ap, red);
    if (!(pAp > 0.0) || !std::isfinite(pAp)) break;
    const double alpha = rz / pAp;
    dev::axpy(alpha, p, x);
    dev::axpy(-alpha, Ap, r);
    rnorm = dev::norm(r, red);
    res.iterations = it;
    res.history.push_back(rnorm / scale);
    if (!std::isfinite(rnorm)) break;
    if (rnorm <= control.tolerance * scale) {
      res.converged = true;
      break;
    }
    P(z, r);
    const double rz_new = dev::dot(r, z, red);
    dev::sadd(rz_new / rz, z, p);
    rz = rz_new;
    report_progress(control, t0, last_report, it, rnorm / scale);
  }
  res.final_relative_residual = rnorm / scale;
  return res;
}

SolverResult solve_richardson_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                                     const DeviceLinearMap& P, const SolverControl& control,
                                     const DeviceReduction* red) {
  const auto t0 = clock_type::now();
  auto last_report = t0;
  SolverResult res;
  const std::size_t n = b.size();
  DeviceVectorD r(n), z(n);
  const double bnorm = dev::norm(b, red);
  const double scale = bnorm > 0 ? bnorm : 1.0;
  auto residual = [&]() {
    A(r, x);
    dev::residual_from_product(r, b);
    return dev::norm(r, red);
  };
  double rnorm = residual();
  res.initial_residual = rnorm;
  res.history.push_back(rnorm / scale);
  for (int it = 1; it <= control.max_iterations && rnorm > control.tolerance * scale && std::isfinite(rnorm); ++it) {
    P(z, r);
    dev::axpy(1.0, z, x);
    rnorm = residual();
    res.iterations = it;
    res.history.push_back(rnorm / scale);
    report_progress(control, t0, last_report, it, rnorm / scale);
  }
  res.converged = rnorm <= control.tolerance * scale;
  res.final_relative_residual = rnorm / scale;
  return res;
}

SolverResult solve_gmres_left_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                                     const DeviceLinearMap& P, const SolverControl& control,
                                     const FgmresSettings& settings, KrylovTimes* times,
                                     const DeviceReduction* red) {
  const std::size_t n = b.size();
  DeviceVectorD r(n), pr(n), t(n), d(n);
  auto residual = [&]() {
    A(r, x);
    multigrid::device::residual_from_product(r, b);
  };
  residual();
  P(pr, r);
  const DeviceLinearMap PA = [&](DeviceVectorD& dst, const DeviceVectorD& src) {
    A(t, src);
    P(dst, t);
  };
  const DeviceLinearMap identity = [](DeviceVectorD& dst, const DeviceVectorD& src) {
    multigrid::device::copy(dst, src);
  };
  multigrid::device::set_zero(d);
  FgmresSettings correction_settings = settings;
  correction_settings.zero_initial_guess = true;  // d = 0: no V-cycle of a zero vector
  SolverResult res = solve_fgmres_device(PA, d, pr, identity, control, correction_settings, times, red);
  multigrid::device::axpy(1.0, d, x);
  residual();
  const double bnorm = multigrid::device::norm(b, red);
  res.unpreconditioned_relative_residual = multigrid::device::norm(r, red) / (bnorm > 0 ? bnorm : 1.0);
  return res;
}

}  // namespace tcfem::solvers
