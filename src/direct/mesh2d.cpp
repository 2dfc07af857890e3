#include "direct/mesh2d.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tcfem::direct {

const char* to_string(MeshKind kind) {
  switch (kind) {
    case MeshKind::square_q1:
      return "square-q1";
    case MeshKind::square_p1:
      return "square-p1";
    case MeshKind::flow_square:
      return "flow-square";
  }
  return "?";
}

MeshKind parse_mesh_kind(const std::string& name, const std::string& option) {
  for (auto k : {MeshKind::square_q1, MeshKind::square_p1, MeshKind::flow_square})
    if (name == to_string(k)) return k;
  throw InputError(option + ": value " + name + " is not allowed; allowed: square-q1, square-p1, flow-square");
}

Element element_of(MeshKind kind) { return kind == MeshKind::square_q1 ? Element::q1 : Element::p1; }

std::int64_t Mesh2D::n_interior_vertices() const {
  return static_cast<std::int64_t>(std::count(boundary.begin(), boundary.end(), char(0)));
}

EdgeTable build_edges(const Mesh2D& mesh) {
  const int nv = mesh.vertices_per_cell();
  const std::int64_t n_local = mesh.n_cells() * nv;
  // (vertex pair key, cell-edge position), sorted by key: equal keys are one edge
  std::vector<std::pair<std::uint64_t, std::int64_t>> keys(static_cast<std::size_t>(n_local));
  for (std::int64_t c = 0; c < mesh.n_cells(); ++c)
    for (int k = 0; k < nv; ++k) {
      const auto a = static_cast<std::uint64_t>(mesh.cells[c][k]);
      const auto b = static_cast<std::uint64_t>(mesh.cells[c][(k + 1) % nv]);
      keys[c * nv + k] = {std::min(a, b) << 32 | std::max(a, b), c * nv + k};
    }
  std::sort(keys.begin(), keys.end());
  EdgeTable t;
  t.cell_edges.resize(static_cast<std::size_t>(n_local));
  for (std::size_t p = 0; p < keys.size();) {
    std::size_t q = p;
    const auto edge = static_cast<std::int32_t>(t.vertices.size());
    for (; q < keys.size() && keys[q].first == keys[p].first; ++q) t.cell_edges[keys[q].second] = edge;
    if (q - p > 2) throw InputError("mesh: an edge is shared by more than two cells");
    t.vertices.push_back(
        {static_cast<std::int32_t>(keys[p].first >> 32), static_cast<std::int32_t>(keys[p].first & 0xffffffffu)});
    t.n_cells.push_back(static_cast<std::int8_t>(q - p));
    p = q;
  }
  return t;
}

namespace {

void mark_boundary(Mesh2D& mesh, const EdgeTable& edges) {
  mesh.boundary.assign(mesh.vertices.size(), 0);
  for (std::int64_t e = 0; e < edges.size(); ++e)
    if (edges.n_cells[e] == 1) mesh.boundary[edges.vertices[e][0]] = mesh.boundary[edges.vertices[e][1]] = 1;
}

double signed_area(const Mesh2D& m, const std::array<std::int32_t, 4>& c) {
  const int nv = m.vertices_per_cell();
  double a = 0.0;
  for (int k = 0; k < nv; ++k) {
    const auto& p = m.vertices[c[k]];
    const auto& q = m.vertices[c[(k + 1) % nv]];
    a += p.x * q.y - q.x * p.y;
  }
  return 0.5 * a;
}

Mesh2D finish(Mesh2D m) {
  for (auto& c : m.cells)
    if (signed_area(m, c) < 0) std::reverse(c.begin(), c.begin() + m.vertices_per_cell());
  mark_boundary(m, build_edges(m));
  return m;
}

}  // namespace

Mesh2D make_coarse_mesh(MeshKind kind) {
  Mesh2D m;
  m.element = element_of(kind);
  switch (kind) {
    case MeshKind::square_q1:
      m.vertices = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
      m.cells = {{0, 1, 2, 3}};
      break;
    case MeshKind::square_p1:
      // the unit square cut by both diagonals: four isosceles right triangles around the centre
      m.vertices = {{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0.5, 0.5}};
      m.cells = {{4, 0, 1, -1}, {4, 1, 2, -1}, {4, 2, 3, -1}, {4, 3, 0, -1}};
      break;
    case MeshKind::flow_square: {
      // Outer boundary (10 vertices), the hole's corners (4), interior vertices (7): the centres of
      // the unit squares [0,1]x[0,1], [2,3]x[0,1], [3,4]x[0,1] (4 isosceles right triangles each) and
      // one vertex in each trapezoid of the ring [1,2]x[0,1] minus the hole, at distance 1/6 from
      // the outer side. That distance makes the two isosceles obtuse triangles of a trapezoid similar
      // (heights 1/6 and 1/12 over bases 1 and 1/2); the other two are mirror-image scalene ones.
      const double s = 1.0 / 6.0;
      m.vertices = {{0, 0},       {1, 0},       {2, 0},       {3, 0},       {4, 0},
                    {4, 1},       {3, 1},       {2, 1},       {1, 1},       {0, 1},  // 0..9 outer
                    {1.25, 0.25}, {1.75, 0.25}, {1.75, 0.75}, {1.25, 0.75},          // 10..13 hole
                    {0.5, 0.5},   {2.5, 0.5},   {3.5, 0.5},                          // 14..16 centres
                    {1.5, s},     {2 - s, 0.5}, {1.5, 1 - s}, {1 + s, 0.5}};         // 17..20 ring
      const std::int32_t A = 1, B = 2, C = 7, D = 8, a = 10, b = 11, c = 12, d = 13;
      const std::int32_t pb = 17, pr = 18, pt = 19, pl = 20;
      auto square = [&](std::int32_t centre, std::int32_t v0, std::int32_t v1, std::int32_t v2, std::int32_t v3) {
        for (auto [p, q] : {std::pair{v0, v1}, {v1, v2}, {v2, v3}, {v3, v0}}) m.cells.push_back({centre, p, q, -1});
      };
      square(14, 0, 1, 8, 9);
      square(15, 2, 3, 6, 7);
      square(16, 3, 4, 5, 6);
      auto trapezoid = [&](std::int32_t p, std::int32_t o0, std::int32_t o1, std::int32_t i1, std::int32_t i0) {
        for (auto [u, v] : {std::pair{o0, o1}, {o1, i1}, {i1, i0}, {i0, o0}}) m.cells.push_back({p, u, v, -1});
      };
      trapezoid(pb, A, B, b, a);
      trapezoid(pr, B, C, c, b);
      trapezoid(pt, C, D, d, c);
      trapezoid(pl, D, A, a, d);
      break;
    }
  }
  return finish(std::move(m));
}

Mesh2D refine(const Mesh2D& mesh, RefinementStep* step) {
  const EdgeTable edges = build_edges(mesh);
  const int nv = mesh.vertices_per_cell();
  Mesh2D fine;
  fine.element = mesh.element;
  const std::int64_t n_new = edges.size() + (mesh.element == Element::q1 ? mesh.n_cells() : 0);
  if (mesh.n_vertices() + n_new > std::int64_t(INT32_MAX) || 4 * mesh.n_cells() > std::int64_t(INT32_MAX))
    throw InputError("mesh: refinement would exceed 2^31 vertices or cells");
  fine.vertices = mesh.vertices;
  fine.vertices.reserve(static_cast<std::size_t>(mesh.n_vertices() + n_new));
  if (step) {
    step->first_new_vertex = static_cast<std::int32_t>(mesh.n_vertices());
    step->parents.clear();
    step->parents.reserve(static_cast<std::size_t>(n_new));
  }
  const auto first_mid = static_cast<std::int32_t>(mesh.n_vertices());
  for (const auto& e : edges.vertices) {
    const auto& p = mesh.vertices[e[0]];
    const auto& q = mesh.vertices[e[1]];
    fine.vertices.push_back({0.5 * (p.x + q.x), 0.5 * (p.y + q.y)});
    if (step) step->parents.push_back({e[0], e[1], -1, -1});
  }
  const auto first_centre = static_cast<std::int32_t>(fine.vertices.size());
  if (mesh.element == Element::q1)
    for (const auto& c : mesh.cells) {
      Point2 m{0, 0};
      for (int k = 0; k < 4; ++k) {
        m.x += 0.25 * mesh.vertices[c[k]].x;
        m.y += 0.25 * mesh.vertices[c[k]].y;
      }
      fine.vertices.push_back(m);
      if (step) step->parents.push_back({c[0], c[1], c[2], c[3]});
    }
  fine.cells.resize(static_cast<std::size_t>(4 * mesh.n_cells()));
  for (std::int64_t ci = 0; ci < mesh.n_cells(); ++ci) {
    const auto& c = mesh.cells[ci];
    std::array<std::int32_t, 4> mid{};
    for (int k = 0; k < nv; ++k) mid[k] = first_mid + edges.cell_edges[ci * nv + k];
    auto* child = &fine.cells[4 * ci];
    if (mesh.element == Element::p1) {
      child[0] = {c[0], mid[0], mid[2], -1};
      child[1] = {mid[0], c[1], mid[1], -1};
      child[2] = {mid[2], mid[1], c[2], -1};
      child[3] = {mid[0], mid[1], mid[2], -1};
    } else {
      const std::int32_t z = first_centre + static_cast<std::int32_t>(ci);
      child[0] = {c[0], mid[0], z, mid[3]};
      child[1] = {mid[0], c[1], mid[1], z};
      child[2] = {z, mid[1], c[2], mid[2]};
      child[3] = {mid[3], z, mid[2], c[3]};
    }
  }
  fine.boundary.assign(fine.vertices.size(), 0);
  std::copy(mesh.boundary.begin(), mesh.boundary.end(), fine.boundary.begin());
  for (std::int64_t e = 0; e < edges.size(); ++e)
    if (edges.n_cells[e] == 1) fine.boundary[first_mid + e] = 1;
  return fine;
}

MeshCounts counts_at_level(const Mesh2D& coarse, int level) {
  const EdgeTable edges = build_edges(coarse);
  MeshCounts c;
  c.n_vertices = coarse.n_vertices();
  c.n_cells = coarse.n_cells();
  c.n_edges = edges.size();
  c.n_boundary_edges = std::count(edges.n_cells.begin(), edges.n_cells.end(), std::int8_t(1));
  std::int64_t n_boundary_vertices = c.n_vertices - coarse.n_interior_vertices();
  for (int l = 1; l <= level; ++l) {
    const bool q1 = coarse.element == Element::q1;
    c.n_vertices += c.n_edges + (q1 ? c.n_cells : 0);
    n_boundary_vertices += c.n_boundary_edges;  // one new vertex on every boundary edge
    c.n_edges = 2 * c.n_edges + (q1 ? 4 : 3) * c.n_cells;
    c.n_cells *= 4;
    c.n_boundary_edges *= 2;
  }
  c.n_interior_vertices = c.n_vertices - n_boundary_vertices;
  c.level = level;
  return c;
}

}  // namespace tcfem::direct
