#pragma once
// Matrix-free grid transfer between two levels of a LevelHierarchy: prolongation by polynomial
// interpolation of the coarse Q_k function at the fine nodes, restriction as its exact transpose.
//
// Per coarse cell the 1D interpolation matrix P (2k+1 x k+1), P(j, i) = phi_i(y_j) with y_j the
// Gauss-Lobatto nodes of the two children on [0,1] (y_j = x_j / 2 for the left child, (1 + x_j) / 2
// for the right one; the middle node is shared), is applied along every direction (sum factorization).
//  cg: the fine lattice of a coarse cell is (2k+1)^dim nodes. Prolongation writes them (a fine node
//      shared by several coarse cells receives the same value from each: the interpolant is
//      continuous and the end rows of P are unit vectors, so the copies agree bit for bit).
//      Restriction gathers the fine values weighted by 1 / (number of coarse cells holding the
//      node) — a tensor product of 1D weights 1/2 at interior cell ends — so that
//      P = sum_K E_fine^T W_K P_K E_coarse and P^T = sum_K E_coarse^T P_K^T W_K E_fine exactly.
//      Dirichlet constraints: both operate on the constrained subspaces, P~ = Z_f P Z_c with Z
//      zeroing boundary DoFs, so restriction is exactly P~^T on whole vectors.
//  dg: child s (per direction) takes rows s k .. s k + k of P; no DoFs are shared.
// Curved (deformed) levels: the interpolation acts in reference coordinates of the cells (the
// coarse and fine spaces are not nested when the geometry is curved; this is the usual choice).
// Distributed levels (the coarse partition the halved fine one): each rank transfers its owned
// coarse cells; prolongation reads the coarse ghost values first, restriction the fine ones, and
// adds its sums at nodes owned by other ranks to their owners.
// GatherTransfer: between the gathered level of a distributed hierarchy (LevelHierarchy) and the
// level below it, stored on rank 0: restriction gathers the owned entries on rank 0 and restricts
// there; prolongation prolongates on rank 0 and sends every rank its stored entries.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "multigrid/interfaces.h"

namespace tcfem::multigrid {

/// The 1D interpolation matrix P of degree k, (2k+1) x (k+1), row-major.
std::vector<double> prolongation_matrix_1d(int degree);

template <int dim, typename Number>
class MatrixFreeTransfer final : public Transfer<Vector<Number>> {
 public:
  MatrixFreeTransfer(const mesh::BoxMesh<dim>& coarse_mesh, const fe::DofLayout<dim>& coarse_dofs,
                     const mesh::BoxMesh<dim>& fine_mesh, const fe::DofLayout<dim>& fine_dofs);

  void prolongate(Vector<Number>& fine, const Vector<Number>& coarse) const override;
  void restrict_to_coarse(Vector<Number>& coarse, const Vector<Number>& fine) const override;

 private:
  void prolongate_cg(Vector<Number>& fine, const Vector<Number>& coarse) const;
  void restrict_cg(Vector<Number>& coarse, const Vector<Number>& fine) const;
  void prolongate_dg(Vector<Number>& fine, const Vector<Number>& coarse) const;
  void restrict_dg(Vector<Number>& coarse, const Vector<Number>& fine) const;
  /// Local lattice indices of the (2k+1)^dim fine nodes of coarse cell c, lexicographic.
  void fine_patch_indices(const std::array<int, dim>& c, index_t* idx) const;

  const mesh::BoxMesh<dim>* coarse_mesh_;
  const fe::DofLayout<dim>* coarse_dofs_;
  const fe::DofLayout<dim>* fine_dofs_;
  int k_;
  std::vector<Number> p_;  // (2k+1) x (k+1)
  mutable std::vector<Number> a_, b_;
  mutable std::vector<index_t> idx_c_, idx_f_;
};

/// The index lists of a gather of a distributed level onto rank 0 (GatherTransfer and its device
/// twin): this rank's owned local entries; on rank 0, per rank, the indices on one process of its
/// owned entries and of all its stored entries.
struct GatherPlan {
  std::vector<std::int64_t> owned;
  std::vector<std::vector<std::int64_t>> owned_global, stored_global;
};
/// Collective over the layout's ranks. `gathered_size` (read on rank 0): the entries of the level
/// on one process, which the ranks' owned entries must cover exactly (Error otherwise).
template <int dim>
GatherPlan make_gather_plan(const fe::DofLayout<dim>& fine_dofs, std::size_t gathered_size);

/// Transfer of the gathered level of a distributed hierarchy: `fine_dofs` the level spread over
/// the ranks; on rank 0 also the same level as a mesh of one process (`gathered_*`) and the level
/// below it (`coarse_*`); other ranks pass null for those and have coarse vectors of size 0.
template <int dim, typename Number>
class GatherTransfer final : public Transfer<Vector<Number>> {
 public:
  GatherTransfer(const fe::DofLayout<dim>& fine_dofs, const mesh::BoxMesh<dim>* coarse_mesh,
                 const fe::DofLayout<dim>* coarse_dofs, const mesh::BoxMesh<dim>* gathered_mesh,
                 const fe::DofLayout<dim>* gathered_dofs);

  void prolongate(Vector<Number>& fine, const Vector<Number>& coarse) const override;
  void restrict_to_coarse(Vector<Number>& coarse, const Vector<Number>& fine) const override;

 private:
  const fe::DofLayout<dim>* fine_dofs_;
  Communicator comm_;
  std::vector<std::int64_t> owned_;  // this rank's owned local entries
  // rank 0: per rank, the gathered-level indices of its owned entries and of all its stored entries
  std::vector<std::vector<std::int64_t>> owned_global_, stored_global_;
  std::unique_ptr<MatrixFreeTransfer<dim, Number>> serial_;  // rank 0: gathered level -> level below
  mutable Vector<Number> gathered_;                          // rank 0: the gathered level's vector
  mutable std::vector<std::vector<Number>> buffers_;         // rank 0: one message per rank
  mutable std::vector<Number> own_;                          // this rank's message
};

}  // namespace tcfem::multigrid
