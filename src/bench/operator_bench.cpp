// The CPU part of the operator benchmark, problem sizes and memory estimates.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "bench/bench_common.h"
#include "core/error.h"
#include "fe/dof_exchange.h"

namespace tcfem::bench {

std::string_view to_string(Backend backend) { return backend == Backend::cpu ? "cpu" : "cuda"; }

namespace {

double dofs_of(int dim, int degree, fe::Disc disc, double n) {
  return disc == fe::Disc::cg ? std::pow(n * degree + 1.0, dim) : std::pow(n * (degree + 1.0), dim);
}

template <int dim>
double operator_bytes_per_dof(const operators::DeviceKernelKey& key) {
  return operators::MatrixFreeOperator<dim, double>::estimated_bytes_per_dof(operator_config(key), geometry_of(key));
}

}  // namespace

BenchSize size_for_target(int dim, int degree, fe::Disc disc, double target_dofs) {
  constexpr int max_cells = 1 << 20;
  const double root = std::pow(std::max(target_dofs, 1.0), 1.0 / dim);
  double n = disc == fe::Disc::cg ? std::ceil((root - 1.0) / degree) : std::ceil(root / (degree + 1.0));
  n = std::clamp(n, 1.0, double(max_cells));
  // the root is inexact: step to the smallest n that reaches the target
  while (n > 1 && dofs_of(dim, degree, disc, n - 1) >= target_dofs) n -= 1;
  while (n < max_cells && dofs_of(dim, degree, disc, n) < target_dofs) n += 1;
  BenchSize s;
  s.cells_per_direction = int(n);
  s.cells.assign(std::size_t(dim), int(n));
  s.n_cells = std::pow(n, dim);
  s.n_dofs = dofs_of(dim, degree, disc, n);
  return s;
}

std::vector<int> BenchBlock::cells() const {
  if (block2) return {block2->cells()[0], block2->cells()[1]};
  if (block3) return {block3->cells()[0], block3->cells()[1], block3->cells()[2]};
  return {};
}

BenchSize size_for_case(const BenchCase& c) {
  if (!c.block) return size_for_target(c.key.dim, c.key.degree, c.key.disc, c.target_dofs);
  const std::vector<int> base = c.block->cells();
  TCFEM_ASSERT(int(base.size()) == c.key.dim, "bench block of another dimension");
  constexpr int max_cells = 1 << 20;
  auto size_of = [&](int m) {
    BenchSize s;
    s.cells_per_direction = m;
    s.n_cells = 1.0;
    s.n_dofs = 1.0;
    for (const int b : base) {
      const double n = double(b) * m;
      s.cells.push_back(int(std::min(n, double(max_cells))));
      s.n_cells *= n;
      s.n_dofs *= c.key.disc == fe::Disc::cg ? n * c.key.degree + 1.0 : n * (c.key.degree + 1.0);
    }
    return s;
  };
  int largest = 1;
  for (const int b : base) largest = std::max(largest, b);
  int m = 1;
  while (size_of(m).n_dofs < c.target_dofs && double(largest) * (m + 1) <= double(max_cells)) ++m;
  return size_of(m);
}

bool needs_check(const BenchCase& c) {
  if (!c.check) return false;
  return !(c.key.variant == operators::Variant::generic && c.key.precision == precision::Precision::fp64);
}

operators::DeviceKernelKey check_reference_key(const BenchCase& c) {
  auto ref = c.key;
  ref.precision = precision::Precision::fp64;
  ref.variant = operators::Variant::generic;
  ref.geometry_form = operators::GeometryForm::pa;
  ref.geometry_storage = operators::GeometryStorage::fp64;
  return ref;
}

bool cpu_supported(const operators::DeviceKernelKey& key) {
  return key.variant == operators::Variant::generic && key.form == operators::Form::laplace &&
         (key.dim == 2 || key.dim == 3) && key.degree >= 1 && key.degree <= 8 &&
         (key.precision == precision::Precision::fp64 || key.precision == precision::Precision::fp32);
}

double check_tolerance(precision::Precision p) {
  using precision::Precision;
  switch (p) {
    case Precision::fp64: return 1e-12;
    case Precision::fp16:
    case Precision::bf16: return 1e-2;
    default: return 1e-5;
  }
}

double check_tolerance(const operators::DeviceKernelKey& key) {
  return operators::fp32_stored_fp64(key) ? 1e-6 : check_tolerance(key.precision);
}

template <int dim>
double node_geometry_tolerance(const operators::DeviceKernelKey& key, const mesh::BoxMesh<dim>& mesh) {
  const double base = check_tolerance(key);
  if (key.precision != precision::Precision::fp64 || !key.general_field ||
      operators::resolve_geometry_form(key, mesh.geometry()) != operators::GeometryForm::mf)
    return base;
  std::array<double, dim> lo, hi;
  lo.fill(std::numeric_limits<double>::max());
  hi.fill(std::numeric_limits<double>::lowest());
  double magnitude = 0.0;
  for (int v = 0; v < (1 << dim); ++v) {
    mesh::Point<dim> P;
    for (int d = 0; d < dim; ++d) P[d] = (v >> d & 1) ? mesh.domain().upper[d] : mesh.domain().lower[d];
    const auto x = mesh.map(P);
    for (int d = 0; d < dim; ++d) {
      lo[d] = std::min(lo[d], x[d]);
      hi[d] = std::max(hi[d], x[d]);
      magnitude = std::max(magnitude, std::abs(x[d]));
    }
  }
  double extent = 0.0;
  int n = 1;
  for (int d = 0; d < dim; ++d) {
    extent = std::max(extent, hi[d] - lo[d]);
    n = std::max(n, mesh.n_cells()[d]);
  }
  if (!(extent > 0.0)) return base;
  const double k = key.degree;
  return std::max(base, std::numeric_limits<double>::epsilon() * k * k * n * magnitude / extent);
}

template double node_geometry_tolerance<2>(const operators::DeviceKernelKey&, const mesh::BoxMesh<2>&);
template double node_geometry_tolerance<3>(const operators::DeviceKernelKey&, const mesh::BoxMesh<3>&);

std::vector<int> process_grid_for_case(const BenchCase& c) {
  const auto size = size_for_case(c);
  const int ranks = c.comm.size();
  if (c.key.dim == 2) {
    const auto g = mesh::choose_process_grid<2>({size.cells[0], size.cells[1]}, ranks);
    return {g[0], g[1]};
  }
  const auto g = mesh::choose_process_grid<3>({size.cells[0], size.cells[1], size.cells[2]}, ranks);
  return {g[0], g[1], g[2]};
}

namespace {

/// Entries the largest rank stores: its sub-box (the larger share of every direction) with two
/// ghost cells on every side (the device's ghosted box; the CPU stores one).
double largest_local_dofs(const BenchCase& c, const BenchSize& size) {
  if (!c.comm.distributed()) return size.n_dofs;
  const auto grid = process_grid_for_case(c);
  double n = 1.0;
  for (int d = 0; d < c.key.dim; ++d) {
    const double cells = std::min(double(size.cells[d]), std::ceil(double(size.cells[d]) / grid[d]) + 4.0);
    n *= c.key.disc == fe::Disc::cg ? cells * c.key.degree + 1.0 : cells * (c.key.degree + 1.0);
  }
  return n;
}

}  // namespace

MemoryEstimate estimate_memory(const BenchCase& c) {
  const auto size = size_for_case(c);
  const double n = largest_local_dofs(c, size);
  const double value = precision::stores_double(c.key.precision) ? 8.0 : 4.0;
  // the fp64 estimate bounds the operator data of every precision (and of the fp64 reference)
  const double op = n * (c.key.dim == 2 ? operator_bytes_per_dof<2>(c.key) : operator_bytes_per_dof<3>(c.key));
  const bool check = needs_check(c);
  const double slack = 64e6;
  const double layout = 16.0 * n;  // DoF layout, boundary mask, mesh
  MemoryEstimate m;
  if (c.backend == Backend::cpu) {
    // src, dst; operator; check: fp64 copies of src and of the two outputs
    m.host_bytes = 2.0 * value * n + op + (check ? 24.0 * n : 0.0) + layout + slack;
  } else {
    // device: src, dst, operator (the fast one, then the reference); check: fp64 src and reference output
    m.device_bytes = 2.0 * value * n + op + (check ? 16.0 * n : 0.0) + slack;
    // host: the operator's tables are built on the host first; check: both outputs as fp64
    m.host_bytes = op + (check ? 20.0 * n : 0.0) + layout + slack;
  }
  return m;
}

namespace {

using clock_type = std::chrono::steady_clock;

template <int dim, typename Number>
BenchResult run_cpu_typed(const BenchCase& c) {
  const auto size = size_for_case(c);
  std::array<int, dim> cells;
  std::copy(size.cells.begin(), size.cells.end(), cells.begin());
  const mesh::Partition<dim> part = bench_partition<dim>(c, cells, 1);
  const mesh::BoxMesh<dim> mesh = bench_mesh<dim>(cells, c.key, c.map, c.block.get(), part);
  fe::DofLayout<dim> dofs(mesh, c.key.disc, c.key.degree);
  const auto config = operator_config(c.key);
  const std::size_t n = dofs.n_local();
  const bool distributed = c.comm.distributed();

  BenchResult r;
  r.cells_per_direction = size.cells_per_direction;
  r.cells = size.cells;
  r.n_cells = mesh.n_global_cells();
  r.n_dofs = dofs.n_dofs();
  // the input by global index (the same vector on any number of ranks, ghosts equal to their owners)
  Vector<Number> src(n), dst(n);
  {
    const auto global = dofs.global_indices();
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<Number>(random_value(c.seed, std::uint64_t(global[i])));
  }
  {
    // collective: a rank that cannot build its operator ends the case on every rank
    std::unique_ptr<operators::MatrixFreeOperator<dim, Number>> op;
    collective(c.comm, [&] {
      op = std::make_unique<operators::MatrixFreeOperator<dim, Number>>(mesh, dofs, config, operators::Form::laplace);
    });
    for (int i = 0; i < c.warmup; ++i) op->vmult(dst, src);
    std::vector<double> times(c.repetitions);
    if (distributed) c.comm.barrier();
    for (auto& t : times) {
      const auto start = clock_type::now();
      op->vmult(dst, src);
      t = std::chrono::duration<double>(clock_type::now() - start).count();
    }
    if (distributed) summarize_distributed_times(c.comm, std::move(times), r);
    else summarize_times(std::move(times), r);
    r.output_norm = owned_norm(dst.data(), n, distributed ? dofs.ghost_layout().get() : nullptr);
    r.operator_bytes = op->memory_bytes();
    r.dram_bytes_per_apply = 2.0 * double(n) * sizeof(Number) + double(r.operator_bytes);
    if (needs_check(c)) {
      dst.fill(std::numeric_limits<Number>::quiet_NaN());
      op->vmult(dst, src);
    }
  }
  if (distributed) {
    auto& d = *r.distributed;
    d.process_grid.assign(part.process_grid.begin(), part.process_grid.end());
    d.exchange = "MPI on the host (CPU backend)";
    const auto summary = fe::summarize(*dofs.ghost_layout());
    d.max_neighbours = int(c.comm.max(static_cast<long long>(summary.neighbours)));
    d.max_bytes_sent = c.comm.max(double(summary.sent_entries) * sizeof(Number));
    for (const double v : c.comm.all_gather(double(n))) d.rank_local_dofs.push_back(std::size_t(v));
  }
  if (needs_check(c)) {
    operators::MatrixFreeOperator<dim, double> reference(mesh, dofs, config, operators::Form::laplace);
    Vector<double> x(n), y(n, std::numeric_limits<double>::quiet_NaN());
    for (std::size_t i = 0; i < n; ++i) x[i] = double(src[i]);
    reference.vmult(y, x);
    if (distributed)
      record_distributed_check(dst.data(), y.data(), n, *dofs.ghost_layout(), check_tolerance(c.key), r);
    else
      record_check(dst.data(), y.data(), n, check_tolerance(c.key), r);
  }
  return r;
}

}  // namespace

BenchResult run_cpu_bench(const BenchCase& c) {
  if (!cpu_supported(c.key))
    throw InputError("--backend cpu: no CPU operator for " + c.key.to_string() +
                     "; the CPU backend runs the generic variant in fp64 and fp32");
  TCFEM_ASSERT(c.repetitions >= 1 && c.warmup >= 0, "bench repetitions >= 1 and warmup >= 0");
  const bool dbl = c.key.precision == precision::Precision::fp64;
  if (c.key.dim == 2) return dbl ? run_cpu_typed<2, double>(c) : run_cpu_typed<2, float>(c);
  return dbl ? run_cpu_typed<3, double>(c) : run_cpu_typed<3, float>(c);
}

}  // namespace tcfem::bench
