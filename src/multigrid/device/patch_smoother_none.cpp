// Builds without the CUDA backend: no device patch smoother.
#include "core/error.h"
#include "multigrid/device/patch_smoother.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
struct DevicePatchSmoother<dim, Number>::Impl {};

template <int dim, typename Number>
DevicePatchSmoother<dim, Number>::DevicePatchSmoother(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                      const fe::Quadrature1D&, const SmootherSettings&,
                                                      std::function<void(Number*, const Number*)>,
                                                      const std::vector<double>&) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}
template <int dim, typename Number>
DevicePatchSmoother<dim, Number>::~DevicePatchSmoother() = default;
template <int dim, typename Number>
void DevicePatchSmoother<dim, Number>::smooth(Number*, const Number*, SweepOrder, bool) const {}
template <int dim, typename Number>
std::size_t DevicePatchSmoother<dim, Number>::size() const { return 0; }
template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::description() const { return {}; }
template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::flops_per_step() const { return 0.0; }
template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::flops_performed_per_step() const { return 0.0; }
template <int dim, typename Number>
bool DevicePatchSmoother<dim, Number>::even_odd() const { return false; }
template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::contraction() const { return "dense"; }
template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::kernel_info() const { return {}; }
template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::shared_bytes_per_step() const { return 0.0; }
template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::global_bytes_per_step() const { return 0.0; }

template class DevicePatchSmoother<2, double>;
template class DevicePatchSmoother<3, double>;
template class DevicePatchSmoother<2, float>;
template class DevicePatchSmoother<3, float>;

}  // namespace tcfem::multigrid
