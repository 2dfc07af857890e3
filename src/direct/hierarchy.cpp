#include "direct/hierarchy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "core/error.h"

namespace tcfem::direct {

MeshHierarchy build_hierarchy(MeshKind kind, int level, int coarse_level) {
  if (level < 0)
    throw InputError("--level: value " + std::to_string(level) + " is not allowed; allowed: integers >= 0");
  if (coarse_level < 0 || coarse_level > level)
    throw InputError("--coarse-level: value " + std::to_string(coarse_level) +
                     " is not allowed; allowed: integers 0..L (the fine level, here " + std::to_string(level) + ")");
  MeshHierarchy h;
  h.kind = kind;
  h.level = level;
  h.coarse_level = coarse_level;
  h.macro = make_coarse_mesh(kind);
  for (int l = 0; l < coarse_level; ++l) h.macro = refine(h.macro);
  h.fine = h.macro;
  h.steps.resize(static_cast<std::size_t>(level - coarse_level));
  for (auto& step : h.steps) h.fine = refine(h.fine, &step);
  return h;
}

namespace {

double cot_at(const Point2& v, const Point2& p, const Point2& q) {
  const double ux = p.x - v.x, uy = p.y - v.y, wx = q.x - v.x, wy = q.y - v.y;
  return (ux * wx + uy * wy) / std::abs(ux * wy - uy * wx);
}

long long key_of(double x) { return std::llround(x * 1e9); }

/// Canonical vertex order of a macro cell (original local indices) and its shape key.
struct Frame {
  std::array<int, 4> canon{};
  std::array<long long, 3> key{};
  std::array<double, 3> shape{};
};

Frame frame_of(const Mesh2D& macro, std::int64_t c) {
  Frame f;
  const auto& cell = macro.cells[c];
  if (macro.element == Element::p1) {
    std::array<int, 3> perm = {0, 1, 2};
    bool first = true;
    do {
      std::array<double, 3> cots;
      for (int k = 0; k < 3; ++k)
        cots[k] = cot_at(macro.vertices[cell[perm[k]]], macro.vertices[cell[perm[(k + 1) % 3]]],
                         macro.vertices[cell[perm[(k + 2) % 3]]]);
      const std::array<long long, 3> key = {key_of(cots[0]), key_of(cots[1]), key_of(cots[2])};
      if (first || key < f.key) {
        f.key = key;
        f.shape = cots;
        f.canon = {perm[0], perm[1], perm[2], -1};
        first = false;
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
    return f;
  }
  const auto& p = macro.vertices;
  auto sub = [](const Point2& a, const Point2& b) { return Point2{a.x - b.x, a.y - b.y}; };
  const Point2 e01 = sub(p[cell[1]], p[cell[0]]), e32 = sub(p[cell[2]], p[cell[3]]);
  const Point2 e03 = sub(p[cell[3]], p[cell[0]]);
  const double l1 = std::hypot(e01.x, e01.y), l2 = std::hypot(e03.x, e03.y);
  const bool parallelogram = std::abs(e01.x - e32.x) + std::abs(e01.y - e32.y) <= 1e-12 * (l1 + l2);
  const bool right_angle = std::abs(e01.x * e03.x + e01.y * e03.y) <= 1e-12 * l1 * l2;
  if (!parallelogram || !right_angle)
    throw InputError("--mesh: the direct solver needs rectangular Q1 macro cells (seed 003, eq. 3)");
  const int r = l1 >= l2 * (1 - 1e-12) ? 0 : 1;  // start where the first side is the longer one
  f.canon = {r, (r + 1) % 4, (r + 2) % 4, (r + 3) % 4};
  const double ratio = r == 0 ? l1 / l2 : l2 / l1;
  f.key = {key_of(ratio), 0, 0};
  f.shape = {ratio, 0, 0};
  return f;
}

/// A lattice point (i, j) of a macro cell on its local edge from canonical vertex `from` to `to`,
/// `position` steps from `from`; from = -1 for points inside the cell.
struct MacroEdgePoint {
  int from = -1, to = -1, position = 0;
};

MacroEdgePoint triangle_edge_point(int i, int j, int m) {
  if (j == 0) return {0, 1, i};
  if (i == 0) return {0, 2, j};
  if (i + j == m) return {1, 2, j};
  return {};
}

MacroEdgePoint rectangle_edge_point(int i, int j, int m) {
  if (j == 0) return {0, 1, i};
  if (i == m) return {1, 2, j};
  if (j == m) return {3, 2, i};
  if (i == 0) return {0, 3, j};
  return {};
}

/// Nested dissection of `vertices` in the graph of `mesh` (vertices sharing a cell): split at the
/// median of the longer coordinate extent; the vertices of the lower half with a neighbour in the
/// upper half separate the halves and come after both (each half ordered recursively). Ordering
/// the coarse block this way keeps the columns of L_C^{-1}, hence B, sparse.
std::vector<std::int32_t> nested_dissection(const Mesh2D& mesh, const std::vector<std::int32_t>& vertices) {
  std::vector<std::vector<std::int32_t>> neighbours(static_cast<std::size_t>(mesh.n_vertices()));
  const int per_cell = mesh.vertices_per_cell();
  for (const auto& cell : mesh.cells)
    for (int a = 0; a < per_cell; ++a)
      for (int b = 0; b < per_cell; ++b)
        if (a != b) neighbours[cell[a]].push_back(cell[b]);
  std::vector<std::int8_t> in_upper(static_cast<std::size_t>(mesh.n_vertices()), 0);
  std::vector<std::int32_t> order;
  order.reserve(vertices.size());
  std::function<void(std::vector<std::int32_t>)> dissect = [&](std::vector<std::int32_t> set) {
    if (set.size() <= 8) {
      order.insert(order.end(), set.begin(), set.end());
      return;
    }
    double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300};
    for (const auto v : set) {
      const double p[2] = {mesh.vertices[v].x, mesh.vertices[v].y};
      for (int d = 0; d < 2; ++d) {
        lo[d] = std::min(lo[d], p[d]);
        hi[d] = std::max(hi[d], p[d]);
      }
    }
    const bool by_x = hi[0] - lo[0] >= hi[1] - lo[1];
    auto coord = [&](std::int32_t v) { return by_x ? mesh.vertices[v].x : mesh.vertices[v].y; };
    std::sort(set.begin(), set.end(),
              [&](std::int32_t a, std::int32_t b) { return coord(a) < coord(b) || (coord(a) == coord(b) && a < b); });
    const std::size_t half = set.size() / 2;
    for (std::size_t k = half; k < set.size(); ++k) in_upper[set[k]] = 1;
    std::vector<std::int32_t> lower, separator;
    for (std::size_t k = 0; k < half; ++k) {
      const bool touches = std::any_of(neighbours[set[k]].begin(), neighbours[set[k]].end(),
                                       [&](std::int32_t w) { return in_upper[w] != 0; });
      (touches ? separator : lower).push_back(set[k]);
    }
    for (std::size_t k = half; k < set.size(); ++k) in_upper[set[k]] = 0;
    dissect(std::move(lower));
    dissect(std::vector<std::int32_t>(set.begin() + static_cast<std::ptrdiff_t>(half), set.end()));
    order.insert(order.end(), separator.begin(), separator.end());
  };
  dissect(vertices);
  return order;
}

}  // namespace

std::string describe_shape(const MacroClass& cls, Element element) {
  const auto& s = cls.shape;
  if (element == Element::q1) {
    if (std::abs(s[0] - 1.0) < 1e-9) return "square";
    char b[48];
    std::snprintf(b, sizeof b, "rectangle %.3g:1", s[0]);
    return b;
  }
  const double tol = 1e-9;
  int equal_pairs = 0;
  bool right = false, obtuse = false;
  for (int k = 0; k < 3; ++k) {
    if (std::abs(s[k] - s[(k + 1) % 3]) < tol) ++equal_pairs;
    right = right || std::abs(s[k]) < tol;
    obtuse = obtuse || s[k] < -tol;
  }
  const std::string sides = equal_pairs == 3 ? "equilateral" : equal_pairs == 1 ? "isosceles" : "scalene";
  return sides + (right ? " right" : obtuse ? " obtuse" : " acute") + " triangle";
}

std::int64_t count_macro_classes(const Mesh2D& mesh) {
  std::map<std::array<long long, 3>, int> keys;
  for (std::int64_t c = 0; c < mesh.n_cells(); ++c) keys.emplace(frame_of(mesh, c).key, 0);
  return static_cast<std::int64_t>(keys.size());
}

NodeClasses classify_nodes(const MeshHierarchy& h, const DofMap& dofs) {
  const Mesh2D& macro = h.macro;
  const Mesh2D& fine = h.fine;
  const int nv = macro.vertices_per_cell();
  const bool p1 = macro.element == Element::p1;
  const int m = 1 << (h.level - h.coarse_level);
  const EdgeTable edges = build_edges(macro);

  NodeClasses nc;
  nc.subdivisions = m;
  nc.nodes_per_cell = p1 ? std::int64_t(m - 1) * (m - 2) / 2 : std::int64_t(m - 1) * (m - 1);

  // classes of similar macro cells, in order of first appearance
  std::vector<Frame> frames(static_cast<std::size_t>(macro.n_cells()));
  std::map<std::array<long long, 3>, int> class_of_key;
  nc.cell_class.resize(frames.size());
  nc.cell_position.resize(frames.size());
  for (std::int64_t c = 0; c < macro.n_cells(); ++c) {
    frames[c] = frame_of(macro, c);
    auto [it, inserted] = class_of_key.emplace(frames[c].key, static_cast<int>(nc.classes.size()));
    if (inserted) {
      nc.classes.emplace_back();
      nc.classes.back().shape = frames[c].shape;
    }
    auto& cls = nc.classes[it->second];
    nc.cell_class[c] = it->second;
    nc.cell_position[c] = static_cast<std::int32_t>(cls.cells.size());
    cls.cells.push_back(static_cast<std::int32_t>(c));
  }
  for (auto& cls : nc.classes) {
    cls.first_interior = nc.n_interior;
    nc.n_interior += static_cast<std::int64_t>(cls.cells.size()) * nc.nodes_per_cell;
  }

  // E numbering: interior macro edges in edge order, m - 1 nodes each
  std::vector<std::int64_t> edge_offset(static_cast<std::size_t>(edges.size()), -1);
  for (std::int64_t e = 0; e < edges.size(); ++e)
    if (edges.n_cells[e] == 2) {
      edge_offset[e] = nc.n_edge;
      nc.n_edge += m - 1;
    }
  nc.cell_edge_ptr.assign(static_cast<std::size_t>(macro.n_cells() + 1), 0);
  for (std::int64_t c = 0; c < macro.n_cells(); ++c) {
    for (int k = 0; k < nv; ++k) {
      const auto e = edges.cell_edges[c * nv + k];
      if (edge_offset[e] < 0) continue;
      for (int t = 0; t < m - 1; ++t) nc.cell_edge_nodes.push_back(static_cast<std::int32_t>(edge_offset[e] + t));
    }
    nc.cell_edge_ptr[c + 1] = static_cast<std::int64_t>(nc.cell_edge_nodes.size());
  }

  // row offsets of the triangular lattice of interior points (i, j >= 1, i + j <= m - 1)
  std::vector<std::int64_t> row_offset(static_cast<std::size_t>(m + 1), 0);
  for (int j = 1; j < m; ++j) row_offset[j + 1] = row_offset[j] + std::max(0, m - 1 - j);

  const std::int64_t n_macro_vertices = macro.n_vertices();
  nc.kind.assign(static_cast<std::size_t>(dofs.n_dofs()), NodeKind::coarse);
  nc.index.assign(static_cast<std::size_t>(dofs.n_dofs()), -1);
  // C: the interior macro vertices, in nested-dissection order (keeps B = L_C^{-1} A~_CE sparse)
  std::vector<std::int32_t> coarse_vertices;
  for (std::int64_t v = 0; v < n_macro_vertices; ++v)
    if (dofs.dof_of_vertex[v] >= 0) coarse_vertices.push_back(static_cast<std::int32_t>(v));
  const auto coarse_order = nested_dissection(macro, coarse_vertices);
  for (std::size_t k = 0; k < coarse_order.size(); ++k)
    nc.index[dofs.dof_of_vertex[coarse_order[k]]] = static_cast<std::int32_t>(k);
  nc.n_coarse = static_cast<std::int64_t>(coarse_order.size());

  const std::int64_t fine_per_macro = std::int64_t(1) << (2 * (h.level - h.coarse_level));
  for (std::int64_t f = 0; f < fine.n_cells(); ++f) {
    const std::int64_t c = f / fine_per_macro;
    const Frame& fr = frames[c];
    const auto& mc = macro.cells[c];
    const Point2 c0 = macro.vertices[mc[fr.canon[0]]];
    const Point2 c1 = macro.vertices[mc[fr.canon[1]]];
    const Point2 c2 = macro.vertices[mc[fr.canon[p1 ? 2 : 3]]];
    const double e1x = c1.x - c0.x, e1y = c1.y - c0.y, e2x = c2.x - c0.x, e2y = c2.y - c0.y;
    const double det = e1x * e2y - e1y * e2x;
    for (int a = 0; a < nv; ++a) {
      const auto v = fine.cells[f][a];
      const auto dof = dofs.dof_of_vertex[v];
      if (dof < 0 || nc.index[dof] >= 0) continue;
      const Point2 p = fine.vertices[v];
      const double s = ((p.x - c0.x) * e2y - (p.y - c0.y) * e2x) / det;
      const double t = (e1x * (p.y - c0.y) - e1y * (p.x - c0.x)) / det;
      const int i = static_cast<int>(std::lround(s * m)), j = static_cast<int>(std::lround(t * m));
      const MacroEdgePoint on_edge = p1 ? triangle_edge_point(i, j, m) : rectangle_edge_point(i, j, m);
      const int va = on_edge.from, vb = on_edge.to, pos = on_edge.position;
      if (va < 0) {
        const std::int64_t local = p1 ? row_offset[j] + (i - 1) : std::int64_t(j - 1) * (m - 1) + (i - 1);
        const auto& cls = nc.classes[nc.cell_class[c]];
        nc.kind[dof] = NodeKind::interior;
        nc.index[dof] = static_cast<std::int32_t>(cls.first_interior + nc.cell_position[c] * nc.nodes_per_cell + local);
        continue;
      }
      TCFEM_ASSERT(pos > 0 && pos < m, "classify_nodes: a macro vertex was not classified as coarse");
      const int oa = fr.canon[va], ob = fr.canon[vb];
      int k = 0;
      for (; k < nv; ++k)
        if ((k == oa && (k + 1) % nv == ob) || (k == ob && (k + 1) % nv == oa)) break;
      TCFEM_ASSERT(k < nv, "classify_nodes: canonical vertices do not form an edge");
      const auto e = edges.cell_edges[c * nv + k];
      TCFEM_ASSERT(edge_offset[e] >= 0, "classify_nodes: interior node on a boundary macro edge");
      const int pos_global = mc[oa] == edges.vertices[e][0] ? pos : m - pos;
      nc.kind[dof] = NodeKind::edge;
      nc.index[dof] = static_cast<std::int32_t>(edge_offset[e] + pos_global - 1);
    }
  }
  std::int64_t counted[3] = {0, 0, 0};
  for (std::int64_t d = 0; d < dofs.n_dofs(); ++d) {
    TCFEM_ASSERT(nc.index[d] >= 0, "classify_nodes: a dof was not classified");
    ++counted[static_cast<int>(nc.kind[d])];
  }
  TCFEM_ASSERT(counted[0] == nc.n_coarse && counted[1] == nc.n_edge && counted[2] == nc.n_interior,
               "classify_nodes: class sizes disagree with the counts");
  return nc;
}

}  // namespace tcfem::direct
