#pragma once
// The mesh hierarchy of the direct solver and its node classes. The coarse mesh is refined L0
// times to the macro mesh (the coarsest level of the hierarchical basis) and then L - L0 times to
// the fine mesh, recording the parents of every new vertex. The interior vertices of the fine mesh
// fall into three classes (seed 003, section 2): C, the interior vertices of the macro mesh (in
// nested-dissection order); E, the
// new vertices on interior macro edges; I, the new vertices inside macro cells, numbered class by
// class of similar macro cells, cell by cell, and within a cell by lattice position relative to the
// cell's canonical vertex order, so that similar cells give identical blocks.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "direct/mesh2d.h"
#include "direct/poisson2d.h"

namespace tcfem::direct {

struct MeshHierarchy {
  MeshKind kind = MeshKind::square_q1;
  int level = 0;                      ///< L: the fine level
  int coarse_level = 0;               ///< L0: the macro level
  Mesh2D macro;                       ///< level L0
  Mesh2D fine;                        ///< level L; fine cell f lies in macro cell f / 4^(L - L0)
  std::vector<RefinementStep> steps;  ///< steps[s]: level L0 + s to L0 + s + 1
};
/// Throws InputError naming --level / --coarse-level for levels out of range.
MeshHierarchy build_hierarchy(MeshKind kind, int level, int coarse_level);

enum class NodeKind : std::int8_t { coarse, edge, interior };

/// Similar macro cells: their interior blocks C_i are equal.
struct MacroClass {
  std::vector<std::int32_t> cells;  ///< macro cells of the class, ascending
  std::int64_t first_interior = 0;  ///< I index of the class's first node
  std::array<double, 3> shape{};    ///< P1: cotangents of the angles (canonical order); Q1: side ratio
};

struct NodeClasses {
  std::int64_t n_coarse = 0, n_edge = 0, n_interior = 0;
  int subdivisions = 1;             ///< m = 2^(L - L0): fine cells per macro edge
  std::int64_t nodes_per_cell = 0;  ///< interior nodes of one macro cell
  std::vector<NodeKind> kind;       ///< per dof of the fine mesh
  std::vector<std::int32_t> index;  ///< per dof: index within its class (C, E or I numbering)
  std::vector<MacroClass> classes;
  std::vector<std::int32_t> cell_class;     ///< per macro cell
  std::vector<std::int32_t> cell_position;  ///< per macro cell: position within its class
  /// E indices on the interior edges of each macro cell: cell c has
  /// cell_edge_nodes[cell_edge_ptr[c] .. cell_edge_ptr[c + 1]).
  std::vector<std::int64_t> cell_edge_ptr;
  std::vector<std::int32_t> cell_edge_nodes;
};
/// "isosceles right triangle", "scalene obtuse triangle", "square", "rectangle 2:1", ...
std::string describe_shape(const MacroClass& cls, Element element);

/// Number of classes of similar cells of a mesh (uniform refinement keeps it: children are similar
/// to their parents).
std::int64_t count_macro_classes(const Mesh2D& mesh);

/// Classifies the dofs of the fine mesh; throws InputError for macro cells the method does not
/// support (Q1 cells that are not rectangles).
NodeClasses classify_nodes(const MeshHierarchy& h, const DofMap& dofs);

}  // namespace tcfem::direct
