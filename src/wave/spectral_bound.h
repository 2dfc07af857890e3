#pragma once
// The spectral radius of the wave operator's energy-conserving part L = M^-1 G-block, which is
// skew in the inner product (., .)_M: its eigenvalues are +-i sigma. Skew Lanczos builds an
// M-orthonormal basis with L V = V T + beta_m v_{m+1} e_m^T, T skew-tridiagonal (zero diagonal,
// sub-diagonal beta_j); T is unitarily similar to i J, J symmetric tridiagonal with zero diagonal
// and off-diagonal beta_j, so the largest eigenvalue theta of J (a Ritz value of |L|, from below)
// estimates sigma_max. One apply of L per step (power iteration on L^2 takes two), and the Ritz
// value converges much faster than the power iteration's Rayleigh quotient.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace tcfem::wave {

/// The largest eigenvalue of the symmetric tridiagonal matrix with zero diagonal and off-diagonal
/// beta (size beta.size() + 1), by bisection on the Sturm count (to the last bits).
inline double largest_eigenvalue_zero_diagonal(const std::vector<double>& beta) {
  double hi = 0;
  for (std::size_t i = 0; i <= beta.size(); ++i)  // Gershgorin
    hi = std::max(hi, (i ? std::abs(beta[i - 1]) : 0.0) + (i < beta.size() ? std::abs(beta[i]) : 0.0));
  if (hi == 0) return 0.0;
  // eigenvalues above x: the sign changes of the LDL^T pivots of J - x I counted as below
  auto count_above = [&](double x) {
    std::size_t below = 0;
    double d = -x;
    for (std::size_t i = 0;; ++i) {
      if (d < 0) ++below;
      if (i == beta.size()) break;
      const double pivot = d == 0 ? 1e-300 : d;
      d = -x - beta[i] * beta[i] / pivot;
    }
    return beta.size() + 1 - below;
  };
  double lo = 0;
  for (int it = 0; it < 200 && hi - lo > 4e-16 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (count_above(mid) > 0) lo = mid;
    else hi = mid;
  }
  return hi;
}

/// The Ritz values of skew Lanczos, one per apply, and the applies it took.
struct SkewLanczosResult {
  double sigma = 0;            ///< the last Ritz value (the estimate of the largest |eigenvalue|)
  int applies = 0;
  std::vector<double> ritz;  ///< after each apply
};

/// Skew Lanczos from the start vector in `v` (overwritten; v_prev and w are work vectors of the
/// same size): `apply(x, y)` sets y = L x, `norm(x)` returns ||x||_M, and `combine(y, a, x, c)`
/// sets y = a y + c x and returns ||y||_M (x is not read where c is 0). The basis vectors are kept
/// unnormalized (u_j = b_j v_j), so a step is one apply and one pass over two vectors:
///   beta_j v_{j+1} = L u_j / b_j + (beta_{j-1} / b_{j-1}) u_{j-1}.
/// Stops after max_applies applies, or once the Ritz value has grown by less than `tolerance`
/// (relative) over four steps, or on breakdown (an invariant subspace).
template <typename Apply, typename Norm, typename Combine>
SkewLanczosResult skew_lanczos(double* v_prev, double* v, double* w, int max_applies, double tolerance, Apply apply,
                               Norm norm, Combine combine) {
  SkewLanczosResult r;
  double b = norm(v), b_prev = 0;  // the norms of u_j and u_{j-1}
  if (!(b > 0)) return r;
  std::vector<double> beta;  // beta_1 .. beta_m: J_m uses the first m - 1
  for (int j = 0; j < max_applies; ++j) {
    apply(v, w);
    ++r.applies;
    const double next = combine(w, 1.0 / b, v_prev, j > 0 ? beta.back() / b_prev : 0.0);
    r.sigma = largest_eigenvalue_zero_diagonal(beta);
    r.ritz.push_back(r.sigma);
    const std::size_t m = r.ritz.size();
    if (m > 8 && r.sigma <= r.ritz[m - 5] * (1 + tolerance)) break;
    if (!(next > 1e-14 * std::max(r.sigma, beta.empty() ? 1.0 : beta.front()))) break;  // breakdown: L V = V T
    beta.push_back(next);
    std::swap(v_prev, v);  // u_{j-1} <- u_j
    std::swap(v, w);       // u_j <- the combination
    b_prev = b;
    b = next;
  }
  return r;
}

/// The spectral bound that sets the RK4 step: sigma (skew Lanczos on L) plus the largest absorbing
/// rate (the damping's diagonal, M^-1 A).
struct SpectralBound {
  double radius = 0;
  double damping = 0;
  SkewLanczosResult lanczos;
};

/// Relative growth of the Ritz value over four steps below which skew Lanczos stops early.
inline constexpr double lanczos_tolerance = 1e-9;

}  // namespace tcfem::wave
