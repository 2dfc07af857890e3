#pragma once
// Geometric multigrid on the CPU: the level operators (matrix-free, in the V-cycle's precision
// Number), smoothers, transfers and coarse solver of a LevelHierarchy, assembled into a VCycle;
// and the preconditioner that runs one V-cycle in Number for a double-precision Krylov solver
// (conversion on entry and exit, seed 000 Section 7.1).
#include <memory>
#include <string>
#include <vector>

#include "core/vector.h"
#include "multigrid/full_multigrid.h"
#include "multigrid/interfaces.h"
#include "multigrid/level_hierarchy.h"
#include "multigrid/multigrid_config.h"
#include "multigrid/vcycle.h"
#include "operators/cpu/laplace_operator.h"

namespace tcfem::multigrid {

/// A MatrixFreeOperator as a LevelOperator.
template <int dim, typename Number>
class MatrixFreeLevelOperator final : public LevelOperator<Vector<Number>> {
 public:
  MatrixFreeLevelOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                          const operators::OperatorConfig& config)
      : op_(mesh, dofs, config, operators::Form::laplace), n_(dofs.n_local()) {}
  void vmult(Vector<Number>& dst, const Vector<Number>& src) const override { op_.vmult(dst, src); }
  std::size_t size() const override { return n_; }
  const operators::MatrixFreeOperator<dim, Number>& matrix_free() const { return op_; }

 private:
  operators::MatrixFreeOperator<dim, Number> op_;
  std::size_t n_;
};

/// What a Multigrid object was built with, per level (for reports).
struct LevelInfo {
  int level = 0;
  std::array<int, 3> cells{1, 1, 1};
  std::size_t n_dofs = 0;
  std::string smoother;       ///< description, e.g. "patch (fused, 27 patches, relaxation 1)"
  double lambda_max = 0.0;    ///< Chebyshev: the upper end of the smoothed range
  std::size_t n_patches = 0;  ///< patch smoothers
};

/// The smoother of one level, dispatched by settings.kind and the discretization (the one place
/// smoother kinds are mapped to classes: VertexPatchSmoother for cg, DgVertexPatchSmoother for dg,
/// ChebyshevSmoother for both).
template <int dim, typename Number>
std::unique_ptr<Smoother<Vector<Number>>> make_smoother(const SmootherSettings& settings,
                                                        const mesh::BoxMesh<dim>& mesh,
                                                        const fe::DofLayout<dim>& dofs,
                                                        const MatrixFreeLevelOperator<dim, Number>& op,
                                                        LevelInfo& info);

template <int dim, typename Number>
class Multigrid {
 public:
  /// Builds every level of `hierarchy` (which must outlive this object) with the operator
  /// configuration `config` (disc, degree, quadrature, path as the fine operator). A distributed
  /// hierarchy: the levels from the gathered one up are spread over the ranks, the transfer below
  /// the gathered level gathers onto rank 0 (GatherTransfer), and the levels below it and the
  /// coarse solver run on rank 0 (the other ranks pass through them with empty vectors).
  Multigrid(const LevelHierarchy<dim>& hierarchy, const operators::OperatorConfig& config,
            const MultigridSettings& settings);
  ~Multigrid();

  /// One V-cycle: x holds the initial guess and receives the result.
  /// x_zero: x is zero on entry (VCycle::cycle)
  void vcycle(Vector<Number>& x, const Vector<Number>& b, bool x_zero = false) const { cycle_->cycle(x, b, x_zero); }
  /// Full multigrid from b.
  void full_multigrid(Vector<Number>& x, const Vector<Number>& b) const { cycle_->full_multigrid(x, b); }
  /// Full multigrid for fp64 vectors: with an fp64 V-cycle the one above; below fp64 the
  /// MixedFullMultigrid (residuals in fp64; needs settings.fmg_fp64_residuals).
  void full_multigrid_fp64(Vector<double>& x, const Vector<double>& b) const;

  /// The operator of a level (AbsentLevel's where this rank does not store the level).
  const LevelOperator<Vector<Number>>& level_operator(int level) const {
    if (!operators_.at(level)) return AbsentLevel<Vector<Number>>::instance();
    return *operators_[level];
  }
  const VCycle<Vector<Number>>& cycle() const { return *cycle_; }
  MultigridTimes& times() const { return cycle_->times(); }
  const std::vector<LevelInfo>& level_info() const { return info_; }
  CoarseSolverKind coarse_solver_kind() const { return coarse_kind_; }
  const MultigridSettings& settings() const { return settings_; }
  int n_levels() const { return hierarchy_->n_levels(); }
  double setup_seconds() const { return setup_seconds_; }
  /// Whether the finest level's post-smoothing runs in fp64 outside the V-cycle
  /// (settings.finest_post_fp64 with a V-cycle below fp64 and at least two levels).
  bool finest_post_fp64() const { return fine_smoother64_ != nullptr; }
  /// The finest level's post-smoothing steps in fp64: z <- S(z, r), timed as that level's smoother.
  /// Call after converting the V-cycle's result to z; does nothing unless finest_post_fp64().
  void finest_post_smooth_fp64(Vector<double>& z, const Vector<double>& r) const;

 private:
  const LevelHierarchy<dim>* hierarchy_;
  MultigridSettings settings_;
  std::unique_ptr<MatrixFreeLevelOperator<dim, double>> fine_operator64_;  // finest_post_fp64 only
  std::unique_ptr<Smoother<Vector<double>>> fine_smoother64_;
  // settings.fmg_fp64_residuals below fp64: fp64 operators (the finest one: fine_operator64_ if
  // built) and transfers of every level, and the full multigrid over them
  std::vector<std::unique_ptr<MatrixFreeLevelOperator<dim, double>>> operators64_;
  std::vector<std::unique_ptr<Transfer<Vector<double>>>> transfers64_;  // null: AbsentLevel
  std::unique_ptr<MixedFullMultigrid<Vector<double>, Vector<Number>>> fmg64_;
  // null where this rank does not store the level (AbsentLevel stands in)
  std::vector<std::unique_ptr<MatrixFreeLevelOperator<dim, Number>>> operators_;
  std::vector<std::unique_ptr<Smoother<Vector<Number>>>> smoothers_;  // [0] unused (null)
  std::vector<std::unique_ptr<Transfer<Vector<Number>>>> transfers_;   // [0] unused (null)
  std::unique_ptr<CoarseSolver<Vector<Number>>> coarse_;
  std::unique_ptr<VCycle<Vector<Number>>> cycle_;
  std::vector<LevelInfo> info_;
  CoarseSolverKind coarse_kind_ = CoarseSolverKind::automatic;
  double setup_seconds_ = 0.0;
};

/// z = V-cycle(r) in Number for double vectors: r is converted to Number, one V-cycle from a
/// zero initial guess, the result converted back (timed as MultigridTimes::conversion), then the
/// finest level's fp64 post-smoothing if the multigrid has it.
template <int dim, typename Number>
class MultigridPreconditioner {
 public:
  explicit MultigridPreconditioner(const Multigrid<dim, Number>& mg)
      : mg_(&mg), b_(mg.level_operator(mg.n_levels() - 1).size()), x_(b_.size()) {}
  void vmult(Vector<double>& z, const Vector<double>& r) const;

 private:
  const Multigrid<dim, Number>* mg_;
  mutable Vector<Number> b_, x_;
};

}  // namespace tcfem::multigrid
