#pragma once
// Solving A x = b with geometric multigrid on the device (`tcfem solve --backend cuda` with
// --precond mg or --solver mg|fmg): the same outer solvers as solve_with_multigrid
// (multigrid/host/multigrid_solve.h) in double precision on the device around one device V-cycle in
// the chosen precision (fp64; fp32; the tensor-core precisions with float vectors). Declared
// without CUDA headers; builds without CUDA throw InputError.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/device_exchange.h"
#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "multigrid/host/multigrid_solve.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/device/device_operator.h"
#include "solvers/cg.h"

namespace tcfem::multigrid {

struct DeviceMultigridOptions {
  /// Time every V-cycle component (synchronizing the device around each); off: only the outer
  /// totals are measured and the solve runs without a pause per component.
  bool component_timing = false;
  /// Receives setup progress lines (may be empty).
  std::function<void(const std::string&)> progress;
  /// When set, b is built on the device: the callback receives the zeroed device vector (n_local
  /// doubles) and the outer solver's fp64 operator (for the Dirichlet lift: DeviceProblem::
  /// set_rhs_lift) during the setup, and the host b is not read (it may be empty). A distributed
  /// mesh: the operator and the vector are those of the rank's ghosted box (the lattice of
  /// mesh::ghosted_box_mesh), whose owned entries must be exact; the ghosts are then filled from
  /// their owners.
  std::function<void(double* b, const operators::DeviceOperator& A)> device_rhs;
  /// When set, receives the solution on the device after the solve (before it is copied back;
  /// distributed: the ghosts of one cell layer filled from their owners).
  std::function<void(double* x)> device_solution;
  /// Whether the solution is copied back into x (off: x is left as it was; it may be empty, the
  /// initial guess then being zero).
  bool copy_solution = true;
  /// A distributed mesh: how the ghost values travel, and whether beside the interior cells.
  ExchangeOptions exchange;
};

struct DeviceMultigridInfo {
  std::string device_name;
  std::string exchange_path;               ///< a distributed mesh: to_string of the exchange's path
  bool exchange_overlapped = false;        ///< the finest level's exchange ran beside its interior cells
  double exchange_seconds = 0.0;           ///< this rank's time in ghost updates (setup and solve)
  long exchange_calls = 0;
  std::size_t exchange_bytes = 0;          ///< bytes this rank sends per fp64 ghost update of the finest level
  std::string outer_kernel;                ///< the fp64 operator of the outer solver
  std::vector<std::string> level_kernels;  ///< the V-cycle's operators, level 0 first
  std::size_t device_bytes = 0;            ///< estimate of what the solve holds on the device
  bool component_times = false;            ///< whether report.times holds device times per component
};

/// Device memory (bytes) a multigrid solve on the device is estimated to need, by part.
struct DeviceMemoryEstimate {
  double outer = 0.0;      ///< fp64 vectors of the outer solver (b, x, Krylov basis and work vectors)
  double levels = 0.0;     ///< the V-cycle's vectors on all levels (cycle, transfer and smoother work)
  double operators = 0.0;  ///< stored operator data (geometry) of all levels and the outer operator
  double fixed = 0.0;      ///< dense coarse factor, kernel tables and the CUDA runtime
  double total() const { return outer + levels + operators + fixed; }
};
/// `neumann_parts`: the layout has Neumann faces; a cg box then runs the general-geometry kernels
/// (stored quadrature data) on every level, as a deformed mesh does.
DeviceMemoryEstimate estimate_device_multigrid_memory(int dim, double fine_dofs, const operators::OperatorConfig& config,
                                                      mesh::GeometryKind geometry, const MultigridSolveSettings& settings,
                                                      bool neumann_parts = false);
double estimate_device_multigrid_bytes(int dim, double fine_dofs, const operators::OperatorConfig& config,
                                       mesh::GeometryKind geometry, const MultigridSolveSettings& settings,
                                       bool neumann_parts = false);
/// The message refusing a problem whose estimate exceeds 90% of `free_bytes`: names the parts and
/// how to shrink the largest (--restart, --solver cg, --mg-precision).
std::string device_memory_refusal(const DeviceMemoryEstimate& need, double fine_dofs, double free_bytes,
                                  const std::string& device_name, const MultigridSolveSettings& settings);

/// Solves A x = b (b and x on the host unless `options` builds b on the device; x holds the
/// initial guess) on the device. Throws
/// InputError before allocating when the estimate exceeds the free device memory. A distributed
/// mesh (a ghost layer of two cells): collective, one device per rank, b and x distributed
/// vectors of the host (b's owned entries are read; x receives every local entry, ghosts
/// included), Chebyshev smoothers.
template <int dim>
MultigridSolveReport solve_with_multigrid_cuda(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                               const operators::OperatorConfig& config, const Vector<double>& b,
                                               Vector<double>& x, const MultigridSolveSettings& settings,
                                               const solvers::SolverControl& control,
                                               const DeviceMultigridOptions& options, DeviceMultigridInfo& info);

}  // namespace tcfem::multigrid
