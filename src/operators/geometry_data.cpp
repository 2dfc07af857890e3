#include "operators/geometry_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "operators/quadratic_nodes.h"

namespace tcfem::operators {

template <int dim>
double invert(const std::array<std::array<double, dim>, dim>& J, std::array<std::array<double, dim>, dim>& inv) {
  if constexpr (dim == 2) {
    const double det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
    inv[0][0] = J[1][1] / det;
    inv[0][1] = -J[0][1] / det;
    inv[1][0] = -J[1][0] / det;
    inv[1][1] = J[0][0] / det;
    return det;
  } else {
    const double det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                       J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                       J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
    inv[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / det;
    inv[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / det;
    inv[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / det;
    inv[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / det;
    inv[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / det;
    inv[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / det;
    inv[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / det;
    inv[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / det;
    inv[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / det;
    return det;
  }
}

template <int dim>
void cell_jacobians(const tensor::Evaluator<dim, double>& ev, const double* nodes, double* x, double* J) {
  const int nb = ev.dofs_per_cell(), nq = ev.points_per_cell();
  std::vector<double> grad(dim * nq);
  for (int c = 0; c < dim; ++c) {
    ev.values(nodes + c * nb, x + c * nq);
    ev.gradients_from_values(x + c * nq, grad.data());
    for (int d = 0; d < dim; ++d)
      for (int q = 0; q < nq; ++q) J[(c * dim + d) * nq + q] = grad[d * nq + q];
  }
}

namespace {
int ipow(int n, int p) {
  int r = 1;
  for (int i = 0; i < p; ++i) r *= n;
  return r;
}

template <int dim>
double tensor_weight(const fe::Quadrature1D& quad, int q, int skip_dir) {
  double w = 1.0;
  const int n = quad.size();
  for (int d = 0; d < dim; ++d) {
    if (d == skip_dir) continue;
    w *= quad.weights[q % n];
    q /= n;
  }
  return w;
}

std::string cell_name(const auto& c) {
  std::string s = "(";
  for (std::size_t d = 0; d < c.size(); ++d) s += (d ? "," : "") + std::to_string(c[d]);
  return s + ")";
}

}  // namespace

template <int dim>
double checked_coefficient(const Coefficient& coefficient, const double* x, const std::array<int, dim>& cell,
                           const std::array<int, dim>& n_cells) {
  const double a = coefficient(x);
  if (!(a > 0.0) || !std::isfinite(a)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", a);
    std::string grid;
    for (int d = 0; d < dim; ++d) grid += (d ? " x " : "") + std::to_string(n_cells[d]);
    throw InputError("coefficient: a = " + std::string(buf) + " at the point " + point_text(x, dim) + " (cell " +
                     cell_name(cell) + " of the mesh with " + grid + " cells); the coefficient must be positive "
                     "and finite at every quadrature point of every multigrid level");
  }
  return a;
}

template <typename Number, int dim>
NodeGeometry<Number> compute_node_geometry(const mesh::BoxMesh<dim>& mesh, const mesh::GeometryField<dim>& geometry,
                                           const Coefficient& coefficient) {
  if (mesh.partition().owned.n_cells() != mesh.n_global_cells())
    throw InputError("geometry from nodes: the mesh must be owned by one process");
  const int k = geometry.degree();
  const auto gll = fe::LagrangeBasis1D::gauss_lobatto(k).nodes();
  const auto nc = mesh.n_cells();
  std::array<std::int64_t, dim> lat{}, vl{};
  NodeGeometry<Number> g;
  g.n_nodes = 1;
  g.n_vertices = 1;
  for (int d = 0; d < dim; ++d) {
    lat[d] = std::int64_t(nc[d]) * k + 1;
    vl[d] = nc[d] + 1;
    g.n_nodes *= lat[d];
    g.n_vertices *= vl[d];
  }
  g.vertices.assign(dim * g.n_vertices, 0.0);
  std::vector<double> disp(dim * g.n_nodes, 0.0);
  if (coefficient) g.a_nodes.assign(g.n_nodes, Number(0));
  const int n = k + 1, nb = ipow(n, dim);
  const std::size_t n_cells = mesh.n_owned_cells();
  std::vector<double> worst(std::max(1, host_threads()), 0.0);
  double extent = 0;
  parallel_chunks(0, n_cells, [&](std::size_t first, std::size_t last, int thread) {
    std::vector<double> nodes(dim * nb);
    for (std::size_t cell = first; cell < last; ++cell) {
      const auto c = mesh.cell_index(cell);
      geometry.cell_nodes(c, nodes.data());
      for (int local = 0; local < nb; ++local) {
        int i[dim];
        for (int d = 0, r = local; d < dim; ++d, r /= n) i[d] = r % n;
        bool owner = true;  // the node's owning cell: the lowest along each direction
        for (int d = 0; d < dim; ++d) owner = owner && !(i[d] == 0 && c[d] > 0);
        if (!owner) continue;
        std::int64_t node = 0;
        for (int d = dim - 1; d >= 0; --d) node = node * lat[d] + std::int64_t(c[d]) * k + i[d];
        double x[3] = {0, 0, 0};
        for (int comp = 0; comp < dim; ++comp) {
          // the multilinear interpolant of the cell's vertices, relative to its first vertex x_0
          // (the phi sum to 1): d rounded to the cell's size, not to the coordinates' magnitude
          const double x0 = nodes[comp * nb];
          double lin = 0;
          for (int v = 0; v < (1 << dim); ++v) {
            double phi = 1;
            int corner = 0;
            for (int d = dim - 1; d >= 0; --d) {
              phi *= (v >> d & 1) ? gll[i[d]] : 1 - gll[i[d]];
              corner = corner * n + (v >> d & 1) * k;
            }
            lin += phi * (nodes[comp * nb + corner] - x0);
          }
          x[comp] = nodes[comp * nb + local];
          const double dv = (x[comp] - x0) - lin;
          disp[comp * g.n_nodes + node] = dv;
          worst[thread] = std::max(worst[thread], std::abs(dv));
        }
        bool vertex = true;
        for (int d = 0; d < dim; ++d) vertex = vertex && i[d] % k == 0;
        if (vertex) {
          std::int64_t v = 0;
          for (int d = dim - 1; d >= 0; --d) v = v * vl[d] + c[d] + i[d] / k;
          for (int comp = 0; comp < dim; ++comp) g.vertices[comp * g.n_vertices + v] = x[comp];
        }
        if (coefficient) g.a_nodes[node] = Number(checked_coefficient<dim>(coefficient, x, c, nc));
      }
    }
  }, host_threads(), 256);
  for (double w : worst) g.max_disp = std::max(g.max_disp, w);
  double scale = 0;  // the coordinates' largest magnitude
  for (int comp = 0; comp < dim; ++comp) {
    const auto [lo, hi] = std::minmax_element(g.vertices.begin() + comp * g.n_vertices,
                                              g.vertices.begin() + (comp + 1) * g.n_vertices);
    extent = std::max(extent, *hi - *lo);
    scale = std::max({scale, std::abs(*lo), std::abs(*hi)});
  }
  if (g.max_disp > 1e-13 * extent) g.disp.assign(disp.begin(), disp.end());
  if (k >= 3 && !g.disp.empty()) {
    // cells of geometry order 2: the Q2 lattice values, kept where they reproduce the field
    NodeLattice L;
    L.k = k;
    for (int d = 0; d < 3; ++d) L.n_cells[d] = d < dim ? nc[d] : 0;
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    std::vector<double> mid(n);
    for (int j = 0; j < n; ++j) mid[j] = basis.value(j, 0.5);
    std::vector<Number> disp2(dim * L.nodes2());
    for (int comp = 0; comp < dim; ++comp)
      parallel_chunks(0, std::size_t(L.nodes2()), [&](std::size_t first, std::size_t last, int) {
        for (std::size_t v = first; v < last; ++v)
          disp2[comp * L.nodes2() + v] = Number(q2_value(g.disp.data(), L, mid.data(), comp, std::int64_t(v)));
      }, host_threads(), 4096);
    std::fill(worst.begin(), worst.end(), 0.0);
    for (int comp = 0; comp < dim; ++comp)
      parallel_chunks(0, std::size_t(g.n_nodes), [&](std::size_t first, std::size_t last, int thread) {
        for (std::size_t v = first; v < last; ++v)
          worst[thread] =
              std::max(worst[thread], q2_defect(g.disp.data(), disp2.data(), L, gll.data(), comp, std::int64_t(v)));
      }, host_threads(), 4096);
    if (*std::max_element(worst.begin(), worst.end()) <= q2_tolerance<Number>(g.max_disp, scale)) {
      g.disp2 = std::move(disp2);
      g.n_nodes2 = L.nodes2();
    }
  }
  return g;
}

template <int dim, typename Number>
CellGeometry<dim, Number> compute_cell_geometry(const mesh::BoxMesh<dim>& mesh,
                                                const mesh::GeometryField<dim>& geometry,
                                                const fe::Quadrature1D& quad, const Coefficient& coefficient) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(geometry.degree());
  const int nq = ipow(quad.size(), dim), nb = ipow(geometry.degree() + 1, dim);
  const std::size_t n_cells = mesh.n_owned_cells();
  CellGeometry<dim, Number> g;
  g.points_per_cell = nq;
  g.JxW.resize(n_cells * nq);
  g.coef.resize(n_cells * nq * n_sym<dim>);
  g.volume.resize(n_cells);
  // cells are independent: contiguous ranges per thread (an error names the lowest failing range's cell)
  parallel_chunks(0, n_cells, [&](std::size_t first, std::size_t last, int) {
    const tensor::Evaluator<dim, double> ev(basis, quad);
    std::vector<double> nodes(dim * nb), x(dim * nq), J(dim * dim * nq);
    for (std::size_t cell = first; cell < last; ++cell) {
      const auto c = mesh.cell_index(cell);
      geometry.cell_nodes(c, nodes.data());
      cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
      double vol = 0.0;
      for (int q = 0; q < nq; ++q) {
        std::array<std::array<double, dim>, dim> Jq, inv;
        for (int a = 0; a < dim; ++a)
          for (int b = 0; b < dim; ++b) Jq[a][b] = J[(a * dim + b) * nq + q];
        const double det = invert<dim>(Jq, inv);
        if (!(det > 0.0))
          throw InputError("mesh cell " + cell_name(c) + " is inverted or degenerate (det J = " +
                           std::to_string(det) + ")");
        const double jxw = det * tensor_weight<dim>(quad, q, -1);
        vol += jxw;
        g.JxW[cell * nq + q] = static_cast<Number>(jxw);
        double a = 1.0;
        if (coefficient) {
          double xq[dim];
          for (int d = 0; d < dim; ++d) xq[d] = x[d * nq + q];
          a = checked_coefficient<dim>(coefficient, xq, c, mesh.n_cells());
        }
        for (int i = 0; i < dim; ++i)
          for (int j = i; j < dim; ++j) {
            double s = 0.0;
            for (int k = 0; k < dim; ++k) s += inv[i][k] * inv[j][k];
            g.coef[(cell * n_sym<dim> + sym_index<dim>(i, j)) * nq + q] = static_cast<Number>(a * s * jxw);
          }
      }
      g.volume[cell] = vol;
    }
  }, host_threads(), 256);
  return g;
}

template <int dim, typename Number>
FaceGeometry<dim, Number> compute_face_geometry(const mesh::BoxMesh<dim>& mesh,
                                                const mesh::GeometryField<dim>& geometry,
                                                const fe::Quadrature1D& quad,
                                                const CellGeometry<dim, Number>& cells, double penalty_factor,
                                                const Coefficient& coefficient,
                                                const fe::DirichletFaces<dim>& dirichlet) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(geometry.degree());
  const int nf = ipow(quad.size(), dim - 1), nb = ipow(geometry.degree() + 1, dim);
  const auto& owned = mesh.partition().owned;
  FaceGeometry<dim, Number> g;
  g.points_per_face = nf;
  for (int d = 0; d < dim; ++d) {
    auto& dir = g.dirs[d];
    std::size_t n_faces = 1;
    for (int e = 0; e < dim; ++e) {
      dir.extent[e] = owned.extent(e) + (e == d ? 1 : 0);
      n_faces *= dir.extent[e];
    }
    dir.JxW.assign(n_faces * nf, Number(0));
    dir.a_minus.assign(n_faces * dim * nf, Number(0));
    dir.a_plus.assign(n_faces * dim * nf, Number(0));
    dir.penalty.assign(n_faces, Number(0));
    parallel_chunks(0, n_faces, [&](std::size_t first, std::size_t last, int) {
      const tensor::Evaluator<dim, double> ev(basis, quad);
      std::vector<double> nodes(dim * nb), val(nf), grad(dim * nf);
      // J[side][c][e][q]
      std::vector<double> Jside[2], xside[2];
      for (auto& j : Jside) j.resize(dim * dim * nf);
      for (auto& x : xside) x.resize(dim * nf);
      for (std::size_t f = first; f < last; ++f) {
        const auto pos = face_position<dim>(dir.extent, owned, f);
        const bool has_minus = pos[d] > 0, has_plus = pos[d] < mesh.n_cells()[d];
        bool have[2] = {has_minus, has_plus};
        for (int s = 0; s < 2; ++s) {
          if (!have[s]) continue;
          auto c = pos;
          if (s == 0) c[d] -= 1;
          geometry.cell_nodes(c, nodes.data());
          for (int comp = 0; comp < dim; ++comp) {
            ev.face_evaluate(nodes.data() + comp * nb, d, s == 0 ? 1 : 0, val.data(), grad.data());
            for (int q = 0; q < nf; ++q) xside[s][comp * nf + q] = val[q];
            for (int e = 0; e < dim; ++e)
              for (int q = 0; q < nf; ++q) Jside[s][(comp * dim + e) * nf + q] = grad[e * nf + q];
          }
        }
        const int ref = has_minus ? 0 : 1;  // side whose Jacobian defines the normal
        // a Neumann face of the box: no face terms
        const bool neumann = !(has_minus && has_plus) && !dirichlet[2 * d + (has_minus ? 1 : 0)];
        double area = 0.0, a_max = 0.0;
        for (int q = 0; q < nf; ++q) {
          std::array<std::array<double, dim>, dim> Jq, inv;
          for (int a = 0; a < dim; ++a)
            for (int b = 0; b < dim; ++b) Jq[a][b] = Jside[ref][(a * dim + b) * nf + q];
          const double det = invert<dim>(Jq, inv);
          std::array<double, dim> m;
          double mn = 0.0;
          for (int c = 0; c < dim; ++c) {
            m[c] = inv[d][c];
            mn += m[c] * m[c];
          }
          mn = std::sqrt(mn);
          // normal from - to + ; on the lower boundary (no - cell) the outward normal is -m
          const double sign = has_minus ? 1.0 : -1.0;
          std::array<double, dim> n;
          for (int c = 0; c < dim; ++c) n[c] = sign * m[c] / mn;
          const double jxw = std::abs(det) * mn * tensor_weight<dim>(quad, q, d);
          area += jxw;
          dir.JxW[f * nf + q] = static_cast<Number>(jxw);
          double a = 1.0;
          if (coefficient) {
            double xq[dim];
            for (int c = 0; c < dim; ++c) xq[c] = xside[ref][c * nf + q];
            auto cell = pos;
            if (ref == 0) cell[d] -= 1;
            a = checked_coefficient<dim>(coefficient, xq, cell, mesh.n_cells());
          }
          a_max = std::max(a_max, a);
          if (neumann) continue;
          for (int s = 0; s < 2; ++s) {
            if (!have[s]) continue;
            for (int a = 0; a < dim; ++a)
              for (int b = 0; b < dim; ++b) Jq[a][b] = Jside[s][(a * dim + b) * nf + q];
            invert<dim>(Jq, inv);
            // boundary faces keep their single side's vector in a_minus
            auto& target = (has_minus && has_plus && s == 1) ? dir.a_plus : dir.a_minus;
            for (int e = 0; e < dim; ++e) {
              double v = 0.0;
              for (int c = 0; c < dim; ++c) v += inv[e][c] * n[c];
              target[(f * dim + e) * nf + q] = static_cast<Number>(a * v);
            }
          }
        }
        // a ghost cell of a distributed mesh (the other side of a face on the sub-box's
        // boundary): its volume computed as its owner computes it
        auto volume_of = [&](std::array<int, dim> c) {
          if (owned.contains(c)) return cells.volume[mesh.cell_number(c)];
          const int nq = ipow(quad.size(), dim);
          std::vector<double> cn(dim * nb), x(dim * nq), J(dim * dim * nq);
          geometry.cell_nodes(c, cn.data());
          cell_jacobians<dim>(ev, cn.data(), x.data(), J.data());
          double vol = 0.0;
          for (int q = 0; q < nq; ++q) {
            std::array<std::array<double, dim>, dim> Jq, inv;
            for (int a = 0; a < dim; ++a)
              for (int b = 0; b < dim; ++b) Jq[a][b] = J[(a * dim + b) * nq + q];
            vol += invert<dim>(Jq, inv) * tensor_weight<dim>(quad, q, -1);
          }
          return vol;
        };
        double pen;
        if (has_minus && has_plus) {
          auto cm = pos;
          cm[d] -= 1;
          pen = penalty_factor * (area / volume_of(cm) + area / volume_of(pos));
        } else {
          auto c = pos;
          if (has_minus) c[d] -= 1;
          pen = 2.0 * penalty_factor * area / volume_of(c);
        }
        dir.penalty[f] = static_cast<Number>(neumann ? 0.0 : pen * a_max);
      }
    }, host_threads(), 256);
  }
  return g;
}

template double checked_coefficient<2>(const Coefficient&, const double*, const std::array<int, 2>&,
                                       const std::array<int, 2>&);
template double checked_coefficient<3>(const Coefficient&, const double*, const std::array<int, 3>&,
                                       const std::array<int, 3>&);
template NodeGeometry<double> compute_node_geometry<double, 2>(const mesh::BoxMesh<2>&, const mesh::GeometryField<2>&,
                                                               const Coefficient&);
template NodeGeometry<float> compute_node_geometry<float, 2>(const mesh::BoxMesh<2>&, const mesh::GeometryField<2>&,
                                                             const Coefficient&);
template NodeGeometry<double> compute_node_geometry<double, 3>(const mesh::BoxMesh<3>&, const mesh::GeometryField<3>&,
                                                               const Coefficient&);
template NodeGeometry<float> compute_node_geometry<float, 3>(const mesh::BoxMesh<3>&, const mesh::GeometryField<3>&,
                                                             const Coefficient&);
template void cell_jacobians<2>(const tensor::Evaluator<2, double>&, const double*, double*, double*);
template void cell_jacobians<3>(const tensor::Evaluator<3, double>&, const double*, double*, double*);
template double invert<2>(const std::array<std::array<double, 2>, 2>&, std::array<std::array<double, 2>, 2>&);
template double invert<3>(const std::array<std::array<double, 3>, 3>&, std::array<std::array<double, 3>, 3>&);
template CellGeometry<2, double> compute_cell_geometry<2, double>(const mesh::BoxMesh<2>&,
                                                                const mesh::GeometryField<2>&,
                                                                const fe::Quadrature1D&, const Coefficient&);
template FaceGeometry<2, double> compute_face_geometry<2, double>(const mesh::BoxMesh<2>&,
                                                                const mesh::GeometryField<2>&,
                                                                const fe::Quadrature1D&,
                                                                const CellGeometry<2, double>&, double,
                                                                const Coefficient&, const fe::DirichletFaces<2>&);
template CellGeometry<2, float> compute_cell_geometry<2, float>(const mesh::BoxMesh<2>&,
                                                                const mesh::GeometryField<2>&,
                                                                const fe::Quadrature1D&, const Coefficient&);
template FaceGeometry<2, float> compute_face_geometry<2, float>(const mesh::BoxMesh<2>&,
                                                                const mesh::GeometryField<2>&,
                                                                const fe::Quadrature1D&,
                                                                const CellGeometry<2, float>&, double,
                                                                const Coefficient&, const fe::DirichletFaces<2>&);
template CellGeometry<3, double> compute_cell_geometry<3, double>(const mesh::BoxMesh<3>&,
                                                                const mesh::GeometryField<3>&,
                                                                const fe::Quadrature1D&, const Coefficient&);
template FaceGeometry<3, double> compute_face_geometry<3, double>(const mesh::BoxMesh<3>&,
                                                                const mesh::GeometryField<3>&,
                                                                const fe::Quadrature1D&,
                                                                const CellGeometry<3, double>&, double,
                                                                const Coefficient&, const fe::DirichletFaces<3>&);
template CellGeometry<3, float> compute_cell_geometry<3, float>(const mesh::BoxMesh<3>&,
                                                                const mesh::GeometryField<3>&,
                                                                const fe::Quadrature1D&, const Coefficient&);
template FaceGeometry<3, float> compute_face_geometry<3, float>(const mesh::BoxMesh<3>&,
                                                                const mesh::GeometryField<3>&,
                                                                const fe::Quadrature1D&,
                                                                const CellGeometry<3, float>&, double,
                                                                const Coefficient&, const fe::DirichletFaces<3>&);

}  // namespace tcfem::operators
