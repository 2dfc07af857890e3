#include "mesh/box_mesh.h"

#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"

namespace tcfem::mesh {

const char* to_string(GeometryKind g) {
  return g == GeometryKind::cartesian ? "cartesian" : "deformed";
}

template <int dim>
Partition<dim> Partition<dim>::serial(const std::array<int, dim>& global_cells) {
  CellBox<dim> all;
  for (int d = 0; d < dim; ++d) {
    all.begin[d] = 0;
    all.end[d] = global_cells[d];
  }
  return sub_box(global_cells, all, 1);
}

template <int dim>
Partition<dim> Partition<dim>::sub_box(const std::array<int, dim>& global_cells, const CellBox<dim>& owned,
                                       int ghost_width) {
  Partition p;
  p.global_cells = global_cells;
  p.owned = owned;
  p.ghost_width = ghost_width;
  for (int d = 0; d < dim; ++d) {
    if (global_cells[d] < 1) throw InputError("a mesh needs at least one cell per direction");
    if (owned.begin[d] < 0 || owned.end[d] > global_cells[d] || owned.begin[d] >= owned.end[d])
      throw InputError("owned cell box outside the mesh or empty");
    p.ghosted.begin[d] = std::max(0, owned.begin[d] - ghost_width);
    p.ghosted.end[d] = std::min(global_cells[d], owned.end[d] + ghost_width);
  }
  return p;
}

template <int dim>
BoxMesh<dim>::BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry)
    : BoxMesh(n_cells, geometry, Partition<dim>::serial(n_cells)) {}

template <int dim>
BoxMesh<dim>::BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry,
                      const Partition<dim>& partition)
    : partition_(partition), geometry_(geometry) {
  for (int d = 0; d < dim; ++d)
    if (n_cells[d] < 1) throw InputError("a mesh needs at least one cell per direction");
  if (partition_.global_cells != n_cells) throw InputError("partition does not match the mesh size");
}

template <int dim>
BoxMesh<dim> BoxMesh<dim>::refined(int level, GeometryKind geometry) {
  if (level < 0 || level > 30) throw InputError("refinement level must be in 0..30");
  std::array<int, dim> n;
  n.fill(1 << level);
  return BoxMesh(n, geometry);
}

template <int dim>
std::size_t BoxMesh<dim>::n_global_cells() const {
  std::size_t n = 1;
  for (int d = 0; d < dim; ++d) n *= static_cast<std::size_t>(n_cells()[d]);
  return n;
}

template <int dim>
Point<dim> BoxMesh<dim>::cell_size() const {
  Point<dim> h;
  for (int d = 0; d < dim; ++d) h[d] = 1.0 / n_cells()[d];
  return h;
}

template <int dim>
std::array<int, dim> BoxMesh<dim>::cell_index(std::size_t cell) const {
  std::array<int, dim> c;
  for (int d = 0; d < dim; ++d) {
    const auto e = static_cast<std::size_t>(partition_.owned.extent(d));
    c[d] = partition_.owned.begin[d] + static_cast<int>(cell % e);
    cell /= e;
  }
  return c;
}

template <int dim>
std::size_t BoxMesh<dim>::cell_number(const std::array<int, dim>& c) const {
  std::size_t n = 0;
  for (int d = dim - 1; d >= 0; --d)
    n = n * static_cast<std::size_t>(partition_.owned.extent(d)) +
        static_cast<std::size_t>(c[d] - partition_.owned.begin[d]);
  return n;
}

template <int dim>
Point<dim> BoxMesh<dim>::deformation_amplitudes() {
  if constexpr (dim == 2)
    return {0.12, -0.09};
  else
    return {0.12, -0.09, 0.07};
}

template <int dim>
Point<dim> BoxMesh<dim>::map(const Point<dim>& x) const {
  if (geometry_ == GeometryKind::cartesian) return x;
  double phi = 1.0;
  for (int d = 0; d < dim; ++d) phi *= std::sin(std::numbers::pi * x[d]);
  const auto eps = deformation_amplitudes();
  Point<dim> y;
  for (int d = 0; d < dim; ++d) y[d] = x[d] + eps[d] * phi;
  return y;
}

template struct Partition<2>;
template struct Partition<3>;
template class BoxMesh<2>;
template class BoxMesh<3>;

}  // namespace tcfem::mesh
