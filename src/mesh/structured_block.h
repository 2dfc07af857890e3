#pragma once
// Hexahedral (quadrilateral) meshes given cell by cell, as a mesh file holds them, and their
// recognition as one structured block: a lattice of n_0 x n_1 (x n_2) cells whose geometry is the
// image of the parameter box [0, n_0] x [0, n_1] (x [0, n_2]) under a piecewise polynomial map. A
// recognized block runs on the structured kernels as a mapped box (Domain). A forest of blocks
// would hold one StructuredBlock per block, with the same face-to-face connections.
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "mesh/box_mesh.h"

namespace tcfem::mesh {

/// A mesh of hexahedra (3D) or quadrilaterals (2D) of geometric order 1 or 2, cell by cell.
template <int dim>
struct HexMesh {
  static constexpr int corners_per_face = 1 << (dim - 1);
  int order = 1;
  std::vector<Point<dim>> nodes;
  /// (order+1)^dim node indices per cell in tensor-product order of the cell's reference
  /// coordinates (the first fastest).
  std::vector<std::size_t> cell_nodes;
  /// The file's element tags of the cells, for messages.
  std::vector<std::size_t> cell_tags;
  struct BoundaryFace {
    std::string part;                                  ///< the physical group's name
    std::array<std::size_t, corners_per_face> corners;  ///< node indices of its corners
  };
  std::vector<BoundaryFace> boundary;
  /// Where the cells came from, for messages (a file name).
  std::string source;

  int nodes_per_cell() const;
  std::size_t n_cells() const { return cell_tags.size(); }
};

/// One structured block of cells (see the file comment).
template <int dim>
class StructuredBlock {
 public:
  /// Recognizes the cells of `mesh` as one structured block, oriented so that the map has a
  /// positive Jacobian determinant in the first cell. Every block face must lie in exactly one
  /// boundary part. InputError naming the source and "not one structured block" (with the reason)
  /// for any other mesh, or the boundary face that is wrong.
  static StructuredBlock recognize(const HexMesh<dim>& mesh);

  const std::array<int, dim>& cells() const { return n_; }
  int order() const { return order_; }
  /// The physical point of the parameter point X in [0, n_0] x ... (each cell a unit cube).
  Point<dim> map(const Point<dim>& X) const;
  /// The parameter box [0, n] mapped by this block's map (the map holds the block's data).
  Domain<dim> domain() const;
  /// The boundary part of each block face (face 2 d + side).
  const std::array<std::string, 2 * dim>& face_parts() const { return parts_; }
  /// The file's element tag of the cell at lattice position c.
  std::size_t cell_tag(const std::array<int, dim>& c) const;

 private:
  std::array<int, dim> n_{};
  int order_ = 1;
  /// Per lattice cell (first index fastest), (order+1)^dim nodes in the lattice's tensor order.
  std::shared_ptr<const std::vector<Point<dim>>> nodes_;
  std::vector<std::size_t> tags_;
  std::array<std::string, 2 * dim> parts_;
};

}  // namespace tcfem::mesh
