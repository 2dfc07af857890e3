#pragma once
// Numbering of the degrees of freedom of continuous (cg) and discontinuous (dg) Q_k spaces on a
// BoxMesh. Within a cell, DoFs are in lexicographic order of the Gauss-Lobatto node lattice.
//  cg: the global lattice of n_d*k+1 nodes per direction, numbered lexicographically (x fastest);
//      nodes on the boundary of the box carry homogeneous Dirichlet constraints.
//  dg: (k+1)^dim DoFs per cell, cells in lexicographic order.
// Local indices run over the ghosted cell box of the mesh's partition.
#include <array>
#include <cstddef>
#include <vector>

#include "core/vector.h"
#include "mesh/box_mesh.h"

namespace tcfem::fe {

enum class Disc { cg, dg };
const char* to_string(Disc d);

template <int dim>
class DofLayout {
 public:
  DofLayout(const mesh::BoxMesh<dim>& mesh, Disc disc, int degree);

  Disc disc() const { return disc_; }
  int degree() const { return degree_; }
  int n_1d() const { return degree_ + 1; }
  int dofs_per_cell() const { return dofs_per_cell_; }
  /// All DoFs of the space, boundary included.
  std::size_t n_dofs() const { return n_dofs_global_; }
  /// Entries stored by this process (owned + ghosts).
  std::size_t n_local() const { return n_local_; }

  /// Local DoF indices of the cell with global multi-index `c` (in the ghosted box), lexicographic.
  void cell_dof_indices(const std::array<int, dim>& c, index_t* indices) const;
  /// Local index of the cg lattice node with global lattice coordinates `p`.
  index_t lattice_index(const std::array<long, dim>& p) const;
  /// Nodes per direction of the local cg lattice.
  const std::array<long, dim>& lattice_extent() const { return lattice_extent_; }
  /// cg only: true where the local DoF lies on the boundary of the box (constrained).
  const std::vector<char>& boundary_mask() const { return boundary_mask_; }

 private:
  const mesh::BoxMesh<dim>* mesh_;
  Disc disc_;
  int degree_;
  int dofs_per_cell_;
  std::size_t n_dofs_global_ = 0, n_local_ = 0;
  std::array<long, dim> lattice_begin_{}, lattice_extent_{};
  std::vector<char> boundary_mask_;
};

}  // namespace tcfem::fe
