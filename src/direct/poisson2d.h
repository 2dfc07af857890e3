#pragma once
// The nodal finite element system of -Laplace u = f with homogeneous Dirichlet data on a 2D mesh
// (P1 triangles or Q1 parallelograms), assembled as a sparse matrix over the interior vertices,
// and the manufactured solutions of seed 003: sin(n pi x) sin(n pi y) on the unit square and
// sin(n pi x) sin(n pi y)(x-5/4)(x-7/4)(y-1/4)(y-3/4) on the flow-around-a-square domain.
#include <cstdint>
#include <vector>

#include "direct/mesh2d.h"
#include "direct/sparse.h"

namespace tcfem::direct {

/// Interior vertices numbered in vertex order: the unknowns of the nodal system.
struct DofMap {
  std::vector<std::int32_t> dof_of_vertex;  ///< -1 for boundary vertices
  std::vector<std::int32_t> vertex_of_dof;
  std::int64_t n_dofs() const { return static_cast<std::int64_t>(vertex_of_dof.size()); }
};
DofMap make_dof_map(const Mesh2D& mesh);

/// The stiffness matrix (grad u, grad v) on the interior vertices (rows and columns of boundary
/// vertices removed). P1: exact; Q1: 2x2 Gauss points (exact on parallelograms). Couplings that
/// vanish (the edge between two right angles) are left out of the pattern.
CsrMatrix assemble_stiffness(const Mesh2D& mesh, const DofMap& dofs);

/// The manufactured solution u and f = -Laplace u.
struct ExactSolution {
  MeshKind mesh = MeshKind::square_q1;
  int n = 1;  ///< frequency: sin(n pi x) sin(n pi y)
  double value(double x, double y) const;
  double rhs(double x, double y) const;
};

/// b_i = (f, phi_i) for the interior vertices: P1 with a 7-point degree-5 rule per triangle, Q1
/// with 3x3 Gauss points per cell.
std::vector<double> assemble_load(const Mesh2D& mesh, const DofMap& dofs, const ExactSolution& u);

/// u at the interior vertices.
std::vector<double> interpolate(const Mesh2D& mesh, const DofMap& dofs, const ExactSolution& u);

}  // namespace tcfem::direct
