#pragma once
// Shared-memory layouts and thread maps of the cuda-core kernels (operators/cuda_core/kernels.cuh), as
// host-callable constexpr functions without CUDA-only code: the kernels index shared memory with
// them, and tests/unit/test_cuda_core_layouts.cpp enumerates every warp-wide access the kernels
// make and checks that no two lanes of a warp hit different words of one bank.
//
// The cg kernels work on a tile of T x T cells (3D; T cells in 2D) whose nodes, N = T k + 1 per
// side, are held plane by plane in shared memory while the block streams through the cell layers of
// the last direction (z in 3D, y in 2D). Planes hold a (y, x) grid of nodes at
//   address(x, y, p) = p * PS + y * RS + x          (3D)
//   address(x, p)    = p * PS + x + skew * (x / 16)  (2D)
// Work of a block phase:
//   column phase (z in 3D, y in 2D): thread t holds the column of node (t % W, t / W) in registers;
//   line phases (x; y in 3D): one item per (cell segment, line, plane): the k+1 nodes of one cell
//   along the line. Items of one line sit on `group` consecutive lanes (segment = lane % group), so
//   the node shared by neighbouring segments is summed with one shuffle.
// Bank model: 32 banks of 4 bytes. A warp's 4-byte access is one wavefront unless two lanes touch
// different words of one bank; an 8-byte access is processed as two half-warps of 16 lanes, and a
// half-warp conflicts when two lanes touch different 8-byte words of one bank pair.
#include <array>

#include "core/hd.h"

namespace tcfem::operators::cuda_core {

inline constexpr int warp_lanes = 32;

/// How the items of a line phase are laid on the lanes of a warp.
enum class LineMap : int {
  packed = 0,       ///< 32/group lines per warp, consecutive lines (line = y + N * plane)
  plane_pairs = 1,  ///< each half-warp holds 16/group lines of one plane, the halves planes p and p+1
  strided = 2,      ///< segment-major: lane = seg * (32/group) + line, 32/group consecutive lines per warp
};

/// Lane distance between an item and the item of the segment to its left (the shuffle delta).
TCFEM_HD constexpr int segment_delta(int group, LineMap map) {
  return map == LineMap::strided ? warp_lanes / group : 1;
}

/// One work item of a line phase.
struct LineItem {
  int seg = 0;    ///< cell segment along the line (0..T-1; >= T: padding lane)
  int line = 0;   ///< position across the line inside its plane (0..N-1)
  int plane = 0;  ///< plane of the layer
  bool valid = false;
};

/// A thread's column in a column phase.
struct Column {
  int x = 0, y = 0;
  bool valid = false;
};

// ---- 3D cg ----------------------------------------------------------------------------------------

struct Cg3Layout {
  int k = 1;        ///< degree
  int T = 1;        ///< cells per tile side
  int N = 2;        ///< nodes per tile side, T k + 1
  int RS = 2;       ///< row stride (elements)
  int PS = 4;       ///< plane stride (elements)
  int group = 1;    ///< lanes per line group (>= T)
  LineMap map = LineMap::packed;
  int W = 2;        ///< thread row width of the column phase (>= N)
  int threads = 32; ///< block size
  int min_blocks = 1;  ///< __launch_bounds__ occupancy hint
  /// Elements of one shared array (k planes).
  TCFEM_HD constexpr int array_elements() const { return k * PS; }
};

TCFEM_HD constexpr Cg3Layout make_cg3_layout(int k, int T, int RS_pad, int PS_pad, int group, LineMap map,
                                             int W_pad, int min_blocks) {
  Cg3Layout L;
  L.k = k;
  L.T = T;
  L.N = T * k + 1;
  L.RS = L.N + RS_pad;
  L.PS = L.N * L.RS + PS_pad;
  L.group = group;
  L.map = map;
  L.W = L.N + W_pad;
  L.threads = ((L.W * L.N + warp_lanes - 1) / warp_lanes) * warp_lanes;
  L.min_blocks = min_blocks;
  return L;
}

/// The layouts the kernels use, per degree and value size (8: double, 4: float). The parameters
/// were found by enumerating the bank conflicts of every warp access over tile sizes, paddings and
/// lane maps (test_cuda_core_layouts.cpp checks them): tiles of N = 17 nodes need no padding for
/// doubles; floats (one 32-lane phase) mostly need the plane-pair map.
TCFEM_HD constexpr Cg3Layout cg3_layout(int k, int value_bytes) {
  constexpr LineMap P = LineMap::packed, S = LineMap::strided, PP = LineMap::plane_pairs;
  if (value_bytes == 8) {
    switch (k) {  // k, T, RS pad, PS pad, group, map, W pad, min blocks
      case 1: return make_cg3_layout(1, 16, 0, 0, 16, P, 0, 3);
      case 2: return make_cg3_layout(2, 8, 0, 0, 8, P, 0, 3);
      case 3: return make_cg3_layout(3, 5, 15, 0, 5, P, 0, 3);
      case 4: return make_cg3_layout(4, 4, 0, 0, 4, P, 0, 3);
      case 5: return make_cg3_layout(5, 3, 15, 0, 3, P, 0, 2);
      case 6: return make_cg3_layout(6, 2, 4, 0, 2, S, 3, 4);
      case 7: return make_cg3_layout(7, 2, 2, 0, 2, S, 1, 3);
      default: return make_cg3_layout(8, 2, 0, 0, 2, P, 0, 2);
    }
  }
  switch (k) {
    case 1: return make_cg3_layout(1, 16, 0, 0, 16, PP, 0, 3);
    case 2: return make_cg3_layout(2, 8, 0, 15, 8, PP, 0, 3);
    case 3: return make_cg3_layout(3, 5, 1, 0, 5, S, 1, 3);
    case 4: return make_cg3_layout(4, 4, 0, 15, 4, PP, 0, 3);
    case 5: return make_cg3_layout(5, 3, 1, 0, 3, S, 1, 3);
    case 6: return make_cg3_layout(6, 3, 4, 7, 4, PP, 4, 2);
    case 7: return make_cg3_layout(7, 2, 0, 13, 3, PP, 0, 2);
    default: return make_cg3_layout(8, 2, 0, 15, 2, PP, 0, 2);
  }
}

TCFEM_HD constexpr int address(Cg3Layout L, int x, int y, int p) { return p * L.PS + y * L.RS + x; }

TCFEM_HD constexpr Column column_of(Cg3Layout L, int t) {
  Column c;
  c.x = t % L.W;
  c.y = t / L.W;
  c.valid = c.x < L.N && c.y < L.N;
  return c;
}

/// Warp work units of a line phase over `nplanes` planes.
TCFEM_HD constexpr int line_units(int N, int group, LineMap map, int nplanes) {
  if (map == LineMap::packed || map == LineMap::strided) {
    const int per_warp = warp_lanes / group;
    return (N * nplanes + per_warp - 1) / per_warp;
  }
  const int per_half = 16 / group;
  const int blocks = (N + per_half - 1) / per_half;
  return blocks * ((nplanes + 1) / 2);
}

TCFEM_HD constexpr LineItem line_item(int N, int T, int group, LineMap map, int unit, int lane, int nplanes) {
  LineItem it;
  if (map == LineMap::packed) {
    const int per_warp = warp_lanes / group;
    const int g = lane / group;
    it.seg = lane % group;
    const int line = unit * per_warp + g;
    it.line = line % N;
    it.plane = line / N;
    it.valid = g < per_warp && it.seg < T && it.plane < nplanes;
  } else if (map == LineMap::strided) {
    const int per_warp = warp_lanes / group;
    it.seg = lane / per_warp;
    const int line = unit * per_warp + lane % per_warp;
    it.line = line % N;
    it.plane = line / N;
    it.valid = it.seg < T && it.plane < nplanes;
  } else {
    const int per_half = 16 / group;
    const int half = lane / 16, g = (lane % 16) / group;
    it.seg = (lane % 16) % group;
    const int blocks = (N + per_half - 1) / per_half;
    it.line = (unit % blocks) * per_half + g;
    it.plane = 2 * (unit / blocks) + half;
    it.valid = g < per_half && it.seg < T && it.line < N && it.plane < nplanes;
  }
  if (!it.valid) {  // keep padding lanes' addresses inside the arrays
    it.line = 0;
    it.plane = 0;
    it.seg = 0;
  }
  return it;
}

TCFEM_HD constexpr int line_units(Cg3Layout L, int nplanes) { return line_units(L.N, L.group, L.map, nplanes); }
TCFEM_HD constexpr LineItem line_item(Cg3Layout L, int unit, int lane, int nplanes) {
  return line_item(L.N, L.T, L.group, L.map, unit, lane, nplanes);
}

// ---- 2D cg ----------------------------------------------------------------------------------------

/// 2D: one warp per tile of T cells (N = T k + 1 <= 32 nodes), several tiles per block. Lines are
/// the rows (planes) of the layer.
struct Cg2Layout {
  int k = 1, T = 1, N = 2;
  int PS = 2;       ///< plane (row) stride
  int skew = 0;     ///< one padding element after every 16 nodes of a row
  int group = 1;    ///< lanes per line group
  LineMap map = LineMap::packed;
  int warps = 4;    ///< tiles (warps) per block
  TCFEM_HD constexpr int array_elements() const { return k * PS; }
};

TCFEM_HD constexpr Cg2Layout make_cg2_layout(int k, int T, int PS_pad, int skew, int group, LineMap map) {
  Cg2Layout L;
  L.k = k;
  L.T = T;
  L.N = T * k + 1;
  L.skew = skew;
  L.PS = L.N + skew * (L.N / 16) + PS_pad;
  L.group = group;
  L.map = map;
  L.warps = 4;
  return L;
}

/// The 2D layouts per degree and value size (found by enumeration, checked by the unit test).
TCFEM_HD constexpr Cg2Layout cg2_layout(int k, int value_bytes) {
  const bool d = value_bytes == 8;
  constexpr LineMap P = LineMap::packed, S = LineMap::strided;
  switch (k) {
    case 1: return d ? make_cg2_layout(1, 31, 0, 0, 32, P) : make_cg2_layout(1, 31, 0, 0, 31, P);
    case 2: return d ? make_cg2_layout(2, 15, 0, 0, 15, S) : make_cg2_layout(2, 15, 0, 0, 15, P);
    case 3: return d ? make_cg2_layout(3, 10, 2, 0, 10, S) : make_cg2_layout(3, 10, 0, 0, 10, S);
    case 4: return d ? make_cg2_layout(4, 7, 0, 0, 7, S) : make_cg2_layout(4, 7, 0, 0, 8, P);
    case 5: return d ? make_cg2_layout(5, 6, 2, 0, 6, S) : make_cg2_layout(5, 6, 0, 0, 6, S);
    case 6: return d ? make_cg2_layout(6, 5, 2, 0, 5, S) : make_cg2_layout(6, 5, 0, 0, 5, P);
    case 7: return make_cg2_layout(7, 4, 1, 0, 4, S);
    default: return d ? make_cg2_layout(8, 3, 0, 0, 3, S) : make_cg2_layout(8, 3, 0, 0, 4, P);
  }
}

TCFEM_HD constexpr int address(Cg2Layout L, int x, int p) { return p * L.PS + x + L.skew * (x / 16); }

TCFEM_HD constexpr int line_units(Cg2Layout L, int nplanes) { return line_units(1, L.group, L.map, nplanes); }
TCFEM_HD constexpr LineItem line_item(Cg2Layout L, int unit, int lane, int nplanes) {
  return line_item(1, L.T, L.group, L.map, unit, lane, nplanes);
}

// ---- 3D dg ----------------------------------------------------------------------------------------

/// 3D SIPG: a tile of T x T cells (NS = T n nodes per side, no shared nodes), n planes per layer.
/// Planes hold NS + 4 rows and columns: columns NS..NS+3 carry the face data (value, normal
/// derivative) of the x-neighbour cells left and right of the tile, rows NS..NS+3 those of the
/// y-neighbours. Line items cover one cell (n nodes) of a line.
struct Dg3Layout {
  int k = 1, T = 1, NS = 2;  ///< degree, cells per tile side, nodes per tile side (T (k+1))
  int RS = 6, PS = 36;       ///< row and plane stride (elements), RS >= NS + 4
  int group = 1;
  LineMap map = LineMap::packed;
  int W = 2;                 ///< thread row width of the column phase (>= NS)
  int threads = 32;
  int min_blocks = 1;
  TCFEM_HD constexpr int array_elements() const { return (k + 1) * PS; }
};

TCFEM_HD constexpr Dg3Layout make_dg3_layout(int k, int T, int RS_pad, int PS_pad, int group, LineMap map,
                                             int W_pad, int min_blocks) {
  Dg3Layout L;
  L.k = k;
  L.T = T;
  L.NS = T * (k + 1);
  L.RS = L.NS + 4 + RS_pad;
  L.PS = (L.NS + 4) * L.RS + PS_pad;
  L.group = group;
  L.map = map;
  L.W = L.NS + W_pad;
  const int columns = L.W * L.NS > 4 * L.NS ? L.W * L.NS : 4 * L.NS;  // halo items need 4 NS threads
  L.threads = ((columns + warp_lanes - 1) / warp_lanes) * warp_lanes;
  L.min_blocks = min_blocks;
  return L;
}

/// The 3D dg layouts per degree and value size (found by enumeration over tile sizes, paddings and
/// lane maps; checked by test_cuda_core_layouts.cpp). Larger tiles cut the halo reads (4/T of the
/// tile's data per layer) but cost registers and threads. Where a conflict-free column phase needs a
/// padded thread row (idle threads) the layout keeps W = NS and accepts 2-way conflicts on the
/// column phase's 2 (k+1) stores per column and layer (dg3_column_conflicts).
TCFEM_HD constexpr Dg3Layout dg3_layout(int k, int value_bytes) {
  constexpr LineMap P = LineMap::packed, S = LineMap::strided, PP = LineMap::plane_pairs;
  if (value_bytes == 8) {
    switch (k) {  // k, T, RS pad, PS pad, group, map, W pad, min blocks
      case 1: return make_dg3_layout(1, 8, 1, 0, 8, P, 0, 3);
      case 2: return make_dg3_layout(2, 5, 12, 0, 5, PP, 0, 3);
      case 3: return make_dg3_layout(3, 4, 1, 0, 4, P, 0, 2);
      case 4: return make_dg3_layout(4, 3, 12, 0, 3, PP, 0, 2);
      case 5: return make_dg3_layout(5, 2, 12, 0, 4, P, 0, 3);
      case 6: return make_dg3_layout(6, 2, 5, 0, 2, S, 0, 2);
      case 7: return make_dg3_layout(7, 2, 1, 0, 2, S, 0, 1);
      default: return make_dg3_layout(8, 2, 5, 0, 2, S, 0, 1);
    }
  }
  switch (k) {
    case 1: return make_dg3_layout(1, 8, 1, 12, 8, PP, 5, 3);
    case 2: return make_dg3_layout(2, 4, 4, 16, 4, PP, 8, 3);
    case 3: return make_dg3_layout(3, 4, 1, 12, 4, PP, 5, 3);
    case 4: return make_dg3_layout(4, 3, 12, 2, 3, PP, 0, 2);
    case 5: return make_dg3_layout(5, 2, 7, 6, 3, P, 0, 3);
    case 6: return make_dg3_layout(6, 2, 3, 7, 3, P, 0, 2);
    case 7: return make_dg3_layout(7, 2, 1, 12, 2, PP, 5, 2);
    default: return make_dg3_layout(8, 2, 4, 0, 3, P, 0, 2);
  }
}

/// Worst bank-conflict degree of the 3D dg column phase (1 or 2, see dg3_layout).
TCFEM_HD constexpr int dg3_column_conflicts(int k, int value_bytes) {
  if (value_bytes == 8) return k == 6 || k == 8 ? 2 : 1;
  return k == 4 || k == 5 || k == 6 || k == 8 ? 2 : 1;
}

TCFEM_HD constexpr int address(Dg3Layout L, int x, int y, int p) { return p * L.PS + y * L.RS + x; }
TCFEM_HD constexpr Column column_of(Dg3Layout L, int t) {
  Column c;
  c.x = t % L.W;
  c.y = t / L.W;
  c.valid = c.x < L.NS && c.y < L.NS;
  return c;
}
/// x phase: lines are the NS rows of the tile and the 4 face-data rows of the y-neighbours.
TCFEM_HD constexpr int x_line_units(Dg3Layout L) { return line_units(L.NS + 4, L.group, L.map, L.k + 1); }
TCFEM_HD constexpr LineItem x_line_item(Dg3Layout L, int unit, int lane) {
  return line_item(L.NS + 4, L.T, L.group, L.map, unit, lane, L.k + 1);
}
/// y phase: lines are the NS columns of the tile.
TCFEM_HD constexpr int y_line_units(Dg3Layout L) { return line_units(L.NS, L.group, L.map, L.k + 1); }
TCFEM_HD constexpr LineItem y_line_item(Dg3Layout L, int unit, int lane) {
  return line_item(L.NS, L.T, L.group, L.map, unit, lane, L.k + 1);
}

// ---- 2D dg ----------------------------------------------------------------------------------------

/// 2D SIPG: one warp per tile of T cells in x (NS = T n <= 32 nodes), n rows per layer; row stride
/// PS >= NS + 4 (columns NS..NS+3: raw face data of the x-neighbours of the tile).
struct Dg2Layout {
  int k = 1, T = 1, NS = 2;
  int PS = 6;
  int group = 1;
  LineMap map = LineMap::packed;
  int warps = 4;
  TCFEM_HD constexpr int array_elements() const { return (k + 1) * PS; }
};

TCFEM_HD constexpr Dg2Layout make_dg2_layout(int k, int T, int PS_pad, int group, LineMap map) {
  Dg2Layout L;
  L.k = k;
  L.T = T;
  L.NS = T * (k + 1);
  L.PS = L.NS + 4 + PS_pad;
  L.group = group;
  L.map = map;
  L.warps = 4;
  return L;
}

/// The 2D dg layouts per degree and value size (found by enumeration, checked by the unit test).
TCFEM_HD constexpr Dg2Layout dg2_layout(int k, int value_bytes) {
  const bool d = value_bytes == 8;
  constexpr LineMap P = LineMap::packed, S = LineMap::strided;
  switch (k) {  // k, T, PS pad, group, map
    case 1: return d ? make_dg2_layout(1, 16, 1, 16, S) : make_dg2_layout(1, 16, 1, 16, P);
    case 2: return d ? make_dg2_layout(2, 10, 12, 10, P) : make_dg2_layout(2, 10, 0, 10, P);
    case 3: return d ? make_dg2_layout(3, 8, 1, 8, S) : make_dg2_layout(3, 8, 1, 8, P);
    case 4: return d ? make_dg2_layout(4, 6, 12, 6, P) : make_dg2_layout(4, 6, 0, 6, P);
    case 5: return d ? make_dg2_layout(5, 5, 5, 7, P) : make_dg2_layout(5, 5, 13, 5, P);
    case 6: return d ? make_dg2_layout(6, 4, 4, 4, P) : make_dg2_layout(6, 4, 1, 4, P);
    case 7: return d ? make_dg2_layout(7, 4, 1, 4, S) : make_dg2_layout(7, 4, 1, 4, P);
    default: return d ? make_dg2_layout(8, 3, 12, 3, P) : make_dg2_layout(8, 3, 0, 3, P);
  }
}

TCFEM_HD constexpr int address(Dg2Layout L, int x, int p) { return p * L.PS + x; }
TCFEM_HD constexpr int line_units(Dg2Layout L) { return line_units(1, L.group, L.map, L.k + 1); }
TCFEM_HD constexpr LineItem line_item(Dg2Layout L, int unit, int lane) {
  return line_item(1, L.T, L.group, L.map, unit, lane, L.k + 1);
}

// ---- bank-conflict model ----------------------------------------------------------------------------

/// Wavefronts one warp-wide shared access needs (addresses in elements of `value_bytes`, -1 for an
/// inactive lane), and the worst conflict degree.
struct AccessCost {
  int wavefronts = 0;
  int degree = 1;
};

constexpr AccessCost access_cost(const std::array<long, warp_lanes>& addr, int value_bytes) {
  AccessCost c;
  const int lanes_per_phase = value_bytes == 8 ? 16 : 32;
  const long banks = value_bytes == 8 ? 16 : 32;  // banks (pairs of banks for 8-byte words)
  for (int h = 0; h < warp_lanes / lanes_per_phase; ++h) {
    const int l0 = h * lanes_per_phase, l1 = l0 + lanes_per_phase;
    bool active = false;
    int worst = 0;
    for (int l = l0; l < l1; ++l) {
      if (addr[l] < 0) continue;
      active = true;
      // count the distinct words of lane l's bank among lanes l0..l that are first of their word
      bool first = true;
      for (int j = l0; j < l && first; ++j) first = addr[j] != addr[l];
      if (!first) continue;
      int words = 0;
      for (int j = l0; j <= l; ++j) {
        if (addr[j] < 0 || addr[j] % banks != addr[l] % banks) continue;
        bool first_j = true;
        for (int i = l0; i < j && first_j; ++i) first_j = addr[i] != addr[j];
        words += first_j ? 1 : 0;
      }
      worst = worst > words ? worst : words;
    }
    if (active) {
      c.wavefronts += worst;
      c.degree = c.degree > worst ? c.degree : worst;
    }
  }
  return c;
}

/// Every warp-wide shared access of the 3D cg kernel for one layer of `nplanes` planes:
/// f(phase, addresses) with phase 'Z' (column loads/stores), 'X' and 'Y' (line loads/stores).
template <class F>
constexpr void for_each_cg3_access(const Cg3Layout& L, int nplanes, F&& f) {
  const int warps = L.threads / warp_lanes;
  std::array<long, warp_lanes> a{};
  for (int w = 0; w < warps; ++w)
    for (int q = 0; q < nplanes; ++q) {
      for (int l = 0; l < warp_lanes; ++l) {
        const Column c = column_of(L, w * warp_lanes + l);
        a[l] = c.valid ? address(L, c.x, c.y, q) : -1;
      }
      f('Z', a);
    }
  const int units = line_units(L, nplanes);
  for (int dir = 0; dir < 2; ++dir)
    for (int u = 0; u < units; ++u)
      for (int i = 0; i <= L.k; ++i) {
        for (int l = 0; l < warp_lanes; ++l) {
          const LineItem it = line_item(L, u, l, nplanes);
          const int along = it.seg * L.k + i;
          a[l] = !it.valid ? -1 : dir == 0 ? address(L, along, it.line, it.plane) : address(L, it.line, along, it.plane);
        }
        f(dir == 0 ? 'X' : 'Y', a);
      }
}

/// Every warp-wide shared access of the 2D cg kernel (one tile per warp).
template <class F>
constexpr void for_each_cg2_access(const Cg2Layout& L, int nplanes, F&& f) {
  std::array<long, warp_lanes> a{};
  for (int q = 0; q < nplanes; ++q) {
    for (int l = 0; l < warp_lanes; ++l) a[l] = l < L.N ? address(L, l, q) : -1;
    f('Z', a);
  }
  const int units = line_units(L, nplanes);
  for (int u = 0; u < units; ++u)
    for (int i = 0; i <= L.k; ++i) {
      for (int l = 0; l < warp_lanes; ++l) {
        const LineItem it = line_item(L, u, l, nplanes);
        a[l] = it.valid ? address(L, it.seg * L.k + i, it.plane) : -1;
      }
      f('X', a);
    }
}

/// Every warp-wide shared access of the 3D dg kernel for one layer (column phase: one per plane;
/// x and y phases: one per element of the cell line). The halo items' scattered accesses are few and
/// left out.
template <class F>
constexpr void for_each_dg3_access(const Dg3Layout& L, F&& f) {
  const int n = L.k + 1;
  std::array<long, warp_lanes> a{};
  for (int w = 0; w < L.threads / warp_lanes; ++w)
    for (int q = 0; q < n; ++q) {
      for (int l = 0; l < warp_lanes; ++l) {
        const Column c = column_of(L, w * warp_lanes + l);
        a[l] = c.valid ? address(L, c.x, c.y, q) : -1;
      }
      f('Z', a);
    }
  for (int u = 0; u < x_line_units(L); ++u)
    for (int i = 0; i < n; ++i) {
      for (int l = 0; l < warp_lanes; ++l) {
        const LineItem it = x_line_item(L, u, l);
        a[l] = it.valid ? address(L, it.seg * n + i, it.line, it.plane) : -1;
      }
      f('X', a);
    }
  for (int u = 0; u < y_line_units(L); ++u)
    for (int i = 0; i < n; ++i) {
      for (int l = 0; l < warp_lanes; ++l) {
        const LineItem it = y_line_item(L, u, l);
        a[l] = it.valid ? address(L, it.line, it.seg * n + i, it.plane) : -1;
      }
      f('Y', a);
    }
}

/// Every warp-wide shared access of the 2D dg kernel (one tile per warp).
template <class F>
constexpr void for_each_dg2_access(const Dg2Layout& L, F&& f) {
  const int n = L.k + 1;
  std::array<long, warp_lanes> a{};
  for (int q = 0; q < n; ++q) {
    for (int l = 0; l < warp_lanes; ++l) a[l] = l < L.NS ? address(L, l, q) : -1;
    f('Z', a);
  }
  for (int u = 0; u < line_units(L); ++u)
    for (int i = 0; i < n; ++i) {
      for (int l = 0; l < warp_lanes; ++l) {
        const LineItem it = line_item(L, u, l);
        a[l] = it.valid ? address(L, it.seg * n + i, it.plane) : -1;
      }
      f('X', a);
    }
}

}  // namespace tcfem::operators::cuda_core
