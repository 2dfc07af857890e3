// tcfem solve: the user's problem (--problem FILE.json) or the built-in manufactured Poisson
// problem, with FGMRES and a geometric multigrid V-cycle from a full-multigrid start (the
// default), or CG / GMRES / V-cycle iteration / full multigrid, or Jacobi-preconditioned CG; on
// the GPU where one is present and the problem has a device path (--backend auto).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "backend.h"
#include "report.h"
#include "commands.h"
#include "core/communicator.h"
#include "core/parallel.h"
#include "tuning.h"
#include "core/device.h"
#include "core/error.h"
#include "core/memory.h"
#include "fe/dof_exchange.h"
#include "io/json_report.h"
#include "io/vtu_writer.h"
#include "multigrid/device/multigrid_solve.h"
#include "operators/device/device_operator.h"
#include "multigrid/host/multigrid_solve.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cpu/sparse_matrix.h"
#include "problem/boundary_value_problem.h"
#include "problem/device_problem.h"
#include "problem/poisson.h"
#include "problem/problem_file.h"
#include "solvers/cg.h"
#include "solvers/cuda_solve.h"
#include "solvers/fgmres.h"


namespace tcfem::app {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

struct SolveOptions {
  int dim = 3;
  int degree = 4;
  int cells = 8;  // per direction, unless --refine is given
  int refine = 0;
  bool refine_given = false;
  bool dim_given = false, degree_given = false, cells_given = false, geometry_given = false;
  std::string problem_file;
  std::optional<problem::ProblemFile> problem;  // read from problem_file
  std::vector<int> cell_counts;                 // cells per direction (resolved)
  std::string disc = "cg";
  std::string geometry = "cartesian";
  std::string quadrature = "bp3";
  std::string geometry_form = "pa";
  std::string geometry_storage = "fp64";
  std::string exchange = "auto";  // distributed GPU runs: auto, host-staged, cuda-aware
  std::string exchange_overlap = "on";  // distributed GPU runs: the exchange beside the interior cells
  std::string operator_path = "auto";
  double tol = 1e-10;
  int max_iter = 20000;
  std::string backend = "auto";  // auto, cpu, cuda
  std::string backend_reason;
  std::string variant = "auto";
  std::string json_file, vtu_file;
  bool quiet = false;
  std::string tuning_file;
  Tuning tuning;
  int threads = 0;  // host threads; 0: all
  // solver and multigrid
  std::string solver = "auto";  // auto (fgmres, or cg with --precond jacobi), cg, fgmres, gmres, mg, fmg
  std::string precond = "mg";   // jacobi, mg
  bool precond_given = false;
  std::string smoother = "auto";  // auto: patch, chebyshev where the patch smoothers do not apply
  std::string patch_variant = "fused";
  std::string mg_precision = "auto";  // auto: fp32 on cuda (gmres: fp64), fp64 on cpu
  std::string mg_finest_post = "auto";  // auto (fp64 below an fp64 V-cycle), fp64, vcycle
  std::string mg_start = "auto";        // auto (fmg; gmres: zero), zero, fmg (--solver fmg: fmg)
  int pre_smooth = 1, post_smooth = 1;
  int chebyshev_degree = 3;
  std::optional<double> relaxation;  // patch smoothers; empty: the smoother's default
  std::string coarse_solver = "auto";
  int restart = 30;
  bool restart_given = false;
  bool mg_timing = false;
  bool mg_start_given = false;
  std::vector<std::string> multigrid_options_given;  // options that only a multigrid solve reads
  bool solver_given = false;
  Communicator comm;  // the ranks of an mpirun launch (serial otherwise)
  bool gpu_on_every_rank = false;  // a distributed run: every rank has a usable CUDA device
};

bool uses_multigrid(const SolveOptions& o) { return o.precond == "mg" || o.solver == "mg" || o.solver == "fmg"; }
/// --exchange (none: auto) and --exchange-overlap.
ExchangeOptions exchange_choice(const SolveOptions& o) { return exchange_options(o.exchange, o.exchange_overlap); }
/// The outer solver starts from one full-multigrid cycle.
bool fmg_start(const SolveOptions& o) { return uses_multigrid(o) && (o.solver == "fmg" || o.mg_start == "fmg"); }

constexpr int max_cells_per_direction = 1 << 20;

bool has_neumann(const SolveOptions& o) { return o.problem && !o.problem->neumann.empty(); }
bool variable_coefficient(const SolveOptions& o) {
  return o.problem &&
         !problem::Expression("problem file " + o.problem_file + ": coefficient", o.problem->coefficient, o.problem->dim)
              .is_constant();
}

/// Why the options run on the CPU only (empty: they have a device path).
std::string cpu_only_reason(const SolveOptions& o) {
  if (o.operator_path == "assembled") return "--operator-path assembled runs on the CPU";
  if (o.solver != "cg" && !uses_multigrid(o)) return "--solver " + o.solver + " with --precond jacobi runs on the CPU";
  return "";
}

/// Resolves the automatic choices: the solver, the backend, the V-cycle's precision and the start.
void resolve_defaults(SolveOptions& o) {
  if (!o.problem_file.empty()) {
    o.problem = problem::read_problem_file(o.problem_file);
    if (o.dim_given && o.dim != o.problem->dim)
      throw InputError("--dim " + std::to_string(o.dim) + ": the problem file " + o.problem_file + " is for dim " +
                       std::to_string(o.problem->dim));
    if (o.geometry_given)
      throw InputError("--geometry: the problem file " + o.problem_file + " gives the geometry");
    o.dim = o.problem->dim;
    if (!o.degree_given && o.problem->degree) o.degree = *o.problem->degree;
  }
  // cells per direction: --cells N (N per direction), --refine L (the problem file's cells times
  // 2^L, or 2^L per direction without a file), else the file's cells, else the default
  o.cell_counts.assign(o.dim, o.cells);
  if (o.problem) {
    if (o.problem->mesh && o.cells_given)
      throw InputError("--cells: the mesh file " + *o.problem->mesh + " gives the cells; refine them with --refine");
    if (o.refine_given) {
      for (int d = 0; d < o.dim; ++d) {
        const long n = long(o.problem->cells[d]) << std::min(o.refine, 40);
        if (o.refine > 20 || n > max_cells_per_direction)
          throw InputError("--refine " + std::to_string(o.refine) + ": more than " +
                           std::to_string(max_cells_per_direction) + " cells per direction");
        o.cell_counts[d] = int(n);
      }
    } else if (!o.cells_given) {
      o.cell_counts = o.problem->cells;
    }
  } else if (o.refine_given && o.refine >= 0 && o.refine <= 20) {
    o.cell_counts.assign(o.dim, 1 << o.refine);
  }
  // distributed dg runs on the GPU smooth with Chebyshev (the dg vertex patches run on one GPU)
  const bool gpu_requested = o.backend == "cuda" || (o.backend == "auto" && o.gpu_on_every_rank);
  if (o.smoother == "auto" && o.comm.distributed() && gpu_requested && o.disc == "dg") o.smoother = "chebyshev";
  if (o.smoother == "auto") {
    // cg: the vertex patches, on curved cells and with a variable coefficient with their separable
    // surrogates (multigrid/host/patch_smoother.h); the dg patches have the local solvers of the
    // parameter box's cells and a constant coefficient, too far from curved cells (the quarter
    // annulus stretches cells 1.6-3.1x) for the multiplicative Schwarz iteration to converge
    // Neumann parts: cg takes the patches of the vertices on them too; on a box with a constant
    // coefficient at every degree (every patch localizes its residual), on curved cells or with a
    // variable coefficient from degree 4 on (the patches then take the level operator's residual,
    // one apply per color: Chebyshev was measured faster at k = 3, the patches at k = 4..6,
    // docs/performance.md). dg: Chebyshev.
    const bool mapped = o.problem && o.problem->curved();
    const bool local_residuals = !mapped && !variable_coefficient(o);
    const bool patch_ok = !(o.disc == "dg" && (has_neumann(o) || mapped || variable_coefficient(o))) &&
                          !(has_neumann(o) && o.degree < 4 && !local_residuals);
    o.smoother = patch_ok ? "patch" : "chebyshev";
  }
  if (o.solver == "auto") o.solver = o.precond == "jacobi" ? "cg" : "fgmres";
  if ((o.solver == "mg" || o.solver == "fmg") && !o.precond_given) o.precond = "mg";
  const auto choice = resolve_backend(o.backend, cpu_only_reason(o));
  o.backend = choice.backend;
  o.backend_reason = choice.reason;
  if (o.mg_precision == "auto") o.mg_precision = o.backend == "cuda" && o.solver != "gmres" ? "fp32" : "fp64";
  if (o.mg_start == "auto") o.mg_start = o.solver == "gmres" ? "zero" : "fmg";
  if (!o.tuning_file.empty()) o.tuning = read_tuning_file(o.tuning_file);
}

void validate(const SolveOptions& o) {
  auto range_error = [](const std::string& opt, const std::string& value, const std::string& allowed) {
    throw InputError(opt + ": value " + value + " is not allowed; allowed: " + allowed);
  };
  if (o.dim != 2 && o.dim != 3) range_error("--dim", std::to_string(o.dim), "2 or 3");
  if (o.degree < 1 || o.degree > 8) range_error("--degree", std::to_string(o.degree), "integers 1..8");
  if (!o.refine_given && (o.cells < 1 || o.cells > max_cells_per_direction))
    range_error("--cells", std::to_string(o.cells), "integers 1.." + std::to_string(max_cells_per_direction));
  if (o.refine_given && (o.refine < 0 || o.refine > 20))
    range_error("--refine", std::to_string(o.refine), "integers 0..20");
  if (!(o.tol > 0.0 && o.tol < 1.0)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", o.tol);
    range_error("--tol", buf, "real numbers in (0, 1)");
  }
  if (o.max_iter < 1) range_error("--max-iter", std::to_string(o.max_iter), "integers >= 1");
  if (o.backend != "cuda" && o.variant != "auto")
    throw InputError("--variant " + o.variant + ": kernel variants exist for --backend cuda only");
  if (o.backend == "cuda" && o.operator_path == "assembled")
    throw InputError("--operator-path assembled: runs on --backend cpu only");
  if (o.geometry_storage == "fp32" && o.backend != "cuda")
    throw InputError("--geometry-storage fp32: chooses the GPU's stored geometry (--backend cuda); the CPU operators "
                     "store fp64");
  if (o.geometry_storage == "fp32" && o.geometry_form == "mf")
    throw InputError("--geometry-storage fp32: the mf form stores no geometry (it recomputes it from the nodes)");
  // solver and multigrid
  if ((o.solver == "mg" || o.solver == "fmg") && o.precond_given && o.precond != "mg")
    throw InputError("--precond " + o.precond + ": --solver " + o.solver +
                     " iterates multigrid V-cycles; use --precond mg or leave --precond out");
  if (!uses_multigrid(o) && !o.multigrid_options_given.empty())
    throw InputError(o.multigrid_options_given.front() +
                     ": a multigrid option; it needs --precond mg or --solver mg|fmg");
  if (o.solver == "gmres" && o.precond != "mg")
    throw InputError("--solver gmres: GMRES with left preconditioning by the multigrid V-cycle; add --precond mg");
  if (o.solver == "gmres" && o.mg_precision != "fp64")
    throw InputError("--solver gmres: left preconditioning needs an fp64 V-cycle (--mg-precision " + o.mg_precision +
                     " makes the preconditioned operator inexact: its residual stalls near the V-cycle's rounding "
                     "level); use --solver fgmres");
  if (o.solver == "fmg" && o.mg_start_given && o.mg_start != "fmg")
    throw InputError("--mg-start " + o.mg_start +
                     ": --solver fmg starts from full multigrid; use --solver mg for V-cycles from a zero start");
  if (uses_multigrid(o)) {  // gmres from an FMG start
    multigrid::MultigridSolveSettings start;
    start.solver = *multigrid::parse_outer_solver(o.solver);
    start.start = *multigrid::parse_start_kind(o.mg_start);
    multigrid::check_outer_solver_precision(start);
  }
  if (o.restart_given && o.solver != "fgmres" && o.solver != "gmres")
    throw InputError("--restart: the (F)GMRES restart length; it needs --solver fgmres or gmres");
  if (o.restart < 1 || o.restart > 1000) range_error("--restart", std::to_string(o.restart), "integers 1..1000");
  if (o.pre_smooth < 0 || o.pre_smooth > 100)
    range_error("--pre-smooth", std::to_string(o.pre_smooth), "integers 0..100");
  if (o.post_smooth < 0 || o.post_smooth > 100)
    range_error("--post-smooth", std::to_string(o.post_smooth), "integers 0..100");
  if (o.pre_smooth + o.post_smooth < 1)
    throw InputError("--pre-smooth 0 --post-smooth 0: a V-cycle needs at least one smoothing step");
  if (o.chebyshev_degree < 1 || o.chebyshev_degree > 50)
    range_error("--chebyshev-degree", std::to_string(o.chebyshev_degree), "integers 1..50");
  if (o.relaxation) {
    if (!(*o.relaxation > 0.0 && *o.relaxation <= 2.0))
      range_error("--relaxation", std::to_string(*o.relaxation), "numbers in (0, 2]");
    if (o.smoother == "chebyshev")
      throw InputError("--relaxation: the damping of the patch smoothers; --smoother chebyshev sets its own "
                       "(--chebyshev-degree)");
  }
  if (uses_multigrid(o)) {
    const auto p = precision::parse_precision(o.mg_precision);
    if (!p) range_error("--mg-precision", o.mg_precision, precision::allowed_precision_names());
    if (o.backend == "cpu" && *p != precision::Precision::fp64 && *p != precision::Precision::fp32)
      range_error("--mg-precision", o.mg_precision,
                  "fp64, fp32 with --backend cpu; with --backend cuda also " + precision::allowed_precision_names());
    if (o.backend == "cuda" && o.variant != "auto")
      throw InputError("--variant " + o.variant +
                       ": the multigrid solvers on --backend cuda choose their kernels per level; leave --variant out");
    if (o.operator_path == "assembled")
      throw InputError("--operator-path assembled: not available with multigrid (--precond mg, --solver mg|fmg)");
  }
  if (o.backend == "cuda" && o.solver != "cg" && !uses_multigrid(o))
    throw InputError("--solver " + o.solver + ": runs on --backend cpu only, or with --precond mg on --backend cuda");
  if (o.comm.distributed()) {
    const std::string ranks = std::to_string(o.comm.size()) + " ranks";
    if (uses_multigrid(o) && o.backend == "cuda" && o.smoother != "chebyshev" && o.disc == "dg")
      throw InputError("--smoother " + o.smoother + " with --disc dg: the dg vertex patches on --backend cuda run on "
                       "one rank; a distributed GPU run (" + ranks + ") smooths dg with --smoother chebyshev, or use "
                       "--backend cpu");
    if (o.operator_path == "assembled")
      throw InputError("--operator-path assembled: runs on one rank (this run has " + ranks + ")");
    if (!o.vtu_file.empty()) io::pvtu_piece_path(o.vtu_file, 0);  // a .pvtu name (each rank writes a piece)
  }
  if (o.exchange != "auto" && !(o.comm.distributed() && o.backend == "cuda"))
    throw InputError("--exchange " + o.exchange + ": the ghost exchange of a distributed run with --backend cuda");
  if (o.exchange_overlap != "on" && !(o.comm.distributed() && o.backend == "cuda"))
    throw InputError("--exchange-overlap " + o.exchange_overlap +
                     ": the ghost exchange of a distributed run with --backend cuda");
  if (o.comm.distributed()) {  // a sub-box of at least one cell per rank
    if (o.dim == 2)
      mesh::choose_process_grid<2>({o.cell_counts[0], o.cell_counts[1]}, o.comm.size());
    else
      mesh::choose_process_grid<3>({o.cell_counts[0], o.cell_counts[1], o.cell_counts[2]}, o.comm.size());
  }
  if (o.backend == "cuda") require_device("--backend cuda");
  if (!o.json_file.empty()) io::check_output_path("--json", o.json_file);
  if (!o.vtu_file.empty()) io::check_output_path("--vtu", o.vtu_file);
  if (!o.json_file.empty() && o.json_file == o.vtu_file) throw InputError("--json and --vtu name the same file");
}

/// DoFs of the coarsest multigrid level (halving while every count is even).
template <int dim>
double coarsest_level_dofs(const SolveOptions& o, const std::array<int, dim>& cells) {
  const auto n0 = multigrid::LevelHierarchy<dim>::coarsest_cells(cells);
  double dofs = 1.0;
  for (int d = 0; d < dim; ++d) dofs *= o.disc == "cg" ? double(n0[d]) * o.degree + 1 : double(n0[d]) * (o.degree + 1);
  return dofs;
}

template <int dim>
int run_solve(const SolveOptions& o) {
  const auto t_start = clock_type::now();
  std::array<int, dim> nc;
  for (int d = 0; d < dim; ++d) nc[d] = o.cell_counts[d];
  const int n = nc[0];
  std::optional<problem::ProblemDefinition<dim>> prob;
  collective(o.comm, [&] {
    if (o.problem) prob = problem::make_problem<dim>(*o.problem);
  });
  const fe::Disc disc = o.disc == "cg" ? fe::Disc::cg : fe::Disc::dg;
  const auto geometry = prob ? prob->domain.kind
                        : o.geometry == "cartesian" ? mesh::GeometryKind::cartesian
                                                    : mesh::GeometryKind::deformed;
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = o.degree;
  cfg.quadrature = o.quadrature == "bp3" ? fe::QuadratureKind::gauss_k2 : fe::QuadratureKind::gll_k1;
  cfg.cartesian_fast_path = o.operator_path == "auto";
  cfg.device_tuning = o.tuning.device;
  cfg.geometry_form = o.geometry_form == "mf"   ? operators::GeometryForm::mf
                      : o.geometry_form == "pa" ? operators::GeometryForm::pa
                                                : operators::GeometryForm::automatic;
  cfg.geometry_storage =
      o.geometry_storage == "fp32" ? operators::GeometryStorage::fp32 : operators::GeometryStorage::fp64;
  if (prob) {
    cfg.coefficient = prob->coefficient;
    cfg.coefficient_source = prob->coefficient_source;
  }

  // ---- memory estimate before allocating anything large
  const int k = o.degree;
  double n_cells = 1.0, n_dofs_est = 1.0;
  for (int d = 0; d < dim; ++d) {
    n_cells *= nc[d];
    n_dofs_est *= disc == fe::Disc::cg ? double(nc[d]) * k + 1 : double(nc[d]) * (k + 1);
  }
  const bool device_multigrid = o.backend == "cuda" && uses_multigrid(o);  // basis and levels in device memory
  // host: the device multigrid solve keeps only b, x and the boundary masks of the levels on the
  // host (its operators, vectors and basis live on the device); the other solvers hold the
  // operator's data, the diagonal and their work vectors
  const double vectors = device_multigrid ? (2.0 * 8.0 + 2.5) * n_dofs_est
                                          : 9.0 * 8.0 * n_dofs_est + (disc == fe::Disc::cg ? n_dofs_est : 0.0);
  const double op = device_multigrid
                        ? 0.0
                        : operators::MatrixFreeOperator<dim, double>::estimated_bytes_per_dof(cfg, geometry) * n_dofs_est;
  double estimate = vectors + op + 64e6;
  if (o.operator_path == "assembled") estimate += 12.0 * n_dofs_est * std::pow(disc == fe::Disc::cg ? 2 * k + 1 : 3 * (k + 1), dim);
  if ((o.solver == "fgmres" || o.solver == "gmres") && !device_multigrid)
    estimate += (2.0 * o.restart + (o.solver == "gmres" ? 8.0 : 4.0)) * 8.0 * n_dofs_est;  // V and Z
  if (uses_multigrid(o)) {
    // all levels (a geometric series, 8/7 in 3D, 4/3 in 2D), about 7 vectors each in the V-cycle's
    // precision (cycle, smoother and Chebyshev work vectors), plus a dense coarse factor
    const double level_sum = dim == 3 ? 8.0 / 7.0 : 4.0 / 3.0;
    if (!device_multigrid) estimate += level_sum * 7.0 * (o.mg_precision == "fp64" ? 8.0 : 4.0) * n_dofs_est;
    const double coarse_dofs = coarsest_level_dofs<dim>(o, nc);
    const bool dense = o.coarse_solver == "cholesky" ||
                       (o.coarse_solver == "auto" && coarse_dofs <= double(device_multigrid
                                                                             ? multigrid::max_device_dense_coarse_dofs
                                                                             : multigrid::max_dense_coarse_dofs));
    if (o.coarse_solver == "cholesky" && coarse_dofs > double(multigrid::max_cholesky_coarse_dofs)) {
      char msg[200];
      std::snprintf(msg, sizeof msg, "--coarse-solver cholesky: the coarsest level has %.0f DoFs; a dense factor is "
                    "allowed up to %zu (use auto or cg)", coarse_dofs, multigrid::max_cholesky_coarse_dofs);
      throw InputError(msg);
    }
    if (dense && !device_multigrid) estimate += 8.0 * coarse_dofs * coarse_dofs;  // (the device holds its factor)
  }
  const double available = double(available_host_memory());
  if (n_dofs_est > double(std::numeric_limits<index_t>::max() / 4) || (available > 0 && estimate > 0.9 * available))
  {
    char msg[256];
    std::snprintf(msg, sizeof msg, "%s: the problem (%.3g cells, %.3g DoFs) needs an estimated ",
                  o.refine_given ? "--refine" : "--cells", n_cells, n_dofs_est);
    throw InputError(msg + format_bytes(estimate) + " of memory, but only " + format_bytes(available) +
                     " is available");
  }

  const bool root = o.comm.rank() == 0;  // prints and writes the outputs
  auto say = [&](const std::string& s) {
    if (!o.quiet && root) std::cout << s << std::flush;
  };
  // one line per setup and output stage with the seconds since the start, flushed at once, so that
  // a run stopped early shows how far it got
  auto stage = [&](const char* what) {
    char text[160];
    std::snprintf(text, sizeof text, "  stage           %-36s at %8.2f s\n", what, seconds_since(t_start));
    say(text);
  };
  char line[1024];
  std::string cells_text;
  for (int d = 0; d < dim; ++d) cells_text += (d ? " x " : "") + std::to_string(nc[d]);
  std::snprintf(line, sizeof line, "tcfem solve: %dD %s Q%d, %s cells, %s geometry%s, backend %s (%s)\n", dim,
                o.disc.c_str(), k, cells_text.c_str(), mesh::to_string(geometry),
                prob ? (", problem " + o.problem_file).c_str() : "", o.backend.c_str(), o.backend_reason.c_str());
  say(line);
  // ---- setup
  // the GPU runs a rank's operator on its ghosted box as a whole mesh: two ghost cells keep the
  // box's constrained faces away from every owned node (solvers/cuda_solve.h)
  // a multigrid solve: sub-box bounds on a coarse level's cells, so that levels stay distributed
  const int alignment = uses_multigrid(o) && o.comm.distributed()
                            ? multigrid::LevelHierarchy<dim>::partition_alignment(nc, o.comm.size())
                            : 1;
  const auto partition = o.comm.distributed()
                             ? mesh::Partition<dim>::distributed(nc, o.comm, o.backend == "cuda" ? 2 : 1, alignment)
                             : mesh::Partition<dim>::serial(nc);
  mesh::BoxMesh<dim> mesh =
      prob ? mesh::BoxMesh<dim>(nc, prob->domain, partition) : mesh::BoxMesh<dim>(nc, geometry, partition);
  if (o.comm.distributed()) {
    const auto& grid = mesh.partition().process_grid;
    std::string grid_text;
    for (int d = 0; d < dim; ++d) grid_text += (d ? " x " : "") + std::to_string(grid[d]);
    std::snprintf(line, sizeof line, "  ranks           %d (sub-boxes %s, %d ghost cell%s), %s%s\n", o.comm.size(),
                  grid_text.c_str(), partition.ghost_width, partition.ghost_width > 1 ? "s" : "",
                  mpi_library_version().c_str(),
                  o.backend == "cuda" ? ", one GPU per rank (its number among the ranks of its host)" : "");
    say(line);
  }
  fe::DofLayout<dim> dofs(mesh, disc, k, prob ? prob->dirichlet_faces : fe::all_dirichlet<dim>());
  std::snprintf(line, sizeof line, "mesh, DoF layout (%.3g DoFs)", double(dofs.n_dofs()));
  stage(line);
  // the host operator: for the CPU solvers and the Jacobi diagonal; the device multigrid solve builds
  // its own operators on the device
  std::unique_ptr<operators::LaplaceOperator<dim, double>> host_operator;
  if (!device_multigrid) {
    // checks det J and the coefficient at this rank's points: every rank fails if one does
    collective(o.comm, [&] {
      host_operator =
          std::make_unique<operators::LaplaceOperator<dim, double>>(mesh, dofs, cfg, operators::Form::laplace);
    });
    stage("host operator");
  }
  // the device kernels take the Kronecker path only where they may constrain every boundary node
  // (operators::set_geometry): a box with Neumann parts runs the general-geometry kernels there
  bool cartesian = operators::uses_cartesian_path(mesh, dofs, cfg);
  if (device_multigrid) {
    operators::DeviceKernelKey key;
    operators::set_geometry(key, mesh, dofs, cfg);
    cartesian = key.cartesian;
  }
  const operators::Path path = cartesian ? operators::Path::cartesian : operators::Path::general;
  Vector<double> diag;
  std::unique_ptr<operators::SparseMatrix> assembled;
  if (o.operator_path == "assembled") {
    assembled = std::make_unique<operators::SparseMatrix>(operators::assemble_operator<dim>(mesh, dofs, cfg, operators::Form::laplace));
    diag = assembled->diagonal();
    stage("assembled matrix");
  } else if (!uses_multigrid(o)) {  // the multigrid solvers need no fine diagonal
    host_operator->compute_diagonal(diag);
    stage("diagonal");
  }
  std::optional<solvers::JacobiPreconditioner<double>> P;
  if (!uses_multigrid(o)) P.emplace(diag);
  Vector<double> b, lift;
  // the device multigrid solve builds b on the device: the volume term there (the expressions
  // compiled), the terms of boundary cells here
  std::optional<problem::DeviceProblem<dim>> device_problem;
  problem::BoundaryTerms boundary_terms;
  // a distributed run: each rank integrates over its ghosted box as a mesh of its own (the
  // lattice of its vectors; the terms are then exact on the owned entries), errors over its cells
  const bool device_rhs = device_multigrid;
  std::optional<mesh::BoxMesh<dim>> rhs_box_mesh;
  std::optional<fe::DofLayout<dim>> rhs_box_dofs;
  const mesh::BoxMesh<dim>* rhs_mesh = &mesh;
  const fe::DofLayout<dim>* rhs_dofs = &dofs;
  if (device_rhs && o.comm.distributed()) {
    const auto& part = mesh.partition();
    rhs_box_mesh.emplace(mesh::ghosted_box_mesh(mesh));
    rhs_box_dofs.emplace(*rhs_box_mesh, dofs.disc(), dofs.degree(),
                         fe::ghosted_box_dirichlet(part, dofs.dirichlet_faces()));
    rhs_mesh = &*rhs_box_mesh;
    rhs_dofs = &*rhs_box_dofs;
  }
  if (device_rhs) {
    device_problem.emplace(*rhs_mesh, *rhs_dofs, prob ? &*prob : nullptr);
    if (o.comm.distributed()) {
      const auto& part = mesh.partition();
      operators::CellRange owned;
      for (int d = 0; d < dim; ++d) {
        owned.lo[d] = part.owned.begin[d] - part.ghosted.begin[d];
        owned.hi[d] = part.owned.end[d] - part.ghosted.begin[d];
      }
      device_problem->set_owned_cells(owned, o.comm);
    }
    char text[160];
    std::snprintf(text, sizeof text, "expressions for the device (%s, %.2f s)", device_problem->evaluation().c_str(),
                  device_problem->compile_seconds());
    stage(text);
    if (prob) {
      // the cg Dirichlet lift and the Neumann terms on the device; dg's Nitsche terms here
      boundary_terms = problem::assemble_boundary_terms<dim>(mesh, dofs, cfg, *prob);
      if (o.comm.distributed()) {  // owned cell numbers -> the ghosted box's
        const auto& part = mesh.partition();
        for (auto& c : boundary_terms.cells) c = part.ghosted.number(mesh.cell_index(c));
      }
      std::snprintf(text, sizeof text, "boundary terms (%zu cells on the host)", boundary_terms.cells.size());
      stage(text);
    }
  } else if (prob) {
    auto sys = problem::assemble_system<dim>(mesh, dofs, cfg, *prob);
    b = std::move(sys.rhs);
    lift = std::move(sys.lift);
    stage("right-hand side");
  } else {
    b = problem::assemble_rhs<dim>(mesh, dofs);
    stage("right-hand side");
  }
  Vector<double> x = device_rhs && !o.comm.distributed() ? Vector<double>() : fe::make_vector<double>(dofs);
  const double t_setup = seconds_since(t_start);
  std::snprintf(line, sizeof line, "  DoFs            %zu (all, boundary included)\n  operator path   %s%s\n  setup           %.3f s\n",
                dofs.n_dofs(), assembled ? "assembled" : operators::to_string(path),
                path == operators::Path::general ? (std::string(", quadrature ") + o.quadrature).c_str() : "",
                t_setup);
  say(line);

  // ---- solve
  solvers::SolverControl control;
  control.tolerance = o.tol;
  control.max_iterations = o.max_iter;
  const char* solver_label = o.solver.c_str();
  if (!o.quiet && root)
    control.progress = [solver_label](int it, double res, double t) {
      std::printf("  %s iteration %6d  relative residual %.3e  (%.1f s)\n", solver_label, it, res, t);
      std::fflush(stdout);
    };
  solvers::SolverResult result;
  problem::Errors errors;
  double t_device_errors = 0.0;
  double t_solve = 0.0, t_device_setup = 0.0;
  std::string device_name, kernel_name;
  std::optional<multigrid::MultigridSolveReport> mg_report;
  solvers::KrylovTimes krylov_times;
  std::optional<multigrid::DeviceMultigridInfo> device_mg;
  // distributed: how the ghost values travel, and (GPU) the time it took on this rank
  std::string exchange_path = "MPI on the host (CPU backend)";
  bool exchange_overlapped = false;
  double exchange_seconds = 0.0;
  long exchange_calls = 0;
  std::size_t exchange_bytes = 0;
  double apply_seconds = 0.0;  // --backend cuda CG: the applies in the iteration
  long apply_calls = 0;
  if (uses_multigrid(o)) {
    multigrid::MultigridSolveSettings mgs;
    mgs.solver = *multigrid::parse_outer_solver(o.solver);
    mgs.start = fmg_start(o) ? multigrid::StartKind::fmg : multigrid::StartKind::zero;
    mgs.precision = precision::from_string(o.mg_precision);
    mgs.multigrid.smoother.kind = *multigrid::parse_smoother_kind(o.smoother);
    mgs.multigrid.smoother.patch_variant = *multigrid::parse_patch_variant(o.patch_variant);
    mgs.multigrid.smoother.chebyshev_degree = o.chebyshev_degree;
    mgs.multigrid.smoother.relaxation = o.relaxation;
    mgs.multigrid.smoother.kernels = o.tuning.patch;
    mgs.multigrid.pre_smooth = o.pre_smooth;
    mgs.multigrid.post_smooth = o.post_smooth;
    mgs.multigrid.coarse = *multigrid::parse_coarse_solver_kind(o.coarse_solver);
    mgs.multigrid.finest_post_fp64 = o.mg_finest_post == "fp64" || o.mg_finest_post == "auto";
    mgs.fgmres.restart = o.restart;
    if (o.backend == "cuda") {
      multigrid::DeviceMultigridOptions options;
      options.component_timing = o.mg_timing;
      options.progress = [&](const std::string& s) { say(s); };
      const fe::Quadrature1D rhs_rule = prob ? problem::data_rule<dim>(mesh, dofs, cfg) : fe::gauss(k + 2);
      if (device_rhs) {
        options.device_rhs = [&](double* d_b, const operators::DeviceOperator& A) {
          device_problem->set_rhs_lift(d_b, A, cfg);  // first: it overwrites b
          device_problem->add_rhs_volume(d_b, rhs_rule);
          device_problem->add_rhs_neumann(d_b, rhs_rule);
          problem::add_cell_vectors<dim>(*rhs_mesh, *rhs_dofs, boundary_terms.cells, boundary_terms.rhs, d_b);
          problem::zero_constrained<dim>(*rhs_mesh, *rhs_dofs, d_b);
        };
        options.device_solution = [&](double* d_x) {
          // cg: u = w + g_h, w zero on the constrained nodes
          device_problem->set_lift(d_x);
          if (device_problem->has_exact()) {
            const auto t = clock_type::now();
            errors = device_problem->errors(d_x);
            t_device_errors = seconds_since(t);
          }
        };
        options.copy_solution = !o.vtu_file.empty();
      }
      options.exchange = exchange_choice(o);
      device_mg.emplace();
      // an input error of the setup (memory, a smoother) ends every rank together
      collective(o.comm, [&] {
        mg_report = multigrid::solve_with_multigrid_cuda<dim>(mesh, dofs, cfg, b, x, mgs, control, options, *device_mg);
      });
      device_name = device_mg->device_name;
      kernel_name = device_mg->outer_kernel;
      std::snprintf(line, sizeof line, "  device          %s, %.3g GB held\n  kernel          %s (outer solver)\n",
                    device_name.c_str(), double(device_mg->device_bytes) / 1e9, kernel_name.c_str());
      say(line);
      if (o.comm.distributed()) {
        exchange_path = device_mg->exchange_path;
        exchange_overlapped = device_mg->exchange_overlapped;
        exchange_seconds = device_mg->exchange_seconds;
        exchange_calls = device_mg->exchange_calls;
        exchange_bytes = device_mg->exchange_bytes;
        std::snprintf(line, sizeof line,
                      "  exchange        %s: %.4f s in %ld updates, every level; %.3g MB sent per fp64 update of the "
                      "finest level (rank 0)\n",
                      exchange_path.c_str(), exchange_seconds, exchange_calls, double(exchange_bytes) / 1e6);
        say(line);
      }
    } else {
      // an input error of the setup (a smoother that does not span ranks) ends every rank together
      collective(o.comm, [&] {
        mg_report = multigrid::solve_with_multigrid<dim>(mesh, cfg, *host_operator, b, x, mgs, control);
      });
    }
    result = mg_report->result;
    t_solve = mg_report->solve_seconds;
    t_device_setup = mg_report->setup_seconds;  // counted with the setup
    std::snprintf(line, sizeof line,
                  "  multigrid       %d levels, V(%d,%d), %s V-cycle%s, coarse solver %s, setup %.3f s\n",
                  mg_report->n_levels, o.pre_smooth, o.post_smooth, o.mg_precision.c_str(),
                  mg_report->finest_post_fp64 ? " (finest level post-smoothed in fp64)" : "",
                  multigrid::to_string(mg_report->coarse), mg_report->setup_seconds);
    say(line);
    if (mg_report->gathered_level >= 0) {
      const int g = mg_report->gathered_level, top = mg_report->n_levels - 1;
      if (g == top)
        std::snprintf(line, sizeof line,
                      "  levels          only %d on every rank (the sub-boxes do not halve), gathered onto rank 0 below "
                      "level %d\n",
                      g, g);
      else
        std::snprintf(line, sizeof line, "  levels          %d..%d on every rank, gathered onto rank 0 below level %d\n",
                      g, top, g);
      say(line);
    }
    std::snprintf(line, sizeof line, "  smoother        %s\n", mg_report->levels.back().smoother.c_str());
    say(line);
  } else if (o.solver == "fgmres") {
    const auto t_solve_start = clock_type::now();
    solvers::FgmresSettings fs;
    fs.restart = o.restart;
    if (assembled)
      result = solvers::solve_fgmres(*assembled, x, b, *P, control, fs, &krylov_times);
    else
      result = solvers::solve_fgmres(*host_operator, x, b, *P, control, fs, &krylov_times);
    t_solve = seconds_since(t_solve_start);
  } else if (o.backend == "cuda") {
    const auto choice = o.variant == "generic"       ? solvers::VariantChoice::generic
                        : o.variant == "cuda-core"   ? solvers::VariantChoice::cuda_core
                        : o.variant == "tensor-core" ? solvers::VariantChoice::tensor_core
                                                     : solvers::VariantChoice::automatic;
    const auto info = solvers::solve_cg_cuda<dim>(mesh, dofs, cfg, b, diag, x, control, choice, exchange_choice(o));
    kernel_name = info.kernel;
    result = info.result;
    t_solve = info.solve_seconds;
    t_device_setup = info.setup_seconds;
    device_name = info.device_name;
    std::snprintf(line, sizeof line, "  device          %s, setup %.3f s\n  kernel          %s\n", device_name.c_str(),
                  t_device_setup, kernel_name.c_str());
    say(line);
    apply_seconds = info.apply_seconds;
    apply_calls = info.apply_calls;
    if (apply_calls > 0) {
      std::snprintf(line, sizeof line, "  operator        %.4f ms per apply in the iteration (%ld applies%s; rank 0)\n",
                    1e3 * apply_seconds / double(apply_calls), apply_calls,
                    o.comm.distributed() ? ", ghost exchange included" : "");
      say(line);
    }
    if (o.comm.distributed()) {
      exchange_path = info.exchange_path;
      exchange_overlapped = info.exchange_overlapped;
      exchange_seconds = info.exchange_seconds;
      exchange_calls = info.exchange_calls;
      exchange_bytes = info.exchange_bytes;
      std::snprintf(line, sizeof line, "  exchange        %s: %.4f s in %ld updates, %.3g MB sent per update (rank 0)\n",
                    exchange_path.c_str(), exchange_seconds, exchange_calls, double(exchange_bytes) / 1e6);
      say(line);
    }
  } else if (assembled) {
    const auto t_solve_start = clock_type::now();
    result = solvers::solve_cg(*assembled, x, b, *P, control);
    t_solve = seconds_since(t_solve_start);
  } else {
    const auto t_solve_start = clock_type::now();
    result = solvers::solve_cg(*host_operator, x, b, *P, control);
    t_solve = seconds_since(t_solve_start);
  }

  // ---- errors and output
  stage("solve");
  if (lift.size() == x.size())  // cg with Dirichlet data: u = w + g_h
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += lift[i];
  x.update_ghost_values();  // distributed: the owners' values (errors, output)
  const auto t_post = clock_type::now();
  const bool have_exact = !prob || prob->exact;
  if (device_problem) {
    // computed on the device right after the solve
  } else if (prob && prob->exact) {
    errors = problem::compute_errors<dim>(mesh, dofs, x, prob->exact, prob->exact_gradient);
  } else if (!prob) {
    errors = problem::compute_errors<dim>(mesh, dofs, x);
  }
  const double t_errors = device_problem ? t_device_errors : seconds_since(t_post);
  if (have_exact) stage("errors");
  const double applies = mg_report ? double(mg_report->outer_operator_calls) : result.iterations + 1;
  const double dofs_per_s = t_solve > 0 ? double(dofs.n_dofs()) * applies / t_solve : 0.0;
  std::string solver_text = "CG iterations (Jacobi)";
  if (o.solver != "cg" || o.precond != "jacobi") {
    const std::string name = o.solver == "cg"       ? "CG"
                             : o.solver == "fgmres" ? "FGMRES"
                             : o.solver == "gmres"  ? "GMRES (left-preconditioned)"
                             : o.solver == "mg"     ? "V-cycle"
                                                    : "FMG V-cycle";
    solver_text = name + " iterations (" + (uses_multigrid(o) ? o.mg_precision + " multigrid" : std::string("Jacobi")) +
                  (o.solver != "fmg" && fmg_start(o) ? ", after a full-multigrid start" : "") + ")";
  }
  if (mg_report && fmg_start(o) && !result.history.empty()) {
    std::snprintf(line, sizeof line, "  start           full multigrid, %.4f s, relative residual %.3e\n",
                  mg_report->fmg_seconds, result.history.front());
    say(line);
  }
  if (mg_report && device_mg && !device_mg->component_times) {
    say("  time per level  not measured (add --mg-timing to time every V-cycle component on the device)\n");
  } else if (mg_report) {
    say("  time per level  level     DoFs   smoother   operator   transfer    vectors     coarse  [s]\n");
    for (int l = mg_report->n_levels - 1; l >= 0; --l) {
      const auto& t = mg_report->times.levels[l];
      std::snprintf(line, sizeof line, "                  %5d %8zu %10.4f %10.4f %10.4f %10.4f %10.4f\n", l,
                    mg_report->levels[l].n_dofs, t.smoother, t.operator_apply, t.transfer, t.vector_ops, t.coarse);
      say(line);
    }
    std::snprintf(line, sizeof line,
                  "  outer solver    operator %.4f s (%ld applies), V-cycles %.4f s (%ld), orthogonalization %.4f s\n",
                  mg_report->outer_operator_seconds, mg_report->outer_operator_calls, mg_report->preconditioner_seconds,
                  mg_report->preconditioner_calls, mg_report->krylov.orthogonalization);
    say(line);
  }
  std::snprintf(line, sizeof line,
                "  solve           %.3f s, %d %s, %s, relative residual %.3e\n",
                t_solve, result.iterations, solver_text.c_str(), result.converged ? "converged" : "NOT converged",
                result.final_relative_residual);
  say(line);
  if (have_exact) {
    std::snprintf(line, sizeof line, "  errors          L2 %.6e   H1-semi %.6e%s\n", errors.l2, errors.h1_semi,
                  prob && !prob->exact_gradient_given ? " (exact gradient by central differences)" : "");
    say(line);
  } else {
    say("  errors          not computed (the problem file gives no \"exact\")\n");
  }
  std::snprintf(line, sizeof line,
                "  throughput      %.3g MDoF/s (operator applies in the solver), %.3g MDoF/s time-to-solution\n",
                dofs_per_s / 1e6, t_solve > 0 ? dofs.n_dofs() / t_solve / 1e6 : 0.0);
  say(line);
  if (result.unpreconditioned_relative_residual >= 0) {
    std::snprintf(line, sizeof line,
                  "  residual        the relative residual above is the preconditioned one, ||P(b - Ax)|| / ||P b||;"
                  " ||b - Ax|| / ||b|| = %.3e\n",
                  result.unpreconditioned_relative_residual);
    say(line);
  }

  if (!o.vtu_file.empty()) {
    problem::write_solution_vtu<dim>(o.vtu_file, mesh, dofs, x, prob ? &*prob : nullptr);
    stage("VTU output");
    say("  wrote           " + o.vtu_file +
        (o.comm.distributed() ? " (pieces " + io::pvtu_piece_path(o.vtu_file, 0) + " .. " +
                                    io::pvtu_piece_path(o.vtu_file, o.comm.size() - 1) + ")"
                              : std::string()) +
        "\n");
  }
  const double t_total = seconds_since(t_start);
  const auto rank_setup = o.comm.all_gather(t_setup + t_device_setup);
  const auto rank_solve = o.comm.all_gather(t_solve);
  const auto rank_exchange = o.comm.all_gather(exchange_seconds);
  const auto rank_apply = o.comm.all_gather(apply_seconds);
  if (!o.json_file.empty() && root) {
    nlohmann::json j = report_header("solve");
    j["config"] = {{"dim", dim},
                   {"degree", k},
                   {"cells_per_direction", n},
                   {"cells", std::vector<int>(nc.begin(), nc.end())},
                   {"refine", o.refine_given ? nlohmann::json(o.refine) : nlohmann::json(nullptr)},
                   {"disc", o.disc},
                   {"geometry", prob ? std::string(mesh::to_string(geometry)) : o.geometry},
                   {"quadrature", o.quadrature},
                   {"geometry_form", o.geometry_form},
                   {"geometry_storage", o.geometry_storage},
                   {"operator_path", assembled ? "assembled" : operators::to_string(path)},
                   {"solver", o.solver},
                   {"preconditioner", uses_multigrid(o) ? "mg" : "jacobi"},
                   {"tol", o.tol},
                   {"max_iter", o.max_iter},
                   {"backend", o.backend},
                   {"backend_reason", o.backend_reason},
                   {"threads", host_threads()},
                   {"tuning", to_json(o.tuning)},
                   {"precision", "fp64"}};
    if (disc == fe::Disc::dg) j["config"]["penalty"] = "k(k+1)(1/h- + 1/h+) interior, 2k(k+1)/h boundary";
    {
      nlohmann::json dj;
      dj["ranks"] = o.comm.size();
      if (o.comm.distributed()) {
        const auto& part = mesh.partition();
        dj["process_grid"] = std::vector<int>(part.process_grid.begin(), part.process_grid.end());
        nlohmann::json boxes = nlohmann::json::array();
        for (const auto& b : part.rank_owned)
          boxes.push_back({{"begin", std::vector<int>(b.begin.begin(), b.begin.end())},
                           {"end", std::vector<int>(b.end.begin(), b.end.end())}});
        dj["owned_cells"] = boxes;
        dj["exchange"] = exchange_path;
        dj["ghost_width"] = part.ghost_width;
        if (o.backend == "cuda") {
          dj["exchange_overlapped"] = exchange_overlapped;
          dj["exchange_seconds"] = rank_exchange;
          dj["exchange_calls"] = exchange_calls;
          dj["exchange_bytes_rank0"] = exchange_bytes;
        }
        dj["mpi_library"] = mpi_library_version();
        dj["mpi_device_aware"] = mpi_device_aware();
        dj["nccl"] = nccl_version();  // "": a build without NCCL
        const auto summary = fe::summarize(*dofs.ghost_layout());
        dj["rank0"] = {{"neighbours", summary.neighbours},
                       {"owned_entries", summary.owned_entries},
                       {"ghost_entries", summary.ghost_entries},
                       {"sent_entries_per_exchange", summary.sent_entries}};
        dj["setup_seconds"] = rank_setup;
        dj["solve_seconds"] = rank_solve;
        if (mg_report && mg_report->gathered_level >= 0) {
          // the levels from gathered_level up spread over the ranks; those below on rank 0
          dj["multigrid_gathered_level"] = mg_report->gathered_level;
          dj["partition_alignment"] = alignment;
        }
      }
      j["distributed"] = dj;
    }
    j["n_dofs"] = dofs.n_dofs();
    j["n_cells"] = mesh.n_global_cells();
    j["iterations"] = result.iterations;
    j["converged"] = result.converged;
    j["final_relative_residual"] = result.final_relative_residual;
    j["residual_history"] = result.history;
    if (result.unpreconditioned_relative_residual >= 0) {
      j["residual_test"] = "preconditioned";  // history and final_relative_residual: ||P(b - Ax)|| / ||P b||
      j["unpreconditioned_relative_residual"] = result.unpreconditioned_relative_residual;
    }
    if (have_exact)
      j["errors"] = {{"l2", errors.l2}, {"h1_semi", errors.h1_semi}};
    else
      j["errors"] = nullptr;
    if (prob) {
      nlohmann::json pj;
      pj["file"] = o.problem_file;
      pj["expressions"] = prob->texts;
      std::set<std::string> dparts, nparts;
      for (int f = 0; f < 2 * dim; ++f) (prob->dirichlet_faces[f] ? dparts : nparts).insert(prob->face_parts[f]);
      pj["dirichlet_parts"] = dparts;
      pj["neumann_parts"] = nparts;
      if (o.problem->mesh) {
        pj["mesh"] = *o.problem->mesh;
        pj["mesh_cells"] = o.problem->cells;
      } else {
        pj["box"] = prob->box;
      }
      pj["exact_gradient"] = !prob->exact ? "none" : prob->exact_gradient_given ? "given" : "central differences";
      j["config"]["problem"] = pj;
    }
    j["timings"] = {{"setup", t_setup + t_device_setup}, {"solve", t_solve}, {"errors", t_errors}, {"total", t_total}};
    if (o.backend == "cuda") {
      j["device"] = device_name;
      j["kernel"] = kernel_name;
    }
    j["config"]["variant"] = o.variant;
    if (o.solver == "fgmres" || o.solver == "gmres") {
      j["config"]["restart"] = o.restart;
      j["timings"]["orthogonalization"] = mg_report ? mg_report->krylov.orthogonalization : krylov_times.orthogonalization;
    }
    if (mg_report) {
      const auto& r = *mg_report;
      j["config"]["smoother"] = o.smoother;
      j["config"]["patch_variant"] = o.patch_variant;
      j["config"]["mg_precision"] = o.mg_precision;
      j["config"]["mg_finest_post"] = o.mg_finest_post;
      j["config"]["mg_start"] = fmg_start(o) ? "fmg" : "zero";
      j["config"]["pre_smooth"] = o.pre_smooth;
      j["config"]["post_smooth"] = o.post_smooth;
      j["config"]["chebyshev_degree"] = o.chebyshev_degree;
      if (o.relaxation) j["config"]["relaxation"] = *o.relaxation;
      j["config"]["coarse_solver"] = o.coarse_solver;
      nlohmann::json levels = nlohmann::json::array();
      for (int l = 0; l < r.n_levels; ++l) {
        const auto& t = r.times.levels[l];
        const auto& info = r.levels[l];
        levels.push_back({{"level", l},
                          {"cells", std::vector<int>(info.cells.begin(), info.cells.begin() + dim)},
                          {"n_dofs", info.n_dofs},
                          {"smoother", info.smoother},
                          {"n_patches", info.n_patches},
                          {"chebyshev_lambda_max", info.lambda_max},
                          {"times", {{"smoother", t.smoother},
                                     {"operator", t.operator_apply},
                                     {"transfer", t.transfer},
                                     {"vector_ops", t.vector_ops},
                                     {"coarse", t.coarse},
                                     {"total", t.total()}}},
                          {"calls", {{"smoother", t.smoother_calls},
                                     {"operator", t.operator_calls},
                                     {"transfer", t.transfer_calls},
                                     {"coarse", t.coarse_calls}}}});
      }
      j["config"]["mg_timing"] = o.mg_timing;
      j["multigrid"] = {{"n_levels", r.n_levels},
                        {"component_times_measured", !device_mg || device_mg->component_times},
                        {"coarse_solver", multigrid::to_string(r.coarse)},
                        {"precision", o.mg_precision},
                        {"finest_post_fp64", r.finest_post_fp64},
                        {"setup_seconds", r.setup_seconds},
                        {"v_cycles", r.times.cycles},
                        {"conversion_seconds", r.times.conversion},
                        {"v_cycle_seconds", r.times.total()},
                        {"fmg_seconds", r.fmg_seconds},
                        {"levels", levels}};
      if (device_mg) {
        j["multigrid"]["level_kernels"] = device_mg->level_kernels;
        j["multigrid"]["device_bytes"] = device_mg->device_bytes;
      }
      j["timings"]["outer_operator"] = r.outer_operator_seconds;
      j["timings"]["preconditioner"] = r.preconditioner_seconds;
      j["timings"]["outer_vector_ops"] = std::max(
          0.0, r.solve_seconds - r.outer_operator_seconds - r.preconditioner_seconds - r.fmg_seconds -
                   r.krylov.orthogonalization);
    }
    if (apply_calls > 0) {
      j["timings"]["operator_applies"] = apply_seconds;
      j["timings"]["operator_apply_calls"] = apply_calls;
      if (o.comm.distributed()) j["distributed"]["apply_seconds"] = rank_apply;
    }
    j["throughput"] = {{"operator_dofs_per_second", dofs_per_s},
                       {"solve_dofs_per_second", t_solve > 0 ? dofs.n_dofs() / t_solve : 0.0}};
    j["memory"] = {{"estimated_bytes", estimate}, {"operator_bytes", host_operator ? host_operator->memory_bytes() : 0}};
    io::write_file_atomically(o.json_file, j.dump(2) + "\n");
    say("  wrote           " + o.json_file + "\n");
  }
  std::snprintf(line, sizeof line, "  total           %.3f s\n", t_total);
  say(line);
  if (!result.converged) {
    if (root)
      std::cerr << "tcfem solve: " << (o.solver == "cg" ? std::string("CG") : o.solver)
              << " did not reach the relative residual " << o.tol << " in " << result.iterations
              << " iterations (reached " << result.final_relative_residual << ")\n";
    return exit_not_converged;
  }
  return exit_ok;
}

}  // namespace

std::function<int()> add_solve_command(CLI::App& app) {
  auto opts = std::make_shared<SolveOptions>();
  auto* cmd = app.add_subcommand(
      "solve", "Solve -div(a grad u) = f: the problem of --problem FILE.json, or the built-in -Laplace u = f with "
               "u = prod sin(pi x_i)");
  cmd->add_option("--problem", opts->problem_file,
                  "Problem file (JSON): dim, degree, geometry (box, cells, map), coefficient, rhs, dirichlet, "
                  "neumann, exact; --degree, --cells and --refine override it (docs/user_guide.md)");
  auto* dim_opt = cmd->add_option("--dim", opts->dim, "Space dimension: 2 or 3")->capture_default_str();
  auto* degree_opt = cmd->add_option("--degree", opts->degree, "Polynomial degree k of Q_k: 1..8")->capture_default_str();
  auto* cells = cmd->add_option("--cells", opts->cells, "Cells per direction, 1..2^20")->capture_default_str();
  auto* refine = cmd->add_option("--refine", opts->refine,
                                 "Refinement level L: 2^L cells per direction (with --problem: the file's cells "
                                 "refined L times)");
  cells->excludes(refine);
  cmd->add_option("--disc", opts->disc, "Discretization: cg (continuous) or dg (SIPG)")
      ->check(CLI::IsMember({"cg", "dg"}))
      ->capture_default_str();
  auto* geometry_opt = cmd->add_option("--geometry", opts->geometry,
                                       "Mesh geometry of the built-in problem: cartesian or deformed")
                           ->check(CLI::IsMember({"cartesian", "deformed"}))
                           ->capture_default_str();
  cmd->add_option("--quadrature", opts->quadrature,
                  "Quadrature of the general-geometry path: bp3 (k+2 Gauss) or bp5 (k+1 Gauss-Lobatto)")
      ->check(CLI::IsMember({"bp3", "bp5"}))
      ->capture_default_str();
  cmd->add_option("--geometry-form", opts->geometry_form,
                  "General geometry on the GPU: pa (stored quadrature-point data), mf (the geometry recomputed "
                  "from the nodes in every apply; cg bp5, the multigrid levels without such a kernel use pa) or "
                  "auto (mf where the cells are trilinear by construction and the mf apply was measured faster, pa "
                  "elsewhere; its setup costs more than pa's)")
      ->check(CLI::IsMember({"auto", "pa", "mf"}))
      ->capture_default_str();
  cmd->add_option("--geometry-storage", opts->geometry_storage,
                  "Precision of the stored geometry of the GPU's fp64 general-geometry operators (the outer "
                  "operator and fp64 levels): fp64, or fp32 (half the bytes per apply; the operator is that of the "
                  "stored data rounded to fp32, a relative change of about 6e-8; cuda-core cg kernels, the others "
                  "store fp64; fp32 levels store fp32 either way)")
      ->check(CLI::IsMember({"fp64", "fp32"}))
      ->capture_default_str();
  add_exchange_options(cmd, opts->exchange, opts->exchange_overlap);
  cmd->add_option("--operator-path", opts->operator_path,
                  "auto (Kronecker fast path on Cartesian meshes), general (quadrature-point data) or "
                  "assembled (sparse matrix, small problems, cpu)")
      ->check(CLI::IsMember({"auto", "general", "assembled"}))
      ->capture_default_str();
  cmd->add_option("--tol", opts->tol, "Relative residual tolerance, in (0,1)")->capture_default_str();
  cmd->add_option("--max-iter", opts->max_iter, "Maximum CG iterations, >= 1")->capture_default_str();
  add_run_options(cmd, opts->backend, opts->tuning_file, opts->threads);
  cmd->add_option("--variant", opts->variant,
                  "Device kernel family (--backend cuda): auto (fastest available), generic, cuda-core, tensor-core")
      ->check(CLI::IsMember({"auto", "generic", "cuda-core", "tensor-core"}))
      ->capture_default_str();
  cmd->add_option("--solver", opts->solver,
                  "Solver: auto (fgmres; cg with --precond jacobi), cg, fgmres (FGMRES(m), right preconditioning: tests ||b - Ax||), gmres (GMRES(m), left "
                  "preconditioning by an fp64 V-cycle: tests ||P(b - Ax)||, as seed 004), mg (V-cycle iteration) or "
                  "fmg (full multigrid, then V-cycles)")
      ->check(CLI::IsMember({"auto", "cg", "fgmres", "gmres", "mg", "fmg"}))
      ->capture_default_str();
  auto* precond = cmd->add_option("--precond", opts->precond, "Preconditioner: jacobi or mg (one multigrid V-cycle)")
                      ->check(CLI::IsMember({"jacobi", "mg"}))
                      ->capture_default_str();
  std::vector<CLI::Option*> mg_options;
  mg_options.push_back(
      cmd->add_option("--smoother", opts->smoother,
                      "Multigrid smoother: auto (patch; chebyshev for dg with Neumann parts, on mapped geometry or "
                      "with a variable coefficient or on several ranks with --backend cuda, and for cg with Neumann "
                      "parts at degrees below 4 on mapped geometry or with a variable coefficient), patch "
                      "(multiplicative vertex patch; separable surrogates of curved cells and variable coefficients "
                      "and patches of the vertices on Neumann parts for cg), patch-additive, chebyshev (point Jacobi)")
          ->check(CLI::IsMember({"auto", "patch", "patch-additive", "chebyshev"}))
          ->capture_default_str());
  mg_options.push_back(cmd->add_option("--patch-variant", opts->patch_variant,
                                       "Multiplicative patch smoother: fused, separate (local residuals) or global "
                                       "(global residual per color; always on the deformed box). On mapped meshes "
                                       "and with a variable coefficient fused and separate take the level residual "
                                       "once per step and the colors' residuals from the separable surrogates "
                                       "(global with patches on Neumann parts)")
                           ->check(CLI::IsMember({"fused", "separate", "global"}))
                           ->capture_default_str());
  mg_options.push_back(
      cmd->add_option("--mg-precision", opts->mg_precision,
                      "Precision of the V-cycle: auto (fp32 on cuda, fp64 on cpu and with gmres), fp64 or fp32; with "
                      "--backend cuda also the tensor-core precisions fp16ec, bf16x3, fp16, tf32x3, bf16 (cg, "
                      "Cartesian)")
          ->capture_default_str());
  mg_options.push_back(
      cmd->add_option("--mg-finest-post", opts->mg_finest_post,
                      "Post-smoothing of the finest level with a V-cycle below fp64: fp64 (on the fp64 residual: no "
                      "rounding error of the low precision amplified by the condition number, the iteration counts "
                      "of an fp64 V-cycle on fine meshes) or vcycle (in the V-cycle's precision, as every other "
                      "level); auto: fp64")
          ->check(CLI::IsMember({"auto", "fp64", "vcycle"}))
          ->capture_default_str());
  mg_options.push_back(
      cmd->add_option("--mg-start", opts->mg_start,
                      "Initial guess of the outer solver: auto (fmg; zero with gmres), zero, or fmg (one "
                      "full-multigrid cycle: restrict b to every level, solve the coarsest, then interpolate and run "
                      "one V-cycle per finer level; --solver fgmres, cg or mg; --solver fmg is mg with it)")
          ->check(CLI::IsMember({"auto", "zero", "fmg"}))
          ->capture_default_str());
  mg_options.push_back(cmd->add_flag("--mg-timing", opts->mg_timing,
                                     "--backend cuda: time every V-cycle component per level (synchronizes the "
                                     "device around each; without it only the outer totals are timed)"));
  mg_options.push_back(
      cmd->add_option("--pre-smooth", opts->pre_smooth, "Pre-smoothing steps per level, 0..100")->capture_default_str());
  mg_options.push_back(cmd->add_option("--post-smooth", opts->post_smooth, "Post-smoothing steps per level, 0..100")
                           ->capture_default_str());
  mg_options.push_back(cmd->add_option("--chebyshev-degree", opts->chebyshev_degree,
                                       "Chebyshev smoother: polynomial degree of one smoothing step, 1..50")
                           ->capture_default_str());
  mg_options.push_back(cmd->add_option("--relaxation", opts->relaxation,
                                       "Patch smoothers: damping omega of the patch corrections, (0, 2]; default "
                                       "1 (multiplicative), 1.6/2^dim (cg additive), 1.6/(3*2^(dim-1)) (dg additive)"));
  mg_options.push_back(cmd->add_option("--coarse-solver", opts->coarse_solver,
                                       "Coarsest level: auto, cholesky (dense, LAPACK) or cg")
                           ->check(CLI::IsMember({"auto", "cholesky", "cg"}))
                           ->capture_default_str());
  auto* restart = cmd->add_option("--restart", opts->restart, "FGMRES restart length m, 1..1000")->capture_default_str();
  cmd->add_option("--json", opts->json_file, "Write the full report as JSON to FILE");
  cmd->add_option("--vtu", opts->vtu_file, "Write the solution as VTU (VTK Lagrange cells) to FILE");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print nothing but errors");
  return [opts, refine, precond, restart, mg_options, dim_opt, degree_opt, cells, geometry_opt]() {
    opts->refine_given = refine->count() > 0;
    opts->dim_given = dim_opt->count() > 0;
    opts->degree_given = degree_opt->count() > 0;
    opts->cells_given = cells->count() > 0;
    opts->geometry_given = geometry_opt->count() > 0;
    opts->precond_given = precond->count() > 0;
    opts->restart_given = restart->count() > 0;
    opts->mg_start_given = false;
    opts->multigrid_options_given.clear();
    for (const auto* opt : mg_options)
      if (opt->count() > 0) {
        opts->multigrid_options_given.push_back(opt->get_name());
        if (opt->get_name() == "--mg-start") opts->mg_start_given = true;
      }
    opts->comm = Communicator::world();
    // the same options on every rank: the same result, but reading the problem file may fail on
    // some ranks only
    // distributed: each rank takes the GPU of its number among the ranks of its host
    if (opts->comm.distributed()) {
      set_process_device(opts->comm.local_rank());
      opts->gpu_on_every_rank = opts->comm.min(static_cast<long long>(query_device().available)) == 1;
    }
    collective(opts->comm, [&] {
      apply_threads(opts->threads);
      resolve_defaults(*opts);
    });
    // --backend auto: the GPU only where every rank has one
    if (opts->comm.distributed() && opts->backend_reason.rfind("auto", 0) == 0) {
      const bool all_gpu = opts->comm.min(static_cast<long long>(opts->backend == "cuda")) == 1;
      if (!all_gpu && opts->backend == "cuda") {
        opts->backend = "cpu";
        opts->backend_reason = "auto: not every rank has a usable CUDA device";
      }
    }
    collective(opts->comm, [&] { validate(*opts); });
    return opts->dim == 2 ? run_solve<2>(*opts) : run_solve<3>(*opts);
  };
}

}  // namespace tcfem::app
