#include "multigrid/level_hierarchy.h"

#include <algorithm>

#include "core/error.h"

namespace tcfem::multigrid {

namespace {
template <int dim>
std::vector<std::array<int, dim>> level_sizes(const std::array<int, dim>& fine_cells, int max_levels) {
  std::vector<std::array<int, dim>> sizes{fine_cells};
  auto even = [](const std::array<int, dim>& n) {
    return std::all_of(n.begin(), n.end(), [](int v) { return v >= 2 && v % 2 == 0; });
  };
  while (even(sizes.back()) && (max_levels <= 0 || static_cast<int>(sizes.size()) < max_levels)) {
    auto n = sizes.back();
    for (auto& v : n) v /= 2;
    sizes.push_back(n);
  }
  std::reverse(sizes.begin(), sizes.end());
  return sizes;
}
}  // namespace

template <int dim>
std::array<int, dim> LevelHierarchy<dim>::coarsest_cells(const std::array<int, dim>& fine_cells, int max_levels) {
  return level_sizes<dim>(fine_cells, max_levels).front();
}

template <int dim>
LevelHierarchy<dim>::LevelHierarchy(const std::array<int, dim>& fine_cells, mesh::GeometryKind geometry,
                                    fe::Disc disc, int degree, int max_levels)
    : LevelHierarchy(mesh::BoxMesh<dim>(fine_cells, geometry), fe::all_dirichlet<dim>(), disc, degree, max_levels) {}

template <int dim>
LevelHierarchy<dim>::LevelHierarchy(const mesh::BoxMesh<dim>& fine, const fe::DirichletFaces<dim>& dirichlet,
                                    fe::Disc disc, int degree, int max_levels)
    : disc_(disc), degree_(degree) {
  for (const auto& n : level_sizes<dim>(fine.n_cells(), max_levels)) {
    meshes_.push_back(std::make_unique<mesh::BoxMesh<dim>>(n, fine.domain()));
    dofs_.push_back(std::make_unique<fe::DofLayout<dim>>(*meshes_.back(), disc, degree, dirichlet));
  }
}

template class LevelHierarchy<2>;
template class LevelHierarchy<3>;

}  // namespace tcfem::multigrid
