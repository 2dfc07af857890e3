#pragma once
// Numbering of the degrees of freedom of continuous (cg) and discontinuous (dg) Q_k spaces on a
// BoxMesh. Within a cell, DoFs are in lexicographic order of the Gauss-Lobatto node lattice.
//  cg: the global lattice of n_d*k+1 nodes per direction, numbered lexicographically (x fastest);
//      nodes on the Dirichlet faces of the box are constrained (by default every face is one).
//  dg: (k+1)^dim DoFs per cell, cells in lexicographic order.
// Local indices run over the ghosted cell box of the mesh's partition.
#include <array>
#include <memory>
#include <mutex>
#include <cstddef>
#include <vector>

#include "core/vector.h"
#include "mesh/box_mesh.h"

namespace tcfem::fe {

enum class Disc { cg, dg };
const char* to_string(Disc d);

/// Which faces of the box carry Dirichlet conditions, numbered 2 d + side (xmin, xmax, ymin, ...);
/// the others carry Neumann conditions.
template <int dim>
using DirichletFaces = std::array<bool, 2 * dim>;
template <int dim>
constexpr DirichletFaces<dim> all_dirichlet() {
  DirichletFaces<dim> f{};
  for (auto& b : f) b = true;
  return f;
}

template <int dim>
class DofLayout {
 public:
  DofLayout(const mesh::BoxMesh<dim>& mesh, Disc disc, int degree,
            const DirichletFaces<dim>& dirichlet = all_dirichlet<dim>());

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
  /// The index in the numbering of the whole mesh on one process (the lattice, or cells times
  /// dofs_per_cell) of every local entry, owned and ghost.
  std::vector<std::int64_t> global_indices() const;
  /// Nodes per direction of the local cg lattice.
  const std::array<long, dim>& lattice_extent() const { return lattice_extent_; }
  /// cg only: true where the local DoF lies on a Dirichlet face of the box (constrained).
  /// Computed on first use (n_local bytes; thread-safe).
  const std::vector<char>& boundary_mask() const;
  /// cg only: the local indices of the constrained DoFs in increasing order, found line by line
  /// along x without visiting the interior (O(n_local^((dim-1)/dim)) work).
  std::vector<index_t> constrained_indices() const;
  const DirichletFaces<dim>& dirichlet_faces() const { return dirichlet_; }
  /// Every face of the box is a Dirichlet face.
  bool all_faces_dirichlet() const { return dirichlet_ == all_dirichlet<dim>(); }
  /// The ghost exchange of the layout's vectors on a distributed mesh (fe/dof_exchange.h); null
  /// on one process.
  const std::shared_ptr<const GhostLayout>& ghost_layout() const { return exchange_; }
  /// The communicator of the mesh's partition.
  const Communicator& communicator() const { return mesh_->partition().comm; }

 private:
  const mesh::BoxMesh<dim>* mesh_;
  Disc disc_;
  int degree_;
  DirichletFaces<dim> dirichlet_;
  int dofs_per_cell_;
  std::size_t n_dofs_global_ = 0, n_local_ = 0;
  std::array<long, dim> lattice_begin_{}, lattice_extent_{};
  struct MaskCache {
    std::once_flag once;
    std::vector<char> mask;
  };
  std::shared_ptr<MaskCache> mask_ = std::make_shared<MaskCache>();
  std::shared_ptr<const GhostLayout> exchange_;
  /// Whether the x-line number `l` of the local lattice lies on a Dirichlet face as a whole.
  bool line_constrained(std::size_t l) const;
};

/// The Dirichlet faces of the ghosted box of a partition taken as a mesh of its own
/// (mesh::ghosted_box_mesh): the box's own faces where the ghosted box reaches them, Dirichlet on
/// the faces inside the box (their nodes are ghosts at least one cell away from every owned
/// node when the ghost layer is two cells wide, so no owned entry depends on them).
template <int dim>
DirichletFaces<dim> ghosted_box_dirichlet(const mesh::Partition<dim>& part, const DirichletFaces<dim>& faces) {
  DirichletFaces<dim> out{};
  for (int d = 0; d < dim; ++d) {
    out[2 * d] = part.ghosted.begin[d] == 0 ? faces[2 * d] : true;
    out[2 * d + 1] = part.ghosted.end[d] == part.global_cells[d] ? faces[2 * d + 1] : true;
  }
  return out;
}

/// A zero vector of the layout's local entries, with its ghost exchange on a distributed mesh.
template <typename Number, int dim>
Vector<Number> make_vector(const DofLayout<dim>& dofs) {
  if (dofs.ghost_layout()) return Vector<Number>(dofs.ghost_layout());
  return Vector<Number>(dofs.n_local());
}

}  // namespace tcfem::fe
