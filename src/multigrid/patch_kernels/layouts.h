#pragma once
// Thread maps and shared-memory layouts of the vertex-patch smoother kernels
// (multigrid/patch_kernels/kernels.cuh), as host-callable constexpr functions without CUDA-only code: the
// kernels index shared memory with them, and tests/unit/test_patch_kernel_layouts.cpp enumerates
// every warp-wide shared access of every kernel phase and checks that no two lanes of a warp touch
// different words of one bank (bank model of operators/cuda_core/layouts.h).
//
// Notation: k the degree, nf = 2k+1 nodes of a patch per direction, ni = 2k-1 inner nodes.
// Every patch array is a dense tensor whose last (fastest) index is contiguous. A contraction
// along that index ("a line phase") reads lines of n_in contiguous values and writes
//   out[i][a][b] for in[a][b][c]: address_in(l, j) = l n_in + j, address_out(i, l) = i L + l,
// with l = b + n_b a the line number and L the number of lines: the contracted index becomes the
// slowest one and the index order rotates (z,y,x) -> (x',z,y) -> (y',x',z) -> (z',y',x') in 3D,
// (y,x) -> (x',y) -> (y',x') in 2D; after dim phases the tensor is lexicographic again. One
// thread per line: it holds its n_in inputs in registers and forms the n_out outputs one by one
// with the 1D matrix entry shared by all lanes (from the constant bank: the matrices are a kernel
// parameter, see multigrid/patch_kernels/kernels.cuh).
//
// Bank conflicts: n_in = 2k+1 or 2k-1 is odd, so l n_in + j and i L + l, over the lines l of one
// lane group, hit distinct banks (odd strides and unit strides are permutations modulo the bank
// count). A lane group is the set of lanes of one shared-memory wavefront: 16 lanes for 8-byte
// values (a warp's 8-byte access is two half-warps), 32 lanes for 4-byte values.
//
// Two ways to place the P patches of a block (PatchLayout::interleaved):
//  - patch arrays one after the other: element e of patch p at p size + e. Patches never share a
//    lane group: the items (lines, or nodes in the gather) of a patch are padded to a multiple of
//    the group size (3D, k = 3: 49 lines in 64 slots, 35 in 48, 25 in 32).
//  - interleaved (P a power of two dividing the group): element e of patch p at e P + p, the patch
//    the fastest index of every tensor, and item q of a phase is item q / P of patch q % P. No
//    padding per patch: the P L lines of a phase fill round_up(P L, group) slots. A lane group then
//    holds group / P consecutive lines l of all P patches: the reads (l n_in + j) P + p hit the
//    banks P (l n_in mod group / P) + p, distinct because n_in is odd; the writes
//    (i L + l) P + p = i L P + q are a unit stride. The gather copies one box row (n_box nodes
//    along x) of one patch per item q = r P + j: its stores (r n_box + x) P + j fall into
//    distinct banks like the line reads.
#include <array>

#include "core/hd.h"

namespace tcfem::multigrid::patch_kernels {

inline constexpr int warp_lanes = 32;

TCFEM_HD constexpr int ipow(int n, int p) { return p == 0 ? 1 : n * ipow(n, p - 1); }
TCFEM_HD constexpr int round_up(int n, int m) { return (n + m - 1) / m * m; }

/// What one kernel launch does per patch.
enum class KernelKind : int {
  fused = 0,              ///< gather x_F, local residual, local solve, x_I += omega c
  residual = 1,           ///< gather x_F, local residual -> a global buffer of the color's patches
  solve_from_buffer = 2,  ///< local residual from that buffer, local solve, x_I += omega c
  solve_from_vector = 3,  ///< local residual gathered from a global residual vector, solve, update
};

/// How a line phase contracts with its 1D matrix.
///  dense:    n_out n_in FMAs per line, the matrix as it is.
///  even_odd: the patch matrices M_d, L_d are centrosymmetric (A[n-1-i][m-1-j] = A[i][j]; the patch
///            is symmetric about its vertex) and each eigenvector is symmetric or antisymmetric, so
///            a line splits into even and odd parts u_j +- u_{n-1-j} and each half needs only half
///            of the products: about n_out n_in / 2 FMAs per line (patch_even_odd_matrices).
///  tensor_core: each line phase is a batched GEMM on the warp mma atoms: rows = the lines of the
///            phase in tiles of 16 per warp, K = n_in (per input tensor, padded to the atom's K),
///            N = the outputs (M_d | L_d concatenated where a phase forms two), padded to 8; the
///            B fragments come from transposed, tile-ordered copies of the 1D matrices in shared
///            memory behind the patch arrays (TensorCoreMatrixLayout; multigrid/patch_kernels/block.h:
///            tensor_core_phase).
enum class Contraction : int { dense = 0, even_odd = 1, tensor_core = 2 };

TCFEM_HD constexpr bool has_residual(KernelKind kind) {
  return kind == KernelKind::fused || kind == KernelKind::residual;
}
TCFEM_HD constexpr bool has_solve(KernelKind kind) { return kind != KernelKind::residual; }

/// Per-block layout of one kernel.
struct PatchLayout {
  int dim = 3, k = 1, nf = 3, ni = 1, value_bytes = 8;
  int group = 16;    ///< lanes of one shared wavefront; each patch's items start at a multiple
  int patches = 1;   ///< patches per thread block
  int threads = 32;  ///< block size (a multiple of 32)
  int buf0 = 0;      ///< elements per patch of the first work array
  int buf1 = 0;      ///< elements per patch of the second work array
  /// elements per patch of the prefetch array (ni^dim): b_I, copied asynchronously while the
  /// first line phases run and read by the last residual phase, then the old x_I for the update;
  /// 0 where inner_registers
  int buf2 = 0;
  /// the residual kernels read b_I (and the fused kernel the old x_I) into registers of the
  /// threads of the last residual (solve) phase instead of buf2: less shared memory per block
  bool inner_registers = false;
  /// resident blocks per SM the even-odd kernels ask of the compiler (__launch_bounds__): as many
  /// as the shared memory allows, unless that leaves fewer registers per thread than
  /// even_odd_register_floor(k) (8-byte values)
  int min_blocks = 1;
  /// the patches of a block interleaved in every array (element e of patch p at e patches + p),
  /// items of a phase numbered line-major, patch-minor, without padding per patch; otherwise the
  /// arrays of the patches one after the other, each patch's items padded to the lane group
  bool interleaved = false;
  /// the residual kernels' x phase reads each of its lines (a row of the patch's node box along x)
  /// from global memory into the registers of its thread; x_F is not gathered into shared memory
  bool rows_from_global = false;
  /// elements per direction of the 1D matrices (M, L: ni x nf; V: ni x ni), a kernel parameter
  TCFEM_HD constexpr int matrix_stride() const { return 2 * ni * nf + ni * ni; }
  /// distance in a patch array between consecutive elements of one patch
  TCFEM_HD constexpr int element_stride() const { return interleaved ? patches : 1; }
  TCFEM_HD constexpr int shared_elements() const { return patches * (buf0 + buf1 + buf2); }
  TCFEM_HD constexpr int shared_bytes() const { return shared_elements() * value_bytes; }
};

/// Registers per thread the even-odd line phases of 8-byte values get at least (launch bounds of
/// PatchLayout::min_blocks). Measured on the H200 (3D fused, 5e7 DoFs): k = 2, 3, 4 run fastest with
/// 6, 5, 6 resident blocks (37, 48, 56 registers; k = 3, 4: 5% and 8% faster than with an
/// 80-register floor, k = 2: 6% faster than with 48); k = 5..7 spill heavily below 80, 96, 96
/// registers (ptxas -v).
TCFEM_HD constexpr int even_odd_register_floor(int k) {
  return k <= 2 ? 40 : k == 3 ? 48 : k == 4 ? 56 : k == 5 ? 80 : 96;
}

/// Lines (or nodes) each thread takes per phase of the 3D patch kernels (every contraction; the
/// choice is measured with the default even-odd one): the block has
/// 1/lines_per_thread of the threads of one item per thread, and each thread loops over its items.
/// At low degree most line phases have far fewer lines than the largest one (3D, k = 3: 49 lines
/// per patch in the first residual phase, 25 in the solve phases), so one item per thread leaves
/// most lanes idle at the barriers; fewer threads with several items each keep them busy.
/// Measured on the H200 (3D fused smoothing step, 5e7 DoFs, 1, 2 and 4 items per thread): fp64
/// is fastest with 2 at k <= 4 (k = 2, 3, 4: +15%, +13%, +2%) and 1 above (2 costs 0.6-18% at
/// k = 5..8); fp32 with 4 at k <= 4 (+27%, +24%, +12%), 2 at k = 5, 6, 7 (+7%, +1%, +6%) and 1 at
/// k = 8 (docs/notebook/performance_history.md).
TCFEM_HD constexpr int patch_lines_per_thread(int dim, int k, int value_bytes) {
  if (dim != 3) return 1;  // measured in 3D only
  if (value_bytes == 8) return k <= 4 ? 2 : 1;
  return k <= 4 ? 4 : k <= 7 ? 2 : 1;
}

/// Largest block size the layouts use and the dynamic shared memory budget of a multi-patch block:
/// several patches share a block until about 256 threads or 96 KB (two blocks per SM on sm_90).
inline constexpr int target_threads = 256;
inline constexpr int multi_patch_smem_budget = 96 * 1024;
/// sm_90: shared memory per SM, reserved per block, registers per SM, resident blocks per SM
inline constexpr int sm90_shared_per_sm = 228 * 1024;
inline constexpr int shared_reserved_per_block = 1024;
inline constexpr int registers_per_sm = 65536;
inline constexpr int max_blocks_per_sm = 32;

/// Whether the residual kernels hold b_I (and the fused kernel the old x_I) in registers instead
/// of the prefetch array buf2 (PatchLayout::inner_registers). Measured on the H200 (fused
/// smoothing step, 5e7 DoFs, even-odd, registers against buf2): 2D fp64 +0.3% (k = 2) to +32%
/// (k = 1), +7..14% at k = 3..7; 2D fp32 +31% at k = 1, +4% at k = 7, -4..+1% elsewhere; 3D fp64
/// +3.7% at k = 1, +2% at k = 7, 8, but -7..-14% at k = 4..6 (more registers, no gain from the
/// extra resident block) and +-0.3% at k = 2, 3; 3D fp32 slower at every degree but k = 4
/// (docs/notebook/performance_history.md, "b_I in registers"). Since the fused 3D fp64 k = 3 kernel reads its
/// x-phase lines from global memory (rows_from_global), b_I in registers makes it 2.9% faster
/// (8 resident blocks instead of 7, 64 registers; "The x phase's lines from global memory").
TCFEM_HD constexpr bool inner_in_registers(int dim, int k, int value_bytes, KernelKind kind) {
  if (!has_residual(kind)) return false;
  if (value_bytes == 8) return dim == 2 || k == 1 || (k == 3 && kind == KernelKind::fused) || k >= 7;
  return dim == 2 && (k == 1 || k == 7);
}

/// Whether the CUDA-core kernels interleave the patches of a block (PatchLayout::interleaved;
/// only where the patches per block are a power of two dividing the lane group). Measured on the
/// H200 (even-odd, 5e7 DoFs, interleaved against apart; docs/notebook/performance_history.md, "Interleaved
/// patches"): fused 3D fp64 +162%, +23%, +5% at k = 1, 2, 3 and -8%, -10% at k = 4, 5 (2 patches
/// per block); 3D fp32 +4..+269% at k = 1..5; 2D fp64 +3..+265% at k = 1..5 and 8, -7%, -21% at
/// k = 6, 7; 2D fp32 +40..+244% at every degree. The separate variant's kernels gain in 3D at
/// fp64 k <= 2 and fp32 k <= 3, in 2D at fp64 k <= 3 (-17%, -21%, -10% at k = 4, 5, 8) and fp32
/// at every degree; the other kinds (solve from a residual vector) follow them. The tensor-core
/// contraction keeps the patch arrays apart: its 16-line tiles are lines of one patch.
TCFEM_HD constexpr bool interleave_patches(int dim, int k, int value_bytes, KernelKind kind, Contraction con) {
  if (con == Contraction::tensor_core) return false;
  const bool fused = kind == KernelKind::fused;
  if (dim == 2) return value_bytes == 4 || k <= (fused ? 5 : 3) || (fused && k == 8);
  if (value_bytes == 8) return k <= (fused ? 3 : 2);
  return k <= (fused ? 5 : 3);
}

/// Whether the residual kernels of the CUDA-core contractions load the lines of their x phase
/// straight from global memory into registers (PatchLayout::rows_from_global) instead of
/// gathering x_F into shared memory first: each line of the x phase is a row of the node box, so
/// the gather's shared-memory stores and the x phase's loads of the box are saved, at the price
/// of one global load per node and lane (rows of one lane group are different lattice lines).
/// Measured on the H200 (even-odd, 5e7 DoFs, one smoothing step, rows against the gather;
/// docs/notebook/performance_history.md, "The x phase's lines from global memory"): fused 3D fp64 +3%, +5%, +5%
/// at k = 1..3 and +1.3% at k = 8, but -12..-2% at k = 4..7; 3D fp32 +1..+19% at k = 1, 4, 5, 7,
/// 8, -4% at k = 3; 2D fp64 +6..+16% at k = 2, 4, 5, 8, -47% at k = 7; 2D fp32 +2..+9% at k = 4,
/// 6, 7, 8. The separate variant's residual kernel: 3D fp64 k = 2 (+5%; -7..-15% at fp64
/// k >= 3, -11..-12% at fp32 k = 4, 5), 2D fp64 k = 8 (+19%; -2..-14% at k = 2 and 4..7) and 2D
/// fp32 k = 2..4 (+1.4..+2.3%). The dense contraction follows the measured even-odd choice.
TCFEM_HD constexpr bool x_rows_from_global(int dim, int k, int value_bytes, KernelKind kind, Contraction con) {
  if (con == Contraction::tensor_core) return false;
  if (kind == KernelKind::residual) {
    if (dim == 3) return value_bytes == 8 && k == 2;
    return value_bytes == 8 ? k == 8 : k >= 2 && k <= 4;
  }
  if (kind != KernelKind::fused) return false;
  if (dim == 3) return value_bytes == 8 ? (k <= 3 || k == 8) : (k == 1 || k == 4 || k == 5 || k >= 7);
  return value_bytes == 8 ? (k == 2 || k == 4 || k == 5 || k == 8) : (k == 4 || k >= 6);
}

TCFEM_HD constexpr PatchLayout patch_layout(int dim, int k, int value_bytes, KernelKind kind, Contraction con) {
  PatchLayout L;
  L.dim = dim;
  L.k = k;
  L.nf = 2 * k + 1;
  L.ni = 2 * k - 1;
  L.value_bytes = value_bytes;
  L.group = value_bytes == 8 ? 16 : 32;
  const int nf = L.nf, ni = L.ni;
  const int inner = ipow(ni, dim);
  L.rows_from_global = x_rows_from_global(dim, k, value_bytes, kind, con);
  if (has_residual(kind)) {
    // buf0: x_F (nf^dim; none with rows_from_global), in 3D later the two products of the y
    // phase (2 ni^2 nf), in 2D the residual (ni^2)
    // buf1: the two products of the x phase (2 ni nf^(dim-1)), in 3D later the residual (ni^3)
    const int p0 = L.rows_from_global ? inner : ipow(nf, dim), p1 = dim == 3 ? 2 * ni * ni * nf : 0;
    L.buf0 = p0 > p1 ? p0 : p1;
    const int q1 = 2 * ni * ipow(nf, dim - 1);
    L.buf1 = q1 > inner ? q1 : inner;
  } else {
    L.buf0 = inner;
    L.buf1 = inner;
  }
  L.inner_registers = inner_in_registers(dim, k, value_bytes, kind);
  L.buf2 = L.inner_registers ? 0 : inner;
  // threads per patch: the lines of the largest line phase, padded to the lane group
  const int lines = has_residual(kind) ? ipow(nf, dim - 1) : ipow(ni, dim - 1);
  const int per_patch = round_up(lines, L.group);
  int p = target_threads / per_patch;
  // 3D fused fp32 kernels with interleaved patches (k = 2..5): twice the patches, measured on the
  // H200 against the sizes above (5e7 DoFs, even-odd): +27%, +12%, +3.6%, +0.7% at k = 2..5 (k = 1:
  // -3%; fp64 k = 2, 3: -3%, -7%, fewer resident warps)
  if (dim == 3 && value_bytes == 4 && kind == KernelKind::fused && k >= 2 && k <= 5 &&
      interleave_patches(dim, k, value_bytes, kind, con))
    p *= 2;
  if (p < 1) p = 1;
  while (p > 1 && p * (L.buf0 + L.buf1 + L.buf2) * value_bytes > multi_patch_smem_budget) --p;
  L.patches = p;
  L.interleaved = p > 1 && L.group % p == 0 && interleave_patches(dim, k, value_bytes, kind, con);
  const int slots = L.interleaved ? round_up(p * lines, L.group) : p * per_patch;
  const int per_thread = patch_lines_per_thread(dim, k, value_bytes);
  L.threads = round_up((slots + per_thread - 1) / per_thread, warp_lanes);
  if (value_bytes == 8) {
    const int smem_blocks = sm90_shared_per_sm / (L.shared_bytes() + shared_reserved_per_block);
    const int reg_blocks = registers_per_sm / (L.threads * even_odd_register_floor(k));
    int b = smem_blocks < reg_blocks ? smem_blocks : reg_blocks;
    if (b > max_blocks_per_sm) b = max_blocks_per_sm;
    L.min_blocks = b > 1 ? b : 1;
  }
  return L;
}

/// One item of a phase: a line (line phases) or a node (gather/scatter phases) of a patch.
struct Item {
  int patch = 0;  ///< patch within the block
  int index = 0;  ///< line or node within the patch
  bool valid = false;
};

/// Leading dimension (elements) of a B operand of the tensor-core contraction in shared memory:
/// at least `cols`, and congruent to group/4 modulo group/2. A B fragment of the mma atoms
/// (m16n8k4 .f64: lane (g, t) = (lane / 4, lane % 4) reads B(t, g); m16n8k8 .tf32: B(t + 4i, g))
/// then puts the four K rows t of one wavefront group/4 banks apart and the 8 (double: 4 per
/// half-warp) columns g next to each other: every lane of a wavefront hits its own bank.
TCFEM_HD constexpr int tensor_core_ldb(int cols, int group) {
  const int q = group / 4;
  int ld = cols;
  while (ld % (2 * q) != q) ++ld;
  return ld;
}

/// Tile row r (0..15) of an mma tile -> line row0 + tile_row_line(r) of the phase. The rows a
/// wavefront of an 8-byte A load or C store touches (lanes g = 0..3 or 4..7, rows g + 8i) are
/// lines 4 apart: with the odd line length n of the input, the line starts 4 g n + const are 4
/// banks apart and each lane's 4 K columns t = 0..3 fill the gaps, so the m16n8k4 A fragment of
/// a half-warp hits 16 different banks without any padding of the lines.
TCFEM_HD constexpr int tile_row_line(int r) { return 4 * (r % 4) + 2 * ((r % 8) / 4) + r / 8; }
/// Tile column p (0..7) -> output column nt 8 + tile_col_output(p): the accumulator columns
/// 2t + e of a lane hold the outputs t + 4e, so the four lanes t of a C store write outputs
/// t + 4e, whose slabs (output i at i L + line, L odd) start in 4 different banks modulo 4.
/// The B operands are stored with their columns in tile order (B column nt 8 + p holds output
/// nt 8 + tile_col_output(p)), so a B fragment reads consecutive columns.
TCFEM_HD constexpr int tile_col_output(int p) { return p / 2 + 4 * (p % 2); }
/// Stored B column s -> the output column it holds; output_tile_col is its inverse.
TCFEM_HD constexpr int stored_col_output(int s) { return (s / 8) * 8 + tile_col_output(s % 8); }
/// Output column c -> its stored B column.
TCFEM_HD constexpr int output_tile_col(int c) { return (c / 8) * 8 + 2 * ((c % 8) % 4) + (c % 8) / 4; }

/// The B operands of one direction d of the tensor-core contraction, in shared memory behind the
/// patch arrays (written once per block from the kernel-parameter matrices):
///   ML: nf rows (K index j) of [M_d^T | L_d^T]: ML(j, c) = M_d[c][j] for c < ni, L_d[c - ni][j] above;
///   V:  ni rows, V(j, c) = V_d[j][c]   (B of V^T u);
///   VT: ni rows, VT(j, c) = V_d[c][j]  (B of V w);
/// column c stored at output_tile_col(c) (tile order), row strides tensor_core_ldb of 2 ni and
/// ni rounded up to 8.
struct TensorCoreMatrixLayout {
  int ld_ml = 0, ld_v = 0;
  int ml = 0, v = 0, vt = 0;  ///< offsets within a direction
  int stride = 0;             ///< elements per direction
};
TCFEM_HD constexpr TensorCoreMatrixLayout tensor_core_matrix_layout(const PatchLayout& L) {
  TensorCoreMatrixLayout T;
  T.ld_ml = tensor_core_ldb(round_up(2 * L.ni, 8), L.group);
  T.ld_v = tensor_core_ldb(round_up(L.ni, 8), L.group);
  T.ml = 0;
  T.v = L.nf * T.ld_ml;
  T.vt = T.v + L.ni * T.ld_v;
  T.stride = T.vt + L.ni * T.ld_v;
  return T;
}

/// Shared-memory elements of a block of contraction `con`: the patch arrays, and for
/// Contraction::tensor_core the B operands of all directions behind them (at offset
/// L.shared_elements(), dim * tensor_core_matrix_layout(L).stride elements).
TCFEM_HD constexpr int shared_elements_of(const PatchLayout& L, Contraction con) {
  return L.shared_elements() + (con == Contraction::tensor_core ? L.dim * tensor_core_matrix_layout(L).stride : 0);
}
TCFEM_HD constexpr int shared_bytes_of(const PatchLayout& L, Contraction con) {
  return shared_elements_of(L, con) * L.value_bytes;
}

/// Item q of a phase with `count` items per patch. Patch arrays apart: items of a patch occupy
/// round_up(count, group) consecutive slots, so that no lane group holds items of two patches.
/// Interleaved: item q / P of patch q % P.
TCFEM_HD constexpr Item phase_item(const PatchLayout& L, int count, int q) {
  Item it;
  if (L.interleaved) {
    it.patch = q % L.patches;
    it.index = q / L.patches;
    it.valid = it.index < count;
  } else {
    const int per_patch = round_up(count, L.group);
    it.patch = q / per_patch;
    it.index = q % per_patch;
    it.valid = it.index < count && it.patch < L.patches;
  }
  return it;
}
/// Slots of a phase (the loop bound of the block's strided item loop).
TCFEM_HD constexpr int phase_slots(const PatchLayout& L, int count) {
  return L.interleaved ? round_up(L.patches * count, L.group) : L.patches * round_up(count, L.group);
}

/// Shared addresses (in elements, relative to the patch's array) of a line phase.
TCFEM_HD constexpr int line_in_address(int n_in, int line, int j) { return line * n_in + j; }
TCFEM_HD constexpr int line_out_address(int lines, int i, int line) { return i * lines + line; }

/// Offsets (elements) of the arrays of patch p: element e of the array at offset + e
/// L.element_stride().
TCFEM_HD constexpr int buf0_offset(const PatchLayout& L, int p) { return L.interleaved ? p : p * L.buf0; }
TCFEM_HD constexpr int buf1_offset(const PatchLayout& L, int p) {
  return L.patches * L.buf0 + (L.interleaved ? p : p * L.buf1);
}
TCFEM_HD constexpr int buf2_offset(const PatchLayout& L, int p) {
  return L.patches * (L.buf0 + L.buf1) + (L.interleaved ? p : p * L.buf2);
}

/// One line phase of a kernel: contraction of n_in -> n_out values per line over `lines` lines,
/// with `arrays_in` input tensors (read at the same line) and `arrays_out` outputs, reading
/// buffer `from` (0/1, or -1: the lines come from global memory, PatchLayout::rows_from_global)
/// and writing buffer `to` (0/1, or -1: the outputs go to global memory).
struct LinePhase {
  int n_in, n_out, lines, arrays_in, arrays_out, from, to;
};

/// The line phases of a kernel, in order (at most 3 residual + 2 dim solve phases).
struct PhaseList {
  LinePhase phase[9]{};
  int count = 0;
  /// buffer (0/1) holding the lexicographic local residual when the solve starts
  int residual_buffer = 0;
};

TCFEM_HD constexpr PhaseList line_phases(const PatchLayout& L, KernelKind kind) {
  PhaseList P;
  const int nf = L.nf, ni = L.ni, dim = L.dim;
  if (has_residual(kind)) {
    if (dim == 3) {
      P.phase[P.count++] = {nf, ni, nf * nf, 1, 2, L.rows_from_global ? -1 : 0, 1};  // x: M0 u, L0 u
      P.phase[P.count++] = {nf, ni, ni * nf, 2, 2, 1, 0};  // y: M1 a, L1 a + M1 b
      // z: r = b - (L2 c + M2 e): to buf1, or to the global buffer
      P.phase[P.count++] = {nf, ni, ni * ni, 2, 1, 0, kind == KernelKind::residual ? -1 : 1};
      P.residual_buffer = 1;
    } else {
      P.phase[P.count++] = {nf, ni, nf, 1, 2, L.rows_from_global ? -1 : 0, 1};            // x
      P.phase[P.count++] = {nf, ni, ni, 2, 1, 1, kind == KernelKind::residual ? -1 : 0};  // y
      P.residual_buffer = 0;
    }
  } else {
    P.residual_buffer = 0;  // the load phase writes buf0
  }
  if (has_solve(kind)) {
    int cur = P.residual_buffer;
    for (int s = 0; s < 2 * dim; ++s) {
      const bool last = s == 2 * dim - 1;
      P.phase[P.count++] = {ni, ni, ipow(ni, dim - 1), 1, 1, cur, last ? -1 : 1 - cur};
      cur = 1 - cur;
    }
  }
  return P;
}

/// Node phases (gather of x_F into buf0, load of the residual into buf0): `count` nodes per patch,
/// node n of patch p stored at buffer address n (none where the x phase reads x_F from global
/// memory, PatchLayout::rows_from_global).
TCFEM_HD constexpr int gather_count(const PatchLayout& L, KernelKind kind) {
  if (has_residual(kind)) return L.rows_from_global ? 0 : ipow(L.nf, L.dim);
  return ipow(L.ni, L.dim);
}

/// Whether line phase `ph` of line_phases(L, kind) reads the prefetch array buf2 at its output
/// addresses: the last residual phase (b_I) and the last solve phase (the old x_I).
TCFEM_HD constexpr bool reads_prefetch(const PatchLayout& L, KernelKind kind, int ph) {
  if (L.buf2 == 0) return false;
  const int count = (has_residual(kind) ? L.dim : 0) + (has_solve(kind) ? 2 * L.dim : 0);
  return (has_residual(kind) && ph == L.dim - 1) || (has_solve(kind) && ph == count - 1);
}

/// Every warp-wide shared access of one block of a kernel: f(phase name, addresses), addresses
/// in elements of the block's shared array, -1 for inactive lanes. Phase names: 'G' gather
/// stores, 'P' prefetch stores (buf2), 'R' line reads, 'W' line writes, 'B' prefetch reads of the
/// last residual and last solve phases. (The 1D matrices are not in shared memory.)
template <class F>
constexpr void for_each_patch_access(const PatchLayout& L, KernelKind kind, F&& f) {
  std::array<long, warp_lanes> a{};
  const int warps = L.threads / warp_lanes;
  const int es = L.element_stride();
  // gather / load (buf0), prefetch (buf2): node items
  for (const bool prefetch : {false, true}) {
    if (prefetch && L.buf2 == 0) continue;
    const int count = prefetch ? ipow(L.ni, L.dim) : gather_count(L, kind), slots = phase_slots(L, count);
    if (count == 0) continue;  // no gather (rows_from_global)
    const bool box = prefetch || kind != KernelKind::solve_from_buffer;  // copy_patch_boxes, not the buffer load
    if (L.interleaved && box) {
      // copy_patch_boxes, interleaved: item q = r P + j (row r of patch j) copies the n_box nodes
      // of its row, node x to (r n_box + x) P + j, one warp instruction per x
      const int n_box = count == ipow(L.nf, L.dim) ? L.nf : L.ni, items = count / n_box * L.patches;
      for (int base = 0; base < items; base += L.threads)
        for (int w = 0; w < warps; ++w)
          for (int x = 0; x < n_box; ++x) {
            for (int l = 0; l < warp_lanes; ++l) {
              const int q = base + w * warp_lanes + l, r = q / L.patches, j = q % L.patches;
              a[l] = q < items ? (prefetch ? buf2_offset(L, j) : buf0_offset(L, j)) + (r * n_box + x) * L.patches : -1;
            }
            f(prefetch ? 'P' : 'G', a);
          }
      continue;
    }
    for (int base = 0; base < slots; base += L.threads)
      for (int w = 0; w < warps; ++w) {
        for (int l = 0; l < warp_lanes; ++l) {
          const auto it = phase_item(L, count, base + w * warp_lanes + l);
          a[l] = it.valid ? (prefetch ? buf2_offset(L, it.patch) : buf0_offset(L, it.patch)) + it.index * es : -1;
        }
        f(prefetch ? 'P' : 'G', a);
      }
  }
  const auto P = line_phases(L, kind);
  for (int ph = 0; ph < P.count; ++ph) {
    const auto& lp = P.phase[ph];
    const int slots = phase_slots(L, lp.lines);
    const int in_size = lp.lines * lp.n_in, out_size = lp.lines * lp.n_out;
    for (int base = 0; base < slots; base += L.threads)
      for (int w = 0; w < warps; ++w) {
        if (reads_prefetch(L, kind, ph))
          for (int i = 0; i < lp.n_out; ++i) {
            for (int l = 0; l < warp_lanes; ++l) {
              const auto it = phase_item(L, lp.lines, base + w * warp_lanes + l);
              a[l] = it.valid ? buf2_offset(L, it.patch) + line_out_address(lp.lines, i, it.index) * es : -1;
            }
            f('B', a);
          }
        for (int arr = 0; arr < (lp.from < 0 ? 0 : lp.arrays_in); ++arr)
          for (int j = 0; j < lp.n_in; ++j) {
            for (int l = 0; l < warp_lanes; ++l) {
              const auto it = phase_item(L, lp.lines, base + w * warp_lanes + l);
              const int off = lp.from == 0 ? buf0_offset(L, it.patch) : buf1_offset(L, it.patch);
              a[l] = it.valid ? off + (arr * in_size + line_in_address(lp.n_in, it.index, j)) * es : -1;
            }
            f('R', a);
          }
        if (lp.to < 0) continue;
        for (int arr = 0; arr < lp.arrays_out; ++arr)
          for (int i = 0; i < lp.n_out; ++i) {
            for (int l = 0; l < warp_lanes; ++l) {
              const auto it = phase_item(L, lp.lines, base + w * warp_lanes + l);
              const int off = lp.to == 0 ? buf0_offset(L, it.patch) : buf1_offset(L, it.patch);
              a[l] = it.valid ? off + (arr * out_size + line_out_address(lp.lines, i, it.index)) * es : -1;
            }
            f('W', a);
          }
      }
  }
}

// ---- work counts of one smoothing step (per patch) ------------------------------------------

/// Floating-point operations of one patch (an FMA counts 2): line phases, the residual
/// subtraction, the eigenvalue scaling and the update.
TCFEM_HD constexpr double patch_flops(int dim, int k, KernelKind kind, bool replace_inner = false) {
  const double nf = 2 * k + 1, ni = 2 * k - 1;
  double fma = 0.0, other = 0.0;
  if (has_residual(kind)) {
    if (dim == 3)
      fma += 2 * nf * nf * ni * nf + 3 * ni * nf * ni * nf + 2 * ni * ni * ni * nf;
    else
      fma += 2 * nf * ni * nf + 2 * ni * ni * nf;
    other += dim == 3 ? ni * ni * ni : ni * ni;  // b - A u
  }
  if (has_solve(kind)) {
    const double inner = dim == 3 ? ni * ni * ni : ni * ni;
    fma += 2 * dim * inner * ni;
    other += inner;                      // eigenvalue scaling
    if (!replace_inner) fma += inner;    // x += omega c
  }
  return 2.0 * fma + other;
}

/// Multiply-adds of one tensor-core line phase, padded as the mma atoms compute it: the lines
/// rounded up to 16-row tiles, each of the `inputs` input tensors' n_in to the atom's K (k_atom),
/// the `cols` output columns to 8.
TCFEM_HD constexpr double tensor_core_phase_fmas(int lines, int n_in, int inputs, int cols, int k_atom) {
  return double(round_up(lines, 16)) * (inputs * round_up(n_in, k_atom)) * round_up(cols, 8);
}

/// Floating-point operations of one patch with Contraction::tensor_core (an FMA counts 2): the
/// padded products of every line phase (multigrid/patch_kernels/block.h: the x phase forms [M_0 | L_0] u, the
/// 3D y phase [a | b] [[M_1, L_1], [0, M_1]]^T, the last residual phase [c | e] [L | M]^T), plus
/// the residual subtraction, the eigenvalue scaling and the update. k_atom: the K of the atom (4
/// for the FP64 m16n8k4, 8 for the TF32 m16n8k8).
TCFEM_HD constexpr double patch_flops_tensor_core(int dim, int k, KernelKind kind, int k_atom, bool replace_inner = false) {
  const int nf = 2 * k + 1, ni = 2 * k - 1;
  const double inner = ipow(ni, dim);
  double fma = 0.0, other = 0.0;
  if (has_residual(kind)) {
    if (dim == 3) {
      fma += tensor_core_phase_fmas(nf * nf, nf, 1, 2 * ni, k_atom);
      fma += tensor_core_phase_fmas(ni * nf, nf, 2, 2 * ni, k_atom);
      fma += tensor_core_phase_fmas(ni * ni, nf, 2, ni, k_atom);
    } else {
      fma += tensor_core_phase_fmas(nf, nf, 1, 2 * ni, k_atom);
      fma += tensor_core_phase_fmas(ni, nf, 2, ni, k_atom);
    }
    other += inner;
  }
  if (has_solve(kind)) {
    fma += 2 * dim * tensor_core_phase_fmas(ipow(ni, dim - 1), ni, 1, ni, k_atom);
    other += inner;
    if (!replace_inner) fma += inner;
  }
  return 2.0 * fma + other;
}

/// FMAs of one line contraction n_in -> n_out (odd sizes) as the kernel performs it.
TCFEM_HD constexpr double line_fmas(int n_out, int n_in, Contraction con) {
  if (con == Contraction::dense) return double(n_out) * n_in;
  const int ho = n_out / 2, hi = n_in / 2;
  return double(ho + 1) * (hi + 1) + double(ho) * hi;  // even part incl. the middle row/column, odd part
}

/// Floating-point operations one patch performs with contraction `con` (an FMA counts 2; the
/// even/odd sums and differences count 1 each). For dense, patch_flops.
TCFEM_HD constexpr double patch_flops_performed(int dim, int k, KernelKind kind, Contraction con,
                                                bool replace_inner = false) {
  if (con == Contraction::dense) return patch_flops(dim, k, kind, replace_inner);
  if (con == Contraction::tensor_core) return patch_flops_tensor_core(dim, k, kind, 4, replace_inner);
  const int nf = 2 * k + 1, ni = 2 * k - 1;
  const double inner = ipow(ni, dim);
  double fma = 0.0, other = 0.0;
  if (has_residual(kind)) {
    const double mf = line_fmas(ni, nf, con);
    if (dim == 3)
      fma += 2 * nf * nf * mf + 3 * ni * nf * mf + 2 * ni * ni * mf;
    else
      fma += 2 * nf * mf + 2 * ni * mf;
    // even/odd splits of the input lines and the recombined outputs
    other += dim == 3 ? nf * nf * (nf - 1) + 2 * ni * nf * (nf - 1) + 2 * ni * ni * (nf - 1) + (2 * nf * nf + 3 * ni * nf + 2 * ni * ni) * (ni - 1)
                      : nf * (nf - 1) + 2 * ni * (nf - 1) + (2 * nf + 2 * ni) * (ni - 1);
    other += inner;  // b - A u
  }
  if (has_solve(kind)) {
    const double lines = ipow(ni, dim - 1), ve = double(ni / 2 + 1) * (ni / 2 + 1) + double(ni / 2) * (ni / 2);
    const double vv = double(ni / 2) * ni + (ni / 2 + 1);
    fma += dim * lines * (ve + vv) + (replace_inner ? 0.0 : inner);
    other += dim * lines * 2 * (ni - 1) + inner;
  }
  return 2.0 * fma + other;
}

/// Shared-memory bytes of one patch: element loads and stores of the patch arrays (gather and
/// prefetch stores, line reads, line writes, prefetch reads). The 1D matrix entries come from the
/// constant bank. replace_inner (fused): the old x_I is not fetched.
TCFEM_HD constexpr double patch_shared_bytes(const PatchLayout& L, KernelKind kind, bool replace_inner = false) {
  double elements = gather_count(L, kind);
  const auto P = line_phases(L, kind);
  for (int ph = 0; ph < P.count; ++ph) {
    const auto& lp = P.phase[ph];
    if (lp.from >= 0) elements += double(lp.lines) * lp.n_in * lp.arrays_in;
    if (lp.to >= 0) elements += double(lp.lines) * lp.n_out * lp.arrays_out;
    const bool old_x = has_residual(kind) && has_solve(kind) && ph == P.count - 1;
    if (reads_prefetch(L, kind, ph) && !(old_x && replace_inner)) elements += 2.0 * lp.lines * lp.n_out;  // prefetch store and read
  }
  return elements * L.value_bytes;
}

/// Global-memory bytes of one patch (without cache reuse): x_F and b_I read, x_I read and written;
/// the residual kernels write / the solve kernels read ni^dim residual values instead.
/// replace_inner (fused): x_B instead of x_F, and the old x_I not read.
TCFEM_HD constexpr double patch_global_bytes(int dim, int k, int value_bytes, KernelKind kind, bool replace_inner = false) {
  const double full = ipow(2 * k + 1, dim), inner = ipow(2 * k - 1, dim);
  const bool replace = replace_inner && kind == KernelKind::fused;
  double n = 0.0;
  if (has_residual(kind)) n += (replace ? full - inner : full) + inner;  // x_F (or x_B), b_I
  if (kind == KernelKind::residual) n += inner;
  if (has_solve(kind)) n += (kind == KernelKind::fused ? 0.0 : inner) + (replace ? 1 : 2) * inner;  // r, x_I read + write
  return n * value_bytes;
}

}  // namespace tcfem::multigrid::patch_kernels
