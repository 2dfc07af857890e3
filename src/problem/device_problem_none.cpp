#include "problem/device_problem.h"

#include "operators/device/device_operator.h"

#include "core/error.h"

namespace tcfem::problem {

template <int dim>
struct DeviceProblem<dim>::Impl {};

template <int dim>
DeviceProblem<dim>::DeviceProblem(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&, const ProblemDefinition<dim>*) {
  throw InputError("--backend cuda: this tcfem was built without the CUDA backend");
}
template <int dim>
DeviceProblem<dim>::~DeviceProblem() = default;
template <int dim>
void DeviceProblem<dim>::add_rhs_volume(double*, const fe::Quadrature1D&) const {}
template <int dim>
void DeviceProblem<dim>::add_rhs_neumann(double*, const fe::Quadrature1D&) const {}
template <int dim>
bool DeviceProblem<dim>::has_lift() const {
  return false;
}
template <int dim>
void DeviceProblem<dim>::set_rhs_lift(double*, const operators::DeviceOperator&, const operators::OperatorConfig&) {}
template <int dim>
void DeviceProblem<dim>::set_lift(double*) const {}
template <int dim>
bool DeviceProblem<dim>::has_exact() const {
  return false;
}
template <int dim>
Errors DeviceProblem<dim>::errors(const double*) const {
  return {};
}
template <int dim>
void DeviceProblem<dim>::set_owned_cells(const operators::CellRange&, const Communicator&) {}
template <int dim>
double DeviceProblem<dim>::compile_seconds() const {
  return 0.0;
}
template <int dim>
std::string DeviceProblem<dim>::evaluation() const {
  return "";
}
template <int dim>
void add_cell_vectors(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&, const std::vector<std::size_t>&,
                      const std::vector<double>&, double*) {
  throw InputError("--backend cuda: this tcfem was built without the CUDA backend");
}
template <int dim>
void zero_constrained(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&, double*) {
  throw InputError("--backend cuda: this tcfem was built without the CUDA backend");
}

template class DeviceProblem<2>;
template class DeviceProblem<3>;
template void add_cell_vectors<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const std::vector<std::size_t>&,
                                  const std::vector<double>&, double*);
template void add_cell_vectors<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const std::vector<std::size_t>&,
                                  const std::vector<double>&, double*);
template void zero_constrained<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, double*);
template void zero_constrained<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, double*);

}  // namespace tcfem::problem
