#include "operators/cpu/laplace_operator.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/parallel.h"
#include "fe/lagrange.h"
#include "operators/operator_tables.h"

namespace tcfem::operators {

const char* to_string(Path p) { return p == Path::cartesian ? "cartesian" : "general"; }

namespace {
template <typename Number>
std::vector<Number> to_number(const std::vector<double>& v) {
  return std::vector<Number>(v.begin(), v.end());
}
constexpr int ipow(int n, int p) { return p == 0 ? 1 : n * ipow(n, p - 1); }
}  // namespace

template <int dim, typename Number>
MatrixFreeOperator<dim, Number>::MatrixFreeOperator(const mesh::BoxMesh<dim>& mesh,
                                                    const fe::DofLayout<dim>& dofs,
                                                    const OperatorConfig& config, Form form)
    : mesh_(&mesh), dofs_(&dofs), config_(config), form_(form) {
  if (config.degree != dofs.degree() || config.disc != dofs.disc())
    throw InputError("operator configuration does not match the DoF layout");
  const int k = config.degree;
  n_b_ = k + 1;
  path_ = uses_cartesian_path(mesh, dofs, config) ? Path::cartesian : Path::general;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  mass_1d_ = to_number<Number>(fe::exact_mass_matrix(basis).data);
  stiff_1d_ = to_number<Number>(fe::exact_stiffness_matrix(basis).data);
  const int nb = n_b_;
  const int cube_b = ipow(nb, dim);
  if (path_ == Path::cartesian && config.disc == fe::Disc::dg && form == Form::laplace) {
    const auto h = mesh.cell_size();
    for (int d = 0; d < dim; ++d) {
      const auto blocks = sipg_line_blocks(basis, h[d]);
      for (int variant = 0; variant < 4; ++variant) dg_self_[d][variant] = to_number<Number>(blocks.self[variant]);
      dg_left_[d] = to_number<Number>(blocks.left);
      dg_right_[d] = to_number<Number>(blocks.right);
    }
  }
  if (path_ == Path::general) {
    const auto quad = fe::make_quadrature(config.quadrature, k);
    geometry_ = std::make_unique<mesh::GeometryField<dim>>(mesh, k);
    eval_ = std::make_unique<tensor::Evaluator<dim, Number>>(basis, quad);
    // the mass form has no coefficient
    const Coefficient none;
    const Coefficient& a = form == Form::laplace ? config.coefficient : none;
    cell_geo_ = compute_cell_geometry<dim, Number>(mesh, *geometry_, quad, a);
    if (config.disc == fe::Disc::dg && form == Form::laplace)
      face_geo_ = compute_face_geometry<dim, Number>(mesh, *geometry_, quad, cell_geo_, double(k) * (k + 1), a,
                                                     dofs.dirichlet_faces());
  }
  const int n_max = std::max(nb, path_ == Path::general ? eval_->n_q() : nb);
  const int big = ipow(n_max, dim) * dim;
  for (auto* s : {&s0_, &s1_, &s2_, &s3_, &s4_, &s5_}) s->resize(big);
  idx0_.resize(cube_b);
  idx1_.resize(cube_b);
}

template <int dim, typename Number>
MatrixFreeOperator<dim, Number>::~MatrixFreeOperator() = default;

template <int dim, typename Number>
std::size_t MatrixFreeOperator<dim, Number>::memory_bytes() const {
  std::size_t b = cell_geo_.memory_bytes() + face_geo_.memory_bytes();
  if (geometry_) b += geometry_->memory_bytes();
  return b;
}

template <int dim, typename Number>
double MatrixFreeOperator<dim, Number>::estimated_bytes_per_dof(const OperatorConfig& config,
                                                                mesh::GeometryKind g) {
  if (g == mesh::GeometryKind::cartesian && config.cartesian_fast_path && !config.coefficient) return 0.0;
  const int k = config.degree;
  const int nq = fe::make_quadrature(config.quadrature, k).size();
  // points per cell over dofs per cell (cg: k^dim new DoFs per cell; dg: (k+1)^dim)
  const double dofs_per_cell = std::pow(config.disc == fe::Disc::cg ? k : k + 1, dim);
  double per_cell = std::pow(nq, dim) * (n_sym<dim> + 1) * sizeof(Number);
  if (config.disc == fe::Disc::dg) per_cell += dim * std::pow(nq, dim - 1) * (1 + 2 * dim) * sizeof(Number);
  per_cell += std::pow(k, dim) * dim * sizeof(double);  // geometry field
  return per_cell / dofs_per_cell;
}

// ---- cell kernels ---------------------------------------------------------------------------

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::apply_cartesian_cell(const Number* u, Number* v,
                                                           const std::array<int, dim>& c) const {
  using tensor::apply_1d;
  const int nb = n_b_;
  const auto h = mesh_->cell_size();
  const auto sizes = tensor::cube_sizes<dim>(nb);
  const int n = ipow(nb, dim);
  std::fill(v, v + n, Number(0));
  Number* a = s0_.data();
  Number* b = s1_.data();
  if (form_ == Form::mass) {
    double scale = 1.0;
    for (int d = 0; d < dim; ++d) scale *= h[d];
    const Number* in = u;
    for (int d = 0; d < dim; ++d) {
      Number* out = (d % 2) ? b : a;
      apply_1d<false, false>(mass_1d_.data(), nb, nb, d, sizes, in, out);
      in = out;
    }
    for (int i = 0; i < n; ++i) v[i] = static_cast<Number>(scale) * in[i];
    return;
  }
  for (int d = 0; d < dim; ++d) {
    double scale = 1.0;
    for (int e = 0; e < dim; ++e) scale *= (e == d) ? 1.0 / h[e] : h[e];
    const Number* in = u;
    for (int e = 0; e < dim; ++e) {
      const Number* S;
      if (e != d)
        S = mass_1d_.data();
      else if (config_.disc == fe::Disc::cg)
        S = stiff_1d_.data();
      else {
        const int variant = (c[d] == 0 ? 1 : 0) + (c[d] == mesh_->n_cells()[d] - 1 ? 2 : 0);
        S = dg_self_[d][variant].data();
        scale *= h[d];  // the SIPG blocks already hold 1/h_d
      }
      Number* out = (e % 2) ? b : a;
      apply_1d<false, false>(S, nb, nb, e, sizes, in, out);
      in = out;
    }
    for (int i = 0; i < n; ++i) v[i] += static_cast<Number>(scale) * in[i];
  }
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::apply_general_cell(const Number* u, Number* v, std::size_t cell) const {
  const int nq = eval_->points_per_cell();
  Number* uq = s0_.data();
  Number* grad = s1_.data();
  eval_->values(u, uq);
  if (form_ == Form::mass) {
    const Number* jxw = cell_geo_.JxW.data() + cell * nq;
    for (int q = 0; q < nq; ++q) uq[q] *= jxw[q];
    eval_->integrate_values(uq, v);
    return;
  }
  eval_->gradients_from_values(uq, grad);
  const Number* C = cell_geo_.coef.data() + cell * n_sym<dim> * nq;
  for (int q = 0; q < nq; ++q) {
    Number g[dim], f[dim];
    for (int d = 0; d < dim; ++d) g[d] = grad[d * nq + q];
    for (int i = 0; i < dim; ++i) {
      Number s = 0;
      for (int j = 0; j < dim; ++j) s += C[sym_index<dim>(i, j) * nq + q] * g[j];
      f[i] = s;
    }
    for (int d = 0; d < dim; ++d) grad[d * nq + q] = f[d];
  }
  std::fill(uq, uq + nq, Number(0));
  eval_->integrate_gradients(grad, uq);
  eval_->integrate_values(uq, v);
}

// ---- vmult ------------------------------------------------------------------------------------

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::vmult(Vector<Number>& dst, const Vector<Number>& src) const {
  TCFEM_ASSERT(src.size() == dofs_->n_local() && dst.size() == dofs_->n_local(), "vector size mismatch");
  TCFEM_ASSERT(src.data() != dst.data(), "vmult needs distinct vectors");
  const auto& ghosts = dofs_->ghost_layout();
  if (ghosts) ghosts->update_ghosts(const_cast<Number*>(src.data()));  // ghost values: copies of other ranks'
  dst.fill(Number(0));
  if (config_.disc == fe::Disc::dg && form_ == Form::laplace && path_ == Path::cartesian) {
    apply_dg_cartesian(dst, src);
    if (ghosts) ghosts->zero_ghosts(dst.data());
    return;
  }
  const int n = dofs_->dofs_per_cell();
  const bool cg = config_.disc == fe::Disc::cg;
  const bool constrain = cg && form_ == Form::laplace;
  const auto& bmask = dofs_->boundary_mask();
  Number* u = s4_.data();
  Number* v = s5_.data();
  index_t* idx = idx0_.data();
  for (std::size_t cell = 0; cell < mesh_->n_owned_cells(); ++cell) {
    const auto c = mesh_->cell_index(cell);
    dofs_->cell_dof_indices(c, idx);
    for (int i = 0; i < n; ++i) u[i] = (constrain && bmask[idx[i]]) ? Number(0) : src[idx[i]];
    if (path_ == Path::cartesian)
      apply_cartesian_cell(u, v, c);
    else
      apply_general_cell(u, v, cell);
    for (int i = 0; i < n; ++i)
      if (!(constrain && bmask[idx[i]])) dst[idx[i]] += v[i];
  }
  if (config_.disc == fe::Disc::dg && form_ == Form::laplace) apply_faces_general(dst, src);
  finish_cell_sums(dst.data());
  if (constrain)
    for (std::size_t i = 0; i < dst.size(); ++i)
      if (bmask[i]) dst[i] = src[i];
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::finish_cell_sums(Number* v) const {
  const auto& ghosts = dofs_->ghost_layout();
  if (!ghosts) return;
  // cg: the ghost nodes' contributions of this rank's cells belong to their owners; dg: the owner
  // of a ghost cell computes the face terms of its own side itself
  if (config_.disc == fe::Disc::cg)
    ghosts->add_ghosts_to_owners(v);
  else
    ghosts->zero_ghosts(v);
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::apply_dg_cartesian(Vector<Number>& dst, const Vector<Number>& src) const {
  using tensor::apply_1d;
  const int nb = n_b_, n = dofs_->dofs_per_cell();
  const auto h = mesh_->cell_size();
  const auto sizes = tensor::cube_sizes<dim>(nb);
  Number* acc = s2_.data();
  Number* a = s0_.data();
  Number* b = s1_.data();
  for (std::size_t cell = 0; cell < mesh_->n_owned_cells(); ++cell) {
    const auto c = mesh_->cell_index(cell);
    std::fill(acc, acc + n, Number(0));
    for (int d = 0; d < dim; ++d) {
      double scale = 1.0;
      for (int e = 0; e < dim; ++e)
        if (e != d) scale *= h[e];
      for (int nbr = -1; nbr <= 1; ++nbr) {
        auto cn = c;
        cn[d] += nbr;
        if (cn[d] < 0 || cn[d] >= mesh_->n_cells()[d]) continue;
        const Number* S;
        if (nbr == 0) {
          const int variant = (c[d] == 0 ? 1 : 0) + (c[d] == mesh_->n_cells()[d] - 1 ? 2 : 0);
          S = dg_self_[d][variant].data();
        } else {
          S = (nbr < 0 ? dg_left_[d] : dg_right_[d]).data();
        }
        dofs_->cell_dof_indices(cn, idx1_.data());
        const Number* in = src.data() + idx1_[0];  // dg cells are contiguous
        for (int e = 0; e < dim; ++e) {
          Number* out = (e % 2) ? b : a;
          apply_1d<false, false>(e == d ? S : mass_1d_.data(), nb, nb, e, sizes, in, out);
          in = out;
        }
        for (int i = 0; i < n; ++i) acc[i] += static_cast<Number>(scale) * in[i];
      }
    }
    dofs_->cell_dof_indices(c, idx0_.data());
    for (int i = 0; i < n; ++i) dst[idx0_[i]] += acc[i];
  }
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::apply_faces_general(Vector<Number>& dst, const Vector<Number>& src) const {
  const int n = dofs_->dofs_per_cell();
  const int nf = face_geo_.points_per_face;
  Number* u[2] = {s0_.data(), s1_.data()};
  Number* val[2] = {s2_.data(), s2_.data() + nf};
  Number* grad[2] = {s3_.data(), s3_.data() + dim * nf};
  Number* outv = s4_.data();
  const auto& owned = mesh_->partition().owned;
  for (int d = 0; d < dim; ++d) {
    const auto& dir = face_geo_.dirs[d];
    std::size_t n_faces = 1;
    for (int e = 0; e < dim; ++e) n_faces *= dir.extent[e];
    for (std::size_t f = 0; f < n_faces; ++f) {
      const auto pos = face_position<dim>(dir.extent, owned, f);
      const bool has[2] = {pos[d] > 0, pos[d] < mesh_->n_cells()[d]};
      std::array<int, dim> cells[2] = {pos, pos};
      cells[0][d] -= 1;
      index_t* idx[2] = {idx0_.data(), idx1_.data()};
      for (int s = 0; s < 2; ++s) {
        if (!has[s]) continue;
        dofs_->cell_dof_indices(cells[s], idx[s]);
        for (int i = 0; i < n; ++i) u[s][i] = src[idx[s][i]];
        eval_->face_evaluate(u[s], d, s == 0 ? 1 : 0, val[s], grad[s]);
      }
      const Number* jxw = dir.JxW.data() + f * nf;
      const Number* am = dir.a_minus.data() + f * dim * nf;
      const Number* ap = dir.a_plus.data() + f * dim * nf;
      const Number gamma = dir.penalty[f];
      if (has[0] && has[1]) {
        for (int q = 0; q < nf; ++q) {
          const Number jump = val[0][q] - val[1][q];
          Number dn_m = 0, dn_p = 0;
          for (int e = 0; e < dim; ++e) {
            dn_m += grad[0][e * nf + q] * am[e * nf + q];
            dn_p += grad[1][e * nf + q] * ap[e * nf + q];
          }
          const Number avg = Number(0.5) * (dn_m + dn_p);
          const Number rv = (gamma * jump - avg) * jxw[q];
          const Number rg = Number(-0.5) * jump * jxw[q];
          val[0][q] = rv;
          val[1][q] = -rv;
          for (int e = 0; e < dim; ++e) {
            grad[0][e * nf + q] = rg * am[e * nf + q];
            grad[1][e * nf + q] = rg * ap[e * nf + q];
          }
        }
      } else {
        const int s = has[0] ? 0 : 1;
        for (int q = 0; q < nf; ++q) {
          const Number uu = val[s][q];
          Number dn = 0;
          for (int e = 0; e < dim; ++e) dn += grad[s][e * nf + q] * am[e * nf + q];
          val[s][q] = (gamma * uu - dn) * jxw[q];
          for (int e = 0; e < dim; ++e) grad[s][e * nf + q] = -uu * jxw[q] * am[e * nf + q];
        }
      }
      for (int s = 0; s < 2; ++s) {
        if (!has[s]) continue;
        std::fill(outv, outv + n, Number(0));
        eval_->face_integrate(val[s], grad[s], d, s == 0 ? 1 : 0, outv);
        for (int i = 0; i < n; ++i) dst[idx[s][i]] += outv[i];
      }
    }
  }
}

// ---- diagonal ---------------------------------------------------------------------------------

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::diagonal_cartesian_cell(Number* diag, const std::array<int, dim>& c) const {
  const int nb = n_b_, n = ipow(nb, dim);
  const auto h = mesh_->cell_size();
  std::fill(diag, diag + n, Number(0));
  auto entry = [&](const std::vector<Number>& S, int i) { return S[i * nb + i]; };
  for (int t = 0; t < (form_ == Form::mass ? 1 : dim); ++t) {
    double scale = 1.0;
    for (int e = 0; e < dim; ++e) scale *= (form_ == Form::mass || e != t) ? h[e] : 1.0 / h[e];
    const std::vector<Number>* S_t = &stiff_1d_;
    if (form_ == Form::laplace && config_.disc == fe::Disc::dg) {
      const int variant = (c[t] == 0 ? 1 : 0) + (c[t] == mesh_->n_cells()[t] - 1 ? 2 : 0);
      S_t = &dg_self_[t][variant];
      scale *= h[t];
    }
    for (int i = 0; i < n; ++i) {
      int r = i;
      double p = scale;
      for (int e = 0; e < dim; ++e) {
        const int ie = r % nb;
        r /= nb;
        p *= (form_ == Form::laplace && e == t) ? double(entry(*S_t, ie)) : double(entry(mass_1d_, ie));
      }
      diag[i] += static_cast<Number>(p);
    }
  }
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::diagonal_general_cell(Number* diag, std::size_t cell) const {
  using tensor::apply_1d;
  const int nb = n_b_, nq1 = eval_->n_q(), nq = eval_->points_per_cell();
  const auto& B = eval_->B();
  const auto& Db = eval_->Db();
  const int n = ipow(nb, dim);
  std::fill(diag, diag + n, Number(0));
  std::vector<Number> F[2][2];  // F[x][y](q,i) = X_x(q,i) * X_y(q,i), X_0 = B, X_1 = Db
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y) {
      F[x][y].resize(nq1 * nb);
      for (int k = 0; k < nq1 * nb; ++k) F[x][y][k] = (x ? Db[k] : B[k]) * (y ? Db[k] : B[k]);
    }
  auto contract = [&](const Number* coef, auto factor_of_dir, Number scale) {
    // diag += scale * sum_q coef(q) prod_e F_e(q_e, i_e)
    std::array<int, 3> s = tensor::cube_sizes<dim>(nq1);
    const Number* in = coef;
    Number* bufs[2] = {s0_.data(), s1_.data()};
    for (int e = dim - 1; e >= 0; --e) {
      Number* out = bufs[e % 2];
      apply_1d<true, false>(factor_of_dir(e).data(), nq1, nb, e, s, in, out);
      s[e] = nb;
      in = out;
    }
    for (int i = 0; i < n; ++i) diag[i] += scale * in[i];
  };
  if (form_ == Form::mass) {
    contract(cell_geo_.JxW.data() + cell * nq, [&](int) -> const std::vector<Number>& { return F[0][0]; },
             Number(1));
    return;
  }
  for (int a = 0; a < dim; ++a)
    for (int b = a; b < dim; ++b) {
      const Number* coef = cell_geo_.coef.data() + (cell * n_sym<dim> + sym_index<dim>(a, b)) * nq;
      contract(coef,
               [&](int e) -> const std::vector<Number>& { return F[e == a ? 1 : 0][e == b ? 1 : 0]; },
               Number(a == b ? 1 : 2));
    }
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::diagonal_faces_general(Vector<Number>& diag) const {
  using tensor::apply_1d;
  const int nb = n_b_, nq1 = eval_->n_q(), nf = face_geo_.points_per_face;
  const int n = ipow(nb, dim);
  const auto& B = eval_->B();
  const auto& Db = eval_->Db();
  std::vector<Number> BB(nq1 * nb), DB(nq1 * nb);
  for (int k = 0; k < nq1 * nb; ++k) {
    BB[k] = B[k] * B[k];
    DB[k] = Db[k] * B[k];
  }
  std::vector<Number> coef(nf), out(n), vv(nb), vd(nb);
  const auto& owned = mesh_->partition().owned;
  // sum_q coef(q) prod_{e != d} F_e(q_e, i_e) * normal(i_d), accumulated into out
  auto contract = [&](int d, const Number* cf, int tangential_db_dir, const std::vector<Number>& normal) {
    std::array<int, 3> s = tensor::cube_sizes<dim>(nq1);
    s[d] = 1;
    Number* bufs[2] = {s0_.data(), s1_.data()};
    const Number* in = cf;
    int which = 0;
    for (int e = dim - 1; e >= 0; --e) {
      if (e == d) continue;
      Number* o = bufs[which ^= 1];
      apply_1d<true, false>((e == tangential_db_dir ? DB : BB).data(), nq1, nb, e, s, in, o);
      s[e] = nb;
      in = o;
    }
    apply_1d<true, true>(normal.data(), 1, nb, d, s, in, out.data());
  };
  for (int d = 0; d < dim; ++d) {
    const auto& dir = face_geo_.dirs[d];
    std::size_t n_faces = 1;
    for (int e = 0; e < dim; ++e) n_faces *= dir.extent[e];
    for (std::size_t f = 0; f < n_faces; ++f) {
      const auto pos = face_position<dim>(dir.extent, owned, f);
      const bool has[2] = {pos[d] > 0, pos[d] < mesh_->n_cells()[d]};
      const bool interior = has[0] && has[1];
      const Number* jxw = dir.JxW.data() + f * nf;
      const Number gamma = dir.penalty[f];
      for (int s = 0; s < 2; ++s) {
        if (!has[s]) continue;
        const int ref_side = s == 0 ? 1 : 0;
        // outward vector a_out = J^{-1} n_out: n points from - to +, outward for the - side
        const Number* a = (interior && s == 1) ? dir.a_plus.data() + f * dim * nf : dir.a_minus.data() + f * dim * nf;
        const Number sign = (interior && s == 1) ? Number(-1) : Number(1);
        const Number c = interior ? Number(1) : Number(2);
        const auto& ev = eval_->end_values(ref_side);
        const auto& ed = eval_->end_derivatives(ref_side);
        for (int i = 0; i < nb; ++i) {
          vv[i] = ev[i] * ev[i];
          vd[i] = ev[i] * ed[i];
        }
        std::fill(out.begin(), out.end(), Number(0));
        for (int q = 0; q < nf; ++q) coef[q] = gamma * jxw[q];
        contract(d, coef.data(), -1, vv);
        for (int q = 0; q < nf; ++q) coef[q] = -c * sign * jxw[q] * a[d * nf + q];
        contract(d, coef.data(), -1, vd);
        for (int e = 0; e < dim; ++e) {
          if (e == d) continue;
          for (int q = 0; q < nf; ++q) coef[q] = -c * sign * jxw[q] * a[e * nf + q];
          contract(d, coef.data(), e, vv);
        }
        auto cell = pos;
        if (s == 0) cell[d] -= 1;
        dofs_->cell_dof_indices(cell, idx0_.data());
        for (int i = 0; i < n; ++i) diag[idx0_[i]] += out[i];
      }
    }
  }
}

template <int dim, typename Number>
std::vector<double> MatrixFreeOperator<dim, Number>::cell_metric() const {
  if (form_ != Form::laplace) throw Error("cell_metric: the operator is not the Laplace form");
  const std::size_t n_cells = mesh_->n_owned_cells();
  std::vector<double> g(n_cells * dim);
  if (path_ == Path::cartesian) {
    const auto h = mesh_->cell_size();
    double volume = 1.0;
    for (int d = 0; d < dim; ++d) volume *= h[d];
    for (std::size_t cell = 0; cell < n_cells; ++cell)
      for (int d = 0; d < dim; ++d) g[cell * dim + d] = volume / (h[d] * h[d]);
    return g;
  }
  const int nq = eval_->points_per_cell();
  for (std::size_t cell = 0; cell < n_cells; ++cell)
    for (int d = 0; d < dim; ++d) {
      const Number* c = cell_geo_.coef.data() + (cell * n_sym<dim> + sym_index<dim>(d, d)) * nq;
      double sum = 0.0;
      for (int q = 0; q < nq; ++q) sum += static_cast<double>(c[q]);
      g[cell * dim + d] = sum;
    }
  return g;
}

template <int dim, typename Number>
void MatrixFreeOperator<dim, Number>::compute_diagonal(Vector<Number>& diag) const {
  diag.resize(dofs_->n_local());
  diag.set_layout(dofs_->ghost_layout());
  const int n = dofs_->dofs_per_cell();
  const bool constrain = config_.disc == fe::Disc::cg && form_ == Form::laplace;
  const auto& bmask = dofs_->boundary_mask();
  if (config_.disc == fe::Disc::cg && path_ == Path::cartesian) {
    // the Cartesian cg operator is a Kronecker sum of globally assembled 1D matrices (sum over t of
    // K_t x prod_{e != t} M_e), so its diagonal is the same sum of products of their diagonals:
    // every entry (ghosts too) at once from dim short arrays
    const int k = config_.degree, nb = n_b_;
    const auto h = mesh_->cell_size();
    const auto& part = mesh_->partition();
    std::array<std::vector<double>, dim> mass, stiff;
    for (int d = 0; d < dim; ++d) {
      const long extent = dofs_->lattice_extent()[d], begin = long(k) * part.ghosted.begin[d];
      mass[d].assign(std::size_t(extent), 0.0);
      stiff[d].assign(std::size_t(extent), 0.0);
      for (long q = 0; q < extent; ++q) {
        const long p = begin + q;
        for (long c = p / k - (p % k == 0 ? 1 : 0); c <= p / k; ++c) {
          if (c < 0 || c >= part.global_cells[d]) continue;
          const long i = p - long(k) * c;
          mass[d][q] += h[d] * double(mass_1d_[i * nb + i]);
          stiff[d][q] += double(stiff_1d_[i * nb + i]) / h[d];
        }
      }
    }
    const auto extent = dofs_->lattice_extent();
    parallel_chunks(0, diag.size(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        std::array<std::size_t, dim> q;
        std::size_t r = i;
        for (int d = 0; d < dim; ++d) {
          q[d] = r % std::size_t(extent[d]);
          r /= std::size_t(extent[d]);
        }
        double v = 0.0;
        for (int t = 0; t < (form_ == Form::mass ? 1 : dim); ++t) {
          double prod = 1.0;
          for (int d = 0; d < dim; ++d) prod *= (form_ == Form::laplace && d == t) ? stiff[d][q[d]] : mass[d][q[d]];
          v += prod;
        }
        diag[i] = (constrain && bmask[i]) ? Number(1) : static_cast<Number>(v);
      }
    }, host_threads(), 4096);
    return;
  }
  std::vector<Number> local(n);
  for (std::size_t cell = 0; cell < mesh_->n_owned_cells(); ++cell) {
    const auto c = mesh_->cell_index(cell);
    if (path_ == Path::cartesian)
      diagonal_cartesian_cell(local.data(), c);
    else
      diagonal_general_cell(local.data(), cell);
    dofs_->cell_dof_indices(c, idx1_.data());
    for (int i = 0; i < n; ++i) diag[idx1_[i]] += local[i];
  }
  if (config_.disc == fe::Disc::dg && form_ == Form::laplace && path_ == Path::general)
    diagonal_faces_general(diag);
  finish_cell_sums(diag.data());
  diag.update_ghost_values();  // every stored entry valid (Jacobi divides by all of them)
  if (constrain)
    for (std::size_t i = 0; i < diag.size(); ++i)
      if (bmask[i]) diag[i] = Number(1);
}

template class MatrixFreeOperator<2, double>;
template class MatrixFreeOperator<3, double>;
template class MatrixFreeOperator<2, float>;
template class MatrixFreeOperator<3, float>;

}  // namespace tcfem::operators
