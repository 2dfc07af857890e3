#pragma once
// The manufactured Poisson problem -Laplace u = f on [0,1]^dim (or its deformed image) with
// u = prod_i sin(pi x_i), f = dim pi^2 u; homogeneous Dirichlet data (u vanishes on the boundary of
// the unit box; on the deformed box the map fixes the boundary, so the same holds).
#include <array>
#include <cmath>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"

namespace tcfem::problem {

template <int dim>
double exact_solution(const mesh::Point<dim>& x);
template <int dim>
mesh::Point<dim> exact_gradient(const mesh::Point<dim>& x);
template <int dim>
double right_hand_side(const mesh::Point<dim>& x);

/// b_i = int f phi_i, by Gauss quadrature with k+2 points per direction; constrained cg DoFs get 0.
template <int dim>
Vector<double> assemble_rhs(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs);

struct Errors {
  double l2 = 0.0;       ///< ||u - u_h||_L2
  double h1_semi = 0.0;  ///< ||grad(u - u_h)||_L2
};

/// The errors from this rank's sums of squares over its cells: summed over the ranks of comm
/// (serial: the sums themselves), then square roots.
inline Errors sum_errors(const Communicator& comm, long double l2_squared, long double h1_squared) {
  double sums[2] = {static_cast<double>(l2_squared), static_cast<double>(h1_squared)};
  comm.sum(sums, 2);
  return {std::sqrt(sums[0]), std::sqrt(sums[1])};
}

/// Errors of the discrete solution against the exact one, by Gauss quadrature with k+2 points.
template <int dim>
Errors compute_errors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u);

/// Node positions (mapped) and solution values of every cell, lexicographic within cells:
/// points[(cell * n + i) * 3 + c], values[cell * n + i] with n = (k+1)^dim.
template <int dim>
void cell_node_values(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u,
                      std::vector<double>& points, std::vector<double>& values);

}  // namespace tcfem::problem
