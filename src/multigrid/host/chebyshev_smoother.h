#pragma once
// Chebyshev smoother around point Jacobi: x <- x + p(D^{-1} A) D^{-1} (b - A x) with the
// Chebyshev polynomial of the given degree that is smallest on [lambda_max / range, lambda_max]
// (the upper part of the spectrum of D^{-1} A, the one a smoother must damp). lambda_max is
// 1.2 times the largest Ritz value of a few CG steps on D^{-1} A (Lanczos through the CG
// coefficients) from a fixed pseudo-random start vector. cg constraints: the operator's
// constrained rows are the identity; the Chebyshev recursion runs on the unconstrained DoFs
// (constrained residual entries zeroed) and constrained entries are set to b afterwards.
#include <cstdint>
#include <span>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "multigrid/interfaces.h"

namespace tcfem::multigrid {

/// Largest eigenvalue estimate of D^{-1} A: the largest Ritz value after `steps` CG steps
/// (fewer if CG converges), on vectors that vanish where `constrained` is set. The start vector's
/// entry i is the (i+1)-th number of a fixed generator, or its (global_index[i]+1)-th where
/// global_index is given (a distributed level: the indices on one process, so that every
/// partition starts from the same vector). The vectors take inverse_diagonal's ghost layout.
template <typename Number>
double estimate_largest_eigenvalue(const LevelOperator<Vector<Number>>& op, const Vector<Number>& inverse_diagonal,
                                   const std::vector<char>& constrained, int steps,
                                   std::span<const std::int64_t> global_index = {});

template <typename Number>
class ChebyshevSmoother final : public Smoother<Vector<Number>> {
 public:
  /// `diagonal`: the diagonal of the level operator; `constrained`: cg boundary mask (empty for dg).
  ChebyshevSmoother(const LevelOperator<Vector<Number>>& op, const Vector<Number>& diagonal,
                    std::vector<char> constrained, int degree, double range, int eigenvalue_steps,
                    std::span<const std::int64_t> global_index = {});

  void smooth(Vector<Number>& x, const Vector<Number>& b, SweepOrder order) const override;

  double lambda_max() const { return lambda_max_; }
  double lambda_min() const { return lambda_min_; }
  int degree() const { return degree_; }

 private:
  void preconditioned_residual(Vector<Number>& z, const Vector<Number>& x, const Vector<Number>& b) const;

  const LevelOperator<Vector<Number>>* op_;
  Vector<Number> inverse_diagonal_;
  std::vector<char> constrained_;
  int degree_;
  double lambda_max_ = 0.0, lambda_min_ = 0.0;
  mutable Vector<Number> z_, d_;
};

}  // namespace tcfem::multigrid
