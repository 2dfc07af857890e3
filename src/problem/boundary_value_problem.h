#pragma once
// Discretization of the user's problem (problem_file.h) on a structured mesh:
//   cg: u = w + g_h with g_h the nodal interpolant of g on the Dirichlet faces (zero elsewhere) and
//       w zero there: A w = b, b_i = (f, phi_i) + (h, phi_i)_N - a(g_h, phi_i) for free DoFs i and
//       b_i = 0 on constrained ones, the form the solvers already solve;
//   dg: SIPG with Nitsche terms: b_i = (f, phi_i) + (h, phi_i)_N + sum_{F in D} (g, gamma_F phi_i
//       - a grad phi_i . n)_F, with the operator's penalty gamma_F.
// With a constant coefficient c the operator is the Laplacian and f and h are divided by c.
// Integrals by Gauss quadrature with k+2 points per direction on the isoparametric cells.
#include <optional>
#include <string>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"
#include "problem/poisson.h"
#include "problem/problem_file.h"

namespace tcfem::problem {

template <int dim>
struct DiscreteSystem {
  Vector<double> rhs;   ///< b (zero on constrained cg DoFs)
  Vector<double> lift;  ///< cg: g_h (the solution is w + lift); dg: empty
};

/// The 1D rule of the data integrals: the general-path operator's rule (so that the Nitsche
/// penalty and the lifting use the operator's cell volumes), Gauss k+2 on the Kronecker path.
template <int dim>
fe::Quadrature1D data_rule(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                           const operators::OperatorConfig& config);

template <int dim>
DiscreteSystem<dim> assemble_system(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                    const operators::OperatorConfig& config, const ProblemDefinition<dim>& problem);

/// The terms of b the device does not compute (problem/device_problem.h computes the volume term,
/// the cg lift and the Neumann terms): the Nitsche terms of dg Dirichlet faces, as cell vectors of
/// the dg cells on Dirichlet faces (none for cg). With those on the device and the constrained rows
/// zeroed, b is assemble_system's.
struct BoundaryTerms {
  std::vector<std::size_t> cells;  ///< owned cell numbers
  std::vector<double> rhs;         ///< [j * dofs_per_cell + i]
};
template <int dim>
BoundaryTerms assemble_boundary_terms(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                      const operators::OperatorConfig& config, const ProblemDefinition<dim>& problem);

/// L2 and H1-seminorm errors against an exact solution and its gradient.
template <int dim>
Errors compute_errors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u,
                      const PointFunction<dim>& exact,
                      const std::function<mesh::Point<dim>(const mesh::Point<dim>&)>& gradient);

/// Writes the solution x on the mesh's cells as VTU (io/vtu_writer.h) with the fields u and, with
/// a problem, its coefficient; with an exact solution (the problem's, or the built-in problem's
/// when `problem` is null) also u_exact and error. A distributed mesh (collective): `path` ends in
/// .pvtu, every rank writes its cells to io::pvtu_piece_path(path, rank) and rank 0 the .pvtu that
/// joins them; an error on any rank removes every piece and reaches every rank.
template <int dim>
void write_solution_vtu(const std::string& path, const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                        const Vector<double>& x, const ProblemDefinition<dim>* problem);

}  // namespace tcfem::problem
