// tcfem solve: the manufactured Poisson problem with Jacobi-preconditioned CG.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "core/memory.h"
#include "io/json_report.h"
#include "io/vtu_writer.h"
#include "operators/laplace_operator.h"
#include "operators/sparse_matrix.h"
#include "problem/poisson.h"
#include "solvers/cg.h"
#include "solvers/cuda_solve.h"

#ifndef TCFEM_GIT_SHA
#define TCFEM_GIT_SHA "unknown"
#endif

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
  std::string disc = "cg";
  std::string geometry = "cartesian";
  std::string quadrature = "bp3";
  std::string operator_path = "auto";
  double tol = 1e-10;
  int max_iter = 20000;
  std::string backend = "cpu";
  std::string variant = "auto";
  std::string json_file, vtu_file;
  bool quiet = false;
};

constexpr int max_cells_per_direction = 1 << 20;

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
  if (o.backend == "cuda") require_device("--backend cuda");
  if (!o.json_file.empty()) io::check_output_path("--json", o.json_file);
  if (!o.vtu_file.empty()) io::check_output_path("--vtu", o.vtu_file);
  if (!o.json_file.empty() && o.json_file == o.vtu_file) throw InputError("--json and --vtu name the same file");
}

template <int dim>
int run_solve(const SolveOptions& o) {
  const auto t_start = clock_type::now();
  const int n = o.refine_given ? (1 << o.refine) : o.cells;
  const fe::Disc disc = o.disc == "cg" ? fe::Disc::cg : fe::Disc::dg;
  const auto geometry = o.geometry == "cartesian" ? mesh::GeometryKind::cartesian : mesh::GeometryKind::deformed;
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = o.degree;
  cfg.quadrature = o.quadrature == "bp3" ? fe::QuadratureKind::gauss_k2 : fe::QuadratureKind::gll_k1;
  cfg.cartesian_fast_path = o.operator_path == "auto";

  // ---- memory estimate before allocating anything large
  const int k = o.degree;
  const double n_cells = std::pow(double(n), dim);
  const double n_dofs_est = disc == fe::Disc::cg ? std::pow(double(n) * k + 1, dim) : n_cells * std::pow(k + 1, dim);
  const double vectors = 9.0 * 8.0 * n_dofs_est + (disc == fe::Disc::cg ? n_dofs_est : 0.0);
  const double op = operators::MatrixFreeOperator<dim, double>::estimated_bytes_per_dof(cfg, geometry) * n_dofs_est;
  double estimate = vectors + op + 64e6;
  if (o.operator_path == "assembled") estimate += 12.0 * n_dofs_est * std::pow(disc == fe::Disc::cg ? 2 * k + 1 : 3 * (k + 1), dim);
  const double available = double(available_host_memory());
  if (n_dofs_est > double(std::numeric_limits<index_t>::max() / 4) || (available > 0 && estimate > 0.9 * available))
  {
    char msg[256];
    std::snprintf(msg, sizeof msg, "%s: the problem (%d cells per direction, %.3g DoFs) needs an estimated ",
                  o.refine_given ? "--refine" : "--cells", n, n_dofs_est);
    throw InputError(msg + format_bytes(estimate) + " of memory, but only " + format_bytes(available) +
                     " is available");
  }

  auto say = [&](const std::string& s) {
    if (!o.quiet) std::cout << s << std::flush;
  };
  char line[512];
  std::snprintf(line, sizeof line, "tcfem solve: %dD %s Q%d, %d^%d cells, %s geometry, backend %s\n", dim,
                o.disc.c_str(), k, n, dim, o.geometry.c_str(), o.backend.c_str());
  say(line);

  // ---- setup
  std::array<int, dim> nc;
  nc.fill(n);
  mesh::BoxMesh<dim> mesh(nc, geometry);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  Vector<double> diag;
  std::unique_ptr<operators::SparseMatrix> assembled;
  if (o.operator_path == "assembled") {
    assembled = std::make_unique<operators::SparseMatrix>(operators::assemble_operator<dim>(mesh, dofs, cfg, operators::Form::laplace));
    diag = assembled->diagonal();
  } else {
    A.compute_diagonal(diag);
  }
  solvers::JacobiPreconditioner<double> P(diag);
  auto b = problem::assemble_rhs<dim>(mesh, dofs);
  Vector<double> x(dofs.n_local());
  const double t_setup = seconds_since(t_start);
  std::snprintf(line, sizeof line, "  DoFs            %zu (all, boundary included)\n  operator path   %s%s\n  setup           %.3f s\n",
                dofs.n_dofs(), assembled ? "assembled" : operators::to_string(A.path()),
                A.path() == operators::Path::general ? (std::string(", quadrature ") + o.quadrature).c_str() : "",
                t_setup);
  say(line);

  // ---- solve
  solvers::SolverControl control;
  control.tolerance = o.tol;
  control.max_iterations = o.max_iter;
  if (!o.quiet)
    control.progress = [](int it, double res, double t) {
      std::printf("  cg iteration %6d  relative residual %.3e  (%.1f s)\n", it, res, t);
      std::fflush(stdout);
    };
  solvers::SolverResult result;
  double t_solve = 0.0, t_device_setup = 0.0;
  std::string device_name, kernel_name;
  if (o.backend == "cuda") {
    const auto choice = o.variant == "generic"       ? solvers::VariantChoice::generic
                        : o.variant == "cuda-core"   ? solvers::VariantChoice::cuda_core
                        : o.variant == "tensor-core" ? solvers::VariantChoice::tensor_core
                                                     : solvers::VariantChoice::automatic;
    const auto info = solvers::solve_cg_cuda<dim>(mesh, dofs, cfg, b, diag, x, control, choice);
    kernel_name = info.kernel;
    result = info.result;
    t_solve = info.solve_seconds;
    t_device_setup = info.setup_seconds;
    device_name = info.device_name;
    std::snprintf(line, sizeof line, "  device          %s, setup %.3f s\n  kernel          %s\n", device_name.c_str(),
                  t_device_setup, kernel_name.c_str());
    say(line);
  } else if (assembled) {
    const auto t_solve_start = clock_type::now();
    result = solvers::solve_cg(*assembled, x, b, P, control);
    t_solve = seconds_since(t_solve_start);
  } else {
    const auto t_solve_start = clock_type::now();
    result = solvers::solve_cg(A, x, b, P, control);
    t_solve = seconds_since(t_solve_start);
  }

  // ---- errors and output
  const auto t_post = clock_type::now();
  const auto errors = problem::compute_errors<dim>(mesh, dofs, x);
  const double t_errors = seconds_since(t_post);
  const double applies = result.iterations + 1;
  const double dofs_per_s = t_solve > 0 ? double(dofs.n_dofs()) * applies / t_solve : 0.0;
  std::snprintf(line, sizeof line,
                "  solve           %.3f s, %d CG iterations (Jacobi), %s, relative residual %.3e\n"
                "  errors          L2 %.6e   H1-semi %.6e\n"
                "  throughput      %.3g MDoF/s (operator applies in CG), %.3g MDoF/s time-to-solution\n",
                t_solve, result.iterations, result.converged ? "converged" : "NOT converged",
                result.final_relative_residual, errors.l2, errors.h1_semi, dofs_per_s / 1e6,
                t_solve > 0 ? dofs.n_dofs() / t_solve / 1e6 : 0.0);
  say(line);

  if (!o.vtu_file.empty()) {
    io::LagrangeCellData data;
    data.dim = dim;
    data.degree = k;
    data.n_cells = mesh.n_owned_cells();
    std::vector<double> values;
    problem::cell_node_values<dim>(mesh, dofs, x, data.points, values);
    std::vector<double> exact(values.size()), err(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      mesh::Point<dim> p;
      for (int d = 0; d < dim; ++d) p[d] = data.points[i * 3 + d];
      exact[i] = problem::exact_solution<dim>(p);
      err[i] = values[i] - exact[i];
    }
    data.point_fields = {{"u", std::move(values)}, {"u_exact", std::move(exact)}, {"error", std::move(err)}};
    io::write_vtu(o.vtu_file, data);
    say("  wrote           " + o.vtu_file + "\n");
  }
  const double t_total = seconds_since(t_start);
  if (!o.json_file.empty()) {
    nlohmann::json j;
    j["command"] = "solve";
    j["version"] = "0.1.0";
    j["git_sha"] = TCFEM_GIT_SHA;
    const std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    j["date"] = date;
    j["config"] = {{"dim", dim},
                   {"degree", k},
                   {"cells_per_direction", n},
                   {"refine", o.refine_given ? nlohmann::json(o.refine) : nlohmann::json(nullptr)},
                   {"disc", o.disc},
                   {"geometry", o.geometry},
                   {"quadrature", o.quadrature},
                   {"operator_path", assembled ? "assembled" : operators::to_string(A.path())},
                   {"solver", "cg"},
                   {"preconditioner", "jacobi"},
                   {"tol", o.tol},
                   {"max_iter", o.max_iter},
                   {"backend", o.backend},
                   {"precision", "fp64"}};
    if (disc == fe::Disc::dg) j["config"]["penalty"] = "k(k+1)(1/h- + 1/h+) interior, 2k(k+1)/h boundary";
    j["n_dofs"] = dofs.n_dofs();
    j["n_cells"] = mesh.n_global_cells();
    j["iterations"] = result.iterations;
    j["converged"] = result.converged;
    j["final_relative_residual"] = result.final_relative_residual;
    j["residual_history"] = result.history;
    j["errors"] = {{"l2", errors.l2}, {"h1_semi", errors.h1_semi}};
    j["timings"] = {{"setup", t_setup + t_device_setup}, {"solve", t_solve}, {"errors", t_errors}, {"total", t_total}};
    if (o.backend == "cuda") {
      j["device"] = device_name;
      j["kernel"] = kernel_name;
    }
    j["config"]["variant"] = o.variant;
    j["throughput"] = {{"operator_dofs_per_second", dofs_per_s},
                       {"solve_dofs_per_second", t_solve > 0 ? dofs.n_dofs() / t_solve : 0.0}};
    j["memory"] = {{"estimated_bytes", estimate}, {"operator_bytes", A.memory_bytes()}};
    io::write_file_atomically(o.json_file, j.dump(2) + "\n");
    say("  wrote           " + o.json_file + "\n");
  }
  std::snprintf(line, sizeof line, "  total           %.3f s\n", t_total);
  say(line);
  if (!result.converged) {
    std::cerr << "tcfem solve: CG did not reach the relative residual " << o.tol << " in " << result.iterations
              << " iterations (reached " << result.final_relative_residual << ")\n";
    return exit_not_converged;
  }
  return exit_ok;
}

}  // namespace

std::function<int()> add_solve_command(CLI::App& app) {
  auto opts = std::make_shared<SolveOptions>();
  auto* cmd = app.add_subcommand("solve", "Solve -Laplace u = f with u = prod sin(pi x_i) and report errors");
  cmd->add_option("--dim", opts->dim, "Space dimension: 2 or 3")->capture_default_str();
  cmd->add_option("--degree", opts->degree, "Polynomial degree k of Q_k: 1..8")->capture_default_str();
  auto* cells = cmd->add_option("--cells", opts->cells, "Cells per direction, 1..2^20")->capture_default_str();
  auto* refine = cmd->add_option("--refine", opts->refine, "Refinement level L: 2^L cells per direction");
  cells->excludes(refine);
  cmd->add_option("--disc", opts->disc, "Discretization: cg (continuous) or dg (SIPG)")
      ->check(CLI::IsMember({"cg", "dg"}))
      ->capture_default_str();
  cmd->add_option("--geometry", opts->geometry, "Mesh geometry: cartesian or deformed")
      ->check(CLI::IsMember({"cartesian", "deformed"}))
      ->capture_default_str();
  cmd->add_option("--quadrature", opts->quadrature,
                  "Quadrature of the general-geometry path: bp3 (k+2 Gauss) or bp5 (k+1 Gauss-Lobatto)")
      ->check(CLI::IsMember({"bp3", "bp5"}))
      ->capture_default_str();
  cmd->add_option("--operator-path", opts->operator_path,
                  "auto (Kronecker fast path on Cartesian meshes), general (quadrature-point data) or "
                  "assembled (sparse matrix, small problems, cpu)")
      ->check(CLI::IsMember({"auto", "general", "assembled"}))
      ->capture_default_str();
  cmd->add_option("--tol", opts->tol, "Relative residual tolerance, in (0,1)")->capture_default_str();
  cmd->add_option("--max-iter", opts->max_iter, "Maximum CG iterations, >= 1")->capture_default_str();
  cmd->add_option("--backend", opts->backend, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--variant", opts->variant,
                  "Device kernel family (--backend cuda): auto (fastest available), generic, cuda-core, tensor-core")
      ->check(CLI::IsMember({"auto", "generic", "cuda-core", "tensor-core"}))
      ->capture_default_str();
  cmd->add_option("--json", opts->json_file, "Write the full report as JSON to FILE");
  cmd->add_option("--vtu", opts->vtu_file, "Write the solution as VTU (VTK Lagrange cells) to FILE");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print nothing but errors");
  return [opts, refine]() {
    opts->refine_given = refine->count() > 0;
    validate(*opts);
    return opts->dim == 2 ? run_solve<2>(*opts) : run_solve<3>(*opts);
  };
}

}  // namespace tcfem::app
