#pragma once
// Block programs of the cuda-core Cartesian cg kernels, written once for the device and the host.
// A kernel (operators/cuda_core/kernels.cuh) runs the phases of a program in order with __syncthreads()
// between them and one warp shuffle inside the line phases; the host emulator
// (operators/cuda_core/emulator.h) runs the same phase functions thread by thread, which is how CPU tests
// check the index logic of the device kernels.
//
// Algorithm (3D; 2D drops the y phase). A block works on a tile of T x T cells in x and y and a
// range of its cell layers in z (a work item, see TileWork::segment). The operator of the tile is a sum of Kronecker products of the assembled 1D
// matrices of its lines (a Cartesian brick is a tensor product of 1D cell lines), so nodes shared
// by cells of the tile are summed inside the contractions and only the tile's edge columns and the
// segment's end planes need atomics. The block streams through the layers of its segment: per layer
//   column phase: thread per (x, y) node column, z in registers:
//       v = Mz R + cz Lz S over the k+1 nodes of the layer (bottom node carried from the layer
//       below), written to dst; the layer's input planes are put to shared memory (U)
//   x phase: per (cell segment, y, plane): P = Mx u, Q = cx Lx u
//   y phase: per (cell segment, x, plane): R = My Q + cy Ly P, S = My P
// with c_d = prod_{e != d} h_e / h_d. 7 contractions of a line per layer, each with the
// even-odd decomposition of the symmetric, centrosymmetric 1D matrices. Dirichlet rows are left
// out (the constrained inputs are read as 0) and dst_b = src_b is written where the input is read.
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/hd.h"
#include "operators/cuda_core/layouts.h"

namespace tcfem::operators::cuda_core {

/// A compile-time index usable on host and device.
template <int I>
struct Index {
  static constexpr int value = I;
  TCFEM_HD constexpr operator int() const { return I; }
};

/// f(Index<i>) for i = 0..N-1, unrolled at compile time (register arrays stay in registers).
template <class F, int... I>
TCFEM_HD inline void unroll_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(Index<I>{}), ...);
}
template <int N, class F>
TCFEM_HD inline void unroll(F&& f) {
  unroll_impl(f, std::make_integer_sequence<int, N>{});
}

// ---- even-odd decomposition ----------------------------------------------------------------------

/// A symmetric, centrosymmetric n x n matrix A (A_ij = A_{n-1-i,n-1-j}) as its even part
/// E (ne x ne) and odd part O (m x m), m = n/2, ne = n - m:
///   E_ij = (A_ij + A_{i,n-1-j}) / 2 (j < m), E_im = A_im (n odd),  O_ij = (A_ij - A_{i,n-1-j}) / 2;
/// v = A u is v_i = e_i + o_i, v_{n-1-i} = e_i - o_i with e = E (u_j + u_{n-1-j}), o = O (u_j - u_{n-1-j}).
template <int n, typename Number>
struct EvenOdd {
  static constexpr int m = n / 2, ne = n - m;
  Number e[ne * ne];
  Number o[m * m];
};

/// A vector in even-odd form.
template <int n, typename Number>
struct EoVec {
  static constexpr int m = n / 2, ne = n - m;
  Number e[ne];
  Number o[m];
};

template <int n, typename Number>
TCFEM_HD inline EoVec<n, Number> eo_split(const Number (&u)[n]) {
  constexpr int m = n / 2;
  EoVec<n, Number> x;
  unroll<m>([&](auto i) {
    x.e[i] = u[i] + u[n - 1 - i];
    x.o[i] = u[i] - u[n - 1 - i];
  });
  if constexpr (n % 2 == 1) x.e[m] = u[m];
  return x;
}

/// y = A x (add = false) or y += A x.
template <bool add, int n, typename Number>
TCFEM_HD inline void eo_mult(const EvenOdd<n, Number>& A, const EoVec<n, Number>& x, EoVec<n, Number>& y) {
  constexpr int m = n / 2, ne = n - m;
  unroll<ne>([&](auto i) {
    Number s = add ? y.e[i] : Number(0);
    unroll<ne>([&](auto j) { s += A.e[i * ne + j] * x.e[j]; });
    y.e[i] = s;
  });
  unroll<m>([&](auto i) {
    Number s = add ? y.o[i] : Number(0);
    unroll<m>([&](auto j) { s += A.o[i * m + j] * x.o[j]; });
    y.o[i] = s;
  });
}

template <int n, typename Number>
TCFEM_HD inline void eo_join(const EoVec<n, Number>& y, Number (&v)[n]) {
  constexpr int m = n / 2;
  unroll<m>([&](auto i) {
    v[i] = y.e[i] + y.o[i];
    v[n - 1 - i] = y.e[i] - y.o[i];
  });
  if constexpr (n % 2 == 1) v[m] = y.e[m];
}

/// Floating-point operations of one even-odd product (split, products, join).
constexpr double eo_flops(int n, int products_per_split = 1) {
  const int m = n / 2, ne = n - m;
  return 2.0 * m / products_per_split + 2.0 * (ne * ne + m * m) + 2.0 * m;
}

// ---- work distribution -----------------------------------------------------------------------------

/// Work items are chunks of `chunk` cell layers of one tile, numbered chunk-major (the items
/// running at one time cover the same range of layers of neighbouring tiles, which share their
/// edge columns in L2). The workers (blocks in 3D, warps in 2D) take items from a queue counter
/// until none is left, so uneven speeds and partial waves cost at most one item per worker.
struct Segment {
  std::int64_t tile = 0;
  int cz0 = 0, cz1 = 0;  ///< layers [cz0, cz1) of the tile
};

TCFEM_HD inline std::int64_t count_items(std::int64_t tiles, int layers, int chunk) {
  return tiles * ((layers + chunk - 1) / chunk);
}

/// The tiles [tile0[d], tile1[d]) (d = x, and y in 3D) and the layers [layer0, layer1) one launch
/// works on. A whole apply is one launch over every tile and layer; an apply split for the overlap
/// with a ghost exchange (DeviceOperator::split_apply) runs an interior region first and the
/// regions around it once the ghosts have arrived.
struct WorkRegion {
  int tile0[2] = {0, 0}, tile1[2] = {1, 1};
  int layer0 = 0, layer1 = 1;
  TCFEM_HD int tiles_x() const { return tile1[0] - tile0[0]; }
  TCFEM_HD std::int64_t n_tiles() const { return std::int64_t(tile1[0] - tile0[0]) * (tile1[1] - tile0[1]); }
  TCFEM_HD int n_layers() const { return layer1 - layer0; }
  TCFEM_HD bool empty() const { return tile1[0] <= tile0[0] || tile1[1] <= tile0[1] || layer1 <= layer0; }
};

/// The work distribution of the tile-streaming kernels (the base of their parameters): the tile
/// grid, the layers, the items of one launch (chunks of `chunk` layers of the tiles of `region`,
/// chunk-major) and the queue counter the workers take them from.
struct TileWork {
  int tiles[2] = {1, 1};      ///< tiles along x (and y in 3D)
  int layers = 1;             ///< cells along the streaming direction
  int chunk = 1;              ///< layers per work item
  WorkRegion region;          ///< the tiles and layers of this launch (whole_region(): all)
  unsigned* queue = nullptr;  ///< work-item counter, 0 at the start of a launch
  TCFEM_HD std::int64_t n_tiles() const { return std::int64_t(tiles[0]) * tiles[1]; }
  TCFEM_HD std::int64_t n_items() const { return count_items(region.n_tiles(), region.n_layers(), chunk); }
  /// Item `item` of the launch: its tile (numbered over the whole tile grid) and layers.
  TCFEM_HD Segment segment(std::int64_t item) const {
    const std::int64_t rt = region.n_tiles();
    const std::int64_t t = item % rt;
    const int rx = region.tiles_x();
    Segment s;
    s.tile = (region.tile0[1] + t / rx) * tiles[0] + region.tile0[0] + t % rx;
    s.cz0 = region.layer0 + int(item / rt) * chunk;
    s.cz1 = s.cz0 + chunk < region.layer1 ? s.cz0 + chunk : region.layer1;
    return s;
  }
  /// Every tile and layer.
  TCFEM_HD WorkRegion whole_region() const {
    WorkRegion r;
    r.tile1[0] = tiles[0];
    r.tile1[1] = tiles[1];
    r.layer1 = layers;
    return r;
  }
};

// ---- parameters ------------------------------------------------------------------------------------

/// Kernel parameters of the Cartesian cg Laplacian (passed by value: the matrices land in the
/// constant bank and feed the FMAs directly).
template <int dim, int k, typename Number>
struct CgParams : TileWork {
  EvenOdd<k + 1, Number> mass;         ///< reference 1D mass matrix
  EvenOdd<k + 1, Number> stiff[dim];   ///< c_d * reference 1D stiffness matrix
  int lattice[3] = {1, 1, 1};          ///< nodes per direction
  std::int64_t plane = 1;              ///< nodes of one lattice plane normal to the streaming direction
};

// ---- 3D program ------------------------------------------------------------------------------------

template <int k, typename Number>
struct Cg3Program {
  static constexpr int n = k + 1;
  static constexpr Cg3Layout L = cg3_layout(k, sizeof(Number));
  static constexpr int delta = segment_delta(L.group, L.map);  ///< lane of the left segment: lane - delta
  using Params = CgParams<3, k, Number>;

  /// Shared arrays (each L.array_elements()): U input (and R), P, Q, S.
  struct Smem {
    Number* U;
    Number* P;
    Number* Q;
    Number* S;
  };
  TCFEM_HD static Smem smem_arrays(Number* base) {
    const int a = L.array_elements();
    return Smem{base, base + a, base + 2 * a, base + 3 * a};
  }
  static constexpr int smem_elements() { return 4 * L.array_elements(); }

  struct Block {
    int X0 = 0, Y0 = 0;    ///< first node of the tile
    int cz0 = 0, cz1 = 0;  ///< layers [cz0, cz1)
  };
  TCFEM_HD static Block block(const Params& p, const Segment& sg) {
    Block blk;
    blk.X0 = int(sg.tile % p.tiles[0]) * L.T * k;
    blk.Y0 = int(sg.tile / p.tiles[0]) * L.T * k;
    blk.cz0 = sg.cz0;
    blk.cz1 = sg.cz1;
    return blk;
  }

  /// Per-thread state carried across phases (registers on the device).
  struct Thread {
    Number pre[k];            ///< prefetched input planes of the next layer
    Number r0, s0, carry;     ///< R, S of the layer's bottom plane; partial output of its top plane
    int x = 0, y = 0;         ///< column in the tile
    std::int64_t col = 0;     ///< lattice index of the column's node in plane 0
    bool valid = false;       ///< a column of the tile
    bool in = false;          ///< inside the lattice
    bool bnd = false;         ///< on the lattice boundary (x or y)
    bool edge = false;        ///< on the tile's edge (shared with a neighbour tile)
  };

  TCFEM_HD static void init(const Params& p, const Block& blk, int t, Thread& th) {
    const Column c = column_of(L, t);
    th.x = c.x;
    th.y = c.y;
    th.valid = c.valid;
    const int gx = blk.X0 + c.x, gy = blk.Y0 + c.y;
    th.in = c.valid && gx < p.lattice[0] && gy < p.lattice[1];
    th.bnd = gx == 0 || gx == p.lattice[0] - 1 || gy == 0 || gy == p.lattice[1] - 1;
    th.edge = c.x == 0 || c.x == L.N - 1 || c.y == 0 || c.y == L.N - 1;
    th.col = th.in ? std::int64_t(gy) * p.lattice[0] + gx : 0;
    th.r0 = th.s0 = th.carry = Number(0);
    for (int q = 0; q < k; ++q) th.pre[q] = Number(0);
  }

  /// Input of plane gz for U: constrained values read as 0 (and copied to dst).
  TCFEM_HD static Number constrain(const Params& p, const Thread& th, int gz, Number value, Number* dst) {
    if (th.bnd || gz == 0 || gz == p.lattice[2] - 1) {
      if (th.in) dst[th.col + gz * p.plane] = value;
      return Number(0);
    }
    return value;
  }

  /// Prologue: the segment's bottom plane into plane 0 of U.
  TCFEM_HD static void load_bottom(const Params& p, const Block& blk, const Thread& th, const Smem& sm,
                                   const Number* src, Number* dst) {
    if (!th.valid) return;
    const int gz = blk.cz0 * k;
    const Number v = th.in ? src[th.col + gz * p.plane] : Number(0);
    sm.U[address(L, th.x, th.y, 0)] = constrain(p, th, gz, v, dst);
  }

  /// Loads the k new input planes of layer cz (planes cz k + 1 .. cz k + k) into registers.
  TCFEM_HD static void prefetch(const Params& p, Thread& th, int cz, const Number* src) {
    if (!th.in) return;
    const Number* s = src + th.col + (std::int64_t(cz) * k + 1) * p.plane;
    unroll<k>([&](auto q) { th.pre[q] = s[q * p.plane]; });
  }

  /// Puts the prefetched planes of layer cz to U.
  TCFEM_HD static void put(const Params& p, const Thread& th, int cz, const Smem& sm, Number* dst) {
    if (!th.valid) return;
    if (!th.bnd && cz + 1 < p.layers)  // no constrained node in these planes
      unroll<k>([&](auto q) { sm.U[address(L, th.x, th.y, q)] = th.pre[q]; });
    else
      unroll<k>([&](auto q) { sm.U[address(L, th.x, th.y, q)] = constrain(p, th, cz * k + 1 + q, th.pre[q], dst); });
  }

  /// After the prologue's line phases: R, S of the bottom plane.
  TCFEM_HD static void column_start(Thread& th, const Smem& sm) {
    if (!th.valid) return;
    th.r0 = sm.U[address(L, th.x, th.y, 0)];
    th.s0 = sm.S[address(L, th.x, th.y, 0)];
    th.carry = Number(0);
  }

  TCFEM_HD static void store(const Params& p, const Block& blk, const Thread& th, int gz, Number v, Number* dst) {
    if (!th.in || th.bnd || gz == 0 || gz == p.lattice[2] - 1) return;
    Number* d = dst + th.col + gz * p.plane;
    if (th.edge || gz == blk.cz0 * k || gz == blk.cz1 * k)
      atomic_add(d, v);
    else
      *d = v;
  }

  /// Column phase of layer cz: v = Mz R + Lz' S, planes cz k .. cz k + k - 1 stored, the top one carried.
  TCFEM_HD static void column_output(const Params& p, const Block& blk, Thread& th, int cz, const Smem& sm,
                                     Number* dst) {
    if (!th.valid) return;
    Number r[n], s[n], v[n];
    r[0] = th.r0;
    s[0] = th.s0;
    unroll<k>([&](auto q) {
      r[q + 1] = sm.U[address(L, th.x, th.y, q)];
      s[q + 1] = sm.S[address(L, th.x, th.y, q)];
    });
    const auto re = eo_split(r), se = eo_split(s);
    EoVec<n, Number> ve;
    eo_mult<false>(p.mass, re, ve);
    eo_mult<true>(p.stiff[2], se, ve);
    eo_join(ve, v);
    v[0] += th.carry;
    if (th.in && !th.bnd && !th.edge && cz > blk.cz0) {  // planes cz k .. cz k + k - 1: all owned, none constrained
      Number* d = dst + th.col + std::int64_t(cz) * k * p.plane;
      unroll<k>([&](auto q) { d[q * p.plane] = v[q]; });
    } else {
      unroll<k>([&](auto q) { store(p, blk, th, cz * k + q, v[q], dst); });
    }
    th.carry = v[k];
    th.r0 = r[k];
    th.s0 = s[k];
  }

  /// After the last layer: the partial output of the segment's top plane.
  TCFEM_HD static void finish(const Params& p, const Block& blk, const Thread& th, Number* dst) {
    if (th.valid) store(p, blk, th, blk.cz1 * k, th.carry, dst);
  }

  /// f(index) for every node the kernel updates with atomics, Dirichlet nodes left out: the x- and
  /// y-planes between tiles and the z-planes between chunks of a whole apply (p.region every tile and
  /// layer). Grid-stride: first, first + stride, ...
  template <class F>
  TCFEM_HD static void zero_nodes(const Params& p, std::int64_t first, std::int64_t stride, F&& f) {
    const std::int64_t Lx = p.lattice[0], Ly = p.lattice[1], Lz = p.lattice[2], TK = L.T * k;
    const std::int64_t ix = Lx > 2 ? Lx - 2 : 0, iy = Ly > 2 ? Ly - 2 : 0, iz = Lz > 2 ? Lz - 2 : 0;
    const std::int64_t chunks = (p.layers + p.chunk - 1) / p.chunk;
    const std::int64_t c1 = (p.tiles[0] - 1) * iy * iz, c2 = (p.tiles[1] - 1) * ix * iz, c3 = (chunks - 1) * ix * iy;
    for (std::int64_t i = first; i < c1 + c2 + c3; i += stride) {
      if (i < c1) {  // x-planes between tiles
        const std::int64_t y = 1 + i % iy, r = i / iy, z = 1 + r % iz, X = (1 + r / iz) * TK;
        f((z * Ly + y) * Lx + X);
      } else if (i < c1 + c2) {  // y-planes between tiles
        const std::int64_t j = i - c1, x = 1 + j % ix, r = j / ix, z = 1 + r % iz, Y = (1 + r / iz) * TK;
        f((z * Ly + Y) * Lx + x);
      } else {  // z-planes between chunks
        const std::int64_t j = i - c1 - c2, x = 1 + j % ix, r = j / ix, y = 1 + r % iy;
        const std::int64_t Z = (1 + r / iy) * p.chunk * k;
        f((Z * Ly + y) * Lx + x);
      }
    }
  }

  /// Result of a line item before the shuffle: two output lines.
  struct LineOut {
    LineItem it;
    Number a[n], b[n];
  };

  TCFEM_HD static void x_compute(const Params& p, const Smem& sm, int unit, int lane, int nplanes, LineOut& o) {
    o.it = line_item(L, unit, lane, nplanes);
    const int base = address(L, o.it.seg * k, o.it.line, o.it.plane);
    Number u[n];
    unroll<n>([&](auto i) { u[i] = sm.U[base + i]; });
    const auto ue = eo_split(u);
    EoVec<n, Number> y;
    eo_mult<false>(p.mass, ue, y);
    eo_join(y, o.a);
    eo_mult<false>(p.stiff[0], ue, y);
    eo_join(y, o.b);
  }

  /// Stores P (a), Q (b); left_a / left_b are the last outputs of the segment to the left.
  TCFEM_HD static void x_store(const Smem& sm, LineOut& o, Number left_a, Number left_b) {
    if (!o.it.valid) return;
    if (o.it.seg > 0) {
      o.a[0] += left_a;
      o.b[0] += left_b;
    }
    const int base = address(L, o.it.seg * k, o.it.line, o.it.plane);
    unroll<k>([&](auto i) {
      sm.P[base + i] = o.a[i];
      sm.Q[base + i] = o.b[i];
    });
    if (o.it.seg == L.T - 1) {
      sm.P[base + k] = o.a[k];
      sm.Q[base + k] = o.b[k];
    }
  }

  TCFEM_HD static void y_compute(const Params& p, const Smem& sm, int unit, int lane, int nplanes, LineOut& o) {
    o.it = line_item(L, unit, lane, nplanes);
    const int base = address(L, o.it.line, o.it.seg * k, o.it.plane);
    Number pl[n], ql[n];
    unroll<n>([&](auto j) {
      pl[j] = sm.P[base + j * L.RS];
      ql[j] = sm.Q[base + j * L.RS];
    });
    const auto pe = eo_split(pl), qe = eo_split(ql);
    EoVec<n, Number> y;
    eo_mult<false>(p.mass, qe, y);
    eo_mult<true>(p.stiff[1], pe, y);
    eo_join(y, o.a);
    eo_mult<false>(p.mass, pe, y);
    eo_join(y, o.b);
  }

  /// Stores R (a) into U and S (b).
  TCFEM_HD static void y_store(const Smem& sm, LineOut& o, Number left_a, Number left_b) {
    if (!o.it.valid) return;
    if (o.it.seg > 0) {
      o.a[0] += left_a;
      o.b[0] += left_b;
    }
    const int base = address(L, o.it.line, o.it.seg * k, o.it.plane);
    unroll<k>([&](auto j) {
      sm.U[base + j * L.RS] = o.a[j];
      sm.S[base + j * L.RS] = o.b[j];
    });
    if (o.it.seg == L.T - 1) {
      sm.U[base + k * L.RS] = o.a[k];
      sm.S[base + k * L.RS] = o.b[k];
    }
  }
};

// ---- 2D program ------------------------------------------------------------------------------------

/// 2D: a warp works on a tile of T cells in x and a segment of its cell layers in y; per layer
///   column phase (thread per node column x): v = My Q + cy Ly P, layer input rows to U
///   x phase (per cell segment and row): P = Mx u, Q = cx Lx u.
template <int k, typename Number>
struct Cg2Program {
  static constexpr int n = k + 1;
  static constexpr Cg2Layout L = cg2_layout(k, sizeof(Number));
  static constexpr int delta = segment_delta(L.group, L.map);
  using Params = CgParams<2, k, Number>;

  struct Smem {
    Number* U;
    Number* P;
    Number* Q;
  };
  /// Arrays of warp w.
  TCFEM_HD static Smem smem_arrays(Number* base, int w) {
    const int a = L.array_elements();
    Number* b = base + 3 * a * w;
    return Smem{b, b + a, b + 2 * a};
  }
  static constexpr int smem_elements() { return 3 * L.array_elements() * L.warps; }

  struct Block {
    int X0 = 0;
    int cy0 = 0, cy1 = 0;
    bool active = false;
  };
  TCFEM_HD static Block block(const Params& p, const Segment& sg) {
    Block blk;
    blk.active = true;
    blk.X0 = int(sg.tile) * L.T * k;
    blk.cy0 = sg.cz0;
    blk.cy1 = sg.cz1;
    (void)p;
    return blk;
  }

  struct Thread {
    Number pre[k];
    Number p0, q0, carry;
    int x = 0;
    std::int64_t col = 0;
    bool valid = false, in = false, bnd = false, edge = false;
  };

  TCFEM_HD static void init(const Params& p, const Block& blk, int lane, Thread& th) {
    th.x = lane;
    th.valid = blk.active && lane < L.N;
    const int gx = blk.X0 + lane;
    th.in = th.valid && gx < p.lattice[0];
    th.bnd = gx == 0 || gx == p.lattice[0] - 1;
    th.edge = lane == 0 || lane == L.N - 1;
    th.col = th.in ? gx : 0;
    th.p0 = th.q0 = th.carry = Number(0);
    for (int q = 0; q < k; ++q) th.pre[q] = Number(0);
  }

  TCFEM_HD static Number constrain(const Params& p, const Thread& th, int gy, Number value, Number* dst) {
    if (th.bnd || gy == 0 || gy == p.lattice[1] - 1) {
      if (th.in) dst[th.col + gy * p.plane] = value;
      return Number(0);
    }
    return value;
  }

  TCFEM_HD static void load_bottom(const Params& p, const Block& blk, const Thread& th, const Smem& sm,
                                   const Number* src, Number* dst) {
    if (!th.valid) return;
    const int gy = blk.cy0 * k;
    const Number v = th.in ? src[th.col + gy * p.plane] : Number(0);
    sm.U[address(L, th.x, 0)] = constrain(p, th, gy, v, dst);
  }

  TCFEM_HD static void prefetch(const Params& p, Thread& th, int cy, const Number* src) {
    if (!th.in) return;
    const Number* s = src + th.col + (std::int64_t(cy) * k + 1) * p.plane;
    unroll<k>([&](auto q) { th.pre[q] = s[q * p.plane]; });
  }

  TCFEM_HD static void put(const Params& p, const Thread& th, int cy, const Smem& sm, Number* dst) {
    if (!th.valid) return;
    if (!th.bnd && cy + 1 < p.layers)
      unroll<k>([&](auto q) { sm.U[address(L, th.x, q)] = th.pre[q]; });
    else
      unroll<k>([&](auto q) { sm.U[address(L, th.x, q)] = constrain(p, th, cy * k + 1 + q, th.pre[q], dst); });
  }

  TCFEM_HD static void column_start(Thread& th, const Smem& sm) {
    if (!th.valid) return;
    th.p0 = sm.P[address(L, th.x, 0)];
    th.q0 = sm.Q[address(L, th.x, 0)];
    th.carry = Number(0);
  }

  TCFEM_HD static void store(const Params& p, const Block& blk, const Thread& th, int gy, Number v, Number* dst) {
    if (!th.in || th.bnd || gy == 0 || gy == p.lattice[1] - 1) return;
    Number* d = dst + th.col + gy * p.plane;
    if (th.edge || gy == blk.cy0 * k || gy == blk.cy1 * k)
      atomic_add(d, v);
    else
      *d = v;
  }

  TCFEM_HD static void column_output(const Params& p, const Block& blk, Thread& th, int cy, const Smem& sm,
                                     Number* dst) {
    if (!th.valid) return;
    Number pc[n], qc[n], v[n];
    pc[0] = th.p0;
    qc[0] = th.q0;
    unroll<k>([&](auto q) {
      pc[q + 1] = sm.P[address(L, th.x, q)];
      qc[q + 1] = sm.Q[address(L, th.x, q)];
    });
    const auto pe = eo_split(pc), qe = eo_split(qc);
    EoVec<n, Number> ve;
    eo_mult<false>(p.mass, qe, ve);
    eo_mult<true>(p.stiff[1], pe, ve);
    eo_join(ve, v);
    v[0] += th.carry;
    if (th.in && !th.bnd && !th.edge && cy > blk.cy0) {
      Number* d = dst + th.col + std::int64_t(cy) * k * p.plane;
      unroll<k>([&](auto q) { d[q * p.plane] = v[q]; });
    } else {
      unroll<k>([&](auto q) { store(p, blk, th, cy * k + q, v[q], dst); });
    }
    th.carry = v[k];
    th.p0 = pc[k];
    th.q0 = qc[k];
  }

  TCFEM_HD static void finish(const Params& p, const Block& blk, const Thread& th, Number* dst) {
    if (th.valid) store(p, blk, th, blk.cy1 * k, th.carry, dst);
  }

  /// f(index) for every node the kernel updates with atomics (x-columns between tiles, rows between
  /// chunks), Dirichlet nodes left out.
  template <class F>
  TCFEM_HD static void zero_nodes(const Params& p, std::int64_t first, std::int64_t stride, F&& f) {
    const std::int64_t Lx = p.lattice[0], Ly = p.lattice[1], TK = L.T * k;
    const std::int64_t ix = Lx > 2 ? Lx - 2 : 0, iy = Ly > 2 ? Ly - 2 : 0;
    const std::int64_t chunks = (p.layers + p.chunk - 1) / p.chunk;
    const std::int64_t c1 = (p.tiles[0] - 1) * iy, c3 = (chunks - 1) * ix;
    for (std::int64_t i = first; i < c1 + c3; i += stride) {
      if (i < c1) {
        const std::int64_t y = 1 + i % iy, X = (1 + i / iy) * TK;
        f(y * Lx + X);
      } else {
        const std::int64_t j = i - c1, x = 1 + j % ix, Y = (1 + j / ix) * p.chunk * k;
        f(Y * Lx + x);
      }
    }
  }

  struct LineOut {
    LineItem it;
    Number a[n], b[n];
  };

  TCFEM_HD static void x_compute(const Params& p, const Smem& sm, int unit, int lane, int nplanes, LineOut& o) {
    o.it = line_item(L, unit, lane, nplanes);
    const int x0 = o.it.seg * k;
    Number u[n];
    unroll<n>([&](auto i) { u[i] = sm.U[address(L, x0 + i, o.it.plane)]; });
    const auto ue = eo_split(u);
    EoVec<n, Number> y;
    eo_mult<false>(p.mass, ue, y);
    eo_join(y, o.a);
    eo_mult<false>(p.stiff[0], ue, y);
    eo_join(y, o.b);
  }

  TCFEM_HD static void x_store(const Smem& sm, LineOut& o, Number left_a, Number left_b) {
    if (!o.it.valid) return;
    if (o.it.seg > 0) {
      o.a[0] += left_a;
      o.b[0] += left_b;
    }
    const int x0 = o.it.seg * k;
    unroll<k>([&](auto i) {
      sm.P[address(L, x0 + i, o.it.plane)] = o.a[i];
      sm.Q[address(L, x0 + i, o.it.plane)] = o.b[i];
    });
    if (o.it.seg == L.T - 1) {
      sm.P[address(L, x0 + k, o.it.plane)] = o.a[k];
      sm.Q[address(L, x0 + k, o.it.plane)] = o.b[k];
    }
  }
};

}  // namespace tcfem::operators::cuda_core
