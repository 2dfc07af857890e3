#include "multigrid/host/multigrid_solve.h"

#include <chrono>
#include <string>

#include "core/error.h"
#include "solvers/richardson.h"

namespace tcfem::multigrid {

const char* to_string(OuterSolver s) {
  switch (s) {
    case OuterSolver::fgmres: return "fgmres";
    case OuterSolver::gmres: return "gmres";
    case OuterSolver::cg: return "cg";
    case OuterSolver::mg: return "mg";
    case OuterSolver::fmg: return "fmg";
  }
  return "?";
}

std::optional<OuterSolver> parse_outer_solver(std::string_view name) {
  for (auto s : {OuterSolver::fgmres, OuterSolver::gmres, OuterSolver::cg, OuterSolver::mg, OuterSolver::fmg})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

const char* to_string(StartKind s) {
  switch (s) {
    case StartKind::zero: return "zero";
    case StartKind::fmg: return "fmg";
  }
  return "?";
}

std::optional<StartKind> parse_start_kind(std::string_view name) {
  for (auto s : {StartKind::zero, StartKind::fmg})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

bool starts_with_fmg(const MultigridSolveSettings& settings) {
  return settings.solver == OuterSolver::fmg || settings.start == StartKind::fmg;
}

solvers::FgmresSettings outer_fgmres_settings(const MultigridSolveSettings& settings) {
  solvers::FgmresSettings s = settings.fgmres;
  if (starts_with_fmg(settings)) s.zero_initial_guess = false;
  return s;
}

void check_outer_solver_precision(const MultigridSolveSettings& settings) {
  if (settings.solver == OuterSolver::gmres && settings.start == StartKind::fmg)
    throw InputError("--mg-start fmg: GMRES with left preconditioning tests its residual relative to that of its "
                     "start, so a full-multigrid start would tighten the test instead of saving iterations; use "
                     "--solver fgmres, cg or mg with --mg-start fmg");
  if (settings.solver == OuterSolver::gmres && settings.precision != precision::Precision::fp64)
    throw InputError(std::string("--solver gmres: left preconditioning needs an fp64 V-cycle (with --mg-precision ") +
                     std::string(precision::to_string(settings.precision)) +
                     " the preconditioned operator is inexact and its residual stalls near the V-cycle's rounding "
                     "level); use --solver fgmres for lower-precision V-cycles");
}

namespace {
using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// vmult of an operator, timed.
template <typename Op>
struct Timed {
  const Op* op;
  double* seconds;
  long* calls;
  void vmult(Vector<double>& dst, const Vector<double>& src) const {
    const auto t = clock_type::now();
    op->vmult(dst, src);
    *seconds += seconds_since(t);
    ++*calls;
  }
};

template <int dim, typename Number>
MultigridSolveReport run(const mesh::BoxMesh<dim>& mesh, const operators::OperatorConfig& config,
                         const operators::MatrixFreeOperator<dim, double>& A, const Vector<double>& b,
                         Vector<double>& x, const MultigridSolveSettings& settings,
                         const solvers::SolverControl& control) {
  MultigridSolveReport report;
  check_outer_solver_precision(settings);
  const auto t_setup = clock_type::now();
  LevelHierarchy<dim> hierarchy(mesh, A.dofs().dirichlet_faces(), config.disc, config.degree);
  TCFEM_ASSERT(hierarchy.dofs(hierarchy.finest()).n_local() == b.size(), "hierarchy and vector sizes differ");
  MultigridSettings mg_settings = settings.multigrid;
  if (settings.solver == OuterSolver::cg) mg_settings.post_smooth_order = SweepOrder::backward;  // symmetric
  mg_settings.fmg_fp64_residuals = starts_with_fmg(settings);
  Multigrid<dim, Number> mg(hierarchy, config, mg_settings);
  MultigridPreconditioner<dim, Number> vcycle(mg);
  report.setup_seconds = seconds_since(t_setup);
  report.n_levels = mg.n_levels();
  report.gathered_level = hierarchy.distributed() ? hierarchy.gathered_level() : -1;
  report.levels = mg.level_info();
  report.coarse = mg.coarse_solver_kind();
  report.finest_post_fp64 = mg.finest_post_fp64();
  mg.times().reset(mg.n_levels());

  const Timed<operators::MatrixFreeOperator<dim, double>> op{&A, &report.outer_operator_seconds,
                                                               &report.outer_operator_calls};
  const Timed<MultigridPreconditioner<dim, Number>> prec{&vcycle, &report.preconditioner_seconds,
                                                         &report.preconditioner_calls};
  const auto t_solve = clock_type::now();
  if (starts_with_fmg(settings)) {
    const auto t_fmg = clock_type::now();
    mg.full_multigrid_fp64(x, b);
    report.fmg_seconds = seconds_since(t_fmg);
  }
  switch (settings.solver) {
    case OuterSolver::fgmres:
      report.result = solvers::solve_fgmres(op, x, b, prec, control, outer_fgmres_settings(settings), &report.krylov);
      break;
    case OuterSolver::gmres:
      report.result =
          solvers::solve_gmres_left(op, x, b, prec, control, outer_fgmres_settings(settings), &report.krylov);
      break;
    case OuterSolver::cg:
      report.result = solvers::solve_cg(op, x, b, prec, control);
      break;
    case OuterSolver::fmg:
    case OuterSolver::mg:
      report.result = solvers::solve_richardson(op, x, b, prec, control);
      break;
  }
  report.solve_seconds = seconds_since(t_solve);
  report.times = mg.times();
  return report;
}
}  // namespace

template <int dim>
MultigridSolveReport solve_with_multigrid(const mesh::BoxMesh<dim>& mesh, const operators::OperatorConfig& config,
                                          const operators::MatrixFreeOperator<dim, double>& A,
                                          const Vector<double>& b, Vector<double>& x,
                                          const MultigridSolveSettings& settings,
                                          const solvers::SolverControl& control) {
  switch (settings.precision) {
    case precision::Precision::fp64:
      return run<dim, double>(mesh, config, A, b, x, settings, control);
    case precision::Precision::fp32:
      return run<dim, float>(mesh, config, A, b, x, settings, control);
    default:
      throw InputError(std::string("--mg-precision: value ") + std::string(precision::to_string(settings.precision)) +
                       " is not available in the CPU V-cycle; allowed: fp64, fp32");
  }
}

template MultigridSolveReport solve_with_multigrid<2>(const mesh::BoxMesh<2>&, const operators::OperatorConfig&,
                                                      const operators::MatrixFreeOperator<2, double>&,
                                                      const Vector<double>&, Vector<double>&,
                                                      const MultigridSolveSettings&, const solvers::SolverControl&);
template MultigridSolveReport solve_with_multigrid<3>(const mesh::BoxMesh<3>&, const operators::OperatorConfig&,
                                                      const operators::MatrixFreeOperator<3, double>&,
                                                      const Vector<double>&, Vector<double>&,
                                                      const MultigridSolveSettings&, const solvers::SolverControl&);

}  // namespace tcfem::multigrid
