#pragma once
// Preconditioned Richardson iteration x <- x + P (b - A x), the plain multigrid iteration when P
// is one V-cycle. Residuals in the precision of the vectors (double): with a lower-precision
// V-cycle this is iterative refinement. Stops at ||b - A x|| <= tol ||b||.
#include <chrono>
#include <cmath>

#include "core/vector.h"
#include "solvers/cg.h"

namespace tcfem::solvers {

template <typename Operator, typename Preconditioner>
SolverResult solve_richardson(const Operator& A, Vector<double>& x, const Vector<double>& b, const Preconditioner& P,
                              const SolverControl& control) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto last_report = t0;
  SolverResult res;
  const std::size_t n = b.size();
  auto r = Vector<double>::like(b), z = Vector<double>::like(b);  // b's layout: distributed norms
  const double bnorm = b.norm();
  const double scale = bnorm > 0 ? bnorm : 1.0;
  auto residual = [&]() {
    A.vmult(r, x);
    for (std::size_t i = 0; i < n; ++i) r[i] = b[i] - r[i];
    return r.norm();
  };
  double rnorm = residual();
  res.initial_residual = rnorm;
  res.history.push_back(rnorm / scale);
  for (int it = 1; it <= control.max_iterations && rnorm > control.tolerance * scale && std::isfinite(rnorm); ++it) {
    P.vmult(z, r);
    x.add(1.0, z);
    rnorm = residual();
    res.iterations = it;
    res.history.push_back(rnorm / scale);
    if (control.progress) {
      const auto now = clock::now();
      if (std::chrono::duration<double>(now - last_report).count() >= control.progress_interval) {
        control.progress(it, rnorm / scale, std::chrono::duration<double>(now - t0).count());
        last_report = now;
      }
    }
  }
  res.converged = rnorm <= control.tolerance * scale;
  res.final_relative_residual = rnorm / scale;
  return res;
}

}  // namespace tcfem::solvers
