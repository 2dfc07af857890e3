#pragma once
// The levels of geometric multigrid: the fine box mesh and its coarsenings by halving the number
// of cells per direction (uniform refinement read backwards), each with its DoF layout. Every level
// carries the domain of the fine mesh: mapped and deformed boxes apply their map on every level
// (the coarse cells are the images of the coarse parameter cells, not unions of fine curved cells).
#include <array>
#include <memory>
#include <vector>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"

namespace tcfem::multigrid {

template <int dim>
class LevelHierarchy {
 public:
  /// Levels from the fine mesh with `fine_cells` cells per direction down to the coarsest mesh
  /// reached by halving while every direction has an even number of cells (at most
  /// `max_levels` levels when positive). Level 0 is the coarsest.
  LevelHierarchy(const std::array<int, dim>& fine_cells, mesh::GeometryKind geometry, fe::Disc disc, int degree,
                 int max_levels = 0);
  /// The levels of a fine mesh: every level has its domain (box and map) and the Dirichlet faces.
  LevelHierarchy(const mesh::BoxMesh<dim>& fine, const fe::DirichletFaces<dim>& dirichlet, fe::Disc disc,
                 int degree, int max_levels = 0);

  /// Cells per direction of the coarsest level the constructor would build.
  static std::array<int, dim> coarsest_cells(const std::array<int, dim>& fine_cells, int max_levels = 0);

  int n_levels() const { return static_cast<int>(meshes_.size()); }
  int finest() const { return n_levels() - 1; }
  const mesh::BoxMesh<dim>& mesh(int level) const { return *meshes_.at(level); }
  const fe::DofLayout<dim>& dofs(int level) const { return *dofs_.at(level); }
  fe::Disc disc() const { return disc_; }
  int degree() const { return degree_; }

 private:
  fe::Disc disc_;
  int degree_;
  std::vector<std::unique_ptr<mesh::BoxMesh<dim>>> meshes_;
  std::vector<std::unique_ptr<fe::DofLayout<dim>>> dofs_;
};

}  // namespace tcfem::multigrid
