// The device part of the operator benchmark: per-apply timing with CUDA events, and the check of
// one apply against the generic fp64 device kernel.
#include <limits>
#include <memory>
#include <optional>

#include "bench/bench_common.h"
#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "fe/dof_exchange.h"
#include "operators/device/ghosted_apply.h"

namespace tcfem::bench {
namespace {

constexpr int fill_block = 256;

int fill_grid(std::size_t n) {
  return static_cast<int>(std::min<std::size_t>((n + fill_block - 1) / fill_block, 1 << 16));
}

template <typename Number>
__global__ void fill_random_kernel(Number* x, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<Number>(random_value(seed, static_cast<std::uint64_t>(i)));
}

template <typename Number>
__global__ void fill_random_indexed_kernel(Number* x, const std::int64_t* global, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<Number>(random_value(seed, static_cast<std::uint64_t>(global[i])));
}

__global__ void widen_kernel(const float* x, double* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = double(x[i]);
}

/// CUDA events, destroyed with the object.
class EventList {
 public:
  explicit EventList(std::size_t n) : events_(n, nullptr) {
    for (auto& e : events_) TCFEM_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventList() {
    for (auto e : events_)
      if (e) cudaEventDestroy(e);
  }
  EventList(const EventList&) = delete;
  EventList& operator=(const EventList&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

/// A device vector of n entries of 8 (double) or 4 (float) bytes.
struct RawVector {
  RawVector(std::size_t n, std::size_t value_size) : words((n * value_size + 7) / 8), n(n), value_size(value_size) {}
  DeviceBuffer<double> words;
  std::size_t n, value_size;
  void* data() { return words.data(); }
  void fill_random(std::uint64_t seed) {
    if (value_size == 8) fill_random_kernel<double><<<fill_grid(n), fill_block>>>(words.data(), n, seed);
    else fill_random_kernel<float><<<fill_grid(n), fill_block>>>(reinterpret_cast<float*>(words.data()), n, seed);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  /// x_i = random_value(seed, global[i]) (global: device array of n indices).
  void fill_random_indexed(std::uint64_t seed, const std::int64_t* global) {
    if (value_size == 8)
      fill_random_indexed_kernel<double><<<fill_grid(n), fill_block>>>(words.data(), global, n, seed);
    else
      fill_random_indexed_kernel<float>
          <<<fill_grid(n), fill_block>>>(reinterpret_cast<float*>(words.data()), global, n, seed);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  /// NaN in every entry (all bits set), so that entries a kernel does not write fail the check.
  void poison() { TCFEM_CUDA_CHECK(cudaMemset(words.data(), 0xff, words.size() * sizeof(double))); }
  std::vector<double> to_host_double() const {
    std::vector<double> out(n);
    if (value_size == 8) {
      words.copy_to_host(out.data(), n);
    } else {
      std::vector<float> f(n);
      TCFEM_CUDA_CHECK(cudaMemcpy(f.data(), words.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n; ++i) out[i] = f[i];
    }
    return out;
  }
};

template <int dim>
BenchResult run_cuda_typed(const BenchCase& c) {
  require_device("--backend cuda");
  TCFEM_ASSERT(c.repetitions >= 1 && c.warmup >= 0, "bench repetitions >= 1 and warmup >= 0");
  const auto size = size_for_case(c);
  std::array<int, dim> cells;
  std::copy(size.cells.begin(), size.cells.end(), cells.begin());
  // distributed: each rank's operator runs on its ghosted sub-box as a mesh of its own (two ghost
  // cells keep the box's constrained faces away from every owned node, as in the solvers)
  const bool distributed = c.comm.distributed();
  const mesh::Partition<dim> part = bench_partition<dim>(c, cells, distributed ? 2 : 1);
  const mesh::BoxMesh<dim> mesh = bench_mesh<dim>(cells, c.key, c.map, c.block.get(), part);
  fe::DofLayout<dim> dofs(mesh, c.key.disc, c.key.degree);
  std::optional<mesh::BoxMesh<dim>> box_mesh;
  std::optional<fe::DofLayout<dim>> box_dofs;
  if (distributed) {
    box_mesh.emplace(mesh::ghosted_box_mesh(mesh));
    box_dofs.emplace(*box_mesh, c.key.disc, c.key.degree, fe::ghosted_box_dirichlet(part, dofs.dirichlet_faces()));
    TCFEM_ASSERT(box_dofs->n_local() == dofs.n_local(), "the ghosted box's lattice differs from the local one");
  }
  const auto& op_mesh = distributed ? *box_mesh : mesh;
  const auto& op_dofs = distributed ? *box_dofs : dofs;
  // the kernel key of the ghosted sub-box, as the solvers take it: the built-in deformation is a
  // map of the sub-box there (general geometry, stored), Cartesian and mapped boxes keep theirs
  operators::DeviceKernelKey key = c.key;
  if (distributed) {
    operators::set_geometry(key, op_mesh, op_dofs, operator_config(c.key));
    key.geometry_form = c.key.general_field ? c.key.geometry_form : operators::GeometryForm::pa;
    key.geometry_storage = c.key.geometry_storage;
  }

  BenchResult r;
  r.cells_per_direction = size.cells_per_direction;
  r.cells = size.cells;
  r.n_cells = mesh.n_global_cells();
  r.n_dofs = dofs.n_dofs();
  // collective: a rank that cannot build its operator ends the case on every rank
  std::unique_ptr<operators::DeviceOperator> op;
  collective(c.comm, [&] { op = operators::make_device_operator<dim>(op_mesh, op_dofs, key, c.tuning); });
  r.choices = op->choices();
  const std::size_t n = op->n_local();
  // the ghosts of one cell layer (what the owned entries read; the second layer is never read)
  std::shared_ptr<const GhostLayout> ghosts;
  std::optional<DeviceGhostExchange> exchange;
  if (distributed) {
    ghosts = fe::make_dof_exchange<dim>(part, c.key.disc, c.key.degree, 1);
    exchange.emplace(*ghosts, choose_exchange_path(c.comm, c.exchange.path));
    if (c.exchange.overlap) op->split_apply(operators::interior_cells(part));
  }
  auto apply = [&](const operators::DeviceOperator& o, void* y, void* x) {
    operators::ghosted_vmult(o, exchange ? &*exchange : nullptr, y, x);
  };
  RawVector src(n, op->value_size()), dst(n, op->value_size());
  if (distributed) {  // the input by global index: the same vector on any number of ranks
    const DeviceBuffer<std::int64_t> global(dofs.global_indices());
    src.fill_random_indexed(c.seed, global.data());
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // global is freed at the end of this scope
  } else {
    src.fill_random(c.seed);
  }
  dst.poison();

  for (int i = 0; i < c.warmup; ++i) apply(*op, dst.data(), src.data());
  if (distributed) {
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    c.comm.barrier();  // every rank starts together
  }
  // each apply between its own pair of events; one synchronization at the end
  EventList events(2 * std::size_t(c.repetitions));
  for (int i = 0; i < c.repetitions; ++i) {
    TCFEM_CUDA_CHECK(cudaEventRecord(events[2 * i]));
    apply(*op, dst.data(), src.data());
    TCFEM_CUDA_CHECK(cudaEventRecord(events[2 * i + 1]));
  }
  TCFEM_CUDA_CHECK(cudaEventSynchronize(events[2 * std::size_t(c.repetitions) - 1]));
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> times(c.repetitions);
  for (int i = 0; i < c.repetitions; ++i) {
    float ms = 0.0f;
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
    times[i] = 1e-3 * double(ms);
  }
  if (distributed) {
    summarize_distributed_times(c.comm, std::move(times), r);
    auto& d = *r.distributed;
    d.process_grid.assign(part.process_grid.begin(), part.process_grid.end());
    d.overlapped = op->is_split();
    d.exchange = std::string(to_string(exchange->path())) +
                 (d.overlapped ? ", beside the interior cells" : ", before the apply");
    d.max_neighbours = int(c.comm.max(static_cast<long long>(exchange->neighbours())));
    // bytes_sent: an update of doubles; a vector of floats sends half
    d.max_bytes_sent = c.comm.max(double(exchange->bytes_sent()) * double(op->value_size()) / 8.0);
    for (const double v : c.comm.all_gather(double(n))) d.rank_local_dofs.push_back(std::size_t(v));
  } else {
    summarize_times(std::move(times), r);
  }
  {
    const std::vector<double> y = dst.to_host_double();
    r.output_norm = owned_norm(y.data(), n, ghosts.get());
  }
  r.flops_per_apply = op->flops_per_apply();
  r.dram_bytes_per_apply = op->dram_bytes_per_apply();
  r.shared_bytes_per_apply = op->shared_bytes_per_apply();
  r.operator_bytes = op->device_bytes();
  if (!needs_check(c)) return r;
  auto ref_key = check_reference_key(c);
  if (ref_key.variant == c.key.variant && ref_key.precision == c.key.precision) return r;  // would compare with itself
  ref_key.cartesian = key.cartesian;
  ref_key.general_field = key.general_field;

  // the operator under test on a poisoned output ...
  dst.poison();
  apply(*op, dst.data(), src.data());
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<double> y = dst.to_host_double();
  op.reset();  // free its device memory before the reference is built
  // ... and the fp64 reference kernel on the same input (src's ghosts hold their owners' values now)
  std::unique_ptr<operators::DeviceOperator> ref_op;
  collective(c.comm, [&] { ref_op = operators::make_device_operator<dim>(op_mesh, op_dofs, ref_key); });
  TCFEM_ASSERT(ref_op->n_local() == n && ref_op->value_size() == 8, "reference operator layout");
  RawVector ref(n, 8);
  ref.poison();
  if (src.value_size == 8) {
    apply(*ref_op, ref.data(), src.data());
  } else {
    RawVector src64(n, 8);
    widen_kernel<<<fill_grid(n), fill_block>>>(reinterpret_cast<const float*>(src.data()), src64.words.data(), n);
    TCFEM_CUDA_CHECK_LAUNCH();
    apply(*ref_op, ref.data(), src64.data());
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // src64 is freed at the end of this scope
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<double> y_ref = ref.to_host_double();
  const double tolerance = node_geometry_tolerance<dim>(c.key, op_mesh);
  if (distributed)
    record_distributed_check(y.data(), y_ref.data(), n, *ghosts, tolerance, r);
  else
    record_check(y.data(), y_ref.data(), n, tolerance, r);
  return r;
}

}  // namespace

BenchResult run_cuda_bench(const BenchCase& c) {
  return c.key.dim == 2 ? run_cuda_typed<2>(c) : run_cuda_typed<3>(c);
}

}  // namespace tcfem::bench
