// The generic kernel family behind the registry interface: every configuration, fp64 and fp32.
#include <cmath>

#include "operators/generic/cuda_operator.h"
#include "operators/device/device_geometry.h"
#include "operators/device/variants.h"

namespace tcfem::operators {
namespace {

/// Work model of the generic kernels (contractions as they run, parallel over outputs).
struct WorkModel {
  double flops = 0.0;   // per cell (faces included for dg general)
  double shared = 0.0;  // values moved through shared memory per cell
};

WorkModel generic_work(const DeviceKernelKey& key, int nq) {
  const int dim = key.dim, nb = key.degree + 1;
  WorkModel w;
  auto contraction = [&](double outputs, int n_in) {
    w.flops += 2.0 * outputs * n_in;
    w.shared += outputs * (n_in + 1);
  };
  if (key.cartesian) {
    const double n_out = std::pow(nb, dim);
    const int terms = key.form == Form::mass ? 1 : dim;
    const int blocks = (key.disc == fe::Disc::dg && key.form == Form::laplace) ? 3 : 1;
    for (int t = 0; t < terms * blocks; ++t)
      for (int d = 0; d < dim; ++d) contraction(n_out, nb);
    return w;
  }
  // interpolate to quadrature points and back
  for (int pass = 0; pass < 2; ++pass)
    for (int d = 0; d < dim; ++d) contraction(std::pow(nq, d + 1) * std::pow(nb, dim - d - 1), pass == 0 ? nb : nq);
  if (key.form == Form::laplace) {
    for (int pass = 0; pass < 2; ++pass)
      for (int d = 0; d < dim; ++d) contraction(std::pow(nq, dim), nq);
    w.flops += 2.0 * dim * dim * std::pow(nq, dim);
    if (key.disc == fe::Disc::dg) {
      // per cell, dim faces, each evaluating and integrating two sides
      const double nf = std::pow(nq, dim - 1);
      for (int s = 0; s < 2 * dim * 2; ++s) {
        contraction(2.0 * std::pow(nb, dim - 1), nb);
        for (int e = 0; e < dim - 1; ++e) contraction(2.0 * nf, std::max(nb, nq));
        contraction(nf * (dim - 1), nq);
      }
    }
  }
  return w;
}

OperatorConfig with_coefficient(OperatorConfig c, const Coefficient& coefficient, const jit::DeviceSource& source) {
  c.coefficient = coefficient;
  c.coefficient_source = source;
  return c;
}

template <int dim, typename Number>
class GenericDeviceOperator final : public DeviceOperatorBase {
 public:
  GenericDeviceOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                        const Coefficient& coefficient, const jit::DeviceSource& source)
      : DeviceOperatorBase(key, 0), op_(mesh, dofs, with_coefficient(config_of(key), coefficient, source), key.form) {
    n_local_ = op_.n_local();
    const int nq = op_.device_view().nq;
    const auto w = generic_work(key, nq);
    const double cells = double(mesh.n_owned_cells());
    flops_ = w.flops * cells;
    shared_ = w.shared * cells * sizeof(Number);
    dram_ = 2.0 * double(dofs.n_local()) * sizeof(Number) + double(op_.device_bytes());
  }
  void vmult(void* dst, const void* src) const override {
    op_.vmult(static_cast<Number*>(dst), static_cast<const Number*>(src));
  }
  std::size_t value_size() const override { return sizeof(Number); }
  std::size_t device_bytes() const override { return op_.device_bytes(); }
  bool diagonal(void* diag) const override {
    if (!op_.has_diagonal()) return false;
    op_.compute_diagonal(static_cast<Number*>(diag));
    return true;
  }
  bool vmult_unconstrained(void* dst, const void* src) const override {
    op_.vmult_unconstrained(static_cast<Number*>(dst), static_cast<const Number*>(src));
    return true;
  }
  std::vector<double> cell_metric() const override {
    const auto& v = op_.device_view();
    if (v.cartesian || v.mass || !v.cell_coef) return {};
    return device_cell_metric<Number>(v);
  }
  bool cell_metric_to(double* metric) const override {
    const auto& v = op_.device_view();
    if (v.cartesian || v.mass || !v.cell_coef) return false;
    device_cell_metric_to<Number>(v, metric);
    return true;
  }

 private:
  CudaOperator<dim, Number> op_;
};

}  // namespace

bool generic_supports(const DeviceKernelKey& key) {
  using precision::Precision;
  return key.variant == Variant::generic && key.geometry_form != GeometryForm::mf && !fp32_stored_fp64(key) &&
         (key.dim == 2 || key.dim == 3) &&
         key.degree >= 1 && key.degree <= 8 &&
         (key.precision == Precision::fp64 || key.precision == Precision::fp32);
}

std::string describe_generic() {
  return "generic: dim 2-3, degree 1-8, cg/dg, cartesian/general, laplace/mass, fp64/fp32";
}

template <int dim>
std::unique_ptr<DeviceOperator> make_generic_device_operator(const mesh::BoxMesh<dim>& mesh,
                                                             const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                             const Coefficient& coefficient,
                                                             const jit::DeviceSource& coefficient_source) {
  if (!generic_supports(key)) return nullptr;
  if (key.precision == precision::Precision::fp64)
    return std::make_unique<GenericDeviceOperator<dim, double>>(mesh, dofs, key, coefficient, coefficient_source);
  return std::make_unique<GenericDeviceOperator<dim, float>>(mesh, dofs, key, coefficient, coefficient_source);
}

template std::unique_ptr<DeviceOperator> make_generic_device_operator<2>(const mesh::BoxMesh<2>&,
                                                                         const fe::DofLayout<2>&,
                                                                         const DeviceKernelKey&, const Coefficient&,
                                                                         const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_generic_device_operator<3>(const mesh::BoxMesh<3>&,
                                                                         const fe::DofLayout<3>&,
                                                                         const DeviceKernelKey&, const Coefficient&,
                                                                         const jit::DeviceSource&);

}  // namespace tcfem::operators
