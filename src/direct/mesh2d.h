#pragma once
// Two-dimensional coarse meshes of the direct solver and their uniform refinement: the unit square
// with Q1 squares or P1 triangles, and the flow-around-a-square domain (0,4)x(0,1) minus
// [5/4,7/4]x[1/4,3/4] as 28 triangles of three shapes (seed 003, section 3). Refinement appends the
// new vertices, so the vertices of level l are a prefix of those of level l+1, and records the
// parents of every new vertex (for the hierarchical basis).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tcfem::direct {

enum class MeshKind { square_q1, square_p1, flow_square };
enum class Element { p1, q1 };

/// "square-q1", "square-p1", "flow-square".
const char* to_string(MeshKind kind);
/// Inverse of to_string; throws InputError naming `option` for any other name.
MeshKind parse_mesh_kind(const std::string& name, const std::string& option = "--mesh");
Element element_of(MeshKind kind);

struct Point2 {
  double x = 0.0, y = 0.0;
};

struct Mesh2D {
  Element element = Element::p1;
  std::vector<Point2> vertices;
  /// Vertex indices per cell, counterclockwise; triangles use the first three entries.
  std::vector<std::array<std::int32_t, 4>> cells;
  /// Per vertex: 1 if on the boundary (Dirichlet), else 0.
  std::vector<char> boundary;

  int vertices_per_cell() const { return element == Element::p1 ? 3 : 4; }
  std::int64_t n_vertices() const { return static_cast<std::int64_t>(vertices.size()); }
  std::int64_t n_cells() const { return static_cast<std::int64_t>(cells.size()); }
  std::int64_t n_interior_vertices() const;
};

/// The unique edges of a mesh. Local edge k of a cell joins its vertices k and k+1 (cyclically).
struct EdgeTable {
  std::vector<std::array<std::int32_t, 2>> vertices;  ///< per edge: (lower, higher) vertex index
  std::vector<std::int8_t> n_cells;                   ///< cells sharing the edge: 1 boundary, 2 interior
  std::vector<std::int32_t> cell_edges;               ///< per cell, vertices_per_cell() edge indices
  std::int64_t size() const { return static_cast<std::int64_t>(vertices.size()); }
};
EdgeTable build_edges(const Mesh2D& mesh);

/// The coarsest mesh (level 0) of `kind`, with boundary flags.
Mesh2D make_coarse_mesh(MeshKind kind);

/// Parents of the vertices one refinement adds: vertex first_new_vertex + t has parents[t]
/// (2 entries for an edge midpoint, 4 for a Q1 cell center, -1 for unused entries).
struct RefinementStep {
  std::int32_t first_new_vertex = 0;
  std::vector<std::array<std::int32_t, 4>> parents;
};

/// One uniform refinement (P1: red refinement by edge midpoints; Q1: edge midpoints and cell
/// centers). Children of cell c are cells 4c .. 4c+3. Fills `step` when not null.
Mesh2D refine(const Mesh2D& mesh, RefinementStep* step = nullptr);

/// Counts of a mesh refined `level` times, from the coarse mesh's counts alone (no allocation).
struct MeshCounts {
  int level = 0;
  std::int64_t n_vertices = 0, n_interior_vertices = 0, n_cells = 0, n_edges = 0, n_boundary_edges = 0;
};
MeshCounts counts_at_level(const Mesh2D& coarse, int level);

}  // namespace tcfem::direct
