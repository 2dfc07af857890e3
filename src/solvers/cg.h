#pragma once
// Preconditioned conjugate gradients with relative-residual stopping: ||b - A x|| <= tol ||b||.
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include "core/vector.h"

namespace tcfem::solvers {

struct SolverControl {
  double tolerance = 1e-10;  ///< relative residual
  int max_iterations = 10000;
  /// Called with (iteration, relative residual, seconds since start) at most every `progress_interval` s.
  std::function<void(int, double, double)> progress;
  double progress_interval = 1.0;
};

struct SolverResult {
  int iterations = 0;
  bool converged = false;
  double initial_residual = 0.0;
  double final_relative_residual = 0.0;
  std::vector<double> history;  ///< relative residual after each iteration (index 0: start)
  /// Left-preconditioned GMRES tests and records the preconditioned residual P (b - A x); this is
  /// ||b - A x|| / ||b|| of its final iterate. Negative for the other solvers (their residual is it).
  double unpreconditioned_relative_residual = -1.0;
};

/// Diagonal (Jacobi) preconditioner: z = D^{-1} r.
template <typename Number>
class JacobiPreconditioner {
 public:
  explicit JacobiPreconditioner(const Vector<Number>& diagonal) : inv_(diagonal.size()) {
    for (std::size_t i = 0; i < diagonal.size(); ++i) {
      TCFEM_ASSERT(diagonal[i] > Number(0), "Jacobi preconditioner needs a positive diagonal");
      inv_[i] = Number(1) / diagonal[i];
    }
  }
  void vmult(Vector<Number>& z, const Vector<Number>& r) const {
    for (std::size_t i = 0; i < r.size(); ++i) z[i] = inv_[i] * r[i];
  }

 private:
  Vector<Number> inv_;
};

/// Solves A x = b from the given x (usually zero). Operator and Preconditioner provide vmult(dst, src).
template <typename Number, typename Operator, typename Preconditioner>
SolverResult solve_cg(const Operator& A, Vector<Number>& x, const Vector<Number>& b, const Preconditioner& P,
                      const SolverControl& control) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto last_report = t0;
  SolverResult res;
  const std::size_t n = b.size();
  // work vectors with b's layout: distributed dot products over the owned entries
  auto r = Vector<Number>::like(b), z = Vector<Number>::like(b), p = Vector<Number>::like(b),
       Ap = Vector<Number>::like(b);
  A.vmult(Ap, x);
  for (std::size_t i = 0; i < n; ++i) r[i] = b[i] - Ap[i];
  const double bnorm = b.norm();
  const double scale = bnorm > 0 ? bnorm : 1.0;
  double rnorm = r.norm();
  res.initial_residual = rnorm;
  res.history.push_back(rnorm / scale);
  if (rnorm <= control.tolerance * scale) {
    res.converged = true;
    res.final_relative_residual = rnorm / scale;
    return res;
  }
  P.vmult(z, r);
  for (std::size_t i = 0; i < n; ++i) p[i] = z[i];
  double rz = r.dot(z);
  for (int it = 1; it <= control.max_iterations; ++it) {
    A.vmult(Ap, p);
    const double pAp = p.dot(Ap);
    if (!(pAp > 0.0) || !std::isfinite(pAp)) break;  // breakdown: operator not SPD or NaN
    const double alpha = rz / pAp;
    x.add(static_cast<Number>(alpha), p);
    r.add(static_cast<Number>(-alpha), Ap);
    rnorm = r.norm();
    res.iterations = it;
    res.history.push_back(rnorm / scale);
    if (!std::isfinite(rnorm)) break;
    if (rnorm <= control.tolerance * scale) {
      res.converged = true;
      break;
    }
    P.vmult(z, r);
    const double rz_new = r.dot(z);
    p.sadd(static_cast<Number>(rz_new / rz), z);
    rz = rz_new;
    if (control.progress) {
      const auto now = clock::now();
      if (std::chrono::duration<double>(now - last_report).count() >= control.progress_interval) {
        control.progress(it, rnorm / scale, std::chrono::duration<double>(now - t0).count());
        last_report = now;
      }
    }
  }
  res.final_relative_residual = rnorm / scale;
  return res;
}

}  // namespace tcfem::solvers
