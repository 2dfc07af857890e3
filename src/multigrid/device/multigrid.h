#pragma once
// Geometric multigrid on the device: level operators from the device operator registry, device
// transfers, Chebyshev-Jacobi or vertex-patch smoothers and the coarse solver, assembled into the
// same VCycle as the CPU backend (multigrid/vcycle.h) over DeviceVector<Number>. Number is double
// for an fp64 V-cycle and float for every other precision (the storage type of the device
// operators of that precision). Includes CUDA headers: for .cu files and device tests only.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device_exchange.h"

#include "multigrid/device/vector.h"
#include "multigrid/full_multigrid.h"
#include "multigrid/interfaces.h"
#include "multigrid/level_hierarchy.h"
#include "multigrid/host/multigrid.h"
#include "multigrid/multigrid_config.h"
#include "multigrid/vcycle.h"
#include "operators/device/device_operator.h"
#include "operators/device/ghosted_apply.h"
#include "precision/precision.h"

namespace tcfem::multigrid {

/// A DeviceOperator as a LevelOperator of device vectors. A level spread over ranks: the operator
/// runs on this rank's ghosted box, and `ghosts` updates the ghosts of src it reads first (they are
/// copies of their owners' entries, so src keeps its value), beside the interior cells where the
/// operator's apply is split (operators::ghosted_vmult).
template <typename Number>
class DeviceLevelOperator final : public LevelOperator<DeviceVector<Number>> {
 public:
  explicit DeviceLevelOperator(std::unique_ptr<operators::DeviceOperator> op, DeviceGhostExchange* ghosts = nullptr);
  void vmult(DeviceVector<Number>& dst, const DeviceVector<Number>& src) const override {
    operators::ghosted_vmult(*op_, ghosts_, dst.data(), const_cast<Number*>(src.data()));
  }
  std::size_t size() const override { return op_->n_local(); }
  const operators::DeviceOperator& device_operator() const { return *op_; }

 private:
  std::unique_ptr<operators::DeviceOperator> op_;
  DeviceGhostExchange* ghosts_;
};

/// A level of a distributed hierarchy on this rank's ghosted box (two cells wide) as a mesh of its
/// own, and its ghost exchanges: `near` fills the ghosts of one cell layer (all an operator apply
/// reads), `all` every ghost (the input of a cg restriction; null elsewhere).
template <int dim>
struct DeviceLevelBox {
  std::unique_ptr<mesh::BoxMesh<dim>> mesh;
  std::unique_ptr<fe::DofLayout<dim>> dofs;
  std::unique_ptr<DeviceGhostExchange> near, all;
  device::DeviceReduction reduction;  // owned entries summed over the ranks
};

/// The kernel key of a level operator of the device V-cycle in `precision`: fp64 and fp32 use
/// the cuda-core family where it exists (Cartesian meshes) and the generic one elsewhere; every
/// other precision uses the tensor-core family (cg, Cartesian). Level 0 of a float V-cycle
/// (`coarsest`) runs in fp32, since only the coarse solver uses it. Throws InputError naming what
/// exists when no kernel matches.
/// `geometry`: a key with the geometry fields of the levels set (operators::set_geometry).
operators::DeviceKernelKey device_level_key(int dim, const operators::OperatorConfig& config,
                                            const operators::DeviceKernelKey& geometry,
                                            precision::Precision precision, bool coarsest);

/// The key of a level of the mesh and DoF layout's hierarchy (geometry fields from them).
template <int dim>
operators::DeviceKernelKey device_level_key(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                            const operators::OperatorConfig& config,
                                            precision::Precision precision, bool coarsest) {
  operators::DeviceKernelKey geometry;
  operators::set_geometry(geometry, mesh, dofs, config);
  return device_level_key(dim, config, geometry, precision, coarsest);
}

/// The V-cycle's storage type: double for fp64, float for the others.
inline bool vcycle_in_double(precision::Precision p) { return p == precision::Precision::fp64; }

template <int dim, typename Number>
class DeviceMultigrid {
 public:
  /// Builds every level of `hierarchy` (which must outlive this object). `progress` receives one
  /// line per level built (may be empty). A distributed hierarchy: collective; each rank runs the
  /// levels from the gathered one up on its ghosted boxes (the fine mesh's partition needs a ghost
  /// width of two), rank 0 those below; the ghosts travel by `exchange` (default:
  /// default_exchange_path). dg: Chebyshev smoothers only (the dg patch smoothers run on one rank).
  DeviceMultigrid(const LevelHierarchy<dim>& hierarchy, const operators::OperatorConfig& config,
                  const MultigridSettings& settings, precision::Precision precision,
                  const std::function<void(const std::string&)>& progress = {},
                  const ExchangeOptions& exchange = {});
  ~DeviceMultigrid();

  /// x_zero: x is zero on entry (VCycle::cycle)
  void vcycle(DeviceVector<Number>& x, const DeviceVector<Number>& b, bool x_zero = false) const {
    cycle_->cycle(x, b, x_zero);
  }
  /// VCycle::warm_up: launches the cycle's kernels once, on the levels below the finest.
  void warm_up() const { cycle_->warm_up(); }
  void full_multigrid(DeviceVector<Number>& x, const DeviceVector<Number>& b) const {
    cycle_->full_multigrid(x, b);
  }
  /// Full multigrid for fp64 vectors: with an fp64 V-cycle the one above; below fp64 the
  /// MixedFullMultigrid (residuals in fp64; needs settings.fmg_fp64_residuals).
  void full_multigrid_fp64(DeviceVector<double>& x, const DeviceVector<double>& b) const;

  /// The level's operator (a level this rank stores).
  const DeviceLevelOperator<Number>& level_operator(int level) const { return *operators_.at(level); }
  /// Whether the levels are spread over ranks.
  bool distributed() const { return !boxes_.empty(); }
  /// The mesh and DoF layout the level's operators run on: this rank's ghosted box for a level
  /// spread over ranks, else the hierarchy's.
  const mesh::BoxMesh<dim>& operator_mesh(int level) const;
  const fe::DofLayout<dim>& operator_dofs(int level) const;
  /// A distributed hierarchy: the ghost update of one cell layer of the finest level (for the
  /// outer solver's operator) and the reduction of its vectors; null on one process.
  DeviceGhostExchange* fine_ghosts() const { return boxes_.empty() ? nullptr : boxes_.back().near.get(); }
  const device::DeviceReduction* fine_reduction() const {
    return boxes_.empty() ? nullptr : &boxes_.back().reduction;
  }
  /// This rank's wall time in the ghost updates of every level, and their number.
  double exchange_seconds() const;
  long exchange_calls() const;
  const Smoother<DeviceVector<Number>>& smoother(int level) const { return *smoothers_.at(level); }
  const Transfer<DeviceVector<Number>>& transfer(int level) const { return *transfers_.at(level); }
  const CoarseSolver<DeviceVector<Number>>& coarse_solver() const { return *coarse_; }
  MultigridTimes& times() const { return cycle_->times(); }
  const std::vector<LevelInfo>& level_info() const { return info_; }
  /// The operator kernel of every level (DeviceKernelKey::to_string), level 0 first.
  const std::vector<std::string>& level_kernels() const { return kernels_; }
  CoarseSolverKind coarse_solver_kind() const { return coarse_kind_; }
  int n_levels() const { return hierarchy_->n_levels(); }
  double setup_seconds() const { return setup_seconds_; }
  /// Whether the finest level's post-smoothing runs in fp64 outside the V-cycle
  /// (settings.finest_post_fp64 with a V-cycle below fp64 and at least two levels).
  bool finest_post_fp64() const { return fine_smoother64_ != nullptr; }
  /// The fp64 operator of the finest level that finest_post_fp64 smooths with and the fp64 full
  /// multigrid uses (null without both).
  const DeviceLevelOperator<double>* fine_operator_fp64() const {
    if (fine_operator64_ || operators64_.empty()) return fine_operator64_.get();
    return operators64_.back().get();
  }
  /// The finest level's post-smoothing steps in fp64: z <- S(z, r), timed as that level's smoother.
  /// Call after converting the V-cycle's result to z; does nothing unless finest_post_fp64().
  void finest_post_smooth_fp64(DeviceVector<double>& z, const DeviceVector<double>& r) const;
  /// Device memory held by operators, transfers and smoother vectors (estimate for reports).
  std::size_t device_bytes() const { return device_bytes_; }

 private:
  /// The transfer between `level` and the one below it in Number2 (null where this rank stores
  /// neither level).
  template <typename Number2>
  std::unique_ptr<Transfer<DeviceVector<Number2>>> make_transfer(int level);
  /// The operator of a stored level in `key`'s precision.
  template <typename Number2>
  std::unique_ptr<DeviceLevelOperator<Number2>> make_operator(int level, const operators::DeviceKernelKey& key,
                                                              const operators::OperatorConfig& config);

  const LevelHierarchy<dim>* hierarchy_;
  bool overlap_ = true;  // distributed levels: split applies beside the exchange
  ExchangePath path_ = ExchangePath::host_staged;  // distributed levels: the exchange's path
  Communicator comm_;
  // distributed: the levels from the gathered one up, index level - gathered_
  std::vector<DeviceLevelBox<dim>> boxes_;
  int gathered_ = 0;
  std::vector<std::unique_ptr<DeviceLevelOperator<Number>>> operators_;
  std::vector<std::unique_ptr<Smoother<DeviceVector<Number>>>> smoothers_;  // [0] null
  std::vector<std::unique_ptr<Transfer<DeviceVector<Number>>>> transfers_;  // [0] null
  std::unique_ptr<CoarseSolver<DeviceVector<Number>>> coarse_;
  std::unique_ptr<VCycle<DeviceVector<Number>>> cycle_;
  std::unique_ptr<DeviceLevelOperator<double>> fine_operator64_;  // finest_post_fp64 only
  std::unique_ptr<Smoother<DeviceVector<double>>> fine_smoother64_;
  // settings.fmg_fp64_residuals below fp64: fp64 operators (the finest one: fine_operator64_ if
  // built) and transfers of every level, and the full multigrid over them
  std::vector<std::unique_ptr<DeviceLevelOperator<double>>> operators64_;
  std::vector<std::unique_ptr<Transfer<DeviceVector<double>>>> transfers64_;
  std::unique_ptr<MixedFullMultigrid<DeviceVector<double>, DeviceVector<Number>>> fmg64_;
  int post_smooth_ = 1;
  SweepOrder post_order_ = SweepOrder::forward;
  std::vector<LevelInfo> info_;
  std::vector<std::string> kernels_;
  CoarseSolverKind coarse_kind_ = CoarseSolverKind::automatic;
  double setup_seconds_ = 0.0;
  std::size_t device_bytes_ = 0;
};

}  // namespace tcfem::multigrid
