#pragma once
// Shared-memory layouts, row maps and operand maps of the tensor-core kernels
// (operators/tensor_core/laplace_kernels.cuh), as host-callable constexpr functions without CUDA-only code:
// the kernels compute every shared-memory address with them, and
// tests/unit/test_tensor_core_layouts.cpp enumerates every warp-wide access the kernels make and
// checks that no two lanes of a warp (4-byte words) or half-warp (8-byte words) touch different
// words of one bank, and emulates the whole kernel on the host.
//
// Algorithm (Cartesian cg Laplacian, one cell = an n^dim tensor, n = k + 1): with reference 1D
// mass M and stiffness L and weights w_d = (1/h_d^2) / G, G = max_d 1/h_d^2,
//   A_K u = sigma sum_d (M x .. x w_d L (direction d) x .. x M) u,   sigma = G prod_d h_d,
// evaluated in the reuse order of 2 dim + 1 contractions (3D: a = M_z u, b = w_z L_z u,
// c = M_y a, d = w_y L_y a + M_y b, v = w_x L_x c + M_x d). Each direction is one phase; a phase is
// one small GEMM  C (rows x N) = A (rows x K) B (K x N):
//   rows: (line, cell) pairs: a line is a position in the directions other than d, and C cells of
//         a batch run in lockstep (row r = line * C + cell);
//   K:    first phase: the n inputs u_j; later phases: the 2n inputs [a_j | b_j] (concatenated);
//   N:    last phase: the n outputs v_i; earlier phases: the 2n outputs [a_i | b_i];
//   B:    the 1D matrices (transposed, concatenated, zero-padded), built once per kernel in registers.
// K and N are padded to the instruction shape; rows are padded to whole tiles of `atom.m` rows.
//
// Shared memory per cell: two tensor slots (0 and 1) of the same layout,
//   address(cell, slot, z, y, x) = cell * CS + slot * TS + z * stride[2] + y * stride[1] + x.
// Phases work in place: a tile reads and writes the same lines of the same cells.
//   first phase:  reads u (slot 1), writes a -> slot 0, b -> slot 1
//   middle phase: reads a (slot 0), b (slot 1), writes c -> slot 0, d -> slot 1
//   last phase:   reads slots 0 and 1, writes v -> slot 0
// Gather writes u into slot 1; scatter reads v from slot 0.
//
// Why there are no bank conflicts: lane (g, t) = (lane / 4, lane % 4) of every mma lane map holds
// rows g (+ 8) and logical columns 4 m + t (the K index of A; the N index of C once the columns of
// B are permuted, see nperm/kperm). Rows g = 0..7 (one half-warp: g = 0..3) are C >= 8 (>= 4)
// different cells on one line, so the g part of an address is g * CS with CS = 4 mod 8: the
// multiples of 4 modulo 32 (16) words. The t part is distinct modulo 4 for the four t of one
// instruction when the strides are odd and TS = +-n mod 4 (searched by make_cg_layout). Their sum
// then hits 32 (16) distinct banks (bank pairs). The unit test checks this by enumeration.
#include "core/hd.h"

namespace tcfem::operators::tensor_core {

inline constexpr int warp_lanes = 32;
inline constexpr int atom_n = 8;  ///< N of every mma shape used (m16n8k*, m8n8k4)
inline constexpr int max_n = 9;   ///< nodes per direction of the highest supported degree (8)

enum class PhaseKind : int { first = 0, middle = 1, last = 2 };

/// The mma instruction and storage type a kernel is built for.
struct AtomShape {
  int word_bytes = 8;     ///< 8: fp64 storage and operands; 4: float storage
  int m = 16;             ///< rows of one mma (16; 8 for m8n8k4)
  int k = 8;              ///< K of one mma
  bool packed16 = false;  ///< 16-bit inputs packed in pairs (m16n8k16 .f16 / .bf16)
};

/// Layout and launch shape of one cg kernel (a structural type: usable as a template argument).
struct CgLayout {
  int dim = 3;
  int n = 2;  ///< nodes per direction of a cell (degree + 1)
  AtomShape atom{};
  int cells = 4;  ///< C: cells per batch (rows of one line)
  int warps = 4;  ///< W: warps per block
  int stride[3] = {1, 1, 1};  ///< element strides of x, y, z inside a tensor slot
  int tensor_stride = 0;      ///< TS: offset of slot 1
  int cell_stride = 0;        ///< CS: offset between cells

  // Loops over directions run to the constant 3 (and test e < dim) so that device code unrolls
  // them and keeps the layout in constants.
  TCFEM_HD constexpr int lines() const {
    int l = 1;
    for (int e = 1; e < 3; ++e)
      if (e < dim) l *= n;
    return l;
  }
  TCFEM_HD constexpr int nodes_per_cell() const { return lines() * n; }
  TCFEM_HD constexpr int rows() const { return cells * lines(); }
  TCFEM_HD constexpr int tiles() const { return (rows() + atom.m - 1) / atom.m; }
  TCFEM_HD constexpr int threads() const { return warp_lanes * warps; }
  TCFEM_HD constexpr int smem_words() const { return cells * cell_stride; }
  TCFEM_HD constexpr int quads() const { return (n + 3) / 4; }
  /// Gather/scatter items of one plane of the outermost direction (z in 3D, y in 2D): every
  /// (cell, x with x padded to whole quads, y in 3D); each item stands for the n nodes along the
  /// outermost direction.
  TCFEM_HD constexpr int plane_items() const { return 4 * cells * quads() * (dim == 3 ? n : 1); }
  /// Plane items each thread of a block handles.
  TCFEM_HD constexpr int plane_iterations() const { return (plane_items() + threads() - 1) / threads(); }
  /// Element stride of the outermost direction.
  TCFEM_HD constexpr int outer_stride() const { return stride[dim - 1]; }
};

// ---- phases ---------------------------------------------------------------------------------------

/// Phase p contracts direction dim - 1 - p (z, y, x in 3D; y, x in 2D).
TCFEM_HD constexpr int phase_direction(int dim, int p) { return dim - 1 - p; }
TCFEM_HD constexpr PhaseKind phase_kind(int dim, int p) {
  return p == 0 ? PhaseKind::first : (p == dim - 1 ? PhaseKind::last : PhaseKind::middle);
}
TCFEM_HD constexpr int k_total(PhaseKind kind, int n) { return kind == PhaseKind::first ? n : 2 * n; }
TCFEM_HD constexpr int n_total(PhaseKind kind, int n) { return kind == PhaseKind::last ? n : 2 * n; }
TCFEM_HD constexpr int k_chunks(CgLayout L, int p) {
  return (k_total(phase_kind(L.dim, p), L.n) + L.atom.k - 1) / L.atom.k;
}
TCFEM_HD constexpr int n_tiles(CgLayout L, int p) {
  return (n_total(phase_kind(L.dim, p), L.n) + atom_n - 1) / atom_n;
}

// ---- logical column orders ------------------------------------------------------------------------
// The instruction's K column `col` of A (and row of B) stands for the logical input index
// kperm(col); the N column `col` of B and C for the logical output index nperm(col). Both are
// bijections; they make every lane's logical columns 4 m + t (t = lane % 4).

/// Identity for one element per register; for packed 16-bit pairs 2t + e + 8h -> t + 4e + 8h.
TCFEM_HD constexpr int kperm(bool packed16, int col) {
  return packed16 ? ((col & 8) | ((col & 1) << 2) | ((col >> 1) & 3)) : col;
}
/// 2t + e -> t + 4e within each group of 8 columns.
TCFEM_HD constexpr int nperm(int col) { return (col & ~7) | ((col & 7) >> 1) | ((col & 1) << 2); }

/// Logical column of lane 0 (lane (g, t) has this + t) and row half (rows g + 8 * half) of
/// fragment element e of A and of C, for the lane maps of arch/lane_maps.h (the unit test checks
/// them against the maps). For the work models of the registry.
TCFEM_HD constexpr int a_element_jbase(AtomShape a, int e) {
  return a.packed16 ? 4 * (e & 1) + 8 * (e >> 2) : (a.m == 8 ? 0 : 4 * (e >> 1));
}
TCFEM_HD constexpr int a_element_half(AtomShape a, int e) {
  return a.m == 8 ? 0 : (a.packed16 ? (e >> 1) & 1 : e & 1);
}
TCFEM_HD constexpr int c_element_ibase(int e) { return 4 * (e & 1); }
TCFEM_HD constexpr int a_elements_per_lane(AtomShape a) { return a.m * a.k / 32; }
TCFEM_HD constexpr int c_elements_per_lane(AtomShape a) { return a.m * 8 / 32; }

// ---- the B operand of each phase ------------------------------------------------------------------

enum class Matrix1D : int { zero = 0, mass = 1, laplace = 2 };

/// B(j, i) = S(row, col) with S the named 1D matrix (out_i = sum_j S_ij in_j, so B = S^T), for
/// logical input j and output i of a phase of kind `kind` (zero outside the concatenated blocks).
struct BEntry {
  Matrix1D matrix = Matrix1D::zero;
  int row = 0, col = 0;
};
TCFEM_HD constexpr BEntry b_entry(PhaseKind kind, int n, int j, int i) {
  BEntry e;
  if (j < 0 || i < 0 || j >= k_total(kind, n) || i >= n_total(kind, n)) return e;
  const int jj = j % n, ii = i % n;
  const bool j_hi = j >= n, i_hi = i >= n;
  e.row = ii;
  e.col = jj;
  switch (kind) {
    case PhaseKind::first:  // [a | b] = u [M^T | L^T]
      e.matrix = i_hi ? Matrix1D::laplace : Matrix1D::mass;
      break;
    case PhaseKind::middle:  // c = a M^T; d = a L^T + b M^T
      if (!i_hi)
        e.matrix = j_hi ? Matrix1D::zero : Matrix1D::mass;
      else
        e.matrix = j_hi ? Matrix1D::mass : Matrix1D::laplace;
      break;
    case PhaseKind::last:  // v = c L^T + d M^T
      e.matrix = j_hi ? Matrix1D::mass : Matrix1D::laplace;
      break;
  }
  return e;
}

/// Whether the (K chunk kc, N tile nt) block of phase p's B has a nonzero entry (else its mma is skipped).
TCFEM_HD constexpr bool block_nonzero(CgLayout L, int p, int kc, int nt) {
  const PhaseKind kind = phase_kind(L.dim, p);
  for (int j = kc * L.atom.k; j < (kc + 1) * L.atom.k; ++j)
    for (int i = nt * atom_n; i < (nt + 1) * atom_n; ++i)
      if (b_entry(kind, L.n, j, i).matrix != Matrix1D::zero) return true;
  return false;
}
/// mma products per tile of phase p (nonzero blocks).
TCFEM_HD constexpr int mma_blocks(CgLayout L, int p) {
  int count = 0;
  for (int kc = 0; kc < k_chunks(L, p); ++kc)
    for (int nt = 0; nt < n_tiles(L, p); ++nt) count += block_nonzero(L, p, kc, nt) ? 1 : 0;
  return count;
}

// ---- addresses ------------------------------------------------------------------------------------

/// Offset (in words, within a cell) of logical input j of phase p along its direction.
TCFEM_HD constexpr int in_offset(CgLayout L, int p, int j) {
  const int d = phase_direction(L.dim, p);
  if (phase_kind(L.dim, p) == PhaseKind::first) return L.tensor_stride + j * L.stride[d];
  const int slot = j >= L.n ? 1 : 0;
  return slot * L.tensor_stride + (j - slot * L.n) * L.stride[d];
}
/// Offset (in words, within a cell) of logical output i of phase p along its direction.
TCFEM_HD constexpr int out_offset(CgLayout L, int p, int i) {
  const int d = phase_direction(L.dim, p);
  if (phase_kind(L.dim, p) == PhaseKind::last) return i * L.stride[d];
  const int slot = i >= L.n ? 1 : 0;
  return slot * L.tensor_stride + (i - slot * L.n) * L.stride[d];
}

/// The kernels address a lane's column jbase + t (t = lane % 4; jbase a compile-time constant of
/// the fragment element) as in_offset(jbase) + t * stride[d] + in_adjust(jbase, t): the adjustment
/// is nonzero only where the four columns jbase .. jbase+3 straddle the two concatenated slots.
TCFEM_HD constexpr int in_adjust(CgLayout L, int p, int jbase, int t) {
  const bool straddle = phase_kind(L.dim, p) != PhaseKind::first && jbase < L.n && jbase + 3 >= L.n;
  return straddle && jbase + t >= L.n ? L.tensor_stride - L.n * L.stride[phase_direction(L.dim, p)] : 0;
}
TCFEM_HD constexpr int out_adjust(CgLayout L, int p, int ibase, int t) {
  const bool straddle = phase_kind(L.dim, p) != PhaseKind::last && ibase < L.n && ibase + 3 >= L.n;
  return straddle && ibase + t >= L.n ? L.tensor_stride - L.n * L.stride[phase_direction(L.dim, p)] : 0;
}

/// Offset of line `line` of direction d: the line enumerates the other directions, lowest fastest.
/// (Unsigned arithmetic: divisions by the compile-time n and C compile to multiplications and shifts.)
TCFEM_HD constexpr int line_offset(CgLayout L, int d, int line) {
  int offset = 0;
  unsigned rest = static_cast<unsigned>(line);
  for (int e = 0; e < 3; ++e) {
    if (e >= L.dim || e == d) continue;
    offset += static_cast<int>(rest % static_cast<unsigned>(L.n)) * L.stride[e];
    rest /= static_cast<unsigned>(L.n);
  }
  return offset;
}

/// Row r of a phase of direction d: cell r % C on line r / C.
struct RowRef {
  bool valid = false;  ///< false for the padding rows of the last tile
  int cell = 0, line = 0;
  int base = 0;  ///< cell * CS + line offset
};
TCFEM_HD constexpr RowRef row_ref(CgLayout L, int d, int r) {
  RowRef ref;
  const unsigned u = static_cast<unsigned>(r), cells = static_cast<unsigned>(L.cells);
  ref.valid = r < L.rows();
  ref.cell = static_cast<int>(u % cells);
  ref.line = static_cast<int>(u / cells);
  ref.base = ref.cell * L.cell_stride + line_offset(L, d, ref.line);  // meaningless for padding rows
  return ref;
}

/// row_ref(L, d, r8 + g) for r8 a multiple of 8 and 0 <= g < 8 (the rows of one lane group),
/// computed so that for C >= 8 the line is the same for all g and the cell is (r8 % C) + g: the
/// kernels then add a lane constant to a warp-uniform part.
TCFEM_HD constexpr RowRef row_ref_split(CgLayout L, int d, int r8, int g) {
  RowRef ref;
  const unsigned cells = static_cast<unsigned>(L.cells), u = static_cast<unsigned>(r8);
  if (L.cells >= 8) {
    ref.cell = static_cast<int>(u % cells) + g;
    ref.line = static_cast<int>(u / cells);
  } else {
    ref.cell = static_cast<int>(static_cast<unsigned>(g) % cells);
    ref.line = static_cast<int>(u / cells + static_cast<unsigned>(g) / cells);
  }
  ref.valid = r8 + g < L.rows();
  ref.base = ref.cell * L.cell_stride + line_offset(L, d, ref.line);
  return ref;
}

/// Gather/scatter item of a plane (0 <= item < plane_items): lane quad t = item % 4 takes
/// x = 4 * quad + t of cell (item / 4) % C (then quad, then y in 3D); items with x >= n are padding.
/// local[dim - 1] (the outermost direction) is 0: the item stands for local[dim-1] = 0 .. n-1 at
/// offset + o * outer_stride().
struct NodeRef {
  bool valid = false;
  int cell = 0;
  int local[3] = {0, 0, 0};  ///< position inside the cell (x, y, z)
  int offset = 0;            ///< cell * CS + position (add the slot offset and o * outer_stride)
};
TCFEM_HD constexpr NodeRef plane_node_ref(CgLayout L, int item) {
  NodeRef ref;
  const unsigned u = static_cast<unsigned>(item);
  const unsigned t = u % 4u;
  unsigned q = u / 4u;
  ref.cell = static_cast<int>(q % static_cast<unsigned>(L.cells));
  q /= static_cast<unsigned>(L.cells);
  const unsigned quad = q % static_cast<unsigned>(L.quads());
  q /= static_cast<unsigned>(L.quads());
  ref.local[0] = static_cast<int>(4u * quad + t);
  if (L.dim == 3) ref.local[1] = static_cast<int>(q);
  ref.valid = ref.local[0] < L.n && item < L.plane_items();
  ref.offset = ref.cell * L.cell_stride + ref.local[0] + (L.dim == 3 ? ref.local[1] * L.stride[1] : 0);
  return ref;
}

// ---- choosing the layout --------------------------------------------------------------------------

/// The t parts of every instruction's addresses are distinct modulo 4 (see the header comment).
TCFEM_HD constexpr bool t_parts_distinct(CgLayout L) {
  for (int p = 0; p < L.dim; ++p)
    for (int io = 0; io < 2; ++io) {
      const PhaseKind kind = phase_kind(L.dim, p);
      const int total = io == 0 ? k_total(kind, L.n) : n_total(kind, L.n);
      for (int m = 0; 4 * m < total; ++m) {
        int seen = 0;
        for (int t = 0; t < 4; ++t) {
          const int j = 4 * m + t;
          if (j >= total) continue;
          const int bit = 1 << ((io == 0 ? in_offset(L, p, j) : out_offset(L, p, j)) & 3);
          if (seen & bit) return false;
          seen |= bit;
        }
      }
    }
  return true;
}

/// Cells per batch and warps per block (C, W) of a configuration: C a multiple of 8 (4-byte words)
/// or 4 (8-byte words) with little row padding, W dividing the tiles where possible.
struct LaunchShape {
  int cells = 8, warps = 4;
};
TCFEM_HD constexpr LaunchShape launch_shape(int dim, int n, int word_bytes) {
  if (dim == 2) {
    constexpr int warps_2d[max_n + 1] = {0, 0, 4, 6, 8, 5, 6, 7, 8, 6};
    return {32, warps_2d[n]};
  }
  constexpr LaunchShape fp64_3d[max_n + 1] = {{},      {},      {16, 4}, {16, 3}, {8, 4},
                                              {16, 5}, {8, 6},  {8, 5},  {4, 4},  {4, 7}};
  constexpr LaunchShape fp32_3d[max_n + 1] = {{},      {},      {16, 4}, {16, 3}, {8, 4},
                                              {16, 5}, {8, 6},  {8, 5},  {8, 8},  {8, 7}};
  return word_bytes == 8 ? fp64_3d[n] : fp32_3d[n];
}

/// The layout of (dim, n, atom): launch shape from launch_shape, then the smallest padded strides
/// (stride[1] >= n, stride[2] >= n stride[1], TS >= n stride[dim-1], CS >= 2 TS, CS = 4 mod 8)
/// whose t parts are distinct. cell_stride stays 0 if none is found (the kernels static_assert).
TCFEM_HD constexpr CgLayout make_cg_layout(int dim, int n, AtomShape atom) {
  CgLayout best;
  best.dim = dim;
  best.n = n;
  best.atom = atom;
  const LaunchShape shape = launch_shape(dim, n, atom.word_bytes);
  best.cells = shape.cells;
  best.warps = shape.warps;
  best.cell_stride = 0;
  for (int r = n; r < n + 8; ++r)
    for (int pz = 0; pz < (dim == 3 ? 8 : 1); ++pz) {
      CgLayout L = best;
      L.stride[0] = 1;
      L.stride[1] = r;
      L.stride[2] = dim == 3 ? n * r + pz : n * r;
      const int extent = n * L.stride[dim - 1];
      for (int ts = extent; ts < extent + 8; ++ts) {
        L.tensor_stride = ts;
        int cs = 2 * ts;
        while (cs % 8 != 4) ++cs;
        L.cell_stride = cs;
        if (t_parts_distinct(L) && (best.cell_stride == 0 || cs < best.cell_stride)) best = L;
      }
    }
  return best;
}

/// Instruction shapes by storage: fp64 on sm_90 (m16n8k4 for n <= 4 and n = 9, where it pads
/// less; m16n8k8 otherwise), fp64 on sm_80 (m8n8k4), TF32 (m16n8k8), FP16 / BF16 (m16n8k16).
TCFEM_HD constexpr AtomShape fp64_sm90_shape(int n) { return {8, 16, (n <= 4 || n == 9) ? 4 : 8, false}; }
TCFEM_HD constexpr AtomShape fp64_sm80_shape() { return {8, 8, 4, false}; }
TCFEM_HD constexpr AtomShape tf32_shape() { return {4, 16, 8, false}; }
TCFEM_HD constexpr AtomShape half_shape() { return {4, 16, 16, true}; }

}  // namespace tcfem::operators::tensor_core
