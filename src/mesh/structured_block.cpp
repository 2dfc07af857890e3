#include "mesh/structured_block.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "core/error.h"

namespace tcfem::mesh {

namespace {

template <int dim>
using Lattice = std::array<long, dim>;

/// A cell's place in the lattice: cell axis b runs along lattice axis axis[b], forwards (sign +1)
/// or backwards (-1); base is the lattice position of its lowest corner.
template <int dim>
struct Placement {
  std::array<int, dim> axis{};
  std::array<int, dim> sign{};
  Lattice<dim> base{};
  bool placed = false;
};

template <int dim>
constexpr int n_corners = 1 << dim;

/// Lattice position of the corner t (bit b of t: the cell's reference coordinate b is 1).
template <int dim>
Lattice<dim> corner_position(const Placement<dim>& p, int t) {
  Lattice<dim> x = p.base;
  for (int b = 0; b < dim; ++b) {
    const int tb = (t >> b) & 1;
    x[p.axis[b]] += p.sign[b] > 0 ? tb : 1 - tb;
  }
  return x;
}

double lagrange(int order, int i, double xi) {
  if (order == 1) return i == 0 ? 1.0 - xi : xi;
  switch (i) {
    case 0: return 2.0 * (xi - 0.5) * (xi - 1.0);
    case 1: return -4.0 * xi * (xi - 1.0);
    default: return 2.0 * xi * (xi - 0.5);
  }
}

}  // namespace

template <int dim>
int HexMesh<dim>::nodes_per_cell() const {
  int n = 1;
  for (int d = 0; d < dim; ++d) n *= order + 1;
  return n;
}

template <int dim>
StructuredBlock<dim> StructuredBlock<dim>::recognize(const HexMesh<dim>& mesh) {
  constexpr int cpf = HexMesh<dim>::corners_per_face;
  const std::string where = "mesh " + mesh.source + ": ";
  const std::string not_block = where + "not one structured block: ";
  if (mesh.order != 1 && mesh.order != 2)
    throw InputError(where + "cells of geometric order " + std::to_string(mesh.order) + "; tcfem reads order 1 and 2");
  const std::size_t nc = mesh.n_cells();
  const int npc = mesh.nodes_per_cell();
  if (nc == 0) throw InputError(where + "the mesh has no cells");
  if (mesh.cell_nodes.size() != nc * std::size_t(npc)) throw Error(where + "cell node list of the wrong size");
  for (std::size_t i : mesh.cell_nodes)
    if (i >= mesh.nodes.size()) throw Error(where + "cell node index out of range");

  // corner node of corner t of cell c
  auto corner = [&](std::size_t c, int t) {
    std::size_t r = 0, stride = 1;
    for (int b = 0; b < dim; ++b, stride *= std::size_t(mesh.order + 1)) r += ((t >> b) & 1) * mesh.order * stride;
    return mesh.cell_nodes[c * npc + r];
  };
  using FaceKey = std::array<std::size_t, cpf>;
  auto face_key = [&](std::size_t c, int b, int s) {
    FaceKey k{};
    int i = 0;
    for (int t = 0; t < n_corners<dim>; ++t)
      if (((t >> b) & 1) == s) k[i++] = corner(c, t);
    std::sort(k.begin(), k.end());
    return k;
  };
  // face -> the (cell, local face 2 b + s) that have it
  std::map<FaceKey, std::vector<std::pair<std::size_t, int>>> faces;
  for (std::size_t c = 0; c < nc; ++c) {
    for (int t = 0; t < n_corners<dim>; ++t)
      for (int u = t + 1; u < n_corners<dim>; ++u)
        if (corner(c, t) == corner(c, u))
          throw InputError(where + "cell " + std::to_string(mesh.cell_tags[c]) + " is degenerate (two corners are one node)");
    for (int b = 0; b < dim; ++b)
      for (int s = 0; s < 2; ++s) {
        auto& v = faces[face_key(c, b, s)];
        v.emplace_back(c, 2 * b + s);
        if (v.size() > 2)
          throw InputError(not_block + "the face of cell " + std::to_string(mesh.cell_tags[c]) +
                           " is shared by more than two cells");
      }
  }

  // place the cells in the lattice, breadth first across shared faces
  std::vector<Placement<dim>> place(nc);
  std::unordered_map<std::size_t, Lattice<dim>> vertex;
  auto settle = [&](std::size_t c) {
    for (int t = 0; t < n_corners<dim>; ++t) {
      const auto x = corner_position(place[c], t);
      const auto [it, inserted] = vertex.emplace(corner(c, t), x);
      if (!inserted && it->second != x)
        throw InputError(not_block + "the cells around the node at " + point_text(mesh.nodes[corner(c, t)].data(), dim) +
                         " do not meet as in a lattice (an unstructured mesh)");
    }
  };
  for (int b = 0; b < dim; ++b) {
    place[0].axis[b] = b;
    place[0].sign[b] = 1;
  }
  place[0].placed = true;
  settle(0);
  std::vector<std::size_t> queue{0};
  for (std::size_t qi = 0; qi < queue.size(); ++qi) {
    const std::size_t c = queue[qi];
    const auto& pc = place[c];
    for (int b = 0; b < dim; ++b)
      for (int s = 0; s < 2; ++s) {
        const auto& sharing = faces.at(face_key(c, b, s));
        if (sharing.size() < 2) continue;
        const auto [nb, nf] = sharing[0].first == c ? sharing[1] : sharing[0];
        if (nb == c) throw InputError(where + "cell " + std::to_string(mesh.cell_tags[c]) + " is its own neighbour");
        // the lattice axis across the shared face and the direction from c to nb
        const int A = pc.axis[b];
        const int dir = (pc.sign[b] > 0) == (s == 1) ? 1 : -1;
        Placement<dim> pn;
        pn.placed = true;
        const int bn = nf / 2, sn = nf % 2;
        pn.axis[bn] = A;
        pn.sign[bn] = sn == 0 ? dir : -dir;
        // the other axes of nb from the lattice positions of its face corners (known from c)
        auto known = [&](int t) {
          const auto it = vertex.find(corner(nb, t));
          if (it == vertex.end()) throw Error(where + "shared face corner without a lattice position");
          return it->second;
        };
        const int t0 = sn << bn;
        const auto x0 = known(t0);
        for (int b2 = 0; b2 < dim; ++b2) {
          if (b2 == bn) continue;
          const auto x1 = known(t0 | (1 << b2));
          int axis = -1, sign = 0, n_diff = 0;
          for (int d = 0; d < dim; ++d)
            if (x1[d] != x0[d]) {
              ++n_diff;
              axis = d;
              sign = int(x1[d] - x0[d]);
            }
          if (n_diff != 1 || (sign != 1 && sign != -1) || axis == A)
            throw InputError(not_block + "cell " + std::to_string(mesh.cell_tags[nb]) +
                             " does not continue the lattice of its neighbour " + std::to_string(mesh.cell_tags[c]));
          pn.axis[b2] = axis;
          pn.sign[b2] = sign;
        }
        // base: the lowest corner, from corner t0's position
        pn.base = x0;
        for (int b2 = 0; b2 < dim; ++b2) {
          const int tb = (t0 >> b2) & 1;
          pn.base[pn.axis[b2]] -= pn.sign[b2] > 0 ? tb : 1 - tb;
        }
        if (place[nb].placed) {
          if (place[nb].base != pn.base || place[nb].axis != pn.axis || place[nb].sign != pn.sign)
            throw InputError(not_block + "cells " + std::to_string(mesh.cell_tags[c]) + " and " +
                             std::to_string(mesh.cell_tags[nb]) + " do not meet as in a lattice (an unstructured mesh)");
          continue;
        }
        place[nb] = pn;
        settle(nb);
        queue.push_back(nb);
      }
  }
  if (queue.size() != nc)
    throw InputError(not_block + "the cells form more than one connected piece (" + std::to_string(queue.size()) +
                     " of " + std::to_string(nc) + " cells reached from the first)");

  // the lattice box
  Lattice<dim> lo, hi;
  lo.fill(std::numeric_limits<long>::max());
  hi.fill(std::numeric_limits<long>::min());
  for (const auto& p : place)
    for (int d = 0; d < dim; ++d) {
      lo[d] = std::min(lo[d], p.base[d]);
      hi[d] = std::max(hi[d], p.base[d]);
    }
  StructuredBlock blk;
  std::size_t box_cells = 1;
  for (int d = 0; d < dim; ++d) {
    const long n = hi[d] - lo[d] + 1;
    if (n > (1L << 20)) throw InputError(not_block + "the lattice is too long");
    blk.n_[d] = int(n);
    box_cells *= std::size_t(n);
  }
  if (box_cells != nc)
    throw InputError(not_block + "the cells do not fill a box of the lattice (" + std::to_string(nc) + " cells in a " +
                     std::to_string(box_cells) + "-cell box)");
  for (auto& p : place)
    for (int d = 0; d < dim; ++d) p.base[d] -= lo[d];
  for (auto& [id, x] : vertex)
    for (int d = 0; d < dim; ++d) x[d] -= lo[d];

  auto lattice_number = [&](const Lattice<dim>& base) {
    std::size_t i = 0, stride = 1;
    for (int d = 0; d < dim; ++d) {
      i += std::size_t(base[d]) * stride;
      stride *= std::size_t(blk.n_[d]);
    }
    return i;
  };

  // boundary parts: every block face in exactly one part
  std::array<std::map<std::string, std::size_t>, 2 * dim> on_face;
  for (const auto& bf : mesh.boundary) {
    FaceKey k = bf.corners;
    std::sort(k.begin(), k.end());
    const auto it = faces.find(k);
    if (it == faces.end() || it->second.size() != 1) {
      Point<dim> centre{};
      for (auto n : bf.corners)
        for (int d = 0; d < dim; ++d) centre[d] += mesh.nodes.at(n)[d] / cpf;
      throw InputError(where + "physical group \"" + bf.part + "\" has a face at " + point_text(centre.data(), dim) +
                       (it == faces.end() ? " that is no face of a cell" : " inside the domain"));
    }
    // the block face: the lattice axis along which all corners agree, at 0 or n
    int face = -1;
    for (int d = 0; d < dim && face < 0; ++d) {
      const long v = vertex.at(k[0])[d];
      bool same = true;
      for (auto n : k) same = same && vertex.at(n)[d] == v;
      if (same && (v == 0 || v == blk.n_[d])) face = 2 * d + (v == blk.n_[d] ? 1 : 0);
    }
    if (face < 0) throw Error(where + "boundary face not on the block's boundary");
    ++on_face[face][bf.part];
  }
  for (int f = 0; f < 2 * dim; ++f) {
    std::size_t face_cells = 1;
    for (int d = 0; d < dim; ++d)
      if (d != f / 2) face_cells *= std::size_t(blk.n_[d]);
    // a point of the face, for messages: the centre of the physical face of its middle cell
    Lattice<dim> mid{};
    for (int d = 0; d < dim; ++d) mid[d] = d == f / 2 ? (f % 2 ? blk.n_[d] - 1 : 0) : blk.n_[d] / 2;
    std::size_t cell = 0;
    for (std::size_t c = 0; c < nc; ++c)
      if (place[c].base == mid) cell = c;
    Point<dim> centre{};
    int m = 0;
    for (int t = 0; t < n_corners<dim>; ++t) {
      const auto x = corner_position(place[cell], t);
      if (x[f / 2] != (f % 2 ? blk.n_[f / 2] : 0)) continue;
      ++m;
      for (int d = 0; d < dim; ++d) centre[d] += mesh.nodes[corner(cell, t)][d];
    }
    for (int d = 0; d < dim; ++d) centre[d] /= m;
    const std::string face_text = "the block face through " + point_text(centre.data(), dim);
    if (on_face[f].empty())
      throw InputError(where + face_text + " is in no physical group; name every boundary face in a physical group "
                       "of dimension " + std::to_string(dim - 1));
    if (on_face[f].size() > 1) {
      std::string names;
      for (const auto& [name, count] : on_face[f]) names += (names.empty() ? "\"" : ", \"") + name + "\"";
      throw InputError(where + face_text + " is split between the physical groups " + names +
                       "; tcfem needs each face of the block in one boundary part");
    }
    const auto& [name, count] = *on_face[f].begin();
    if (count != face_cells)
      throw InputError(where + "physical group \"" + name + "\" covers " + std::to_string(count) + " of the " +
                       std::to_string(face_cells) + " cell faces of " + face_text +
                       "; tcfem needs each face of the block in one boundary part");
    blk.parts_[f] = name;
  }

  // the nodes in lattice order; mirrored in the first axis if the map is inverted there
  blk.order_ = mesh.order;
  const int np = mesh.order + 1;
  auto build = [&]() {
    auto nodes = std::make_shared<std::vector<Point<dim>>>(nc * npc);
    blk.tags_.assign(nc, 0);
    for (std::size_t c = 0; c < nc; ++c) {
      const std::size_t L = lattice_number(place[c].base);
      blk.tags_[L] = mesh.cell_tags[c];
      for (int q = 0; q < npc; ++q) {
        std::array<int, dim> qi;
        for (int d = 0, r = q; d < dim; ++d, r /= np) qi[d] = r % np;
        std::size_t rflat = 0, stride = 1;
        for (int b = 0; b < dim; ++b, stride *= np) {
          const int qb = qi[place[c].axis[b]];
          rflat += std::size_t(place[c].sign[b] > 0 ? qb : mesh.order - qb) * stride;
        }
        (*nodes)[L * npc + q] = mesh.nodes[mesh.cell_nodes[c * npc + rflat]];
      }
    }
    blk.nodes_ = nodes;
  };
  build();
  // det J at the centre of the first lattice cell, by central differences of the map
  Point<dim> X;
  X.fill(0.5);
  std::array<Point<dim>, dim> J;
  for (int d = 0; d < dim; ++d) {
    auto xp = X, xm = X;
    xp[d] += 1e-3;
    xm[d] -= 1e-3;
    const auto a = blk.map(xp), m = blk.map(xm);
    for (int e = 0; e < dim; ++e) J[d][e] = (a[e] - m[e]) / 2e-3;
  }
  const double det = dim == 2 ? J[0][0] * J[1][1] - J[0][1] * J[1][0]
                              : J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
                                    J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
                                    J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
  if (det < 0) {
    for (auto& p : place) {
      p.base[0] = blk.n_[0] - 1 - p.base[0];
      for (int b = 0; b < dim; ++b)
        if (p.axis[b] == 0) p.sign[b] = -p.sign[b];
    }
    std::swap(blk.parts_[0], blk.parts_[1]);
    build();
  }
  return blk;
}

template <int dim>
Point<dim> StructuredBlock<dim>::map(const Point<dim>& X) const {
  const int np = order_ + 1;
  std::size_t L = 0, stride = 1;
  std::array<std::array<double, 3>, dim> phi;
  for (int d = 0; d < dim; ++d) {
    const int i = std::clamp(int(std::floor(X[d])), 0, n_[d] - 1);
    const double xi = X[d] - i;
    for (int a = 0; a < np; ++a) phi[d][a] = lagrange(order_, a, xi);
    L += std::size_t(i) * stride;
    stride *= std::size_t(n_[d]);
  }
  int npc = 1;
  for (int d = 0; d < dim; ++d) npc *= np;
  const Point<dim>* cell = nodes_->data() + L * npc;
  Point<dim> x{};
  for (int q = 0; q < npc; ++q) {
    double w = 1.0;
    for (int d = 0, r = q; d < dim; ++d, r /= np) w *= phi[d][r % np];
    for (int e = 0; e < dim; ++e) x[e] += w * cell[q][e];
  }
  return x;
}

template <int dim>
Domain<dim> StructuredBlock<dim>::domain() const {
  Point<dim> lower{}, upper{};
  for (int d = 0; d < dim; ++d) upper[d] = n_[d];
  auto self = std::make_shared<const StructuredBlock>(*this);
  return Domain<dim>::box(lower, upper, [self](const Point<dim>& X) { return self->map(X); });
}

template <int dim>
std::size_t StructuredBlock<dim>::cell_tag(const std::array<int, dim>& c) const {
  std::size_t i = 0, stride = 1;
  for (int d = 0; d < dim; ++d) {
    i += std::size_t(c[d]) * stride;
    stride *= std::size_t(n_[d]);
  }
  return tags_.at(i);
}

template struct HexMesh<2>;
template struct HexMesh<3>;
template class StructuredBlock<2>;
template class StructuredBlock<3>;

}  // namespace tcfem::mesh
