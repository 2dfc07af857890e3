// The device vertex-patch smoother in builds that do not contain its kernels: every construction
// is refused with a clear message.
#include "core/error.h"
#include "multigrid/device_patch_smoother.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
DevicePatchSmoother<dim, Number>::DevicePatchSmoother(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                      const fe::Quadrature1D&, const SmootherSettings&,
                                                      std::function<void(Number*, const Number*)>) {
  throw InputError("the vertex-patch smoother is not available on the cuda backend in this build");
}

template <int dim, typename Number>
DevicePatchSmoother<dim, Number>::~DevicePatchSmoother() = default;

template <int dim, typename Number>
void DevicePatchSmoother<dim, Number>::smooth(Number*, const Number*, SweepOrder) const {}

template <int dim, typename Number>
std::size_t DevicePatchSmoother<dim, Number>::size() const {
  return 0;
}

template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::description() const {
  return {};
}

template class DevicePatchSmoother<2, double>;
template class DevicePatchSmoother<3, double>;
template class DevicePatchSmoother<2, float>;
template class DevicePatchSmoother<3, float>;

}  // namespace tcfem::multigrid
