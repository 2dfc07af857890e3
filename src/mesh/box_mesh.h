#pragma once
// Structured hexahedral meshes of the unit box: the Cartesian grid and its smooth deformation.
// A mesh knows the global grid of cells and the part this process owns (a sub-box plus a ghost
// layer of cells); a single process owns everything and has no ghosts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tcfem::mesh {

enum class GeometryKind { cartesian, deformed };
const char* to_string(GeometryKind g);

template <int dim>
using Point = std::array<double, dim>;

/// Half-open box of cells [begin, end) in global cell coordinates.
template <int dim>
struct CellBox {
  std::array<int, dim> begin{}, end{};
  int extent(int d) const { return end[d] - begin[d]; }
  std::size_t n_cells() const {
    std::size_t n = 1;
    for (int d = 0; d < dim; ++d) n *= static_cast<std::size_t>(extent(d));
    return n;
  }
  bool contains(const std::array<int, dim>& c) const {
    for (int d = 0; d < dim; ++d)
      if (c[d] < begin[d] || c[d] >= end[d]) return false;
    return true;
  }
};

/// Which cells this process owns, and which it stores as ghosts (the owned box grown by
/// `ghost_width` cells and clipped to the grid).
template <int dim>
struct Partition {
  std::array<int, dim> global_cells{};
  CellBox<dim> owned;
  CellBox<dim> ghosted;
  int ghost_width = 1;

  /// The partition of a single process: owns all cells.
  static Partition serial(const std::array<int, dim>& global_cells);
  /// A process owning `owned`, with a ghost layer of `ghost_width` cells around it.
  static Partition sub_box(const std::array<int, dim>& global_cells, const CellBox<dim>& owned,
                           int ghost_width = 1);
};

/// The box [0,1]^dim with n_d cells per direction, optionally moved by a smooth map that fixes the
/// boundary (the deformed box). Cells are numbered lexicographically (x fastest) within the owned box.
template <int dim>
class BoxMesh {
 public:
  BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry);
  BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry, const Partition<dim>& partition);
  /// 2^level cells per direction.
  static BoxMesh refined(int level, GeometryKind geometry);

  const std::array<int, dim>& n_cells() const { return partition_.global_cells; }
  std::size_t n_global_cells() const;
  std::size_t n_owned_cells() const { return partition_.owned.n_cells(); }
  const Partition<dim>& partition() const { return partition_; }
  GeometryKind geometry() const { return geometry_; }
  /// Cell size per direction of the undeformed grid.
  Point<dim> cell_size() const;

  /// Multi-index (global) of owned cell number `cell` (0 <= cell < n_owned_cells()).
  std::array<int, dim> cell_index(std::size_t cell) const;
  /// Owned cell number of the global multi-index `c` (which must be owned).
  std::size_t cell_number(const std::array<int, dim>& c) const;

  /// The map from the Cartesian box onto the mesh's domain: identity for Cartesian meshes,
  /// x_d + eps_d * prod_j sin(pi x_j) for the deformed box (fixes the boundary, det J > 0).
  Point<dim> map(const Point<dim>& x) const;
  /// Amplitudes eps_d of the deformation.
  static Point<dim> deformation_amplitudes();

 private:
  Partition<dim> partition_;
  GeometryKind geometry_;
};

}  // namespace tcfem::mesh
