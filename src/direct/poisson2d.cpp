#include "direct/poisson2d.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tcfem::direct {
namespace {

constexpr double pi = std::numbers::pi;

/// Q1 shape functions on the reference square [0,1]^2, local vertex order counterclockwise.
void q1_shape(double s, double t, std::array<double, 4>& phi, std::array<double, 4>& ds, std::array<double, 4>& dt) {
  phi = {(1 - s) * (1 - t), s * (1 - t), s * t, (1 - s) * t};
  ds = {-(1 - t), 1 - t, t, -t};
  dt = {-(1 - s), -s, s, 1 - s};
}

/// Element stiffness matrix (row-major nv x nv) of a cell.
std::array<double, 16> element_stiffness(const Mesh2D& mesh, const std::array<std::int32_t, 4>& c) {
  std::array<double, 16> k{};
  if (mesh.element == Element::p1) {
    const auto& p0 = mesh.vertices[c[0]];
    const auto& p1 = mesh.vertices[c[1]];
    const auto& p2 = mesh.vertices[c[2]];
    const double area2 = (p1.x - p0.x) * (p2.y - p0.y) - (p2.x - p0.x) * (p1.y - p0.y);
    if (!(area2 > 0)) throw InputError("mesh: degenerate or inverted triangle");
    const std::array<double, 3> b = {p1.y - p2.y, p2.y - p0.y, p0.y - p1.y};
    const std::array<double, 3> cc = {p2.x - p1.x, p0.x - p2.x, p1.x - p0.x};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) k[i * 4 + j] = (b[i] * b[j] + cc[i] * cc[j]) / (2.0 * area2);
    return k;
  }
  const double g = 0.5 / std::sqrt(3.0);
  for (double s : {0.5 - g, 0.5 + g})
    for (double t : {0.5 - g, 0.5 + g}) {
      std::array<double, 4> phi, ds, dt;
      q1_shape(s, t, phi, ds, dt);
      double j00 = 0, j01 = 0, j10 = 0, j11 = 0;  // d(x,y)/d(s,t)
      for (int a = 0; a < 4; ++a) {
        const auto& p = mesh.vertices[c[a]];
        j00 += p.x * ds[a];
        j01 += p.x * dt[a];
        j10 += p.y * ds[a];
        j11 += p.y * dt[a];
      }
      const double det = j00 * j11 - j01 * j10;
      if (!(det > 0)) throw InputError("mesh: degenerate or inverted quadrilateral");
      std::array<double, 4> gx, gy;
      for (int a = 0; a < 4; ++a) {
        gx[a] = (j11 * ds[a] - j10 * dt[a]) / det;
        gy[a] = (-j01 * ds[a] + j00 * dt[a]) / det;
      }
      for (int a = 0; a < 4; ++a)
        for (int b2 = 0; b2 < 4; ++b2) k[a * 4 + b2] += 0.25 * det * (gx[a] * gx[b2] + gy[a] * gy[b2]);
    }
  return k;
}

}  // namespace

DofMap make_dof_map(const Mesh2D& mesh) {
  DofMap d;
  d.dof_of_vertex.assign(mesh.vertices.size(), -1);
  for (std::int64_t v = 0; v < mesh.n_vertices(); ++v)
    if (!mesh.boundary[v]) {
      d.dof_of_vertex[v] = static_cast<std::int32_t>(d.vertex_of_dof.size());
      d.vertex_of_dof.push_back(static_cast<std::int32_t>(v));
    }
  return d;
}

CsrMatrix assemble_stiffness(const Mesh2D& mesh, const DofMap& dofs) {
  const int nv = mesh.vertices_per_cell();
  const std::int64_t n = dofs.n_dofs();
  // pattern: for every dof, the dofs sharing a cell with it
  std::vector<std::int64_t> count(static_cast<std::size_t>(n + 1), 0);
  for (const auto& c : mesh.cells)
    for (int a = 0; a < nv; ++a)
      if (dofs.dof_of_vertex[c[a]] >= 0) count[dofs.dof_of_vertex[c[a]] + 1] += nv;
  for (std::int64_t i = 0; i < n; ++i) count[i + 1] += count[i];
  std::vector<std::int32_t> candidates(static_cast<std::size_t>(count[n]));
  std::vector<std::int64_t> fill(count.begin(), count.end() - 1);
  for (const auto& c : mesh.cells)
    for (int a = 0; a < nv; ++a) {
      const auto i = dofs.dof_of_vertex[c[a]];
      if (i < 0) continue;
      for (int b = 0; b < nv; ++b) candidates[fill[i]++] = dofs.dof_of_vertex[c[b]];  // -1 dropped below
    }
  CsrMatrix m;
  m.n_rows = m.n_cols = n;
  m.row_ptr.assign(static_cast<std::size_t>(n + 1), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    auto begin = candidates.begin() + count[i], end = candidates.begin() + count[i + 1];
    std::sort(begin, end);
    end = std::unique(begin, end);
    for (auto it = begin; it != end; ++it)
      if (*it >= 0) m.cols.push_back(*it);
    m.row_ptr[i + 1] = static_cast<std::int64_t>(m.cols.size());
  }
  m.values.assign(m.cols.size(), 0.0);
  for (const auto& c : mesh.cells) {
    const auto k = element_stiffness(mesh, c);
    for (int a = 0; a < nv; ++a) {
      const auto i = dofs.dof_of_vertex[c[a]];
      if (i < 0) continue;
      for (int b = 0; b < nv; ++b) {
        const auto j = dofs.dof_of_vertex[c[b]];
        if (j < 0) continue;
        const auto begin = m.cols.begin() + m.row_ptr[i], end = m.cols.begin() + m.row_ptr[i + 1];
        m.values[std::lower_bound(begin, end, j) - m.cols.begin()] += k[a * 4 + b];
      }
    }
  }
  // couplings that vanish (across the hypotenuse of two right triangles: cot 90 degrees = 0) are
  // round-off; drop them, as seed 003's NNZ counts do
  double largest = 0.0;
  for (const double v : m.values) largest = std::max(largest, std::abs(v));
  drop_below(m, 1e-13 * largest);
  return m;
}

double ExactSolution::value(double x, double y) const {
  const double s = std::sin(n * pi * x) * std::sin(n * pi * y);
  if (mesh != MeshKind::flow_square) return s;
  return s * (x - 1.25) * (x - 1.75) * (y - 0.25) * (y - 0.75);
}

double ExactSolution::rhs(double x, double y) const {
  const double w = n * pi;
  if (mesh != MeshKind::flow_square) return 2.0 * w * w * std::sin(w * x) * std::sin(w * y);
  // u = p(x) q(y), p = sin(w x) g(x), g = (x-5/4)(x-7/4); q = sin(w y) h(y), h = (y-1/4)(y-3/4)
  const double sx = std::sin(w * x), cx = std::cos(w * x), sy = std::sin(w * y), cy = std::cos(w * y);
  const double g = (x - 1.25) * (x - 1.75), dg = 2 * x - 3.0;
  const double h = (y - 0.25) * (y - 0.75), dh = 2 * y - 1.0;
  const double p = sx * g, ddp = -w * w * sx * g + 2 * w * cx * dg + 2 * sx;
  const double q = sy * h, ddq = -w * w * sy * h + 2 * w * cy * dh + 2 * sy;
  return -(ddp * q + p * ddq);
}

std::vector<double> assemble_load(const Mesh2D& mesh, const DofMap& dofs, const ExactSolution& u) {
  std::vector<double> b(static_cast<std::size_t>(dofs.n_dofs()), 0.0);
  if (mesh.element == Element::p1) {
    // 7-point rule, exact for degree 5 (barycentric points, weights relative to the area)
    constexpr double a1 = 0.059715871789770, b1 = 0.470142064105115, w1 = 0.132394152788506;
    constexpr double a2 = 0.797426985353087, b2 = 0.101286507323456, w2 = 0.125939180544827;
    const std::array<std::array<double, 4>, 7> rule = {{{1.0 / 3, 1.0 / 3, 1.0 / 3, 0.225},
                                                        {a1, b1, b1, w1},
                                                        {b1, a1, b1, w1},
                                                        {b1, b1, a1, w1},
                                                        {a2, b2, b2, w2},
                                                        {b2, a2, b2, w2},
                                                        {b2, b2, a2, w2}}};
    for (const auto& c : mesh.cells) {
      const auto& p0 = mesh.vertices[c[0]];
      const auto& p1 = mesh.vertices[c[1]];
      const auto& p2 = mesh.vertices[c[2]];
      const double area = 0.5 * ((p1.x - p0.x) * (p2.y - p0.y) - (p2.x - p0.x) * (p1.y - p0.y));
      std::array<double, 3> local{};
      for (const auto& q : rule) {
        const double x = q[0] * p0.x + q[1] * p1.x + q[2] * p2.x;
        const double y = q[0] * p0.y + q[1] * p1.y + q[2] * p2.y;
        const double f = u.rhs(x, y) * q[3] * area;
        for (int a = 0; a < 3; ++a) local[a] += f * q[a];
      }
      for (int a = 0; a < 3; ++a)
        if (dofs.dof_of_vertex[c[a]] >= 0) b[dofs.dof_of_vertex[c[a]]] += local[a];
    }
    return b;
  }
  const double g = std::sqrt(0.6) / 2;
  const std::array<double, 3> pts = {0.5 - g, 0.5, 0.5 + g}, wts = {5.0 / 18, 8.0 / 18, 5.0 / 18};
  for (const auto& c : mesh.cells) {
    std::array<double, 4> local{};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        std::array<double, 4> phi, ds, dt;
        q1_shape(pts[i], pts[j], phi, ds, dt);
        double x = 0, y = 0, j00 = 0, j01 = 0, j10 = 0, j11 = 0;
        for (int a = 0; a < 4; ++a) {
          const auto& p = mesh.vertices[c[a]];
          x += p.x * phi[a];
          y += p.y * phi[a];
          j00 += p.x * ds[a];
          j01 += p.x * dt[a];
          j10 += p.y * ds[a];
          j11 += p.y * dt[a];
        }
        const double f = u.rhs(x, y) * wts[i] * wts[j] * (j00 * j11 - j01 * j10);
        for (int a = 0; a < 4; ++a) local[a] += f * phi[a];
      }
    for (int a = 0; a < 4; ++a)
      if (dofs.dof_of_vertex[c[a]] >= 0) b[dofs.dof_of_vertex[c[a]]] += local[a];
  }
  return b;
}

std::vector<double> interpolate(const Mesh2D& mesh, const DofMap& dofs, const ExactSolution& u) {
  std::vector<double> v(static_cast<std::size_t>(dofs.n_dofs()));
  for (std::int64_t i = 0; i < dofs.n_dofs(); ++i) {
    const auto& p = mesh.vertices[dofs.vertex_of_dof[i]];
    v[i] = u.value(p.x, p.y);
  }
  return v;
}

}  // namespace tcfem::direct
