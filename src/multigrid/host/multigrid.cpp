#include "multigrid/host/multigrid.h"

#include <chrono>
#include <cstdio>
#include <type_traits>

#include "core/communicator.h"
#include "core/error.h"
#include "fe/quadrature.h"
#include "multigrid/host/chebyshev_smoother.h"
#include "multigrid/host/coarse_solver.h"
#include "multigrid/host/dg_patch_smoother.h"
#include "multigrid/host/patch_smoother.h"
#include "multigrid/host/transfer.h"

namespace tcfem::multigrid {

double additive_default_relaxation(int dim) { return 1.6 / double(1 << dim); }
double dg_additive_default_relaxation(int dim, bool cartesian) {
  if (cartesian) return 1.6 / (3.0 * double(1 << (dim - 1)));
  return dim == 2 ? 0.18 : 0.1;
}

const char* to_string(SmootherKind k) {
  switch (k) {
    case SmootherKind::patch: return "patch";
    case SmootherKind::patch_additive: return "patch-additive";
    case SmootherKind::chebyshev: return "chebyshev";
  }
  return "?";
}
const char* to_string(PatchVariant v) {
  switch (v) {
    case PatchVariant::fused: return "fused";
    case PatchVariant::separate: return "separate";
    case PatchVariant::global: return "global";
  }
  return "?";
}
const char* to_string(CoarseSolverKind k) {
  switch (k) {
    case CoarseSolverKind::automatic: return "auto";
    case CoarseSolverKind::cholesky: return "cholesky";
    case CoarseSolverKind::cg: return "cg";
  }
  return "?";
}
std::optional<SmootherKind> parse_smoother_kind(std::string_view name) {
  for (auto k : {SmootherKind::patch, SmootherKind::patch_additive, SmootherKind::chebyshev})
    if (name == to_string(k)) return k;
  return std::nullopt;
}
std::optional<PatchVariant> parse_patch_variant(std::string_view name) {
  for (auto v : {PatchVariant::fused, PatchVariant::separate, PatchVariant::global})
    if (name == to_string(v)) return v;
  return std::nullopt;
}
std::optional<CoarseSolverKind> parse_coarse_solver_kind(std::string_view name) {
  for (auto k : {CoarseSolverKind::automatic, CoarseSolverKind::cholesky, CoarseSolverKind::cg})
    if (name == to_string(k)) return k;
  return std::nullopt;
}

template <int dim, typename Number>
std::unique_ptr<Smoother<Vector<Number>>> make_smoother(const SmootherSettings& settings,
                                                        const mesh::BoxMesh<dim>& mesh,
                                                        const fe::DofLayout<dim>& dofs,
                                                        const MatrixFreeLevelOperator<dim, Number>& op,
                                                        LevelInfo& info) {
  char text[160];
  switch (settings.kind) {
    case SmootherKind::patch:
    case SmootherKind::patch_additive: {
      const bool additive = settings.kind == SmootherKind::patch_additive;
      const bool dg = dofs.disc() == fe::Disc::dg;
      const double omega = settings.relaxation.value_or(
          additive ? (dg ? dg_additive_default_relaxation(dim, mesh.geometry() == mesh::GeometryKind::cartesian)
                         : additive_default_relaxation(dim))
                   : 1.0);
      // the 1D rule of the level operator: exact (Gauss k+1) on the Kronecker path, else its quadrature
      const auto& config = op.matrix_free().config();
      const auto quadrature = op.matrix_free().path() == operators::Path::cartesian
                                  ? fe::gauss(config.degree + 1)
                                  : fe::make_quadrature(config.quadrature, config.degree);
      if (dg && config.coefficient)
        throw InputError("--smoother patch with --disc dg: the dg patch smoother has constant-coefficient local "
                         "solvers; use --smoother chebyshev for a variable coefficient");
      if (dofs.disc() == fe::Disc::dg && !dofs.all_faces_dirichlet())
        throw InputError("--smoother patch with --disc dg: the dg vertex patches cover Dirichlet problems only; "
                         "with Neumann parts use --smoother chebyshev");
      if (dg) {
        auto s = std::make_unique<DgVertexPatchSmoother<dim, Number>>(mesh, dofs, quadrature, additive,
                                                                     settings.patch_variant, omega, op);
        info.n_patches = std::size_t(mesh.partition().comm.sum(double(s->n_patches())));  // every rank's
        std::snprintf(text, sizeof text, "%s (%s, %zu patches of %d DoFs, %d colors, relaxation %g)",
                      additive ? "additive dg vertex patch" : "multiplicative dg vertex patch",
                      additive ? "global residual" : to_string(s->variant()), info.n_patches, s->patch_size(),
                      additive ? 1 : static_cast<int>(s->colors().size()), omega);
        info.smoother = text;
        return s;
      }
      const bool surrogate = uses_patch_surrogates(mesh.geometry(), bool(config.coefficient));
      auto s = std::make_unique<VertexPatchSmoother<dim, Number>>(
          mesh, dofs, quadrature, additive, settings.patch_variant, omega, op,
          surrogate ? op.matrix_free().cell_metric() : std::vector<double>{});
      // every rank's patches (a distributed level: each rank smooths the patches of its vertices)
      info.n_patches = std::size_t(mesh.partition().comm.sum(double(s->n_patches())));
      std::snprintf(text, sizeof text, "%s (%s%s, %zu patches, %d colors, relaxation %g)",
                    additive ? "additive vertex patch" : "multiplicative vertex patch",
                    additive ? "global residual" : to_string(s->variant()),
                    s->surrogate() ? ", separable surrogates" : "", info.n_patches,
                    additive ? 1 : (1 << dim), omega);
      info.smoother = text;
      return s;
    }
    case SmootherKind::chebyshev: {
      Vector<Number> diagonal;
      op.matrix_free().compute_diagonal(diagonal);
      std::vector<char> constrained;
      if (dofs.disc() == fe::Disc::cg) constrained = dofs.boundary_mask();
      // the eigenvalue estimate's start vector by the entries' indices on one process, so that every
      // partition estimates the same value
      std::vector<std::int64_t> global;
      if (mesh.partition().is_distributed()) global = dofs.global_indices();
      auto s = std::make_unique<ChebyshevSmoother<Number>>(op, diagonal, std::move(constrained),
                                                           settings.chebyshev_degree, settings.chebyshev_range,
                                                           settings.eigenvalue_cg_steps, global);
      info.lambda_max = s->lambda_max();
      std::snprintf(text, sizeof text, "Chebyshev-Jacobi (degree %d, range [%.4g, %.4g])", s->degree(),
                    s->lambda_min(), s->lambda_max());
      info.smoother = text;
      return s;
    }
  }
  throw Error("unknown smoother kind");
}

namespace {
/// The transfer between `level` and the one below it: between distributed levels, onto rank 0 at
/// the gathered level, on rank 0 below it (null where this rank stores neither level).
template <int dim, typename Number>
std::unique_ptr<Transfer<Vector<Number>>> make_transfer(const LevelHierarchy<dim>& h, int level) {
  if (h.distributed() && level == h.gathered_level()) {
    const bool root = h.stored(level - 1);
    return std::make_unique<GatherTransfer<dim, Number>>(
        h.dofs(level), root ? &h.mesh(level - 1) : nullptr, root ? &h.dofs(level - 1) : nullptr,
        root ? &h.gathered_mesh() : nullptr, root ? &h.gathered_dofs() : nullptr);
  }
  if (!h.stored(level)) return nullptr;
  return std::make_unique<MatrixFreeTransfer<dim, Number>>(h.mesh(level - 1), h.dofs(level - 1), h.mesh(level),
                                                           h.dofs(level));
}

template <class V, class T>
const T* or_absent(const std::unique_ptr<T>& p) {
  if (p) return p.get();
  return &AbsentLevel<V>::instance();
}
}  // namespace

template <int dim, typename Number>
Multigrid<dim, Number>::Multigrid(const LevelHierarchy<dim>& hierarchy, const operators::OperatorConfig& config,
                                  const MultigridSettings& settings)
    : hierarchy_(&hierarchy), settings_(settings) {
  using V = Vector<Number>;
  const auto t0 = std::chrono::steady_clock::now();
  if (settings.pre_smooth < 0 || settings.post_smooth < 0) throw InputError("smoothing steps must be >= 0");
  const int n_levels = hierarchy.n_levels();
  operators_.resize(n_levels);
  smoothers_.resize(n_levels);
  transfers_.resize(n_levels);
  info_.resize(n_levels);
  std::vector<typename VCycle<V>::Level> levels(n_levels);
  // first what may fail on some ranks only: the operators (det J and the coefficient at this rank's
  // points), and the smoothers and coarse solver of the levels that rank 0 runs alone (no
  // collective steps); an error there must reach every rank before the setup's collective steps
  const bool spread = hierarchy.distributed();
  collective(hierarchy.mesh(hierarchy.finest()).partition().comm, [&] {
    for (int l = 0; l < n_levels; ++l)
      if (hierarchy.stored(l))
        operators_[l] = std::make_unique<MatrixFreeLevelOperator<dim, Number>>(hierarchy.mesh(l), hierarchy.dofs(l),
                                                                                config);
    for (int l = 1; l < n_levels; ++l)
      if (hierarchy.stored(l) && (!spread || l < hierarchy.gathered_level()))
        smoothers_[l] = make_smoother<dim, Number>(settings.smoother, hierarchy.mesh(l), hierarchy.dofs(l),
                                                   *operators_[l], info_[l]);
    if (hierarchy.stored(0)) {
      Vector<Number> diagonal;
      operators_[0]->matrix_free().compute_diagonal(diagonal);
      coarse_ = make_coarse_solver<dim, Number>(settings.coarse, hierarchy.mesh(0), hierarchy.dofs(0), config,
                                                *operators_[0], diagonal, settings.coarse_cg_tolerance, coarse_kind_);
      info_[0].smoother = std::string("coarse solver: ") + to_string(coarse_kind_);
    }
  });
  for (int l = 0; l < n_levels; ++l) {
    auto& info = info_[l];
    info.level = l;
    if (l > 0) transfers_[l] = make_transfer<dim, Number>(hierarchy, l);
    if (!hierarchy.stored(l)) {
      info.smoother = "on rank 0";
      levels[l].op = &AbsentLevel<V>::instance();
      levels[l].smoother = &AbsentLevel<V>::instance();
      levels[l].transfer = or_absent<V>(transfers_[l]);
      continue;
    }
    const auto& mesh = hierarchy.mesh(l);
    const auto& dofs = hierarchy.dofs(l);
    for (int d = 0; d < dim; ++d) info.cells[d] = mesh.n_cells()[d];
    info.n_dofs = dofs.n_dofs();
    levels[l].op = operators_[l].get();
    if (l > 0) {
      if (!smoothers_[l])  // a level spread over the ranks (collective: their errors agree)
        smoothers_[l] = make_smoother<dim, Number>(settings.smoother, mesh, dofs, *operators_[l], info);
      levels[l].smoother = smoothers_[l].get();
      levels[l].transfer = transfers_[l].get();
    }
  }
  int finest_post = settings.post_smooth;
  if (std::is_same_v<Number, float> && settings.finest_post_fp64 && n_levels > 1) {
    const int f = n_levels - 1;
    fine_operator64_ = std::make_unique<MatrixFreeLevelOperator<dim, double>>(hierarchy.mesh(f), hierarchy.dofs(f),
                                                                              config);
    LevelInfo info64 = info_[f];
    fine_smoother64_ = make_smoother<dim, double>(settings.smoother, hierarchy.mesh(f), hierarchy.dofs(f),
                                                  *fine_operator64_, info64);
    info_[f].smoother += "; post-smoothing in fp64";
    finest_post = 0;
  }
  cycle_ = std::make_unique<VCycle<V>>(std::move(levels), *or_absent<V>(coarse_),
                                       settings.pre_smooth, settings.post_smooth, settings.post_smooth_order,
                                       finest_post);
  if (std::is_same_v<Number, float> && settings.fmg_fp64_residuals) {
    using V64 = Vector<double>;
    operators64_.resize(n_levels);
    transfers64_.resize(n_levels);
    std::vector<typename MixedFullMultigrid<V64, V>::Level> levels64(n_levels);
    for (int l = 1; l < n_levels; ++l) {
      transfers64_[l] = make_transfer<dim, double>(hierarchy, l);
      levels64[l].transfer = or_absent<V64>(transfers64_[l]);
      if (!hierarchy.stored(l)) {
        levels64[l].op = &AbsentLevel<V64>::instance();
        continue;
      }
      if (l + 1 < n_levels || !fine_operator64_)
        operators64_[l] =
            std::make_unique<MatrixFreeLevelOperator<dim, double>>(hierarchy.mesh(l), hierarchy.dofs(l), config);
      levels64[l].op = operators64_[l] ? operators64_[l].get() : fine_operator64_.get();
    }
    fmg64_ = std::make_unique<MixedFullMultigrid<V64, V>>(std::move(levels64), *cycle_, fine_smoother64_.get(),
                                                          settings.post_smooth, settings.post_smooth_order);
  }
  setup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <int dim, typename Number>
Multigrid<dim, Number>::~Multigrid() = default;

template <int dim, typename Number>
void Multigrid<dim, Number>::finest_post_smooth_fp64(Vector<double>& z, const Vector<double>& r) const {
  if (fine_smoother64_)
    smooth_timed(*fine_smoother64_, z, r, settings_.post_smooth, settings_.post_smooth_order, times().levels.back());
}

template <int dim, typename Number>
void Multigrid<dim, Number>::full_multigrid_fp64(Vector<double>& x, const Vector<double>& b) const {
  if constexpr (std::is_same_v<Number, double>) {
    cycle_->full_multigrid(x, b);
  } else {
    TCFEM_ASSERT(fmg64_, "full_multigrid_fp64 below fp64 needs MultigridSettings::fmg_fp64_residuals");
    fmg64_->run(x, b);
  }
}

template <int dim, typename Number>
void MultigridPreconditioner<dim, Number>::vmult(Vector<double>& z, const Vector<double>& r) const {
  auto& times = mg_->times();
  auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = r.size();
  for (std::size_t i = 0; i < n; ++i) b_[i] = static_cast<Number>(r[i]);
  x_.fill(Number(0));
  auto t1 = std::chrono::steady_clock::now();
  mg_->vcycle(x_, b_, true);
  auto t2 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) z[i] = static_cast<double>(x_[i]);
  auto t3 = std::chrono::steady_clock::now();
  times.conversion += std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
  mg_->finest_post_smooth_fp64(z, r);
}

template class Multigrid<2, double>;
template class Multigrid<3, double>;
template class Multigrid<2, float>;
template class Multigrid<3, float>;
template class MultigridPreconditioner<2, double>;
template class MultigridPreconditioner<3, double>;
template class MultigridPreconditioner<2, float>;
template class MultigridPreconditioner<3, float>;

}  // namespace tcfem::multigrid
