#include "multigrid/host/coarse_solver.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "solvers/blas_lapack.h"
#include "solvers/cg.h"

namespace tcfem::multigrid {

template <int dim>
operators::SparseMatrix coarse_matrix(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                      const operators::OperatorConfig& config) {
  const std::size_t n = dofs.n_local();
  if (n > max_cholesky_coarse_dofs)
    throw InputError("--coarse-solver cholesky: the coarsest level has " + std::to_string(n) +
                     " DoFs; a dense factor is allowed up to " + std::to_string(max_cholesky_coarse_dofs) +
                     " (use auto or cg)");
  return operators::assemble_operator<dim>(mesh, dofs, config, operators::Form::laplace);
}

template <int dim>
std::vector<double> dense_coarse_matrix(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                        const operators::OperatorConfig& config) {
  const auto a = coarse_matrix<dim>(mesh, dofs, config);
  const std::size_t n = a.n_rows();
  std::vector<double> dense(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = a.row_ptr()[i]; p < a.row_ptr()[i + 1]; ++p) dense[i + n * a.cols()[p]] = a.values()[p];
  return dense;
}

template <int dim, typename Number>
CholeskyCoarseSolver<dim, Number>::CholeskyCoarseSolver(const mesh::BoxMesh<dim>& mesh,
                                                        const fe::DofLayout<dim>& dofs,
                                                        const operators::OperatorConfig& config)
    : n_(dofs.n_local()), factor_(dense_coarse_matrix<dim>(mesh, dofs, config)) {
  solvers::blas::cholesky_factor(static_cast<std::int64_t>(n_), factor_);
  work_.resize(n_);
}

template <int dim, typename Number>
void CholeskyCoarseSolver<dim, Number>::solve(Vector<Number>& x, const Vector<Number>& b) const {
  for (std::size_t i = 0; i < n_; ++i) work_[i] = double(b[i]);
  solvers::blas::cholesky_solve(static_cast<std::int64_t>(n_), factor_, work_.data());
  for (std::size_t i = 0; i < n_; ++i) x[i] = static_cast<Number>(work_[i]);
}

namespace {
template <typename Number>
struct OperatorRef {
  const LevelOperator<Vector<Number>>* op;
  void vmult(Vector<Number>& dst, const Vector<Number>& src) const { op->vmult(dst, src); }
};
}  // namespace

template <typename Number>
CgCoarseSolver<Number>::CgCoarseSolver(const LevelOperator<Vector<Number>>& op, const Vector<Number>& diagonal,
                                       double tolerance)
    : op_(&op),
      diagonal_(diagonal),
      tolerance_(std::max(tolerance, 10.0 * double(std::numeric_limits<Number>::epsilon()))) {}

template <typename Number>
void CgCoarseSolver<Number>::solve(Vector<Number>& x, const Vector<Number>& b) const {
  x.fill(Number(0));
  solvers::SolverControl control;
  control.tolerance = tolerance_;
  control.max_iterations = 10000;
  const solvers::JacobiPreconditioner<Number> jacobi(diagonal_);
  const auto result = solvers::solve_cg(OperatorRef<Number>{op_}, x, b, jacobi, control);
  last_iterations_ = result.iterations;
}

template <int dim, typename Number>
std::unique_ptr<CoarseSolver<Vector<Number>>> make_coarse_solver(CoarseSolverKind kind, const mesh::BoxMesh<dim>& mesh,
                                                                 const fe::DofLayout<dim>& dofs,
                                                                 const operators::OperatorConfig& config,
                                                                 const LevelOperator<Vector<Number>>& op,
                                                                 const Vector<Number>& diagonal, double cg_tolerance,
                                                                 CoarseSolverKind& chosen) {
  if (kind == CoarseSolverKind::automatic)
    kind = dofs.n_local() <= max_dense_coarse_dofs ? CoarseSolverKind::cholesky : CoarseSolverKind::cg;
  chosen = kind;
  switch (kind) {
    case CoarseSolverKind::cholesky:
      return std::make_unique<CholeskyCoarseSolver<dim, Number>>(mesh, dofs, config);
    case CoarseSolverKind::cg:
    case CoarseSolverKind::automatic:
      break;
  }
  return std::make_unique<CgCoarseSolver<Number>>(op, diagonal, cg_tolerance);
}

template operators::SparseMatrix coarse_matrix<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                  const operators::OperatorConfig&);
template operators::SparseMatrix coarse_matrix<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                  const operators::OperatorConfig&);
template std::vector<double> dense_coarse_matrix<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                    const operators::OperatorConfig&);
template std::vector<double> dense_coarse_matrix<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                    const operators::OperatorConfig&);
template class CholeskyCoarseSolver<2, double>;
template class CholeskyCoarseSolver<3, double>;
template class CholeskyCoarseSolver<2, float>;
template class CholeskyCoarseSolver<3, float>;
template class CgCoarseSolver<double>;
template class CgCoarseSolver<float>;

template std::unique_ptr<CoarseSolver<Vector<double>>> make_coarse_solver<2, double>(
    CoarseSolverKind, const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const operators::OperatorConfig&,
    const LevelOperator<Vector<double>>&, const Vector<double>&, double, CoarseSolverKind&);
template std::unique_ptr<CoarseSolver<Vector<double>>> make_coarse_solver<3, double>(
    CoarseSolverKind, const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const operators::OperatorConfig&,
    const LevelOperator<Vector<double>>&, const Vector<double>&, double, CoarseSolverKind&);
template std::unique_ptr<CoarseSolver<Vector<float>>> make_coarse_solver<2, float>(
    CoarseSolverKind, const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const operators::OperatorConfig&,
    const LevelOperator<Vector<float>>&, const Vector<float>&, double, CoarseSolverKind&);
template std::unique_ptr<CoarseSolver<Vector<float>>> make_coarse_solver<3, float>(
    CoarseSolverKind, const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const operators::OperatorConfig&,
    const LevelOperator<Vector<float>>&, const Vector<float>&, double, CoarseSolverKind&);

}  // namespace tcfem::multigrid
