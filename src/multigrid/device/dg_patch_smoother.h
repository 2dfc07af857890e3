#pragma once
// The SIPG vertex-patch smoothers of dg_patch_smoother.h on the GPU: the multiplicative smoother
// (3^dim colors in sequence, one launch per color) with the localized residual of a Cartesian
// patch computed in the kernel (PatchVariant::fused; `separate` runs as fused), the global variant
// (the residual of the level operator per color, then the local solves; always used on deformed
// meshes, with the inverse of the closest Cartesian patch), and the additive smoother (one global
// residual, the colors' corrections added to x one color after the other: no atomics). One thread
// block per patch; the patch tensors ((2(k+1))^dim values) live in shared memory, one thread per
// line of a contraction. Same results as DgVertexPatchSmoother<dim, Number> for the same settings
// (tests/device/test_device_dg_patch_smoother.cu).
#include <functional>
#include <memory>
#include <string>

#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/device/vector.h"
#include "multigrid/interfaces.h"
#include "multigrid/multigrid_config.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
class DeviceDgPatchSmoother final : public Smoother<DeviceVector<Number>> {
 public:
  /// `quadrature`: the 1D rule of the level operator's cell integrals (as for
  /// DgVertexPatchSmoother); level_vmult(dst, src): dst = A src on device vectors of this level
  /// (the global and additive variants). settings.kind is patch or patch_additive.
  DeviceDgPatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                        const fe::Quadrature1D& quadrature, const SmootherSettings& settings,
                        std::function<void(Number* dst, const Number* src)> level_vmult);
  ~DeviceDgPatchSmoother() override;

  void smooth(DeviceVector<Number>& x, const DeviceVector<Number>& b, SweepOrder order) const override;
  std::string description() const;
  std::size_t n_patches() const;
  /// Device bytes the smoother holds (tables and work vector).
  std::size_t device_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcfem::multigrid
