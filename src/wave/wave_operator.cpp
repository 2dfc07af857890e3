#include "wave/wave_operator.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "fe/quadrature.h"
#include "mesh/geometry_field.h"
#include "tensor/contract.h"

namespace tcfem::wave {

namespace {
double positive(const SpaceFunction& f, const char* name, const double* x, int dim) {
  const double v = f(x);
  if (!(v > 0) || !std::isfinite(v))
    throw InputError(std::string(name) + ": must be positive; it is " + std::to_string(v) + " at the point " + point_text(x, dim));
  return v;
}

template <int dim>
double determinant(const double (&J)[dim][dim]) {
  if constexpr (dim == 2) return J[0][0] * J[1][1] - J[0][1] * J[1][0];
  else
    return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

/// inv = J^-1
template <int dim>
void invert(const double (&J)[dim][dim], double det, double (&inv)[dim][dim]) {
  if constexpr (dim == 2) {
    inv[0][0] = J[1][1] / det;
    inv[0][1] = -J[0][1] / det;
    inv[1][0] = -J[1][0] / det;
    inv[1][1] = J[0][0] / det;
  } else {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
        inv[i][j] = (J[i1][j1] * J[i2][j2] - J[i1][j2] * J[i2][j1]) / det;
      }
  }
}
}  // namespace

template <int dim>
WaveOperator<dim>::WaveOperator(const WaveProblem<dim>& problem, WaveSetup setup)
    : problem_(problem),
      setup_(setup),
      k_(problem.degree),
      np1_(problem.degree + 1),
      nq_(problem.degree),
      cells_(problem.cells) {
  npc_ = nqc_ = 1;
  n_cells_ = 1;
  for (int d = 0; d < dim; ++d) {
    npc_ *= np1_;
    nqc_ *= nq_;
    n_cells_ *= static_cast<std::size_t>(cells_[d]);
  }
  n_u_ = n_cells_ * dim * nqc_;
  n_p_ = 1;
  for (int d = 0; d < dim; ++d) {
    p_stride_[d] = n_p_;
    n_p_ *= static_cast<std::size_t>(k_) * cells_[d] + 1;
  }
  const auto gll = fe::LagrangeBasis1D::gauss_lobatto(k_);
  const auto gauss = fe::gauss(nq_);
  b_ = fe::basis_values(gll, gauss.points);
  d_ = fe::basis_derivatives(gll, gauss.points);
  mesh_ = std::make_unique<mesh::BoxMesh<dim>>(cells_, problem.domain);
  field_ = std::make_unique<mesh::MappedCellNodes<dim>>(*mesh_, k_);
  if (setup_ == WaveSetup::host) {
    // cell colors by parity (the host's loops that sum into shared nodes): cells of one color
    // share no pressure node
    colors_.assign(1u << dim, {});
    for (std::size_t c = 0; c < n_cells_; ++c) {
      const auto ci = mesh_->cell_index(c);
      int color = 0;
      for (int d = 0; d < dim; ++d) color |= (ci[d] & 1) << d;
      colors_[color].push_back(c);
    }
    build_cell_data();
  }
  build_boundary_terms();
  if (setup_ == WaveSetup::host) {
    absorbing_.assign(n_p_, 0.0);
    for (const auto& t : surface_terms_) mass_p_[t.node] += t.value;
    for (const auto& t : absorbing_terms_) absorbing_[t.node] += t.value;
    inv_mass_p_.resize(n_p_);
    for (std::size_t i = 0; i < n_p_; ++i) inv_mass_p_[i] = 1.0 / mass_p_[i];
  }
}

template <int dim>
void WaveOperator<dim>::require_cell_data() const {
  if (setup_ != WaveSetup::host)
    throw Error("wave operator: the cell data were computed on the device (WaveSetup::device); this needs the host's");
}

template <int dim>
void WaveOperator<dim>::build_cell_data() {
  const auto& problem = problem_;
  const auto gauss = fe::gauss(nq_);
  const auto lobatto = fe::gauss_lobatto(np1_);
  const auto d_gll = fe::basis_derivatives(fe::LagrangeBasis1D::gauss_lobatto(k_), fe::LagrangeBasis1D::gauss_lobatto(k_).nodes());
  const auto& mesh = *mesh_;
  node_coords_.resize(n_cells_ * dim * npc_);
  parallel_chunks(0, n_cells_, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t c = b; c < e; ++c) field_->cell_nodes(mesh.cell_index(c), node_coords_.data() + c * dim * npc_);
  });
  auto refuse_inverted = [&mesh](std::size_t c, double det, const double* x) {
    const auto ci = mesh.cell_index(c);
    std::string cell = "(";
    for (int d = 0; d < dim; ++d) cell += std::to_string(ci[d]) + (d + 1 < dim ? ", " : ")");
    throw InputError("geometry: the map is inverted or degenerate (det J = " + std::to_string(det) + ") in cell " + cell +
                     " at the point " + point_text(x, dim));
  };
  // quadrature-point data: C = w det J J^-1 and s = 1 / (rho w det J)
  c_.resize(n_cells_ * dim * dim * nqc_);
  s_.resize(n_cells_ * nqc_);
  jxw_.resize(n_cells_ * nqc_);
  HostArray<double> mass_parts(n_cells_ * npc_);  // per cell, w det J / K at the nodes
  parallel_chunks(0, n_cells_, [&](std::size_t cb, std::size_t ce, int) {
    std::vector<double> jq(dim * dim * nqc_), jg(dim * dim * npc_), tmp(2 * npc_ + 2 * nqc_), xq(dim * nqc_);
    for (std::size_t c = cb; c < ce; ++c) {
      const double* nodes = node_coords_.data() + c * dim * npc_;
      for (int d = 0; d < dim; ++d)
        gradient(nodes + d * npc_, jq.data() + d * dim * nqc_, tmp.data());  // jq[(d * dim + e) * nqc + q]
      velocity_node_coordinates(nodes, xq.data(), tmp.data());
      for (int q = 0; q < nqc_; ++q) {
        double J[dim][dim], inv[dim][dim], x[dim];
        for (int d = 0; d < dim; ++d) {
          x[d] = xq[d * nqc_ + q];
          for (int e = 0; e < dim; ++e) J[d][e] = jq[(d * dim + e) * nqc_ + q];
        }
        const double det = determinant<dim>(J);
        if (!(det > 0)) refuse_inverted(c, det, x);
        invert<dim>(J, det, inv);
        double w = 1;
        int qi = q;
        for (int d = 0; d < dim; ++d) {
          w *= gauss.weights[qi % nq_];
          qi /= nq_;
        }
        const double rho = positive(problem.rho, "rho", x, dim);
        s_[c * nqc_ + q] = 1.0 / (rho * w * det);
        jxw_[c * nqc_ + q] = w * det;
        for (int e = 0; e < dim; ++e)
          for (int d = 0; d < dim; ++d) c_[(c * dim * dim + e * dim + d) * nqc_ + q] = w * det * inv[e][d];
      }
      // lumped pressure mass at the nodes: w det J / K, J from the derivative matrix at the nodes
      for (int d = 0; d < dim; ++d)
        for (int e = 0; e < dim; ++e)
          tensor::apply_1d<false, false>(d_gll.data.data(), np1_, np1_, e, tensor::cube_sizes<dim>(np1_), nodes + d * npc_,
                                         jg.data() + (d * dim + e) * npc_);
      for (int i = 0; i < npc_; ++i) {
        double J[dim][dim], x[dim];
        double w = 1;
        for (int d = 0, r = i; d < dim; ++d, r /= np1_) w *= lobatto.weights[r % np1_];
        for (int d = 0; d < dim; ++d) {
          x[d] = nodes[d * npc_ + i];
          for (int e = 0; e < dim; ++e) J[d][e] = jg[(d * dim + e) * npc_ + i];
        }
        const double det = determinant<dim>(J);
        if (!(det > 0)) refuse_inverted(c, det, x);
        mass_parts[c * npc_ + i] = w * det / positive(problem.K, "K", x, dim);
      }
    }
  });
  mass_p_.assign(n_p_, 0.0);
  for (const auto& color : colors_)
    parallel_chunks(0, color.size(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i)
        for (int n = 0; n < npc_; ++n) mass_p_[p_index(color[i], n)] += mass_parts[color[i] * npc_ + n];
    }, host_threads(), 256);

}

template <int dim>
void WaveOperator<dim>::build_boundary_terms() {
  // boundary faces: free surface (mass), absorbing (damping), seafloor (data); lumped at the nodes.
  // The face's cells in parallel, each into its slots; the terms are then taken in the order of
  // the cells and their nodes.
  const auto& problem = problem_;
  const auto lobatto = fe::gauss_lobatto(np1_);
  const auto gll = fe::LagrangeBasis1D::gauss_lobatto(k_);
  const auto d_gll = fe::basis_derivatives(gll, gll.nodes());
  int nf = 1;  // nodes per face
  for (int d = 0; d + 1 < dim; ++d) nf *= np1_;
  std::vector<NodeTerm> surface, absorbing;
  for (int face = 0; face < 2 * dim; ++face) {
    const BoundaryKind kind = problem.faces[face];
    if (kind == BoundaryKind::wall) continue;
    const int n = face / 2, side = face % 2;
    // the face's cells in ascending order: the other directions' indices, the lowest fastest
    std::size_t cell_stride[dim], on_face = 1;
    for (int d = 0, st = 1; d < dim; st *= cells_[d], ++d) {
      cell_stride[d] = static_cast<std::size_t>(st);
      if (d != n) on_face *= static_cast<std::size_t>(cells_[d]);
    }
    std::vector<std::size_t> face_cells(on_face);
    for (std::size_t j = 0; j < on_face; ++j) {
      std::size_t c = (side ? cells_[n] - 1 : 0) * cell_stride[n], r = j;
      for (int d = 0; d < dim; ++d) {
        if (d == n) continue;
        c += (r % cells_[d]) * cell_stride[d];
        r /= cells_[d];
      }
      face_cells[j] = c;
    }
    std::vector<FaceNode> slots(face_cells.size() * nf);
    std::vector<double> values(slots.size());
    parallel_chunks(0, face_cells.size(), [&](std::size_t cb, std::size_t ce, int) {
      std::vector<double> nodes(dim * npc_);
      for (std::size_t fc = cb; fc < ce; ++fc) {
        const std::size_t c = face_cells[fc];
        if (!node_coords_.empty()) cell_nodes(c, nodes.data());
        else field_->face_nodes(mesh_->cell_index(c), n, side, nodes.data());  // the face's nodes suffice
        int slot = 0;
        for (int i = 0; i < npc_; ++i) {
          int idx[3] = {0, 0, 0}, r = i;
          for (int d = 0; d < dim; ++d) {
            idx[d] = r % np1_;
            r /= np1_;
          }
          if (idx[n] != (side ? k_ : 0)) continue;
          double w = 1, t[dim][dim], x[dim];  // tangent vectors t[e] (e != n)
          for (int d = 0; d < dim; ++d) x[d] = nodes[d * npc_ + i];
          for (int e = 0; e < dim; ++e) {
            if (e == n) continue;
            w *= lobatto.weights[idx[e]];
            int stride = 1;
            for (int f = 0; f < e; ++f) stride *= np1_;
            for (int d = 0; d < dim; ++d) {
              double v = 0;
              for (int j = 0; j < np1_; ++j) v += d_gll(idx[e], j) * nodes[d * npc_ + i + (j - idx[e]) * stride];
              t[e][d] = v;
            }
          }
          double area;
          if constexpr (dim == 2) {
            const int e = 1 - n;
            area = std::hypot(t[e][0], t[e][1]);
          } else {
            const int e1 = (n + 1) % 3, e2 = (n + 2) % 3;
            const double cx = t[e1][1] * t[e2][2] - t[e1][2] * t[e2][1], cy = t[e1][2] * t[e2][0] - t[e1][0] * t[e2][2],
                         cz = t[e1][0] * t[e2][1] - t[e1][1] * t[e2][0];
            area = std::sqrt(cx * cx + cy * cy + cz * cz);
          }
          FaceNode& f = slots[fc * nf + slot];
          f.node = p_index(c, i);
          f.weight = w * area;
          for (int d = 0; d < dim; ++d) f.x[d] = x[d];
          if (kind == BoundaryKind::surface) {
            values[fc * nf + slot] =
                w * area / (positive(problem.rho, "rho", x, dim) * positive(problem.g, "g", x, dim));
          } else if (kind == BoundaryKind::absorbing) {
            values[fc * nf + slot] =
                w * area / std::sqrt(positive(problem.rho, "rho", x, dim) * positive(problem.K, "K", x, dim));
          }
          ++slot;
        }
      }
    }, host_threads(), 16);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (kind == BoundaryKind::surface) surface.push_back({slots[i].node, values[i]});
      else if (kind == BoundaryKind::absorbing) absorbing.push_back({slots[i].node, values[i]});
      else seafloor_.push_back(slots[i]);
    }
  }
  // by node, each node once, summed in the order above
  auto merge = [](std::vector<NodeTerm>& terms) {
    std::stable_sort(terms.begin(), terms.end(), [](const NodeTerm& a, const NodeTerm& b) { return a.node < b.node; });
    std::vector<NodeTerm> merged;
    for (const auto& t : terms) {
      if (!merged.empty() && merged.back().node == t.node) merged.back().value += t.value;
      else merged.push_back(t);
    }
    terms.swap(merged);
  };
  merge(surface);
  merge(absorbing);
  surface_terms_ = std::move(surface);
  absorbing_terms_ = std::move(absorbing);
}

template <int dim>
double WaveOperator<dim>::damping() const {
  require_cell_data();
  double damping = 0;
  for (const auto& t : absorbing_terms_) damping = std::max(damping, absorbing_[t.node] * inv_mass_p_[t.node]);
  return damping;
}

template <int dim>
std::size_t WaveOperator<dim>::p_index(std::size_t cell, int node) const {
  std::size_t index = 0, c = cell;
  int i = node;
  for (int d = 0; d < dim; ++d) {
    const std::size_t cd = c % cells_[d];
    c /= cells_[d];
    index += (cd * k_ + i % np1_) * p_stride_[d];
    i /= np1_;
  }
  return index;
}

template <int dim>
void WaveOperator<dim>::gradient(const double* pc, double* g, double* tmp) const {
  for (int e = 0; e < dim; ++e) {
    const double* in = pc;
    std::array<int, 3> sizes = tensor::cube_sizes<dim>(np1_);
    for (int dir = 0; dir < dim; ++dir) {
      double* out = dir == dim - 1 ? g + e * nqc_ : tmp + (dir % 2) * npc_;
      tensor::apply_1d<false, false>((dir == e ? d_ : b_).data.data(), nq_, np1_, dir, sizes, in, out);
      sizes[dir] = nq_;
      in = out;
    }
  }
}

template <int dim>
void WaveOperator<dim>::gradient_transpose(const double* f, double* out, double* tmp) const {
  std::fill(out, out + npc_, 0.0);
  for (int e = 0; e < dim; ++e) {
    const double* in = f + e * nqc_;
    std::array<int, 3> sizes = tensor::cube_sizes<dim>(nq_);
    for (int dir = dim - 1; dir >= 0; --dir) {
      const auto& m = (dir == e ? d_ : b_).data;
      if (dir == 0) {
        tensor::apply_1d<true, true>(m.data(), nq_, np1_, dir, sizes, in, out);
      } else {
        double* o = tmp + (dir % 2) * npc_;
        tensor::apply_1d<true, false>(m.data(), nq_, np1_, dir, sizes, in, o);
        sizes[dir] = np1_;
        in = o;
      }
    }
  }
}

template <int dim>
void WaveOperator<dim>::seafloor_data(double t, double* b) const {
  std::fill(b, b + n_p_, 0.0);
  for (const auto& f : seafloor_) b[f.node] += f.weight * problem_.seafloor_velocity(f.x.data(), t);
}

template <int dim>
std::vector<double> WaveOperator<dim>::node_field() const {
  require_cell_data();
  std::vector<double> field(dim * n_p_);
  for (const auto& color : colors_)  // shared nodes get the same coordinates from every cell
    parallel_chunks(0, color.size(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i)
        for (int n = 0; n < npc_; ++n)
          for (int d = 0; d < dim; ++d)
            field[d * n_p_ + p_index(color[i], n)] = node_coords_[(color[i] * dim + d) * npc_ + n];
    }, host_threads(), 256);
  return field;
}

template <int dim>
std::vector<double> WaveOperator<dim>::inverse_density() const {
  require_cell_data();
  std::vector<double> r(s_.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = s_[i] * jxw_[i];
  return r;
}

template <int dim>
std::vector<std::size_t> WaveOperator<dim>::seafloor_nodes() const {
  std::vector<std::size_t> nodes;
  for (const auto& f : seafloor_) nodes.push_back(f.node);
  return nodes;
}

template <int dim>
void WaveOperator<dim>::seafloor_values(double t, double* values) const {
  parallel_chunks(0, seafloor_.size(), [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) values[i] = seafloor_[i].weight * problem_.seafloor_velocity(seafloor_[i].x.data(), t);
  }, host_threads(), 4096);
}

template <int dim>
void WaveOperator<dim>::rate(double t, const double* x, double* r, bool skew_only) const {
  require_cell_data();
  if (skew_only || seafloor_.empty()) {
    rate_impl(x, r, skew_only, nullptr);
    return;
  }
  std::vector<double> values(seafloor_.size());
  seafloor_values(t, values.data());
  rate_impl(x, r, false, values.data());
}

template <int dim>
void WaveOperator<dim>::rate_with_seafloor(const double* x, double* r, const double* seafloor_values) const {
  require_cell_data();
  rate_impl(x, r, false, seafloor_values);
}

template <int dim>
void WaveOperator<dim>::rate_impl(const double* x, double* r, bool skew_only, const double* seafloor_values) const {
  const double* u = x;
  const double* p = x + n_u_;
  double* ru = r;
  double* rp = r + n_u_;
  std::fill(rp, rp + n_p_, 0.0);
  for (const auto& color : colors_) {
    parallel_chunks(0, color.size(), [&](std::size_t b, std::size_t e, int) {
      std::vector<double> pc(npc_), g(dim * nqc_), f(dim * nqc_), out(npc_), tmp(2 * npc_);
      for (std::size_t i = b; i < e; ++i) {
        const std::size_t c = color[i];
        for (int n = 0; n < npc_; ++n) pc[n] = p[p_index(c, n)];
        gradient(pc.data(), g.data(), tmp.data());
        const double* cc = c_.data() + c * dim * dim * nqc_;
        const double* uc = u + c * dim * nqc_;
        double* rc = ru + c * dim * nqc_;
        for (int q = 0; q < nqc_; ++q) {
          const double s = s_[c * nqc_ + q];
          for (int d = 0; d < dim; ++d) {
            double v = 0;
            for (int e2 = 0; e2 < dim; ++e2) v += cc[(e2 * dim + d) * nqc_ + q] * g[e2 * nqc_ + q];
            rc[d * nqc_ + q] = -s * v;
          }
          for (int e2 = 0; e2 < dim; ++e2) {
            double v = 0;
            for (int d = 0; d < dim; ++d) v += cc[(e2 * dim + d) * nqc_ + q] * uc[d * nqc_ + q];
            f[e2 * nqc_ + q] = v;
          }
        }
        gradient_transpose(f.data(), out.data(), tmp.data());
        for (int n = 0; n < npc_; ++n) rp[p_index(c, n)] += out[n];
      }
    }, host_threads(), 16);
  }
  if (seafloor_values) {
    for (std::size_t i = 0; i < seafloor_.size(); ++i) rp[seafloor_[i].node] += seafloor_values[i];
  }
  parallel_chunks(0, n_p_, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      const double a = skew_only ? 0.0 : absorbing_[i];
      rp[i] = inv_mass_p_[i] * (rp[i] - a * p[i]);
    }
  }, host_threads(), 1 << 14);
}

template <int dim>
double WaveOperator<dim>::inner(const double* x, const double* y) const {
  require_cell_data();
  double su = 0, sp = 0;
  for (std::size_t c = 0; c < n_cells_; ++c)
    for (int d = 0; d < dim; ++d)
      for (int q = 0; q < nqc_; ++q) {
        const std::size_t i = (c * dim + d) * nqc_ + q;
        su += x[i] * y[i] / s_[c * nqc_ + q];
      }
  for (std::size_t i = 0; i < n_p_; ++i) sp += x[n_u_ + i] * y[n_u_ + i] * mass_p_[i];
  return su + sp;
}

template <int dim>
SpectralBound WaveOperator<dim>::spectral_bound(int max_applies) const {
  require_cell_data();
  const std::size_t n = n_dofs();
  std::vector<double> a(n), b(n), c(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = start_vector_entry(i);
  SpectralBound bound;
  bound.lanczos = skew_lanczos(
      a.data(), b.data(), c.data(), max_applies, lanczos_tolerance,
      [&](const double* x, double* y) { rate(0.0, x, y, true); },
      [&](const double* x) { return std::sqrt(inner(x, x)); },
      [&](double* y, double a, const double* x, double c) {
        if (c == 0) {
          for (std::size_t i = 0; i < n; ++i) y[i] *= a;
        } else {
          for (std::size_t i = 0; i < n; ++i) y[i] = a * y[i] + c * x[i];
        }
        return std::sqrt(inner(y, y));
      });
  bound.damping = damping();
  bound.radius = bound.lanczos.sigma + bound.damping;
  return bound;
}

template <int dim>
void WaveOperator<dim>::cell_nodes(std::size_t cell, double* out) const {
  if (!node_coords_.empty()) std::copy_n(node_coords_.data() + cell * dim * npc_, dim * npc_, out);
  else field_->cell_nodes(mesh_->cell_index(cell), out);
}

template <int dim>
void WaveOperator<dim>::velocity_jxw(const double* nodes, double* jxw, double* tmp) const {
  const int big = std::max(npc_, nqc_);
  double* jq = tmp + 2 * big;
  const auto gauss = fe::gauss(nq_);
  for (int d = 0; d < dim; ++d) gradient(nodes + d * npc_, jq + d * dim * nqc_, tmp);
  for (int q = 0; q < nqc_; ++q) {
    double J[dim][dim], w = 1;
    for (int d = 0, qi = q; d < dim; ++d, qi /= nq_) w *= gauss.weights[qi % nq_];
    for (int d = 0; d < dim; ++d)
      for (int e = 0; e < dim; ++e) J[d][e] = jq[(d * dim + e) * nqc_ + q];
    jxw[q] = w * determinant<dim>(J);
  }
}

template <int dim>
void WaveOperator<dim>::velocity_node_coordinates(const double* nodes, double* xq, double* tmp) const {
  for (int d = 0; d < dim; ++d) {
    const double* in = nodes + d * npc_;
    std::array<int, 3> sizes = tensor::cube_sizes<dim>(np1_);
    for (int dir = 0; dir < dim; ++dir) {
      double* out = dir == dim - 1 ? xq + d * nqc_ : tmp + (dir % 2) * npc_;
      tensor::apply_1d<false, false>(b_.data.data(), nq_, np1_, dir, sizes, in, out);
      sizes[dir] = nq_;
      in = out;
    }
  }
}

template <int dim>
std::vector<double> WaveOperator<dim>::interpolate(const SpaceFunction& p0, const std::array<SpaceFunction, dim>& u0) const {
  TimeFunction p;
  std::array<TimeFunction, dim> u;
  if (p0) p = [&p0](const double* x, double) { return p0(x); };
  for (int d = 0; d < dim; ++d)
    if (u0[d]) u[d] = [&f = u0[d]](const double* x, double) { return f(x); };
  return interpolate(p, u, 0.0);
}

template <int dim>
std::vector<double> WaveOperator<dim>::interpolate(const TimeFunction& p, const std::array<TimeFunction, dim>& u,
                                                   double t) const {
  std::vector<double> state(n_dofs(), 0.0);
  parallel_chunks(0, n_cells_, [&](std::size_t cb, std::size_t ce, int) {
    std::vector<double> xq(dim * nqc_), tmp(2 * npc_), node_buffer(dim * npc_);
    for (std::size_t c = cb; c < ce; ++c) {
      cell_nodes(c, node_buffer.data());
      const double* nodes = node_buffer.data();
      if (p) {
        // each lattice node once: from the cell where its local index is below k along every
        // direction, or the last cell along that direction
        std::array<int, dim> ci{};
        std::size_t r = c;
        for (int d = 0; d < dim; ++d) {
          ci[d] = static_cast<int>(r % cells_[d]);
          r /= cells_[d];
        }
        for (int i = 0; i < npc_; ++i) {
          bool owner = true;
          for (int d = 0, r = i; d < dim; ++d, r /= np1_) owner &= r % np1_ < k_ || ci[d] == cells_[d] - 1;
          if (!owner) continue;
          double x[dim];
          for (int d = 0; d < dim; ++d) x[d] = nodes[d * npc_ + i];
          state[n_u_ + p_index(c, i)] = p(x, t);
        }
      }
      bool any_u = false;
      for (int d = 0; d < dim; ++d) any_u |= static_cast<bool>(u[d]);
      if (any_u) velocity_node_coordinates(nodes, xq.data(), tmp.data());
      for (int d = 0; d < dim; ++d) {
        if (!u[d]) continue;
        for (int q = 0; q < nqc_; ++q) {
          double x[dim];
          for (int e = 0; e < dim; ++e) x[e] = xq[e * nqc_ + q];
          state[(c * dim + d) * nqc_ + q] = u[d](x, t);
        }
      }
    }
  });
  return state;
}

template <int dim>
typename WaveOperator<dim>::Errors WaveOperator<dim>::errors(const double* state, const TimeFunction& p,
                                                             const std::array<TimeFunction, dim>& u, double t) const {
  const auto gll = fe::LagrangeBasis1D::gauss_lobatto(k_);
  const auto rule = fe::gauss(k_ + 2);
  const int m = rule.size();
  int mc = 1;
  for (int d = 0; d < dim; ++d) mc *= m;
  const auto bv = fe::basis_values(gll, rule.points), bd = fe::basis_derivatives(gll, rule.points);
  std::vector<Errors> parts(host_threads());
  parallel_chunks(0, n_cells_, [&](std::size_t cb, std::size_t ce, int thread) {
    Errors& err = parts[thread];
    const int big = std::max(npc_, mc);
    std::vector<double> vals((dim + 1) * mc), jac(dim * dim * mc), tmp((dim * dim + 2) * big), pc(npc_),
        node_buffer(dim * npc_), cell_jxw(nqc_);
    auto interp = [&](const double* in0, double* out, int deriv) {  // B along all, D along deriv
      const double* in = in0;
      std::array<int, 3> sizes = tensor::cube_sizes<dim>(np1_);
      for (int dir = 0; dir < dim; ++dir) {
        double* o = dir == dim - 1 ? out : tmp.data() + (dir % 2) * big;
        tensor::apply_1d<false, false>((dir == deriv ? bd : bv).data.data(), m, np1_, dir, sizes, in, o);
        sizes[dir] = m;
        in = o;
      }
    };
    for (std::size_t c = cb; c < ce; ++c) {
      cell_nodes(c, node_buffer.data());
      const double* nodes = node_buffer.data();
      for (int n = 0; n < npc_; ++n) pc[n] = state[n_u_ + p_index(c, n)];
      for (int d = 0; d < dim; ++d) {
        interp(nodes + d * npc_, vals.data() + d * mc, -1);
        for (int e = 0; e < dim; ++e) interp(nodes + d * npc_, jac.data() + (d * dim + e) * mc, e);
      }
      interp(pc.data(), vals.data() + dim * mc, -1);
      for (int q = 0; q < mc; ++q) {
        double J[dim][dim], x[dim], w = 1;
        int qi = q;
        for (int d = 0; d < dim; ++d) {
          w *= rule.weights[qi % m];
          qi /= m;
          x[d] = vals[d * mc + q];
          for (int e = 0; e < dim; ++e) J[d][e] = jac[(d * dim + e) * mc + q];
        }
        const double jxw = w * determinant<dim>(J), pe = p(x, t), diff = vals[dim * mc + q] - pe;
        err.p_l2 += jxw * diff * diff;
        err.p_norm += jxw * pe * pe;
      }
      // velocity: at its nodes, weighted by the velocity mass (w det J)
      std::vector<double> xq(dim * nqc_);
      velocity_node_coordinates(nodes, xq.data(), tmp.data());  // tmp: 2 big >= 2 npc doubles
      if (jxw_.empty()) velocity_jxw(nodes, cell_jxw.data(), tmp.data());
      else std::copy_n(jxw_.data() + c * nqc_, nqc_, cell_jxw.data());
      for (int q = 0; q < nqc_; ++q) {
        double x[dim];
        for (int d = 0; d < dim; ++d) x[d] = xq[d * nqc_ + q];
        const double jxw = cell_jxw[q];
        for (int d = 0; d < dim; ++d) {
          const double ue = u[d](x, t), diff = state[(c * dim + d) * nqc_ + q] - ue;
          err.u_l2 += jxw * diff * diff;
          err.u_norm += jxw * ue * ue;
        }
      }
    }
  });
  Errors total;
  for (const auto& e : parts) {
    total.p_l2 += e.p_l2;
    total.p_norm += e.p_norm;
    total.u_l2 += e.u_l2;
    total.u_norm += e.u_norm;
  }
  total.p_l2 = std::sqrt(total.p_l2);
  total.p_norm = std::sqrt(total.p_norm);
  total.u_l2 = std::sqrt(total.u_l2);
  total.u_norm = std::sqrt(total.u_norm);
  return total;
}

template <int dim>
void WaveOperator<dim>::cell_output(const double* x, std::vector<double>& points,
                                    std::vector<std::vector<double>>& fields) const {
  const auto gauss_basis = fe::LagrangeBasis1D(fe::gauss(nq_).points);
  const auto to_nodes = fe::basis_values(gauss_basis, fe::LagrangeBasis1D::gauss_lobatto(k_).nodes());  // (k+1) x k
  points.assign(n_cells_ * npc_ * 3, 0.0);
  fields.assign(1 + dim, std::vector<double>(n_cells_ * npc_));
  parallel_chunks(0, n_cells_, [&](std::size_t cb, std::size_t ce, int) {
    std::vector<double> tmp(2 * npc_), node_buffer(dim * npc_);
    for (std::size_t c = cb; c < ce; ++c) {
      cell_nodes(c, node_buffer.data());
      const double* nodes = node_buffer.data();
      for (int i = 0; i < npc_; ++i) {
        for (int d = 0; d < dim; ++d) points[(c * npc_ + i) * 3 + d] = nodes[d * npc_ + i];
        fields[0][c * npc_ + i] = x[n_u_ + p_index(c, i)];
      }
      for (int d = 0; d < dim; ++d) {
        const double* in = x + (c * dim + d) * nqc_;
        std::array<int, 3> sizes = tensor::cube_sizes<dim>(nq_);
        for (int dir = 0; dir < dim; ++dir) {
          double* o = dir == dim - 1 ? fields[1 + d].data() + c * npc_ : tmp.data() + (dir % 2) * npc_;
          tensor::apply_1d<false, false>(to_nodes.data.data(), np1_, nq_, dir, sizes, in, o);
          sizes[dir] = np1_;
          in = o;
        }
      }
    }
  });
}

template class WaveOperator<2>;
template class WaveOperator<3>;

}  // namespace tcfem::wave
