#pragma once
// cuda-core cg Laplacian on general geometry, 3D BP5 (collocated Gauss-Lobatto quadrature), "lines"
// block program: the x and y contractions are done by one thread per 1D line of a cell instead of
// one thread per output point, written once for the device and the host.
//
// Geometry and flux as in operators/cuda_core/geometry.h (J = H + eps g^T, Sherman-Morrison, 1D tables).
// Work distribution: a block holds `cells` cells; each cell has q^2 threads (a, b). The collocated
// case (BP5) is described here; with q points != nodes (BP3: q = k + 2 Gauss) the values are first
// interpolated line by line (x lines, y lines, z in the column) and integrated back the same way in
// reverse order (B and B^T, centrosymmetric, in even-odd form), the x lines scattering. Per cell, four
// shared buffers of q^3 values (element (x, y, z) at z sp + y sx + x, buffer stride q sp, padded
// strides searched on the host against the bank model):
//   load:    thread (a, b) gathers the node column (a, b, 0..q-1) to buffer 0 and its registers
//   lines:   x line (y = a, z = b) of buffer 0 times Dx to buffer 1, y line (x = a, z = b) times Dy
//            to buffer 2
//   column:  thread (a, b): Dz of its column (registers), the flux at its q points from buffers 1,
//            2 (in place: x and y components back to buffers 1, 2), z component in registers, then
//            Dz^T of it (registers)
//   lines:   x line times Dx^T from buffer 1 to buffer 0, y line times Dy^T from buffer 2 to buffer 3
//   scatter: thread (a, b): column sum of the registers and buffers 0 and 3, atomicAdd into dst
// Every 1D product is a product of a line held in registers with a matrix whose entries are
// uniform over the block (constant-bank operands), in even-odd form: the collocation derivative on
// symmetric points is anti-centrosymmetric (D_{q-1-i,q-1-j} = -D_ij). Per point: 15 shared accesses
// (the point-per-thread program: 4 q + 3), 6 even-odd products of length q per q points.
#include <cstdint>
#include <type_traits>

#include "arch/async_copy.h"
#include "core/hd.h"
#include "operators/cuda_core/blocks.h"
#include "operators/cuda_core/geometry.h"

namespace tcfem::operators::cuda_core {

// ---- even-odd products of (anti-)centrosymmetric matrices ------------------------------------------

/// An r x c matrix M with M_{r-1-i,c-1-j} = sigma M_ij (sigma = +1 or -1) in even-odd form. With the
/// input split into u+_j = u_j + u_{c-1-j} (j < c/2, and the middle entry u_{c/2} when c is odd) and
/// u-_j = u_j - u_{c-1-j}, the output v = M u is v_i = e_i + o_i, v_{r-1-i} = e_i - o_i (i < r/2) and
/// v_{r/2} = e_{r/2} (r odd), where e = E x_e, o = O x_o and (x_e, x_o) = (u+, u-) for sigma = +1,
/// (u-, u+) for sigma = -1.
template <int r, int c, int sigma, typename Number>
struct EoMatrix {
  static constexpr int re = r - r / 2, ro = r / 2, ce = c - c / 2, co = c / 2;
  static constexpr int ein = sigma > 0 ? ce : co;  ///< columns of E
  static constexpr int oin = sigma > 0 ? co : ce;  ///< columns of O
  Number e[re * ein > 0 ? re * ein : 1];
  Number o[ro * oin > 0 ? ro * oin : 1];
};

/// The even-odd form of the row-major r x c matrix M (host; the symmetry is the caller's to check).
template <int r, int c, int sigma, typename Number>
EoMatrix<r, c, sigma, Number> make_eo_matrix(const double* M) {
  using E = EoMatrix<r, c, sigma, Number>;
  E A{};
  auto plus = [&](int i, int j) { return j < E::co ? 0.5 * (M[i * c + j] + M[i * c + c - 1 - j]) : M[i * c + j]; };
  auto minus = [&](int i, int j) { return 0.5 * (M[i * c + j] - M[i * c + c - 1 - j]); };
  for (int i = 0; i < E::re; ++i)
    for (int j = 0; j < E::ein; ++j) A.e[i * E::ein + j] = Number(sigma > 0 ? plus(i, j) : minus(i, j));
  for (int i = 0; i < E::ro; ++i)
    for (int j = 0; j < E::oin; ++j) A.o[i * E::oin + j] = Number(sigma > 0 ? minus(i, j) : plus(i, j));
  return A;
}

/// Largest |M_{r-1-i,c-1-j} - sigma M_ij| relative to max |M| (host).
inline double eo_symmetry_defect(const double* M, int r, int c, int sigma) {
  double worst = 0, scale = 0;
  for (int i = 0; i < r * c; ++i) scale = scale > (M[i] < 0 ? -M[i] : M[i]) ? scale : (M[i] < 0 ? -M[i] : M[i]);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) {
      double d = M[(r - 1 - i) * c + (c - 1 - j)] - sigma * M[i * c + j];
      d = d < 0 ? -d : d;
      worst = worst > d ? worst : d;
    }
  return scale > 0 ? worst / scale : 0.0;
}

/// v = M u (add = false) or v += M u, M in even-odd form; u and v are register arrays.
template <bool add, int r, int c, int sigma, typename Number>
TCFEM_HD inline void eo_apply(const EoMatrix<r, c, sigma, Number>& A, const Number (&u)[c], Number (&v)[r]) {
  using E = EoMatrix<r, c, sigma, Number>;
  // x_e, x_o: the even and odd inputs of E and O
  Number xe[E::ein > 0 ? E::ein : 1], xo[E::oin > 0 ? E::oin : 1];
  unroll<E::co>([&](auto j) {
    const Number plus = u[j] + u[c - 1 - j], minus = u[j] - u[c - 1 - j];
    if constexpr (sigma > 0) {
      xe[j] = plus;
      xo[j] = minus;
    } else {
      xe[j] = minus;
      xo[j] = plus;
    }
  });
  if constexpr (c % 2 == 1) {
    if constexpr (sigma > 0)
      xe[E::co] = u[E::co];
    else
      xo[E::co] = u[E::co];
  }
  unroll<E::ro>([&](auto i) {
    Number e = 0, o = 0;
    unroll<E::ein>([&](auto j) { e += A.e[i * E::ein + j] * xe[j]; });
    unroll<E::oin>([&](auto j) { o += A.o[i * E::oin + j] * xo[j]; });
    if constexpr (add) {
      v[i] += e + o;
      v[r - 1 - i] += e - o;
    } else {
      v[i] = e + o;
      v[r - 1 - i] = e - o;
    }
  });
  if constexpr (r % 2 == 1) {
    Number e = 0;
    unroll<E::ein>([&](auto j) { e += A.e[E::ro * E::ein + j] * xe[j]; });
    if constexpr (add)
      v[E::ro] += e;
    else
      v[E::ro] = e;
  }
}

/// FLOPs of one eo_apply (add = false): split, products, join.
constexpr double eo_apply_flops(int r, int c, int sigma) {
  const int re = r - r / 2, ro = r / 2, ce = c - c / 2, co = c / 2;
  const int ein = sigma > 0 ? ce : co, oin = sigma > 0 ? co : ce;
  return 2.0 * co + 2.0 * (re * ein + ro * oin) - double(re + ro) + 2.0 * ro;
}

// ---- layout --------------------------------------------------------------------------------------

/// Shared layout of the lines program: element (x, y, z) of buffer `buf` of cell slot `cell` at
/// cell * cell_stride + buf * sb + z * sp + y * sx + x.
struct GeomLinesLayout {
  int q = 2;
  int cells = 1;         ///< cells per block
  int cell_threads = 4;  ///< q^2
  int threads = 4;
  int sx = 2, sp = 4, sb = 8;
  int buffers = 4;  ///< buffers of q sp values per cell (10 for geometry from nodes with a displacement)
  int extra = 0;    ///< values after the buffers (36 for geometry from nodes: the cell's edge vectors)
  int cell_stride = 32;
  TCFEM_HD constexpr int min_cell_stride() const { return buffers * sb + extra; }
  TCFEM_HD constexpr int smem_elements() const { return cells * cell_stride; }
};

/// Resident blocks per SM that the shared memory and the thread count allow (H100/H200: 228 KB per
/// SM, 1 KB reserved per block, 2048 threads).
constexpr int geom_lines_blocks_per_sm(const GeomLinesLayout& L, int value_bytes) {
  const int by_smem = 233472 / (L.smem_elements() * value_bytes + 1024);
  const int by_threads = 2048 / L.threads;
  return by_smem < by_threads ? by_smem : by_threads;
}

/// The unpadded layout with about 256 threads per block; `nodes`: the buffers of the program with
/// geometry from nodes (`trilinear`: from the vertices only).
TCFEM_HD constexpr GeomLinesLayout geom_lines_layout(int q, bool nodes = false, bool trilinear = false) {
  GeomLinesLayout L;
  L.q = q;
  L.buffers = nodes && !trilinear ? 10 : 4;
  L.extra = nodes ? 36 : 0;
  L.cell_threads = q * q;
  L.cells = 256 / L.cell_threads > 0 ? 256 / L.cell_threads : 1;
  L.threads = L.cells * L.cell_threads;
  L.sx = q;
  L.sp = q * q;
  L.sb = q * q * q;
  L.cell_stride = L.min_cell_stride();
  return L;
}

/// The same strides with another cell count.
TCFEM_HD constexpr GeomLinesLayout geom_lines_with_cells(GeomLinesLayout L, int cells) {
  L.cells = cells;
  L.threads = cells * L.cell_threads;
  return L;
}

TCFEM_HD constexpr int geom_lines_address(const GeomLinesLayout& L, int cell, int buf, int x, int y, int z) {
  return cell * L.cell_stride + buf * L.sb + z * L.sp + y * L.sx + x;
}

// ---- parameters and program ------------------------------------------------------------------------

/// Kernel parameters (__grid_constant__: the matrix entries are constant-bank operands). Dd = D / h_d
/// and DdT = D^T / h_d in even-odd form (D: collocation derivative on the q quadrature points); B
/// (q x n) interpolation from the Gauss-Lobatto nodes to the points and Bt = B^T (unused when
/// collocated); s, ds: the 1D geometry tables of GeomParams.
template <int k, int q, typename Number>
struct GeomLinesParams : NodeFieldParams<q, Number> {
  static constexpr int n = k + 1;
  using Eo = EoMatrix<q, q, -1, Number>;
  int n_cells[3] = {1, 1, 1};
  std::int64_t lattice[3] = {1, 1, 1};
  unsigned dirichlet = fe::all_dirichlet_bits;  ///< the constrained faces (fe/dirichlet_bits.h)
  std::int64_t total_cells = 0;  ///< cells of the launch: of the region, or of the mesh
  /// The cells [region_lo, region_lo + region_n) of a split apply (region_n[0] = 0: every cell).
  int region_lo[3] = {0, 0, 0};
  int region_n[3] = {0, 0, 0};
  Number eps[3] = {0, 0, 0};
  Number hprod = 1;
  Number w[q] = {};
  Eo Dx{}, Dy{}, Dz{}, DxT{}, DyT{}, DzT{};
  EoMatrix<q, n, 1, Number> B{};
  EoMatrix<n, q, 1, Number> Bt{};
  GeomLinesLayout layout{};
  const Number* s[3] = {};
  const Number* ds[3] = {};
  /// Stored geometry (the program's `stored` form): coef[cell][sym][point] as GeomParams::coef;
  /// then the derivative tables are unscaled (h = 1) and s, ds unused.
  const Number* coef = nullptr;
  /// Stored geometry rounded to fp32 for an fp64 program (its `Stored` = float): the same layout
  /// as coef, which is then unused.
  const float* coef_fp32 = nullptr;
  /// Stored geometry: the block requests its cells' stored data into L2 before the gather
  /// (prefetch_stored), so that the flux, the phase that reads it, finds it there.
  bool prefetch = false;
  /// Geometry from nodes: the node field in the base NodeFieldParams (operators/cuda_core/geometry.h).
  /// Geometry from nodes on cells of geometry order 2 (a mesh whose cells are Q2 images of the
  /// unit cube, below the degree k): the displacement d given by its values on the Q2 lattice
  /// ((2 n_cells + 1) per direction, the vertices, edge and face midpoints and cell centres),
  /// disp2[c * n_nodes2 + node2], read instead of disp (27 values per cell instead of (k + 1)^3);
  /// phi2[i][z] the quadratic Lagrange basis on {0, 1/2, 1} at the points (operators/quadratic_nodes.h).
  const Number* disp2 = nullptr;
  std::int64_t n_nodes2 = 0;
  Number phi2[3][q] = {};
};

template <int q, typename Number>
struct GeomLinesThread {
  int slot = 0, a = 0, b = 0;
  bool active = false;
  std::int64_t cell = 0;  ///< linear cell index
  int c[3] = {0, 0, 0};
  Number r[q];  ///< the column's values at the points, later the column's results
  Number jz[3][q];  ///< geometry from nodes: d/dz of the displacement's components on the column
};

/// The block program. Collocated (BP5): load, lines(D), column_flux, lines(D^T), scatter. Otherwise
/// (q points, n = k + 1 nodes): load, interp_x, interp_y, interp_z, lines(D), column_flux, lines(D^T),
/// integrate_z, integrate_y, integrate_x (with the scatter). A barrier between each two phases.
/// stored: the flux from the stored cell data p.coef (any geometry, partial assembly).
/// nodes: the geometry recomputed from the node field (matrix-free): load also gathers the
/// displacement's columns to buffers 4..6 and the cell's edge vectors; with points that are not
/// the nodes (BP3) interp_x, interp_y, interp_z also take the displacement's lines from the n
/// nodes to the q points, in place (node_interp); lines also takes the x lines of the displacement
/// (times D to buffers 7..9) and its column's z derivative; then node_y_lines (y lines of buffers
/// 4..6, in place) before column_flux, which forms J from the trilinear part and these derivatives
/// at each point, and the coefficient from the nodes (BP5) or the points (BP3). trilinear (with
/// nodes): the cells are trilinear, J comes from the vertices alone (no displacement, no extra
/// buffers or lines).
/// dg (with stored): the cell term of the SIPG Laplacian on the dg layout (each cell's (k+1)^3
/// values contiguous, no constrained nodes); the face terms are the face program's
/// (operators/cuda_core/geometry_faces.h).
/// Stored (with stored): the type of the stored data, Number or float (p.coef_fp32: an fp64
/// program reading its geometry rounded to fp32, half the bytes; the arithmetic stays Number).
template <int k, int q, bool colloc, typename Number, bool stored = false, bool nodes = false, bool trilinear = false,
          bool dg = false, typename Stored = Number>
struct GeomLinesProgram {
  static constexpr int n = k + 1;
  static_assert(!colloc || q == n, "collocated quadrature has k+1 points");
  static_assert(!nodes || !stored, "geometry from nodes: not stored");
  static_assert(nodes || !trilinear, "trilinear: a form of geometry from nodes");
  static_assert(!dg || stored, "dg: stored geometry");
  static_assert(std::is_same_v<Stored, Number> || (stored && std::is_same_v<Stored, float>),
                "stored data of another type: fp32, with stored geometry");
  static constexpr bool displacement = nodes && !trilinear;
  using Params = GeomLinesParams<k, q, Number>;
  using Thread = GeomLinesThread<q, Number>;

  TCFEM_HD static void init(const Params& p, std::int64_t block, int tid, Thread& th) {
    const auto& L = p.layout;
    th.slot = tid / L.cell_threads;
    const int r = tid % L.cell_threads;
    th.a = r % q;
    th.b = r / q;
    const std::int64_t cell = block * L.cells + th.slot;
    th.active = cell < p.total_cells;
    region_cell<3>(p, th.active ? cell : 0, th.c, th.cell);
  }

  TCFEM_HD static Number* cell(const Params& p, Number* smem, const Thread& th) {
    return smem + th.slot * p.layout.cell_stride;
  }

  /// Stored geometry: the cells' stored data in the type Stored.
  TCFEM_HD static const Stored* stored_data(const Params& p) {
    if constexpr (std::is_same_v<Stored, Number>)
      return p.coef;
    else
      return p.coef_fp32;
  }

  /// Stored geometry: the 128-byte lines of the cell's 6 q^3 stored values requested into L2, spread
  /// over the cell's threads (and the line of the last byte, for a start inside a line).
  TCFEM_HD static void prefetch_stored(const Params& p, const Thread& th) {
    if constexpr (stored) {
      if (!th.active) return;
      constexpr int Q = q * q * q, bytes = 6 * Q * int(sizeof(Stored)), line = 128;
      const char* base = reinterpret_cast<const char*>(stored_data(p) + th.cell * (6 * Q));
      const int r = th.b * q + th.a;
      for (int off = r * line; off < bytes; off += q * q * line) arch::prefetch_l2(base + off);
      if (r == 0) arch::prefetch_l2(base + bytes - 1);
    }
  }

  /// Lattice index of node (x, y, z) of the thread's cell; sets `boundary`.
  TCFEM_HD static std::int64_t node(const Params& p, const Thread& th, int x, int y, int z, bool& boundary) {
    if constexpr (dg) {
      boundary = false;
      return th.cell * (n * n * n) + (z * n + y) * n + x;
    }
    const std::int64_t px = std::int64_t(th.c[0]) * k + x, py = std::int64_t(th.c[1]) * k + y,
                       pz = std::int64_t(th.c[2]) * k + z;
    boundary = fe::on_dirichlet_face(px, p.lattice[0], 0, p.dirichlet) ||
               fe::on_dirichlet_face(py, p.lattice[1], 1, p.dirichlet) ||
               fe::on_dirichlet_face(pz, p.lattice[2], 2, p.dirichlet);
    return (pz * p.lattice[1] + py) * p.lattice[0] + px;
  }

  /// Gather the node column (a, b) (a, b < n) to buffer 0 (and th.r when collocated); Dirichlet nodes
  /// read as 0 and get dst_b = src_b.
  TCFEM_HD static void load(const Params& p, Number* smem, Thread& th, const Number* src, Number* dst) {
    if (!th.active || th.a >= n || th.b >= n) return;
    const auto& L = p.layout;
    Number* U = cell(p, smem, th);
    unroll<n>([&](auto z) {
      bool bd;
      const std::int64_t i = node(p, th, th.a, th.b, z, bd);
      const Number v = src[i];
      if (bd) dst[i] = v;
      const Number u = bd ? Number(0) : v;
      U[z * L.sp + th.b * L.sx + th.a] = u;
      if constexpr (colloc) th.r[z] = u;
    });
  }

  /// Geometry from nodes: the column (a, b) of the displacement's components to buffers 4..6 (with
  /// a displacement), and the cell's 12 edge vectors E[(j * 4 + s) * 3 + c] = x_c at the vertex with
  /// coordinate j = 1 minus x_c at coordinate j = 0, the other two coordinates (in increasing
  /// direction order) s = o1 + 2 o2, in double and then rounded (threads 0..11 of the cell).
  TCFEM_HD static void load_nodes(const Params& p, Number* smem, const Thread& th) {
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    if constexpr (displacement) {
      if (p.disp2) {
        // the x interpolation of the cell's Q2 values, X[comp][l][j][a] = sum_i phi2_i(a) d(i, j, l), to
        // buffers 7..9 (free until node_lines); quadratic_nodes finishes the columns
        const std::int64_t lx = 2 * std::int64_t(p.n_cells[0]) + 1, ly = 2 * std::int64_t(p.n_cells[1]) + 1;
        Number* X = C + 7 * L.sb;
        for (int r = th.b * q + th.a; r < 27 * q; r += q * q) {
          const int a = r % q, lj = (r / q) % 9, comp = r / (9 * q);
          const int j = lj % 3, l = lj / 3;
          const Number* d = p.disp2 + comp * p.n_nodes2 +
                            ((2 * std::int64_t(th.c[2]) + l) * ly + 2 * std::int64_t(th.c[1]) + j) * lx +
                            2 * std::int64_t(th.c[0]);
          X[r] = p.phi2[0][a] * d[0] + p.phi2[1][a] * d[1] + p.phi2[2][a] * d[2];
        }
      } else if (th.a < n && th.b < n) {
        unroll<n>([&](auto z) {
          bool bd;
          const std::int64_t g = node(p, th, th.a, th.b, z, bd);
          unroll<3>(
              [&](auto c) { C[(4 + c) * L.sb + z * L.sp + th.b * L.sx + th.a] = p.disp[c * p.n_nodes + g]; });
        });
      }
    }
    for (int r = th.b * q + th.a; r < 12; r += q * q) {
      const int j = r / 4, s = r % 4;
      const int o1 = j == 0 ? 1 : 0, o2 = j == 2 ? 1 : 2;
      int v0[3], v1[3];
      v0[j] = 0;
      v1[j] = 1;
      v0[o1] = v1[o1] = s % 2;
      v0[o2] = v1[o2] = s / 2;
      const std::int64_t nx = p.n_cells[0] + 1, ny = p.n_cells[1] + 1;
      const std::int64_t i0 = (std::int64_t(th.c[2] + v0[2]) * ny + th.c[1] + v0[1]) * nx + th.c[0] + v0[0];
      const std::int64_t i1 = (std::int64_t(th.c[2] + v1[2]) * ny + th.c[1] + v1[1]) * nx + th.c[0] + v1[0];
      Number* E = C + L.buffers * L.sb;
      for (int c = 0; c < 3; ++c)
        E[r * 3 + c] = Number(p.vertices[c * p.n_vertices + i1] - p.vertices[c * p.n_vertices + i0]);
    }
  }

  /// Geometry from nodes on cells of geometry order 2 (p.disp2; a phase of its own after load_nodes):
  /// the column (a, b) of the displacement's components, interpolated in y and z from load_nodes' x
  /// interpolation, to buffers 4..6 (where load_nodes puts them from disp otherwise).
  TCFEM_HD static void quadratic_nodes(const Params& p, Number* smem, const Thread& th) {
    if constexpr (!displacement) return;
    if (!p.disp2 || !th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    const Number* X = C + 7 * L.sb;
    const Number pb[3] = {p.phi2[0][th.b], p.phi2[1][th.b], p.phi2[2][th.b]};
    unroll<3>([&](auto c) {
      Number t[3];
      for (int l = 0; l < 3; ++l) {
        const Number* x = X + (c * 9 + l * 3) * q + th.a;
        t[l] = pb[0] * x[0] + pb[1] * x[q] + pb[2] * x[2 * q];
      }
      unroll<q>([&](auto z) {
        C[(4 + c) * L.sb + z * L.sp + th.b * L.sx + th.a] =
            p.phi2[0][z] * t[0] + p.phi2[1][z] * t[1] + p.phi2[2][z] * t[2];
      });
    });
  }

  /// Geometry from nodes at points that are not the nodes (BP3), with interp_x, interp_y, interp_z
  /// (dir 0, 1, 2): the displacement's lines along dir in buffers 4..6 from the n nodes to the q
  /// points through B, in place (x lines: a, b < n; y lines: b < n; z columns: every thread).
  /// Nothing where the displacement is given at the points already (the Q2 lattice: disp2).
  template <int dir>
  TCFEM_HD static void node_interp(const Params& p, Number* smem, const Thread& th) {
    if constexpr (displacement && !colloc) {
      if (p.disp2 || !th.active || (dir == 0 && th.a >= n) || (dir < 2 && th.b >= n)) return;
      const auto& L = p.layout;
      Number* C = cell(p, smem, th);
      const int base = dir == 0 ? th.b * L.sp + th.a * L.sx : dir == 1 ? th.b * L.sp + th.a : th.b * L.sx + th.a;
      const int step = dir == 0 ? 1 : dir == 1 ? L.sx : L.sp;
      unroll<3>([&](auto c) {
        Number* X = C + (4 + c) * L.sb + base;
        Number u[n], v[q];
        unroll<n>([&](auto i) { u[i] = X[i * step]; });
        eo_apply<false>(p.B, u, v);
        unroll<q>([&](auto i) { X[i * step] = v[i]; });
      });
    }
  }

  /// Geometry from nodes, with lines(D): the x line (y = a, z = b) of buffers 4..6 times Dx to
  /// buffers 7..9, and the z derivative of the column (a, b) of buffers 4..6 to th.jz.
  TCFEM_HD static void node_lines(const Params& p, Number* smem, Thread& th) {
    if constexpr (!displacement) return;
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    unroll<3>([&](auto c) {
      {
        const int base = th.b * L.sp + th.a * L.sx;
        Number u[q], v[q];
        unroll<q>([&](auto i) { u[i] = C[(4 + c) * L.sb + base + i]; });
        eo_apply<false>(p.Dx, u, v);
        unroll<q>([&](auto i) { C[(7 + c) * L.sb + base + i] = v[i]; });
      }
      {
        const int base = th.b * L.sx + th.a;
        Number u[q];
        unroll<q>([&](auto z) { u[z] = C[(4 + c) * L.sb + z * L.sp + base]; });
        eo_apply<false>(p.Dz, u, th.jz[c]);
      }
    });
  }

  /// Geometry from nodes: the y line (x = a, z = b) of buffers 4..6 times Dy, in place.
  TCFEM_HD static void node_y_lines(const Params& p, Number* smem, const Thread& th) {
    if constexpr (!displacement) return;
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    const int base = th.b * L.sp + th.a;
    unroll<3>([&](auto c) {
      Number u[q], v[q];
      unroll<q>([&](auto i) { u[i] = C[(4 + c) * L.sb + base + i * L.sx]; });
      eo_apply<false>(p.Dy, u, v);
      unroll<q>([&](auto i) { C[(4 + c) * L.sb + base + i * L.sx] = v[i]; });
    });
  }

  /// x line (y = a, z = b; a, b < n) of buffer 0: B to buffer 1.
  TCFEM_HD static void interp_x(const Params& p, Number* smem, const Thread& th) {
    if (!th.active || th.a >= n || th.b >= n) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    const int base = th.b * L.sp + th.a * L.sx;
    Number u[n], v[q];
    unroll<n>([&](auto c) { u[c] = C[base + c]; });
    eo_apply<false>(p.B, u, v);
    unroll<q>([&](auto c) { C[L.sb + base + c] = v[c]; });
  }

  /// y line (x = a, z = b; a < q, b < n) of buffer 1: n_in values through the even-odd table
  /// `table` to n_out values of buffer 2 (B in interp_y, Bt in integrate_y).
  template <int n_in, int n_out, class Table>
  TCFEM_HD static void y_line(const Params& p, const Table& table, Number* smem, const Thread& th) {
    if (!th.active || th.b >= n) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    const int base = th.b * L.sp + th.a;
    Number u[n_in], v[n_out];
    unroll<n_in>([&](auto c) { u[c] = C[L.sb + base + c * L.sx]; });
    eo_apply<false>(table, u, v);
    unroll<n_out>([&](auto c) { C[2 * L.sb + base + c * L.sx] = v[c]; });
  }

  /// y line of buffer 1 (n nodes): B to buffer 2 (q points).
  TCFEM_HD static void interp_y(const Params& p, Number* smem, const Thread& th) { y_line<n, q>(p, p.B, smem, th); }

  /// Column (a, b) of buffer 2 (n values): B to th.r and buffer 0.
  TCFEM_HD static void interp_z(const Params& p, Number* smem, Thread& th) {
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    const int base = th.b * L.sx + th.a;
    Number u[n];
    unroll<n>([&](auto c) { u[c] = C[2 * L.sb + c * L.sp + base]; });
    eo_apply<false>(p.B, u, th.r);
    unroll<q>([&](auto z) { C[z * L.sp + base] = th.r[z]; });
  }

  /// The x line (y = a, z = b) and the y line (x = a, z = b): buffer `in_x` times Mx to buffer
  /// `out_x`, buffer `in_y` times My to buffer `out_y`.
  TCFEM_HD static void lines(const Params& p, Number* smem, const Thread& th, const typename Params::Eo& Mx,
                             const typename Params::Eo& My, int in_x, int out_x, int in_y, int out_y) {
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    {
      const int base = th.b * L.sp + th.a * L.sx;
      Number u[q], v[q];
      unroll<q>([&](auto c) { u[c] = C[in_x * L.sb + base + c]; });
      eo_apply<false>(Mx, u, v);
      unroll<q>([&](auto c) { C[out_x * L.sb + base + c] = v[c]; });
    }
    {
      const int base = th.b * L.sp + th.a;
      Number u[q], v[q];
      unroll<q>([&](auto c) { u[c] = C[in_y * L.sb + base + c * L.sx]; });
      eo_apply<false>(My, u, v);
      unroll<q>([&](auto c) { C[out_y * L.sb + base + c * L.sx] = v[c]; });
    }
  }

  /// Column (a, b): z derivative, flux (x, y components in place in buffers 1, 2), th.r = Dz^T f_z.
  TCFEM_HD static void column_flux(const Params& p, Number* smem, Thread& th) {
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    Number uz[q];
    eo_apply<false>(p.Dz, th.r, uz);
    const int base = th.b * L.sx + th.a;
    if constexpr (nodes) {
      // the trilinear part of J on the column: d/dx and d/dy linear in z, d/dz constant
      const Number* E = C + L.buffers * L.sb;
      const Number xa = p.xi[th.a], xb = p.xi[th.b];
      Number lo0[3], hi0[3], lo1[3], hi1[3], j2[3];
      for (int c = 0; c < 3; ++c) {
        lo0[c] = (1 - xb) * E[0 * 3 + c] + xb * E[1 * 3 + c];
        hi0[c] = (1 - xb) * E[2 * 3 + c] + xb * E[3 * 3 + c];
        lo1[c] = (1 - xa) * E[4 * 3 + c] + xa * E[5 * 3 + c];
        hi1[c] = (1 - xa) * E[6 * 3 + c] + xa * E[7 * 3 + c];
        j2[c] = (1 - xb) * ((1 - xa) * E[8 * 3 + c] + xa * E[9 * 3 + c]) +
                xb * ((1 - xa) * E[10 * 3 + c] + xa * E[11 * 3 + c]);
      }
      const Number wab = p.w[th.a] * p.w[th.b];
      unroll<q>([&](auto z) {
        const int i = z * L.sp + base;
        const Number xz = p.xi[z];
        Number J[3][3];  // J[c][j] = d x_c / d xi_j
        for (int c = 0; c < 3; ++c) {
          J[c][0] = (1 - xz) * lo0[c] + xz * hi0[c];
          J[c][1] = (1 - xz) * lo1[c] + xz * hi1[c];
          J[c][2] = j2[c];
        }
        if constexpr (displacement) {
          unroll<3>([&](auto c) {
            J[c][0] += C[(7 + c) * L.sb + i];
            J[c][1] += C[(4 + c) * L.sb + i];
            J[c][2] += th.jz[c][z];
          });
        }
        Number weight = wab * p.w[z];
        if constexpr (colloc) {
          if (p.a_nodes) {
            bool bd;
            weight *= load_streaming(p.a_nodes + node(p, th, th.a, th.b, z, bd));
          }
        } else {
          if (p.a_points) weight *= load_streaming(p.a_points + th.cell * (q * q * q) + (z * q + th.b) * q + th.a);
        }
        Number u[3] = {C[L.sb + i], C[2 * L.sb + i], uz[z]};
        node_flux(J, weight, u);
        C[L.sb + i] = u[0];
        C[2 * L.sb + i] = u[1];
        uz[z] = u[2];
      });
    } else if constexpr (stored) {
      constexpr int Q = q * q * q;
      const Stored* cell_coef = stored_data(p) + th.cell * (6 * Q) + th.b * q + th.a;
      unroll<q>([&](auto z) {
        const int i = z * L.sp + base;
        Number u[3] = {C[L.sb + i], C[2 * L.sb + i], uz[z]};
        stored_flux<3, Q>(cell_coef, z * q * q, u);
        C[L.sb + i] = u[0];
        C[2 * L.sb + i] = u[1];
        uz[z] = u[2];
      });
    } else {
      const Number s0 = p.s[0][th.c[0] * q + th.a], ds0 = p.ds[0][th.c[0] * q + th.a];
      const Number s1 = p.s[1][th.c[1] * q + th.b], ds1 = p.ds[1][th.c[1] * q + th.b];
      const Number s01 = s0 * s1, d0s1 = ds0 * s1, s0d1 = s0 * ds1;
      const Number wab = p.hprod * p.w[th.a] * p.w[th.b];
      unroll<q>([&](auto z) {
        const int i = z * L.sp + base;
        Number u[3] = {C[L.sb + i], C[2 * L.sb + i], uz[z]};
        const Number s2 = p.s[2][th.c[2] * q + z], ds2 = p.ds[2][th.c[2] * q + z];
        const Number bv[3] = {d0s1 * s2, s0d1 * s2, s01 * ds2};
        deformed_flux<3>(p.eps, wab * p.w[z], bv, u);
        C[L.sb + i] = u[0];
        C[2 * L.sb + i] = u[1];
        uz[z] = u[2];
      });
    }
    eo_apply<false>(p.DzT, uz, th.r);
  }

  /// Collocated: column (a, b): th.r + buffers 0 and 3, scattered (atomicAdd; Dirichlet rows left
  /// alone).
  TCFEM_HD static void scatter(const Params& p, Number* smem, const Thread& th, Number* dst) {
    if (!th.active) return;
    const auto& L = p.layout;
    const Number* C = cell(p, smem, th);
    const int base = th.b * L.sx + th.a;
    unroll<q>([&](auto z) {
      const int i = z * L.sp + base;
      const Number v = th.r[z] + C[i] + C[3 * L.sb + i];
      bool bd;
      const std::int64_t g = node(p, th, th.a, th.b, z, bd);
      if (!bd) atomic_add(dst + g, v);
    });
  }

  /// Column (a, b): th.r + buffers 0 and 3 at the points, Bt to n values in buffer 1.
  TCFEM_HD static void integrate_z(const Params& p, Number* smem, Thread& th) {
    if (!th.active) return;
    const auto& L = p.layout;
    Number* C = cell(p, smem, th);
    const int base = th.b * L.sx + th.a;
    unroll<q>([&](auto z) {
      const int i = z * L.sp + base;
      th.r[z] += C[i] + C[3 * L.sb + i];
    });
    Number v[n];
    eo_apply<false>(p.Bt, th.r, v);
    unroll<n>([&](auto c) { C[L.sb + c * L.sp + base] = v[c]; });
  }

  /// y line of buffer 1 (q values): Bt to buffer 2 (n nodes).
  TCFEM_HD static void integrate_y(const Params& p, Number* smem, const Thread& th) { y_line<q, n>(p, p.Bt, smem, th); }

  /// x line (y = a, z = b; a, b < n) of buffer 2 (q values): Bt, scattered (atomicAdd; Dirichlet
  /// rows left alone).
  TCFEM_HD static void integrate_x(const Params& p, Number* smem, const Thread& th, Number* dst) {
    if (!th.active || th.a >= n || th.b >= n) return;
    const auto& L = p.layout;
    const Number* C = cell(p, smem, th);
    const int base = th.b * L.sp + th.a * L.sx;
    Number u[q], v[n];
    unroll<q>([&](auto c) { u[c] = C[2 * L.sb + base + c]; });
    eo_apply<false>(p.Bt, u, v);
    unroll<n>([&](auto c) {
      bool bd;
      const std::int64_t g = node(p, th, c, th.a, th.b, bd);
      if (!bd) atomic_add(dst + g, v[c]);
    });
  }
};

/// Every warp-wide shared access pattern of the lines program for one block: f(name, addresses)
/// (element addresses in buffer 0, -1 for idle lanes; the other buffers are the same pattern shifted
/// by a multiple of sb). 'Z' column access (a, b, z), 'X' x line (c, a, b), 'Y' y line (a, c, b), each
/// for the thread masks (a < na, b < nb) the phases use: (q, q), and with n < q also (q, n), (n, n).
template <class F>
void for_each_geom_lines_access(const GeomLinesLayout& L, int n, F&& f) {
  const int q = L.q;
  const int masks[3][2] = {{q, q}, {q, n}, {n, n}};
  const int n_masks = n < q ? 3 : 1;
  int na = q, nb = q;
  for (int w = 0; w * 32 < L.threads; ++w) {
    auto pattern = [&](char name, auto&& address) {
      std::array<long, warp_lanes> addr;
      for (int l = 0; l < warp_lanes; ++l) {
        const int t = w * 32 + l;
        if (t >= L.threads) {
          addr[l] = -1;
          continue;
        }
        const int slot = t / L.cell_threads, r = t % L.cell_threads, a = r % q, b = r / q;
        addr[l] = a < na && b < nb ? address(slot, a, b) : -1;
      }
      f(name, addr);
    };
    for (int m = 0; m < n_masks; ++m) {
      na = masks[m][0];
      nb = masks[m][1];
      for (int c = 0; c < q; ++c) {
        pattern('Z', [&](int s, int a, int b) { return long(geom_lines_address(L, s, 0, a, b, c)); });
        pattern('X', [&](int s, int a, int b) { return long(geom_lines_address(L, s, 0, c, a, b)); });
        pattern('Y', [&](int s, int a, int b) { return long(geom_lines_address(L, s, 0, a, c, b)); });
      }
    }
  }
}

}  // namespace tcfem::operators::cuda_core
