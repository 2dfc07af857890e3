#include "solvers/fgmres.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "solvers/arnoldi_least_squares.h"
#include "solvers/blas_lapack.h"
#include "solvers/block_orthogonalization.h"

namespace tcfem::solvers {

namespace {
using clock_type = std::chrono::steady_clock;

class Stopwatch {
 public:
  explicit Stopwatch(double* target) : target_(target), start_(clock_type::now()) {}
  ~Stopwatch() {
    if (target_) *target_ += std::chrono::duration<double>(clock_type::now() - start_).count();
  }

 private:
  double* target_;
  clock_type::time_point start_;
};
}  // namespace

SolverResult solve_fgmres(const LinearMap& A, Vector<double>& x, const Vector<double>& b, const LinearMap& P,
                          const SolverControl& control, const FgmresSettings& settings, KrylovTimes* times) {
  if (settings.restart < 1) throw InputError("--restart: FGMRES needs a Krylov basis of at least 1 vector");
  KrylovTimes local_times;
  if (!times) times = &local_times;
  const auto t0 = clock_type::now();
  auto last_report = t0;
  const std::size_t n = b.size();
  const int m = settings.restart;
  SolverResult res;
  std::vector<double> V(n * (m + 1)), Z(n * m);
  ArnoldiLeastSquares ls(m);
  std::vector<double> y(m), c2(m + 1);
  // work vectors with b's layout. Distributed: the basis vectors keep every ghost entry zero, so
  // that the block products over all local entries are sums over the owned ones
  auto r = Vector<double>::like(b), w = Vector<double>::like(b), zj = Vector<double>::like(b),
       vj = Vector<double>::like(b);
  const Communicator comm = b.distributed() ? b.layout()->communicator() : Communicator();
  const double bnorm = b.norm();
  const double scale = bnorm > 0 ? bnorm : 1.0;

  auto true_residual = [&]() {
    A(r, x);
    Stopwatch s(&times->vector_ops);
    for (std::size_t i = 0; i < n; ++i) r[i] = b[i] - r[i];
    r.zero_ghost_values();
    return r.norm();
  };
  double beta = 0.0;
  if (settings.zero_initial_guess) {
    for (std::size_t i = 0; i < n; ++i) r[i] = b[i];
    r.zero_ghost_values();
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
      for (std::size_t i = 0; i < n; ++i) V[i] = r[i] / beta;
      ls.start(beta);
    }
    int j_end = 0;
    bool breakdown = false;
    for (int j = 0; j < m && it < control.max_iterations; ++j) {
      std::copy(V.begin() + j * n, V.begin() + (j + 1) * n, vj.data());
      P(zj, vj);
      std::copy(zj.data(), zj.data() + n, Z.begin() + j * n);
      A(w, zj);
      w.zero_ghost_values();
      double* h = ls.column(j);
      double hnext;
      {
        Stopwatch s(&times->orthogonalization);
        hnext = orthogonalize_cgs2(BlockBasis{V.data(), std::int64_t(n), j + 1, std::int64_t(n)}, w.data(), h,
                                   c2.data(), comm);
      }
      h[j + 1] = hnext;
      {
        Stopwatch s(&times->vector_ops);
        if (hnext > 0.0)
          for (std::size_t i = 0; i < n; ++i) V[(j + 1) * n + i] = w[i] / hnext;
      }
      ++it;
      j_end = j + 1;
      const double estimate = ls.add_column(j);
      res.history.push_back(estimate / scale);
      if (!std::isfinite(estimate)) {
        breakdown = true;
        break;
      }
      if (control.progress) {
        const auto now = clock_type::now();
        if (std::chrono::duration<double>(now - last_report).count() >= control.progress_interval) {
          control.progress(it, estimate / scale, std::chrono::duration<double>(now - t0).count());
          last_report = now;
        }
      }
      // converged by the estimate, or a lucky breakdown (the solution lies in the Krylov space)
      if (estimate <= control.tolerance * scale || !(hnext > 0.0)) break;
    }
    // y = H^{-1} g (upper triangular j_end x j_end), x += Z y
    {
      Stopwatch s(&times->vector_ops);
      ls.solve(j_end, y.data());
      blas::gemv(false, std::int64_t(n), j_end, 1.0, Z.data(), std::int64_t(n), y.data(), 1.0, x.data());
    }
    res.iterations = it;
    beta = true_residual();
    res.final_relative_residual = beta / scale;
    if (!std::isfinite(beta) || breakdown) break;
    if (beta <= control.tolerance * scale) {
      res.converged = true;
      break;
    }
    // the true residual decides; otherwise restart from it
  }
  return res;
}

SolverResult solve_gmres_left(const LinearMap& A, Vector<double>& x, const Vector<double>& b, const LinearMap& P,
                              const SolverControl& control, const FgmresSettings& settings, KrylovTimes* times) {
  const std::size_t n = b.size();
  // b's layout: the inner FGMRES and the norms reduce over the ranks
  auto r = Vector<double>::like(b), pr = Vector<double>::like(b), t = Vector<double>::like(b),
       d = Vector<double>::like(b);
  auto residual = [&]() {
    A(r, x);
    for (std::size_t i = 0; i < n; ++i) r[i] = b[i] - r[i];
  };
  residual();
  P(pr, r);
  const LinearMap PA = [&](Vector<double>& dst, const Vector<double>& src) {
    A(t, src);
    P(dst, t);
  };
  const LinearMap identity = [](Vector<double>& dst, const Vector<double>& src) {
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  };
  FgmresSettings correction_settings = settings;
  correction_settings.zero_initial_guess = true;  // d = 0: no V-cycle of a zero vector
  SolverResult res = solve_fgmres(PA, d, pr, identity, control, correction_settings, times);
  x.add(1.0, d);
  residual();
  const double bnorm = b.norm();
  res.unpreconditioned_relative_residual = r.norm() / (bnorm > 0 ? bnorm : 1.0);
  return res;
}

}  // namespace tcfem::solvers
