#pragma once
// Isoparametric geometry: the mesh's node coordinates as a continuous Q_k field on the
// Gauss-Lobatto node lattice. Cell maps are the Q_k interpolants of BoxMesh::map, so deformed
// meshes consist of general curved hexahedra (quadrilaterals in 2D).
#include <array>
#include <vector>

#include "mesh/box_mesh.h"

namespace tcfem::mesh {

template <int dim>
class GeometryField {
 public:
  GeometryField(const BoxMesh<dim>& mesh, int degree);
  int degree() const { return degree_; }
  int nodes_per_cell() const { return nodes_per_cell_; }
  /// Coordinates of the (k+1)^dim nodes of cell `c` (global multi-index within the ghosted box),
  /// lexicographic: out[d * nodes_per_cell() + i].
  void cell_nodes(const std::array<int, dim>& c, double* out) const;
  std::size_t memory_bytes() const { return coords_.size() * sizeof(double); }

 private:
  int degree_;
  int nodes_per_cell_;
  std::array<long, dim> begin_{}, extent_{};
  std::vector<double> coords_;  // [node][d]
};

/// The cell nodes of GeometryField, computed per call from BoxMesh::map instead of read from a
/// stored field: the same values bit for bit, no memory per node. Thread-safe (const).
template <int dim>
class MappedCellNodes {
 public:
  MappedCellNodes(const BoxMesh<dim>& mesh, int degree);
  int nodes_per_cell() const { return nodes_per_cell_; }
  /// Coordinates of the (k+1)^dim nodes of cell `c`, lexicographic: out[d * nodes_per_cell() + i].
  void cell_nodes(const std::array<int, dim>& c, double* out) const;
  /// The same for the nodes of the cell's face `side` (0: lower, 1: upper) normal to `direction`
  /// only, at their places in `out` (the other entries untouched).
  void face_nodes(const std::array<int, dim>& c, int direction, int side, double* out) const;

 private:
  void node(const std::array<int, dim>& c, int i, double* out) const;  // node i into out[d * nodes_per_cell()]
  const BoxMesh<dim>* mesh_;
  int degree_;
  int nodes_per_cell_;
  std::vector<double> gll_;
  Point<dim> h_;
};

}  // namespace tcfem::mesh
