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

/// Words of shared memory the tile variant aims at per block (36 KB in fp64: 6 blocks of 256
/// threads per SM of 228 KB; float storage half of it).
inline constexpr int dg_tile_budget_words = 4608;

/// Sizes of the face pass of (dim, n). Two variants:
/// * lines (tiles = false): a block of cells() consecutive cells reads the neighbour lines of its
///   cells straight from global memory (one strided line per item);
/// * tiles (tiles = true): a block handles a tile of cells() consecutive cells of one x-row of cells
///   and first copies, with coalesced loads, the tile and its x-neighbours (one run of cells() + 2
///   cells) and its 2 (dim - 1) y/z-neighbour runs (cells() cells each) into shared memory (the
///   staging area, one slot per cell); the face values then read shared memory.
struct DgFaceShape {
  int dim = 3, n = 2;
  bool tiles = false;
  TCFEM_HD constexpr int face_points() const { return dim == 3 ? n * n : n; }  ///< n^(dim-1)
  TCFEM_HD constexpr int dofs() const { return face_points() * n; }
  /// Words of P (and of Q) per cell: [dim][4][n^(dim-1)].
  TCFEM_HD constexpr int plane_words() const { return dim * 4 * face_points(); }
  /// Staging slot of a cell (tiles): the cell's x-lines at an odd stride line_stride() = n | 1
  /// (lanes reading x-lines t = 0, 1, .. hit distinct banks), word (x, line) at line * (n | 1) + x.
  TCFEM_HD constexpr int line_stride() const { return n | 1; }
  TCFEM_HD constexpr int slot_words() const { return face_points() * line_stride(); }
  /// Cells per block. lines: about one DoF per thread. tiles: as many as the shared-memory budget
  /// allows (at most two DoFs per thread, at least one cell).
  TCFEM_HD constexpr int cells() const {
    if (!tiles) {
      const int c = dg_face_threads / dofs();
      return c < 1 ? 1 : c;
    }
    const int fixed = 2 * slot_words() + table_words();
    const int staging = (2 * dim - 1) * slot_words(), planes = 4 * dim * plane_stride();
    const int per_cell = (staging > planes ? staging : planes) + planes;
    int c = (dg_tile_budget_words - fixed) / per_cell;
    const int cap = 2 * dg_face_threads / dofs();
    if (c > cap) c = cap;
    return c < 1 ? 1 : c;
  }
  /// Lines of a block: (cell, d, t), t fastest. P and Q are [4][lines()]: face value r of line l at
  /// r * lines() + l, so that consecutive items touch consecutive words.
  TCFEM_HD constexpr int lines() const { return cells() * dim * face_points(); }
  /// Staging slots (tiles): slot j = 0 .. cells() + 1 holds the x-row run (global cell
  /// first_cell - 1 + j), then per direction d = 1 .. dim - 1 and side (minus, plus) cells() slots
  /// (global cell first_cell + i -+ the cell stride of d).
  TCFEM_HD constexpr int slots() const { return cells() + 2 + 2 * (dim - 1) * cells(); }
  TCFEM_HD constexpr int staging_words() const { return slots() * slot_words(); }
  /// Words copied from global memory per tile (at most; cells on the domain boundary or past the
  /// end of the x-row are skipped).
  TCFEM_HD constexpr int load_words() const { return slots() * dofs(); }
  /// P and Q of the tiles variant: planes (r, cell, d), plane = (r * cells() + cell) * dim + d, of
  /// n^(dim-1) points (a, b) (a the lower tangential coordinate) at plane * plane_stride() +
  /// b * line_stride() + a: the mass steps' lanes take one line each, at odd strides.
  TCFEM_HD constexpr int plane_stride() const { return dim == 3 ? n * line_stride() : line_stride(); }
  TCFEM_HD constexpr int tile_plane_words() const { return 4 * cells() * dim * plane_stride(); }
  /// The staging area, reused by Q once the face values are computed.
  TCFEM_HD constexpr int work_words() const {
    return staging_words() > tile_plane_words() ? staging_words() : tile_plane_words();
  }
  /// The tables the steps index per lane (mass, d0, d1), copied to shared memory by the kernel:
  /// per-lane indices into kernel parameters would serialize in the constant cache.
  /// Mass rows at an odd stride (lanes of the mass steps read rows p = 0..n-1 at once: odd strides
  /// hit distinct banks), then d0 and d1.
  TCFEM_HD constexpr int mass_stride() const { return n | 1; }
  TCFEM_HD constexpr int d0_offset() const { return n * mass_stride(); }
  TCFEM_HD constexpr int d1_offset() const { return d0_offset() + n; }
  TCFEM_HD constexpr int table_words() const { return d1_offset() + n; }
  /// Shared memory of a block. lines: P, Q, then the tables. tiles: the staging area (Q reuses it
  /// once the face values are computed), P, then the tables.
  TCFEM_HD constexpr int tables_offset() const {
    return tiles ? work_words() + tile_plane_words() : 2 * cells() * plane_words();
  }
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

/// A tile of the tiles variant: count (<= cells()) consecutive cells of one x-row of cells from
/// first_cell, at coord (its first cell).
struct DgTile {
  std::int64_t first_cell = 0;
  int count = 0;
  int coord[3] = {0, 0, 0};
};

/// Tiles of a mesh: ceil(n_x / cells) per x-row of cells (the last one of a row may be shorter).
template <typename Number>
TCFEM_HD inline std::int64_t dg_tile_count(const DgFaceParams<Number>& prm, int cells) {
  return prm.total_cells / prm.n_cells[0] * ((prm.n_cells[0] + cells - 1) / cells);
}

template <typename Number>
TCFEM_HD inline DgTile dg_tile(const DgFaceParams<Number>& prm, int cells, std::int64_t index) {
  const int per_row = (prm.n_cells[0] + cells - 1) / cells;
  const std::int64_t row = index / per_row;
  DgTile tile;
  tile.coord[0] = static_cast<int>(index - row * per_row) * cells;
  tile.coord[1] = static_cast<int>(row % prm.n_cells[1]);
  tile.coord[2] = static_cast<int>(row / prm.n_cells[1]);
  tile.first_cell = row * prm.n_cells[0] + tile.coord[0];
  const int left = prm.n_cells[0] - tile.coord[0];
  tile.count = left < cells ? left : cells;
  return tile;
}

/// Staging item (tiles), item = 0 .. load_words() - 1, runs in slot order, consecutive items on
/// consecutive global words: false where the cell is not there (domain boundary, past the end of
/// the x-row); else the global word index of src and the staging word.
/// F: DgFaceShape{dim, n, true} (a constant where the kernel inlines it).
template <typename Number>
TCFEM_HD inline bool dg_tile_load_item(const DgFaceShape& F, const DgFaceParams<Number>& prm, const DgTile& tile,
                                       int item, std::int64_t& global, int& staged) {
  const int C = F.cells(), N = F.dofs(), n = F.n;
  int slot = 0, w = 0;
  std::int64_t cell = 0;
  if (item < (C + 2) * N) {  // x-row run: left neighbour, the tile, right neighbour
    slot = item / N;
    w = item - slot * N;
    if (slot == 0 && tile.coord[0] == 0) return false;
    if (slot > tile.count + 1) return false;
    if (slot == tile.count + 1 && tile.coord[0] + tile.count == prm.n_cells[0]) return false;
    cell = tile.first_cell - 1 + slot;
  } else {
    const int r = item - (C + 2) * N;
    const int run = r / (C * N);
    const int i = (r - run * C * N) / N;
    w = r - run * C * N - i * N;
    const int d = 1 + run / 2, side = run % 2;
    if (i >= tile.count) return false;
    if (side == 0 ? tile.coord[d] == 0 : tile.coord[d] + 1 == prm.n_cells[d]) return false;
    const std::int64_t stride = d == 1 ? std::int64_t(prm.n_cells[0]) : std::int64_t(prm.n_cells[0]) * prm.n_cells[1];
    cell = tile.first_cell + i + (side == 0 ? -stride : stride);
    slot = C + 2 + run * C + i;
  }
  global = cell * N + w;
  staged = slot * F.slot_words() + (w / n) * F.line_stride() + w % n;
  return true;
}

/// Staging word of node 0 of line t of direction d of the tile's cell `cell` (tiles; side -1, +1:
/// of the neighbour along d, 0: of the cell itself); node j at j * dg_tile_line_step(F, d) from it.
TCFEM_HD constexpr int dg_tile_line_offset(const DgFaceShape& F, int cell, int d, int t, int side) {
  const int n = F.n, ls = F.line_stride(), C = F.cells();
  int pos[3];
  tangential_position(F.dim, n, d, t, pos);
  int slot = cell + 1 + (d == 0 ? side : 0);
  if (d > 0 && side != 0) slot = C + 2 + (2 * (d - 1) + (side > 0 ? 1 : 0)) * C + cell;
  return slot * F.slot_words() + pos[0] + pos[1] * ls + pos[2] * n * ls;
}
TCFEM_HD constexpr int dg_tile_line_step(const DgFaceShape& F, int d) {
  return d == 0 ? 1 : d == 1 ? F.line_stride() : F.n * F.line_stride();
}

/// Word of point t of plane (r, cell, d) in P / Q of the tiles variant.
TCFEM_HD constexpr int dg_tile_plane_word(const DgFaceShape& F, int r, int cell, int d, int t) {
  return ((r * F.cells() + cell) * F.dim + d) * F.plane_stride() + (t / F.n) * F.line_stride() + t % F.n;
}

/// Step 2 of the tiles variant (and 2b in 3D), item = plane * lines + m over the 4 * cells() * dim
/// planes, lines = n (3D) or 1 (2D): the line m of the plane along tangential direction s (s = 0:
/// a, the points of line b = m; s = 1: b, the points of line a = m), out = M in; the mass entries
/// at compile-time indices of the kernel parameters (operands from the constant bank).
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_tile_mass(const DgFaceParams<Number>& prm, int s, int item, const Number* __restrict__ in,
                                  Number* __restrict__ out) {
  constexpr DgFaceShape F{dim, n, true};
  constexpr int lines = dim == 3 ? n : 1;
  const int plane = item / lines, m = item - plane * lines;
  const int step = s == 0 ? 1 : F.line_stride();
  const int first = plane * F.plane_stride() + (s == 0 ? m * F.line_stride() : m);
  Number u[n];
  TCFEM_DG_FACE_UNROLL
  for (int i = 0; i < n; ++i) u[i] = in[first + i * step];
  TCFEM_DG_FACE_UNROLL
  for (int p = 0; p < n; ++p) {
    Number sum = 0;
    TCFEM_DG_FACE_UNROLL
    for (int i = 0; i < n; ++i) sum += prm.mass[p * n + i] * u[i];
    out[first + p * step] = sum;
  }
}

/// Step 3 of the tiles variant, item = cell * n^(dim-1) + l over the x-lines l = y + n z of the
/// tile's cells: the n DoFs of the x-line, as dg_face_result (same terms, same order) with the
/// direction-x basis values at compile-time indices of the kernel parameters and the face values of
/// direction x loaded once per line. 3D: the line goes to the cell's slot of the staging area (free
/// once the second mass step is done; odd line stride), copied to dst by dg_tile_store; 2D: straight
/// to dst.
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_tile_result(const DgFaceParams<Number>& prm, const Number* __restrict__ tables,
                                    const DgTile& tile, int item, const Number* __restrict__ P,
                                    Number* __restrict__ out) {
  constexpr DgFaceShape F{dim, n, true};
  constexpr int fp = F.face_points();
  constexpr int rs = F.cells() * dim * F.plane_stride();
  const int cell = item / fp, l = item - cell * fp;
  if (cell >= tile.count) return;
  const int y = l % n, z = dim == 3 ? l / n : 0;
  Number v[n];
  TCFEM_DG_FACE_UNROLL
  for (int x = 0; x < n; ++x) v[x] = 0;
  {  // d = 0: tangential point (y, z) = l for the whole line
    const Number* q = P + dg_tile_plane_word(F, 0, cell, 0, l);
    const Number q0 = q[0], q1 = q[rs], q2 = q[2 * rs], q3 = q[3 * rs];
    TCFEM_DG_FACE_UNROLL
    for (int x = 0; x < n; ++x) {
      v[x] += prm.d0[x] * q1 + prm.d1[x] * q3;
      if (x == 0) v[x] += q0;
      if (x == n - 1) v[x] += q2;
    }
  }
  for (int d = 1; d < dim; ++d) {  // tangential point (x, the other of y, z); x_d = y or z
    const int xd = d == 1 ? y : z, other = d == 1 ? z : y;
    const Number p0 = tables[F.d0_offset() + xd], p1 = tables[F.d1_offset() + xd];
    TCFEM_DG_FACE_UNROLL
    for (int x = 0; x < n; ++x) {
      const Number* q = P + dg_tile_plane_word(F, 0, cell, d, x + n * other);
      v[x] += p0 * q[rs] + p1 * q[3 * rs];
      if (xd == 0) v[x] += q[0];
      if (xd == n - 1) v[x] += q[2 * rs];
    }
  }
  if constexpr (dim == 3) {
    Number* o = out + cell * F.slot_words() + l * F.line_stride();
    TCFEM_DG_FACE_UNROLL
    for (int x = 0; x < n; ++x) o[x] = v[x];
  } else {
    Number* o = out + (tile.first_cell + cell) * F.dofs() + l * n;
    TCFEM_DG_FACE_UNROLL
    for (int x = 0; x < n; ++x) o[x] = v[x];
  }
}

/// Step 4 of the tiles variant (3D), item = cell * n^dim + local DoF: dst from the staged result,
/// consecutive items on consecutive words of dst.
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_tile_store(const DgTile& tile, int item, const Number* __restrict__ R,
                                   Number* __restrict__ dst) {
  constexpr DgFaceShape F{dim, n, true};
  const int cell = item / F.dofs(), w = item - cell * F.dofs();
  if (cell >= tile.count) return;
  dst[tile.first_cell * F.dofs() + item] = R[cell * F.slot_words() + (w / n) * F.line_stride() + w % n];
}

/// Step 1 (tiles), item = line = ((cell * dim + d) * n^(dim-1) + t), cell < cells(): as
/// dg_face_values, the lines read from the staging area U.
template <int dim, int n, typename Number>
TCFEM_HD inline void dg_tile_face_values(const DgFaceParams<Number>& prm, const DgTile& tile, int item,
                                         const Number* __restrict__ U, Number* __restrict__ P) {
  constexpr DgFaceShape F{dim, n, true};
  constexpr int fp = F.face_points();
  const int t = item % fp;
  const int d = (item / fp) % dim;
  const int cell = item / (fp * dim);
  constexpr int rs = F.cells() * dim * F.plane_stride();  // stride of r
  Number* out = P + dg_tile_plane_word(F, 0, cell, d, t);
  if (cell >= tile.count) {
    for (int r = 0; r < 4; ++r) out[r * rs] = Number(0);
    return;
  }
  const int coord[3] = {tile.coord[0] + cell, tile.coord[1], tile.coord[2]};
  auto line = [&](int side, Number (&u)[n]) {
    const Number* s = U + dg_tile_line_offset(F, cell, d, t, side);
    const int step = dg_tile_line_step(F, d);
    for (int j = 0; j < n; ++j) u[j] = s[j * step];
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

/// Loads of the staging area issued per thread before their shared-memory stores (independent
/// global loads in flight; a load followed by its store per item would wait for each one).
inline constexpr int dg_tile_load_batch = 8;

/// The whole tiles pass for one tile, items distributed over `rank` of `size` threads; `sync`
/// separates the steps. U: work_words() words (Q reuses it), P: tile_plane_words() words;
/// tables from dg_face_tables. The caller syncs before the next tile reuses U and P.
template <int dim, int n, typename Number, class Sync>
TCFEM_HD inline void dg_tile_block(const DgFaceParams<Number>& prm, const Number* tables, const DgTile& tile,
                                   int rank, int size, const Number* __restrict__ src, Number* __restrict__ dst,
                                   Number* U, Number* P, Sync&& sync) {
  constexpr DgFaceShape F{dim, n, true};
  constexpr int lines = F.lines();
  constexpr int mass_lines = 4 * F.cells() * dim * (dim == 3 ? n : 1);
  constexpr int B = dg_tile_load_batch;
  for (int base = rank; base < F.load_words(); base += B * size) {
    Number v[B] = {};
    int staged[B];
    TCFEM_DG_FACE_UNROLL
    for (int b = 0; b < B; ++b) {
      std::int64_t global = 0;
      staged[b] = -1;
      const int item = base + b * size;
      if (item < F.load_words() && dg_tile_load_item(F, prm, tile, item, global, staged[b])) v[b] = src[global];
    }
    TCFEM_DG_FACE_UNROLL
    for (int b = 0; b < B; ++b)
      if (staged[b] >= 0) U[staged[b]] = v[b];
  }
  sync();
  for (int item = rank; item < lines; item += size) dg_tile_face_values<dim, n>(prm, tile, item, U, P);
  sync();
  Number* Q = U;  // the staging area is no longer read
  for (int item = rank; item < mass_lines; item += size) dg_tile_mass<dim, n>(prm, 0, item, P, Q);
  sync();
  if constexpr (dim == 3) {
    for (int item = rank; item < mass_lines; item += size) dg_tile_mass<dim, n>(prm, 1, item, Q, P);
    sync();
    Number* R = U;  // Q is no longer read
    for (int item = rank; item < F.cells() * F.face_points(); item += size)
      dg_tile_result<dim, n>(prm, tables, tile, item, P, R);
    sync();
    for (int item = rank; item < F.cells() * F.dofs(); item += size) dg_tile_store<dim, n>(tile, item, R, dst);
  } else {
    for (int item = rank; item < F.cells() * F.face_points(); item += size)
      dg_tile_result<dim, n>(prm, tables, tile, item, Q, dst);
  }
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
