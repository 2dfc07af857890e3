#include "direct/condition.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "direct/dense.h"

namespace tcfem::direct {

ConditionEstimate condition_dense(std::int64_t n, const double* a, std::int64_t lda) {
  ConditionEstimate c;
  c.method = "dense";
  if (n == 0) return c;
  std::vector<double> copy(static_cast<std::size_t>(n * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j; i < n; ++i) copy[i + j * n] = a[i + j * lda];
  const auto w = symmetric_eigenvalues(n, copy.data(), n);
  c.lambda_min = w.front();
  c.lambda_max = w.back();
  c.kappa = c.lambda_max / c.lambda_min;
  return c;
}

ConditionEstimate condition_lanczos(std::int64_t n, const std::function<void(const double*, double*)>& apply,
                                    int max_steps, double tolerance) {
  ConditionEstimate c;
  c.method = "lanczos";
  c.converged = false;
  if (n == 0) return c;
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(n)), v_old(static_cast<std::size_t>(n), 0.0), w(v.size());
  double norm = 0.0;
  for (auto& x : v) {
    x = dist(rng);
    norm += x * x;
  }
  norm = std::sqrt(norm);
  for (auto& x : v) x /= norm;
  std::vector<double> alpha, beta;
  double prev_min = 0.0, prev_max = 0.0;
  int next_check = 10;
  const int steps = static_cast<int>(std::min<std::int64_t>(max_steps, n));
  for (int k = 0; k < steps; ++k) {
    apply(v.data(), w.data());
    double a = 0.0;
    for (std::int64_t i = 0; i < n; ++i) a += w[i] * v[i];
    const double b_prev = beta.empty() ? 0.0 : beta.back();
    double b = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      w[i] -= a * v[i] + b_prev * v_old[i];
      b += w[i] * w[i];
    }
    b = std::sqrt(b);
    alpha.push_back(a);
    c.steps = k + 1;
    const bool invariant = b <= 1e-14 * std::abs(a);
    // check every 10 steps at first, then every 10% more steps (the checks cost O(k^2) each)
    if (k + 1 >= next_check || invariant || k + 1 == steps) {
      next_check = std::max(k + 11, (k + 1) * 11 / 10);
      const auto theta = tridiagonal_eigenvalues(alpha, std::vector<double>(beta.begin(), beta.end()));
      c.lambda_min = theta.front();
      c.lambda_max = theta.back();
      if (invariant || k + 1 == n ||
          (k >= 19 && prev_max > 0 && std::abs(c.lambda_min - prev_min) <= tolerance * c.lambda_min &&
           std::abs(c.lambda_max - prev_max) <= tolerance * c.lambda_max)) {
        c.converged = true;
        break;
      }
      prev_min = c.lambda_min;
      prev_max = c.lambda_max;
    }
    beta.push_back(b);
    for (std::int64_t i = 0; i < n; ++i) {
      v_old[i] = v[i];
      v[i] = w[i] / b;
    }
  }
  c.kappa = c.lambda_min > 0 ? c.lambda_max / c.lambda_min : 0.0;
  return c;
}

ConditionMethod parse_condition_method(const std::string& name, const std::string& option) {
  if (name == "auto") return ConditionMethod::automatic;
  if (name == "dense") return ConditionMethod::dense;
  if (name == "lanczos") return ConditionMethod::lanczos;
  if (name == "off") return ConditionMethod::off;
  throw InputError(option + ": value " + name + " is not allowed; allowed: auto, dense, lanczos, off");
}

const char* to_string(ConditionMethod m) {
  switch (m) {
    case ConditionMethod::automatic:
      return "auto";
    case ConditionMethod::dense:
      return "dense";
    case ConditionMethod::lanczos:
      return "lanczos";
    case ConditionMethod::off:
      return "off";
  }
  return "?";
}

}  // namespace tcfem::direct
