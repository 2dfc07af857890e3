#pragma once
// Solving A x = b on the finest level with geometric multigrid: the outer iteration (FGMRES or CG
// in double precision preconditioned by one V-cycle, the plain V-cycle iteration, or full
// multigrid followed by V-cycles) and the V-cycle in fp64 or fp32 (the one place the V-cycle's
// precision is dispatched). Reports iterations, residual history and the time of every component.
#include <optional>
#include <string_view>
#include <vector>

#include "core/vector.h"
#include "mesh/box_mesh.h"
#include "multigrid/host/multigrid.h"
#include "multigrid/multigrid_config.h"
#include "multigrid/vcycle.h"
#include "operators/cpu/laplace_operator.h"
#include "precision/precision.h"
#include "solvers/cg.h"
#include "solvers/fgmres.h"

namespace tcfem::multigrid {

/// Outer solvers around the V-cycle:
///   fgmres: FGMRES(m), right preconditioning by one V-cycle (seed 000 Section 7, seed 004 Table 7);
///           tests the residual ||b - A x|| <= tol ||b||
///   gmres:  GMRES(m), left preconditioning by one fp64 V-cycle; tests the preconditioned residual
///           ||P (b - A x)|| <= tol ||P b|| (deal.II's SolverGMRES default, the test of seed 004
///           Tables 1-3; see docs/notebook/performance_history.md, "Iteration counts against seed 004")
///   cg:     preconditioned CG (with a symmetric V-cycle: post-smoothing runs the colors backward)
///   mg:     x <- x + V-cycle(b - A x) from x = 0
///   fmg:    full multigrid, then x <- x + V-cycle(b - A x) (seed 004 Algorithm 2; the iterations
///           counted are the V-cycles after the full-multigrid start): mg with StartKind::fmg
enum class OuterSolver { fgmres, gmres, cg, mg, fmg };
const char* to_string(OuterSolver s);
std::optional<OuterSolver> parse_outer_solver(std::string_view name);

/// The outer solver's initial guess:
///   zero: x_0 = 0 (the x passed in; zero from the command line)
///   fmg:  x_0 = FMG(b), one full-multigrid cycle (seed 004 Algorithm 2, lines 1-5: restrict b to
///         every level, solve on the coarsest, then on each finer level interpolate and run one
///         V-cycle), about 8/7 of a finest-level V-cycle in 3D. Its residual is near the
///         discretization error's level, so the outer solver starts far below ||b||; the test
///         stays ||b - A x|| <= tol ||b||. Not with gmres (its test is relative to its start).
enum class StartKind { zero, fmg };
const char* to_string(StartKind s);
std::optional<StartKind> parse_start_kind(std::string_view name);

struct MultigridSolveSettings;
/// Throws InputError for an outer solver that the V-cycle precision cannot serve (gmres: fp64 only)
/// and for gmres from a full-multigrid start.
void check_outer_solver_precision(const MultigridSolveSettings& settings);
/// The outer solver starts from x_0 = FMG(b) (StartKind::fmg, or OuterSolver::fmg).
bool starts_with_fmg(const MultigridSolveSettings& settings);
/// The (F)GMRES settings of the outer solve: those given, without a zero initial guess after an FMG start.
solvers::FgmresSettings outer_fgmres_settings(const MultigridSolveSettings& settings);

struct MultigridSolveSettings {
  OuterSolver solver = OuterSolver::fgmres;
  StartKind start = StartKind::zero;  ///< fmg for OuterSolver::fmg whatever is set here
  precision::Precision precision = precision::Precision::fp64;  ///< of the V-cycle: fp64 or fp32
  MultigridSettings multigrid;
  solvers::FgmresSettings fgmres;
};

struct MultigridSolveReport {
  solvers::SolverResult result;
  double setup_seconds = 0.0;  ///< levels, operators, smoothers (eigenproblems), coarse factorization
  double solve_seconds = 0.0;  ///< the outer iteration and the FMG start (fmg_seconds)
  int n_levels = 0;
  /// A distributed hierarchy's gathered level (the levels below it on rank 0); -1 on one process.
  int gathered_level = -1;
  std::vector<LevelInfo> levels;
  CoarseSolverKind coarse = CoarseSolverKind::automatic;
  bool finest_post_fp64 = false;  ///< the finest level was post-smoothed in fp64 (MultigridSettings)
  MultigridTimes times;  ///< per level, inside the V-cycles
  double outer_operator_seconds = 0.0, preconditioner_seconds = 0.0, fmg_seconds = 0.0;
  long outer_operator_calls = 0, preconditioner_calls = 0;
  solvers::KrylovTimes krylov;  ///< FGMRES orthogonalization and vector updates
};

/// Solves A x = b from the given x; `mesh` and `config` describe A's level (the finest), whose
/// DoF layout the hierarchy rebuilds with the same numbering. Throws InputError for precisions
/// the CPU V-cycle does not have and for smoothers that do not support the discretization.
template <int dim>
MultigridSolveReport solve_with_multigrid(const mesh::BoxMesh<dim>& mesh, const operators::OperatorConfig& config,
                                          const operators::MatrixFreeOperator<dim, double>& A,
                                          const Vector<double>& b, Vector<double>& x,
                                          const MultigridSolveSettings& settings,
                                          const solvers::SolverControl& control);

}  // namespace tcfem::multigrid
