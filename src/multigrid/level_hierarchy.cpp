#include "multigrid/level_hierarchy.h"

#include <algorithm>
#include <string>

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
int LevelHierarchy<dim>::count_levels(const std::array<int, dim>& fine_cells, int max_levels) {
  return static_cast<int>(level_sizes<dim>(fine_cells, max_levels).size());
}

template <int dim>
int LevelHierarchy<dim>::distributed_coarsenings(const mesh::Partition<dim>& fine, int n_levels) {
  int m = 0;
  mesh::Partition<dim> p = fine;
  while (m < n_levels - 2 && p.coarsenable()) {  // level 0 stays on rank 0: at most n_levels - 2
    mesh::Partition<dim> c = p.coarsened();
    bool large = true;
    for (const auto& box : c.rank_owned)
      for (int d = 0; d < dim; ++d) large = large && box.extent(d) >= min_cells_per_rank;
    if (!large) break;
    p = std::move(c);
    ++m;
  }
  return m;
}

template <int dim>
int LevelHierarchy<dim>::partition_alignment(const std::array<int, dim>& fine_cells, int n_ranks, int max_levels) {
  const int n_levels = count_levels(fine_cells, max_levels);
  double total = 1.0;
  for (int d = 0; d < dim; ++d) total *= fine_cells[d];
  for (int m = n_levels - 2; m >= 1; --m) {
    const int a = 1 << m;
    std::array<int, dim> blocks;
    for (int d = 0; d < dim; ++d) blocks[d] = fine_cells[d] / a;
    std::array<int, dim> grid;
    try {
      grid = mesh::choose_process_grid<dim>(blocks, n_ranks);
    } catch (const InputError&) {
      continue;
    }
    bool ok = true;
    double largest = 1.0;
    for (int d = 0; d < dim; ++d) {
      ok = ok && blocks[d] / grid[d] >= min_cells_per_rank;  // the smallest part, in blocks
      largest *= double((blocks[d] + grid[d] - 1) / grid[d]) * a;
    }
    if (ok && largest <= 1.15 * total / n_ranks) return a;
  }
  return 1;
}

template <int dim>
const mesh::BoxMesh<dim>& LevelHierarchy<dim>::mesh(int level) const {
  TCFEM_ASSERT(stored(level), "a multigrid level stored on another rank");
  return *meshes_[level];
}

template <int dim>
const fe::DofLayout<dim>& LevelHierarchy<dim>::dofs(int level) const {
  TCFEM_ASSERT(stored(level), "a multigrid level stored on another rank");
  return *dofs_[level];
}

template <int dim>
const mesh::BoxMesh<dim>& LevelHierarchy<dim>::gathered_mesh() const {
  TCFEM_ASSERT(gathered_mesh_, "the gathered level is stored on rank 0 of a distributed hierarchy");
  return *gathered_mesh_;
}

template <int dim>
const fe::DofLayout<dim>& LevelHierarchy<dim>::gathered_dofs() const {
  TCFEM_ASSERT(gathered_dofs_, "the gathered level is stored on rank 0 of a distributed hierarchy");
  return *gathered_dofs_;
}

template <int dim>
LevelHierarchy<dim>::LevelHierarchy(const std::array<int, dim>& fine_cells, mesh::GeometryKind geometry,
                                    fe::Disc disc, int degree, int max_levels)
    : LevelHierarchy(mesh::BoxMesh<dim>(fine_cells, geometry), fe::all_dirichlet<dim>(), disc, degree, max_levels) {}

template <int dim>
LevelHierarchy<dim>::LevelHierarchy(const mesh::BoxMesh<dim>& fine, const fe::DirichletFaces<dim>& dirichlet,
                                    fe::Disc disc, int degree, int max_levels)
    : disc_(disc), degree_(degree) {
  const auto sizes = level_sizes<dim>(fine.n_cells(), max_levels);
  const int n_levels = static_cast<int>(sizes.size());
  const auto& part = fine.partition();
  if (!part.is_distributed()) {
    for (const auto& n : sizes) {
      meshes_.push_back(std::make_unique<mesh::BoxMesh<dim>>(n, fine.domain()));
      dofs_.push_back(std::make_unique<fe::DofLayout<dim>>(*meshes_.back(), disc, degree, dirichlet));
    }
    return;
  }
  if (n_levels < 2) {
    std::string cells;
    for (int d = 0; d < dim; ++d) cells += (d ? " x " : "") + std::to_string(fine.n_cells()[d]);
    throw InputError("multigrid on " + std::to_string(part.comm.size()) + " ranks needs at least two levels, but a "
                     "mesh of " + cells + " cells does not coarsen (every direction's count must be even); use an "
                     "even number of cells per direction, or one rank");
  }
  const int m = distributed_coarsenings(part, n_levels);
  gathered_level_ = n_levels - 1 - m;
  const bool root = part.comm.rank() == 0;
  distributed_elsewhere_ = !root;
  meshes_.resize(std::size_t(n_levels));
  dofs_.resize(std::size_t(n_levels));
  mesh::Partition<dim> p = part;
  for (int l = n_levels - 1; l >= gathered_level_; --l) {
    if (l < n_levels - 1) p = p.coarsened();
    meshes_[l] = std::make_unique<mesh::BoxMesh<dim>>(sizes[l], fine.domain(), p);
    dofs_[l] = std::make_unique<fe::DofLayout<dim>>(*meshes_[l], disc, degree, dirichlet);
  }
  if (!root) return;
  for (int l = 0; l < gathered_level_; ++l) {
    meshes_[l] = std::make_unique<mesh::BoxMesh<dim>>(sizes[l], fine.domain());
    dofs_[l] = std::make_unique<fe::DofLayout<dim>>(*meshes_[l], disc, degree, dirichlet);
  }
  gathered_mesh_ = std::make_unique<mesh::BoxMesh<dim>>(sizes[gathered_level_], fine.domain());
  gathered_dofs_ = std::make_unique<fe::DofLayout<dim>>(*gathered_mesh_, disc, degree, dirichlet);
}

template class LevelHierarchy<2>;
template class LevelHierarchy<3>;

}  // namespace tcfem::multigrid
