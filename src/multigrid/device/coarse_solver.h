#pragma once
// Coarse-grid solvers of the device backend, chosen as on the CPU (multigrid/host/coarse_solver.h):
//   DeviceCholeskyCoarseSolver: the dense Cholesky factor of the assembled coarsest matrix
//     (assembled on the host as CholeskyCoarseSolver does; factored and inverted on the host up to
//     max_host_inverse_coarse_dofs DoFs, else on the device: cuSOLVER potrf, the inverse by cuBLAS
//     trsm and syrk or potri, direct/cuda_dense.h); each solve is one product with the inverse in double
//     (cuBLAS dgemv: one read of the matrix, where two triangular solves are latency-bound), the
//     vectors of a float V-cycle converted on entry and exit. Exact up to the conditioning.
//   DeviceCgCoarseSolver: Jacobi-preconditioned CG on the device in the V-cycle's precision to
//     the relative residual max(tolerance, 10 unit roundoffs), at most 10000 iterations (three
//     scalars per iteration go to the host).
#include <memory>
#include <vector>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "multigrid/device/vector.h"
#include "multigrid/interfaces.h"
#include "multigrid/multigrid_config.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cpu/sparse_matrix.h"

namespace tcfem::multigrid {

/// Largest coarsest level whose dense inverse is formed on the host (LAPACK potrf and potri, a few
/// milliseconds), which leaves the device's solver libraries unloaded: their first use cost 0.05-0.08
/// s of setup on an H200.
inline constexpr std::size_t max_host_inverse_coarse_dofs = 1000;

template <typename Number>
class DeviceCholeskyCoarseSolver final : public CoarseSolver<DeviceVector<Number>> {
 public:
  /// `factor`: n x n column-major, lower triangle = L with A = L L^T (the upper part is ignored).
  /// Every constructor and factory ends with the inverse A^{-1} = L^{-T} L^{-1} formed from the
  /// factor (cuSOLVER potri, both triangles, in fp64), so that a solve is one matrix-vector
  /// product; an fp32 solver keeps the inverse rounded to fp32 (half the bytes each solve reads).
  DeviceCholeskyCoarseSolver(const std::vector<double>& factor, std::size_t n);
  /// An n x n factor to be filled (zeroed; the factories invert it once filled).
  explicit DeviceCholeskyCoarseSolver(std::size_t n);
  /// Factors the SPD matrix `matrix` (n x n column-major, lower triangle read) on the device.
  static std::unique_ptr<DeviceCholeskyCoarseSolver> factor_on_device(const std::vector<double>& matrix,
                                                                      std::size_t n);
  /// Factors the SPD sparse matrix `a` on the device: its CSR arrays are uploaded and scattered
  /// into the dense matrix there (no n x n host array).
  static std::unique_ptr<DeviceCholeskyCoarseSolver> factor_on_device(const operators::SparseMatrix& a);
  void solve(DeviceVector<Number>& x, const DeviceVector<Number>& b) const override;

 private:
  /// After the inversion: the inverse in the solver's precision.
  void keep_inverse();
  std::size_t n_;
  DeviceBuffer<double> factor_;  // the factor, then the inverse (fp64 solvers)
  DeviceBuffer<float> inverse32_;  // fp32 solvers: the inverse, rounded (factor_ released)
  mutable DeviceVector<double> work_, result_;
};

template <typename Number>
class DeviceCgCoarseSolver final : public CoarseSolver<DeviceVector<Number>> {
 public:
  DeviceCgCoarseSolver(const LevelOperator<DeviceVector<Number>>& op, const std::vector<Number>& diagonal,
                       double tolerance);
  void solve(DeviceVector<Number>& x, const DeviceVector<Number>& b) const override;
  int last_iterations() const { return last_iterations_; }

 private:
  const LevelOperator<DeviceVector<Number>>* op_;
  DeviceVector<Number> inverse_diagonal_;
  double tolerance_;
  mutable DeviceVector<Number> r_, z_, p_, ap_;
  mutable int last_iterations_ = 0;
};

/// The coarse solver of `kind` (automatic: Cholesky up to max_device_dense_coarse_dofs DoFs, else CG);
/// `chosen` receives the kind used. `diagonal`: the coarsest operator's diagonal (host).
template <int dim, typename Number>
std::unique_ptr<CoarseSolver<DeviceVector<Number>>> make_device_coarse_solver(
    CoarseSolverKind kind, const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
    const operators::OperatorConfig& config, const LevelOperator<DeviceVector<Number>>& op,
    const std::vector<Number>& diagonal, double cg_tolerance, CoarseSolverKind& chosen);

}  // namespace tcfem::multigrid
