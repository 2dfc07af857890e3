#pragma once
// DevicePatchSmoother (device pointers) as a Smoother of device vectors for VCycle.
#include <memory>

#include "core/error.h"
#include "multigrid/device/patch_smoother.h"
#include "multigrid/device/vector.h"
#include "multigrid/interfaces.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
class DevicePatchSmootherAdapter final : public Smoother<DeviceVector<Number>> {
 public:
  explicit DevicePatchSmootherAdapter(std::unique_ptr<DevicePatchSmoother<dim, Number>> smoother)
      : smoother_(std::move(smoother)) {
    TCFEM_ASSERT(smoother_, "no patch smoother");
  }
  void smooth(DeviceVector<Number>& x, const DeviceVector<Number>& b, SweepOrder order) const override {
    TCFEM_ASSERT(x.size() == smoother_->size() && b.size() == smoother_->size(), "patch smoother vector sizes");
    smoother_->smooth(x.data(), b.data(), order);
  }
  void smooth_same_b(DeviceVector<Number>& x, const DeviceVector<Number>& b, SweepOrder order) const override {
    TCFEM_ASSERT(x.size() == smoother_->size() && b.size() == smoother_->size(), "patch smoother vector sizes");
    smoother_->smooth(x.data(), b.data(), order, /*b_ghosts_fresh=*/true);
  }
  void smooth_from_zero(DeviceVector<Number>& x, const DeviceVector<Number>& b, SweepOrder order) const override {
    TCFEM_ASSERT(x.size() == smoother_->size() && b.size() == smoother_->size(), "patch smoother vector sizes");
    smoother_->smooth(x.data(), b.data(), order, /*b_ghosts_fresh=*/false, /*x_zero=*/true);
  }
  const DevicePatchSmoother<dim, Number>& smoother() const { return *smoother_; }

 private:
  std::unique_ptr<DevicePatchSmoother<dim, Number>> smoother_;
};

}  // namespace tcfem::multigrid
