#include <chrono>
#include <cmath>
#include <cub/block/block_reduce.cuh>

#include <optional>

#include "core/device.h"
#include "core/device_buffer.h"
#include "core/device_exchange.h"
#include "fe/dof_exchange.h"
#include "operators/device/device_operator.h"
#include "operators/device/ghosted_apply.h"
#include "solvers/cuda_solve.h"

namespace tcfem::solvers {
namespace {

constexpr int reduce_block = 256;
constexpr int reduce_grid = 1024;

// Device scalars of the CG recurrence.
enum Scalar { rz_old = 0, pAp = 1, rz_new = 2, rr = 3, n_scalars = 4 };

/// partial[blockIdx] = sum over the block's entries of a*b (and c*d into partial2 if given); with
/// a mask only the entries where it is 1 (a rank's owned entries).
__global__ void partial_dots(const double* a, const double* b, const double* c, const double* d, std::int64_t n,
                             double* partial, double* partial2, const std::uint8_t* mask) {
  using Reduce = cub::BlockReduce<double, reduce_block>;
  __shared__ typename Reduce::TempStorage t1, t2;
  double s1 = 0.0, s2 = 0.0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (mask && !mask[i]) continue;
    s1 += a[i] * b[i];
    if (c) s2 += c[i] * d[i];
  }
  s1 = Reduce(t1).Sum(s1);
  if (c) s2 = Reduce(t2).Sum(s2);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s1;
    if (c) partial2[blockIdx.x] = s2;
  }
}

/// scalars[slot] = sum of partial (deterministic: fixed grid and order).
__global__ void finish_dot(const double* partial, int n, double* scalars, int slot) {
  using Reduce = cub::BlockReduce<double, reduce_block>;
  __shared__ typename Reduce::TempStorage t;
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
  s = Reduce(t).Sum(s);
  if (threadIdx.x == 0) scalars[slot] = s;
}

/// x += alpha p, r -= alpha Ap with alpha = rz_old / pAp; then z = D^-1 r.
__global__ void update_x_r_z(const double* scalars, const double* p, const double* Ap, const double* inv_diag,
                             double* x, double* r, double* z, std::int64_t n) {
  const double alpha = scalars[rz_old] / scalars[pAp];
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    x[i] += alpha * p[i];
    const double ri = r[i] - alpha * Ap[i];
    r[i] = ri;
    z[i] = inv_diag[i] * ri;
  }
}

/// p = z + beta p with beta = rz_new / rz_old.
__global__ void update_p(const double* scalars, const double* z, double* p, std::int64_t n) {
  const double beta = scalars[rz_new] / scalars[rz_old];
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = z[i] + beta * p[i];
}

/// r = b - Ax, p = D^-1 r.
__global__ void init_residual(const double* b, const double* Ax, const double* inv_diag, double* r, double* p,
                              std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    r[i] = b[i] - Ax[i];
    p[i] = inv_diag[i] * r[i];
  }
}

__global__ void shift_rz(double* scalars) { scalars[rz_old] = scalars[rz_new]; }

}  // namespace

template <int dim>
CudaSolveInfo solve_cg_cuda(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                            const operators::OperatorConfig& config, const Vector<double>& b,
                            const Vector<double>& diagonal, Vector<double>& x, const SolverControl& control,
                            VariantChoice variant, const ExchangeOptions& exchange_options) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  CudaSolveInfo info;
  const DeviceInfo dev = require_device("--backend cuda");
  info.device_name = dev.name;
  const std::size_t n = dofs.n_local();
  // distributed: the operator runs on the ghosted box as a mesh of its own, whose lattice is the
  // local one; its inner faces are constrained, two cells away from every owned node
  const auto& part = mesh.partition();
  const bool distributed = part.is_distributed();
  std::optional<mesh::BoxMesh<dim>> box_mesh;
  std::optional<fe::DofLayout<dim>> box_dofs;
  if (distributed) {
    if (part.ghost_width < 2) throw Error("solve_cg_cuda: a distributed mesh needs a ghost layer of two cells");
    box_mesh.emplace(mesh::ghosted_box_mesh(mesh));
    box_dofs.emplace(*box_mesh, dofs.disc(), dofs.degree(), fe::ghosted_box_dirichlet(part, dofs.dirichlet_faces()));
    TCFEM_ASSERT(box_dofs->n_local() == n, "the ghosted box's lattice differs from the local one");
  }
  const auto& op_mesh = distributed ? *box_mesh : mesh;
  const auto& op_dofs = distributed ? *box_dofs : dofs;
  const Communicator comm = part.comm;
  const double need = 8.0 * n * 8.0;
  if (need > 0.9 * double(dev.free_memory))
    throw InputError("--cells/--refine: the device needs about " + std::to_string(need / 1e9) + " GB for vectors, " +
                     std::to_string(dev.free_memory / 1e9) + " GB are free");
  operators::DeviceKernelKey key;
  key.dim = dim;
  key.degree = config.degree;
  key.disc = config.disc;
  operators::set_geometry(key, op_mesh, op_dofs, config);
  key.quadrature = config.quadrature;
  key.form = operators::Form::laplace;
  key.precision = precision::Precision::fp64;
  using operators::Variant;
  switch (variant) {
    case VariantChoice::generic: key.variant = Variant::generic; break;
    case VariantChoice::cuda_core: key.variant = Variant::cuda_core; break;
    case VariantChoice::tensor_core: key.variant = Variant::tensor_core; break;
    case VariantChoice::automatic:
      key.variant = Variant::generic;
      // measured on the H200 (docs/notebook/performance_history.md): the cuda-core family is the fastest fp64 kernel at
      // every degree of Cartesian meshes
      for (auto v : {Variant::cuda_core, Variant::tensor_core}) {
        auto k2 = key;
        k2.variant = v;
        if (operators::device_kernel_supported(k2)) {
          key.variant = v;
          break;
        }
      }
      // stored geometry in fp64: the tensor cores where measured faster
      if (key.variant == Variant::cuda_core) key = operators::with_fastest_stored_geometry_variant(key);
      break;
  }
  const auto op = operators::make_device_operator<dim>(op_mesh, op_dofs, key, config.device_tuning, config.coefficient,
                                                       config.coefficient_source);
  std::optional<DeviceGhostExchange> exchange;
  std::shared_ptr<const GhostLayout> ghosts_one_layer;
  if (distributed) {
    const ExchangePath path = choose_exchange_path(comm, exchange_options.path);
    // the owned nodes read the ghosts of one cell layer; the second layer only keeps the box's
    // constrained faces away (its values never reach an owned entry)
    ghosts_one_layer = fe::make_dof_exchange<dim>(part, dofs.disc(), dofs.degree(), 1);
    exchange.emplace(*ghosts_one_layer, path);
    if (exchange_options.overlap) op->split_apply(operators::interior_cells(part));
    info.exchange_overlapped = op->is_split();
    info.exchange_path = std::string(to_string(exchange->path())) +
                         (op->is_split() ? ", beside the interior cells" : ", before the apply");
    info.exchange_bytes = exchange->bytes_sent();
  }
  info.kernel = key.to_string() + operators::describe(op->choices());
  const std::uint8_t* mask = exchange ? exchange->owned_mask() : nullptr;
  // dst = A src: src's ghosts from their owners first
  auto apply = [&](double* dst, double* src) { operators::ghosted_vmult(*op, exchange ? &*exchange : nullptr, dst, src); };
  std::vector<double> inv(n);
  for (std::size_t i = 0; i < n; ++i) inv[i] = 1.0 / diagonal[i];
  DeviceBuffer<double> d_b(n), d_x(n), d_r(n), d_z(n), d_p(n), d_Ap(n), d_inv(inv);
  DeviceBuffer<double> partial(reduce_grid), partial2(reduce_grid), scalars(n_scalars);
  d_b.copy_from_host(b.data(), n);
  d_x.copy_from_host(x.data(), n);
  double* rr_host = nullptr;
  TCFEM_CUDA_CHECK(cudaMallocHost(&rr_host, sizeof(double)));
  struct PinnedFree {
    double* p;
    ~PinnedFree() { cudaFreeHost(p); }
  } pinned_guard{rr_host};
  const int grid = static_cast<int>(std::min<std::size_t>((n + reduce_block - 1) / reduce_block, reduce_grid));
  const std::int64_t nn = static_cast<std::int64_t>(n);
  auto dot = [&](const double* a, const double* bb, int slot) {
    partial_dots<<<grid, reduce_block>>>(a, bb, nullptr, nullptr, nn, partial.data(), nullptr, mask);
    TCFEM_CUDA_CHECK_LAUNCH();
    finish_dot<<<1, reduce_block>>>(partial.data(), grid, scalars.data(), slot);
    TCFEM_CUDA_CHECK_LAUNCH();
  };
  // distributed: the scalars of this rank's entries summed over the ranks (a host round trip)
  auto reduce = [&](std::initializer_list<int> slots) {
    if (!distributed) return;
    double h[n_scalars];
    TCFEM_CUDA_CHECK(cudaMemcpy(h, scalars.data(), sizeof h, cudaMemcpyDeviceToHost));
    double v[n_scalars];
    int i = 0;
    for (const int s : slots) v[i++] = h[s];
    comm.sum(v, std::size_t(i));
    i = 0;
    for (const int s : slots) h[s] = v[i++];
    TCFEM_CUDA_CHECK(cudaMemcpy(scalars.data(), h, sizeof h, cudaMemcpyHostToDevice));
  };
  auto read_rr = [&]() {
    TCFEM_CUDA_CHECK(cudaMemcpyAsync(rr_host, scalars.data() + rr, sizeof(double), cudaMemcpyDeviceToHost));
    TCFEM_CUDA_CHECK(cudaStreamSynchronize(0));
    return std::sqrt(std::max(0.0, *rr_host));
  };
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  info.setup_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  info.device_bytes = op->device_bytes() + 7 * n * sizeof(double);

  // the applies of the iteration timed by events around them (read after each iteration's sync)
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  TCFEM_CUDA_CHECK(cudaEventCreate(&ev0));
  TCFEM_CUDA_CHECK(cudaEventCreate(&ev1));
  struct EventFree {
    cudaEvent_t a, b;
    ~EventFree() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } event_guard{ev0, ev1};
  if (distributed) comm.barrier();  // every rank starts the clock together
  const auto ts = clock::now();
  auto last_report = ts;
  SolverResult& res = info.result;
  // r = b - A x, z = D^-1 r, p = z
  apply(d_Ap.data(), d_x.data());
  dot(d_b.data(), d_b.data(), rr);
  reduce({rr});
  const double bnorm = read_rr();
  const double scale = bnorm > 0 ? bnorm : 1.0;
  init_residual<<<grid, reduce_block>>>(d_b.data(), d_Ap.data(), d_inv.data(), d_r.data(), d_p.data(), nn);
  TCFEM_CUDA_CHECK_LAUNCH();
  // now r = b - A x and p = D^-1 r
  partial_dots<<<grid, reduce_block>>>(d_r.data(), d_p.data(), d_r.data(), d_r.data(), nn, partial.data(),
                                       partial2.data(), mask);
  TCFEM_CUDA_CHECK_LAUNCH();
  finish_dot<<<1, reduce_block>>>(partial.data(), grid, scalars.data(), rz_old);
  TCFEM_CUDA_CHECK_LAUNCH();
  finish_dot<<<1, reduce_block>>>(partial2.data(), grid, scalars.data(), rr);
  TCFEM_CUDA_CHECK_LAUNCH();
  reduce({rz_old, rr});
  double rnorm = read_rr();
  res.initial_residual = rnorm;
  res.history.push_back(rnorm / scale);
  if (rnorm <= control.tolerance * scale) res.converged = true;
  for (int it = 1; it <= control.max_iterations && !res.converged; ++it) {
    TCFEM_CUDA_CHECK(cudaEventRecord(ev0));
    apply(d_Ap.data(), d_p.data());
    TCFEM_CUDA_CHECK(cudaEventRecord(ev1));
    dot(d_p.data(), d_Ap.data(), pAp);
    reduce({pAp});
    update_x_r_z<<<grid, reduce_block>>>(scalars.data(), d_p.data(), d_Ap.data(), d_inv.data(), d_x.data(),
                                         d_r.data(), d_z.data(), nn);
    TCFEM_CUDA_CHECK_LAUNCH();
    partial_dots<<<grid, reduce_block>>>(d_r.data(), d_z.data(), d_r.data(), d_r.data(), nn, partial.data(),
                                         partial2.data(), mask);
    TCFEM_CUDA_CHECK_LAUNCH();
    finish_dot<<<1, reduce_block>>>(partial.data(), grid, scalars.data(), rz_new);
    TCFEM_CUDA_CHECK_LAUNCH();
    finish_dot<<<1, reduce_block>>>(partial2.data(), grid, scalars.data(), rr);
    TCFEM_CUDA_CHECK_LAUNCH();
    reduce({rz_new, rr});
    rnorm = read_rr();
    float ms = 0.0f;
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
    info.apply_seconds += 1e-3 * ms;
    ++info.apply_calls;
    res.iterations = it;
    res.history.push_back(rnorm / scale);
    if (!std::isfinite(rnorm)) break;
    if (rnorm <= control.tolerance * scale) {
      res.converged = true;
      break;
    }
    update_p<<<grid, reduce_block>>>(scalars.data(), d_z.data(), d_p.data(), nn);
    TCFEM_CUDA_CHECK_LAUNCH();
    shift_rz<<<1, 1>>>(scalars.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    if (control.progress) {
      const auto now = clock::now();
      if (std::chrono::duration<double>(now - last_report).count() >= control.progress_interval) {
        control.progress(it, rnorm / scale, std::chrono::duration<double>(now - ts).count());
        last_report = now;
      }
    }
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  res.final_relative_residual = rnorm / scale;
  info.solve_seconds = std::chrono::duration<double>(clock::now() - ts).count();
  if (exchange) {
    info.exchange_seconds = exchange->seconds();
    info.exchange_calls = exchange->calls();
  }
  d_x.copy_to_host(x.data(), n);
  return info;
}

template CudaSolveInfo solve_cg_cuda<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                        const operators::OperatorConfig&, const Vector<double>&,
                                        const Vector<double>&, Vector<double>&, const SolverControl&,
                                        VariantChoice, const ExchangeOptions&);
template CudaSolveInfo solve_cg_cuda<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                        const operators::OperatorConfig&, const Vector<double>&,
                                        const Vector<double>&, Vector<double>&, const SolverControl&,
                                        VariantChoice, const ExchangeOptions&);

}  // namespace tcfem::solvers
