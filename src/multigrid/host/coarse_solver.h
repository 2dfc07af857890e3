#pragma once
// Coarse-grid solvers of the V-cycle.
//   CholeskyCoarseSolver: the coarsest operator assembled (operators::assemble_operator, the same
//     bilinear form and quadrature as the matrix-free level operator), stored dense and factored
//     once by LAPACK dpotrf; each solve is dpotrs in double (vectors of a float V-cycle are
//     converted on entry and exit). Exact.
//   CgCoarseSolver: Jacobi-preconditioned CG in the V-cycle's precision to a relative residual
//     (1e-12 by default; at least 10 unit roundoffs of Number), at most 10000 iterations.
#include <memory>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "multigrid/interfaces.h"
#include "multigrid/multigrid_config.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cpu/sparse_matrix.h"

namespace tcfem::multigrid {

/// The assembled matrix of the coarsest level (sparse); InputError when n exceeds
/// max_cholesky_coarse_dofs.
template <int dim>
operators::SparseMatrix coarse_matrix(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                      const operators::OperatorConfig& config);

/// The same, dense (n x n column-major, symmetric).
template <int dim>
std::vector<double> dense_coarse_matrix(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                        const operators::OperatorConfig& config);

template <int dim, typename Number>
class CholeskyCoarseSolver final : public CoarseSolver<Vector<Number>> {
 public:
  CholeskyCoarseSolver(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                       const operators::OperatorConfig& config);
  void solve(Vector<Number>& x, const Vector<Number>& b) const override;
  std::size_t size() const { return n_; }
  /// The factor L (n x n column-major, lower triangle; A = L L^T), for the device backend.
  const std::vector<double>& factor() const { return factor_; }

 private:
  std::size_t n_;
  std::vector<double> factor_;
  mutable std::vector<double> work_;
};

template <typename Number>
class CgCoarseSolver final : public CoarseSolver<Vector<Number>> {
 public:
  CgCoarseSolver(const LevelOperator<Vector<Number>>& op, const Vector<Number>& diagonal, double tolerance);
  void solve(Vector<Number>& x, const Vector<Number>& b) const override;
  /// CG iterations of the last solve.
  int last_iterations() const { return last_iterations_; }

 private:
  const LevelOperator<Vector<Number>>* op_;
  Vector<Number> diagonal_;
  double tolerance_;
  mutable int last_iterations_ = 0;
};

/// The coarse solver of `kind` (automatic: Cholesky up to max_dense_coarse_dofs DoFs, else CG);
/// `chosen` receives the kind used.
template <int dim, typename Number>
std::unique_ptr<CoarseSolver<Vector<Number>>> make_coarse_solver(CoarseSolverKind kind, const mesh::BoxMesh<dim>& mesh,
                                                                 const fe::DofLayout<dim>& dofs,
                                                                 const operators::OperatorConfig& config,
                                                                 const LevelOperator<Vector<Number>>& op,
                                                                 const Vector<Number>& diagonal, double cg_tolerance,
                                                                 CoarseSolverKind& chosen);

}  // namespace tcfem::multigrid
