// tcfem bench: throughput of the matrix-free Laplace operators, one JSON row per measurement
// (variant x precision x degree x size), with rooflines against measured device ceilings.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/ceilings.h"
#include "bench/operator_bench.h"
#include "backend.h"
#include "report.h"
#include "commands.h"
#include "core/communicator.h"
#include "core/device_exchange.h"
#include "core/parallel.h"
#include "tuning.h"
#include "core/device.h"
#include "core/error.h"
#include "core/memory.h"
#include "io/gmsh_reader.h"
#include "io/json_report.h"


namespace tcfem::app {
namespace {

using operators::Variant;
using precision::Precision;

struct BenchOptions {
  std::string backend = "auto";
  std::string backend_reason;
  std::string tuning_file;
  Tuning tuning;
  int threads = 0;
  int dim = 3;
  std::string degrees = "1-8";
  std::string disc = "cg";
  std::string geometry = "cartesian";
  std::string quadrature = "bp3";
  std::string geometry_form = "pa";
  std::string geometry_storage = "fp64";
  std::string mesh_file;  // --geometry mesh
  std::string precisions = "fp64";
  std::string variants = "generic,cuda-core,tensor-core";
  std::string dofs;  // empty: the backend's default
  int repetitions = 20;
  int warmup = 3;
  bool ceilings = false;
  std::string json_file;
  bool quiet = false;
  bool precisions_given = false, variants_given = false;
  std::string exchange = "auto";        // several ranks, --backend cuda: the ghost exchange's path
  std::string exchange_overlap = "on";  // ... and whether it runs beside the interior cells
  Communicator comm;                    // the ranks every measurement's box is cut over
};

constexpr double max_target_dofs = 1e12;

[[noreturn]] void not_allowed(const std::string& option, const std::string& value, const std::string& allowed) {
  throw InputError(option + ": value '" + value + "' is not allowed; allowed: " + allowed);
}

/// --geometry of the general path (a map or a mesh file's block).
bool general_geometry(const BenchOptions& o) {
  return o.geometry == "map" || o.geometry == "trilinear" || o.geometry == "quadratic" || o.geometry == "mesh";
}

std::vector<std::string> split_list(const std::string& option, const std::string& text, const std::string& allowed) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(',', begin);
    std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    if (item.empty()) not_allowed(option, text, allowed);
    items.push_back(item);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return items;
}

template <typename T>
void append_unique(std::vector<T>& list, const T& value) {
  for (const auto& v : list)
    if (v == value) return;
  list.push_back(value);
}

std::optional<int> parse_int(const std::string& s) {
  int value = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

/// "1-8", "2,4,6", "1-3,8".
std::vector<int> parse_degrees(const std::string& text) {
  const std::string allowed = "degrees 1..8 as a list such as 1-8 or 2,4,6";
  std::vector<int> degrees;
  for (const auto& item : split_list("--degrees", text, allowed)) {
    const auto dash = item.find('-', 1);
    const auto lo = parse_int(item.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : parse_int(item.substr(dash + 1));
    if (!lo || !hi || *lo < 1 || *hi > 8 || *lo > *hi) not_allowed("--degrees", item, allowed);
    for (int k = *lo; k <= *hi; ++k) append_unique(degrees, k);
  }
  return degrees;
}

std::vector<Precision> parse_precisions(const std::string& text) {
  const std::string allowed = precision::allowed_precision_names() + " (a comma-separated list)";
  std::vector<Precision> list;
  for (const auto& item : split_list("--precisions", text, allowed)) {
    const auto p = precision::parse_precision(item);
    if (!p) not_allowed("--precisions", item, allowed);
    append_unique(list, *p);
  }
  return list;
}

std::vector<Variant> parse_variants(const std::string& text) {
  const std::string allowed = "generic, cuda-core, tensor-core (a comma-separated list)";
  std::vector<Variant> list;
  for (const auto& item : split_list("--variants", text, allowed)) {
    std::optional<Variant> v;
    for (auto candidate : {Variant::generic, Variant::cuda_core, Variant::tensor_core})
      if (item == operators::to_string(candidate)) v = candidate;
    if (!v) not_allowed("--variants", item, allowed);
    append_unique(list, *v);
  }
  return list;
}

/// "1e5,1e6,3e7": target DoF counts.
std::vector<double> parse_dofs(const std::string& text) {
  const std::string allowed = "DoF counts from 1 to 1e12 as a list such as 1e5,1e6,3e7";
  std::vector<double> list;
  for (const auto& item : split_list("--dofs", text, allowed)) {
    double value = 0.0;
    std::size_t used = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      not_allowed("--dofs", item, allowed);
    }
    if (used != item.size() || !std::isfinite(value) || value < 1.0 || value > max_target_dofs)
      not_allowed("--dofs", item, allowed);
    append_unique(list, value);
  }
  return list;
}

std::string format_g(double v, const char* format = "%.3g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string degree_list(const std::vector<int>& degrees) {
  std::string s;
  for (int k : degrees) s += (s.empty() ? "" : ",") + std::to_string(k);
  return s;
}

/// A case the plan could not run, with why.
struct Skipped {
  Variant variant;
  Precision precision;
  int degree;
  double target_dofs;
  std::string reason;
};

struct Plan {
  bench::Backend backend = bench::Backend::cpu;
  std::vector<int> degrees;
  std::vector<Precision> precisions;
  std::vector<Variant> variants;
  std::vector<double> dofs;
  std::vector<bench::BenchCase> cases;
  std::vector<Skipped> skipped;
  DeviceInfo device;
};

std::string cpu_limits() { return "the CPU backend runs the generic variant in fp64 and fp32"; }

std::string build_kernels() {
  std::string s;
  for (const auto& line : operators::describe_device_kernels()) s += " [" + line + "]";
  return s;
}

/// Cells per direction as "n^dim" (a cube) or "n0 x n1 x n2".
std::string cells_text(const std::vector<int>& cells) {
  bool cube = true;
  for (const int c : cells) cube = cube && c == cells.front();
  if (cube && !cells.empty()) return std::to_string(cells.front()) + "^" + std::to_string(cells.size());
  std::string s;
  for (const int c : cells) s += (s.empty() ? "" : " x ") + std::to_string(c);
  return s;
}

/// Validates every option and builds the list of measurements; throws InputError before anything runs.
Plan make_plan(const BenchOptions& o) {
  Plan plan;
  if (o.backend != "cpu" && o.backend != "cuda") not_allowed("--backend", o.backend, "auto, cpu, cuda");
  plan.backend = o.backend == "cpu" ? bench::Backend::cpu : bench::Backend::cuda;
  if (o.dim != 2 && o.dim != 3) not_allowed("--dim", std::to_string(o.dim), "2 or 3");
  plan.degrees = parse_degrees(o.degrees);
  plan.precisions = parse_precisions(o.precisions);
  plan.variants = parse_variants(o.variants);
  plan.dofs = parse_dofs(o.dofs.empty() ? (plan.backend == bench::Backend::cuda ? "3e7" : "1e5") : o.dofs);
  if (o.repetitions < 1 || o.repetitions > 100000)
    not_allowed("--repetitions", std::to_string(o.repetitions), "integers 1..100000");
  if (o.warmup < 0 || o.warmup > 100000) not_allowed("--warmup", std::to_string(o.warmup), "integers 0..100000");
  if (o.ceilings && plan.backend != bench::Backend::cuda)
    throw InputError("--ceilings: measures the ceilings of a CUDA device; it needs --backend cuda");
  if (!o.json_file.empty()) io::check_output_path("--json", o.json_file);
  const bool distributed = o.comm.distributed();
  if (o.ceilings && distributed)
    throw InputError("--ceilings: measures one device; run it on one process (this run has " +
                     std::to_string(o.comm.size()) + " ranks)");
  if (o.exchange != "auto" && !(distributed && plan.backend == bench::Backend::cuda))
    throw InputError("--exchange " + o.exchange + ": the ghost exchange of a distributed run with --backend cuda");
  if (o.exchange_overlap != "on" && !(distributed && plan.backend == bench::Backend::cuda))
    throw InputError("--exchange-overlap " + o.exchange_overlap +
                     ": the ghost exchange of a distributed run with --backend cuda");
  if (o.geometry_storage == "fp32") {
    if (!general_geometry(o))
      throw InputError("--geometry-storage fp32: the stored geometry of --geometry map, trilinear, quadratic or mesh (given: "
                       "--geometry " + o.geometry + ")");
    if (o.geometry_form == "mf")
      throw InputError("--geometry-storage fp32: the mf form stores no geometry (it recomputes it from the nodes)");
    if (plan.backend != bench::Backend::cuda)
      throw InputError("--geometry-storage fp32: chooses the GPU's stored geometry (--backend cuda); the CPU "
                       "operators store fp64");
  }
  // a mesh file's structured block (read once, shared by every case)
  std::shared_ptr<const bench::BenchBlock> block;
  if (o.geometry == "mesh") {
    if (o.mesh_file.empty()) throw InputError("--geometry mesh: give the mesh file with --mesh FILE");
    auto b = std::make_shared<bench::BenchBlock>();
    b->file = o.mesh_file;
    if (o.dim == 2)
      b->block2 = std::make_shared<const mesh::StructuredBlock<2>>(
          mesh::StructuredBlock<2>::recognize(io::read_gmsh_mesh<2>(o.mesh_file)));
    else
      b->block3 = std::make_shared<const mesh::StructuredBlock<3>>(
          mesh::StructuredBlock<3>::recognize(io::read_gmsh_mesh<3>(o.mesh_file)));
    block = std::move(b);
  } else if (!o.mesh_file.empty()) {
    throw InputError("--mesh: a mesh file is read with --geometry mesh only (given: --geometry " + o.geometry + ")");
  }
  if (plan.backend == bench::Backend::cuda) plan.device = require_device("--backend cuda");

  auto make_case = [&](Variant variant, Precision precision, int degree, double target) {
    bench::BenchCase c;
    c.backend = plan.backend;
    c.tuning = o.tuning.device;
    c.key.dim = o.dim;
    c.key.degree = degree;
    c.key.disc = o.disc == "cg" ? fe::Disc::cg : fe::Disc::dg;
    c.key.cartesian = o.geometry == "cartesian";
    c.key.general_field = general_geometry(o);
    c.map = o.geometry == "trilinear"   ? bench::BenchMap::trilinear
            : o.geometry == "quadratic" ? bench::BenchMap::quadratic
                                        : bench::BenchMap::annulus;
    c.block = block;
    c.key.quadrature = o.quadrature == "bp3" ? fe::QuadratureKind::gauss_k2 : fe::QuadratureKind::gll_k1;
    c.key.geometry_form = !c.key.general_field    ? operators::GeometryForm::pa
                          : o.geometry_form == "mf"   ? operators::GeometryForm::mf
                          : o.geometry_form == "auto" ? operators::GeometryForm::automatic
                                                      : operators::GeometryForm::pa;
    c.key.geometry_storage = c.key.general_field && o.geometry_storage == "fp32" ? operators::GeometryStorage::fp32
                                                                                : operators::GeometryStorage::fp64;
    c.key.form = operators::Form::laplace;
    c.key.precision = precision;
    c.key.variant = variant;
    c.target_dofs = target;
    c.warmup = o.warmup;
    c.repetitions = o.repetitions;
    c.comm = o.comm;
    c.exchange = exchange_options(o.exchange, o.exchange_overlap);
    return c;
  };
  auto supported = [&](const bench::BenchCase& c) {
    return plan.backend == bench::Backend::cpu ? bench::cpu_supported(c.key)
                                               : operators::device_kernel_supported(c.key);
  };
  if (!o.variants_given) {  // default: the variants with a kernel for at least one requested key
    std::vector<Variant> built;
    for (auto variant : plan.variants)
      for (auto precision : plan.precisions)
        for (int degree : plan.degrees)
          if (supported(make_case(variant, precision, degree, plan.dofs.front()))) append_unique(built, variant);
    plan.variants = built;
  }

  const bool strict = o.variants_given && o.precisions_given && plan.variants.size() == 1 && plan.precisions.size() == 1;
  for (auto variant : plan.variants)
    for (auto precision : plan.precisions)
      for (int degree : plan.degrees)
        for (double target : plan.dofs) {
          const auto c = make_case(variant, precision, degree, target);
          if (!supported(c)) {
            if (strict)
              throw InputError("--variants " + std::string(operators::to_string(variant)) + " --precisions " +
                               std::string(precision::to_string(precision)) + ": no kernel for " + c.key.to_string() +
                               "; " + (plan.backend == bench::Backend::cpu ? cpu_limits() : "this build has:" + build_kernels()));
            plan.skipped.push_back({variant, precision, degree, target, "no kernel in this build"});
            continue;
          }
          plan.cases.push_back(c);
        }
  if (plan.cases.empty())
    throw InputError("--variants / --precisions: none of the requested kernels exists; " +
                     (plan.backend == bench::Backend::cpu ? cpu_limits() : "this build has:" + build_kernels()));

  // several ranks: a sub-box of at least one cell per rank (InputError otherwise)
  if (distributed)
    for (const auto& c : plan.cases) bench::process_grid_for_case(c);
  // memory (per rank): refuse before allocating
  const double host_available = double(available_host_memory()) / std::max(1, o.comm.local_size());
  for (const auto& c : plan.cases) {
    const auto m = bench::estimate_memory(c);
    const auto size = bench::size_for_case(c);
    auto refuse = [&](const char* where, double need, double have) {
      throw InputError("--dofs: the measurement " + c.key.to_string() + " at " + format_g(c.target_dofs) +
                       " target DoFs (" + format_g(size.n_dofs, "%.4g") + " DoFs, " + cells_text(size.cells) +
                       " cells) needs an estimated " + format_bytes(need) + " of " + where + " memory" +
                       (distributed ? " per rank" : "") + ", but only " + format_bytes(have) + " is available");
    };
    if (plan.backend == bench::Backend::cuda && m.device_bytes > 0.9 * double(plan.device.free_memory))
      refuse("device", m.device_bytes, double(plan.device.free_memory));
    if (host_available > 0 && m.host_bytes > 0.9 * host_available) refuse("host", m.host_bytes, host_available);
  }
  return plan;
}

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  return "cpu";
}

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json ceilings_json(const bench::Ceilings& c) {
  return {{"runs", c.runs},
          {"dram_buffer_bytes", c.dram_buffer_bytes},
          {"dram_tb_per_s", c.dram_tb_per_s()},
          {"dram_copy_kernel_tb_per_s", c.dram_copy_kernel_tb_per_s},
          {"dram_memcpy_tb_per_s", c.dram_memcpy_tb_per_s},
          {"fp64_fma_tflop_per_s", c.fp64_fma_tflop_per_s},
          {"fp32_fma_tflop_per_s", c.fp32_fma_tflop_per_s},
          {"dmma_m8n8k4_tflop_per_s", opt(c.dmma_m8n8k4_tflop_per_s)},
          {"dmma_m16n8k16_tflop_per_s", opt(c.dmma_m16n8k16_tflop_per_s)},
          {"hmma_f16_tflop_per_s", opt(c.hmma_f16_tflop_per_s)},
          {"tf32_mma_tflop_per_s", opt(c.tf32_mma_tflop_per_s)},
          {"shared_load_tb_per_s", c.shared_load_tb_per_s}};
}

/// Figures of one row derived from the measurement (per second; null where unknown).
struct Derived {
  double gdof_per_s = 0.0, gb_per_s = 0.0;
  std::optional<double> flop_per_dof, tflop_per_s, shared_tb_per_s, arithmetic_intensity, shared_intensity;
  std::optional<double> dram_fraction, shared_fraction, compute_fraction, fp64_fma_fraction, dmma_fraction,
      hmma_fraction;
  std::optional<std::string> compute_ceiling;
};

Derived derive(const bench::BenchCase& c, const bench::BenchResult& r, const std::optional<bench::Ceilings>& ceil) {
  Derived d;
  const double t = r.median_seconds > 0.0 ? r.median_seconds : 1e-300;
  d.gdof_per_s = double(r.n_dofs) / t * 1e-9;
  d.gb_per_s = r.dram_bytes_per_apply / t * 1e-9;
  if (r.flops_per_apply) {
    d.flop_per_dof = *r.flops_per_apply / double(r.n_dofs);
    d.tflop_per_s = *r.flops_per_apply / t * 1e-12;
    if (r.dram_bytes_per_apply > 0.0) d.arithmetic_intensity = *r.flops_per_apply / r.dram_bytes_per_apply;
    if (r.shared_bytes_per_apply && *r.shared_bytes_per_apply > 0.0)
      d.shared_intensity = *r.flops_per_apply / *r.shared_bytes_per_apply;
  }
  if (r.shared_bytes_per_apply) d.shared_tb_per_s = *r.shared_bytes_per_apply / t * 1e-12;
  if (!ceil) return d;
  if (ceil->dram_tb_per_s() > 0.0) d.dram_fraction = d.gb_per_s * 1e-3 / ceil->dram_tb_per_s();
  if (d.shared_tb_per_s && ceil->shared_load_tb_per_s > 0.0)
    d.shared_fraction = *d.shared_tb_per_s / ceil->shared_load_tb_per_s;
  if (!d.tflop_per_s) return d;
  const double tf = *d.tflop_per_s;
  if (const auto cc = bench::compute_ceiling(*ceil, c.key.precision, c.key.variant)) {
    d.compute_ceiling = cc->name;
    d.compute_fraction = tf / cc->tflop_per_s;
  }
  const Precision p = c.key.precision;
  if (p == Precision::fp64) {
    if (ceil->fp64_fma_tflop_per_s > 0.0) d.fp64_fma_fraction = tf / ceil->fp64_fma_tflop_per_s;
    const auto dmma = bench::compute_ceiling(*ceil, p, Variant::tensor_core);
    if (dmma && dmma->name != "fp64_fma") d.dmma_fraction = tf / dmma->tflop_per_s;
  }
  if (p == Precision::fp16 || p == Precision::fp16ec || p == Precision::bf16 || p == Precision::bf16x3)
    if (ceil->hmma_f16_tflop_per_s && *ceil->hmma_f16_tflop_per_s > 0.0)
      d.hmma_fraction = tf / *ceil->hmma_f16_tflop_per_s;
  return d;
}

struct Context {
  const BenchOptions* options;
  std::string device_name;
  std::optional<double> sm_clock_ghz;
};

nlohmann::json row_json(const Context& ctx, const bench::BenchCase& c, const bench::BenchResult& r, const Derived& d) {
  const auto& o = *ctx.options;
  nlohmann::json j;
  j["git_sha"] = TCFEM_GIT_SHA;
  j["backend"] = std::string(bench::to_string(c.backend));
  j["device"] = ctx.device_name;
  j["sm_clock_ghz"] = opt(ctx.sm_clock_ghz);
  j["dim"] = c.key.dim;
  j["degree"] = c.key.degree;
  j["disc"] = o.disc;
  j["geometry"] = o.geometry;
  j["quadrature"] = o.quadrature;
  j["geometry_form"] = std::string(operators::to_string(c.key.geometry_form));
  j["geometry_storage"] = std::string(operators::to_string(c.key.geometry_storage));
  j["path"] = c.key.cartesian ? "cartesian" : "general";
  j["precision"] = std::string(precision::to_string(c.key.precision));
  j["variant"] = std::string(operators::to_string(c.key.variant));
  j["target_dofs"] = c.target_dofs;
  j["n_dofs"] = r.n_dofs;
  j["n_cells"] = r.n_cells;
  j["cells_per_direction"] = r.cells_per_direction;
  j["cells"] = r.cells;
  if (c.block) {
    j["mesh"] = c.block->file;
    j["mesh_refinement"] = r.cells_per_direction;  // each of the file's cells split into m^dim
  }
  j["repetitions"] = c.repetitions;
  j["warmup"] = c.warmup;
  j["median_seconds"] = r.median_seconds;
  j["min_seconds"] = r.min_seconds;
  j["max_seconds"] = r.max_seconds;
  j["gdof_per_s"] = d.gdof_per_s;
  j["gb_per_s"] = d.gb_per_s;
  j["dram_bytes_per_apply"] = r.dram_bytes_per_apply;
  j["flops_per_apply"] = opt(r.flops_per_apply);
  j["flop_per_dof"] = opt(d.flop_per_dof);
  j["tflop_per_s"] = opt(d.tflop_per_s);
  j["shared_bytes_per_apply"] = opt(r.shared_bytes_per_apply);
  j["shared_tb_per_s"] = opt(d.shared_tb_per_s);
  j["arithmetic_intensity"] = opt(d.arithmetic_intensity);
  j["shared_intensity"] = opt(d.shared_intensity);
  j["dram_fraction"] = opt(d.dram_fraction);
  j["shared_fraction"] = opt(d.shared_fraction);
  j["compute_ceiling"] = d.compute_ceiling ? nlohmann::json(*d.compute_ceiling) : nlohmann::json(nullptr);
  j["compute_fraction"] = opt(d.compute_fraction);
  j["fp64_fma_fraction"] = opt(d.fp64_fma_fraction);
  j["dmma_fraction"] = opt(d.dmma_fraction);
  j["hmma_fraction"] = opt(d.hmma_fraction);
  j["operator_bytes"] = r.operator_bytes;
  j["check_rel_diff"] = r.checked ? opt(r.check_rel_diff) : nlohmann::json(nullptr);
  j["check_tolerance"] = r.checked ? nlohmann::json(bench::check_tolerance(c.key)) : nlohmann::json(nullptr);
  j["check_passed"] = r.checked ? nlohmann::json(r.check_passed) : nlohmann::json(nullptr);
  j["output_norm"] = opt(r.output_norm);
  nlohmann::json choices = nlohmann::json::object();
  for (const auto& [name, value] : r.choices) choices[name] = value;
  j["kernel_choices"] = choices;
  if (r.distributed) {
    const auto& dd = *r.distributed;
    j["distributed"] = {{"ranks", dd.ranks},
                        {"process_grid", dd.process_grid},
                        {"exchange", dd.exchange},
                        {"exchange_overlapped", dd.overlapped},
                        {"max_neighbours", dd.max_neighbours},
                        {"max_bytes_sent_per_apply", dd.max_bytes_sent},
                        {"rank_median_seconds", dd.rank_median_seconds},
                        {"rank_local_dofs", dd.rank_local_dofs}};
  }
  return j;
}

std::string or_dash(const std::optional<double>& v, const char* format) { return v ? format_g(*v, format) : "-"; }

void print_table_header() {
  std::printf("%-12s %-7s %2s %12s %10s %9s %8s %9s %8s %9s %6s %6s  %s\n", "variant", "prec", "k", "n_dofs",
              "median_ms", "GDoF/s", "GB/s", "FLOP/DoF", "TFLOP/s", "smem_TB/s", "DRAM%", "comp%", "check");
}

void print_row(const bench::BenchCase& c, const bench::BenchResult& r, const Derived& d) {
  auto percent = [](const std::optional<double>& f) { return f ? format_g(100.0 * *f, "%.1f") : "-"; };
  std::string check = "-";
  if (r.checked)
    check = r.check_rel_diff ? format_g(*r.check_rel_diff, "%.1e") + (r.check_passed ? " ok" : " FAIL") : "not finite FAIL";
  std::printf("%-12s %-7s %2d %12zu %10.4g %9.4g %8.4g %9s %8s %9s %6s %6s  %s\n",
              std::string(operators::to_string(c.key.variant)).c_str(),
              std::string(precision::to_string(c.key.precision)).c_str(), c.key.degree, r.n_dofs,
              1e3 * r.median_seconds, d.gdof_per_s, d.gb_per_s, or_dash(d.flop_per_dof, "%.1f").c_str(),
              or_dash(d.tflop_per_s, "%.4g").c_str(), or_dash(d.shared_tb_per_s, "%.4g").c_str(),
              percent(d.dram_fraction).c_str(), percent(d.compute_fraction).c_str(), check.c_str());
}

void print_ceilings(const bench::Ceilings& c) {
  auto tf = [](const char* name, const std::optional<double>& v) {
    return std::string(name) + " " + (v ? format_g(*v, "%.1f") : std::string("n/a"));
  };
  std::printf("  ceilings (best of %d): DRAM %.2f TB/s (copy kernel %.2f, cudaMemcpy %.2f), shared loads %.1f TB/s\n",
              c.runs, c.dram_tb_per_s(), c.dram_copy_kernel_tb_per_s, c.dram_memcpy_tb_per_s, c.shared_load_tb_per_s);
  std::printf("  ceilings TFLOP/s: %s, %s, %s, %s, %s, %s\n", tf("FP64 FMA", c.fp64_fma_tflop_per_s).c_str(),
              tf("FP32 FMA", c.fp32_fma_tflop_per_s).c_str(), tf("DMMA m8n8k4", c.dmma_m8n8k4_tflop_per_s).c_str(),
              tf("DMMA m16n8k16", c.dmma_m16n8k16_tflop_per_s).c_str(),
              tf("HMMA f16", c.hmma_f16_tflop_per_s).c_str(), tf("TF32 mma", c.tf32_mma_tflop_per_s).c_str());
}

/// Skipped cases, one line per (variant, precision, reason).
void print_skipped(const std::vector<Skipped>& skipped) {
  std::map<std::string, std::vector<int>> groups;
  for (const auto& s : skipped) {
    auto& degrees = groups[std::string(operators::to_string(s.variant)) + " " +
                           std::string(precision::to_string(s.precision)) + ": " + s.reason];
    append_unique(degrees, s.degree);
  }
  for (const auto& [what, degrees] : groups)
    std::printf("  skipped %s (degrees %s)\n", what.c_str(), degree_list(degrees).c_str());
}

/// Several ranks: the report's figures of the whole box (bytes, FLOPs and operator memory summed
/// over the ranks' operators, each on its ghosted sub-box).
void sum_over_ranks(const Communicator& comm, bench::BenchResult& r) {
  if (!comm.distributed()) return;
  double v[4] = {r.dram_bytes_per_apply, r.flops_per_apply.value_or(0.0), r.shared_bytes_per_apply.value_or(0.0),
                 double(r.operator_bytes)};
  comm.sum(v, 4);
  r.dram_bytes_per_apply = v[0];
  if (r.flops_per_apply) r.flops_per_apply = v[1];
  if (r.shared_bytes_per_apply) r.shared_bytes_per_apply = v[2];
  r.operator_bytes = std::size_t(v[3]);
}

std::string grid_text(const std::vector<int>& grid) {
  std::string s;
  for (const int g : grid) s += (s.empty() ? "" : " x ") + std::to_string(g);
  return s;
}

int run_bench(const BenchOptions& o) {
  Plan plan;
  collective(o.comm, [&] { plan = make_plan(o); });
  const bool cuda = plan.backend == bench::Backend::cuda;
  const bool distributed = o.comm.distributed();
  const bool talk = !o.quiet && o.comm.rank() == 0;  // rank 0 reports
  Context ctx{&o, cuda ? plan.device.name : cpu_model_name(), std::nullopt};
  if (cuda) ctx.sm_clock_ghz = plan.device.clock_ghz;

  if (talk) {
    if (cuda)
      std::printf("tcfem bench: backend cuda (%s), %s (sm_%d%d, %d SMs, %.2f GHz)\n", o.backend_reason.c_str(),
                  ctx.device_name.c_str(), plan.device.sm_major, plan.device.sm_minor, plan.device.sm_count,
                  plan.device.clock_ghz);
    else
      std::printf("tcfem bench: backend cpu (%s), %s\n", o.backend_reason.c_str(), ctx.device_name.c_str());
    if (distributed)
      std::printf("  ranks %d, %s%s\n", o.comm.size(), mpi_library_version().c_str(),
                  cuda ? ", one GPU per rank (its number among the ranks of its host); each apply's time is the "
                         "slowest rank's"
                       : "; each apply's time is the slowest rank's");
    std::printf("  %dD %s, %s geometry%s, degrees %s, %zu measurements, %d repetitions after %d warm-up applies\n",
                o.dim, o.disc.c_str(), o.geometry.c_str(),
                o.geometry == "cartesian" ? ""
                : general_geometry(o)
                    ? (", quadrature " + o.quadrature + ", geometry form " + o.geometry_form +
                       (o.geometry_storage == "fp32" ? ", fp64 rows with the stored geometry in fp32" : ""))
                          .c_str()
                                          : (", quadrature " + o.quadrature).c_str(),
                degree_list(plan.degrees).c_str(), plan.cases.size(), o.repetitions, o.warmup);
    print_skipped(plan.skipped);
    std::fflush(stdout);
  }

  std::optional<bench::Ceilings> ceilings;
  if (o.ceilings) {
    if (talk) {
      std::printf("  measuring ceilings ...\n");
      std::fflush(stdout);
    }
    ceilings = bench::measure_ceilings(bench::CeilingOptions{});
    if (talk) print_ceilings(*ceilings);
  }

  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> failures;
  std::optional<std::string> first_error;
  if (talk) print_table_header();
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    auto c = plan.cases[i];
    c.seed = 1000 + i;
    const auto size = bench::size_for_case(c);
    if (talk) {
      std::printf("  [%zu/%zu] %s %s Q%d: %s cells, %.0f DoFs%s\n", i + 1, plan.cases.size(),
                  std::string(operators::to_string(c.key.variant)).c_str(),
                  std::string(precision::to_string(c.key.precision)).c_str(), c.key.degree,
                  cells_text(size.cells).c_str(), size.n_dofs,
                  distributed ? (", sub-boxes " + grid_text(bench::process_grid_for_case(c))).c_str() : "");
      std::fflush(stdout);
    }
    bench::BenchResult r;
    try {
      r = cuda ? bench::run_cuda_bench(c) : bench::run_cpu_bench(c);
    } catch (const InputError& e) {  // a kernel that cannot run this case on this device
      if (!first_error) first_error = e.what();
      plan.skipped.push_back({c.key.variant, c.key.precision, c.key.degree, c.target_dofs, e.what()});
      if (talk) std::printf("  skipped: %s\n", e.what());
      continue;
    }
    sum_over_ranks(o.comm, r);
    const Derived d = derive(c, r, ceilings);
    if (talk) {
      print_row(c, r, d);
      if (r.distributed)
        std::printf("  %-12s exchange %s; at most %d neighbour(s), %.3g MB sent per apply by the busiest rank; "
                    "slowest rank's median %.4g ms, fastest %.4g ms\n",
                    "", r.distributed->exchange.c_str(), r.distributed->max_neighbours,
                    r.distributed->max_bytes_sent / 1e6,
                    1e3 * *std::max_element(r.distributed->rank_median_seconds.begin(),
                                            r.distributed->rank_median_seconds.end()),
                    1e3 * *std::min_element(r.distributed->rank_median_seconds.begin(),
                                            r.distributed->rank_median_seconds.end()));
      std::fflush(stdout);
    }
    if (r.checked && !r.check_passed)
      failures.push_back(std::string(operators::to_string(c.key.variant)) + " " +
                         std::string(precision::to_string(c.key.precision)) + " Q" + std::to_string(c.key.degree) +
                         " (" + (r.check_rel_diff ? format_g(*r.check_rel_diff, "%.2e") : std::string("not finite")) +
                         " > " + format_g(bench::check_tolerance(c.key), "%.0e") + ")");
    rows.push_back(row_json(ctx, c, r, d));
  }
  if (rows.empty() && first_error) throw InputError(*first_error);

  if (!o.json_file.empty() && o.comm.rank() == 0) {
    nlohmann::json j = report_header("bench");
    j["backend"] = o.backend;
    j["backend_reason"] = o.backend_reason;
    j["tuning"] = to_json(o.tuning);
    j["threads"] = host_threads();
    {
      nlohmann::json dj;
      dj["ranks"] = o.comm.size();
      if (distributed) {
        dj["mpi_library"] = mpi_library_version();
        dj["mpi_device_aware"] = mpi_device_aware();
        dj["nccl"] = nccl_version();  // "": a build without NCCL
        dj["timing"] = "each apply's time is the slowest rank's; rows give every rank's median";
      }
      j["distributed"] = dj;
    }
    if (cuda)
      j["device"] = {{"name", plan.device.name},
                     {"sm", std::to_string(plan.device.sm_major) + "." + std::to_string(plan.device.sm_minor)},
                     {"sm_count", plan.device.sm_count},
                     {"sm_clock_ghz", plan.device.clock_ghz},
                     {"memory_clock_ghz", plan.device.memory_clock_ghz},
                     {"memory_bus_bits", plan.device.memory_bus_bits},
                     {"total_memory_bytes", plan.device.total_memory}};
    else
      j["device"] = {{"name", ctx.device_name}, {"threads", std::thread::hardware_concurrency()}};
    std::vector<std::string> precisions, variants;
    for (auto p : plan.precisions) precisions.emplace_back(precision::to_string(p));
    for (auto v : plan.variants) variants.emplace_back(operators::to_string(v));
    j["config"] = {{"dim", o.dim},           {"degrees", plan.degrees},       {"disc", o.disc},
                   {"geometry", o.geometry}, {"quadrature", o.quadrature},    {"precisions", precisions},
                   {"mesh", o.mesh_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.mesh_file)},
                   {"variants", variants},   {"dofs", plan.dofs},             {"repetitions", o.repetitions},
                   {"warmup", o.warmup},     {"operator", "laplace"}};
    j["ceilings"] = ceilings ? ceilings_json(*ceilings) : nlohmann::json(nullptr);
    j["rows"] = rows;
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& s : plan.skipped)
      skipped.push_back({{"variant", std::string(operators::to_string(s.variant))},
                         {"precision", std::string(precision::to_string(s.precision))},
                         {"degree", s.degree},
                         {"target_dofs", s.target_dofs},
                         {"reason", s.reason}});
    j["skipped"] = skipped;
    j["check_failures"] = failures.size();
    io::write_file_atomically(o.json_file, j.dump(2) + "\n");
    if (talk) std::printf("  wrote %s\n", o.json_file.c_str());
  }
  if (!failures.empty()) {
    std::string msg;
    for (const auto& f : failures) msg += (msg.empty() ? "" : ", ") + f;
    if (o.comm.rank() == 0)
      std::cerr << "tcfem bench: " << failures.size()
              << " measurement(s) differ from the generic fp64 reference beyond tolerance: " << msg << "\n";
    return exit_internal;
  }
  return exit_ok;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "Measure the throughput of the matrix-free Laplace operator (JSON rows)");
  add_run_options(cmd, opts->backend, opts->tuning_file, opts->threads);
  cmd->add_option("--dim", opts->dim, "Space dimension: 2 or 3")->capture_default_str();
  cmd->add_option("--degrees", opts->degrees, "Polynomial degrees: a list such as 1-8 or 2,4,6 (1..8)")
      ->capture_default_str();
  cmd->add_option("--disc", opts->disc, "Discretization: cg or dg (SIPG)")
      ->check(CLI::IsMember({"cg", "dg"}))
      ->capture_default_str();
  cmd->add_option("--geometry", opts->geometry,
                  "cartesian (Kronecker fast path), deformed (general path, the built-in separable map), map "
                  "(general path, the quarter annulus (1+x) cos(pi y/2), (1+x) sin(pi y/2): stored geometry), "
                  "trilinear (general path, the multilinear map x + xy/4, y + yz/5, z + zx/8: trilinear cells), "
                  "quadratic (general path, the map x + y^2/5 + xz^2/10, y + z^2/7 + x^2y/10, z + x^2/10 + y^2z/10: "
                  "cells of geometry order 2) or mesh (general path, the structured block of the Gmsh mesh --mesh FILE, its cells refined "
                  "uniformly to the target DoFs)")
      ->check(CLI::IsMember({"cartesian", "deformed", "map", "trilinear", "quadratic", "mesh"}))
      ->capture_default_str();
  cmd->add_option("--mesh", opts->mesh_file,
                  "With --geometry mesh: a Gmsh mesh (.msh 2.2 or 4.1) of hexahedra (quadrilaterals with --dim 2) "
                  "of order 1 or 2 forming one structured block");
  cmd->add_option("--quadrature", opts->quadrature, "General-geometry quadrature: bp3 (k+2 Gauss) or bp5 (k+1 Gauss-Lobatto)")
      ->check(CLI::IsMember({"bp3", "bp5"}))
      ->capture_default_str();
  cmd->add_option("--geometry-form", opts->geometry_form,
                  "With --geometry map, trilinear, quadratic or mesh: pa (stored quadrature-point data) or mf (the geometry "
                  "recomputed from the nodes in every apply; cuda-core, and tensor-core in fp64; bp5 and bp3) or auto (what "
                  "the solver's auto "
                  "takes: mf for trilinear cells of a Cartesian mesh where measured faster, else pa)")
      ->check(CLI::IsMember({"pa", "mf", "auto"}))
      ->capture_default_str();
  cmd->add_option("--geometry-storage", opts->geometry_storage,
                  "With --geometry map, trilinear, quadratic or mesh and --geometry-form pa: the precision of the fp64 rows' "
                  "stored geometry, fp64 or fp32 (half the bytes; cuda-core kernels; fp32 rows store fp32 either "
                  "way)")
      ->check(CLI::IsMember({"fp64", "fp32"}))
      ->capture_default_str();
  auto* precisions = cmd->add_option("--precisions", opts->precisions,
                                     "Precisions, a list of " + precision::allowed_precision_names())
                         ->capture_default_str();
  auto* variants = cmd->add_option("--variants", opts->variants,
                                   "Kernel variants, a list of generic, cuda-core, tensor-core (default: all; "
                                   "combinations without a kernel are listed as skipped)");
  cmd->add_option("--dofs", opts->dofs, "Target DoF counts, a list such as 1e5,1e6,3e7 (default 3e7 cuda, 1e5 cpu)");
  cmd->add_option("--repetitions", opts->repetitions, "Timed applies per measurement (median reported), 1..100000")
      ->capture_default_str();
  cmd->add_option("--warmup", opts->warmup, "Untimed applies before timing, 0..100000")->capture_default_str();
  cmd->add_flag("--ceilings", opts->ceilings,
                "Measure the device ceilings first (DRAM, FP64/FP32 FMA, DMMA, HMMA, TF32, shared memory)");
  cmd->add_option("--json", opts->json_file, "Write the report (one row per measurement) as JSON to FILE");
  cmd->add_flag("--quiet,-q", opts->quiet, "Print nothing but errors");
  add_exchange_options(cmd, opts->exchange, opts->exchange_overlap);
  return [opts, precisions, variants]() {
    opts->precisions_given = precisions->count() > 0;
    opts->variants_given = variants->count() > 0;
    opts->comm = Communicator::world();
    // several ranks: each takes the GPU of its number among the ranks of its host; --backend auto
    // takes the GPU only where every rank has one
    if (opts->comm.distributed() && opts->backend != "cpu") set_process_device(opts->comm.local_rank());
    auto choice = resolve_backend(opts->backend, "");
    if (opts->comm.distributed() && opts->backend == "auto" &&
        opts->comm.min(static_cast<long long>(choice.backend == "cuda")) != 1 && choice.backend == "cuda")
      choice = {"cpu", "auto: not every rank has a usable CUDA device"};
    opts->backend = choice.backend;
    opts->backend_reason = choice.reason;
    collective(opts->comm, [&] {
      apply_threads(opts->threads);
      if (!opts->tuning_file.empty()) opts->tuning = read_tuning_file(opts->tuning_file);
    });
    return run_bench(*opts);
  };
}

}  // namespace tcfem::app
