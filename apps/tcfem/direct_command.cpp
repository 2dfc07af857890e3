// tcfem direct: the prehandled hierarchical-basis direct Poisson solver of seed 003 (2D P1/Q1),
// setup in FP64, solve phase in FP64, FP32 and FP16 for many right-hand sides.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "report.h"
#include "core/device.h"
#include "core/error.h"
#include "core/memory.h"
#include "direct/dense.h"
#include "direct/direct_solver.h"
#include "direct/cuda_dense.h"
#include "direct/solve_phase.h"
#include "io/json_report.h"


namespace tcfem::app {
namespace {

using namespace tcfem::direct;
using clock_type = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

constexpr int max_level = 12;
constexpr std::int64_t max_rhs = 1000000;
constexpr std::int64_t dense_condition_limit = 2000;

struct DirectOptions {
  std::string mesh = "flow-square";
  int level = 5;
  std::string coarse_level = "auto";
  std::string precisions = "fp64,fp32,fp16";
  std::int64_t rhs = 1;
  int repetitions = 3;
  std::string backend = "cpu";
  std::string condition = "auto";
  bool mesh_table = false;
  std::string json_file;
  bool quiet = false;
};

/// The validated configuration.
struct DirectConfig {
  MeshKind mesh = MeshKind::flow_square;
  int level = 0, coarse_level = 0;
  bool coarse_level_auto = true;
  std::vector<Precision> precisions;
  ConditionMethod condition = ConditionMethod::automatic;
  bool cuda = false;
  DirectPlan plan;
  double estimated_bytes = 0.0;
};

[[noreturn]] void not_allowed(const std::string& option, const std::string& value, const std::string& allowed) {
  throw InputError(option + ": value " + value + " is not allowed; allowed: " + allowed);
}

/// Validates every option and estimates memory; throws InputError before anything large exists.
DirectConfig validate(const DirectOptions& o) {
  DirectConfig c;
  c.mesh = parse_mesh_kind(o.mesh, "--mesh");
  if (o.level < 0 || o.level > max_level)
    not_allowed("--level", std::to_string(o.level), "integers 0.." + std::to_string(max_level));
  c.level = o.level;
  if (o.coarse_level == "auto") {
    c.coarse_level = optimal_coarse_level(c.mesh, c.level);
  } else {
    c.coarse_level_auto = false;
    std::size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(o.coarse_level, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != o.coarse_level.size() || v < 0 || v > c.level)
      not_allowed("--coarse-level", o.coarse_level,
                  "auto or integers 0..L (the --level, here " + std::to_string(c.level) + ")");
    c.coarse_level = v;
  }
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = o.precisions.find(',', begin);
    const std::string item = o.precisions.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (item != "fp64" && item != "fp32" && item != "tf32" && item != "tf32x3" && item != "fp16")
      not_allowed("--precision", o.precisions, "a comma-separated list of fp64, fp32, tf32, tf32x3, fp16");
    const Precision p = parse_precision(item, "--precision");
    if (std::find(c.precisions.begin(), c.precisions.end(), p) == c.precisions.end()) c.precisions.push_back(p);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (o.rhs < 1 || o.rhs > max_rhs)
    not_allowed("--rhs", std::to_string(o.rhs), "integers 1.." + std::to_string(max_rhs));
  if (o.repetitions < 1 || o.repetitions > 10000)
    not_allowed("--repetitions", std::to_string(o.repetitions), "integers 1..10000");
  if (o.backend != "cpu" && o.backend != "cuda") not_allowed("--backend", o.backend, "cpu, cuda");
  c.cuda = o.backend == "cuda";
  c.condition = parse_condition_method(o.condition, "--condition");
  if (!o.json_file.empty()) io::check_output_path("--json", o.json_file);

  // memory, before anything large is allocated
  c.plan = plan_direct(c.mesh, c.level, c.coarse_level);
  const auto& p = c.plan;
  if (o.mesh_table) {
    c.estimated_bytes = 120.0 * double(p.n_vertices) + 40.0 * double(p.n_cells) + 200.0 * double(p.n_dofs) + 50e6;
    if (c.condition == ConditionMethod::dense ||
        (c.condition == ConditionMethod::automatic && p.n_dofs <= dense_condition_limit))
      c.estimated_bytes +=
          16.0 * double(std::min<std::int64_t>(p.n_dofs, 20000)) * double(std::min<std::int64_t>(p.n_dofs, 20000));
  } else {
    c.estimated_bytes = p.host_bytes(std::max<std::int64_t>(o.rhs, 2));
  }
  const double available = double(available_host_memory());
  const bool too_large = available > 0 && c.estimated_bytes > 0.9 * available;
  // blame --rhs when the level alone fits
  const bool rhs_to_blame = too_large && !o.mesh_table && p.host_bytes(2) <= 0.9 * available;
  if (p.n_edge > 46000 || too_large)
    throw InputError(std::string(rhs_to_blame ? "--rhs: " : "--level: ") + to_string(c.mesh) +
                     " with L = " + std::to_string(c.level) + ", L0 = " + std::to_string(c.coarse_level) +
                     " (N = " + std::to_string(p.n_dofs) + ", |E| = " + std::to_string(p.n_edge) + ", " +
                     std::to_string(o.rhs) + " right-hand sides) needs an estimated " +
                     format_bytes(c.estimated_bytes) + " of memory, but only " + format_bytes(available) +
                     " is available" + (p.n_edge > 46000 ? " (and |E| exceeds the 32-bit BLAS size of Pi)" : ""));
  if (c.cuda && !o.mesh_table) {
    const DeviceInfo info = require_device("--backend cuda");
    double device = 0.0;
    for (const auto prec : c.precisions) {
      const double mb = matrix_bytes(prec), vb = vector_bytes(prec);
      device = std::max(device, mb * (double(p.n_edge) * double(p.n_edge) +
                                      double(p.n_classes) * double(p.nodes_per_cell) * double(p.nodes_per_cell)) +
                                    double(o.rhs) * double(p.n_dofs) * (3 * vb + 2) + 64e6);
    }
    device = std::max(device, cuda_spd_inverse_bytes(p.n_edge));  // the setup's inversion of Pi
    if (device > 0.95 * double(info.free_memory))
      throw InputError("--level: the CUDA solve phase needs an estimated " + format_bytes(device) +
                       " of device memory, but only " + format_bytes(double(info.free_memory)) + " is free");
  }
  return c;
}

json condition_json(const ConditionEstimate& c) {
  return {{"kappa", c.kappa},   {"lambda_min", c.lambda_min}, {"lambda_max", c.lambda_max},
          {"method", c.method}, {"lanczos_steps", c.steps},   {"converged", c.converged}};
}

std::string condition_text(const ConditionEstimate& c) {
  char b[96];
  if (c.method == "lanczos")
    std::snprintf(b, sizeof b, "%.4g (Lanczos, %d steps%s)", c.kappa, c.steps, c.converged ? "" : ", not converged");
  else
    std::snprintf(b, sizeof b, "%.4g (dense)", c.kappa);
  return b;
}

json report_header(const DirectOptions& o, const DirectConfig& c) {
  json j = app::report_header("direct");
  std::vector<std::string> precs;
  for (const auto p : c.precisions) precs.push_back(to_string(p));
  j["config"] = {{"mesh", to_string(c.mesh)},
                 {"element", element_of(c.mesh) == Element::p1 ? "P1" : "Q1"},
                 {"level", c.level},
                 {"coarse_level", c.coarse_level},
                 {"coarse_level_auto", c.coarse_level_auto},
                 {"precisions", precs},
                 {"rhs", o.rhs},
                 {"repetitions", o.repetitions},
                 {"backend", o.backend},
                 {"condition", to_string(c.condition)},
                 {"mesh_table", o.mesh_table}};
  j["blas"] = blas_library_name();
  j["memory"] = {{"estimated_bytes", c.estimated_bytes}, {"available_bytes", double(available_host_memory())}};
  return j;
}

/// Table 2 of seed 003 for this mesh: N, cells, NNZ(A_FEM)/N and kappa(A_FEM) per level.
int run_mesh_table(const DirectOptions& o, const DirectConfig& c) {
  auto say = [&](const std::string& s) {
    if (!o.quiet) std::cout << s << std::flush;
  };
  char line[256];
  std::snprintf(line, sizeof line, "tcfem direct: mesh table of %s, levels 0..%d\n", to_string(c.mesh), c.level);
  say(line);
  say("      L            N     elements  NNZ(A_FEM)/N   kappa(A_FEM)\n");
  json rows = json::array();
  Mesh2D mesh = make_coarse_mesh(c.mesh);
  for (int l = 0; l <= c.level; ++l) {
    if (l > 0) mesh = refine(mesh);
    const DofMap dofs = make_dof_map(mesh);
    const CsrMatrix a = assemble_stiffness(mesh, dofs);
    const std::int64_t n = dofs.n_dofs();
    ConditionEstimate kappa;
    if (c.condition != ConditionMethod::off && n > 0) {
      const bool dense = c.condition == ConditionMethod::dense     ? n <= 20000
                         : c.condition == ConditionMethod::lanczos ? false
                                                                   : n <= dense_condition_limit;
      if (dense) {
        std::vector<double> full(static_cast<std::size_t>(n * n), 0.0);
        for (std::int64_t i = 0; i < n; ++i)
          for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
            full[i + std::int64_t(a.cols[p]) * n] = a.values[p];
        kappa = condition_dense(n, full.data(), n);
      } else {
        kappa = condition_lanczos(
            n, [&](const double* x, double* y) { a.multiply(x, y); }, 10000);
      }
    }
    const double nnz_per_n = n > 0 ? double(a.nnz()) / double(n) : 0.0;
    char kappa_text[96] = "-";
    if (c.condition != ConditionMethod::off)
      std::snprintf(kappa_text, sizeof kappa_text, "%14.2f  (%s%s)", kappa.kappa, kappa.method.c_str(),
                    kappa.converged ? "" : ", not converged");
    std::snprintf(line, sizeof line, "  %5d %12lld %12lld %13.2f %s\n", l, static_cast<long long>(n),
                  static_cast<long long>(mesh.n_cells()), nnz_per_n, kappa_text);
    say(line);
    json row = {{"level", l},
                {"n_dofs", n},
                {"n_elements", mesh.n_cells()},
                {"nnz_a_fem", a.nnz()},
                {"nnz_a_fem_per_n", nnz_per_n}};
    if (c.condition != ConditionMethod::off) row["kappa_a_fem"] = condition_json(kappa);
    rows.push_back(row);
  }
  if (!o.json_file.empty()) {
    json j = report_header(o, c);
    j["mesh_table"] = rows;
    io::write_file_atomically(o.json_file, j.dump(2) + "\n");
    say("  wrote " + o.json_file + "\n");
  }
  return exit_ok;
}

double relative_error(const double* x, const std::vector<double>& exact) {
  double e = 0.0, u = 0.0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    e += (x[i] - exact[i]) * (x[i] - exact[i]);
    u += exact[i] * exact[i];
  }
  return u > 0 ? std::sqrt(e / u) : std::sqrt(e);
}

int run_direct(const DirectOptions& o, const DirectConfig& c) {
  const auto t_start = clock_type::now();
  auto say = [&](const std::string& s) {
    if (!o.quiet) std::cout << s << std::flush;
  };
  char line[512];
  std::snprintf(line, sizeof line,
                "tcfem direct: %s (%s), level L = %d, coarse level L0 = %d%s, %lld right-hand side%s, backend %s\n",
                to_string(c.mesh), element_of(c.mesh) == Element::p1 ? "P1" : "Q1", c.level, c.coarse_level,
                c.coarse_level_auto ? " (auto: fewest FLOPs)" : "", static_cast<long long>(o.rhs),
                o.rhs == 1 ? "" : "s", o.backend.c_str());
  say(line);
  SetupOptions setup_options;
  if (c.cuda) {
    setup_options.spd_inverse = cuda_spd_inverse;
    setup_options.spd_inverse_name = "cuSOLVER";
  }
  say("  setup in FP64 (" + std::string(blas_library_name()) + (c.cuda ? "; Pi^-1 by cuSOLVER on the device" : "") +
      ")\n");

  setup_options.condition = c.condition;
  setup_options.dense_limit = dense_condition_limit;
  if (!o.quiet)
    setup_options.progress = [](const std::string& stage, double seconds) {
      std::printf("    %-34s %.3f s\n", stage.c_str(), seconds);
      std::fflush(stdout);
    };
  const DirectSolver solver(c.mesh, c.level, c.coarse_level, setup_options);
  const auto& sys = solver.system();
  const auto& tm = solver.timings();
  const double n = double(solver.n_dofs());
  const double flops = sys.flops_per_rhs();
  double nnz_c_inverse = 0.0;
  for (const auto& m : sys.class_inverse) nnz_c_inverse += double(m.size());
  const double nnz_pi = double(sys.n_edge) * double(sys.n_edge);
  const double nnz_total = nnz_pi + nnz_c_inverse + double(sys.b.nnz()) + double(sys.nnz_d());

  std::snprintf(line, sizeof line,
                "  unknowns        N = %lld: |C| = %lld, |E| = %lld, |I| = %lld (%lld macro cells in %lld class%s of "
                "similar cells, %lld nodes each)\n",
                static_cast<long long>(solver.n_dofs()), static_cast<long long>(sys.n_coarse),
                static_cast<long long>(sys.n_edge), static_cast<long long>(sys.n_interior),
                static_cast<long long>(solver.hierarchy().macro.n_cells()), static_cast<long long>(sys.n_classes()),
                sys.n_classes() == 1 ? "" : "es", static_cast<long long>(sys.nodes_per_cell));
  say(line);
  std::snprintf(line, sizeof line,
                "  NNZ / N         A_FEM %.2f, Pi^-1 %.2f, C_k^-1 %.2f, B %.2f, D %.2f, E %.2f, total (Pi^-1, C^-1, "
                "B, D) %.2f\n",
                double(solver.diagnostics().nnz_a_fem) / n, nnz_pi / n, nnz_c_inverse / n, double(sys.b.nnz()) / n,
                double(sys.nnz_d()) / n, double(sys.e_block.nnz()) / n, nnz_total / n);
  say(line);
  std::snprintf(line, sizeof line, "  FLOP / rhs      %.4g (%.3f N^1.5)\n", flops, flops / std::pow(n, 1.5));
  say(line);
  const auto& cond = solver.conditions();
  std::vector<std::string> shapes;
  for (const auto& cls : solver.nodes().classes) shapes.push_back(describe_shape(cls, element_of(c.mesh)));
  if (cond.computed) {
    say("  kappa           A_FEM " + condition_text(cond.a_fem) + "\n                  prehandled A^ " +
        condition_text(cond.prehandled) + "\n                  Pi " + condition_text(cond.pi) + "\n");
    for (std::size_t k = 0; k < cond.classes.size(); ++k)
      say("                  C_" + std::to_string(k + 1) + " " + condition_text(cond.classes[k]) + ": " +
          std::to_string(sys.class_cells[k]) + " " + shapes[k] + (sys.class_cells[k] == 1 ? "" : "s") + "\n");
  }
  std::snprintf(line, sizeof line, "  setup           %.3f s in total\n", tm.total);
  say(line);

  // ---- right-hand sides: the manufactured solutions for n = 1 and n = 10
  const auto& fine = solver.hierarchy().fine;
  std::vector<double> loads[2], exact[2];
  const int freq[2] = {1, 10};
  for (int s = 0; s < 2; ++s) {
    const ExactSolution u{c.mesh, freq[s]};
    loads[s] = assemble_load(fine, solver.dofs(), u);
    exact[s] = interpolate(fine, solver.dofs(), u);
  }
  const std::size_t nd = static_cast<std::size_t>(solver.n_dofs());
  std::vector<double> pair(2 * nd);
  std::copy(loads[0].begin(), loads[0].end(), pair.begin());
  std::copy(loads[1].begin(), loads[1].end(), pair.begin() + nd);
  const auto b_pair = solver.prehandle(pair, 2);
  std::vector<double> many(nd * static_cast<std::size_t>(o.rhs));
  for (std::int64_t r = 0; r < o.rhs; ++r) std::copy(loads[r % 2].begin(), loads[r % 2].end(), many.begin() + r * nd);
  auto t = clock_type::now();
  const auto b_many = solver.prehandle(many, o.rhs);
  const double t_prehandle = seconds_since(t);
  many = {};

  // FP64 on the CPU as the reference for the differences
  std::vector<double> reference;
  {
    auto ref = make_cpu_solve_phase(sys, Precision::fp64);
    ref->load(b_pair);
    ref->run();
    reference = solver.recover(ref->result());
  }

  say("  precision   error n=1    error n=10   diff to fp64   solve phase [s]   GFLOP/s   MDoF/s total   MDoF/s per "
      "rhs\n");
  json results = json::array();
  for (const auto prec : c.precisions) {
    auto phase = c.cuda ? make_cuda_solve_phase(sys, prec) : make_cpu_solve_phase(sys, prec);
    phase->load(b_pair);
    phase->run();
    const auto x_pair = solver.recover(phase->result());
    double err[2], diff[2];
    for (int s = 0; s < 2; ++s) {
      err[s] = relative_error(x_pair.data() + s * nd, exact[s]);
      std::vector<double> ref(reference.begin() + s * nd, reference.begin() + (s + 1) * nd);
      diff[s] = relative_error(x_pair.data() + s * nd, ref);
    }
    phase->load(b_many);
    phase->run();  // warm-up
    std::vector<double> times;
    std::vector<std::pair<double, ComponentSeconds>> runs;
    for (int rep = 0; rep < o.repetitions; ++rep) {
      times.push_back(phase->run());
      runs.emplace_back(times.back(), phase->breakdown());
    }
    std::sort(times.begin(), times.end());
    std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const double median =
        times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
    const ComponentSeconds& parts = runs[runs.size() / 2].second;  // the (upper) median run's components
    t = clock_type::now();
    const auto x_many = solver.recover(phase->result());
    const double t_recover = seconds_since(t);
    // the first of the many right-hand sides is the n = 1 problem solved alone above
    const double many_vs_one = relative_error(x_many.data(), std::vector<double>(x_pair.begin(), x_pair.begin() + nd));
    const double gflops = median > 0 ? flops * double(o.rhs) / median * 1e-9 : 0.0;
    const double mdofs_total = median > 0 ? n * double(o.rhs) / median * 1e-6 : 0.0;
    const double mdofs_rhs = median > 0 ? n / median * 1e-6 : 0.0;
    std::snprintf(line, sizeof line, "  %-9s  %11.4e  %11.4e  %12.3e  %16.4e  %8.2f  %13.1f  %14.2f\n", to_string(prec),
                  err[0], err[1], std::max(diff[0], diff[1]), median, gflops, mdofs_total, mdofs_rhs);
    say(line);
    // FLOPs per component for all right-hand sides (the sparse products count as in flops_per_rhs)
    double class_flops = 0.0;
    for (const auto cells : sys.class_cells)
      class_flops += 4.0 * double(cells) * double(sys.nodes_per_cell) * double(sys.nodes_per_cell);
    const std::array<double, n_solve_components> part_flops = {
        2.0 * double(sys.n_edge) * double(sys.n_edge) * double(o.rhs), class_flops * double(o.rhs),
        4.0 * double(sys.b.nnz() + sys.nnz_d()) * double(o.rhs), 0.0};
    std::string parts_line = "             components:";
    json components = json::object();
    for (int i = 0; i < n_solve_components; ++i) {
      const auto comp = static_cast<SolveComponent>(i);
      const double gf = parts[i] > 0 && part_flops[i] > 0 ? part_flops[i] / parts[i] * 1e-9 : 0.0;
      std::snprintf(line, sizeof line, "%s %s %.3g ms", i ? "," : "", to_string(comp), parts[i] * 1e3);
      parts_line += line;
      if (gf >= 1000) {
        std::snprintf(line, sizeof line, " (%.1f TFLOP/s)", gf * 1e-3);
        parts_line += line;
      } else if (gf > 0) {
        std::snprintf(line, sizeof line, " (%.2f GFLOP/s)", gf);
        parts_line += line;
      }
      components[to_string(comp)] = {{"seconds", parts[i]}, {"flops", part_flops[i]}};
    }
    say(parts_line + "\n");
    results.push_back({{"precision", to_string(prec)},
                       {"components_of_median_run", components},
                       {"solve_phase", phase->description()},
                       {"solve_phase_setup_seconds", phase->setup_seconds()},
                       {"errors", {{"n1", err[0]}, {"n10", err[1]}}},
                       {"difference_to_fp64", {{"n1", diff[0]}, {"n10", diff[1]}}},
                       {"median_seconds", median},
                       {"min_seconds", times.front()},
                       {"times", times},
                       {"gflops", gflops},
                       {"mdofs_per_s", mdofs_total},
                       {"mdofs_per_s_per_rhs", mdofs_rhs},
                       {"prehandle_seconds", t_prehandle},
                       {"recover_seconds", t_recover},
                       {"first_of_many_vs_alone", many_vs_one}});
  }
  std::snprintf(line, sizeof line,
                "  (errors: relative Euclidean norm of u_h - u at the interior vertices, u = %s, n = 1 and 10;\n"
                "   solve phase: steps (4)-(6), median of %d runs; the transform b -> b^ took %.3f s)\n",
                c.mesh == MeshKind::flow_square ? "sin(n pi x) sin(n pi y)(x-5/4)(x-7/4)(y-1/4)(y-3/4)"
                                                : "sin(n pi x) sin(n pi y)",
                o.repetitions, t_prehandle);
  say(line);
  if (!o.json_file.empty()) {
    json j = report_header(o, c);
    j["n_dofs"] = solver.n_dofs();
    j["counts"] = {{"n_coarse", sys.n_coarse},
                   {"n_edge", sys.n_edge},
                   {"n_interior", sys.n_interior},
                   {"n_elements", fine.n_cells()},
                   {"n_macro_cells", solver.hierarchy().macro.n_cells()},
                   {"n_classes", sys.n_classes()},
                   {"class_cells", sys.class_cells},
                   {"class_shapes", shapes},
                   {"nodes_per_cell", sys.nodes_per_cell}};
    j["nnz"] = {{"a_fem", solver.diagnostics().nnz_a_fem},
                {"a_hierarchical", solver.diagnostics().nnz_hierarchical},
                {"pi_inverse", nnz_pi},
                {"c_inverse", nnz_c_inverse},
                {"b", sys.b.nnz()},
                {"d", sys.nnz_d()},
                {"e", sys.e_block.nnz()},
                {"total", nnz_total},
                {"per_n",
                 {{"a_fem", double(solver.diagnostics().nnz_a_fem) / n},
                  {"pi_inverse", nnz_pi / n},
                  {"c_inverse", nnz_c_inverse / n},
                  {"b", double(sys.b.nnz()) / n},
                  {"d", double(sys.nnz_d()) / n},
                  {"e", double(sys.e_block.nnz()) / n},
                  {"total", nnz_total / n}}}};
    j["flops_per_rhs"] = flops;
    j["flops_per_n15"] = flops / std::pow(n, 1.5);
    if (cond.computed) {
      json classes = json::array();
      for (const auto& k : cond.classes) classes.push_back(condition_json(k));
      j["conditions"] = {{"a_fem", condition_json(cond.a_fem)},
                         {"prehandled", condition_json(cond.prehandled)},
                         {"pi", condition_json(cond.pi)},
                         {"classes", classes}};
    }
    j["diagnostics"] = {{"max_ignored_coupling", solver.diagnostics().max_ignored_coupling},
                        {"max_class_deviation", solver.diagnostics().max_class_deviation},
                        {"dropped_entries", solver.diagnostics().dropped_entries}};
    j["timings"] = {{"setup",
                     {{"total", tm.total},
                      {"mesh", tm.mesh},
                      {"assembly", tm.assembly},
                      {"hierarchical", tm.hierarchical},
                      {"blocks", tm.blocks},
                      {"schur", tm.schur},
                      {"inverses", tm.inverses},
                      {"conditions", tm.conditions}}},
                    {"total", seconds_since(t_start)}};
    j["results"] = results;
    io::write_file_atomically(o.json_file, j.dump(2) + "\n");
    say("  wrote           " + o.json_file + "\n");
  }
  std::snprintf(line, sizeof line, "  total           %.3f s\n", seconds_since(t_start));
  say(line);
  return exit_ok;
}

}  // namespace

std::function<int()> add_direct_command(CLI::App& app) {
  auto opts = std::make_shared<DirectOptions>();
  auto* cmd = app.add_subcommand(
      "direct", "Prehandled hierarchical-basis direct Poisson solver (2D P1/Q1; FP64/FP32/FP16 solve phase)");
  cmd->add_option("--mesh", opts->mesh, "square-q1, square-p1 or flow-square ((0,4)x(0,1) minus a square)")
      ->capture_default_str();
  cmd->add_option("--level,-L", opts->level, "Fine level L: the coarse mesh refined L times, 0..12")
      ->capture_default_str();
  cmd->add_option("--coarse-level", opts->coarse_level,
                  "Coarse (macro) level L0, 0..L, or auto (the fewest FLOPs per right-hand side)")
      ->capture_default_str();
  cmd->add_option("--precision", opts->precisions,
                  "Solve-phase precisions, a list of fp64, fp32, tf32 (TF32 tensor-core GEMMs), tf32x3 (FP32 accuracy "
                  "from three split TF32 GEMMs), fp16")
      ->capture_default_str();
  cmd->add_option("--rhs", opts->rhs, "Number of right-hand sides solved at once (timing), 1..1000000")
      ->capture_default_str();
  cmd->add_option("--repetitions", opts->repetitions, "Timed solve phases (median reported), 1..10000")
      ->capture_default_str();
  cmd->add_option("--backend", opts->backend, "cpu (BLAS) or cuda (cuBLAS)")->capture_default_str();
  cmd->add_option("--condition", opts->condition,
                  "Condition numbers: auto (dense up to 2000 unknowns, else Lanczos), dense, lanczos, off")
      ->capture_default_str();
  cmd->add_flag("--mesh-table", opts->mesh_table,
                "Print N, elements, NNZ(A_FEM)/N and kappa(A_FEM) for levels 0..L (seed 003, table 2) and stop");
  cmd->add_option("--json", opts->json_file, "Write the full report as JSON to FILE");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print nothing but errors");
  return [opts]() {
    const DirectConfig config = validate(*opts);
    return opts->mesh_table ? run_mesh_table(*opts, config) : run_direct(*opts, config);
  };
}

}  // namespace tcfem::app
