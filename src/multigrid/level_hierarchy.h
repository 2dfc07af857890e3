#pragma once
// The levels of geometric multigrid: the fine box mesh and its coarsenings by halving the number
// of cells per direction (uniform refinement read backwards), each with its DoF layout. Every level
// carries the domain of the fine mesh: mapped and deformed boxes apply their map on every level
// (the coarse cells are the images of the coarse parameter cells, not unions of fine curved cells).
//
// Distributed fine mesh: the levels keep the fine partition, halved, while every rank's sub-box
// halves into whole cells and keeps at least min_cells_per_rank cells per direction (at most down
// to level 1). The coarsest such level D is gathered: the levels below it are meshes of one
// process stored on rank 0 alone, which also stores level D as a mesh of one process (the
// gather's target). So every level's smoother and transfer are those of one process below D, and
// the coarse solver runs on rank 0.
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
  /// A distributed fine mesh needs at least two levels (InputError otherwise).
  LevelHierarchy(const mesh::BoxMesh<dim>& fine, const fe::DirichletFaces<dim>& dirichlet, fe::Disc disc,
                 int degree, int max_levels = 0);

  /// Cells per direction of the coarsest level the constructor would build.
  static std::array<int, dim> coarsest_cells(const std::array<int, dim>& fine_cells, int max_levels = 0);
  /// Levels the constructor would build.
  static int count_levels(const std::array<int, dim>& fine_cells, int max_levels = 0);

  /// A distributed level keeps at least this many cells per direction on every rank.
  static constexpr int min_cells_per_rank = 2;
  /// How many times the levels of a distributed fine mesh with this partition stay distributed
  /// below the finest level (0: the finest level is the gathered one).
  static int distributed_coarsenings(const mesh::Partition<dim>& fine, int n_levels);
  /// The alignment (mesh::Partition::distributed) for a fine mesh of `fine_cells` on `n_ranks`
  /// ranks that keeps the most levels distributed while no rank owns more than 1.15 times the
  /// cells of an even split (1 when no coarsening keeps the balance).
  static int partition_alignment(const std::array<int, dim>& fine_cells, int n_ranks, int max_levels = 0);

  int n_levels() const { return static_cast<int>(meshes_.size()); }
  int finest() const { return n_levels() - 1; }
  /// The coarsest level spread over the ranks (0 on one process: every level is).
  int gathered_level() const { return gathered_level_; }
  bool distributed() const { return gathered_mesh_ != nullptr || distributed_elsewhere_; }
  /// Whether this rank stores the level (every rank stores levels >= gathered_level(); rank 0
  /// stores all).
  bool stored(int level) const { return meshes_.at(level) != nullptr; }
  const mesh::BoxMesh<dim>& mesh(int level) const;
  const fe::DofLayout<dim>& dofs(int level) const;
  /// Rank 0 of a distributed hierarchy: the gathered level as a mesh of one process.
  const mesh::BoxMesh<dim>& gathered_mesh() const;
  const fe::DofLayout<dim>& gathered_dofs() const;
  fe::Disc disc() const { return disc_; }
  int degree() const { return degree_; }

 private:
  fe::Disc disc_;
  int degree_;
  int gathered_level_ = 0;
  bool distributed_elsewhere_ = false;  // a rank other than 0 of a distributed hierarchy
  std::vector<std::unique_ptr<mesh::BoxMesh<dim>>> meshes_;
  std::vector<std::unique_ptr<fe::DofLayout<dim>>> dofs_;
  std::unique_ptr<mesh::BoxMesh<dim>> gathered_mesh_;
  std::unique_ptr<fe::DofLayout<dim>> gathered_dofs_;
};

}  // namespace tcfem::multigrid
