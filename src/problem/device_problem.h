#pragma once
// The volume integrals of a problem computed on the device (`--backend cuda`): the right-hand
// side term (f / c, phi_i) and the L2 and H1-seminorm errors, over all cells in chunks. The map,
// f, the exact solution and its gradient are the problem's expressions compiled for the GPU at
// run time (core/jit.h); functions given as C++ callables are evaluated on the host threads at
// points copied from the device. The geometry is the isoparametric one of the CPU code (the map at
// the Gauss-Lobatto nodes of each cell, its Q_k interpolant at the quadrature points).
// The boundary data too: the cg Dirichlet lift (g at the constrained nodes compiled, its image
// under the operator without constraints: set_rhs_lift) and the Neumann data's face integrals
// (add_rhs_neumann). The Nitsche terms of dg Dirichlet faces stay on the host
// (problem::assemble_boundary_terms): they touch O(N^((dim-1)/dim)) cells.
// Declared without CUDA headers; builds without CUDA throw InputError.
#include <memory>

#include "core/communicator.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"
#include "problem/poisson.h"
#include "problem/problem_file.h"

namespace tcfem::operators {
class DeviceOperator;
struct CellRange;
}

namespace tcfem::problem {

template <int dim>
class DeviceProblem {
 public:
  /// `problem` null: the built-in manufactured problem (problem/poisson.h) on the mesh's
  /// geometry. Compiles the expressions (NVRTC) once.
  DeviceProblem(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const ProblemDefinition<dim>* problem);
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;

  /// b += (f / c, phi_i) over all owned cells with the tensor rule of `quad` (b: n_local doubles
  /// on the device). InputError for an inverted cell or a non-finite f, naming cell or point.
  void add_rhs_volume(double* b, const fe::Quadrature1D& quad) const;
  /// b += (h / c, phi_i)_F over the Neumann faces F of the problem (cg and dg) with the tensor
  /// rule of `quad` on each face (b: n_local doubles on the device); InputError for a non-finite
  /// h naming the point. No-op without Neumann parts.
  void add_rhs_neumann(double* b, const fe::Quadrature1D& quad) const;
  /// Whether the problem has a cg Dirichlet lift (a problem's Dirichlet data with cg; the
  /// built-in problem's g is zero).
  bool has_lift() const;
  /// cg with a lift: b = -A_u g_h, overwriting b (n_local doubles on the device; call it before
  /// the other terms are added), with g_h the nodal interpolant of the Dirichlet data at the
  /// constrained nodes (zero elsewhere; a node on several Dirichlet faces takes the first face's
  /// g, as assemble_system does) and A_u the operator `A` without constraints
  /// (DeviceOperator::vmult_unconstrained; a generic fp64 twin of A's key with `config`'s
  /// coefficient where A's family has none). b's constrained rows are then to be zeroed
  /// (zero_constrained). Keeps g_h's values for set_lift. No-op without a lift.
  void set_rhs_lift(double* b, const operators::DeviceOperator& A, const operators::OperatorConfig& config);
  /// x = g_h on the constrained nodes (the values of the last set_rhs_lift).
  void set_lift(double* x) const;
  /// Whether the problem has an exact solution (errors() needs one).
  bool has_exact() const;
  /// The errors of u (n_local doubles on the device) by Gauss quadrature with k+2 points, as
  /// compute_errors on the host.
  Errors errors(const double* u) const;
  /// A rank's part of a distributed problem (the mesh is its ghosted box, mesh::ghosted_box_mesh):
  /// errors() integrates the cells of `owned` only (the rank's owned cells in the box's
  /// coordinates) and sums the integrals over `comm`'s ranks (collective). The other terms need
  /// nothing: integrated over the whole box, they are exact on the owned entries.
  void set_owned_cells(const operators::CellRange& owned, const Communicator& comm);
  /// Seconds spent compiling the expressions.
  double compile_seconds() const;
  /// How the functions are evaluated, for reports ("compiled (NVRTC)" or "host threads").
  std::string evaluation() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Adds local cell vectors to a device vector: b[idx(cell, i)] += local[j * nb + i] for the
/// cells cells[j] (owned cell numbers); cg entries of shared nodes are summed atomically.
template <int dim>
void add_cell_vectors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                      const std::vector<std::size_t>& cells, const std::vector<double>& local, double* b);
/// b[i] = 0 on the constrained cg DoFs (the Dirichlet faces' lattice nodes) of a device vector.
template <int dim>
void zero_constrained(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, double* b);

}  // namespace tcfem::problem
