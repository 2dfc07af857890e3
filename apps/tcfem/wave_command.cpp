// tcfem wave: the acoustic-gravity wave equations (seed 002) in a basin, explicit RK4 in time; a
// problem file (--problem) or the default basin started from a normal mode, whose frequency the
// run measures against the dispersion relation. Summary lines, a JSON report and a VTU time series
// with a ParaView collection.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend.h"
#include "report.h"
#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "core/power_monitor.h"
#include "io/json_report.h"
#include "io/vtu_writer.h"
#include "wave/device_wave.h"
#include "wave/time_stepping.h"
#include "wave/wave_stepper.h"

namespace tcfem::app {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

struct WaveOptions {
  std::string problem_file;
  int dim = 3;
  bool dim_given = false;
  int degree = 0;  // 0: the file's
  std::vector<int> cells;
  int refine = 0;
  double t_end = 0, dt = 0, cfl = 0;
  int steps = 0;
  std::string backend = "auto", backend_reason;
  std::string geometry_form = "pa";
  std::string cores = "auto";
  std::string geometry_storage = "fp64";
  std::string setup = "device";  // where the cuda backend computes the cell data and initial state
  std::string rk4 = "auto";
  std::string json_file, vtu_prefix;
  int vtu_every = 0, energy_every = 0;
  int threads = 0;
  std::string tuning_file;
  bool quiet = false;
};

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

/// The pvd collection of the frames written so far (ParaView reads it as a time series).
std::string pvd_text(const std::vector<std::pair<double, std::string>>& frames) {
  std::ostringstream s;
  s.precision(17);
  s << "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\">\n  <Collection>\n";
  for (const auto& [t, file] : frames) s << "    <DataSet timestep=\"" << t << "\" part=\"0\" file=\"" << file << "\"/>\n";
  s << "  </Collection>\n</VTKFile>\n";
  return s.str();
}

template <int dim>
int run_wave(WaveOptions& o, wave::WaveFile& file) {
  const auto start = clock_type::now();
  auto say = [&](const std::string& line) {
    if (!o.quiet) std::cout << line << std::endl;
  };
  const auto problem = wave::make_wave_problem<dim>(file);
  std::string cells_text;
  for (int d = 0; d < dim; ++d) cells_text += std::to_string(problem.cells[d]) + (d + 1 < dim ? " x " : "");
  say("tcfem wave: " + std::to_string(dim) + "D acoustic-gravity waves, p Q" + std::to_string(problem.degree) +
      " (continuous), u Q" + std::to_string(problem.degree - 1) + " (discontinuous), " + cells_text + " cells, " +
      (file.map.empty() ? "box" : "mapped box") + ", " + (file.path.empty() ? "default basin" : "problem " + file.path) +
      ", backend " + o.backend + " (" + o.backend_reason + ")");
  std::string faces_text;
  for (int f = 0; f < 2 * dim; ++f)
    faces_text += std::string(f ? ", " : "") + "xyz"[f / 2] + (f % 2 ? "max " : "min ") + wave::to_string(problem.faces[f]);
  say("  boundary      " + faces_text);
  const bool device_setup = o.backend == "cuda" && o.setup == "device";
  const wave::Rk4Form rk4 = wave::resolve_rk4_form(
      o.rk4 == "nested" ? wave::Rk4Form::nested : o.rk4 == "classic" ? wave::Rk4Form::classic : wave::Rk4Form::automatic);
  const wave::WaveOperator<dim> op(problem, device_setup ? wave::WaveSetup::device : wave::WaveSetup::host);
  say("  DoFs          " + std::to_string(op.n_dofs()) + " (p " + std::to_string(op.n_p()) + ", u " +
      std::to_string(op.n_u()) + ")");
  say("  stage         " +
      std::string(device_setup ? "boundary terms (host)" : "operator data (geometry, masses, boundary terms)") + " at " +
      format("%.2f s", seconds_since(start)));
  std::unique_ptr<wave::WaveStepper> stepper;
  if (o.backend == "cuda") {
    wave::DeviceWaveOptions dopt;
    dopt.geometry_form = o.geometry_form == "mf" ? wave::WaveGeometryForm::mf : wave::WaveGeometryForm::pa;
    dopt.cores = o.cores == "tensor-core" ? wave::WaveCores::tensor_core
                 : o.cores == "cuda-core" ? wave::WaveCores::cuda_core
                                          : wave::WaveCores::automatic;
    dopt.geometry_storage = o.geometry_storage == "fp32" ? wave::WaveStorage::fp32 : wave::WaveStorage::fp64;
    dopt.rk4 = rk4;
    stepper = wave::make_device_wave_stepper<dim>(op, dopt);
  } else {
    stepper = wave::make_cpu_wave_stepper<dim>(op, rk4);
  }
  say("  stage         " +
      std::string(device_setup ? "device data (geometry, masses, initial state computed on the device)"
                  : o.backend == "cuda" ? "device data (copied from the host)"
                                        : "stepper") +
      " at " + format("%.2f s", seconds_since(start)));
  stepper->set_initial_state();
  if (!device_setup) say("  stage         initial state at " + format("%.2f s", seconds_since(start)));
  // time step: the RK4 limit from the operator's spectral bound
  const auto bound = stepper->spectral_bound(60);
  const double radius = bound.radius;
  say("  stage         spectral bound (skew Lanczos, " + std::to_string(bound.lanczos.applies) + " applies) at " +
      format("%.2f s", seconds_since(start)));
  const double limit = wave::rk4_imaginary_limit / radius;
  double t_end = o.t_end > 0 ? o.t_end : problem.t_end.value_or(0.0);
  if (t_end <= 0 && problem.mode) t_end = 2 * problem.mode->period();
  if (t_end <= 0)
    throw InputError("the end time is missing: give --t-end or \"time\": {\"end\": ...} in the problem file");
  double dt = o.dt > 0 ? o.dt : problem.dt.value_or(0.0);
  const double cfl = o.cfl > 0 ? o.cfl : problem.cfl.value_or(0.5);
  if (cfl > 1) throw InputError("--cfl " + format("%g", cfl) + ": must be at most 1 (the fraction of the stability limit)");
  int steps = o.steps;
  if (steps > 0 && dt > 0) throw InputError("--steps and --dt: give at most one");
  if (steps > 0) dt = t_end / steps;
  if (dt > 0) {
    if (dt > limit)
      throw InputError("time step " + format("%.6g", dt) + " is above the stability limit " + format("%.6g", limit) +
                       " of RK4 for this mesh (2 sqrt(2) / " + format("%.6g", radius) + ", the operator's spectral bound)");
    if (steps <= 0) steps = static_cast<int>(std::ceil(t_end / dt - 1e-9));
  } else {
    steps = std::max(1, static_cast<int>(std::ceil(t_end / (cfl * limit))));
  }
  dt = t_end / steps;
  const double setup_seconds = seconds_since(start);
  say("  time step     " + format("%.6g", dt) + " (" + format("%.3f", dt / limit) + " of the RK4 limit " +
      format("%.6g", limit) + "), " + std::to_string(steps) + " steps to t = " + format("%.6g", t_end));
  say("  running       " + stepper->description());
  say("  RK4           " + std::string(wave::to_string(stepper->rk4_form())) +
      (stepper->rk4_form() == wave::Rk4Form::nested ? " (Horner's form: no accumulator)"
                                                     : " (four stages and an accumulator)"));
  if (problem.mode)
    say("  normal mode   wave numbers " + std::to_string(file.mode[0]) + (dim == 3 ? ", " + std::to_string(file.mode[1]) : "") +
        ", " + (problem.mode->branch ? "acoustic branch " + std::to_string(problem.mode->branch) : std::string("gravity branch")) +
        ": omega " + format("%.10g", problem.mode->omega) + " (period " + format("%.6g", problem.mode->period()) + ")");
  say("  setup         " + format("%.3f s", setup_seconds));

  const int energy_every = o.energy_every > 0 ? o.energy_every : std::max(1, steps / 100);
  const int vtu_every = o.vtu_prefix.empty() ? 0 : (o.vtu_every > 0 ? o.vtu_every : std::max(1, steps / 10));
  std::vector<std::pair<double, std::string>> frames;
  std::vector<double> state;
  auto write_frame = [&](int n, double t) {
    stepper->get_state(state);
    io::LagrangeCellData data;
    data.dim = dim;
    data.degree = op.degree();
    data.n_cells = op.n_cells();
    std::vector<std::vector<double>> fields;
    op.cell_output(state.data(), data.points, fields);
    data.point_fields.push_back({"p", std::move(fields[0])});
    for (int d = 0; d < dim; ++d) data.point_fields.push_back({std::string("u_") + "xyz"[d], std::move(fields[1 + d])});
    char name[32];
    std::snprintf(name, sizeof name, "_%06d.vtu", n);
    const std::string path = o.vtu_prefix + name;
    io::write_vtu(path, data);
    const auto slash = path.find_last_of('/');
    frames.push_back({t, slash == std::string::npos ? path : path.substr(slash + 1)});
    io::write_file_atomically(o.vtu_prefix + ".pvd", pvd_text(frames));
  };
  const bool measure_mode = problem.mode.has_value();
  if (measure_mode) stepper->set_reference();
  std::vector<double> times{0.0}, signal{1.0};
  std::vector<std::array<double, 2>> energy_history;
  const double e0 = stepper->energy();
  energy_history.push_back({0.0, e0});
  if (vtu_every) write_frame(0, 0.0);
  stepper->synchronize();
  std::optional<PowerMonitor> power;
  if (o.backend == "cuda") {
    power.emplace(query_device().pci_bus_id);
    power->start();
  }
  const auto run_start = clock_type::now();
  double output_seconds = 0;
  auto last_progress = clock_type::now();
  bool blew_up = false;
  int done = 0;
  for (int n = 0; n < steps; ++n) {
    stepper->step(n * dt, dt);
    done = n + 1;
    const double t = (n + 1) * dt;
    if (measure_mode) {
      times.push_back(t);
      signal.push_back(stepper->projection());
    }
    if (done % energy_every == 0 || done == steps) {
      const double e = stepper->energy();
      energy_history.push_back({t, e});
      if (!std::isfinite(e) || (e0 > 0 && e > 1e6 * e0) || (measure_mode && !std::isfinite(signal.back()))) {
        blew_up = true;
        break;
      }
    }
    if (vtu_every && (done % vtu_every == 0 || done == steps)) {
      const auto t0 = clock_type::now();
      write_frame(done, t);
      output_seconds += seconds_since(t0);
    }
    if (!o.quiet && seconds_since(last_progress) > 2.0) {
      last_progress = clock_type::now();
      std::cout << "  step          " << done << " / " << steps << ", t = " << format("%.6g", t) << ", energy "
                << format("%.10g", energy_history.back()[1]) << std::endl;
    }
  }
  stepper->synchronize();
  if (power) power->stop();
  const double run_seconds = seconds_since(run_start) - output_seconds;
  const double step_seconds = run_seconds / std::max(1, done);
  const double op_gdofs = stepper->operator_seconds() > 0
                              ? 1e-9 * double(op.n_dofs()) * double(stepper->operator_applies()) / stepper->operator_seconds()
                              : 0.0;
  const double kernel_gdofs = stepper->cell_kernel_seconds() > 0
                                  ? 1e-9 * double(op.n_dofs()) * double(stepper->operator_applies()) /
                                        stepper->cell_kernel_seconds()
                                  : 0.0;
  const double step_gdofs = run_seconds > 0 ? 1e-9 * double(op.n_dofs()) * done / run_seconds : 0.0;
  const double e_final = energy_history.back()[1];

  nlohmann::json j = report_header("wave");
  j["status"] = blew_up ? "blew up" : "completed";
  j["config"] = {{"dim", dim},
                 {"degree", op.degree()},
                 {"cells", problem.cells},
                 {"problem", file.path.empty() ? "default basin" : file.path},
                 {"backend", o.backend},
                 {"backend_reason", o.backend_reason},
                 {"geometry_form", o.backend == "cuda" ? o.geometry_form : std::string("pa")},
                 {"cores", stepper->cores()},
                 {"geometry_storage", o.backend == "cuda" ? o.geometry_storage : std::string("fp64")},
                 {"setup_on", device_setup ? "device" : "host"},
                 {"running", stepper->description()},
                 {"rk4", wave::to_string(stepper->rk4_form())},
                 {"expressions", problem.texts}};
  std::vector<std::string> faces;
  for (auto f : problem.faces) faces.push_back(wave::to_string(f));
  j["config"]["boundary"] = faces;
  j["dofs"] = {{"total", op.n_dofs()}, {"pressure", op.n_p()}, {"velocity", op.n_u()}};
  j["time"] = {{"end", t_end}, {"dt", dt}, {"dt_limit", limit}, {"spectral_radius", radius},
               {"spectral_bound", {{"method", "skew Lanczos"}, {"applies", bound.lanczos.applies}, {"sigma", bound.lanczos.sigma},
                                   {"damping", bound.damping}, {"ritz_values", bound.lanczos.ritz}}},
               {"cfl", dt / limit},
               {"steps", steps}, {"steps_done", done}};
  j["steps"] = done;
  j["timings"] = {{"setup", setup_seconds},
                  {"stepping", run_seconds},
                  {"per_step", step_seconds},
                  {"operator", stepper->operator_seconds()},
                  {"operator_applies", stepper->operator_applies()},
                  {"output", output_seconds},
                  {"total", seconds_since(start)}};
  j["throughput"] = {{"operator_gdofs", op_gdofs}, {"cell_kernel_gdofs", kernel_gdofs}, {"step_gdofs", step_gdofs},
                     {"step_over_four_applies",
                      stepper->operator_applies() ? step_seconds / (4 * stepper->operator_seconds() / stepper->operator_applies()) : 0.0}};
  j["energy"] = {{"initial", e0}, {"final", e_final}, {"history", energy_history}};
  j["memory_bytes"] = stepper->memory_bytes();
  if (power && power->available()) {
    std::vector<std::array<double, 2>> samples;
    const auto& all = power->samples();
    const std::size_t stride = std::max<std::size_t>(1, all.size() / 200);
    for (std::size_t i = 0; i < all.size(); i += stride) samples.push_back(all[i]);
    const double watts = power->average_watts();
    j["power"] = {{"available", true},
                  {"average_watts", watts},
                  {"energy_joules", power->energy_joules()},
                  {"seconds", power->seconds()},
                  {"mdof_per_watt_operator", watts > 0 ? 1e3 * op_gdofs / watts : 0.0},
                  {"mdof_per_watt_step", watts > 0 ? 1e3 * step_gdofs / watts : 0.0},
                  {"samples", samples}};
  } else if (power) {
    j["power"] = {{"available", false}, {"reason", power->reason()}};
  }
  std::vector<std::string> lines;
  if (problem.has_exact() && !blew_up) {
    stepper->get_state(state);
    const auto err = op.errors(state.data(), problem.exact_p, problem.exact_u, done * dt);
    j["errors"] = {{"p_l2", err.p_l2}, {"p_norm", err.p_norm}, {"u_l2", err.u_l2}, {"u_norm", err.u_norm},
                   {"time", done * dt}};
    // a norm of the exact field below 1e-9 of the other's (u at whole periods of a mode) has no
    // meaningful relative error
    auto relative = [](double e, double norm, double other) {
      return norm > 1e-9 * other ? " (relative " + format("%.3e", e / norm) + ")" : std::string(" (the exact field is 0 here)");
    };
    lines.push_back("  errors        p: L2 " + format("%.6e", err.p_l2) + relative(err.p_l2, err.p_norm, err.u_norm) +
                    ", u: L2 " + format("%.6e", err.u_l2) + " at the velocity nodes" +
                    relative(err.u_l2, err.u_norm, err.p_norm));
  }
  if (measure_mode && !blew_up) {
    int crossings = 0;
    const double omega = wave::frequency_from_crossings(times, signal, &crossings);
    const double expected = problem.mode->omega;
    j["mode"] = {{"wave_numbers", std::vector<int>(file.mode.begin(), file.mode.end() - 1)},
                 {"branch", problem.mode->branch},
                 {"omega_expected", expected},
                 {"omega_measured", omega},
                 {"relative_error", omega > 0 ? std::abs(omega - expected) / expected : 1.0},
                 {"zero_crossings", crossings}};
    lines.push_back("  frequency     omega measured " + (omega > 0 ? format("%.10g", omega) : std::string("(fewer than two zero crossings)")) +
                    ", dispersion relation " + format("%.10g", expected) +
                    (omega > 0 ? ", relative difference " + format("%.2e", std::abs(omega - expected) / expected) : std::string()) +
                    " (" + std::to_string(crossings) + " zero crossings)");
  }
  say("  stepping      " + format("%.3f s", run_seconds) + ", " + std::to_string(done) + " steps, " +
      format("%.4g ms", 1e3 * step_seconds) + " per step");
  say("  throughput    operator " + format("%.4g", op_gdofs) + " GDoF/s (its cell kernel " + format("%.4g", kernel_gdofs) +
      " GDoF/s), whole step " + format("%.4g", step_gdofs) +
      " GDoF/s (" + format("%.3f", j["throughput"]["step_over_four_applies"].get<double>()) + " x four applies)");
  say("  energy        initial " + format("%.12g", e0) + ", final " + format("%.12g", e_final) + " (relative change " +
      format("%.3e", e0 > 0 ? (e_final - e0) / e0 : 0.0) + ")");
  if (power && power->available())
    say("  power         " + format("%.1f W", power->average_watts()) + " on average while stepping (" +
        std::to_string(power->samples().size()) + " samples), " + format("%.4g", 1e3 * op_gdofs / power->average_watts()) +
        " MDoF/W at the operator's rate, " + format("%.4g", 1e3 * step_gdofs / power->average_watts()) + " MDoF/W per step");
  else if (power)
    say("  power         not measured: " + power->reason());
  for (const auto& l : lines) say(l);
  if (vtu_every) say("  wrote         " + std::to_string(frames.size()) + " frames, " + o.vtu_prefix + ".pvd");
  if (!o.json_file.empty()) {
    io::write_file_atomically(o.json_file, j.dump(2) + "\n");
    say("  wrote         " + o.json_file);
  }
  if (blew_up) {
    std::cerr << "tcfem: error: the solution blew up (energy " << format("%.3e", e_final) << " at step " << done
              << "); reduce the time step (--cfl) or check the problem\n";
    return exit_not_converged;
  }
  return exit_ok;
}

}  // namespace

std::function<int()> add_wave_command(CLI::App& app) {
  auto o = std::make_shared<WaveOptions>();
  CLI::App* cmd = app.add_subcommand(
      "wave", "Acoustic-gravity waves in a basin (velocity, pressure, free surface), RK4 in time; with no options the "
              "default basin started from a normal mode");
  cmd->add_option("--problem", o->problem_file, "Wave problem file (JSON; docs/user_guide.md, \"Waves\")");
  cmd->add_option("--dim", o->dim, "Dimension of the default basin (2 or 3)")->check(CLI::IsMember({2, 3}));
  cmd->add_option("--degree", o->degree, "Pressure degree k (2..8); the velocity has degree k - 1")
      ->check(CLI::Range(2, 8));
  cmd->add_option("--cells", o->cells, "Cells per direction, e.g. --cells 16,8,8")->delimiter(',');
  cmd->add_option("--refine", o->refine, "Refine the cells uniformly L times (2^L per direction)")->check(CLI::Range(0, 12));
  cmd->add_option("--t-end", o->t_end, "End time (default: the problem file's, or two periods of its normal mode)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dt", o->dt, "Time step (refused above the RK4 stability limit)")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o->steps, "Number of steps (dt = t_end / steps)")->check(CLI::PositiveNumber);
  cmd->add_option("--cfl", o->cfl, "Time step as a fraction of the RK4 stability limit (default 0.5)")
      ->check(CLI::PositiveNumber);
  add_run_options(cmd, o->backend, o->tuning_file, o->threads);
  cmd->add_option("--geometry-form", o->geometry_form,
                  "The device cell kernel's geometry: pa (stored per velocity node) or mf (recomputed from the node "
                  "coordinates)")
      ->check(CLI::IsMember({"pa", "mf"}))
      ->capture_default_str();
  cmd->add_option("--cores", o->cores,
                  "The device cell kernel's contractions: cuda-core, tensor-core (FP64 mma.sync, sm_90) or auto "
                  "(tensor cores where the GPU has them)")
      ->check(CLI::IsMember({"auto", "cuda-core", "tensor-core"}))
      ->capture_default_str();
  cmd->add_option("--geometry-storage", o->geometry_storage,
                  "Precision of the stored geometry (pa): fp64, or fp32 (half the bytes; fp64 state and arithmetic)")
      ->check(CLI::IsMember({"fp64", "fp32"}))
      ->capture_default_str();
  cmd->add_option("--setup", o->setup,
                  "Where the cuda backend computes the geometry, masses and initial state: device (the expressions "
                  "compiled with NVRTC) or host (the host threads, then copied)")
      ->check(CLI::IsMember({"device", "host"}))
      ->capture_default_str();
  cmd->add_option("--rk4", o->rk4,
                  "How a step evaluates RK4: classic (four stages and an accumulator) or nested (the same step in "
                  "Horner's form: one vector fewer read and written per stage); auto: nested")
      ->check(CLI::IsMember({"auto", "classic", "nested"}))
      ->capture_default_str();
  cmd->add_option("--json", o->json_file, "Write the JSON report to this file");
  cmd->add_option("--vtu", o->vtu_prefix, "Write VTU frames PREFIX_NNNNNN.vtu and the collection PREFIX.pvd");
  cmd->add_option("--vtu-every", o->vtu_every, "Steps between VTU frames (default: 10 frames)")->check(CLI::PositiveNumber);
  cmd->add_option("--energy-every", o->energy_every, "Steps between energy samples (default: 100 samples)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet", o->quiet, "Print nothing but errors");
  return [o, cmd]() -> int {
    o->dim_given = cmd->count("--dim") > 0;
    apply_threads(o->threads);
    if (!o->tuning_file.empty()) throw InputError("--tuning: tcfem wave has no tunable kernel families yet");
    if (o->geometry_storage == "fp32" && o->geometry_form == "mf")
      throw InputError("--geometry-storage fp32: the mf form stores no geometry (it recomputes it from the nodes)");
    if (!o->json_file.empty()) io::check_output_path("--json", o->json_file);
    if (!o->vtu_prefix.empty()) io::check_output_path("--vtu", o->vtu_prefix + ".pvd");
    wave::WaveFile file;
    if (!o->problem_file.empty()) {
      file = wave::read_wave_file(o->problem_file);
      if (o->dim_given && o->dim != file.dim)
        throw InputError("--dim " + std::to_string(o->dim) + ": the problem file is for dim " + std::to_string(file.dim));
    } else {
      file = wave::default_wave_file();
      if (o->dim == 2) {
        file.dim = 2;
        file.box = {{0.0, 2.0}, {-1.0, 0.0}};
        file.cells = {8, 4};
        file.mode = {1, 0};
      }
    }
    if (o->degree) file.degree = o->degree;
    if (!o->cells.empty()) {
      if (int(o->cells.size()) != file.dim)
        throw InputError("--cells: expected " + std::to_string(file.dim) + " counts, e.g. --cells " +
                         (file.dim == 3 ? "16,8,8" : "16,8"));
      for (int n : o->cells)
        if (n < 1 || n > (1 << 16)) throw InputError("--cells: counts must be in 1..65536");
      file.cells = o->cells;
    }
    for (auto& n : file.cells) {
      n <<= o->refine;
      if (n > (1 << 16)) throw InputError("--refine: more than 65536 cells per direction");
    }
    const auto choice = resolve_backend(o->backend, wave::device_wave_available() ? "" : "this build has no CUDA backend");
    o->backend = choice.backend;
    o->backend_reason = choice.reason;
    if (o->backend == "cuda") require_device("--backend cuda");
    if (o->backend == "cpu" && cmd->count("--geometry-form"))
      throw InputError("--geometry-form: chooses the device cell kernel; the CPU operator stores its geometry");
    if (o->backend == "cpu" && cmd->count("--geometry-storage"))
      throw InputError("--geometry-storage: chooses the device's stored geometry; the CPU operator stores fp64");
    if (o->backend == "cpu" && cmd->count("--setup"))
      throw InputError("--setup: chooses where the cuda backend computes its data; the CPU backend computes them on the host");
    if (o->backend == "cpu" && cmd->count("--cores"))
      throw InputError("--cores: chooses the device cell kernel's units; the CPU backend has one");
    return file.dim == 2 ? run_wave<2>(*o, file) : run_wave<3>(*o, file);
  };
}

}  // namespace tcfem::app
