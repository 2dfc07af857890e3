#include "multigrid/device/multigrid.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <string>

#include "core/device_buffer.h"
#include "core/error.h"
#include "fe/dof_exchange.h"
#include "fe/quadrature.h"
#include "multigrid/device/chebyshev_smoother.h"
#include "multigrid/device/coarse_solver.h"
#include "multigrid/device/dg_patch_smoother.h"
#include "multigrid/device/distributed_transfer.h"
#include "multigrid/device/patch_smoother_adapter.h"
#include "multigrid/device/transfer.h"
#include "multigrid/host/coarse_solver.h"
#include "multigrid/host/patch_smoother.h"
#include "operators/cpu/laplace_operator.h"

namespace tcfem::multigrid {

template <typename Number>
DeviceLevelOperator<Number>::DeviceLevelOperator(std::unique_ptr<operators::DeviceOperator> op,
                                                 DeviceGhostExchange* ghosts)
    : op_(std::move(op)), ghosts_(ghosts) {
  TCFEM_ASSERT(op_ && op_->value_size() == sizeof(Number), "level operator storage type differs from the V-cycle's");
}

operators::DeviceKernelKey device_level_key(int dim, const operators::OperatorConfig& config,
                                            const operators::DeviceKernelKey& geometry,
                                            precision::Precision precision, bool coarsest) {
  using operators::Variant;
  using precision::Precision;
  operators::DeviceKernelKey key;
  key.dim = dim;
  key.degree = config.degree;
  key.disc = config.disc;
  key.cartesian = geometry.cartesian;
  key.general_field = geometry.general_field;
  key.box_tables = geometry.box_tables;
  key.geometry_form = geometry.geometry_form;
  key.geometry_storage = geometry.geometry_storage;
  key.quadrature = config.quadrature;
  key.form = operators::Form::laplace;
  key.precision = precision;
  if (coarsest && precision != Precision::fp64) key.precision = Precision::fp32;
  if (key.precision == Precision::fp64 || key.precision == Precision::fp32) {
    key.variant = Variant::cuda_core;
    // the matrix-free form where its kernels exist (3D BP5), stored data elsewhere
    if (!operators::device_kernel_supported(key)) key.geometry_form = operators::GeometryForm::pa;
    // fp32 stored geometry where the cuda-core kernels have it (cg), the level's precision elsewhere
    if (!operators::device_kernel_supported(key)) key.geometry_storage = operators::GeometryStorage::fp64;
    if (!operators::device_kernel_supported(key)) key.variant = Variant::generic;
    // stored geometry in fp64: the tensor cores where measured faster, on devices that have them
    if (key.variant == Variant::cuda_core) key = operators::with_fastest_stored_geometry_variant(key);
    return key;
  }
  key.variant = Variant::tensor_core;
  key.geometry_form = operators::GeometryForm::pa;
  key.geometry_storage = operators::GeometryStorage::fp64;
  if (!operators::device_kernel_supported(key))
    throw InputError(std::string("--mg-precision ") + std::string(precision::to_string(precision)) +
                     ": the device V-cycle in this precision uses the tensor-core operators, which exist for --disc cg and dg "
                     "on Cartesian meshes (--geometry cartesian, --operator-path auto); fp64 and fp32 V-cycles run "
                     "on every configuration");
  return key;
}

namespace {
/// The host diagonal of a level, computed as the CPU smoothers do.
template <int dim, typename Number>
std::vector<Number> host_diagonal(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                  const operators::OperatorConfig& config) {
  operators::MatrixFreeOperator<dim, Number> cpu(mesh, dofs, config, operators::Form::laplace);
  Vector<Number> d;
  cpu.compute_diagonal(d);
  return std::vector<Number>(d.data(), d.data() + d.size());
}

/// The smoother of one level on the operator `op`; adds its work vectors to `device_bytes`.
/// `lambda_max` > 0: Chebyshev's upper bound, known from the same level in another precision.
template <int dim, typename Number>
std::unique_ptr<Smoother<DeviceVector<Number>>> make_device_smoother(const SmootherSettings& s,
                                                                     const mesh::BoxMesh<dim>& mesh,
                                                                     const fe::DofLayout<dim>& dofs,
                                                                     const operators::OperatorConfig& config,
                                                                     const DeviceLevelOperator<Number>& op,
                                                                     LevelInfo& info, std::size_t& device_bytes,
                                                                     double lambda_max = 0.0,
                                                                     const DeviceLevelBox<dim>* box = nullptr,
                                                                     const fe::DofLayout<dim>* spread_dofs = nullptr,
                                                                     const std::array<int, dim>& box_origin = {}) {
  char text[200];
  if (box && s.kind != SmootherKind::chebyshev && dofs.disc() == fe::Disc::dg)
    throw InputError(std::string("--smoother ") + to_string(s.kind) +
                     " with --disc dg on --backend cuda: the dg vertex patches run on one rank; a distributed GPU "
                     "run with dg smooths with --smoother chebyshev");
  switch (s.kind) {
    case SmootherKind::chebyshev: {
      std::vector<char> constrained;
      if (dofs.disc() == fe::Disc::cg) constrained = dofs.boundary_mask();
      std::unique_ptr<DeviceChebyshevSmoother<Number>> cheb;
      DeviceVector<Number> diagonal(dofs.n_local());
      // spread over ranks: the estimate's dot products over the ranks, its start vector by the
      // entries' indices on one process (every partition estimates the same value)
      const device::DeviceReduction* reduction = box ? &box->reduction : nullptr;
      std::vector<std::int64_t> global;
      if (box && lambda_max <= 0.0) global = spread_dofs->global_indices();
      if (op.device_operator().diagonal(diagonal.data()))
        cheb = std::make_unique<DeviceChebyshevSmoother<Number>>(op, std::move(diagonal), constrained,
                                                                 s.chebyshev_degree, s.chebyshev_range,
                                                                 s.eigenvalue_cg_steps, lambda_max, reduction, global);
      else
        cheb = std::make_unique<DeviceChebyshevSmoother<Number>>(op, host_diagonal<dim, Number>(mesh, dofs, config),
                                                                 constrained, s.chebyshev_degree, s.chebyshev_range,
                                                                 s.eigenvalue_cg_steps, lambda_max, reduction, global);
      info.lambda_max = cheb->lambda_max();
      std::snprintf(text, sizeof text, "Chebyshev-Jacobi (degree %d, range [%.4g, %.4g])", cheb->degree(),
                    cheb->lambda_min(), cheb->lambda_max());
      info.smoother = text;
      device_bytes += 4 * dofs.n_local() * sizeof(Number);
      return cheb;
    }
    case SmootherKind::patch:
    case SmootherKind::patch_additive: {
      if (dofs.disc() == fe::Disc::dg && config.coefficient)
        throw InputError("--smoother patch with --disc dg: the dg patch smoother has constant-coefficient local "
                         "solvers; use --smoother chebyshev for a variable coefficient");
      if (dofs.disc() == fe::Disc::dg && !dofs.all_faces_dirichlet())
        throw InputError("--smoother patch with --disc dg: the dg vertex patches cover Dirichlet problems only; "
                         "with Neumann parts use --smoother chebyshev");
      const bool fast = operators::uses_cartesian_path(mesh, dofs, config);
      const auto quadrature =
          fast ? fe::gauss(config.degree + 1) : fe::make_quadrature(config.quadrature, config.degree);
      const DeviceLevelOperator<Number>* level_op = &op;
      if (dofs.disc() == fe::Disc::dg) {
        auto dg = std::make_unique<DeviceDgPatchSmoother<dim, Number>>(
            mesh, dofs, quadrature, s,
            [level_op](Number* dst, const Number* src) { level_op->device_operator().vmult(dst, src); });
        info.smoother = dg->description();
        info.n_patches = dg->n_patches();
        device_bytes += dg->device_bytes();
        return dg;
      }
      // the separable surrogates on mapped meshes and with a variable coefficient (the cell metric
      // of the level operator's stored data), as the CPU smoother: their weights from the metric
      // on the device, or (patches on Neumann faces, families without it there) on the host
      std::vector<double> metric;
      DeviceBuffer<double> device_metric;
      if (uses_patch_surrogates(mesh.geometry(), bool(config.coefficient))) {
        if (dofs.all_faces_dirichlet()) {
          device_metric = DeviceBuffer<double>(mesh.n_owned_cells() * dim);
          if (!op.device_operator().cell_metric_to(device_metric.data())) device_metric = DeviceBuffer<double>();
        }
        if (device_metric.size() == 0) metric = op.device_operator().cell_metric();
        if (metric.empty() && device_metric.size() == 0)
          throw InputError("--smoother patch on --backend cuda: the level operator (" +
                           op.device_operator().key().to_string() +
                           ") stores no quadrature data for the separable patch surrogates; use --smoother chebyshev");
      }
      // spread over ranks: the residuals of the distributed apply, the ghosts of one cell layer
      typename DevicePatchSmoother<dim, Number>::Spread spread;
      if (box) {
        spread.ghosts = box->near.get();
        spread.origin = box_origin;
      }
      DeviceGhostExchange* ghosts = spread.ghosts;
      auto patch = std::make_unique<DevicePatchSmoother<dim, Number>>(
          mesh, dofs, quadrature, s,
          [level_op, ghosts](Number* dst, const Number* src) {
            operators::ghosted_vmult(level_op->device_operator(), ghosts, dst, const_cast<Number*>(src));
          },
          metric, spread, device_metric.size() ? device_metric.data() : nullptr);
      info.smoother = patch->description();
      return std::make_unique<DevicePatchSmootherAdapter<dim, Number>>(std::move(patch));
    }
  }
  throw Error("unknown smoother kind");
}
}  // namespace

template <int dim, typename Number>
const mesh::BoxMesh<dim>& DeviceMultigrid<dim, Number>::operator_mesh(int level) const {
  if (!boxes_.empty() && level >= gathered_) return *boxes_.at(std::size_t(level - gathered_)).mesh;
  return hierarchy_->mesh(level);
}

template <int dim, typename Number>
const fe::DofLayout<dim>& DeviceMultigrid<dim, Number>::operator_dofs(int level) const {
  if (!boxes_.empty() && level >= gathered_) return *boxes_.at(std::size_t(level - gathered_)).dofs;
  return hierarchy_->dofs(level);
}

template <int dim, typename Number>
template <typename Number2>
std::unique_ptr<DeviceLevelOperator<Number2>> DeviceMultigrid<dim, Number>::make_operator(
    int level, const operators::DeviceKernelKey& key, const operators::OperatorConfig& config) {
  DeviceGhostExchange* ghosts = !boxes_.empty() && level >= gathered_ ? boxes_[level - gathered_].near.get() : nullptr;
  auto op = operators::make_device_operator<dim>(operator_mesh(level), operator_dofs(level), key, config.device_tuning,
                                                 config.coefficient, config.coefficient_source);
  if (ghosts && overlap_) op->split_apply(operators::interior_cells(hierarchy_->mesh(level).partition()));
  return std::make_unique<DeviceLevelOperator<Number2>>(std::move(op), ghosts);
}

template <int dim, typename Number>
template <typename Number2>
std::unique_ptr<Transfer<DeviceVector<Number2>>> DeviceMultigrid<dim, Number>::make_transfer(int level) {
  const auto& h = *hierarchy_;
  if (boxes_.empty() || level < gathered_) {
    if (!h.stored(level)) return nullptr;
    auto t = std::make_unique<DeviceTransfer<dim, Number2>>(h.mesh(level - 1), h.dofs(level - 1), h.mesh(level),
                                                            h.dofs(level));
    device_bytes_ += t->device_bytes();
    return t;
  }
  if (level == gathered_) {
    const bool root = h.stored(level - 1);
    auto t = std::make_unique<DeviceGatherTransfer<dim, Number2>>(
        h.dofs(level), root ? &h.mesh(level - 1) : nullptr, root ? &h.dofs(level - 1) : nullptr,
        root ? &h.gathered_mesh() : nullptr, root ? &h.gathered_dofs() : nullptr,
        path_ == ExchangePath::nccl ? NcclComm::get(comm_) : nullptr);
    device_bytes_ += t->device_bytes();
    return t;
  }
  const auto& coarse = boxes_[level - 1 - gathered_];
  const auto& fine = boxes_[level - gathered_];
  auto t = std::make_unique<DeviceBoxTransfer<dim, Number2>>(h.mesh(level - 1), h.dofs(level - 1), *fine.mesh,
                                                             *fine.dofs, coarse.near.get(), fine.all.get());
  device_bytes_ += t->device_bytes();
  return t;
}

namespace {
template <class V, class T>
const T* or_absent(const std::unique_ptr<T>& p) {
  if (p) return p.get();
  return &AbsentLevel<V>::instance();
}
}  // namespace

template <int dim, typename Number>
DeviceMultigrid<dim, Number>::DeviceMultigrid(const LevelHierarchy<dim>& hierarchy,
                                              const operators::OperatorConfig& config,
                                              const MultigridSettings& settings, precision::Precision precision,
                                              const std::function<void(const std::string&)>& progress,
                                              const ExchangeOptions& exchange)
    : hierarchy_(&hierarchy), overlap_(exchange.overlap) {
  using V = DeviceVector<Number>;
  const auto t0 = std::chrono::steady_clock::now();
  if (settings.pre_smooth < 0 || settings.post_smooth < 0) throw InputError("smoothing steps must be >= 0");
  if (vcycle_in_double(precision) != (sizeof(Number) == 8))
    throw Error("device multigrid: storage type does not match the precision");
  const int n_levels = hierarchy.n_levels();
  const int finest = n_levels - 1;
  operators_.resize(n_levels);
  smoothers_.resize(n_levels);
  transfers_.resize(n_levels);
  info_.resize(n_levels);
  kernels_.resize(n_levels);
  std::vector<typename VCycle<V>::Level> levels(n_levels);
  char text[200];
  // one line per setup stage, with the seconds since the previous one
  auto tl = std::chrono::steady_clock::now();
  auto stage = [&](const std::string& what) {
    if (!progress) return;
    const auto now = std::chrono::steady_clock::now();
    std::snprintf(text, sizeof text, " (%.2f s)\n", std::chrono::duration<double>(now - tl).count());
    tl = now;
    progress("  mg setup        " + what + text);
  };
  // distributed: the levels from the gathered one up on the ranks' ghosted boxes
  comm_ = hierarchy.mesh(finest).partition().comm;
  if (hierarchy.distributed()) {
    gathered_ = hierarchy.gathered_level();
    const ExchangePath path = path_ = choose_exchange_path(comm_, exchange.path);
    boxes_.resize(std::size_t(n_levels - gathered_));
    for (int l = gathered_; l < n_levels; ++l) {
      const auto& part = hierarchy.mesh(l).partition();
      if (part.ghost_width < 2)
        throw Error("device multigrid: a distributed level needs a ghost layer of two cells");
      auto& box = boxes_[l - gathered_];
      const fe::Disc disc = hierarchy.disc();
      const int k = hierarchy.degree();
      box.mesh = std::make_unique<mesh::BoxMesh<dim>>(mesh::ghosted_box_mesh(hierarchy.mesh(l)));
      box.dofs = std::make_unique<fe::DofLayout<dim>>(
          *box.mesh, disc, k, fe::ghosted_box_dirichlet(part, hierarchy.dofs(l).dirichlet_faces()));
      TCFEM_ASSERT(box.dofs->n_local() == hierarchy.dofs(l).n_local(), "the ghosted box's lattice differs");
      box.near = std::make_unique<DeviceGhostExchange>(*fe::make_dof_exchange<dim>(part, disc, k, 1), path);
      if (disc == fe::Disc::cg && l > gathered_)
        box.all = std::make_unique<DeviceGhostExchange>(*fe::make_dof_exchange<dim>(part, disc, k, -1), path);
      box.reduction = {box.near->owned_mask(), &comm_};
    }
    stage(std::string("ghosted boxes and exchanges (") + to_string(path) + ")");
  }
  auto box_of = [&](int l) -> const DeviceLevelBox<dim>* {
    return !boxes_.empty() && l >= gathered_ ? &boxes_[l - gathered_] : nullptr;
  };
  // the global index of the first cell of a spread level's ghosted box (the patches' colors)
  auto box_origin = [&](int l) {
    std::array<int, dim> o{};
    for (int d = 0; d < dim; ++d) o[d] = hierarchy.mesh(l).partition().ghosted.begin[d];
    return o;
  };
  operators::DeviceKernelKey geometry;
  // the meshes the kernels run on (a spread level: the ghosted box, whose geometry is a map of its
  // own where the mesh is the built-in deformation)
  operators::set_geometry(geometry, operator_mesh(finest), operator_dofs(finest), config);
  // first what may fail on some ranks only (det J and the coefficient at a rank's points; rank
  // 0's levels and coarse solver): every rank learns of an error before the collective steps
  CoarseSolverKind kind = settings.coarse;
  if (hierarchy.stored(0) && kind == CoarseSolverKind::automatic)
    kind = hierarchy.dofs(0).n_local() <= max_device_dense_coarse_dofs ? CoarseSolverKind::cholesky : CoarseSolverKind::cg;
  collective(comm_, [&] {
    // the coarsest matrix of a dense coarse solver, assembled on the host threads while the
    // levels' operators are set up on the device (waited for below; an error surfaces there)
    std::future<operators::SparseMatrix> coarse_assembly;
    if (hierarchy.stored(0) && kind == CoarseSolverKind::cholesky)
      coarse_assembly = std::async(std::launch::async, [&] {
        return multigrid::coarse_matrix<dim>(hierarchy.mesh(0), hierarchy.dofs(0), config);
      });
    for (int l = 0; l < n_levels; ++l) {
      if (!hierarchy.stored(l)) continue;
      const auto tl0 = std::chrono::steady_clock::now();
      const auto key = device_level_key(dim, config, geometry, precision, l == 0);
      operators_[l] = make_operator<Number>(l, key, config);
      kernels_[l] = key.to_string() + operators::describe(operators_[l]->device_operator().choices());
      // the cycle's x, b, r; only r on the finest level (x and b are the caller's)
      device_bytes_ += operators_[l]->device_operator().device_bytes() +
                       (l == finest ? 1 : 3) * operator_dofs(l).n_local() * sizeof(Number);
      if (progress) {
        // the kernel text has no length limit: only the numbers go through the fixed buffer
        std::snprintf(text, sizeof text, "  mg setup        level %d of %d: %zu DoFs%s, ", l, finest,
                      hierarchy.dofs(l).n_dofs(), box_of(l) ? " (spread)" : "");
        std::string line = text + kernels_[l];
        std::snprintf(text, sizeof text, " (%.2f s)\n",
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - tl0).count());
        progress(line + text);
      }
    }
    tl = std::chrono::steady_clock::now();
    // the smoothers of rank 0's levels below the gathered one
    for (int l = 1; l < (boxes_.empty() ? 0 : gathered_); ++l)
      if (hierarchy.stored(l))
        smoothers_[l] = make_device_smoother<dim, Number>(settings.smoother, hierarchy.mesh(l), hierarchy.dofs(l),
                                                           config, *operators_[l], info_[l], device_bytes_);
    if (hierarchy.stored(0) && kind == CoarseSolverKind::cholesky) {
      coarse_ = DeviceCholeskyCoarseSolver<Number>::factor_on_device(coarse_assembly.get());
      coarse_kind_ = kind;
    } else if (hierarchy.stored(0)) {
      const std::vector<Number> coarse_diagonal = host_diagonal<dim, Number>(hierarchy.mesh(0), hierarchy.dofs(0), config);
      coarse_ = make_device_coarse_solver<dim, Number>(kind, hierarchy.mesh(0), hierarchy.dofs(0), config,
                                                       *operators_[0], coarse_diagonal, settings.coarse_cg_tolerance,
                                                       coarse_kind_);
    }
  });
  stage("coarse solver");
  for (int l = 0; l < n_levels; ++l) {
    auto& info = info_[l];
    info.level = l;
    if (l > 0) transfers_[l] = make_transfer<Number>(l);
    if (!hierarchy.stored(l)) {
      info.smoother = "on rank 0";
      kernels_[l] = "on rank 0";
      levels[l].op = &AbsentLevel<V>::instance();
      levels[l].smoother = &AbsentLevel<V>::instance();
      levels[l].transfer = or_absent<V>(transfers_[l]);
      continue;
    }
    for (int d = 0; d < dim; ++d) info.cells[d] = hierarchy.mesh(l).n_cells()[d];
    info.n_dofs = hierarchy.dofs(l).n_dofs();
    levels[l].op = operators_[l].get();
    if (l > 0) levels[l].transfer = transfers_[l].get();
  }
  stage("transfers");
  for (int l = 1; l < n_levels; ++l) {
    if (!hierarchy.stored(l)) continue;
    if (!smoothers_[l])  // a level spread over the ranks (collective: their errors agree)
      smoothers_[l] = make_device_smoother<dim, Number>(settings.smoother, operator_mesh(l), operator_dofs(l), config,
                                                         *operators_[l], info_[l], device_bytes_, 0.0, box_of(l),
                                                         &hierarchy.dofs(l), box_origin(l));
    levels[l].smoother = smoothers_[l].get();
  }
  if (hierarchy.stored(0)) info_[0].smoother = std::string("coarse solver: ") + to_string(coarse_kind_);
  stage("smoothers");
  int finest_post = settings.post_smooth;
  if (!vcycle_in_double(precision) && settings.finest_post_fp64 && n_levels > 1) {
    // the finest level's post-smoothing in fp64 (MultigridSettings::finest_post_fp64), on an fp64
    // operator of that level, which also serves the outer solver
    const auto key = device_level_key(dim, config, geometry, precision::Precision::fp64, false);
    collective(comm_, [&] { fine_operator64_ = make_operator<double>(finest, key, config); });
    device_bytes_ += fine_operator64_->device_operator().device_bytes();
    stage("fp64 operator of the finest level");
    LevelInfo info64 = info_[finest];
    // Chebyshev: the range of the fp32 smoother of the same level (the same operator rounded
    // differently), which saves the eigenvalue estimate's operator applies on the largest level
    fine_smoother64_ = make_device_smoother<dim, double>(settings.smoother, operator_mesh(finest),
                                                         operator_dofs(finest), config, *fine_operator64_, info64,
                                                         device_bytes_, info_[finest].lambda_max, box_of(finest),
                                                         &hierarchy.dofs(finest), box_origin(finest));
    info_[finest].smoother += "; post-smoothing in fp64";
    finest_post = 0;
    stage("fp64 smoother of the finest level");
  }
  cycle_ = std::make_unique<VCycle<V>>(std::move(levels), *or_absent<V>(coarse_), settings.pre_smooth,
                                       settings.post_smooth, settings.post_smooth_order, finest_post);
  if (!vcycle_in_double(precision) && settings.fmg_fp64_residuals) {
    using V64 = DeviceVector<double>;
    const auto key64 = device_level_key(dim, config, geometry, precision::Precision::fp64, false);
    operators64_.resize(n_levels);
    transfers64_.resize(n_levels);
    std::vector<typename MixedFullMultigrid<V64, V>::Level> levels64(n_levels);
    collective(comm_, [&] {
      for (int l = 1; l < n_levels; ++l)
        if (hierarchy.stored(l) && (l < finest || !fine_operator64_)) {
          operators64_[l] = make_operator<double>(l, key64, config);
          device_bytes_ += operators64_[l]->device_operator().device_bytes();
        }
    });
    for (int l = 1; l < n_levels; ++l) {
      transfers64_[l] = make_transfer<double>(l);
      levels64[l].transfer = or_absent<V64>(transfers64_[l]);
      if (!hierarchy.stored(l)) {
        levels64[l].op = &AbsentLevel<V64>::instance();
        continue;
      }
      levels64[l].op = operators64_[l] ? operators64_[l].get() : fine_operator64_.get();
    }
    fmg64_ = std::make_unique<MixedFullMultigrid<V64, V>>(std::move(levels64), *cycle_, fine_smoother64_.get(),
                                                          settings.post_smooth, settings.post_smooth_order);
    device_bytes_ += fmg64_->vector_bytes(sizeof(double), sizeof(Number));
    stage("fp64 operators and transfers of the full multigrid");
  }
  post_smooth_ = settings.post_smooth;
  post_order_ = settings.post_smooth_order;
  device::synchronize();
  setup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <int dim, typename Number>
DeviceMultigrid<dim, Number>::~DeviceMultigrid() = default;

template <int dim, typename Number>
double DeviceMultigrid<dim, Number>::exchange_seconds() const {
  double t = 0.0;
  for (const auto& b : boxes_)
    for (const auto* e : {b.near.get(), b.all.get()})
      if (e) t += e->seconds();
  return t;
}

template <int dim, typename Number>
long DeviceMultigrid<dim, Number>::exchange_calls() const {
  long n = 0;
  for (const auto& b : boxes_)
    for (const auto* e : {b.near.get(), b.all.get()})
      if (e) n += e->calls();
  return n;
}

template <int dim, typename Number>
void DeviceMultigrid<dim, Number>::finest_post_smooth_fp64(DeviceVector<double>& z,
                                                           const DeviceVector<double>& r) const {
  if (fine_smoother64_) smooth_timed(*fine_smoother64_, z, r, post_smooth_, post_order_, times().levels.back());
}

template <int dim, typename Number>
void DeviceMultigrid<dim, Number>::full_multigrid_fp64(DeviceVector<double>& x, const DeviceVector<double>& b) const {
  if constexpr (sizeof(Number) == 8) {
    cycle_->full_multigrid(x, b);
  } else {
    TCFEM_ASSERT(fmg64_, "full_multigrid_fp64 below fp64 needs MultigridSettings::fmg_fp64_residuals");
    fmg64_->run(x, b);
  }
}

template class DeviceLevelOperator<double>;
template class DeviceLevelOperator<float>;
template class DeviceMultigrid<2, double>;
template class DeviceMultigrid<3, double>;
template class DeviceMultigrid<2, float>;
template class DeviceMultigrid<3, float>;

}  // namespace tcfem::multigrid
