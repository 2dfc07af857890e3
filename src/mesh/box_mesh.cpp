#include "mesh/box_mesh.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>

#include "core/error.h"

namespace tcfem::mesh {

const char* to_string(GeometryKind g) {
  switch (g) {
    case GeometryKind::cartesian: return "cartesian";
    case GeometryKind::deformed: return "deformed";
    case GeometryKind::mapped: return "mapped";
  }
  return "?";
}

template <int dim>
Domain<dim> Domain<dim>::unit(GeometryKind kind) {
  if (kind == GeometryKind::mapped) throw InputError("a mapped domain needs a map (Domain::box)");
  Domain d;
  d.lower.fill(0.0);
  d.upper.fill(1.0);
  d.kind = kind;
  return d;
}

template <int dim>
Domain<dim> Domain<dim>::box(const Point<dim>& lower, const Point<dim>& upper,
                             std::function<Point<dim>(const Point<dim>&)> map) {
  Domain d;
  d.lower = lower;
  d.upper = upper;
  d.kind = map ? GeometryKind::mapped : GeometryKind::cartesian;
  d.map = std::move(map);
  return d;
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
    p.process_grid[d] = 1;
  }
  p.rank_owned = {owned};
  return p;
}

std::array<int, 2> split_range(int n, int parts, int i) {
  const int base = n / parts, extra = n % parts;
  const int begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

template <int dim>
std::array<int, dim> choose_process_grid(const std::array<int, dim>& global_cells, int n_ranks) {
  if (n_ranks < 1) throw InputError("a partition needs at least one rank");
  std::array<int, dim> best{};
  double best_cost = -1.0;
  std::array<int, dim> p{};
  // every factorization n_ranks = p_0 ... p_{dim-1} with p_d <= cells_d
  auto visit = [&](auto&& self, int d, int rest) -> void {
    if (d == dim - 1) {
      if (rest > global_cells[d]) return;
      p[d] = rest;
      double cost = 0.0;  // cell faces on the cut planes
      for (int e = 0; e < dim; ++e) {
        double plane = 1.0;
        for (int f = 0; f < dim; ++f)
          if (f != e) plane *= global_cells[f];
        cost += double(p[e] - 1) * plane;
      }
      // equal costs: the grid with more ranks along the later directions (the slowest index of the
      // lexicographic cell order: contiguous slabs)
      auto later_heavier = [&] {
        for (int e = dim - 1; e >= 0; --e)
          if (p[e] != best[e]) return p[e] > best[e];
        return false;
      };
      if (best_cost < 0.0 || cost < best_cost || (cost == best_cost && later_heavier())) {
        best_cost = cost;
        best = p;
      }
      return;
    }
    for (int q = 1; q <= std::min(rest, global_cells[d]); ++q)
      if (rest % q == 0) {
        p[d] = q;
        self(self, d + 1, rest / q);
      }
  };
  visit(visit, 0, n_ranks);
  if (best_cost < 0.0) {
    std::string cells;
    for (int d = 0; d < dim; ++d) cells += (d ? " x " : "") + std::to_string(global_cells[d]);
    throw InputError(std::to_string(n_ranks) + " ranks: a mesh of " + cells +
                     " cells cannot be split into that many sub-boxes of at least one cell each (the ranks per "
                     "direction multiply to the rank count and none exceeds its direction's cells); use fewer ranks "
                     "or more cells");
  }
  return best;
}

template <int dim>
Partition<dim> Partition<dim>::distributed(const std::array<int, dim>& global_cells, const Communicator& comm,
                                           int ghost_width, int alignment) {
  if (alignment < 1) throw InputError("a partition's alignment must be at least one cell");
  std::array<int, dim> blocks;
  for (int d = 0; d < dim; ++d) {
    if (global_cells[d] < 1) throw InputError("a mesh needs at least one cell per direction");
    if (global_cells[d] % alignment != 0)
      throw InputError("a partition aligned to " + std::to_string(alignment) + " cells needs every direction's "
                       "cell count to be a multiple of it (" + std::to_string(global_cells[d]) + " is not)");
    blocks[d] = global_cells[d] / alignment;
  }
  const auto grid = choose_process_grid<dim>(blocks, comm.size());
  std::vector<CellBox<dim>> boxes(std::size_t(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    int rest = r;
    for (int d = 0; d < dim; ++d) {
      const int pd = rest % grid[d];
      rest /= grid[d];
      const auto range = split_range(blocks[d], grid[d], pd);
      boxes[std::size_t(r)].begin[d] = range[0] * alignment;
      boxes[std::size_t(r)].end[d] = range[1] * alignment;
    }
  }
  Partition p = sub_box(global_cells, boxes[std::size_t(comm.rank())], ghost_width);
  p.comm = comm;
  p.process_grid = grid;
  p.rank_owned = std::move(boxes);
  return p;
}

template <int dim>
bool Partition<dim>::coarsenable() const {
  for (int d = 0; d < dim; ++d)
    if (global_cells[d] % 2 != 0) return false;
  for (const auto& box : rank_owned)
    for (int d = 0; d < dim; ++d)
      if (box.begin[d] % 2 != 0 || box.end[d] % 2 != 0) return false;
  return true;
}

template <int dim>
Partition<dim> Partition<dim>::coarsened() const {
  TCFEM_ASSERT(coarsenable(), "a partition with odd sub-box bounds does not coarsen");
  std::array<int, dim> cells;
  for (int d = 0; d < dim; ++d) cells[d] = global_cells[d] / 2;
  std::vector<CellBox<dim>> boxes = rank_owned;
  for (auto& box : boxes)
    for (int d = 0; d < dim; ++d) {
      box.begin[d] /= 2;
      box.end[d] /= 2;
    }
  Partition p = sub_box(cells, boxes[std::size_t(comm.rank())], ghost_width);
  p.comm = comm;
  p.process_grid = process_grid;
  p.rank_owned = std::move(boxes);
  return p;
}

template <int dim>
std::vector<int> Partition<dim>::ranks_touching(const CellBox<dim>& box) const {
  std::vector<int> out;
  for (std::size_t r = 0; r < rank_owned.size(); ++r) {
    bool overlap = true;
    for (int d = 0; d < dim; ++d)
      overlap = overlap && std::max(box.begin[d], rank_owned[r].begin[d]) < std::min(box.end[d], rank_owned[r].end[d]);
    if (overlap) out.push_back(int(r));
  }
  return out;
}

template <int dim>
BoxMesh<dim>::BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry)
    : BoxMesh(n_cells, Domain<dim>::unit(geometry), Partition<dim>::serial(n_cells)) {}

template <int dim>
BoxMesh<dim>::BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry,
                      const Partition<dim>& partition)
    : BoxMesh(n_cells, Domain<dim>::unit(geometry), partition) {}

template <int dim>
BoxMesh<dim>::BoxMesh(const std::array<int, dim>& n_cells, const Domain<dim>& domain)
    : BoxMesh(n_cells, domain, Partition<dim>::serial(n_cells)) {}

template <int dim>
BoxMesh<dim>::BoxMesh(const std::array<int, dim>& n_cells, const Domain<dim>& domain,
                      const Partition<dim>& partition)
    : partition_(partition), domain_(domain) {
  for (int d = 0; d < dim; ++d)
    if (n_cells[d] < 1) throw InputError("a mesh needs at least one cell per direction");
  if (partition_.global_cells != n_cells) throw InputError("partition does not match the mesh size");
  for (int d = 0; d < dim; ++d)
    if (!(domain_.upper[d] > domain_.lower[d]))
      throw InputError("the box needs lower < upper in every direction (direction " + std::to_string(d) + ")");
  if (domain_.kind == GeometryKind::deformed)
    for (int d = 0; d < dim; ++d)
      if (domain_.lower[d] != 0.0 || domain_.upper[d] != 1.0)
        throw InputError("the built-in deformation is defined on the unit box");
  if (domain_.kind == GeometryKind::mapped && !domain_.map) throw InputError("a mapped domain needs a map");
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
  for (int d = 0; d < dim; ++d) h[d] = (domain_.upper[d] - domain_.lower[d]) / n_cells()[d];
  return h;
}

template <int dim>
Point<dim> BoxMesh<dim>::parameter_point(const Point<dim>& cell_coordinates) const {
  const auto h = cell_size();
  Point<dim> X;
  for (int d = 0; d < dim; ++d) X[d] = domain_.lower[d] + cell_coordinates[d] * h[d];
  return X;
}

template <int dim>
std::array<int, dim> BoxMesh<dim>::cell_index(std::size_t cell) const {
  return partition_.owned.cell(cell);
}

template <int dim>
std::size_t BoxMesh<dim>::cell_number(const std::array<int, dim>& c) const {
  return partition_.owned.number(c);
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
  if (domain_.kind == GeometryKind::cartesian) return x;
  if (domain_.kind == GeometryKind::mapped) return domain_.map(x);
  double phi = 1.0;
  for (int d = 0; d < dim; ++d) phi *= std::sin(std::numbers::pi * x[d]);
  const auto eps = deformation_amplitudes();
  Point<dim> y;
  for (int d = 0; d < dim; ++d) y[d] = x[d] + eps[d] * phi;
  return y;
}

template <int dim>
BoxMesh<dim> ghosted_box_mesh(const BoxMesh<dim>& mesh) {
  const auto& g = mesh.partition().ghosted;
  const auto h = mesh.cell_size();
  const auto& outer = mesh.domain();
  Point<dim> lower, upper;
  std::array<int, dim> cells;
  for (int d = 0; d < dim; ++d) {
    lower[d] = outer.lower[d] + g.begin[d] * h[d];
    upper[d] = g.end[d] == mesh.n_cells()[d] ? outer.upper[d] : outer.lower[d] + g.end[d] * h[d];
    cells[d] = g.extent(d);
  }
  Domain<dim> domain;
  switch (outer.kind) {
    case GeometryKind::cartesian: domain = Domain<dim>::box(lower, upper); break;
    case GeometryKind::mapped:
      domain = Domain<dim>::box(lower, upper, outer.map);
      domain.map_source = outer.map_source;
      break;
    case GeometryKind::deformed: {
      const auto eps = BoxMesh<dim>::deformation_amplitudes();
      domain = Domain<dim>::box(lower, upper, [eps](const Point<dim>& x) {
        double phi = 1.0;
        for (int d = 0; d < dim; ++d) phi *= std::sin(std::numbers::pi * x[d]);
        Point<dim> y;
        for (int d = 0; d < dim; ++d) y[d] = x[d] + eps[d] * phi;
        return y;
      });
      std::string phi;
      for (int d = 0; d < dim; ++d) phi += (d ? " * " : "") + std::string("sin(3.141592653589793 * x[") + std::to_string(d) + "])";
      for (int d = 0; d < dim; ++d) {
        char text[64];
        std::snprintf(text, sizeof text, "x[%d] + %.17g * ", d, eps[d]);
        domain.map_source[d].expression = text + phi;
      }
      break;
    }
  }
  return BoxMesh<dim>(cells, domain);
}

template struct Domain<2>;
template struct Domain<3>;
template struct Partition<2>;
template struct Partition<3>;
template std::array<int, 2> choose_process_grid<2>(const std::array<int, 2>&, int);
template std::array<int, 3> choose_process_grid<3>(const std::array<int, 3>&, int);
template class BoxMesh<2>;
template class BoxMesh<3>;
template BoxMesh<2> ghosted_box_mesh<2>(const BoxMesh<2>&);
template BoxMesh<3> ghosted_box_mesh<3>(const BoxMesh<3>&);

}  // namespace tcfem::mesh
