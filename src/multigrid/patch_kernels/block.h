#pragma once
// The block program of the vertex-patch smoother kernels (seed 004, Section 3), host/device: the
// CUDA kernels (multigrid/patch_kernels/kernels.cuh) run it with a thread block, the CPU tests
// (tests/unit/test_patch_block.cpp) with one host thread per block, block after block. One block
// handles L.patches patches of one color; the patch tensors live in shared memory in the rotating
// layouts of multigrid/patch_kernels/layouts.h, one thread per line of each contraction (dense, even-odd), or
// one warp per 16-line tile on the mma atoms (tensor_core: tensor_core_phase).
//
// Why no atomics: the patches of one color have vertices whose coordinates have equal parity, so
// two of them differ by at least 2 in some direction d. The nodes a patch reads (its full node box
// (v_d - 1) k .. (v_d + 1) k) and the inner nodes another patch of the color writes
// ((v'_d - 1) k + 1 .. (v'_d + 1) k - 1 with |v_d - v'_d| >= 2) are then disjoint along d: a block
// never reads an entry another block of the same launch writes, and no two blocks write one entry.
// Colors are separate launches (stream order), so each color sees the updates of the previous ones.
// The additive smoother uses the same color launches to sum the overlapping corrections without
// atomics (see multigrid/device/patch_smoother.cu).
#include "arch/async_copy.h"
#include "arch/lane_maps.h"
#include "core/hd.h"
#include "multigrid/patch_kernels/layouts.h"
#include "multigrid/patch_vertices.h"
#include "precision/split_arithmetic.h"
#include "arch/warp_mma_emulator.h"  // the host side of the tensor-core contraction
#if defined(__CUDACC__)
#include "arch/mma_atoms.cuh"
#endif

/// Full unrolling of the loops over the nodes of a line (compile-time trip counts) on the device.
#if defined(__CUDACC__)
#define TCFEM_PATCH_UNROLL _Pragma("unroll")
#else
#define TCFEM_PATCH_UNROLL
#endif

namespace tcfem::multigrid::patch_kernels {

/// a b + c, one rounding on the device
template <typename Number>
TCFEM_HD inline Number fmadd(Number a, Number b, Number c) {
#if defined(__CUDA_ARCH__)
  return fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// Launch parameters of one color.
template <typename Number>
struct PatchKernelParams {
  const Number* inverse_diagonal = nullptr;  ///< ni^dim: 1 / (lambda_x + lambda_y (+ lambda_z)), lexicographic
  /// The separable surrogates (curved cells, variable coefficients; multigrid/host/patch_smoother.h):
  /// dim weights g_d per patch of the color (patch m0 + count[0] (m1 + count[1] m2)) and the unit
  /// cells' eigenvalues lambda_d (dim x ni, in the order of the eigenvectors); the inverse
  /// eigenvalue sum of inner node n is then 1 / sum_d g_d lambda_d[n_d]. Null: inverse_diagonal.
  const Number* patch_weights = nullptr;
  const Number* eigenvalues = nullptr;
  Number* x = nullptr;
  const Number* b = nullptr;
  const Number* r_in = nullptr;  ///< solve kernels: residual buffer of the color, or global residual vector
  Number* r_out = nullptr;       ///< residual kernel: residual buffer of the color
  long long stride[3] = {1, 0, 0};  ///< lattice strides; stride[0] is 1 (x contiguous, the kernels rely on it)
  long long extent[3] = {1, 1, 1};  ///< lattice nodes per direction
  int count[3] = {1, 1, 1};         ///< patches of the color per direction
  int parity[3] = {0, 0, 0};        ///< vertex parity of the color per direction (1: odd)
  int n_patches = 0;                ///< patches of the color
  Number omega = Number(1);
  /// fused kernel, omega = 1 on an exact local solver: x_I = A_II^{-1} (b_I - A_IB x_B), the old x_I
  /// neither read nor gathered (seed 004, Section 4.1.3); otherwise x_I += omega A_II^{-1} r_I
  bool replace_inner = false;
  /// The box faces whose nodes are constrained (Dirichlet): bit 2d the low face along d, bit 2d + 1
  /// the high one. A patch's nodes on the other faces (Neumann faces) are unknowns: read as they are.
  int dirichlet_planes = 0x3F;
};

/// The 1D matrices of all directions, passed by value as a kernel parameter (constant bank): per
/// direction d at d * (2 ni nf + ni ni): M (ni x nf, row-major; inner rows, all columns), L
/// (likewise), V (ni x ni, column j the eigenvector j); for Contraction::even_odd the same slots
/// hold the halved forms of apply_line / apply_eigenvectors (patch_even_odd_matrices). Every index into it is a compile-time
/// constant after unrolling, so the FMAs take the entry straight from the constant bank: no
/// shared-memory load per FMA, and every lane of a warp reads the same entry. 17.6 KB for 3D,
/// k = 8, double (kernel parameters may have 32 KB since CUDA 12.1 on sm_70 and newer).
template <int dim, int k, typename Number>
struct PatchMatrices {
  static constexpr int stride = 2 * (2 * k - 1) * (2 * k + 1) + (2 * k - 1) * (2 * k - 1);
  Number m[dim * stride];
};

/// A patch of the color by its position m = (m_0, m_1, m_2) among the color's patches per
/// direction (0 <= m_d < count[d]; m_2 = 0 in 2D). Blocks are laid on a grid of
/// ceil(count[0] / L.patches) x count[1] (x count[2]) blocks, so no integer division is needed.
struct PatchPosition {
  int m[3] = {0, 0, 0};
};

/// The lowest node of a patch (its lattice index and its lattice x coordinate) and which planes of
/// its node box lie on the Dirichlet boundary (PatchKernelParams::dirichlet_planes): bit 2d the
/// lower plane along d, bit 2d + 1 the upper one.
struct PatchNodes {
  long long base = 0;
  int x0 = 0;
  int boundary = 0;
};

template <int dim, int k, typename Number>
TCFEM_HD inline PatchNodes patch_nodes(const PatchKernelParams<Number>& p, const PatchPosition& pos) {
  PatchNodes r;
TCFEM_PATCH_UNROLL
  for (int d = 0; d < dim; ++d) {
    const int v = color_vertex(p.parity[d], pos.m[d]);  // interior vertex coordinate, 1 .. n_d - 1
    const long long c = static_cast<long long>(v - 1) * k;
    r.base += c * p.stride[d];
    if (d == 0) r.x0 = static_cast<int>(c);
    if (c == 0) r.boundary |= 1 << (2 * d);
    if (c + 2 * k == p.extent[d] - 1) r.boundary |= 2 << (2 * d);
  }
  r.boundary &= p.dirichlet_planes;
  return r;
}

/// The inverse eigenvalue sum of inner node n (lexicographic) of patch m0 of the block at (by, bz):
/// the level's stored tensor, or 1 / sum_d g_d lambda_d[n_d] of the patch's surrogate.
template <int dim, int ni, typename Number>
TCFEM_HD inline Number inverse_eigenvalue_sum(const PatchKernelParams<Number>& p, int m0, int by, int bz, int n) {
  if (p.patch_weights == nullptr) return load_read_only(p.inverse_diagonal + n);
  const long long patch = m0 + static_cast<long long>(p.count[0]) * (by + static_cast<long long>(p.count[1]) * bz);
  const Number* g = p.patch_weights + patch * dim;
  Number s = Number(0);
  int r = n;
TCFEM_PATCH_UNROLL
  for (int d = 0; d < dim; ++d) {
    s = fmadd(load_read_only(g + d), load_read_only(p.eigenvalues + d * ni + r % ni), s);
    r /= ni;
  }
  return Number(1) / s;
}

/// The factors of the surrogate residual (PatchKernelParams::patch_weights; multigrid/host/
/// patch_smoother.h) on the outputs of the residual's line phases, for patch m0 of the block at
/// (by, bz): with the weights g_d, the x phase scales a = M_0 u by f[0] and b = L_0 u by f[1], the
/// y phase (3D) c = M_1 a by f[2] and e = L_1 a + M_1 b by f[3], so that the last phase forms
/// sum_d g_d M .. L_d .. M u: 2D f = (g_1, g_0), 3D f = (1, g_0 / g_1, g_2, g_1). All 1 without
/// surrogates.
template <int dim, typename Number>
struct ResidualScales {
  Number f[4] = {Number(1), Number(1), Number(1), Number(1)};
};
template <int dim, typename Number>
TCFEM_HD inline ResidualScales<dim, Number> residual_scales(const PatchKernelParams<Number>& p, int m0, int by, int bz) {
  ResidualScales<dim, Number> s;
  if (p.patch_weights == nullptr) return s;
  const long long patch = m0 + static_cast<long long>(p.count[0]) * (by + static_cast<long long>(p.count[1]) * bz);
  const Number* g = p.patch_weights + patch * dim;
  if constexpr (dim == 2) {
    s.f[0] = load_read_only(g + 1);
    s.f[1] = load_read_only(g);
  } else {
    const Number g1 = load_read_only(g + 1);
    s.f[1] = load_read_only(g) / g1;
    s.f[2] = load_read_only(g + 2);
    s.f[3] = g1;
  }
  return s;
}

/// The patch j places further along x than `first` in the same block (patches of a color along
/// x are 2k nodes apart): only its x coordinate and x boundary planes differ.
template <int k, typename Number>
TCFEM_HD inline PatchNodes next_patch_nodes(const PatchKernelParams<Number>& p, const PatchNodes& first, int j) {
  PatchNodes r;
  r.x0 = first.x0 + 2 * k * j;
  r.base = first.base + 2 * k * j;  // stride[0] is 1
  r.boundary = first.boundary & ~3;
  if (r.x0 == 0) r.boundary |= 1;
  if (r.x0 + 2 * k == p.extent[0] - 1) r.boundary |= 2;
  r.boundary &= p.dirichlet_planes;
  return r;
}

/// Offset from the patch's lowest node of node n of a box of n_box nodes per direction
/// (lexicographic, x fastest), shifted by `shift` nodes in every direction: the full box (nf, 0)
/// or the inner box (ni, 1). 32-bit: patch_kernel_colors checks that (2k + 1) times the largest
/// lattice stride fits.
template <int dim, int n_box, int shift, typename Number>
TCFEM_HD inline int box_offset(const PatchKernelParams<Number>& p, int n) {
  int off = 0;
TCFEM_PATCH_UNROLL
  for (int d = 0; d < dim; ++d) {
    off += (n % n_box + shift) * (d == 0 ? 1 : static_cast<int>(p.stride[d]));  // stride[0] is 1
    n /= n_box;
  }
  return off;
}

/// Whether node n of the full node box (nf per direction) of a patch lies on one of its Dirichlet
/// boundary planes (PatchNodes::boundary).
template <int dim, int nf>
TCFEM_HD inline bool on_boundary(int boundary, int n) {
  bool on = false;
TCFEM_PATCH_UNROLL
  for (int d = 0; d < dim; ++d) {
    const int i = n % nf;
    n /= nf;
    on |= (i == 0 && (boundary >> (2 * d) & 1)) || (i == nf - 1 && (boundary >> (2 * d + 1) & 1));
  }
  return on;
}

/// Whether node n of the full node box (nf per direction) is an inner node of the patch (no
/// coordinate on the box's faces).
template <int dim, int nf>
TCFEM_HD inline bool inner_node(int n) {
  bool inner = true;
TCFEM_PATCH_UNROLL
  for (int d = 0; d < dim; ++d) {
    const int i = n % nf;
    n /= nf;
    inner &= i != 0 && i != nf - 1;
  }
  return inner;
}

/// Asynchronous copy (arch/async_copy.h) of a node box of n_box^dim nodes (lexicographic; first
/// node `shift` nodes above the patch's lowest node in every direction) of every patch of the
/// block from `src` to the shared arrays at smem + offset(j) (node n at offset(j) + n
/// L.element_stride()). Patch arrays apart: the boxes of the patches of a block differ only by 2k
/// nodes along x, so each thread forms the offset of a node once and issues its copy for every
/// patch. Interleaved: one thread per row of the box (n_box nodes along x) of one patch.
/// zero_boundary: nodes on Dirichlet boundary planes become 0 (blocks away from the boundary skip
/// the test). zero_inner: the inner nodes of the box become 0 without a
/// read (the full box of the fused kernel with PatchKernelParams::replace_inner). Closes the
/// copies into one group.
template <int dim, int k, int n_box, int shift, bool zero_boundary, typename Number, class Offset>
TCFEM_HD void copy_patch_boxes(const ThreadGroup g, const PatchLayout& L, const PatchKernelParams<Number>& p,
                               const PatchNodes& first, int patches, const Number* src, Number* smem,
                               Offset&& offset, bool zero_inner = false) {
  constexpr int count = ipow(n_box, dim);
  const int here = patches < L.patches ? patches : L.patches;
  const int shifted = shift * (1 + (dim > 1 ? static_cast<int>(p.stride[1]) : 0) + (dim > 2 ? static_cast<int>(p.stride[2]) : 0));
  const Number* s = src + first.base + shifted;
  constexpr int step = 2 * k;  // patches of a block along x (stride[0] is 1: x is contiguous)
  const arch::SharedArray<Number> dst(smem);
  bool boundary = false;
  if constexpr (zero_boundary) boundary = first.boundary != 0 || next_patch_nodes<k>(p, first, here - 1).boundary != 0;
  if (L.interleaved) {
    // Node n of patch j goes to offset(j) + n P. The box is rows of n_box nodes along x; item
    // q = r P + j is row r of patch j: one row offset per item, then the n_box copies of the row
    // with compile-time node offsets. The stores of one copy over a lane group (group / P rows of
    // every patch) hit (r n_box + x) P + j: distinct banks, as the line reads of the phases.
    constexpr int rows = ipow(n_box, dim - 1);
    const int P = L.patches;
    const int stride1 = static_cast<int>(p.stride[1]), stride2 = dim == 3 ? static_cast<int>(p.stride[2]) : 0;
    for (int q = g.rank; q < rows * P; q += g.size) {
      const int r = static_cast<int>(static_cast<unsigned>(q) / static_cast<unsigned>(P));
      const int j = static_cast<int>(static_cast<unsigned>(q) % static_cast<unsigned>(P));
      if (j >= here) continue;
      const int c1 = r % n_box, c2 = r / n_box;  // row coordinates along y (and z)
      const Number* row = s + j * step + c1 * stride1 + (dim == 3 ? c2 * stride2 : 0);
      const int slot = offset(j) + r * n_box * P;
      const bool row_inner = c1 != 0 && c1 != n_box - 1 && (dim == 2 || (c2 != 0 && c2 != n_box - 1));
      const int bits = boundary ? next_patch_nodes<k>(p, first, j).boundary : 0;
      const bool row_bound = ((c1 == 0) & (bits >> 2)) | ((c1 == n_box - 1) & (bits >> 3)) |
                             (dim == 3 && (((c2 == 0) & (bits >> 4)) | ((c2 == n_box - 1) & (bits >> 5))));
TCFEM_PATCH_UNROLL
      for (int x = 0; x < n_box; ++x) {
        const bool x_inner = x != 0 && x != n_box - 1;
        const bool x_bound = x == 0 ? (bits & 1) != 0 : x == n_box - 1 ? (bits & 2) != 0 : false;
        const bool zero = (zero_inner & row_inner & x_inner) | row_bound | x_bound;
        arch::async_copy_or_zero(dst, slot + x * P, row + x, !zero);
      }
    }
  } else if (!boundary && here == L.patches && !zero_inner) {  // the common case: one address per node, no predication
    for (int n = g.rank; n < count; n += g.size) {
      const Number* sn = s + box_offset<dim, n_box, 0>(p, n);
TCFEM_PATCH_UNROLL
      for (int j = 0; j < L.patches; ++j) arch::async_copy(dst, offset(j) + n, sn + j * step);
    }
  } else if (!boundary && here == L.patches) {  // inner nodes zero-filled, the others read
    for (int n = g.rank; n < count; n += g.size) {
      const Number* sn = s + box_offset<dim, n_box, 0>(p, n);
      const bool read = !inner_node<dim, n_box>(n);
TCFEM_PATCH_UNROLL
      for (int j = 0; j < L.patches; ++j) arch::async_copy_or_zero(dst, offset(j) + n, sn + j * step, read);
    }
  } else {
    for (int j = 0; j < here; ++j) {
      const int bits = boundary ? next_patch_nodes<k>(p, first, j).boundary : 0;
      for (int n = g.rank; n < count; n += g.size)
        arch::async_copy_or_zero(dst, offset(j) + n, s + j * step + box_offset<dim, n_box, 0>(p, n),
                                 (bits == 0 || !on_boundary<dim, n_box>(bits, n)) && !(zero_inner && inner_node<dim, n_box>(n)));
    }
  }
  arch::async_commit();
}

/// The patch's number within its color, m_0 + count_0 (m_1 + count_1 m_2): its slot in the
/// residual buffer of the separate variant.
template <typename Number>
TCFEM_HD inline long long patch_number(const PatchKernelParams<Number>& p, const PatchPosition& pos) {
  return pos.m[0] + static_cast<long long>(p.count[0]) * (pos.m[1] + static_cast<long long>(p.count[1]) * pos.m[2]);
}

/// sum_j a[j * stride] v[j]: a row (stride 1) or a column (stride n) of a 1D matrix of the
/// kernel parameter (the same entry for every lane).
template <int n, int stride, typename Number>
TCFEM_HD inline Number dot(const Number* a, const Number (&v)[n]) {
  Number s = a[0] * v[0];
TCFEM_PATCH_UNROLL
  for (int j = 1; j < n; ++j) s = fmadd(a[j * stride], v[j], s);
  return s;
}

/// y = A u for one line, A (n_out x n_in, both odd) a 1D matrix of the kernel parameter at `a`;
/// store(i, y_i) takes the outputs. dense: A row-major. even_odd: A centrosymmetric, stored as
/// P ((n_out/2 + 1) x (n_in/2 + 1), row-major: P_ij = (A_ij + A_i,n_in-1-j) / 2 for j < n_in/2,
/// the middle column A_i,n_in/2) followed by Q ((n_out/2) x (n_in/2): (A_ij - A_i,n_in-1-j) / 2);
/// with e_j = u_j + u_{n_in-1-j}, o_j = u_j - u_{n_in-1-j}:
/// y_i = P_i e + P_i,mid u_mid + Q_i o and y_{n_out-1-i} = P_i e + P_i,mid u_mid - Q_i o.
template <int n_out, int n_in, Contraction con, typename Number, class Store>
TCFEM_HD inline void apply_line(const Number* a, const Number (&u)[n_in], Store&& store) {
  if constexpr (con == Contraction::dense) {
TCFEM_PATCH_UNROLL
    for (int i = 0; i < n_out; ++i) store(i, dot<n_in, 1>(a + i * n_in, u));
  } else {
    static_assert(n_out % 2 == 1 && n_in % 2 == 1, "even-odd contraction of odd line lengths");
    constexpr int ho = n_out / 2, hi = n_in / 2;
    const Number* P = a;
    const Number* Q = a + (ho + 1) * (hi + 1);
    Number e[hi + 1], o[hi > 0 ? hi : 1];
TCFEM_PATCH_UNROLL
    for (int j = 0; j < hi; ++j) {
      e[j] = u[j] + u[n_in - 1 - j];
      o[j] = u[j] - u[n_in - 1 - j];
    }
    e[hi] = u[hi];
TCFEM_PATCH_UNROLL
    for (int i = 0; i < ho; ++i) {
      const Number pe = dot<hi + 1, 1>(P + i * (hi + 1), e);
      Number po = Number(0);
TCFEM_PATCH_UNROLL
      for (int j = 0; j < hi; ++j) po = fmadd(Q[i * hi + j], o[j], po);
      store(i, pe + po);
      store(n_out - 1 - i, pe - po);
    }
    store(ho, dot<hi + 1, 1>(P + ho * (hi + 1), e));
  }
}

/// The eigenvector contractions of the fast diagonalization (n odd). dense: V row-major (n x n,
/// column c the eigenvector c); transposed: w = V^T u, else w = V u. even_odd: the eigenvectors
/// ordered symmetric ones first (n/2 + 1 of them), antisymmetric ones after (n/2), stored as the
/// upper rows 0 .. n/2 of that V (row-major, (n/2 + 1) x n): V^T u takes the even part of u for
/// the symmetric and the odd part for the antisymmetric vectors, V w sums the two groups
/// separately and forms row i and row n-1-i from their sum and difference.
template <int n, bool transposed, Contraction con, typename Number, class Store>
TCFEM_HD inline void apply_eigenvectors(const Number* v, const Number (&u)[n], Store&& store) {
  if constexpr (con == Contraction::dense) {
    if constexpr (transposed) {
TCFEM_PATCH_UNROLL
      for (int i = 0; i < n; ++i) store(i, dot<n, n>(v + i, u));
    } else {
TCFEM_PATCH_UNROLL
      for (int i = 0; i < n; ++i) store(i, dot<n, 1>(v + i * n, u));
    }
  } else {
    static_assert(n % 2 == 1, "even-odd contraction of odd line lengths");
    constexpr int h = n / 2, hs = h + 1;  // rows 0 .. h stored; hs symmetric vectors
    if constexpr (transposed) {
      Number e[h + 1], o[h > 0 ? h : 1];
TCFEM_PATCH_UNROLL
      for (int i = 0; i < h; ++i) {
        e[i] = u[i] + u[n - 1 - i];
        o[i] = u[i] - u[n - 1 - i];
      }
      e[h] = u[h];
TCFEM_PATCH_UNROLL
      for (int c = 0; c < hs; ++c) store(c, dot<h + 1, n>(v + c, e));
TCFEM_PATCH_UNROLL
      for (int c = hs; c < n; ++c) {
        Number s = Number(0);
TCFEM_PATCH_UNROLL
        for (int i = 0; i < h; ++i) s = fmadd(v[i * n + c], o[i], s);
        store(c, s);
      }
    } else {
TCFEM_PATCH_UNROLL
      for (int i = 0; i < h; ++i) {
        Number s = v[i * n] * u[0], t = Number(0);
TCFEM_PATCH_UNROLL
        for (int c = 1; c < hs; ++c) s = fmadd(v[i * n + c], u[c], s);
TCFEM_PATCH_UNROLL
        for (int c = hs; c < n; ++c) t = fmadd(v[i * n + c], u[c], t);
        store(i, s + t);
        store(n - 1 - i, s - t);
      }
      Number s = v[h * n] * u[0];
TCFEM_PATCH_UNROLL
      for (int c = 1; c < hs; ++c) s = fmadd(v[h * n + c], u[c], s);
      store(h, s);
    }
  }
}

/// The n values src[0], src[stride], ... of a line.
template <int n, typename Number>
TCFEM_HD inline void load_line(const Number* src, Number (&v)[n], int stride = 1) {
TCFEM_PATCH_UNROLL
  for (int j = 0; j < n; ++j) v[j] = src[j * stride];
}

// ---- Contraction::tensor_core: the line phases as batched GEMMs on the warp mma atoms -----------

/// The mma of the tensor-core contraction per value type: `Map` the lane map (host emulation,
/// arch/warp_mma_emulator.h), `Atom` the instruction on the device, `Arith` the scalar arithmetic
/// of the precision policy (precision/split_arithmetic.h). double: the sm_90 DMMA m16n8k4 (K = 4
/// keeps the padding of the odd line lengths small: 7 -> 8, 9 -> 12, 11 -> 12, 13 -> 16, 15 -> 16,
/// 17 -> 20); float: TF32 m16n8k8 with the three-product split of tf32x3 (hi = tf32(x),
/// lo = tf32(x - hi), a_lo b_hi + a_hi b_lo + a_hi b_hi; about 2^-21 per product): the float
/// smoother serves the fp32, fp16ec, bf16x3 and fp16 V-cycles alike (float level vectors), and a
/// near-FP32 product keeps their iteration counts.
template <typename Number>
struct PatchMma;
template <>
struct PatchMma<double> {
  using Map = arch::LaneMap_M16N8K4_F64;
  using Arith = precision::Arithmetic<precision::Precision::fp64>;
#if defined(__CUDACC__)
  using Atom = arch::Sm90_M16N8K4_F64;
#endif
};
template <>
struct PatchMma<float> {
  using Map = arch::LaneMap_M16N8K8_TF32;
  using Arith = precision::Arithmetic<precision::Precision::tf32x3>;
#if defined(__CUDACC__)
  using Atom = arch::Sm80_M16N8K8_TF32;
#endif
};

/// Sets element i of an A or B operand (one part, or hi and lo) from the value x.
template <class Mma, class Frag, bool is_a>
TCFEM_HD inline void set_operand(Frag (&f)[Mma::Arith::split_kind == precision::SplitKind::none ? 1 : 2], int i,
                                 typename Mma::Map::ValueA x) {
  using Map = typename Mma::Map;
  if constexpr (Mma::Arith::split_kind == precision::SplitKind::none) {
    if constexpr (is_a)
      Map::set_a(f[0], i, x);
    else
      Map::set_b(f[0], i, x);
  } else {
    const precision::SplitValue s = Mma::Arith::split(x);
    if constexpr (is_a) {
      Map::set_a_exact(f[0], i, s.hi);
      Map::set_a_exact(f[1], i, s.lo);
    } else {
      Map::set_b_exact(f[0], i, s.hi);
      Map::set_b_exact(f[1], i, s.lo);
    }
  }
}

/// One line phase as a batched GEMM, for every patch of the block:
///   C (lines x cols) = sum_a A_a (lines x n_in) B_a (n_in x cols),  a = 0 .. inputs - 1,
/// A_a(l, j) = load_a(patch, a, l, j) (the line l of input tensor a, from shared memory),
/// B_a(j, c) = load_b(a, j, c) (the transposed 1D matrices), and epilogue(patch, l, c, C(l, c)) for
/// every valid line and column. Each warp takes 16-line tiles (patch by patch, then tile by tile);
/// per tile it keeps the ceil(cols / 8) accumulator fragments, and per K step of the atom it forms
/// the A fragment once and the B fragment of each column tile. Rows past `lines` and K or columns
/// past the matrix are zero in the operands and skipped in the epilogue. `patch_ok(patch)`:
/// whether the patch exists (uniform per tile, so every lane of a warp takes part in each mma).
/// On the host (g.size == 1) one "warp" does every tile with the warp mma emulator.
template <typename Number, int lines, int n_in, int inputs, int cols, class PatchOk, class LoadA, class LoadB,
          class Epilogue>
TCFEM_HD void tensor_core_phase(const ThreadGroup g, const PatchLayout& L, PatchOk&& patch_ok, LoadA&& load_a,
                                LoadB&& load_b, Epilogue&& epilogue) {
  using Mma = PatchMma<Number>;
  using Map = typename Mma::Map;
  using ValueC = typename Map::ValueC;
  constexpr int parts = Mma::Arith::split_kind == precision::SplitKind::none ? 1 : 2;
  static_assert(Mma::Arith::split_kind != precision::SplitKind::error_correction, "no correction accumulator here");
  constexpr int KA = Map::K;
  constexpr int k_steps = (n_in + KA - 1) / KA;  // per input tensor
  constexpr int n_tiles = (cols + 7) / 8;
  constexpr int m_tiles = (lines + 15) / 16;
  const int tiles = L.patches * m_tiles;
  // value of A / B element i of `lane` in K step s (input a = s / k_steps)
  auto a_value = [&](int patch, int row0, int s, int lane, int i) -> Number {
    const int a = s / k_steps, j = (s % k_steps) * KA + Map::a_col(lane, i), l = row0 + tile_row_line(Map::a_row(lane, i));
    return (j < n_in && l < lines) ? load_a(patch, a, l, j) : Number(0);
  };
  auto b_value = [&](int s, int nt, int lane, int i) -> Number {
    const int a = s / k_steps, j = (s % k_steps) * KA + Map::b_row(lane, i), c = nt * 8 + tile_col_output(Map::b_col(lane, i));
    return (j < n_in && c < cols) ? load_b(a, j, c) : Number(0);
  };
  auto store = [&](int patch, int row0, int nt, int lane, int i, ValueC v) {
    const int l = row0 + tile_row_line(Map::c_row(lane, i)), c = nt * 8 + tile_col_output(Map::c_col(lane, i));
    if (l < lines && c < cols) epilogue(patch, l, c, static_cast<Number>(v));
  };
#if defined(__CUDA_ARCH__)
  using Atom = typename Mma::Atom;
  const int lane = g.rank % warp_lanes, warp = g.rank / warp_lanes, warps = g.size / warp_lanes;
  for (int t = warp; t < tiles; t += warps) {
    const int patch = t / m_tiles, row0 = (t % m_tiles) * 16;
    if (!patch_ok(patch)) continue;  // uniform over the warp
    typename Map::FragC acc[n_tiles];
TCFEM_PATCH_UNROLL
    for (int nt = 0; nt < n_tiles; ++nt) Map::fill_c(acc[nt], ValueC(0));
TCFEM_PATCH_UNROLL
    for (int s = 0; s < inputs * k_steps; ++s) {
      typename Map::FragA fa[parts];
TCFEM_PATCH_UNROLL
      for (int i = 0; i < Map::a_elements; ++i) set_operand<Mma, typename Map::FragA, true>(fa, i, a_value(patch, row0, s, lane, i));
TCFEM_PATCH_UNROLL
      for (int nt = 0; nt < n_tiles; ++nt) {
        typename Map::FragB fb[parts];
TCFEM_PATCH_UNROLL
        for (int i = 0; i < Map::b_elements; ++i) set_operand<Mma, typename Map::FragB, false>(fb, i, b_value(s, nt, lane, i));
        if constexpr (parts == 1) {
          Atom::mma(acc[nt], fa[0], fb[0], acc[nt]);
        } else {  // small terms first, as precision::TilePolicy
          Atom::mma(acc[nt], fa[1], fb[0], acc[nt]);
          Atom::mma(acc[nt], fa[0], fb[1], acc[nt]);
          Atom::mma(acc[nt], fa[0], fb[0], acc[nt]);
        }
      }
    }
TCFEM_PATCH_UNROLL
    for (int nt = 0; nt < n_tiles; ++nt)
TCFEM_PATCH_UNROLL
      for (int i = 0; i < Map::c_elements; ++i) store(patch, row0, nt, lane, i, Map::get_c(acc[nt], i));
  }
#else
  (void)g;
  for (int t = 0; t < tiles; ++t) {
    const int patch = t / m_tiles, row0 = (t % m_tiles) * 16;
    if (!patch_ok(patch)) continue;
    arch::WarpFragmentsC<Map> acc[n_tiles];
    for (int nt = 0; nt < n_tiles; ++nt)
      for (int lane = 0; lane < warp_lanes; ++lane) Map::fill_c(acc[nt][lane], ValueC(0));
    for (int s = 0; s < inputs * k_steps; ++s) {
      arch::WarpFragmentsA<Map> fa[parts];
      for (int lane = 0; lane < warp_lanes; ++lane) {
        typename Map::FragA f[parts];
        for (int i = 0; i < Map::a_elements; ++i) set_operand<Mma, typename Map::FragA, true>(f, i, a_value(patch, row0, s, lane, i));
        for (int q = 0; q < parts; ++q) fa[q][lane] = f[q];
      }
      for (int nt = 0; nt < n_tiles; ++nt) {
        arch::WarpFragmentsB<Map> fb[parts];
        for (int lane = 0; lane < warp_lanes; ++lane) {
          typename Map::FragB f[parts];
          for (int i = 0; i < Map::b_elements; ++i) set_operand<Mma, typename Map::FragB, false>(f, i, b_value(s, nt, lane, i));
          for (int q = 0; q < parts; ++q) fb[q][lane] = f[q];
        }
        if constexpr (parts == 1) {
          acc[nt] = arch::emulate_warp_mma<Map>(fa[0], fb[0], acc[nt]);
        } else {
          acc[nt] = arch::emulate_warp_mma<Map>(fa[1], fb[0], acc[nt]);
          acc[nt] = arch::emulate_warp_mma<Map>(fa[0], fb[1], acc[nt]);
          acc[nt] = arch::emulate_warp_mma<Map>(fa[0], fb[0], acc[nt]);
        }
      }
    }
    for (int nt = 0; nt < n_tiles; ++nt)
      for (int lane = 0; lane < warp_lanes; ++lane)
        for (int i = 0; i < Map::c_elements; ++i) store(patch, row0, nt, lane, i, Map::get_c(acc[nt][lane], i));
  }
#endif
}

/// The work of one thread block (bx, by, bz): the patches m = (bx L.patches + j, by, bz),
/// j = 0 .. L.patches - 1, of the color, with
/// `g` the threads of the block (on the host: one thread doing every item of a phase in turn) and
/// `smem` the block's shared array of L.shared_elements() values.
template <int dim, int k, typename Number, KernelKind kind, Contraction con = Contraction::dense>
TCFEM_HD void patch_block(const ThreadGroup g, const int bx, const int by, const int bz,
                          const PatchKernelParams<Number>& p,
                          const PatchMatrices<dim, k, Number>& matrices, Number* smem) {
  constexpr PatchLayout L = patch_layout(dim, k, sizeof(Number), kind, con);
  constexpr int nf = 2 * k + 1, ni = 2 * k - 1;
  constexpr int es = L.element_stride();  // element e of a patch array at its offset + e es
  static_assert(con != Contraction::tensor_core || !L.interleaved, "tensor-core tiles are lines of one patch");
  constexpr int ms = PatchMatrices<dim, k, Number>::stride;
  static_assert(ms == L.matrix_stride(), "matrix layout");
  const Number* mats = matrices.m;
  const int tid = g.rank;
  const int first_m0 = bx * L.patches;
  auto patch_ok = [&](const Item& it) { return it.valid && first_m0 + it.patch < p.count[0]; };
  auto position = [&](const Item& it) {
    PatchPosition pos;
    pos.m[0] = first_m0 + it.patch;
    pos.m[1] = by;
    pos.m[2] = bz;
    return pos;
  };

  // tensor_core: the B operands of all directions behind the patch arrays (TensorCoreMatrixLayout;
  // padding columns zero)
  constexpr int shared_matrix_offset = L.shared_elements();
  constexpr TensorCoreMatrixLayout T = tensor_core_matrix_layout(L);
  if constexpr (con == Contraction::tensor_core) {
    for (int q = tid; q < dim * T.stride; q += g.size) {
      const int d = q / T.stride, e = q % T.stride;
      const Number* md = mats + d * ms;  // M (ni x nf), L (ni x nf), V (ni x ni), row-major
      Number v = Number(0);
      if (e < T.v) {
        const int j = e / T.ld_ml, c = stored_col_output(e % T.ld_ml);
        if (c < ni)
          v = md[c * nf + j];
        else if (c < 2 * ni)
          v = md[ni * nf + (c - ni) * nf + j];
      } else {
        const bool transposed = e >= T.vt;
        const int r = e - (transposed ? T.vt : T.v), j = r / T.ld_v, c = stored_col_output(r % T.ld_v);
        if (c < ni) v = transposed ? md[2 * ni * nf + c * ni + j] : md[2 * ni * nf + j * ni + c];
      }
      smem[shared_matrix_offset + q] = v;
    }
  }

  // ---- gather: x_F (constrained nodes as 0), or the local residual, into buf0; prefetch into buf2 --
  // All global reads of a block are asynchronous copies (arch/async_copy.h), issued at once: x_F
  // (group 1) and b_I (group 2) for the residual kernels, b_I waited for only after the x phase;
  // the residual (group 1) and the old x_I (group 2) for the solve kernels. The fused kernel
  // fetches its old x_I into buf2 once the last residual phase has read b_I (before the solve).
  PatchPosition first_position;
  first_position.m[0] = first_m0;
  first_position.m[1] = by;
  first_position.m[2] = bz;
  const PatchNodes first = patch_nodes<dim, k>(p, first_position);
  const int patches_here = p.count[0] - first_m0;  // >= 1; more than L.patches is cut off
  auto at_buf0 = [&](int j) { return buf0_offset(L, j); };
  auto at_buf2 = [&](int j) { return buf2_offset(L, j); };
  // L.rows_from_global: line it.index of the x phase of patch it.patch is row it.index of the
  // patch's full node box (nf nodes along x), read from global memory (nodes on Dirichlet planes
  // and, with replace_inner, the inner nodes as 0 without a read); on the device each thread loads
  // all its lines into registers (x_rows[r] for slot tid + r g.size) before anything else.
  constexpr bool rows_direct = has_residual(kind) && L.rows_from_global;
  static_assert(!rows_direct || con != Contraction::tensor_core, "the tensor-core x phase reads the gathered box");
  constexpr int x_lines = ipow(nf, dim - 1), x_slots = phase_slots(L, x_lines);
#if defined(__CUDA_ARCH__)
  constexpr int x_rounds = rows_direct ? (x_slots + L.threads - 1) / L.threads : 1;
#else
  constexpr int x_rounds = 1;
#endif
  Number x_rows[x_rounds][rows_direct ? nf : 1];
  const bool any_boundary =
      rows_direct && (first.boundary != 0 || next_patch_nodes<k>(p, first, (patches_here < L.patches ? patches_here : L.patches) - 1).boundary != 0);
  // (the zeros follow the rule of copy_patch_boxes' interleaved rows; one helper for both changed
  // the generated code of 41 of the 128 even-odd kernels, so the rule is spelled out twice)
  auto load_box_row = [&](const Item& it, Number(&v)[nf]) {
    const int c1 = it.index % nf, c2 = it.index / nf;  // the row's coordinates along y (and z)
    const Number* row = p.x + first.base + 2 * k * it.patch + c1 * static_cast<int>(p.stride[1]) +
                        (dim == 3 ? c2 * static_cast<int>(p.stride[2]) : 0);
    const bool zero_inner = kind == KernelKind::fused && p.replace_inner;
    const bool row_inner = c1 != 0 && c1 != nf - 1 && (dim == 2 || (c2 != 0 && c2 != nf - 1));
    const int bits = any_boundary ? next_patch_nodes<k>(p, first, it.patch).boundary : 0;
    const bool row_bound = ((c1 == 0) & (bits >> 2)) | ((c1 == nf - 1) & (bits >> 3)) |
                           (dim == 3 && (((c2 == 0) & (bits >> 4)) | ((c2 == nf - 1) & (bits >> 5))));
TCFEM_PATCH_UNROLL
    for (int x = 0; x < nf; ++x) {
      const bool x_inner = x != 0 && x != nf - 1;
      const bool x_bound = x == 0 ? (bits & 1) != 0 : x == nf - 1 ? (bits & 2) != 0 : false;
      const bool zero = (zero_inner & row_inner & x_inner) | row_bound | x_bound;
      v[x] = zero ? Number(0) : row[x];
    }
  };
#if defined(__CUDA_ARCH__)
  // f(item, x_rows[r]) for each x-phase line of the thread (slot tid + r g.size)
  auto for_x_rows = [&](auto&& f) {
TCFEM_PATCH_UNROLL
    for (int r = 0; r < x_rounds; ++r) {
      const int q = tid + r * g.size;
      if (q >= x_slots) break;
      const Item it = phase_item(L, x_lines, q);
      if (patch_ok(it)) f(it, x_rows[r]);
    }
  };
#endif
  if constexpr (rows_direct) {
#if defined(__CUDA_ARCH__)
    for_x_rows(load_box_row);
#endif
  } else if constexpr (has_residual(kind)) {
    copy_patch_boxes<dim, k, nf, 0, true>(g, L, p, first, patches_here, p.x, smem, at_buf0,
                                          kind == KernelKind::fused && p.replace_inner);
  } else if constexpr (kind == KernelKind::solve_from_buffer) {
    constexpr int count = gather_count(L, kind);
    for (int q = tid; q < phase_slots(L, count); q += g.size) {
      const Item it = phase_item(L, count, q);
      if (!patch_ok(it)) continue;
      arch::async_copy(arch::SharedArray<Number>(smem), buf0_offset(L, it.patch) + it.index * es,
                       p.r_in + patch_number(p, position(it)) * ipow(ni, dim) + it.index);
    }
    arch::async_commit();
  } else {
    copy_patch_boxes<dim, k, ni, 1, false>(g, L, p, first, patches_here, p.r_in, smem, at_buf0);
  }
  // the inner nodes of every patch into buf2: b_I (residual kernels), or the old x_I (solve kernels)
  auto prefetch_inner = [&](const Number* src) {
    copy_patch_boxes<dim, k, ni, 1, false>(g, L, p, first, patches_here, src, smem, at_buf2);
  };
  // L.inner_registers: each thread reads the inner values of its lines of the last line phase
  // (ni^(dim-1) lines along the last direction, lexicographic outputs) into registers instead:
  // inner_reg[r][i] belongs to the thread's slot tid + r g.size (on the host, g.size = 1, every slot)
  constexpr bool in_regs = L.inner_registers;
  constexpr int last_lines = ipow(ni, dim - 1);
  constexpr int last_slots = phase_slots(L, last_lines);
#if defined(__CUDA_ARCH__)
  constexpr int last_rounds = (last_slots + L.threads - 1) / L.threads;
#else
  constexpr int last_rounds = last_slots;
#endif
  const int plane = static_cast<int>(p.stride[dim - 1]);
  Number inner_reg[in_regs ? last_rounds : 1][in_regs ? ni : 1];
  // f(r, q) for the slots q = tid + r g.size of a phase of last_lines lines; unrolled only where
  // r indexes the registers (an unrolled loop of two rounds made the 3D fp64 k = 4 kernel slower)
  auto for_last_slots = [&](auto&& f) {
    if constexpr (in_regs) {
TCFEM_PATCH_UNROLL
      for (int r = 0; r < last_rounds; ++r) {
        const int q = tid + r * g.size;
        if (q >= last_slots) break;
        f(r, q);
      }
    } else {
      for (int q = tid; q < last_slots; q += g.size) f(0, q);
    }
  };
  // the first inner node of line `index` of the last phase of patch j in global memory
  auto last_line_node = [&](int j, int index) {
    return next_patch_nodes<k>(p, first, j).base + box_offset<dim - 1, ni, 1>(p, index) + plane;
  };
  auto read_inner_registers = [&](const Number* src) {
    if constexpr (in_regs) {
      for_last_slots([&](int r, int q) {
        const Item it = phase_item(L, last_lines, q);
        if (!patch_ok(it)) return;
        const Number* s = src + last_line_node(it.patch, it.index);
TCFEM_PATCH_UNROLL
        for (int i = 0; i < ni; ++i) inner_reg[r][i] = s[i * plane];
      });
    }
  };
  if constexpr (has_residual(kind) && in_regs) {
    read_inner_registers(p.b);
    arch::async_wait<0>();
  } else {
    prefetch_inner(has_residual(kind) ? p.b : p.x);
    arch::async_wait<1>();  // the first group is in; the second may still be in flight
  }
  if constexpr (!rows_direct) g.sync();  // (rows_direct: nothing in shared memory to wait for)

  // ---- localized residual r_I = b_I - A_{I,F} x_F (seed 004, Eq. 8) ----------------------------
  if constexpr (has_residual(kind) && con != Contraction::tensor_core) {
    const Number* M0 = mats;
    const Number* L0 = mats + ni * nf;
    const Number* M1 = mats + ms;
    const Number* L1 = mats + ms + ni * nf;
    // x phase: a = M0 u, b = L0 u  ([x'][z][y] / [x'][y])
    {
      constexpr int lines = x_lines, out_size = lines * ni;
      auto x_line = [&](const Item& it, const Number(&v)[nf]) {
        Number* out = smem + buf1_offset(L, it.patch);
        const auto f = residual_scales<dim>(p, first_m0 + it.patch, by, bz);
        if constexpr (con == Contraction::dense) {
TCFEM_PATCH_UNROLL
          for (int i = 0; i < ni; ++i) {
            out[line_out_address(lines, i, it.index) * es] = f.f[0] * dot<nf, 1>(M0 + i * nf, v);
            out[(out_size + line_out_address(lines, i, it.index)) * es] = f.f[1] * dot<nf, 1>(L0 + i * nf, v);
          }
        } else {
          apply_line<ni, nf, con>(M0, v, [&](int i, Number y) { out[line_out_address(lines, i, it.index) * es] = f.f[0] * y; });
          apply_line<ni, nf, con>(L0, v, [&](int i, Number y) {
            out[(out_size + line_out_address(lines, i, it.index)) * es] = f.f[1] * y;
          });
        }
      };
      if constexpr (rows_direct) {
#if defined(__CUDA_ARCH__)
        for_x_rows(x_line);
#else
        for (int q = tid; q < x_slots; q += g.size) {
          const Item it = phase_item(L, lines, q);
          if (!patch_ok(it)) continue;
          load_box_row(it, x_rows[0]);
          x_line(it, x_rows[0]);
        }
#endif
      } else {
        for (int q = tid; q < x_slots; q += g.size) {
          const Item it = phase_item(L, lines, q);
          if (!patch_ok(it)) continue;
          Number v[nf];
          load_line(smem + buf0_offset(L, it.patch) + line_in_address(nf, it.index, 0) * es, v, es);
          x_line(it, v);
        }
      }
    }
    arch::async_wait<0>();  // b_I (buf2) is in before the last residual phase
    g.sync();
    if constexpr (dim == 3) {
      // y phase: c = M1 a, e = L1 a + M1 b  ([y'][x'][z])
      {
        constexpr int lines = ni * nf, in_size = lines * nf, out_size = lines * ni;
        for (int q = tid; q < phase_slots(L, lines); q += g.size) {
          const Item it = phase_item(L, lines, q);
          if (!patch_ok(it)) continue;
          const Number* in = smem + buf1_offset(L, it.patch) + line_in_address(nf, it.index, 0) * es;
          Number va[nf], vb[nf];
          load_line(in, va, es);
          load_line(in + in_size * es, vb, es);
          Number* out = smem + buf0_offset(L, it.patch);
          const auto f = residual_scales<dim>(p, first_m0 + it.patch, by, bz);
          if constexpr (con == Contraction::dense) {
TCFEM_PATCH_UNROLL
            for (int i = 0; i < ni; ++i) {
              out[line_out_address(lines, i, it.index) * es] = f.f[2] * dot<nf, 1>(M1 + i * nf, va);
              out[(out_size + line_out_address(lines, i, it.index)) * es] =
                  f.f[3] * (dot<nf, 1>(L1 + i * nf, va) + dot<nf, 1>(M1 + i * nf, vb));
            }
          } else {
            apply_line<ni, nf, con>(M1, va, [&](int i, Number y) { out[line_out_address(lines, i, it.index) * es] = f.f[2] * y; });
            // e = L1 a + M1 b
            Number* oe = out + out_size * es;
            Number t[ni];
            apply_line<ni, nf, con>(L1, va, [&](int i, Number y) { t[i] = y; });
            apply_line<ni, nf, con>(M1, vb, [&](int i, Number y) {
              oe[line_out_address(lines, i, it.index) * es] = f.f[3] * (t[i] + y);
            });
          }
        }
      }
      g.sync();
    }
    // the last residual phase, along direction dim - 1: r = b - (L c + M e) (3D: the z phase on
    // c, e of the y phase; 2D: the y phase on a, b of the x phase), lexicographic, into the
    // residual buffer of line_phases (or the color's buffer of the residual kernel)
    {
      const Number* Ml = mats + (dim - 1) * ms;
      const Number* Ll = Ml + ni * nf;
      constexpr int to = line_phases(L, kind).residual_buffer;
      constexpr int lines = last_lines, in_size = lines * nf;
      for_last_slots([&](int r, int q) {
        const Item it = phase_item(L, lines, q);
        if (!patch_ok(it)) return;
        const PatchPosition patch = position(it);
        const Number* in = smem + (to == 1 ? buf0_offset(L, it.patch) : buf1_offset(L, it.patch)) + line_in_address(nf, it.index, 0) * es;
        Number vc[nf], ve[nf];
        load_line(in, vc, es);
        load_line(in + in_size * es, ve, es);
        const Number* b_inner = smem + buf2_offset(L, it.patch);
        auto b_at = [&](int i, int n) {
          if constexpr (in_regs)
            return inner_reg[r][i];
          else
            return b_inner[n * es];
        };
        auto store = [&](int n, Number v) {
          if constexpr (kind == KernelKind::residual)
            p.r_out[patch_number(p, patch) * ipow(ni, dim) + n] = v;
          else
            smem[(to == 1 ? buf1_offset(L, it.patch) : buf0_offset(L, it.patch)) + n * es] = v;
        };
        if constexpr (con == Contraction::dense) {
TCFEM_PATCH_UNROLL
          for (int i = 0; i < ni; ++i) {
            const int n = line_out_address(lines, i, it.index);
            store(n, b_at(i, n) - (dot<nf, 1>(Ll + i * nf, vc) + dot<nf, 1>(Ml + i * nf, ve)));
          }
        } else {
          Number t[ni];
          apply_line<ni, nf, con>(Ll, vc, [&](int i, Number y) { t[i] = y; });
          apply_line<ni, nf, con>(Ml, ve, [&](int i, Number y) {
            const int n = line_out_address(lines, i, it.index);
            store(n, b_at(i, n) - (t[i] + y));
          });
        }
      });
    }
  }

  // ---- the same residual with Contraction::tensor_core (batched GEMMs, tensor_core_phase) --------
  if constexpr (has_residual(kind) && con == Contraction::tensor_core) {
    const Number* sm = smem + shared_matrix_offset;  // the B operands, written above
    auto ok = [&](int patch) { return first_m0 + patch < p.count[0]; };
    // entry (i, j) of M_d / L_d (ni x nf) from the transposed copies [M_d^T | L_d^T]
    auto Md = [&](int d, int i, int j) { return sm[d * T.stride + T.ml + j * T.ld_ml + output_tile_col(i)]; };
    auto Ld = [&](int d, int i, int j) { return sm[d * T.stride + T.ml + j * T.ld_ml + output_tile_col(ni + i)]; };
    // x phase: [a | b] = u [M0^T | L0^T]  (columns c < ni: a, c >= ni: b)
    {
      constexpr int lines = ipow(nf, dim - 1), out_size = lines * ni;
      tensor_core_phase<Number, lines, nf, 1, 2 * ni>(
          g, L, ok, [&](int patch, int, int l, int j) { return smem[buf0_offset(L, patch) + line_in_address(nf, l, j)]; },
          [&](int, int j, int c) { return c < ni ? Md(0, c, j) : Ld(0, c - ni, j); },
          [&](int patch, int l, int c, Number y) {
            const auto f = residual_scales<dim>(p, first_m0 + patch, by, bz);
            smem[buf1_offset(L, patch) + (c < ni ? 0 : out_size) + line_out_address(lines, c < ni ? c : c - ni, l)] =
                (c < ni ? f.f[0] : f.f[1]) * y;
          });
    }
    arch::async_wait<0>();  // b_I (buf2) is in before the last residual phase
    g.sync();
    if constexpr (dim == 3) {
      // y phase: [c | e] = [a | b] [[M1^T, L1^T], [0, M1^T]]
      {
        constexpr int lines = ni * nf, in_size = lines * nf, out_size = lines * ni;
        tensor_core_phase<Number, lines, nf, 2, 2 * ni>(
            g, L, ok,
            [&](int patch, int a, int l, int j) { return smem[buf1_offset(L, patch) + a * in_size + line_in_address(nf, l, j)]; },
            [&](int a, int j, int c) { return a == 0 ? (c < ni ? Md(1, c, j) : Ld(1, c - ni, j)) : (c < ni ? Number(0) : Md(1, c - ni, j)); },
            [&](int patch, int l, int c, Number y) {
              const auto f = residual_scales<dim>(p, first_m0 + patch, by, bz);
              smem[buf0_offset(L, patch) + (c < ni ? 0 : out_size) + line_out_address(lines, c < ni ? c : c - ni, l)] =
                  (c < ni ? f.f[2] : f.f[3]) * y;
            });
      }
      g.sync();
    }
    // the last residual phase along direction dim - 1: r = b - [c | e] [L^T ; M^T] (3D: c, e of
    // the y phase; 2D: a, b of the x phase), lexicographic
    {
      constexpr int d = dim - 1, to = line_phases(L, kind).residual_buffer;
      constexpr int lines = ipow(ni, dim - 1), in_size = lines * nf;
      tensor_core_phase<Number, lines, nf, 2, ni>(
          g, L, ok,
          [&](int patch, int a, int l, int j) {
            return smem[(to == 1 ? buf0_offset(L, patch) : buf1_offset(L, patch)) + a * in_size + line_in_address(nf, l, j)];
          },
          [&](int a, int j, int c) { return a == 0 ? Ld(d, c, j) : Md(d, c, j); },
          [&](int patch, int l, int c, Number y) {
            PatchPosition pos;
            pos.m[0] = first_m0 + patch;
            pos.m[1] = by;
            pos.m[2] = bz;
            const int n = line_out_address(lines, c, l);
            // without buf2 (in_regs), b_I straight from global memory
            const Number b_n = in_regs ? p.b[last_line_node(patch, l) + c * plane] : smem[buf2_offset(L, patch) + n];
            const Number r = b_n - y;
            if constexpr (kind == KernelKind::residual)
              p.r_out[patch_number(p, pos) * ipow(ni, dim) + n] = r;
            else
              smem[(to == 1 ? buf1_offset(L, patch) : buf0_offset(L, patch)) + n] = r;
          });
    }
  }

  // ---- local solve with Contraction::tensor_core: V_d^T and V_d as GEMMs -------------------------
  if constexpr (has_solve(kind) && con == Contraction::tensor_core) {
    g.sync();
    if constexpr (has_residual(kind) && !in_regs)
      if (!p.replace_inner) prefetch_inner(p.x);  // buf2: b_I read, now the old x_I
    constexpr int lines = ipow(ni, dim - 1);
    auto ok = [&](int patch) { return first_m0 + patch < p.count[0]; };
    int cur = line_phases(L, kind).residual_buffer;
TCFEM_PATCH_UNROLL
    for (int s = 0; s < 2 * dim; ++s) {
      const int d = s % dim;
      const Number* V = smem + shared_matrix_offset + d * T.stride + T.v;    // V(j, c) = V_d[j][c]
      const Number* VT = smem + shared_matrix_offset + d * T.stride + T.vt;  // VT(j, c) = V_d[c][j]
      const int in_buf = cur;
      auto in = [&](int patch, int, int l, int j) {
        return smem[(in_buf == 0 ? buf0_offset(L, patch) : buf1_offset(L, patch)) + line_in_address(ni, l, j)];
      };
      auto out_offset = [&](int patch) { return in_buf == 0 ? buf1_offset(L, patch) : buf0_offset(L, patch); };
      // V^T u: B(j, c) = V[j][c]; V w: B(j, c) = V[c][j]
      auto vt = [&](int, int j, int c) { return V[j * T.ld_v + output_tile_col(c)]; };
      auto vn = [&](int, int j, int c) { return VT[j * T.ld_v + output_tile_col(c)]; };
      if (s < dim - 1) {
        tensor_core_phase<Number, lines, ni, 1, ni>(g, L, ok, in, vt, [&](int patch, int l, int c, Number y) {
          smem[out_offset(patch) + line_out_address(lines, c, l)] = y;
        });
      } else if (s == dim - 1) {  // then the inverse eigenvalue sums (lexicographic again)
        tensor_core_phase<Number, lines, ni, 1, ni>(g, L, ok, in, vt, [&](int patch, int l, int c, Number y) {
          const int n = line_out_address(lines, c, l);
          smem[out_offset(patch) + n] = y * inverse_eigenvalue_sum<dim, ni>(p, first_m0 + patch, by, bz, n);
        });
      } else if (s < 2 * dim - 1) {
        tensor_core_phase<Number, lines, ni, 1, ni>(g, L, ok, in, vn, [&](int patch, int l, int c, Number y) {
          smem[out_offset(patch) + line_out_address(lines, c, l)] = y;
        });
      } else {  // last V_d: lexicographic result, added to x
        tensor_core_phase<Number, lines, ni, 1, ni>(g, L, ok, in, vn, [&](int patch, int l, int c, Number y) {
          PatchPosition pos;
          pos.m[0] = first_m0 + patch;
          pos.m[1] = by;
          pos.m[2] = bz;
          const int n = line_out_address(lines, c, l);
          Number* xn = p.x + patch_nodes<dim, k>(p, pos).base + box_offset<dim, ni, 1>(p, n);
          // the old x_I from buf2, or (in_regs) read here before it is overwritten
          if (has_residual(kind) && p.replace_inner)
            *xn = y;
          else
            *xn = (in_regs ? *xn : smem[buf2_offset(L, patch) + n]) + p.omega * y;
        });
      }
      cur = 1 - cur;
      if (s == 2 * dim - 2) arch::async_wait<0>();  // the old x_I (buf2) is in before the last phase
      if (s < 2 * dim - 1) g.sync();
    }
  }

  // ---- local solve by fast diagonalization, x_I += omega A_j^{-1} r_I ------------------------
  if constexpr (has_solve(kind) && con != Contraction::tensor_core) {
    g.sync();
    if constexpr (has_residual(kind)) {  // b_I read, now the old x_I (into buf2 or registers)
      if (!p.replace_inner) {
        if constexpr (in_regs)
          read_inner_registers(p.x);
        else
          prefetch_inner(p.x);
      }
    }
    constexpr int lines = last_lines;
    int cur = line_phases(L, kind).residual_buffer;
TCFEM_PATCH_UNROLL
    for (int s = 0; s < 2 * dim; ++s) {
      const int d = s % dim;
      const Number* V = mats + d * ms + 2 * ni * nf;
      for_last_slots([&](int r, int q) {
        const Item it = phase_item(L, lines, q);
        if (!patch_ok(it)) return;
        const int o_in = cur == 0 ? buf0_offset(L, it.patch) : buf1_offset(L, it.patch);
        const int o_out = cur == 0 ? buf1_offset(L, it.patch) : buf0_offset(L, it.patch);
        Number v[ni];
        load_line(smem + o_in + line_in_address(ni, it.index, 0) * es, v, es);
        if (s < dim - 1) {  // V_d^T
          apply_eigenvectors<ni, true, con>(V, v, [&](int i, Number y) { smem[o_out + line_out_address(lines, i, it.index) * es] = y; });
        } else if (s == dim - 1) {  // V_d^T, then the inverse eigenvalue sums (lexicographic again)
          apply_eigenvectors<ni, true, con>(V, v, [&](int i, Number y) {
            const int n = line_out_address(lines, i, it.index);
            smem[o_out + n * es] = y * inverse_eigenvalue_sum<dim, ni>(p, first_m0 + it.patch, by, bz, n);
          });
        } else if (s < 2 * dim - 1) {  // V_d
          apply_eigenvectors<ni, false, con>(V, v, [&](int i, Number y) { smem[o_out + line_out_address(lines, i, it.index) * es] = y; });
        } else {  // last V_d: lexicographic result, added to x
          // output i of line l is inner node i lines + l: line l's nodes lie along the last
          // direction, i planes above the line's first inner node
          Number* x = p.x + last_line_node(it.patch, it.index);
          if (has_residual(kind) && p.replace_inner) {  // x_I = A_II^{-1} (b_I - A_IB x_B)
            apply_eigenvectors<ni, false, con>(V, v, [&](int i, Number y) { x[i * plane] = y; });
          } else {
            const Number* x_old = smem + buf2_offset(L, it.patch);
            apply_eigenvectors<ni, false, con>(V, v, [&](int i, Number y) {
              Number old;
              if constexpr (has_residual(kind) && in_regs)
                old = inner_reg[r][i];
              else
                old = x_old[line_out_address(lines, i, it.index) * es];
              x[i * plane] = old + p.omega * y;
            });
          }
        }
      });
      cur = 1 - cur;
      if (s == 2 * dim - 2) arch::async_wait<0>();  // the old x_I (buf2) is in before the last phase
      if (s < 2 * dim - 1) g.sync();
    }
  }
}

}  // namespace tcfem::multigrid::patch_kernels
