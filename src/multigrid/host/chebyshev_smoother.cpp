#include "multigrid/host/chebyshev_smoother.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "solvers/blas_lapack.h"

namespace tcfem::multigrid {

namespace {
constexpr std::uint64_t lcg_a = 6364136223846793005ull, lcg_c = 1442695040888963407ull;
constexpr std::uint64_t lcg_seed = 0x9e3779b97f4a7c15ull;

/// The generator's state after `steps` steps from `state` (the affine map s -> a s + c raised to
/// the power `steps` by squaring, modulo 2^64).
std::uint64_t lcg_skip(std::uint64_t state, std::uint64_t steps) {
  std::uint64_t acc_a = 1, acc_c = 0, a = lcg_a, c = lcg_c;
  while (steps) {
    if (steps & 1) {
      acc_a *= a;
      acc_c = acc_c * a + c;
    }
    c = c * (a + 1);
    a *= a;
    steps >>= 1;
  }
  return acc_a * state + acc_c;
}
}  // namespace

template <typename Number>
double estimate_largest_eigenvalue(const LevelOperator<Vector<Number>>& op, const Vector<Number>& inverse_diagonal,
                                   const std::vector<char>& constrained, int steps,
                                   std::span<const std::int64_t> global_index) {
  const std::size_t n = op.size();
  TCFEM_ASSERT(global_index.empty() || global_index.size() == n, "one global index per entry");
  auto x = Vector<Number>::like(inverse_diagonal), r = x.like(x), z = x.like(x), p = x.like(x), ap = x.like(x);
  // fixed pseudo-random right-hand side in [0.5, 1.5) (a reproducible start vector)
  std::uint64_t state = lcg_seed;
  for (std::size_t i = 0; i < n; ++i) {
    state = global_index.empty() ? state * lcg_a + lcg_c : lcg_skip(lcg_seed, std::uint64_t(global_index[i]) + 1);
    const double u = double(state >> 11) * 0x1.0p-53;
    r[i] = (!constrained.empty() && constrained[i]) ? Number(0) : static_cast<Number>(0.5 + u);
  }
  auto precondition = [&](Vector<Number>& out, const Vector<Number>& in) {
    for (std::size_t i = 0; i < n; ++i) out[i] = inverse_diagonal[i] * in[i];
    if (!constrained.empty())
      for (std::size_t i = 0; i < n; ++i)
        if (constrained[i]) out[i] = Number(0);
  };
  precondition(z, r);
  p = z;
  double rz = r.dot(z);
  const double rz0 = rz;
  std::vector<double> alphas, betas;
  for (int it = 0; it < steps && rz > 1e-24 * rz0; ++it) {
    op.vmult(ap, p);
    if (!constrained.empty())
      for (std::size_t i = 0; i < n; ++i)
        if (constrained[i]) ap[i] = Number(0);
    const double pap = p.dot(ap);
    if (!(pap > 0.0)) break;
    const double alpha = rz / pap;
    alphas.push_back(alpha);
    x.add(static_cast<Number>(alpha), p);
    r.add(static_cast<Number>(-alpha), ap);
    precondition(z, r);
    const double rz_new = r.dot(z);
    const double beta = rz_new / rz;
    betas.push_back(beta);
    p.sadd(static_cast<Number>(beta), z);
    rz = rz_new;
  }
  const std::size_t m = alphas.size();
  if (m == 0) return 1.0;
  std::vector<double> diag(m), off(m - 1);
  for (std::size_t j = 0; j < m; ++j) {
    diag[j] = 1.0 / alphas[j] + (j > 0 ? betas[j - 1] / alphas[j - 1] : 0.0);
    if (j + 1 < m) off[j] = std::sqrt(betas[j]) / alphas[j];
  }
  const auto ev = solvers::blas::tridiagonal_eigenvalues(diag, off);
  return ev.back();
}

template <typename Number>
ChebyshevSmoother<Number>::ChebyshevSmoother(const LevelOperator<Vector<Number>>& op, const Vector<Number>& diagonal,
                                             std::vector<char> constrained, int degree, double range,
                                             int eigenvalue_steps, std::span<const std::int64_t> global_index)
    : op_(&op), inverse_diagonal_(Vector<Number>::like(diagonal)), constrained_(std::move(constrained)),
      degree_(degree) {
  if (degree < 1) throw InputError("Chebyshev smoother degree must be >= 1");
  if (!(range > 1.0)) throw InputError("Chebyshev smoothing range must be > 1");
  for (std::size_t i = 0; i < diagonal.size(); ++i) {
    TCFEM_ASSERT(diagonal[i] > Number(0), "Chebyshev smoother needs a positive diagonal");
    inverse_diagonal_[i] = Number(1) / diagonal[i];
  }
  lambda_max_ =
      1.2 * estimate_largest_eigenvalue(op, inverse_diagonal_, constrained_, eigenvalue_steps, global_index);
  lambda_min_ = lambda_max_ / range;
  z_.resize(op.size());
  d_.resize(op.size());
}

template <typename Number>
void ChebyshevSmoother<Number>::preconditioned_residual(Vector<Number>& z, const Vector<Number>& x,
                                                        const Vector<Number>& b) const {
  op_->vmult(z, x);
  const std::size_t n = z.size();
  for (std::size_t i = 0; i < n; ++i) z[i] = inverse_diagonal_[i] * (b[i] - z[i]);
  if (!constrained_.empty())
    for (std::size_t i = 0; i < n; ++i)
      if (constrained_[i]) z[i] = Number(0);
}

template <typename Number>
void ChebyshevSmoother<Number>::smooth(Vector<Number>& x, const Vector<Number>& b, SweepOrder) const {
  const double theta = 0.5 * (lambda_max_ + lambda_min_);
  const double delta = 0.5 * (lambda_max_ - lambda_min_);
  const double sigma = theta / delta;
  double rho = 1.0 / sigma;
  const std::size_t n = x.size();
  preconditioned_residual(z_, x, b);
  for (std::size_t i = 0; i < n; ++i) d_[i] = static_cast<Number>(1.0 / theta) * z_[i];
  x.add(Number(1), d_);
  for (int k = 1; k < degree_; ++k) {
    const double rho_new = 1.0 / (2.0 * sigma - rho);
    preconditioned_residual(z_, x, b);
    const Number c1 = static_cast<Number>(rho_new * rho), c2 = static_cast<Number>(2.0 * rho_new / delta);
    for (std::size_t i = 0; i < n; ++i) d_[i] = c1 * d_[i] + c2 * z_[i];
    x.add(Number(1), d_);
    rho = rho_new;
  }
  if (!constrained_.empty())
    for (std::size_t i = 0; i < n; ++i)
      if (constrained_[i]) x[i] = b[i];
}

template double estimate_largest_eigenvalue<double>(const LevelOperator<Vector<double>>&, const Vector<double>&,
                                                    const std::vector<char>&, int, std::span<const std::int64_t>);
template double estimate_largest_eigenvalue<float>(const LevelOperator<Vector<float>>&, const Vector<float>&,
                                                   const std::vector<char>&, int, std::span<const std::int64_t>);
template class ChebyshevSmoother<double>;
template class ChebyshevSmoother<float>;

}  // namespace tcfem::multigrid
