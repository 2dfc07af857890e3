#include "fe/lagrange.h"

#include <cmath>

#include "core/error.h"

namespace tcfem::fe {

LagrangeBasis1D::LagrangeBasis1D(std::vector<double> nodes) : nodes_(std::move(nodes)) {
  if (nodes_.empty()) throw InputError("Lagrange basis needs at least one node");
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (nodes_[i] == nodes_[j]) throw InputError("Lagrange basis nodes must be distinct");
}

LagrangeBasis1D LagrangeBasis1D::gauss_lobatto(int degree) {
  if (degree < 1) throw InputError("Gauss-Lobatto Lagrange basis needs degree >= 1");
  return LagrangeBasis1D(fe::gauss_lobatto(degree + 1).points);
}

double LagrangeBasis1D::value(int i, double x) const {
  long double v = 1.0L;
  for (int j = 0; j < size(); ++j)
    if (j != i) v *= (static_cast<long double>(x) - nodes_[j]) / (nodes_[i] - nodes_[j]);
  return static_cast<double>(v);
}

double LagrangeBasis1D::derivative(int i, double x) const {
  // d/dx prod_{j!=i} (x-x_j)/(x_i-x_j) = sum_{m!=i} 1/(x_i-x_m) prod_{j!=i,m} (x-x_j)/(x_i-x_j)
  long double sum = 0.0L;
  for (int m = 0; m < size(); ++m) {
    if (m == i) continue;
    long double term = 1.0L / (static_cast<long double>(nodes_[i]) - nodes_[m]);
    for (int j = 0; j < size(); ++j)
      if (j != i && j != m) term *= (static_cast<long double>(x) - nodes_[j]) / (nodes_[i] - nodes_[j]);
    sum += term;
  }
  return static_cast<double>(sum);
}

namespace {
Matrix1D tabulate(const LagrangeBasis1D& basis, const std::vector<double>& points, bool deriv) {
  Matrix1D m;
  m.n_rows = static_cast<int>(points.size());
  m.n_cols = basis.size();
  m.data.resize(m.n_rows * m.n_cols);
  for (int q = 0; q < m.n_rows; ++q)
    for (int i = 0; i < m.n_cols; ++i)
      m(q, i) = deriv ? basis.derivative(i, points[q]) : basis.value(i, points[q]);
  return m;
}

Matrix1D gram(const Matrix1D& t, const Quadrature1D& quad) {
  Matrix1D m;
  m.n_rows = m.n_cols = t.n_cols;
  m.data.assign(m.n_rows * m.n_cols, 0.0);
  for (int i = 0; i < m.n_rows; ++i)
    for (int j = 0; j < m.n_cols; ++j) {
      long double s = 0.0L;
      for (int q = 0; q < quad.size(); ++q)
        s += static_cast<long double>(quad.weights[q]) * t(q, i) * t(q, j);
      m(i, j) = static_cast<double>(s);
    }
  return m;
}
}  // namespace

Matrix1D basis_values(const LagrangeBasis1D& basis, const std::vector<double>& points) {
  return tabulate(basis, points, false);
}
Matrix1D basis_derivatives(const LagrangeBasis1D& basis, const std::vector<double>& points) {
  return tabulate(basis, points, true);
}
Matrix1D mass_matrix(const LagrangeBasis1D& basis, const Quadrature1D& quad) {
  return gram(basis_values(basis, quad.points), quad);
}
Matrix1D stiffness_matrix(const LagrangeBasis1D& basis, const Quadrature1D& quad) {
  return gram(basis_derivatives(basis, quad.points), quad);
}
Matrix1D exact_mass_matrix(const LagrangeBasis1D& basis) {
  return mass_matrix(basis, gauss(basis.size()));
}
Matrix1D exact_stiffness_matrix(const LagrangeBasis1D& basis) {
  return stiffness_matrix(basis, gauss(basis.size()));
}

}  // namespace tcfem::fe
