#pragma once
// Chebyshev-Jacobi smoother of the device backend: the same iteration as ChebyshevSmoother
// (multigrid/host/chebyshev_smoother.h) on device vectors. The diagonal comes from the device
// operator where its family computes it (general geometry), else from the host as the CPU smoother
// computes it (MatrixFreeOperator::compute_diagonal), copied once; lambda_max is
// estimated on the device by the same Lanczos-through-CG procedure from the same pseudo-random
// start vector (the CPU's linear congruential sequence, each entry computed by skip-ahead), so
// the estimate agrees with the CPU one up to rounding of the dot products.
#include <cstdint>
#include <vector>

#include "multigrid/device/vector.h"
#include "multigrid/interfaces.h"

namespace tcfem::multigrid {

/// Largest Ritz value of `steps` Jacobi-preconditioned CG steps on the device (see
/// estimate_largest_eigenvalue in chebyshev_smoother.h); `constrained`: 1 where a cg DoF is
/// constrained, empty for dg. Vectors spread over ranks: `red` sums the dot products over them, and
/// `global` (device, one entry per local entry) gives every entry its index on one process, from
/// which its start value follows, so that every partition starts from the same vector.
template <typename Number>
double estimate_largest_eigenvalue_device(const LevelOperator<DeviceVector<Number>>& op,
                                          const DeviceVector<Number>& inverse_diagonal,
                                          const DeviceBuffer<unsigned char>* constrained, int steps,
                                          const device::DeviceReduction* red = nullptr,
                                          const std::int64_t* global = nullptr);

template <typename Number>
class DeviceChebyshevSmoother final : public Smoother<DeviceVector<Number>> {
 public:
  /// `diagonal`: the level operator's diagonal (host); `constrained`: cg boundary mask (empty for dg).
  /// `lambda_max` > 0: the upper end of the range is known (the same level's operator in another
  /// precision was estimated), no estimate is made. A level spread over ranks: `reduction` and
  /// `global` (the host's list of every local entry's index on one process) as in
  /// estimate_largest_eigenvalue_device; `op` updates the ghosts it reads.
  DeviceChebyshevSmoother(const LevelOperator<DeviceVector<Number>>& op, const std::vector<Number>& diagonal,
                          const std::vector<char>& constrained, int degree, double range, int eigenvalue_steps,
                          double lambda_max = 0.0, const device::DeviceReduction* reduction = nullptr,
                          const std::vector<std::int64_t>& global = {});
  /// The same with the diagonal on the device (DeviceOperator::diagonal).
  DeviceChebyshevSmoother(const LevelOperator<DeviceVector<Number>>& op, DeviceVector<Number> diagonal,
                          const std::vector<char>& constrained, int degree, double range, int eigenvalue_steps,
                          double lambda_max = 0.0, const device::DeviceReduction* reduction = nullptr,
                          const std::vector<std::int64_t>& global = {});

  void smooth(DeviceVector<Number>& x, const DeviceVector<Number>& b, SweepOrder order) const override;

  double lambda_max() const { return lambda_max_; }
  double lambda_min() const { return lambda_min_; }
  int degree() const { return degree_; }

 private:
  const LevelOperator<DeviceVector<Number>>* op_;
  DeviceVector<Number> inverse_diagonal_;
  DeviceBuffer<unsigned char> constrained_;
  bool has_constraints_ = false;
  int degree_;
  double lambda_max_ = 0.0, lambda_min_ = 0.0;
  mutable DeviceVector<Number> z_, d_;
};

}  // namespace tcfem::multigrid
