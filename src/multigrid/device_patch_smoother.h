#pragma once
// The vertex-patch Schwarz smoothers (multiplicative `patch`, additive `patch_additive`) on the
// device: the same smoothing steps as VertexPatchSmoother (multigrid/patch_smoother.h) on device
// vectors of this level. No CUDA headers.
#include <cstddef>
#include <functional>
#include <string>

#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/multigrid_config.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
class DevicePatchSmoother {
 public:
  /// level_vmult(dst, src): dst = A src on device vectors of this level (used by the global and the
  /// additive variants); settings.kind is patch or patch_additive. Throws InputError if unsupported.
  DevicePatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                      const fe::Quadrature1D& quadrature, const SmootherSettings& settings,
                      std::function<void(Number* dst, const Number* src)> level_vmult);
  ~DevicePatchSmoother();
  /// One smoothing step x <- S(x, b) on device vectors (default stream, asynchronous).
  void smooth(Number* x, const Number* b, SweepOrder order) const;
  std::size_t size() const;
  std::string description() const;
};

}  // namespace tcfem::multigrid
