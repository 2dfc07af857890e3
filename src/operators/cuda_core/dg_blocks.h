#pragma once
// Block programs of the cuda-core Cartesian SIPG (dg) kernels, written once for the device and the
// host (see operators/cuda_core/blocks.h for how kernels and the host emulator run them).
//
// The Cartesian SIPG operator is v_c = sum_d s_d (x)_{e != d} M (x) [A_d u]_c, s_d = prod_{e!=d} h_e,
// where along direction d the line matrix A_d couples a cell to its two neighbours. With the
// Gauss-Lobatto basis every coupling is a rank-2 update of the cell's line:
//   [A_d u]_c = S u_c + e_0 alpha_L + d0 beta_L + e_k alpha_R + d1 beta_R
// S: the interior self block (symmetric, centrosymmetric: even-odd), d0/d1: basis derivatives at
// the line's ends, and (alpha, beta) from the neighbours' face value and normal derivative:
//   left neighbour w:  alpha_L = -a w_k + b (d1.w),  beta_L = -b w_k
//   right neighbour w: alpha_R = -a w_0 - b (d0.w),  beta_R =  b w_0
//   left boundary:     alpha_L =  b (d0.u),          beta_L =  b u_0
//   right boundary:    alpha_R = -b (d1.u),          beta_R = -b u_k
// (a = s_d gamma_d, b = s_d / (2 h_d); the boundary rows are the difference between the boundary
// and interior self blocks of sipg_line_blocks). Each cell writes only its own DoFs: no atomics.
//
// 3D: a block works on T x T cells in x, y and streams through a segment of their z layers; per layer
//   column phase (thread per node column): T1 = Mz u, W = [A_z u] (the z neighbours are the
//       layers below and above, held in registers); halo threads load the face data of the cells
//       around the tile (value and normal derivative, Mz applied) into the face slots of the planes
//   x phase (per cell line along x): A = Mx W + [A_x T1], B = Mx T1; neighbour face data by
//       shuffles inside the tile, from the face slots at its edges; the y-neighbours' face rows get Mx
//   y phase (per cell line along y): v = My A + [A_y B], stored to dst.
// 2D: a warp owns T cells in x and streams through y layers: column phase (T1 = My u, W = [A_y u],
// raw x-neighbour face data), x phase v = Mx W + [A_x T1] (neighbour data with My applied).
#include <cstdint>

#include "core/hd.h"
#include "operators/cuda_core/blocks.h"
#include "operators/cuda_core/layouts.h"

namespace tcfem::operators::cuda_core {

template <int dim, int k, typename Number>
struct DgParams : TileWork {
  static constexpr int n = k + 1;
  EvenOdd<n, Number> mass;       ///< reference 1D mass matrix
  EvenOdd<n, Number> self[dim];  ///< s_d * interior SIPG self block of direction d
  Number mass_full[n * n];       ///< reference mass matrix, row-major (face data of 2D halos)
  Number d0[n], d1[n];           ///< reference basis derivatives at 0 and 1
  Number a[dim], b[dim];         ///< s_d gamma_d and s_d / (2 h_d)
  int cells[3] = {1, 1, 1};
};

/// Face data of a line: value and derivative at both ends.
template <typename Number>
struct FaceData {
  Number u0, uk, g0, g1;
};

template <int n, typename Number, class Params>
TCFEM_HD inline FaceData<Number> face_data(const Params& p, const Number (&u)[n]) {
  FaceData<Number> f;
  f.u0 = u[0];
  f.uk = u[n - 1];
  Number g0 = 0, g1 = 0;
  unroll<n>([&](auto j) {
    g0 += p.d0[j] * u[j];
    g1 += p.d1[j] * u[j];
  });
  f.g0 = g0;
  f.g1 = g1;
  return f;
}

/// out = S u + the face updates of direction d. `left`/`right`: whether the neighbour exists; its
/// face data (wk, g1w) on the left, (w0, g0w) on the right.
template <int d, int n, typename Number, class Params>
TCFEM_HD inline void dg_line(const Params& p, const Number (&u)[n], const EoVec<n, Number>& ue,
                             const FaceData<Number>& own, bool left, Number wk, Number g1w, bool right, Number w0,
                             Number g0w, Number (&out)[n]) {
  EoVec<n, Number> y;
  eo_mult<false>(p.self[d], ue, y);
  eo_join(y, out);
  (void)u;
  const Number a = p.a[d], b = p.b[d];
  const Number alpha_l = left ? -a * wk + b * g1w : b * own.g0;
  const Number beta_l = left ? -b * wk : b * own.u0;
  const Number alpha_r = right ? -a * w0 - b * g0w : -b * own.g1;
  const Number beta_r = right ? b * w0 : -b * own.uk;
  out[0] += alpha_l;
  out[n - 1] += alpha_r;
  unroll<n>([&](auto i) { out[i] += p.d0[i] * beta_l + p.d1[i] * beta_r; });
}

// ---- 3D program ------------------------------------------------------------------------------------

template <int k, typename Number>
struct Dg3Program {
  static constexpr int n = k + 1;
  static constexpr Dg3Layout L = dg3_layout(k, sizeof(Number));
  static constexpr int delta = segment_delta(L.group, L.map);
  using Params = DgParams<3, k, Number>;

  /// A1: T1, then B (and the face slots); A2: W, then A.
  struct Smem {
    Number* A1;
    Number* A2;
  };
  TCFEM_HD static Smem smem_arrays(Number* base) { return Smem{base, base + L.array_elements()}; }
  static constexpr int smem_elements() { return 2 * L.array_elements(); }

  struct Block {
    int cx0 = 0, cy0 = 0;  ///< first cell of the tile
    int cz0 = 0, cz1 = 0;  ///< layers [cz0, cz1)
  };
  TCFEM_HD static Block block(const Params& p, const Segment& sg) {
    Block blk;
    blk.cx0 = int(sg.tile % p.tiles[0]) * L.T;
    blk.cy0 = int(sg.tile / p.tiles[0]) * L.T;
    blk.cz0 = sg.cz0;
    blk.cz1 = sg.cz1;
    return blk;
  }

  /// First DoF of cell (cx, cy, cz).
  TCFEM_HD static std::int64_t cell_base(const Params& p, int cx, int cy, int cz) {
    return ((std::int64_t(cz) * p.cells[1] + cy) * p.cells[0] + cx) * (n * n * n);
  }

  struct Thread {
    Number cur[n], next[n];  ///< columns of the current and the next layer
    Number prev_uk, prev_g1; ///< face data of the layer below (top face)
    int x = 0, y = 0, xl = 0, yl = 0, cx = 0, cy = 0;
    bool valid = false, in = false;
  };

  TCFEM_HD static void init(const Params& p, const Block& blk, int t, Thread& th) {
    const Column c = column_of(L, t);
    th.x = c.x;
    th.y = c.y;
    th.valid = c.valid;
    th.xl = c.x % n;
    th.yl = c.y % n;
    th.cx = blk.cx0 + c.x / n;
    th.cy = blk.cy0 + c.y / n;
    th.in = c.valid && th.cx < p.cells[0] && th.cy < p.cells[1];
    th.prev_uk = th.prev_g1 = Number(0);
    for (int i = 0; i < n; ++i) th.cur[i] = th.next[i] = Number(0);
  }

  TCFEM_HD static void load_column(const Params& p, const Thread& th, int cz, const Number* src, Number (&u)[n]) {
    if (!th.in || cz < 0 || cz >= p.cells[2]) return;
    const Number* s = src + cell_base(p, th.cx, th.cy, cz) + th.yl * n + th.xl;
    unroll<n>([&](auto z) { u[z] = s[z * n * n]; });
  }

  /// Prologue: current and next layer, and the face data of the layer below the segment.
  TCFEM_HD static void start(const Params& p, const Block& blk, Thread& th, const Number* src) {
    load_column(p, th, blk.cz0, src, th.cur);
    load_column(p, th, blk.cz0 + 1, src, th.next);
    if (blk.cz0 > 0 && th.in) {
      Number below[n] = {};
      load_column(p, th, blk.cz0 - 1, src, below);
      const auto f = face_data<n>(p, below);
      th.prev_uk = f.uk;
      th.prev_g1 = f.g1;
    }
  }

  /// Halo item h (< 4 NS): face data of the cell next to the tile, Mz applied, to the face slots.
  TCFEM_HD static void halo(const Params& p, const Block& blk, int h, int cz, const Smem& sm, const Number* src) {
    if (h >= 4 * L.NS) return;
    const int side = h / L.NS, t = h % L.NS;
    int hx, hy;
    if (side < 2) {
      hx = side == 0 ? blk.cx0 - 1 : blk.cx0 + L.T;
      hy = blk.cy0 + t / n;
    } else {
      hx = blk.cx0 + t / n;
      hy = side == 2 ? blk.cy0 - 1 : blk.cy0 + L.T;
    }
    if (hx < 0 || hy < 0 || hx >= p.cells[0] || hy >= p.cells[1]) return;
    const Number* s = src + cell_base(p, hx, hy, cz);
    const int tl = t % n;
    // the normal line through tangential position tl at each z: x-halos run along x, y-halos along y
    const int line_stride = side < 2 ? 1 : n, line_offset = side < 2 ? tl * n : tl;
    const bool low = side == 0 || side == 2;  // neighbour below the tile: its upper face touches it
    Number F[n], G[n];
    unroll<n>([&](auto z) {
      Number u[n];
      unroll<n>([&](auto j) { u[j] = s[z * n * n + line_offset + j * line_stride]; });
      const auto f = face_data<n>(p, u);
      F[z] = low ? f.uk : f.u0;
      G[z] = low ? f.g1 : f.g0;
    });
    const auto Fe = eo_split(F), Ge = eo_split(G);
    EoVec<n, Number> y;
    Number Fz[n], Gz[n];
    eo_mult<false>(p.mass, Fe, y);
    eo_join(y, Fz);
    eo_mult<false>(p.mass, Ge, y);
    eo_join(y, Gz);
    const int slot = L.NS + 2 * (side % 2);
    unroll<n>([&](auto z) {
      if (side < 2) {
        sm.A1[address(L, slot, t, z)] = Fz[z];
        sm.A1[address(L, slot + 1, t, z)] = Gz[z];
      } else {
        sm.A1[address(L, t, slot, z)] = Fz[z];
        sm.A1[address(L, t, slot + 1, z)] = Gz[z];
      }
    });
  }

  /// Column phase of layer cz: T1 and W to shared memory; then the layer above becomes current
  /// and the next one is loaded.
  TCFEM_HD static void column(const Params& p, const Block& blk, Thread& th, int cz, const Smem& sm,
                              const Number* src) {
    if (th.valid) {
      const auto ue = eo_split(th.cur);
      const auto own = face_data<n>(p, th.cur);
      Number t1[n], w[n];
      EoVec<n, Number> y;
      eo_mult<false>(p.mass, ue, y);
      eo_join(y, t1);
      const bool right = cz + 1 < p.cells[2];
      const auto nf = face_data<n>(p, th.next);
      dg_line<2>(p, th.cur, ue, own, cz > 0, th.prev_uk, th.prev_g1, right, nf.u0, nf.g0, w);
      unroll<n>([&](auto z) {
        sm.A1[address(L, th.x, th.y, z)] = t1[z];
        sm.A2[address(L, th.x, th.y, z)] = w[z];
      });
      th.prev_uk = own.uk;
      th.prev_g1 = own.g1;
      unroll<n>([&](auto z) { th.cur[z] = th.next[z]; });
    }
    (void)blk;
    load_column(p, th, cz + 2, src, th.next);
  }

  struct LineOut {
    LineItem it;
    Number t[n], w[n];
    FaceData<Number> f;
  };

  TCFEM_HD static void x_compute(const Params& p, const Smem& sm, int unit, int lane, LineOut& o) {
    o.it = x_line_item(L, unit, lane);
    const int base = address(L, o.it.seg * n, o.it.line, o.it.plane);
    unroll<n>([&](auto i) {
      o.t[i] = sm.A1[base + i];
      o.w[i] = sm.A2[base + i];
    });
    o.f = face_data<n>(p, o.t);
  }

  /// left: (uk, g1) of the item to the left; right: (u0, g0) of the item to the right.
  TCFEM_HD static void x_finish(const Params& p, const Block& blk, const Smem& sm, LineOut& o, Number l_uk,
                                Number l_g1, Number r_u0, Number r_g0) {
    if (!o.it.valid) return;
    const int base = address(L, o.it.seg * n, o.it.line, o.it.plane);
    const auto te = eo_split(o.t);
    EoVec<n, Number> y;
    Number b_out[n];
    eo_mult<false>(p.mass, te, y);
    eo_join(y, b_out);
    unroll<n>([&](auto i) { sm.A1[base + i] = b_out[i]; });
    if (o.it.line >= L.NS) return;  // face rows of the y-neighbours: Mx only
    const int gx = blk.cx0 + o.it.seg;
    const bool left = gx > 0, right = gx + 1 < p.cells[0];
    if (left && o.it.seg == 0) {
      l_uk = sm.A1[address(L, L.NS, o.it.line, o.it.plane)];
      l_g1 = sm.A1[address(L, L.NS + 1, o.it.line, o.it.plane)];
    }
    if (right && o.it.seg == L.T - 1) {
      r_u0 = sm.A1[address(L, L.NS + 2, o.it.line, o.it.plane)];
      r_g0 = sm.A1[address(L, L.NS + 3, o.it.line, o.it.plane)];
    }
    Number a_out[n];
    dg_line<0>(p, o.t, te, o.f, left, l_uk, l_g1, right, r_u0, r_g0, a_out);
    const auto we = eo_split(o.w);
    eo_mult<false>(p.mass, we, y);
    Number mw[n];
    eo_join(y, mw);
    unroll<n>([&](auto i) { sm.A2[base + i] = a_out[i] + mw[i]; });
  }

  TCFEM_HD static void y_compute(const Params& p, const Smem& sm, int unit, int lane, LineOut& o) {
    o.it = y_line_item(L, unit, lane);
    const int base = address(L, o.it.line, o.it.seg * n, o.it.plane);
    unroll<n>([&](auto j) {
      o.t[j] = sm.A1[base + j * L.RS];
      o.w[j] = sm.A2[base + j * L.RS];
    });
    o.f = face_data<n>(p, o.t);
  }

  TCFEM_HD static void y_finish(const Params& p, const Block& blk, const Smem& sm, LineOut& o, Number l_uk,
                                Number l_g1, Number r_u0, Number r_g0, int cz, Number* dst) {
    if (!o.it.valid) return;
    const int gy = blk.cy0 + o.it.seg, gx = blk.cx0 + o.it.line / n;
    if (gx >= p.cells[0] || gy >= p.cells[1]) return;
    const bool left = gy > 0, right = gy + 1 < p.cells[1];
    if (left && o.it.seg == 0) {
      l_uk = sm.A1[address(L, o.it.line, L.NS, o.it.plane)];
      l_g1 = sm.A1[address(L, o.it.line, L.NS + 1, o.it.plane)];
    }
    if (right && o.it.seg == L.T - 1) {
      r_u0 = sm.A1[address(L, o.it.line, L.NS + 2, o.it.plane)];
      r_g0 = sm.A1[address(L, o.it.line, L.NS + 3, o.it.plane)];
    }
    const auto te = eo_split(o.t);
    Number v[n];
    dg_line<1>(p, o.t, te, o.f, left, l_uk, l_g1, right, r_u0, r_g0, v);
    const auto we = eo_split(o.w);
    EoVec<n, Number> y;
    eo_mult<false>(p.mass, we, y);
    Number mw[n];
    eo_join(y, mw);
    Number* d = dst + cell_base(p, gx, gy, cz) + o.it.plane * n * n + o.it.line % n;
    unroll<n>([&](auto j) { d[j * n] = v[j] + mw[j]; });
  }
};

// ---- 2D program ------------------------------------------------------------------------------------

template <int k, typename Number>
struct Dg2Program {
  static constexpr int n = k + 1;
  static constexpr Dg2Layout L = dg2_layout(k, sizeof(Number));
  static constexpr int delta = segment_delta(L.group, L.map);
  using Params = DgParams<2, k, Number>;

  struct Smem {
    Number* A1;
    Number* A2;
  };
  TCFEM_HD static Smem smem_arrays(Number* base, int w) {
    const int a = L.array_elements();
    return Smem{base + 2 * a * w, base + 2 * a * w + a};
  }
  static constexpr int smem_elements() { return 2 * L.array_elements() * L.warps; }

  struct Block {
    int cx0 = 0, cy0 = 0, cy1 = 0;
    bool active = false;
  };
  TCFEM_HD static Block block(const Params& p, const Segment& sg) {
    Block blk;
    blk.active = true;
    blk.cx0 = int(sg.tile) * L.T;
    blk.cy0 = sg.cz0;
    blk.cy1 = sg.cz1;
    (void)p;
    return blk;
  }

  TCFEM_HD static std::int64_t cell_base(const Params& p, int cx, int cy) {
    return (std::int64_t(cy) * p.cells[0] + cx) * (n * n);
  }

  struct Thread {
    Number cur[n], next[n];
    Number prev_uk, prev_g1;
    int x = 0, xl = 0, cx = 0;
    bool valid = false, in = false;
  };

  TCFEM_HD static void init(const Params& p, const Block& blk, int lane, Thread& th) {
    th.x = lane;
    th.valid = blk.active && lane < L.NS;
    th.xl = lane % n;
    th.cx = blk.cx0 + lane / n;
    th.in = th.valid && th.cx < p.cells[0];
    th.prev_uk = th.prev_g1 = Number(0);
    for (int i = 0; i < n; ++i) th.cur[i] = th.next[i] = Number(0);
  }

  TCFEM_HD static void load_column(const Params& p, const Thread& th, int cy, const Number* src, Number (&u)[n]) {
    if (!th.in || cy < 0 || cy >= p.cells[1]) return;
    const Number* s = src + cell_base(p, th.cx, cy) + th.xl;
    unroll<n>([&](auto y) { u[y] = s[y * n]; });
  }

  TCFEM_HD static void start(const Params& p, const Block& blk, Thread& th, const Number* src) {
    load_column(p, th, blk.cy0, src, th.cur);
    load_column(p, th, blk.cy0 + 1, src, th.next);
    if (blk.cy0 > 0 && th.in) {
      Number below[n] = {};
      load_column(p, th, blk.cy0 - 1, src, below);
      const auto f = face_data<n>(p, below);
      th.prev_uk = f.uk;
      th.prev_g1 = f.g1;
    }
  }

  /// Halo item h = side * n + row (< 2 n): raw face data of the x-neighbour's row.
  TCFEM_HD static void halo(const Params& p, const Block& blk, int h, int cy, const Smem& sm, const Number* src) {
    if (h >= 2 * n) return;
    const int side = h / n, row = h % n;
    const int hx = side == 0 ? blk.cx0 - 1 : blk.cx0 + L.T;
    if (hx < 0 || hx >= p.cells[0]) return;
    const Number* s = src + cell_base(p, hx, cy) + row * n;
    Number u[n];
    unroll<n>([&](auto j) { u[j] = s[j]; });
    const auto f = face_data<n>(p, u);
    sm.A1[address(L, L.NS + 2 * side, row)] = side == 0 ? f.uk : f.u0;
    sm.A1[address(L, L.NS + 2 * side + 1, row)] = side == 0 ? f.g1 : f.g0;
  }

  TCFEM_HD static void column(const Params& p, const Block& blk, Thread& th, int cy, const Smem& sm,
                              const Number* src) {
    if (th.valid) {
      const auto ue = eo_split(th.cur);
      const auto own = face_data<n>(p, th.cur);
      Number t1[n], w[n];
      EoVec<n, Number> y;
      eo_mult<false>(p.mass, ue, y);
      eo_join(y, t1);
      const auto nf = face_data<n>(p, th.next);
      dg_line<1>(p, th.cur, ue, own, cy > 0, th.prev_uk, th.prev_g1, cy + 1 < p.cells[1], nf.u0, nf.g0, w);
      unroll<n>([&](auto r) {
        sm.A1[address(L, th.x, r)] = t1[r];
        sm.A2[address(L, th.x, r)] = w[r];
      });
      th.prev_uk = own.uk;
      th.prev_g1 = own.g1;
      unroll<n>([&](auto r) { th.cur[r] = th.next[r]; });
    }
    (void)blk;
    load_column(p, th, cy + 2, src, th.next);
  }

  struct LineOut {
    LineItem it;
    Number t[n], w[n];
    FaceData<Number> f;
  };

  TCFEM_HD static void x_compute(const Params& p, const Smem& sm, int unit, int lane, LineOut& o) {
    o.it = line_item(L, unit, lane);
    unroll<n>([&](auto i) {
      o.t[i] = sm.A1[address(L, o.it.seg * n + i, o.it.plane)];
      o.w[i] = sm.A2[address(L, o.it.seg * n + i, o.it.plane)];
    });
    o.f = face_data<n>(p, o.t);
  }

  /// Neighbour face data outside the tile: M applied along y to the raw face slots.
  TCFEM_HD static void halo_face(const Params& p, const Smem& sm, int slot, int row, Number& value, Number& deriv) {
    Number v = 0, g = 0;
    for (int r = 0; r < n; ++r) {
      const Number m = p.mass_full[row * n + r];
      v += m * sm.A1[address(L, slot, r)];
      g += m * sm.A1[address(L, slot + 1, r)];
    }
    value = v;
    deriv = g;
  }

  TCFEM_HD static void x_finish(const Params& p, const Block& blk, const Smem& sm, LineOut& o, Number l_uk,
                                Number l_g1, Number r_u0, Number r_g0, int cy, Number* dst) {
    if (!o.it.valid) return;
    const int gx = blk.cx0 + o.it.seg;
    if (gx >= p.cells[0]) return;
    const bool left = gx > 0, right = gx + 1 < p.cells[0];
    if (left && o.it.seg == 0) halo_face(p, sm, L.NS, o.it.plane, l_uk, l_g1);
    if (right && o.it.seg == L.T - 1) halo_face(p, sm, L.NS + 2, o.it.plane, r_u0, r_g0);
    const auto te = eo_split(o.t);
    Number v[n];
    dg_line<0>(p, o.t, te, o.f, left, l_uk, l_g1, right, r_u0, r_g0, v);
    const auto we = eo_split(o.w);
    EoVec<n, Number> y;
    eo_mult<false>(p.mass, we, y);
    Number mw[n];
    eo_join(y, mw);
    Number* d = dst + cell_base(p, gx, cy) + o.it.plane * n;
    unroll<n>([&](auto i) { d[i] = v[i] + mw[i]; });
  }
};

}  // namespace tcfem::operators::cuda_core
