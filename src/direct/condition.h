#pragma once
// Spectral condition numbers of symmetric positive definite matrices: all eigenvalues of a dense
// matrix (LAPACK) for small sizes, the extreme Ritz values of Lanczos (no reorthogonalization; the
// extreme Ritz values converge first and are not disturbed by ghost copies) for large ones.
#include <cstdint>
#include <functional>
#include <string>

namespace tcfem::direct {

struct ConditionEstimate {
  double lambda_min = 0.0, lambda_max = 0.0;
  double kappa = 0.0;
  std::string method;  ///< "dense" or "lanczos"
  int steps = 0;       ///< Lanczos steps (0 for dense)
  bool converged = true;
};

/// Dense: eigenvalues of the n x n matrix (lower triangle of `a` read; `a` is not modified).
ConditionEstimate condition_dense(std::int64_t n, const double* a, std::int64_t lda);

/// Lanczos with y = A x given by `apply`; stops when both extreme Ritz values change by less than
/// `tolerance` (relative) over 10 steps, or after `max_steps`.
ConditionEstimate condition_lanczos(std::int64_t n, const std::function<void(const double*, double*)>& apply,
                                    int max_steps = 3000, double tolerance = 1e-7);

enum class ConditionMethod { automatic, dense, lanczos, off };
ConditionMethod parse_condition_method(const std::string& name, const std::string& option = "--condition");
const char* to_string(ConditionMethod m);

}  // namespace tcfem::direct
