#pragma once
// The face-term pass of the tensor-core SIPG (dg) Laplacian, written once for the device and the
// host (plain C++ with TCFEM_HD: the kernel in tensor_core_dg_faces_kernels.cuh runs these item
// functions per thread; tests/unit/test_tensor_core_layouts.cpp runs them in loops).
//
// The Cartesian SIPG operator is v_c = sum_d (x)_{e != d} M (x) [A_d u]_c with, along direction d,
//   [A_d u]_c = S_d u_c + e_0 alpha_L + d0 beta_L + e_k alpha_R + d1 beta_R
// (see operators/cuda_core/dg_blocks.h): S_d the interior self block (scaled by s_d = prod_{e != d} h_e),
// and per line four face values from the neighbours' traces:
//   left neighbour w:  alpha_L = -a w_k + b (d1.w),  beta_L = -b w_k
//   right neighbour w: alpha_R = -a w_0 - b (d0.w),  beta_R =  b w_0
//   left boundary:     alpha_L =  b (d0.u),          beta_L =  b u_0
//   right boundary:    alpha_R = -b (d1.u),          beta_R = -b u_k
// The tensor-core kernel computes the self part sum_d (x) M (x) S_d u with the phases of the cg
// kernel (S_d in place of w_d L_d). This pass computes the rest, per cell,
//   R_c = sum_d sum_r phi_r(x_d) [(x)_{e != d} M  F_{d,r}](tangential position),
//   phi = (e_0, d0, e_k, d1), F_{d,r} = (alpha_L, beta_L, alpha_R, beta_R) on the n^(dim-1) lines,
// and writes dst = R; the tensor-core kernel then adds its self part (dst += ...). Each cell
// writes only its own DoFs.
//
// A block handles `cells` consecutive cells in three (3D) or two (2D) steps separated by barriers,
// each a loop over items: (1) face values of every line of every direction -> P; (2) M along the
// first tangential direction P -> Q; (3D: M along the second, Q -> P); (3) R at every DoF -> dst.
// Item orders put consecutive items on consecutive words of P / Q / dst.
#include <cstdint>

#include "core/hd.h"

#if defined(__CUDA_ARCH__)
#define TCFEM_DG_FACE_UNROLL _Pragma("unroll")
#else
#define TCFEM_DG_FACE_UNROLL
#endif

namespace tcfem::operators::tensor_core {

inline constexpr int dg_face_threads = 256;

/// Run-time data of the face pass (by value to the kernel).
template <typename Number>
struct DgFaceParams {
  Number mass[9 * 9] = {};  ///< reference 1D mass matrix, row-major
  Number d0[9] = {}, d1[9] = {};  ///< reference basis derivatives at 0 and 1
  Number a[3] = {}, b[3] = {};    ///< s_d gamma_d and s_d / (2 h_d)
  int n_cells[3] = {1, 1, 1};
  std::int64_t total_cells = 0;
};

/// Sizes of the face pass of (dim, n): a block of cells() consecutive cells reads the neighbour
/// lines of its cells straight from global memory (one strided line per item).
struct DgFaceShape {
  int dim = 3, n = 2;
  TCFEM_HD constexpr int face_points() const { return dim == 3 ? n * n : n; }  ///< n^(dim-1)
  TCFEM_HD constexpr int dofs() const { return face_points() * n; }
  /// Words of P (and of Q) per cell: [dim][4][n^(dim-1)].
  TCFEM_HD constexpr int plane_words() const { return dim * 4 * face_points(); }
  /// Cells per block: about one DoF per thread.
  TCFEM_HD constexpr int cells() const {
    const int c = dg_face_threads / dofs();
    return c < 1 ? 1 : c;
  }
  /// Lines of a block: (cell, d, t), t fastest. P and Q are [4][lines()]: face value r of line l at
  /// r * lines() + l, so that consecutive items touch consecutive words.
  TCFEM_HD constexpr int lines() const { return cells() * dim * face_points(); }
  /// The tables the steps index per lane (mass, d0, d1), copied to shared memory by the kernel:
  /// per-lane indices into kernel parameters would serialize in the constant cache.
  /// Mass rows at an odd stride (lanes of the mass steps read rows p = 0..n-1 at once: odd strides
  /// hit distinct banks), then d0 and d1.
  TCFEM_HD constexpr int mass_stride() const { return n | 1; }
  TCFEM_HD constexpr int d0_offset() const { return n * mass_stride(); }
  TCFEM_HD constexpr int d1_offset() const { return d0_offset() + n; }
  TCFEM_HD constexpr int table_words() const { return d1_offset() + n; }
  /// Shared memory of a block: P, Q, then the tables.
  TCFEM_HD constexpr int tables_offset() const { return 2 * cells() * plane_words(); }
  TCFEM_HD constexpr int smem_words() const { return tables_offset() + table_words(); }
};

/// Position of the tangential index t of direction d: the other directions, lowest first.
TCFEM_HD constexpr void tangential_position(int dim, int n, int d, int t, int (&pos)[3]) {
  int e0 = -1, e1 = -1;
  for (int e = 0; e < dim; ++e)
    if (e != d) (e0 < 0 ? e0 : e1) = e;
  pos[0] = pos[1] = pos[2] = 0;
  pos[e0] = t % n;
  if (e1 >= 0) pos[e1] = t / n;
}

/// The four face values of one line of direction d of a cell at coord (alpha_L, beta_L, alpha_R,
/// beta_R to out[0], out[rs], out[2 rs], out[3 rs]); line(side, u) loads the line of the neighbour
/// on `side` (-1, +1) or of the cell itself (0).
template <int n, typename Number, class Line>
TCFEM_HD inline void dg_line_face_values(const DgFaceParams<Number>& prm, const int (&coord)[3], int d, Line&& line,
                                         Number* out, int rs) {
  auto dot = [](const Number* w, const Number (&u)[n]) {
    Number s = 0;
    for (int j = 0; j < n; ++j) s += w[j] * u[j];
    return s;
  };
  const Number a = prm.a[d], b = prm.b[d];
  Number u[n];
  Number alpha_l = 0, beta_l = 0, alpha_r = 0, beta_r = 0;
  if (coord[d] > 0) {
    line(-1, u);
    alpha_l = -a * u[n - 1] + b * dot(prm.d1, u);
    beta_l = -b * u[n - 1];
  }
  if (coord[d] + 1 < prm.n_cells[d]) {
    line(1, u);
    alpha_r = -a * u[0] - b * dot(prm.d0, u);
    beta_r = b * u[0];
  }
  if (coord[d] == 0 || coord[d] + 1 == prm.n_cells[d]) {
    line(0, u);
    if (coord[d] == 0) {
      alpha_l = b * dot(prm.d0, u);
      beta_l = b * u[0];
    }
    if (coord[d] + 1 == prm.n_cells[d]) {
      alpha_r = -b * dot(prm.d1, u);
      beta_r = -b * u[n - 1];
    }
  }
  out[0] = alpha_l;
  out[rs] = beta_l;
  out[2 * rs] = alpha_r;
  out[3 * rs] = beta_r;
}

/// Step 1 (lines), item = line = ((cell * dim + d) * n^(dim-1) + t): the four face values of line t
/// of direction d of the block's cell `cell` (global cell index first_cell + cell), read from
/// global memory, written to P[r][line], r = 0..3 (alpha_L, beta_L, alpha_R, beta_R).
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_face_values(const DgFaceParams<Number>& prm, std::int64_t first_cell, int item,
                                    const Number* __restrict__ src, Number* __restrict__ P) {
  constexpr DgFaceShape F{dim, n};
  constexpr int fp = F.face_points();
  const int t = item % fp;
  const int d = (item / fp) % dim;
  const int cell = item / (fp * dim);
  const std::int64_t global_cell = first_cell + cell;
  constexpr int rs = F.lines();  // stride of r
  Number* out = P + item;
  if (global_cell >= prm.total_cells) {
    for (int r = 0; r < 4; ++r) out[r * rs] = Number(0);
    return;
  }
  int coord[3] = {0, 0, 0};
  std::int64_t rest = global_cell;
  for (int e = 0; e < dim; ++e) {
    coord[e] = static_cast<int>(rest % prm.n_cells[e]);
    rest /= prm.n_cells[e];
  }
  int pos[3];
  tangential_position(dim, n, d, t, pos);
  int line_offset = 0, stride = 1, cell_stride = 1, line_stride = 1;
  for (int e = 0; e < dim; ++e) {
    line_offset += pos[e] * stride;
    if (e == d) line_stride = stride;
    stride *= n;
  }
  for (int e = 0; e < d; ++e) cell_stride *= prm.n_cells[e];  // neighbour along d: cell +- cell_stride
  constexpr int per_cell = F.dofs();
  auto line = [&](int side, Number (&u)[n]) {
    const Number* s = src + (global_cell + side * cell_stride) * per_cell + line_offset;
    for (int j = 0; j < n; ++j) u[j] = s[j * line_stride];
  };
  dg_line_face_values<n>(prm, coord, d, line, out, rs);
}

/// Step 2 (and 2b in 3D), item = plane * n^(dim-1) + t over the block's 4 * cells * dim planes
/// (plane = r * cells * dim + cell * dim + d):
/// out[plane][t] = sum_i M(pos_s, i) in[plane][t with its tangential coordinate s set to i]
/// (s = 0: the lower tangential direction, s = 1: the upper one). `tables`: mass, d0, d1.
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_face_mass(const Number* __restrict__ tables, int s, int item, const Number* __restrict__ in,
                                  Number* __restrict__ out) {
  constexpr int fp = DgFaceShape{dim, n}.face_points();
  const int t = item % fp;
  const int plane = item / fp;
  const int step = s == 0 ? 1 : n;
  const int p = (t / step) % n;   // this coordinate
  const int base = t - p * step;  // the others
  const Number* row = in + plane * fp + base;
  Number sum = 0;
  constexpr int ms = DgFaceShape{dim, n}.mass_stride();
  for (int i = 0; i < n; ++i) sum += tables[p * ms + i] * row[i * step];
  out[plane * fp + t] = sum;
}

/// Step 3, item = cell * n^dim + local DoF: dst = sum_d sum_r phi_r(x_d) P'[r][(cell, d, t_d)] for
/// the block's cells first_cell .. first_cell + count - 1.
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_face_result(const Number* __restrict__ tables, std::int64_t first_cell, int count, int item,
                                    const Number* __restrict__ P, Number* __restrict__ dst) {
  constexpr DgFaceShape F{dim, n};
  constexpr int fp = F.face_points();
  const int local = item % F.dofs();
  const int cell = item / F.dofs();
  if (cell >= count) return;
  int x[3] = {local % n, (local / n) % n, dim == 3 ? local / (n * n) : 0};
  Number v = 0;
  for (int d = 0; d < dim; ++d) {
    int t = 0, scale = 1;
    for (int e = 0; e < dim; ++e)
      if (e != d) {
        t += x[e] * scale;
        scale *= n;
      }
    constexpr int rs = F.lines();
    const Number* q = P + (cell * dim + d) * fp + t;
    const int xd = x[d];
    v += tables[F.d0_offset() + xd] * q[rs] + tables[F.d1_offset() + xd] * q[3 * rs];
    if (xd == 0) v += q[0];
    if (xd == n - 1) v += q[2 * rs];
  }
  dst[(first_cell + cell) * F.dofs() + local] = v;
}

/// The tables of the steps (DgFaceShape::table_words() words): mass rows at mass_stride(), d0, d1.
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_face_tables(const DgFaceParams<Number>& prm, int rank, int size, Number* tables) {
  constexpr DgFaceShape F{dim, n};
  for (int i = rank; i < F.table_words(); i += size) {
    Number v = 0;  // the padding column of the mass rows
    if (i < F.d0_offset()) {
      if (i % F.mass_stride() < n) v = prm.mass[(i / F.mass_stride()) * n + i % F.mass_stride()];
    } else {
      v = i < F.d1_offset() ? prm.d0[i - F.d0_offset()] : prm.d1[i - F.d1_offset()];
    }
    tables[i] = v;
  }
}

/// The whole pass for the block of cells starting at first_cell, items distributed over `rank`
/// of `size` threads; `sync` separates the steps. P and Q: cells() * plane_words() words each;
/// tables from dg_face_tables.
template <int dim, int n, typename Number, class Sync>
TCFEM_HD inline void dg_face_block(const DgFaceParams<Number>& prm, const Number* tables, std::int64_t first_cell,
                                   int rank, int size, const Number* __restrict__ src, Number* __restrict__ dst,
                                   Number* P, Number* Q, Sync&& sync) {
  constexpr DgFaceShape F{dim, n};
  constexpr int lines = F.lines();
  constexpr int plane_points = 4 * lines;
  for (int item = rank; item < lines; item += size) dg_face_values<dim, n>(prm, first_cell, item, src, P);
  sync();
  for (int item = rank; item < plane_points; item += size) dg_face_mass<dim, n>(tables, 0, item, P, Q);
  sync();
  const Number* result = Q;
  if constexpr (dim == 3) {
    for (int item = rank; item < plane_points; item += size) dg_face_mass<dim, n>(tables, 1, item, Q, P);
    sync();
    result = P;
  }
  const std::int64_t left = prm.total_cells - first_cell;
  const int count = left < F.cells() ? static_cast<int>(left) : F.cells();
  for (int item = rank; item < F.cells() * F.dofs(); item += size)
    dg_face_result<dim, n>(tables, first_cell, count, item, result, dst);
}

/// CUDA-core flops of the pass per cell (for the work model): face values, tangential mass
/// products, result.
TCFEM_HD constexpr double dg_face_flops_per_cell(int dim, int n) {
  const double fp = dim == 3 ? n * n : n;
  const double values = dim * fp * (2.0 * 2 * n + 6);  // two dot products and the scalings per line
  const double mass = (dim - 1) * dim * 4 * fp * 2.0 * n;
  const double result = fp * n * dim * 6.0;
  return values + mass + result;
}

}  // namespace tcfem::operators::tensor_core
