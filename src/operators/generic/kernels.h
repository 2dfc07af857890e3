#pragma once
// Generic matrix-free kernel bodies (runtime sizes), written once for the device and the host.
// On the device a thread block runs them for one cell or face; on the host a single "thread" does
// (ThreadGroup{0, 1}), which is how CPU tests check device code against the CPU operator.
// Tensors in shared memory are lexicographic; every contraction is parallel over output entries.
#include <cstdint>

#include "core/hd.h"
#include "fe/dirichlet_bits.h"

namespace tcfem::operators {

/// Everything a kernel needs about the operator: sizes, 1D tables, geometry arrays (raw pointers,
/// host or device). Tables are row-major; per-direction tables are stacked.
template <typename Number>
struct OperatorView {
  int dim = 3, nb = 2, nq = 2;
  bool dg = false, mass = false, cartesian = true;
  int n_cells[3] = {1, 1, 1};
  std::int64_t lattice[3] = {1, 1, 1};  // cg nodes per direction
  unsigned dirichlet = fe::all_dirichlet_bits;  // cg: the constrained faces (fe/dirichlet_bits.h)
  Number h[3] = {1, 1, 1};
  // cartesian path
  const Number* mass_1d = nullptr;   // nb x nb
  const Number* stiff_1d = nullptr;  // nb x nb
  const Number* dg_self = nullptr;   // [d][variant 0..3][nb x nb]
  const Number* dg_left = nullptr;   // [d][nb x nb]
  const Number* dg_right = nullptr;  // [d][nb x nb]
  // general path
  const Number* B = nullptr;        // nq x nb
  const Number* Dq = nullptr;       // nq x nq
  const Number* end_val = nullptr;  // [side][nb]
  const Number* end_der = nullptr;  // [side][nb]
  const Number* cell_coef = nullptr;  // [cell][sym][q]
  const Number* cell_jxw = nullptr;   // [cell][q]
  const Number* face_jxw[3] = {};     // [face][q]
  const Number* face_am[3] = {};      // [face][e][q]
  const Number* face_ap[3] = {};      // [face][e][q]
  const Number* face_pen[3] = {};     // [face]
};

namespace generic {

TCFEM_HD inline int ipow(int n, int p) {
  int r = 1;
  for (int i = 0; i < p; ++i) r *= n;
  return r;
}

/// out = S (x)_d in (transpose: S^T), parallel over the entries of out; syncs at the end.
template <bool transpose, bool add, typename Number>
TCFEM_HD inline void apply_1d(const ThreadGroup& g, const Number* S, int m, int n, int d, const int* sizes,
                              const Number* in, Number* out) {
  const int n_in = transpose ? m : n, n_out = transpose ? n : m;
  int pre = 1, post = 1;
  for (int e = 0; e < d; ++e) pre *= sizes[e];
  for (int e = d + 1; e < 3; ++e) post *= sizes[e];
  const int total = pre * n_out * post;
  for (int idx = g.rank; idx < total; idx += g.size) {
    const int a = idx % pre, r = (idx / pre) % n_out, p = idx / (pre * n_out);
    const Number* x = in + a + pre * n_in * p;
    Number s = 0;
    for (int c = 0; c < n_in; ++c) s += (transpose ? S[c * n + r] : S[r * n + c]) * x[pre * c];
    out[idx] = add ? out[idx] + s : s;
  }
  g.sync();
}

/// Global cell multi-index of linear cell number `cell`.
template <typename Number>
TCFEM_HD inline void cell_coords(const OperatorView<Number>& v, std::int64_t cell, int* c) {
  for (int d = 0; d < 3; ++d) {
    c[d] = d < v.dim ? int(cell % v.n_cells[d]) : 0;
    if (d < v.dim) cell /= v.n_cells[d];
  }
}

/// Global index of local DoF i of cell c; sets `boundary` for constrained cg DoFs (on a Dirichlet face).
template <typename Number>
TCFEM_HD inline std::int64_t dof_index(const OperatorView<Number>& v, const int* c, int i, bool& boundary) {
  boundary = false;
  if (v.dg) {
    std::int64_t cell = 0;
    for (int d = v.dim - 1; d >= 0; --d) cell = cell * v.n_cells[d] + c[d];
    return cell * ipow(v.nb, v.dim) + i;
  }
  const int k = v.nb - 1;
  std::int64_t idx = 0, stride = 1;
  for (int d = 0; d < v.dim; ++d) {
    const std::int64_t p = std::int64_t(c[d]) * k + i % v.nb;
    i /= v.nb;
    if (fe::on_dirichlet_face(p, v.lattice[d], d, v.dirichlet)) boundary = true;
    idx += p * stride;
    stride *= v.lattice[d];
  }
  return idx;
}

template <typename Number>
TCFEM_HD inline int boundary_variant(const OperatorView<Number>& v, const int* c, int d) {
  return (c[d] == 0 ? 1 : 0) + (c[d] == v.n_cells[d] - 1 ? 2 : 0);
}

/// Shared-memory need (in Numbers) of cell_apply / face_apply for the view's sizes.
template <typename Number>
TCFEM_HD inline int scratch_size(const OperatorView<Number>& v) {
  const int n = v.nb > v.nq ? v.nb : v.nq;
  return ipow(n, v.dim) * (4 + v.dim) + 2 * ipow(n, v.dim) * (1 + v.dim);
}

/// v_K = A_K u_K for cell `cell` and scatter (atomically) into dst; the dg Cartesian variant
/// also reads the neighbours and writes its own cell only. cg boundary rows are left out (the
/// caller sets dst_b = src_b).
template <typename Number>
TCFEM_HD inline void cell_apply(const ThreadGroup& g, const OperatorView<Number>& v, std::int64_t cell,
                                const Number* src, Number* dst, Number* smem) {
  const int dim = v.dim, nb = v.nb, nq = v.nq;
  const int n = nb > nq ? nb : nq;
  const int cube_n = ipow(n, dim), n_dofs = ipow(nb, dim);
  Number* u = smem;
  Number* t0 = u + cube_n;
  Number* t1 = t0 + cube_n;
  Number* acc = t1 + cube_n;
  Number* grad = acc + cube_n;  // dim * cube_n
  int c[3];
  cell_coords(v, cell, c);
  const bool constrain = !v.dg && !v.mass;
  int sizes[3] = {1, 1, 1};
  auto reset_sizes = [&](int s) {
    for (int d = 0; d < 3; ++d) sizes[d] = d < dim ? s : 1;
  };
  auto gather = [&](const int* cc, Number* out) {
    for (int i = g.rank; i < n_dofs; i += g.size) {
      bool b;
      const std::int64_t idx = dof_index(v, cc, i, b);
      out[i] = (constrain && b) ? Number(0) : src[idx];
    }
    g.sync();
  };
  // result in acc (n_dofs entries)
  if (v.cartesian && v.dg && !v.mass) {
    for (int i = g.rank; i < n_dofs; i += g.size) acc[i] = 0;
    for (int d = 0; d < dim; ++d) {
      Number scale = 1;
      for (int e = 0; e < dim; ++e)
        if (e != d) scale *= v.h[e];
      for (int nbr = -1; nbr <= 1; ++nbr) {
        int cn[3] = {c[0], c[1], c[2]};
        cn[d] += nbr;
        if (cn[d] < 0 || cn[d] >= v.n_cells[d]) continue;
        const Number* S = nbr == 0   ? v.dg_self + (d * 4 + boundary_variant(v, c, d)) * nb * nb
                          : nbr < 0 ? v.dg_left + d * nb * nb
                                    : v.dg_right + d * nb * nb;
        gather(cn, u);
        reset_sizes(nb);
        const Number* in = u;
        for (int e = 0; e < dim; ++e) {
          Number* out = (e % 2) ? t1 : t0;
          apply_1d<false, false>(g, e == d ? S : v.mass_1d, nb, nb, e, sizes, in, out);
          in = out;
        }
        for (int i = g.rank; i < n_dofs; i += g.size) acc[i] += scale * in[i];
        g.sync();
      }
    }
  } else if (v.cartesian) {
    gather(c, u);
    reset_sizes(nb);
    for (int i = g.rank; i < n_dofs; i += g.size) acc[i] = 0;
    const int n_terms = v.mass ? 1 : dim;
    for (int t = 0; t < n_terms; ++t) {
      Number scale = 1;
      for (int e = 0; e < dim; ++e) scale *= (v.mass || e != t) ? v.h[e] : Number(1) / v.h[e];
      const Number* in = u;
      for (int e = 0; e < dim; ++e) {
        const Number* S = (v.mass || e != t) ? v.mass_1d : v.stiff_1d;
        Number* out = (e % 2) ? t1 : t0;
        apply_1d<false, false>(g, S, nb, nb, e, sizes, in, out);
        in = out;
      }
      for (int i = g.rank; i < n_dofs; i += g.size) acc[i] += scale * in[i];
      g.sync();
    }
  } else {
    gather(c, u);
    // values at quadrature points
    reset_sizes(nb);
    const Number* in = u;
    Number* bufs[2] = {t0, t1};
    for (int d = 0; d < dim; ++d) {
      Number* out = (d == dim - 1) ? acc : bufs[d % 2];
      apply_1d<false, false>(g, v.B, nq, nb, d, sizes, in, out);
      sizes[d] = nq;
      in = out;
    }
    const int n_pts = ipow(nq, dim);
    Number* uq = acc;
    if (v.mass) {
      const Number* jxw = v.cell_jxw + cell * n_pts;
      for (int q = g.rank; q < n_pts; q += g.size) uq[q] *= jxw[q];
      g.sync();
    } else {
      for (int d = 0; d < dim; ++d) apply_1d<false, false>(g, v.Dq, nq, nq, d, sizes, uq, grad + d * cube_n);
      const int n_sym = dim * (dim + 1) / 2;
      const Number* C = v.cell_coef + cell * n_sym * n_pts;
      for (int q = g.rank; q < n_pts; q += g.size) {
        Number gr[3], f[3];
        for (int d = 0; d < dim; ++d) gr[d] = grad[d * cube_n + q];
        for (int i = 0; i < dim; ++i) {
          Number s = 0;
          for (int j = 0; j < dim; ++j) {
            const int a = i < j ? i : j, b = i < j ? j : i;
            s += C[(a * dim - a * (a - 1) / 2 + (b - a)) * n_pts + q] * gr[j];
          }
          f[i] = s;
        }
        for (int d = 0; d < dim; ++d) grad[d * cube_n + q] = f[d];
      }
      g.sync();
      apply_1d<true, false>(g, v.Dq, nq, nq, 0, sizes, grad, uq);
      for (int d = 1; d < dim; ++d) apply_1d<true, true>(g, v.Dq, nq, nq, d, sizes, grad + d * cube_n, uq);
    }
    // integrate: B^T along each direction
    in = uq;
    Number* bufs2[2] = {t0, t1};
    for (int d = dim - 1; d >= 0; --d) {
      Number* out = (d == 0) ? u : bufs2[d % 2];
      apply_1d<true, false>(g, v.B, nq, nb, d, sizes, in, out);
      sizes[d] = nb;
      in = out;
    }
    for (int i = g.rank; i < n_dofs; i += g.size) acc[i] = u[i];
    g.sync();
  }
  // scatter
  for (int i = g.rank; i < n_dofs; i += g.size) {
    bool b;
    const std::int64_t idx = dof_index(v, c, i, b);
    if (v.cartesian && v.dg && !v.mass)
      dst[idx] = acc[i];  // own cell only, no conflicts
    else if (!(constrain && b))
      atomic_add(dst + idx, acc[i]);
  }
  g.sync();
}

/// SIPG terms of face `face` of direction d (general path), added atomically to both cells.
template <typename Number>
TCFEM_HD inline void face_apply(const ThreadGroup& g, const OperatorView<Number>& v, int d, std::int64_t face,
                                const Number* src, Number* dst, Number* smem) {
  const int dim = v.dim, nb = v.nb, nq = v.nq;
  const int n = nb > nq ? nb : nq;
  const int cube_n = ipow(n, dim), n_dofs = ipow(nb, dim);
  const int nf = ipow(nq, dim - 1);
  int pos[3], ext[3];
  for (int e = 0; e < 3; ++e) ext[e] = e < dim ? v.n_cells[e] + (e == d ? 1 : 0) : 1;
  std::int64_t r = face;
  for (int e = 0; e < 3; ++e) {
    pos[e] = int(r % ext[e]);
    r /= ext[e];
  }
  const bool has[2] = {pos[d] > 0, pos[d] < v.n_cells[d]};
  Number* u = smem;                  // cube_n
  Number* t0 = u + cube_n;           // cube_n
  Number* t1 = t0 + cube_n;          // cube_n
  Number* t2 = t1 + cube_n;          // cube_n
  Number* val = t2 + cube_n;         // 2 * cube_n (>= 2 nf)
  Number* grad = val + 2 * cube_n;   // 2 * dim * cube_n
  int sizes[3];
  for (int s = 0; s < 2; ++s) {
    if (!has[s]) continue;
    int cc[3] = {pos[0], pos[1], pos[2]};
    if (s == 0) cc[d] -= 1;
    const int side = s == 0 ? 1 : 0;
    for (int i = g.rank; i < n_dofs; i += g.size) {
      bool b;
      u[i] = src[dof_index(v, cc, i, b)];
    }
    g.sync();
    for (int e = 0; e < 3; ++e) sizes[e] = e < dim ? nb : 1;
    apply_1d<false, false>(g, v.end_val + side * nb, 1, nb, d, sizes, u, t0);
    apply_1d<false, false>(g, v.end_der + side * nb, 1, nb, d, sizes, u, t1);
    sizes[d] = 1;
    Number* vv = t0;
    Number* nd = t1;
    Number* tmp = t2;
    for (int e = 0; e < dim; ++e) {
      if (e == d) continue;
      apply_1d<false, false>(g, v.B, nq, nb, e, sizes, vv, tmp);
      Number* x = vv; vv = tmp; tmp = x;
      apply_1d<false, false>(g, v.B, nq, nb, e, sizes, nd, tmp);
      x = nd; nd = tmp; tmp = x;
      sizes[e] = nq;
    }
    Number* my_val = val + s * cube_n;
    Number* my_grad = grad + s * dim * cube_n;
    for (int q = g.rank; q < nf; q += g.size) {
      my_val[q] = vv[q];
      my_grad[d * nf + q] = nd[q];
    }
    for (int e = 0; e < dim; ++e)
      if (e != d) apply_1d<false, false>(g, v.Dq, nq, nq, e, sizes, vv, my_grad + e * nf);
    g.sync();
  }
  const Number* jxw = v.face_jxw[d] + face * nf;
  const Number* am = v.face_am[d] + face * dim * nf;
  const Number* ap = v.face_ap[d] + face * dim * nf;
  const Number gamma = v.face_pen[d][face];
  Number* val0 = val;
  Number* val1 = val + cube_n;
  Number* g0 = grad;
  Number* g1 = grad + dim * cube_n;
  if (has[0] && has[1]) {
    for (int q = g.rank; q < nf; q += g.size) {
      const Number jump = val0[q] - val1[q];
      Number dn_m = 0, dn_p = 0;
      for (int e = 0; e < dim; ++e) {
        dn_m += g0[e * nf + q] * am[e * nf + q];
        dn_p += g1[e * nf + q] * ap[e * nf + q];
      }
      const Number rv = (gamma * jump - Number(0.5) * (dn_m + dn_p)) * jxw[q];
      const Number rg = Number(-0.5) * jump * jxw[q];
      val0[q] = rv;
      val1[q] = -rv;
      for (int e = 0; e < dim; ++e) {
        g0[e * nf + q] = rg * am[e * nf + q];
        g1[e * nf + q] = rg * ap[e * nf + q];
      }
    }
  } else {
    const int s = has[0] ? 0 : 1;
    Number* vs = s == 0 ? val0 : val1;
    Number* gs = s == 0 ? g0 : g1;
    for (int q = g.rank; q < nf; q += g.size) {
      const Number uu = vs[q];
      Number dn = 0;
      for (int e = 0; e < dim; ++e) dn += gs[e * nf + q] * am[e * nf + q];
      vs[q] = (gamma * uu - dn) * jxw[q];
      for (int e = 0; e < dim; ++e) gs[e * nf + q] = -uu * jxw[q] * am[e * nf + q];
    }
  }
  g.sync();
  for (int s = 0; s < 2; ++s) {
    if (!has[s]) continue;
    const int side = s == 0 ? 1 : 0;
    Number* my_val = val + s * cube_n;
    Number* my_grad = grad + s * dim * cube_n;
    for (int e = 0; e < 3; ++e) sizes[e] = e < dim ? nq : 1;
    sizes[d] = 1;
    Number* vv = t0;
    Number* nd = t1;
    Number* tmp = t2;
    for (int q = g.rank; q < nf; q += g.size) {
      vv[q] = my_val[q];
      nd[q] = my_grad[d * nf + q];
    }
    g.sync();
    for (int e = 0; e < dim; ++e)
      if (e != d) apply_1d<true, true>(g, v.Dq, nq, nq, e, sizes, my_grad + e * nf, vv);
    for (int e = dim - 1; e >= 0; --e) {
      if (e == d) continue;
      apply_1d<true, false>(g, v.B, nq, nb, e, sizes, vv, tmp);
      Number* x = vv; vv = tmp; tmp = x;
      apply_1d<true, false>(g, v.B, nq, nb, e, sizes, nd, tmp);
      x = nd; nd = tmp; tmp = x;
      sizes[e] = nb;
    }
    apply_1d<true, false>(g, v.end_val + side * nb, 1, nb, d, sizes, vv, u);
    apply_1d<true, true>(g, v.end_der + side * nb, 1, nb, d, sizes, nd, u);
    int cc[3] = {pos[0], pos[1], pos[2]};
    if (s == 0) cc[d] -= 1;
    for (int i = g.rank; i < n_dofs; i += g.size) {
      bool b;
      atomic_add(dst + dof_index(v, cc, i, b), u[i]);
    }
    g.sync();
  }
}

}  // namespace generic
}  // namespace tcfem::operators
