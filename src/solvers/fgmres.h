#pragma once
// Flexible GMRES(m) in double precision with right preconditioning (Saad 1993): the
// preconditioner may change from one iteration to the next (a V-cycle in lower precision, an
// inexact coarse solve), since the preconditioned vectors z_j = P_j v_j are stored and the update
// is x += Z y. Arnoldi by classical Gram-Schmidt with one re-orthogonalization as block products
// (solvers/block_orthogonalization.h), least squares by Givens rotations. Stops at
// ||b - A x|| <= tol ||b||; the residual history holds the Arnoldi estimates |g_{j+1}| / ||b||,
// the final relative residual is recomputed from b - A x (and a restart follows if it does not
// meet the tolerance).
#include <functional>

#include "core/vector.h"
#include "solvers/cg.h"

namespace tcfem::solvers {

struct FgmresSettings {
  int restart = 30;  ///< Krylov basis size m before a restart
  /// x is zero on entry: the first residual is b, without an operator apply
  bool zero_initial_guess = false;
};

/// Seconds spent in the parts of FGMRES that are not the operator or the preconditioner.
struct KrylovTimes {
  double orthogonalization = 0.0;  ///< the block products of Gram-Schmidt
  double vector_ops = 0.0;         ///< residuals, scaling, the final update x += Z y
};

using LinearMap = std::function<void(Vector<double>&, const Vector<double>&)>;

/// Solves A x = b from the given x. A and P are dst = op(src) maps.
SolverResult solve_fgmres(const LinearMap& A, Vector<double>& x, const Vector<double>& b, const LinearMap& P,
                          const SolverControl& control, const FgmresSettings& settings = {},
                          KrylovTimes* times = nullptr);

/// GMRES(m) with left preconditioning: GMRES on P A x = P b from the given x (deal.II's SolverGMRES
/// default, with which seed 004 Tables 1-3 were measured). Minimizes, tests (||P (b - A x)|| <= tol
/// ||P (b - A x_0)||) and records the preconditioned residual; the result's
/// unpreconditioned_relative_residual is ||b - A x|| / ||b|| at the end. P must be a fixed linear
/// map: a V-cycle in fp64. (With a lower-precision V-cycle P A is inexact to its rounding level and
/// the preconditioned residual stalls there, about 1e-7 for fp32: use FGMRES.) Implemented as the
/// FGMRES above on (P A, P r_0) with the identity as preconditioner, for the correction x - x_0.
SolverResult solve_gmres_left(const LinearMap& A, Vector<double>& x, const Vector<double>& b, const LinearMap& P,
                              const SolverControl& control, const FgmresSettings& settings = {},
                              KrylovTimes* times = nullptr);

/// The same for any Operator / Preconditioner with vmult(dst, src).
template <typename Operator, typename Preconditioner>
SolverResult solve_fgmres(const Operator& A, Vector<double>& x, const Vector<double>& b, const Preconditioner& P,
                          const SolverControl& control, const FgmresSettings& settings = {},
                          KrylovTimes* times = nullptr) {
  return solve_fgmres(LinearMap([&A](Vector<double>& d, const Vector<double>& s) { A.vmult(d, s); }), x, b,
                      LinearMap([&P](Vector<double>& d, const Vector<double>& s) { P.vmult(d, s); }), control,
                      settings, times);
}

template <typename Operator, typename Preconditioner>
SolverResult solve_gmres_left(const Operator& A, Vector<double>& x, const Vector<double>& b, const Preconditioner& P,
                              const SolverControl& control, const FgmresSettings& settings = {},
                              KrylovTimes* times = nullptr) {
  return solve_gmres_left(LinearMap([&A](Vector<double>& d, const Vector<double>& s) { A.vmult(d, s); }), x, b,
                          LinearMap([&P](Vector<double>& d, const Vector<double>& s) { P.vmult(d, s); }), control,
                          settings, times);
}

}  // namespace tcfem::solvers
