#pragma once
// cuda-core cg Laplacian on general geometry with the geometry computed at every quadrature point
// (nothing stored per point): the block programs, written once for the device and the host.
//
// The deformed box maps the Cartesian grid point X to x_d = X_d + eps_d prod_j sin(pi X_j), and
// the operator uses its isoparametric Q_k interpolant (GeometryField). Interpolating a product of
// 1D functions on a tensor-product node set gives the product of the 1D interpolants, so on the
// cell c the interpolated map is
//   x_d(xi) = h_d (c_d + xi_d) + eps_d prod_j s_j(xi_j),
// s_j the 1D Q_k interpolant of sin(pi X_j) over the cell's extent along j. Its Jacobian is a
// rank-one update of the diagonal H = diag(h):
//   J = H + eps g^T,  g_j = s_j'(xi_j) prod_{i != j} s_i(xi_i),
// hence (matrix determinant lemma, Sherman-Morrison), with b = H^{-1} g and beta = 1 + eps . b,
//   det J = det H beta,   J^{-1} = H^{-1} - H^{-1} eps b^T / beta,
// and the flux f = w det J J^{-1} J^{-T} u of a reference gradient u is f = H^{-1} g with
//   v = H^{-1} u,   t = v - b (eps . v) / beta,   g = w det H (beta t - eps (b . t)).
// H^{-1} is folded into the derivative rows (v comes out of the gradient contraction, and the
// transposed gradient takes g), so a point costs 3 products for b (the per-column products
// s_x s_y, s_x' s_y, s_x s_y' are formed once per thread), 33 FLOPs and one division in 3D.
// Per direction and cell index only s_j and s_j'/h_j at the quadrature points are needed (1D
// tables, a few KB). A Cartesian mesh is the case eps = 0.
//
// Work distribution: a block holds `cells` cells; each cell has q^(dim-1) threads, one per
// quadrature-point column in the last direction (z in 3D, y in 2D), whose values stay in registers.
// The other directions are contracted through shared memory (three q^dim buffers per cell). BP5
// (Gauss-Lobatto points, collocated): gather, gradient + flux, transposed gradient + scatter (two
// barriers). Otherwise the values are interpolated to the q = k+2 (or k+1 Gauss) points first and
// integrated back after (collocation derivative on the quadrature points, six barriers). Shared
// nodes of neighbouring cells are summed with atomicAdd into dst (zeroed first). Dirichlet rows
// (nodes on the faces of Params::dirichlet): the inputs read as 0, and every thread that gathers
// such a node writes dst_b = src_b (the same value from every cell), never an atomic.
#include <cstdint>
#include <type_traits>

#include "core/hd.h"
#include "fe/dirichlet_bits.h"

namespace tcfem::operators::cuda_core {

/// 1 when n is even (row strides are made odd so that rows of one table fall on distinct banks).
TCFEM_HD constexpr int odd_stride(int n) { return n % 2 == 0 ? n + 1 : n; }

/// Sizes of the general-geometry block program.
struct GeomLayout {
  int dim = 3, k = 1, q = 2;
  int cells = 1;         ///< cells per block
  int cell_threads = 1;  ///< q^(dim-1)
  int Q = 1;             ///< q^dim: elements of one buffer
  int buffers = 3;       ///< buffers per cell (2D geometry from nodes with a displacement: 4, 6 at BP3 points)
  int cell_stride = 3;   ///< elements per cell (the buffers, padded to an odd count; the kernels take
                         ///< the stride and the cells per block from GeomParams, see geom_tuned_layout)
  int threads = 1;
  int sB = 1, sBt = 1, sD = 1;  ///< row strides of the shared 1D tables B (q x n), B^T (n x q), D, D^T (q x q)
  TCFEM_HD constexpr int n() const { return k + 1; }
  TCFEM_HD constexpr int table_elements() const { return q * sB + n() * sBt + 2 * q * sD; }
  TCFEM_HD constexpr int smem_elements() const { return cells * cell_stride + table_elements(); }
};

TCFEM_HD constexpr GeomLayout geom_layout(int dim, int k, int q, int buffers = 3) {
  GeomLayout L;
  L.dim = dim;
  L.k = k;
  L.q = q;
  L.cell_threads = dim == 3 ? q * q : q;
  L.Q = dim == 3 ? q * q * q : q * q;
  L.buffers = buffers;
  L.cell_stride = odd_stride(buffers * L.Q);
  // about 256 threads per block, whole cells
  L.cells = 256 / L.cell_threads > 0 ? 256 / L.cell_threads : 1;
  L.threads = L.cells * L.cell_threads;
  L.sB = odd_stride(k + 1);
  L.sBt = odd_stride(q);
  L.sD = odd_stride(q);
  return L;
}

/// Element index of entry (x, y, z) of buffer `buf` (0..L.buffers - 1) of cell slot `cell` (2D: z = 0).
TCFEM_HD constexpr int geom_address(const GeomLayout& L, int cell, int buf, int x, int y, int z) {
  return cell * L.cell_stride + buf * L.Q + (z * L.q + y) * L.q + x;
}

/// Kernel parameters (passed as __grid_constant__: the uniform table entries are constant-bank
/// operands). B: q x n interpolation to the quadrature points; D: q x q collocation derivative on
/// them; Dc = D / h of the column direction (z in 3D, y in 2D); w: weights. Geometry:
/// s[d][c * q + i] = s_d at point i of cell index c along d, ds[d][c * q + i] = s_d'(xi_i) / h_d.
/// cells, cell_stride: cells per block and elements per cell slot of the launch (<= L.cells, >= 3 Q).
/// Cell `i` of a launch (of its region, or of the whole mesh): its multi-index c and its index in
/// the mesh (lexicographic, x fastest), which the stored data is indexed by.
template <int dim, class Params>
TCFEM_HD inline void region_cell(const Params& p, std::int64_t i, int* c, std::int64_t& cell) {
  const bool region = p.region_n[0] > 0;
  std::int64_t rest = i;
  for (int d = 0; d < dim; ++d) {
    const int extent = region ? p.region_n[d] : p.n_cells[d];
    c[d] = (region ? p.region_lo[d] : 0) + int(rest % extent);
    rest /= extent;
  }
  cell = 0;
  for (int d = dim - 1; d >= 0; --d) cell = cell * p.n_cells[d] + c[d];
}

/// The node field of the programs with the geometry from nodes (their `nodes` form, collocated
/// quadrature, unscaled tables as `stored`): x = I_1 x + d, with I_1 x the multilinear interpolant
/// of the cell's vertices (vertices[c * n_vertices + v], v lexicographic on the (n_cells +
/// 1)-lattice, double) and d the displacement disp[c * n_nodes + node] on the node lattice (null:
/// d = 0, multilinear cells); the coefficient at the nodes a_nodes[node] (null: 1), or, where the
/// points are not the nodes (BP3), at the points a_points[cell * q^dim + point] (points
/// lexicographic, x fastest; null: 1); xi the points on [0, 1].
template <int q, typename Number>
struct NodeFieldParams {
  const double* vertices = nullptr;
  std::int64_t n_vertices = 0;
  const Number* disp = nullptr;
  std::int64_t n_nodes = 0;
  const Number* a_nodes = nullptr;
  const Number* a_points = nullptr;
  Number xi[q] = {};
};

template <int dim, int k, int q, typename Number>
struct GeomParams : NodeFieldParams<q, Number> {
  static constexpr int n = k + 1;
  int n_cells[3] = {1, 1, 1};
  std::int64_t lattice[3] = {1, 1, 1};
  unsigned dirichlet = fe::all_dirichlet_bits;  ///< the constrained faces (fe/dirichlet_bits.h)
  std::int64_t total_cells = 0;  ///< cells of the launch: of the region, or of the mesh
  /// The cells [region_lo, region_lo + region_n) of a split apply (region_n[0] = 0: every cell).
  int region_lo[3] = {0, 0, 0};
  int region_n[3] = {0, 0, 0};
  Number inv_h[3] = {1, 1, 1};
  Number eps[3] = {0, 0, 0};
  Number hprod = 1;         ///< det H
  Number B[q][n] = {};
  Number D[q][q] = {};
  Number Dc[q][q] = {};
  Number w[q] = {};
  int cells = 1;
  int cell_stride = 3;
  const Number* s[3] = {};
  const Number* ds[3] = {};
  /// Stored geometry (the programs' `stored` form): coef[cell][sym][point] = a w |det J| J^{-1}
  /// J^{-T} (operators/geometry_data.h), points lexicographic; then inv_h = 1, Dc = D and the
  /// tables above are unused.
  const Number* coef = nullptr;
  /// Stored geometry rounded to fp32 for an fp64 program (its `Stored` = float): the same layout
  /// as coef, which is then unused.
  const float* coef_fp32 = nullptr;
  /// Geometry from nodes on cells of geometry order 2 (2D, k >= 3): the displacement d on the Q2
  /// lattice ((2 n_cells + 1) per direction), disp2[c * n_nodes2 + node2], read instead of disp (9
  /// values per cell and component instead of (k + 1)^2) and interpolated to the cell's nodes at
  /// the gather; phi2n[i][a] the quadratic Lagrange basis on {0, 1/2, 1} at the node a.
  const Number* disp2 = nullptr;
  std::int64_t n_nodes2 = 0;
  Number phi2n[3][n] = {};
};

/// b_j = s_j' / h_j prod_{i != j} s_i of one point from its 1D table values (s, ds = s'/h).
template <int dim, typename Number>
TCFEM_HD inline void deformed_b(const Number* s, const Number* ds, Number* b) {
  if constexpr (dim == 3) {
    b[0] = ds[0] * s[1] * s[2];
    b[1] = s[0] * ds[1] * s[2];
    b[2] = s[0] * s[1] * ds[2];
  } else {
    b[0] = ds[0] * s[1];
    b[1] = s[0] * ds[1];
  }
}

/// The scaled flux at one point, in place: v = H^{-1} u in, g = H f out, f = w det J J^{-1} J^{-T} u;
/// `whp` = w_q det H, b from deformed_b.
template <int dim, typename Number>
TCFEM_HD inline void deformed_flux(const Number* eps, Number whp, const Number* b, Number* v) {
  Number beta = 1, ev = 0;
  for (int d = 0; d < dim; ++d) {
    beta += eps[d] * b[d];
    ev += eps[d] * v[d];
  }
  const Number c = ev / beta;
  Number bt = 0;
  for (int d = 0; d < dim; ++d) {
    v[d] -= b[d] * c;
    bt += b[d] * v[d];
  }
  const Number g1 = whp * beta, g2 = whp * bt;
  for (int d = 0; d < dim; ++d) v[d] = g1 * v[d] - eps[d] * g2;
}

/// FLOPs per point of b (3D: from the per-column products) and deformed_flux as written (the
/// division counted as one).
TCFEM_HD constexpr int deformed_flux_flops(int dim) { return dim == 3 ? 3 + 6 + 5 + 1 + 6 + 5 + 2 + 9 : 2 + 4 + 3 + 1 + 4 + 3 + 2 + 6; }

/// The flux f = C u in place at point `pt` of a cell's stored data C ([sym][Q] with Q points per
/// cell; the symmetric entries row-wise upper triangle, operators/geometry_data.h: sym_index).
template <int dim, int Q, typename Stored, typename Number>
TCFEM_HD inline void stored_flux(const Stored* C, int pt, Number* u) {
  if constexpr (dim == 3) {
    const Number c00 = Number(load_streaming(C + pt)), c01 = Number(load_streaming(C + Q + pt));
    const Number c02 = Number(load_streaming(C + 2 * Q + pt)), c11 = Number(load_streaming(C + 3 * Q + pt));
    const Number c12 = Number(load_streaming(C + 4 * Q + pt)), c22 = Number(load_streaming(C + 5 * Q + pt));
    const Number f0 = c00 * u[0] + c01 * u[1] + c02 * u[2];
    const Number f1 = c01 * u[0] + c11 * u[1] + c12 * u[2];
    const Number f2 = c02 * u[0] + c12 * u[1] + c22 * u[2];
    u[0] = f0;
    u[1] = f1;
    u[2] = f2;
  } else {
    const Number c00 = Number(load_streaming(C + pt)), c01 = Number(load_streaming(C + Q + pt));
    const Number c11 = Number(load_streaming(C + 2 * Q + pt));
    const Number f0 = c00 * u[0] + c01 * u[1];
    const Number f1 = c01 * u[0] + c11 * u[1];
    u[0] = f0;
    u[1] = f1;
  }
}

/// The flux at a point from the Jacobian J[c][j] = d x_c / d xi_j (3D): u = weight det J J^{-1}
/// J^{-T} u, as (weight / det J) adj(J) (adj(J)^T u) with adj(J) = det J J^{-1}.
template <typename Number>
TCFEM_HD inline void node_flux(const Number (&J)[3][3], Number weight, Number* u) {
  Number A[3][3];
  A[0][0] = J[1][1] * J[2][2] - J[1][2] * J[2][1];
  A[0][1] = J[0][2] * J[2][1] - J[0][1] * J[2][2];
  A[0][2] = J[0][1] * J[1][2] - J[0][2] * J[1][1];
  A[1][0] = J[1][2] * J[2][0] - J[1][0] * J[2][2];
  A[1][1] = J[0][0] * J[2][2] - J[0][2] * J[2][0];
  A[1][2] = J[0][2] * J[1][0] - J[0][0] * J[1][2];
  A[2][0] = J[1][0] * J[2][1] - J[1][1] * J[2][0];
  A[2][1] = J[0][1] * J[2][0] - J[0][0] * J[2][1];
  A[2][2] = J[0][0] * J[1][1] - J[0][1] * J[1][0];
  const Number det = J[0][0] * A[0][0] + J[0][1] * A[1][0] + J[0][2] * A[2][0];
  const Number s = weight / det;
  Number t[3];
  for (int j = 0; j < 3; ++j) t[j] = A[0][j] * u[0] + A[1][j] * u[1] + A[2][j] * u[2];
  for (int i = 0; i < 3; ++i) u[i] = s * (A[i][0] * t[0] + A[i][1] * t[1] + A[i][2] * t[2]);
}

/// FLOPs per point of node_flux.
TCFEM_HD constexpr int node_flux_flops() { return 27 + 5 + 1 + 15 + 18; }

/// The flux at a point from the Jacobian J[c][j] = d x_c / d xi_j (2D): u = weight det J J^{-1}
/// J^{-T} u, as (weight / det J) adj(J) (adj(J)^T u).
template <typename Number>
TCFEM_HD inline void node_flux2(const Number (&J)[2][2], Number weight, Number* u) {
  const Number det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
  const Number s = weight / det;
  // adj(J) = [[J11, -J01], [-J10, J00]]
  const Number t0 = J[1][1] * u[0] - J[1][0] * u[1];
  const Number t1 = J[0][0] * u[1] - J[0][1] * u[0];
  u[0] = s * (J[1][1] * t0 - J[0][1] * t1);
  u[1] = s * (J[0][0] * t1 - J[1][0] * t0);
}

/// FLOPs per point of node_flux2.
TCFEM_HD constexpr int node_flux2_flops() { return 3 + 1 + 6 + 8; }

/// FLOPs per point of stored_flux.
TCFEM_HD constexpr int stored_flux_flops(int dim) { return dim == 3 ? 15 : 6; }

/// Per-thread state: the column of values in the last direction and its flux.
template <int q, typename Number>
struct GeomThread {
  int slot = 0, a = 0, b = 0;  ///< cell slot in the block, thread position within the cell's plane
  bool active = false;
  std::int64_t cell = 0;  ///< linear cell index
  int c[3] = {0, 0, 0};  ///< cell multi-index
  Number r[q];
  Number f[q];
};

/// The block program: phases separated by barriers (see the kernel / the host emulation for the
/// order). colloc: the quadrature points are the nodes (BP5), B is the identity and is skipped.
/// stored: the flux from the stored cell data p.coef (any geometry, partial assembly) instead of
/// the deformed box's 1D tables. dg (with stored): the cell term of the SIPG Laplacian on the dg
/// layout (each cell's (k+1)^dim values contiguous, no constrained nodes); the face terms are the
/// face program's (operators/cuda_core/geometry_faces.h). Stored (with stored): the type of the
/// stored data, Number or float (p.coef_fp32: an fp64 program reading its geometry rounded to fp32).
/// nodes (2D): the geometry recomputed from the node field (matrix-free): load also gathers the
/// displacement's components to buffers 2 and 3 (without `bilinear`), and the flux forms J at each
/// point from the cell's vertices (bilinear part) and the displacement's derivatives, with the
/// coefficient from the nodes (collocated) or the points. At points that are not the nodes (BP3)
/// interp2 also takes the displacement to the points, into buffers 4 and 5 (buffer 2 then holds
/// the flux). bilinear (with nodes): the cells are bilinear, J comes from the vertices alone.
template <int dim, int k, int q, bool colloc, typename Number, bool stored = false, bool dg = false,
          typename Stored = Number, bool nodes = false, bool bilinear = false>
struct GeomProgram {
  static constexpr int n = k + 1;
  static constexpr bool displacement = nodes && !bilinear;
  static constexpr GeomLayout L = geom_layout(dim, k, q, displacement ? (colloc ? 4 : 6) : 3);
  static constexpr int disp_buffer = colloc ? 2 : 4;  ///< the displacement at the points: buffers disp_buffer, + 1
  static_assert(!colloc || q == n, "collocated quadrature has k+1 points");
  static_assert(!dg || stored, "dg: stored geometry");
  static_assert(!nodes || (dim == 2 && !stored && !dg), "geometry from nodes: 2D, not stored");
  static_assert(nodes || !bilinear, "bilinear: a form of geometry from nodes");
  static_assert(std::is_same_v<Stored, Number> || (stored && std::is_same_v<Stored, float>),
                "stored data of another type: fp32, with stored geometry");
  using Params = GeomParams<dim, k, q, Number>;
  using Thread = GeomThread<q, Number>;

  /// Stored geometry: the cells' stored data in the type Stored.
  TCFEM_HD static const Stored* stored_data(const Params& p) {
    if constexpr (std::is_same_v<Stored, Number>)
      return p.coef;
    else
      return p.coef_fp32;
  }

  struct Tables {
    Number* cells;  // cell buffers
    Number* B;      // q x n, stride sB
    Number* Bt;     // n x q, stride sBt
    Number* D;      // q x q, stride sD
    Number* Dt;     // q x q, stride sD
    int stride;     // elements per cell slot
  };
  TCFEM_HD static Tables arrays(Number* smem, const Params& p) {
    Tables t;
    t.cells = smem;
    t.stride = p.cell_stride;
    t.B = smem + p.cells * p.cell_stride;
    t.Bt = t.B + q * L.sB;
    t.D = t.Bt + n * L.sBt;
    t.Dt = t.D + q * L.sD;
    return t;
  }

  /// Thread `tid` of block `block`: which cell and column.
  TCFEM_HD static void init(const Params& p, std::int64_t block, int tid, Thread& th) {
    th.slot = tid / L.cell_threads;
    const int r = tid % L.cell_threads;
    th.a = r % q;
    th.b = dim == 3 ? r / q : 0;
    const std::int64_t cell = block * p.cells + th.slot;
    th.active = cell < p.total_cells;
    region_cell<dim>(p, th.active ? cell : 0, th.c, th.cell);
  }

  /// Copies the 1D tables to shared memory (threads tid, tid + nthreads, ...).
  TCFEM_HD static void load_tables(const Params& p, const Tables& t, int tid, int nthreads) {
    for (int i = tid; i < q * n; i += nthreads) {
      const int r = i / n, c = i % n;
      t.B[r * L.sB + c] = p.B[r][c];
      t.Bt[c * L.sBt + r] = p.B[r][c];
    }
    for (int i = tid; i < q * q; i += nthreads) {
      const int r = i / q, c = i % q;
      t.D[r * L.sD + c] = p.D[r][c];
      t.Dt[c * L.sD + r] = p.D[r][c];
    }
  }

  /// Lattice index of node (x, y, z) of the thread's cell; sets `boundary`.
  TCFEM_HD static std::int64_t node(const Params& p, const Thread& th, int x, int y, int z, bool& boundary) {
    if constexpr (dg) {
      boundary = false;
      return th.cell * (dim == 3 ? n * n * n : n * n) + (dim == 3 ? (z * n + y) * n + x : y * n + x);
    }
    const std::int64_t px = std::int64_t(th.c[0]) * k + x, py = std::int64_t(th.c[1]) * k + y;
    boundary = fe::on_dirichlet_face(px, p.lattice[0], 0, p.dirichlet) ||
               fe::on_dirichlet_face(py, p.lattice[1], 1, p.dirichlet);
    std::int64_t idx = py * p.lattice[0] + px;
    if constexpr (dim == 3) {
      const std::int64_t pz = std::int64_t(th.c[2]) * k + z;
      boundary = boundary || fe::on_dirichlet_face(pz, p.lattice[2], 2, p.dirichlet);
      idx += pz * p.lattice[0] * p.lattice[1];
    }
    return idx;
  }

  TCFEM_HD static Number* buf(const Tables& t, const Thread& th, int b) {
    return t.cells + th.slot * t.stride + b * L.Q;
  }
  TCFEM_HD static int at(int x, int y, int z) { return (z * q + y) * q + x; }

  /// Gather: the cell's nodal values into buffer 0 (and the column into registers when collocated);
  /// Dirichlet nodes read as 0 and get dst_b = src_b.
  TCFEM_HD static void load(const Params& p, const Tables& t, Thread& th, const Number* src, Number* dst) {
    if (!th.active || th.a >= n || th.b >= n) return;
    Number* A = buf(t, th, 0);
    constexpr int nz = dim == 3 ? n : 1;
    const int y = dim == 3 ? th.b : 0;
    for (int z = 0; z < (dim == 3 ? nz : n); ++z) {
      const int yy = dim == 3 ? y : z, zz = dim == 3 ? z : 0;
      bool bd;
      const std::int64_t i = node(p, th, th.a, yy, zz, bd);
      const Number v = src[i];
      if (bd) dst[i] = v;
      const Number u = bd ? Number(0) : v;
      A[at(th.a, yy, zz)] = u;
      if constexpr (colloc) th.r[z] = u;
      if constexpr (displacement) {
        if constexpr (dim == 2) {
          if (p.disp2) {  // the Q2 lattice values of the cell interpolated to the node (a, yy)
            const std::int64_t lx = 2 * std::int64_t(p.n_cells[0]) + 1;
            const Number* d = p.disp2 + 2 * std::int64_t(th.c[1]) * lx + 2 * std::int64_t(th.c[0]);
            for (int comp = 0; comp < 2; ++comp) {
              Number v2 = 0;
              for (int j = 0; j < 3; ++j) {
                const Number* r = d + comp * p.n_nodes2 + j * lx;
                v2 += p.phi2n[j][yy] * (p.phi2n[0][th.a] * r[0] + p.phi2n[1][th.a] * r[1] + p.phi2n[2][th.a] * r[2]);
              }
              buf(t, th, 2 + comp)[at(th.a, yy, zz)] = v2;
            }
            continue;
          }
        }
        buf(t, th, 2)[at(th.a, yy, zz)] = p.disp[i];
        buf(t, th, 3)[at(th.a, yy, zz)] = p.disp[p.n_nodes + i];
      }
    }
  }

  // ---- 3D -------------------------------------------------------------------------------------

  /// x interpolation: buffer 1 (x: q, y: n, z: n) = B along x of buffer 0.
  TCFEM_HD static void interp_x(const Tables& t, const Thread& th) {
    if (!th.active || th.b >= n) return;
    Number row[n];
    for (int c = 0; c < n; ++c) row[c] = t.B[th.a * L.sB + c];
    const Number* A = buf(t, th, 0);
    Number* T = buf(t, th, 1);
    for (int z = 0; z < n; ++z) {
      Number s = 0;
      for (int c = 0; c < n; ++c) s += row[c] * A[at(c, th.b, z)];
      T[at(th.a, th.b, z)] = s;
    }
  }

  /// y interpolation (from buffer 1), z interpolation in registers; values at the points to
  /// buffer 0 and th.r.
  TCFEM_HD static void interp_yz(const Params& p, const Tables& t, Thread& th) {
    if (!th.active) return;
    Number row[n], col[n];
    for (int c = 0; c < n; ++c) row[c] = t.B[th.b * L.sB + c];
    const Number* T = buf(t, th, 1);
    for (int z = 0; z < n; ++z) {
      Number s = 0;
      for (int c = 0; c < n; ++c) s += row[c] * T[at(th.a, c, z)];
      col[z] = s;
    }
    Number* A = buf(t, th, 0);
    for (int z = 0; z < q; ++z) {
      Number s = 0;
      for (int c = 0; c < n; ++c) s += p.B[z][c] * col[c];
      th.r[z] = s;
      A[at(th.a, th.b, z)] = s;
    }
  }

  /// Reference gradient at the points (x, y from buffer 0, z from th.r), the flux; x and y
  /// components to buffers 1 and 2, z component to th.f.
  TCFEM_HD static void grad_flux3(const Params& p, const Tables& t, Thread& th) {
    if (!th.active) return;
    Number ra[q], rb[q];
    for (int c = 0; c < q; ++c) {
      ra[c] = t.D[th.a * L.sD + c] * p.inv_h[0];
      rb[c] = t.D[th.b * L.sD + c] * p.inv_h[1];
    }
    const Number* A = buf(t, th, 0);
    Number* FX = buf(t, th, 1);
    Number* FY = buf(t, th, 2);
    Number s01 = 0, d0s1 = 0, s0d1 = 0, wab = 0;
    if constexpr (!stored) {
      const Number s0 = p.s[0][th.c[0] * q + th.a], ds0 = p.ds[0][th.c[0] * q + th.a];
      const Number s1 = p.s[1][th.c[1] * q + th.b], ds1 = p.ds[1][th.c[1] * q + th.b];
      s01 = s0 * s1;
      d0s1 = ds0 * s1;
      s0d1 = s0 * ds1;
      wab = p.hprod * p.w[th.a] * p.w[th.b];
    }
    for (int z = 0; z < q; ++z) {
      Number u[3] = {0, 0, 0};
      for (int c = 0; c < q; ++c) {
        u[0] += ra[c] * A[at(c, th.b, z)];
        u[1] += rb[c] * A[at(th.a, c, z)];
        u[2] += p.Dc[z][c] * th.r[c];
      }
      if constexpr (stored) {
        stored_flux<3, L.Q>(stored_data(p) + th.cell * (6 * L.Q), at(th.a, th.b, z), u);
      } else {
        const Number s2 = p.s[2][th.c[2] * q + z], ds2 = p.ds[2][th.c[2] * q + z];
        const Number b[3] = {d0s1 * s2, s0d1 * s2, s01 * ds2};
        deformed_flux<3>(p.eps, wab * p.w[z], b, u);
      }
      FX[at(th.a, th.b, z)] = u[0];
      FY[at(th.a, th.b, z)] = u[1];
      th.f[z] = u[2];
    }
  }

  /// Transposed gradient: th.r = D_x^T FX + D_y^T FY + D_z^T f at the points. Collocated: these are
  /// the cell's results, scattered to dst; else integrated along z into buffer 0.
  TCFEM_HD static void grad_t3(const Params& p, const Tables& t, Thread& th, Number* dst) {
    if (!th.active) return;
    Number ca[q], cb[q];
    for (int c = 0; c < q; ++c) {
      ca[c] = t.Dt[th.a * L.sD + c] * p.inv_h[0];
      cb[c] = t.Dt[th.b * L.sD + c] * p.inv_h[1];
    }
    const Number* FX = buf(t, th, 1);
    const Number* FY = buf(t, th, 2);
    for (int z = 0; z < q; ++z) {
      Number v = 0;
      for (int c = 0; c < q; ++c) {
        v += ca[c] * FX[at(c, th.b, z)];
        v += cb[c] * FY[at(th.a, c, z)];
        v += p.Dc[c][z] * th.f[c];
      }
      th.r[z] = v;
    }
    if constexpr (colloc) {
      for (int z = 0; z < n; ++z) scatter(p, th, th.a, th.b, z, th.r[z], dst);
    } else {
      Number* A = buf(t, th, 0);
      for (int z = 0; z < n; ++z) {
        Number v = 0;
        for (int c = 0; c < q; ++c) v += p.B[c][z] * th.r[c];
        A[at(th.a, th.b, z)] = v;
      }
    }
  }

  /// y integration: buffer 1 (x: q, y: n, z: n) = B^T along y of buffer 0.
  TCFEM_HD static void integrate_y(const Tables& t, const Thread& th) {
    if (!th.active || th.b >= n) return;
    Number col[q];
    for (int c = 0; c < q; ++c) col[c] = t.Bt[th.b * L.sBt + c];
    const Number* A = buf(t, th, 0);
    Number* T = buf(t, th, 1);
    for (int z = 0; z < n; ++z) {
      Number v = 0;
      for (int c = 0; c < q; ++c) v += col[c] * A[at(th.a, c, z)];
      T[at(th.a, th.b, z)] = v;
    }
  }

  /// x integration from buffer 1 and scatter.
  TCFEM_HD static void integrate_x3(const Params& p, const Tables& t, const Thread& th, Number* dst) {
    if (!th.active || th.a >= n || th.b >= n) return;
    Number col[q];
    for (int c = 0; c < q; ++c) col[c] = t.Bt[th.a * L.sBt + c];
    const Number* T = buf(t, th, 1);
    for (int z = 0; z < n; ++z) {
      Number v = 0;
      for (int c = 0; c < q; ++c) v += col[c] * T[at(c, th.b, z)];
      scatter(p, th, th.a, th.b, z, v, dst);
    }
  }

  // ---- 2D (the column runs along y) -------------------------------------------------------------

  /// x and y interpolation (x through buffer 0, y in registers); values at the points to buffer 1
  /// and th.r.
  TCFEM_HD static void interp2(const Params& p, const Tables& t, Thread& th) {
    if (!th.active) return;
    Number row[n], col[n];
    for (int c = 0; c < n; ++c) row[c] = t.B[th.a * L.sB + c];
    const Number* A = buf(t, th, 0);
    for (int y = 0; y < n; ++y) {
      Number s = 0;
      for (int c = 0; c < n; ++c) s += row[c] * A[at(c, y, 0)];
      col[y] = s;
    }
    Number* U = buf(t, th, 1);
    for (int y = 0; y < q; ++y) {
      Number s = 0;
      for (int c = 0; c < n; ++c) s += p.B[y][c] * col[c];
      th.r[y] = s;
      U[at(th.a, y, 0)] = s;
    }
    if constexpr (displacement && !colloc) {
      // the displacement's components from the nodes (buffers 2, 3) to the points (4, 5)
      for (int comp = 0; comp < 2; ++comp) {
        const Number* X = buf(t, th, 2 + comp);
        for (int y = 0; y < n; ++y) {
          Number s = 0;
          for (int c = 0; c < n; ++c) s += row[c] * X[at(c, y, 0)];
          col[y] = s;
        }
        Number* P = buf(t, th, disp_buffer + comp);
        for (int y = 0; y < q; ++y) {
          Number s = 0;
          for (int c = 0; c < n; ++c) s += p.B[y][c] * col[c];
          P[at(th.a, y, 0)] = s;
        }
      }
    }
  }

  /// Gradient (x from buffer `in`, y from th.r) and flux; x component to buffer `out`, y to th.f.
  TCFEM_HD static void grad_flux2(const Params& p, const Tables& t, Thread& th, int in, int out) {
    if (!th.active) return;
    Number ra[q];
    for (int c = 0; c < q; ++c) ra[c] = t.D[th.a * L.sD + c] * p.inv_h[0];
    const Number* U = buf(t, th, in);
    Number* FX = buf(t, th, out);
    Number s0 = 0, ds0 = 0, wa = 0;
    if constexpr (!stored && !nodes) {
      s0 = p.s[0][th.c[0] * q + th.a];
      ds0 = p.ds[0][th.c[0] * q + th.a];
      wa = p.hprod * p.w[th.a];
    }
    // geometry from nodes: the cell's edge vectors (x edges at y = 0, 1; y edges at x = 0, 1)
    Number ex0[2] = {}, ex1[2] = {}, ey0[2] = {}, ey1[2] = {};
    if constexpr (nodes) {
      const std::int64_t vx = p.n_cells[0] + 1, v00 = std::int64_t(th.c[1]) * vx + th.c[0];
      for (int comp = 0; comp < 2; ++comp) {
        const double* V = p.vertices + comp * p.n_vertices;
        const double x00 = V[v00], x10 = V[v00 + 1], x01 = V[v00 + vx], x11 = V[v00 + vx + 1];
        ex0[comp] = Number(x10 - x00);
        ex1[comp] = Number(x11 - x01);
        ey0[comp] = Number(x01 - x00);
        ey1[comp] = Number(x11 - x10);
      }
      wa = p.w[th.a];
    }
    for (int y = 0; y < q; ++y) {
      Number u[2] = {0, 0};
      for (int c = 0; c < q; ++c) {
        u[0] += ra[c] * U[at(c, y, 0)];
        u[1] += p.Dc[y][c] * th.r[c];
      }
      if constexpr (nodes) {
        const Number xa = p.xi[th.a], xy = p.xi[y];
        Number J[2][2];
        for (int comp = 0; comp < 2; ++comp) {
          J[comp][0] = (1 - xy) * ex0[comp] + xy * ex1[comp];
          J[comp][1] = (1 - xa) * ey0[comp] + xa * ey1[comp];
        }
        if constexpr (displacement) {
          const Number* X = buf(t, th, disp_buffer);
          const Number* Y = buf(t, th, disp_buffer + 1);
          for (int c = 0; c < q; ++c) {
            J[0][0] += ra[c] * X[at(c, y, 0)];
            J[1][0] += ra[c] * Y[at(c, y, 0)];
            J[0][1] += p.Dc[y][c] * X[at(th.a, c, 0)];
            J[1][1] += p.Dc[y][c] * Y[at(th.a, c, 0)];
          }
        }
        Number weight = wa * p.w[y];
        if constexpr (colloc) {
          if (p.a_nodes) {
            bool bd;
            weight *= load_streaming(p.a_nodes + node(p, th, th.a, y, 0, bd));
          }
        } else {
          if (p.a_points) weight *= load_streaming(p.a_points + th.cell * (q * q) + y * q + th.a);
        }
        node_flux2(J, weight, u);
      } else if constexpr (stored) {
        stored_flux<2, L.Q>(stored_data(p) + th.cell * (3 * L.Q), at(th.a, y, 0), u);
      } else {
        const Number s1 = p.s[1][th.c[1] * q + y], ds1 = p.ds[1][th.c[1] * q + y];
        const Number b[2] = {ds0 * s1, s0 * ds1};
        deformed_flux<2>(p.eps, wa * p.w[y], b, u);
      }
      FX[at(th.a, y, 0)] = u[0];
      th.f[y] = u[1];
    }
  }

  /// Transposed gradient; collocated: scatter; else integrated along y into buffer 0.
  TCFEM_HD static void grad_t2(const Params& p, const Tables& t, Thread& th, int in, Number* dst) {
    if (!th.active) return;
    Number ca[q];
    for (int c = 0; c < q; ++c) ca[c] = t.Dt[th.a * L.sD + c] * p.inv_h[0];
    const Number* FX = buf(t, th, in);
    for (int y = 0; y < q; ++y) {
      Number v = 0;
      for (int c = 0; c < q; ++c) {
        v += ca[c] * FX[at(c, y, 0)];
        v += p.Dc[c][y] * th.f[c];
      }
      th.r[y] = v;
    }
    if constexpr (colloc) {
      for (int y = 0; y < n; ++y) scatter(p, th, th.a, y, 0, th.r[y], dst);
    } else {
      Number* A = buf(t, th, 0);
      for (int y = 0; y < n; ++y) {
        Number v = 0;
        for (int c = 0; c < q; ++c) v += p.B[c][y] * th.r[c];
        A[at(th.a, y, 0)] = v;
      }
    }
  }

  /// x integration from buffer 0 and scatter.
  TCFEM_HD static void integrate_x2(const Params& p, const Tables& t, const Thread& th, Number* dst) {
    if (!th.active || th.a >= n) return;
    Number col[q];
    for (int c = 0; c < q; ++c) col[c] = t.Bt[th.a * L.sBt + c];
    const Number* A = buf(t, th, 0);
    for (int y = 0; y < n; ++y) {
      Number v = 0;
      for (int c = 0; c < q; ++c) v += col[c] * A[at(c, y, 0)];
      scatter(p, th, th.a, y, 0, v, dst);
    }
  }

  /// dst += v at node (x, y, z) of the thread's cell, unless it is a Dirichlet node.
  TCFEM_HD static void scatter(const Params& p, const Thread& th, int x, int y, int z, Number v, Number* dst) {
    bool bd;
    const std::int64_t i = node(p, th, x, y, z, bd);
    if (!bd) atomic_add(dst + i, v);
  }
};

}  // namespace tcfem::operators::cuda_core
