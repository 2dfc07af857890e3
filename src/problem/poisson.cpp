#include "problem/poisson.h"

#include <cmath>
#include <numbers>

#include "fe/lagrange.h"
#include "mesh/geometry_field.h"
#include "operators/geometry_data.h"
#include "tensor/evaluator.h"

namespace tcfem::problem {

using std::numbers::pi;

template <int dim>
double exact_solution(const mesh::Point<dim>& x) {
  double u = 1.0;
  for (int d = 0; d < dim; ++d) u *= std::sin(pi * x[d]);
  return u;
}

template <int dim>
mesh::Point<dim> exact_gradient(const mesh::Point<dim>& x) {
  mesh::Point<dim> g;
  for (int d = 0; d < dim; ++d) {
    double v = pi * std::cos(pi * x[d]);
    for (int e = 0; e < dim; ++e)
      if (e != d) v *= std::sin(pi * x[e]);
    g[d] = v;
  }
  return g;
}

template <int dim>
double right_hand_side(const mesh::Point<dim>& x) {
  return dim * pi * pi * exact_solution<dim>(x);
}

namespace {
// Per-cell loop at Gauss(k+2) points: f(cell, x[dim][nq], J[dim*dim][nq], weights) for each owned cell.
template <int dim, typename F>
void for_each_cell_at_points(const mesh::BoxMesh<dim>& mesh, int degree, F&& f) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(degree);
  const auto quad = fe::gauss(degree + 2);
  tensor::Evaluator<dim, double> ev(basis, quad);
  mesh::GeometryField<dim> geometry(mesh, degree);
  const int nq = ev.points_per_cell();
  std::vector<double> nodes(dim * ev.dofs_per_cell()), x(dim * nq), J(dim * dim * nq), w(nq);
  for (int q = 0; q < nq; ++q) {
    int r = q;
    w[q] = 1.0;
    for (int d = 0; d < dim; ++d) {
      w[q] *= quad.weights[r % quad.size()];
      r /= quad.size();
    }
  }
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto c = mesh.cell_index(cell);
    geometry.cell_nodes(c, nodes.data());
    operators::cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
    f(ev, c, x, J, w);
  }
}

template <int dim>
std::array<std::array<double, dim>, dim> jacobian_at(const std::vector<double>& J, int q, int nq) {
  std::array<std::array<double, dim>, dim> Jq;
  for (int a = 0; a < dim; ++a)
    for (int b = 0; b < dim; ++b) Jq[a][b] = J[(a * dim + b) * nq + q];
  return Jq;
}
}  // namespace

template <int dim>
Vector<double> assemble_rhs(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs) {
  Vector<double> b(dofs.n_local());
  const int n = dofs.dofs_per_cell();
  std::vector<index_t> idx(n);
  std::vector<double> fq, local(n);
  for_each_cell_at_points<dim>(mesh, dofs.degree(), [&](const auto& ev, const auto& c, const auto& x,
                                                        const auto& J, const auto& w) {
    const int nq = ev.points_per_cell();
    fq.resize(nq);
    for (int q = 0; q < nq; ++q) {
      mesh::Point<dim> xq;
      for (int d = 0; d < dim; ++d) xq[d] = x[d * nq + q];
      std::array<std::array<double, dim>, dim> inv;
      const double det = operators::invert<dim>(jacobian_at<dim>(J, q, nq), inv);
      fq[q] = right_hand_side<dim>(xq) * det * w[q];
    }
    ev.integrate_values(fq.data(), local.data());
    dofs.cell_dof_indices(c, idx.data());
    for (int i = 0; i < n; ++i) b[idx[i]] += local[i];
  });
  if (dofs.disc() == fe::Disc::cg) {
    const auto& mask = dofs.boundary_mask();
    for (std::size_t i = 0; i < b.size(); ++i)
      if (mask[i]) b[i] = 0.0;
  }
  return b;
}

template <int dim>
Errors compute_errors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u) {
  const int n = dofs.dofs_per_cell();
  std::vector<index_t> idx(n);
  std::vector<double> local(n), uq, grad;
  long double e0 = 0.0L, e1 = 0.0L;
  for_each_cell_at_points<dim>(mesh, dofs.degree(), [&](const auto& ev, const auto& c, const auto& x,
                                                        const auto& J, const auto& w) {
    const int nq = ev.points_per_cell();
    uq.resize(nq);
    grad.resize(dim * nq);
    dofs.cell_dof_indices(c, idx.data());
    for (int i = 0; i < n; ++i) local[i] = u[idx[i]];
    ev.values(local.data(), uq.data());
    ev.gradients_from_values(uq.data(), grad.data());
    for (int q = 0; q < nq; ++q) {
      mesh::Point<dim> xq;
      for (int d = 0; d < dim; ++d) xq[d] = x[d * nq + q];
      std::array<std::array<double, dim>, dim> inv;
      const double jxw = operators::invert<dim>(jacobian_at<dim>(J, q, nq), inv) * w[q];
      const double diff = uq[q] - exact_solution<dim>(xq);
      e0 += diff * diff * jxw;
      const auto g = exact_gradient<dim>(xq);
      for (int a = 0; a < dim; ++a) {
        double gh = 0.0;  // physical gradient: J^{-T} ref gradient
        for (int b = 0; b < dim; ++b) gh += inv[b][a] * grad[b * nq + q];
        e1 += (gh - g[a]) * (gh - g[a]) * jxw;
      }
    }
  });
  return {std::sqrt(static_cast<double>(e0)), std::sqrt(static_cast<double>(e1))};
}

template <int dim>
void cell_node_values(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u,
                      std::vector<double>& points, std::vector<double>& values) {
  mesh::GeometryField<dim> geometry(mesh, dofs.degree());
  const int n = dofs.dofs_per_cell();
  const std::size_t n_cells = mesh.n_owned_cells();
  points.assign(n_cells * n * 3, 0.0);
  values.assign(n_cells * n, 0.0);
  std::vector<double> nodes(dim * n);
  std::vector<index_t> idx(n);
  for (std::size_t cell = 0; cell < n_cells; ++cell) {
    const auto c = mesh.cell_index(cell);
    geometry.cell_nodes(c, nodes.data());
    dofs.cell_dof_indices(c, idx.data());
    for (int i = 0; i < n; ++i) {
      for (int d = 0; d < dim; ++d) points[(cell * n + i) * 3 + d] = nodes[d * n + i];
      values[cell * n + i] = u[idx[i]];
    }
  }
}

template double exact_solution<2>(const mesh::Point<2>&);
template double exact_solution<3>(const mesh::Point<3>&);
template mesh::Point<2> exact_gradient<2>(const mesh::Point<2>&);
template mesh::Point<3> exact_gradient<3>(const mesh::Point<3>&);
template double right_hand_side<2>(const mesh::Point<2>&);
template double right_hand_side<3>(const mesh::Point<3>&);
template Vector<double> assemble_rhs<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&);
template Vector<double> assemble_rhs<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&);
template Errors compute_errors<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const Vector<double>&);
template Errors compute_errors<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const Vector<double>&);
template void cell_node_values<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const Vector<double>&,
                                  std::vector<double>&, std::vector<double>&);
template void cell_node_values<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const Vector<double>&,
                                  std::vector<double>&, std::vector<double>&);

}  // namespace tcfem::problem
