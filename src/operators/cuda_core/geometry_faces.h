#pragma once
// cuda-core SIPG face terms of the dg Laplacian on general geometry with stored face data (partial
// assembly), the faces block program, written once for the device and the host. With the cell
// terms of the stored-geometry cell programs on the dg layout (GeomProgram / GeomLinesProgram with
// dg), it is the cuda-core dg operator on any map, mesh or coefficient.
//
// The stored data per face of direction d are those of the generic kernel
// (operators/generic/kernels.h, face_apply; operators/geometry_data.h, FaceGeometry): jxw[face][p]
// (the surface element times the weight), a_minus / a_plus[face][e][p] (a J^{-1} n of the two
// cells, per reference direction e), penalty[face]; the arithmetic at a point is face_apply's.
//
// Work distribution (the "rows" program): the faces of direction d lie on rows of cells along d
// (n_d cells, n_d + 1 faces); a row is cut into segments of `segment` faces, and a group of
// q^(dim-1) threads walks one segment face after face, thread (a, b) owning the node line along d
// at (a, b) (a, b < n) and the face point (a, b) along the tangential directions e1 < e2. Per face
// j (between cells j - 1 and j):
//   trace:     thread (a, b) reads the line of cell j and forms its traces at both ends (value and
//              d-derivative, the 1D end values and derivatives); the lower end's and the upper end
//              of cell j - 1 (kept in registers from the face before) go to shared buffers
//   interp:    (BP3) B along e1, then along e2
//   flux:      each thread takes the two cells' values and reference gradients at its point (the
//              tangential derivatives by D on the points), forms the flux and writes the
//              tangential tests to shared buffers
//   test:      D^T of the tangential tests plus the value test, per cell; (BP3) B^T along e2, e1
//   lines:     thread (a, b) (a, b < n) adds the end values / derivatives times the tests to the
//              node lines: cell j - 1's line is complete (its lower face was the face before) and is
//              added to dst (atomicAdd), cell j's starts
// A barrier after each phase (3 per face at BP5; at BP3 7 in 3D, 5 in 2D). Each cell's values are
// read once per direction and its results added once per direction (plus one cell per segment end).
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/hd.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "operators/cuda_core/blocks.h"

namespace tcfem::operators::cuda_core {

/// Kernel parameters of the faces program (one direction d per launch). B (q x n): interpolation
/// from the Gauss-Lobatto nodes to the points; D (q x q): the collocation derivative on the points;
/// ev / ed [end][n]: the basis values and derivatives at the left (0) and right (1) end of the cell.
template <int dim, int k, int q, typename Number>
struct DgFaceParams {
  static constexpr int n = k + 1;
  int n_cells[3] = {1, 1, 1};
  int d = 0;                  ///< the faces' direction
  int ext[3] = {1, 1, 1};     ///< face positions per direction (n_cells, and n_cells + 1 along d)
  std::int64_t n_faces = 0;   ///< faces of direction d: the product of ext
  std::int64_t rows = 0;      ///< rows of cells along d
  int segment = 8;            ///< faces per segment of a row
  int segments = 1;           ///< segments per row
  std::int64_t items = 0;     ///< rows x segments
  int groups = 1;             ///< items (thread groups) per block
  Number B[q][n] = {};
  Number D[q][q] = {};
  Number ev[2][n] = {};
  Number ed[2][n] = {};
  const Number* jxw = nullptr;
  const Number* am = nullptr;
  const Number* ap = nullptr;
  const Number* pen = nullptr;
};

/// Threads per group and the block's shape.
template <int dim, int q>
struct DgFaceShape {
  static constexpr int group_threads = dim == 3 ? q * q : q;
  static constexpr int nf = group_threads;  ///< points per face
  static constexpr int buffer = nf;         ///< values per shared buffer
  static constexpr int group_elements = 12 * buffer;
  /// Groups per block: about 128 threads.
  static constexpr int groups_per_block = 128 / group_threads > 0 ? 128 / group_threads : 1;
  static constexpr int threads = groups_per_block * group_threads;
};

template <int dim, int n, typename Number>
struct DgFaceThread {
  int slot = 0, a = 0, b = 0;
  bool active = false;
  int e1 = 0, e2 = 0;     ///< the tangential directions
  int c1 = 0, c2 = 0;     ///< the row's cell indices along e1, e2
  int j0 = 0, j1 = 0;     ///< the segment's faces [j0, j1)
  int j = 0;              ///< the current face
  Number hv = 0, hg = 0;  ///< the upper-end trace (value, d-derivative) of cell j - 1 at node (a, b)
  Number acc[n] = {};     ///< the line (a, b) of cell j - 1: the results so far
  Number val[2] = {0, 0};  ///< per side: the value at the point, later its test
  Number grad[2][3] = {};  ///< per side: the reference gradient, later its test
  Number vt[2] = {0, 0}, gt[2] = {0, 0};  ///< per side: the value and d-derivative tests at node (a, b)
};

template <int dim, int k, int q, typename Number>
struct DgFaceProgram {
  static constexpr int n = k + 1;
  static constexpr bool colloc = q == n;
  using Shape = DgFaceShape<dim, q>;
  using Params = DgFaceParams<dim, k, q, Number>;
  using Thread = DgFaceThread<dim, n, Number>;
  static constexpr int nf = Shape::nf, nb = Shape::buffer;
  // buffers of a group: 0..3 the traces (sides 0, 1: value, d-derivative), 4..7 the BP3
  // interpolation's intermediate, 8..11 the tangential tests (sides 0, 1: e1, e2)

  TCFEM_HD static void init(const Params& p, std::int64_t block, int tid, Thread& th) {
    th.slot = tid / Shape::group_threads;
    const int r = tid % Shape::group_threads;
    th.a = r % q;
    th.b = dim == 3 ? r / q : 0;
    const std::int64_t item = block * p.groups + th.slot;
    th.active = th.slot < p.groups && item < p.items;
    const int d = p.d;
    th.e1 = d == 0 ? 1 : 0;
    th.e2 = d == 2 ? 1 : 2;
    const std::int64_t it = th.active ? item : 0;
    const std::int64_t row = it % p.rows;
    const int seg = int(it / p.rows);
    th.c1 = int(row % p.n_cells[th.e1]);
    th.c2 = dim == 3 ? int(row / p.n_cells[th.e1]) : 0;
    th.j0 = seg * p.segment;
    th.j1 = th.j0 + p.segment < p.ext[d] ? th.j0 + p.segment : p.ext[d];
    th.j = th.j0;
  }

  TCFEM_HD static Number* buffer(Number* smem, const Thread& th, int i) {
    return smem + th.slot * Shape::group_elements + i * nb;
  }
  TCFEM_HD static int at(int a, int b) { return b * q + a; }
  TCFEM_HD static bool node_thread(const Thread& th) { return th.a < n && th.b < (dim == 3 ? n : 1); }

  /// Lexicographic index of position j along d of the thread's row on a lattice of `extent`
  /// positions per direction (p.n_cells: cell j; p.ext: face j).
  TCFEM_HD static std::int64_t row_index(const Params& p, const Thread& th, int j, const int* extent) {
    int c[3] = {0, 0, 0};
    c[p.d] = j;
    c[th.e1] = th.c1;
    if constexpr (dim == 3) c[th.e2] = th.c2;
    std::int64_t index = 0;
    for (int e = dim - 1; e >= 0; --e) index = index * extent[e] + c[e];
    return index;
  }
  TCFEM_HD static std::int64_t cell_index(const Params& p, const Thread& th, int j) {
    return row_index(p, th, j, p.n_cells);
  }
  /// Index of node i along d of the thread's node line (a, b) of cell `cell`.
  TCFEM_HD static std::int64_t line_node(const Params& p, const Thread& th, std::int64_t cell, int i) {
    int c[3] = {0, 0, 0};
    c[p.d] = i;
    c[th.e1] = th.a;
    if constexpr (dim == 3) c[th.e2] = th.b;
    const int local = dim == 3 ? (c[2] * n + c[1]) * n + c[0] : c[1] * n + c[0];
    return cell * (dim == 3 ? n * n * n : n * n) + local;
  }

  /// Reads line (a, b) of cell j and forms its traces at the lower (0) and upper (1) end.
  TCFEM_HD static void line_traces(const Params& p, const Thread& th, int j, const Number* src, Number (&v)[2],
                                   Number (&g)[2]) {
    const std::int64_t cell = cell_index(p, th, j);
    v[0] = v[1] = g[0] = g[1] = 0;
    unroll<n>([&](auto i) {
      const Number u = src[line_node(p, th, cell, i)];
      v[0] += p.ev[0][i] * u;
      g[0] += p.ed[0][i] * u;
      v[1] += p.ev[1][i] * u;
      g[1] += p.ed[1][i] * u;
    });
  }

  /// start: the upper-end trace of the cell below the segment's first face.
  TCFEM_HD static void start(const Params& p, Thread& th, const Number* src) {
    for (int i = 0; i < n; ++i) th.acc[i] = 0;
    if (!th.active || th.j0 == 0 || !node_thread(th)) return;
    Number v[2], g[2];
    line_traces(p, th, th.j0 - 1, src, v, g);
    th.hv = v[1];
    th.hg = g[1];
  }

  TCFEM_HD static bool has(const Params& p, const Thread& th, int s) {
    return th.active && th.j < th.j1 && (s == 0 ? th.j > 0 : th.j < p.n_cells[p.d]);
  }
  TCFEM_HD static bool face_active(const Thread& th) { return th.active && th.j < th.j1; }

  /// trace: the two cells' traces at face j to buffers 0..3 (nodes a, b < n).
  TCFEM_HD static void trace(const Params& p, Number* smem, Thread& th, const Number* src) {
    if (!face_active(th) || !node_thread(th)) return;
    const int pt = at(th.a, th.b);
    buffer(smem, th, 0)[pt] = th.hv;
    buffer(smem, th, 1)[pt] = th.hg;
    if (th.j < p.n_cells[p.d]) {
      Number v[2], g[2];
      line_traces(p, th, th.j, src, v, g);
      buffer(smem, th, 2)[pt] = v[0];
      buffer(smem, th, 3)[pt] = g[0];
      th.hv = v[1];
      th.hg = g[1];
    }
  }

  /// interp along e1 (BP3): buffers 0..3 (n x n) to 4..7 (q along e1).
  TCFEM_HD static void interp_e1(const Params& p, Number* smem, const Thread& th) {
    if constexpr (!colloc) {
      if (!face_active(th) || th.b >= (dim == 3 ? n : 1)) return;
      for (int i = 0; i < 4; ++i) {
        if (!has(p, th, i / 2)) continue;
        const Number* in = buffer(smem, th, i);
        Number v = 0;
        unroll<n>([&](auto c) { v += p.B[th.a][c] * in[at(c, th.b)]; });
        buffer(smem, th, 4 + i)[at(th.a, th.b)] = v;
      }
    }
  }

  /// interp along e2 (BP3, 3D): buffers 4..7 to 0..3 (q x q).
  TCFEM_HD static void interp_e2(const Params& p, Number* smem, const Thread& th) {
    if constexpr (!colloc && dim == 3) {
      if (!face_active(th)) return;
      for (int i = 0; i < 4; ++i) {
        if (!has(p, th, i / 2)) continue;
        const Number* in = buffer(smem, th, 4 + i);
        Number v = 0;
        unroll<n>([&](auto c) { v += p.B[th.b][c] * in[at(th.a, c)]; });
        buffer(smem, th, i)[at(th.a, th.b)] = v;
      }
    }
  }

  /// The buffers holding the traces at the points: 0..3, or 4..7 in 2D at BP3.
  static constexpr int point_buffer = !colloc && dim == 2 ? 4 : 0;

  /// flux: values and reference gradients at the point, the SIPG flux (the generic kernel's
  /// arithmetic), the tangential tests to buffers 8..11.
  TCFEM_HD static void flux(const Params& p, Number* smem, Thread& th) {
    if (!face_active(th)) return;
    const int d = p.d;
    const int pt = at(th.a, th.b);
    for (int s = 0; s < 2; ++s) {
      if (!has(p, th, s)) continue;
      const Number* V = buffer(smem, th, point_buffer + 2 * s);
      th.val[s] = V[pt];
      th.grad[s][d] = buffer(smem, th, point_buffer + 2 * s + 1)[pt];
      Number g1 = 0;
      unroll<q>([&](auto c) { g1 += p.D[th.a][c] * V[at(c, th.b)]; });
      th.grad[s][th.e1] = g1;
      if constexpr (dim == 3) {
        Number g2 = 0;
        unroll<q>([&](auto c) { g2 += p.D[th.b][c] * V[at(th.a, c)]; });
        th.grad[s][th.e2] = g2;
      }
    }
    const std::int64_t face = row_index(p, th, th.j, p.ext);
    const Number jxw = p.jxw[face * nf + pt];
    const Number gamma = p.pen[face];
    const Number* am = p.am + face * (dim * nf) + pt;
    const Number* ap = p.ap + face * (dim * nf) + pt;
    const bool h0 = has(p, th, 0), h1 = has(p, th, 1);
    if (h0 && h1) {
      const Number jump = th.val[0] - th.val[1];
      Number dn_m = 0, dn_p = 0;
      for (int e = 0; e < dim; ++e) {
        dn_m += th.grad[0][e] * am[e * nf];
        dn_p += th.grad[1][e] * ap[e * nf];
      }
      const Number rv = (gamma * jump - Number(0.5) * (dn_m + dn_p)) * jxw;
      const Number rg = Number(-0.5) * jump * jxw;
      th.val[0] = rv;
      th.val[1] = -rv;
      for (int e = 0; e < dim; ++e) {
        th.grad[0][e] = rg * am[e * nf];
        th.grad[1][e] = rg * ap[e * nf];
      }
    } else {
      const int s = h0 ? 0 : 1;
      const Number u = th.val[s];
      Number dn = 0;
      for (int e = 0; e < dim; ++e) dn += th.grad[s][e] * am[e * nf];
      th.val[s] = (gamma * u - dn) * jxw;
      for (int e = 0; e < dim; ++e) th.grad[s][e] = -u * jxw * am[e * nf];
    }
    for (int s = 0; s < 2; ++s) {
      if (!has(p, th, s)) continue;
      buffer(smem, th, 8 + 2 * s)[pt] = th.grad[s][th.e1];
      if constexpr (dim == 3) buffer(smem, th, 9 + 2 * s)[pt] = th.grad[s][th.e2];
    }
  }

  /// Adds the tests of face j at node (a, b) to the lines: cell j - 1's is complete and goes to
  /// dst, cell j's starts (and goes to dst at the segment's last face).
  TCFEM_HD static void lines(const Params& p, Thread& th, Number* dst) {
    if (!face_active(th) || !node_thread(th)) return;
    if (has(p, th, 0)) {
      const std::int64_t cell = cell_index(p, th, th.j - 1);
      unroll<n>([&](auto i) {
        atomic_add(dst + line_node(p, th, cell, i), th.acc[i] + p.ev[1][i] * th.vt[0] + p.ed[1][i] * th.gt[0]);
      });
    }
    if (has(p, th, 1)) {
      unroll<n>([&](auto i) { th.acc[i] = p.ev[0][i] * th.vt[1] + p.ed[0][i] * th.gt[1]; });
      if (th.j + 1 == th.j1) {
        const std::int64_t cell = cell_index(p, th, th.j);
        unroll<n>([&](auto i) { atomic_add(dst + line_node(p, th, cell, i), th.acc[i]); });
      }
    }
  }

  /// test: value test plus D^T of the tangential tests at the point, per side; collocated: the
  /// node's tests and the lines; else to buffers 4..7 (sides 0, 1: value, d-derivative test).
  TCFEM_HD static void test(const Params& p, Number* smem, Thread& th, Number* dst) {
    if (!face_active(th)) return;
    const int pt = at(th.a, th.b);
    for (int s = 0; s < 2; ++s) {
      if (!has(p, th, s)) continue;
      const Number* T1 = buffer(smem, th, 8 + 2 * s);
      Number v = th.val[s];
      unroll<q>([&](auto c) { v += p.D[c][th.a] * T1[at(c, th.b)]; });
      if constexpr (dim == 3) {
        const Number* T2 = buffer(smem, th, 9 + 2 * s);
        unroll<q>([&](auto c) { v += p.D[c][th.b] * T2[at(th.a, c)]; });
      }
      if constexpr (colloc) {
        th.vt[s] = v;
        th.gt[s] = th.grad[s][p.d];
      } else {
        buffer(smem, th, 4 + 2 * s)[pt] = v;
        buffer(smem, th, 5 + 2 * s)[pt] = th.grad[s][p.d];
      }
    }
    if constexpr (colloc) lines(p, th, dst);
  }

  /// integrate along e2 (BP3, 3D): buffers 4..7 (q x q) to 0..3 (n along e2).
  TCFEM_HD static void integrate_e2(const Params& p, Number* smem, const Thread& th) {
    if constexpr (!colloc && dim == 3) {
      if (!face_active(th) || th.b >= n) return;
      for (int i = 0; i < 4; ++i) {
        if (!has(p, th, i / 2)) continue;
        const Number* in = buffer(smem, th, 4 + i);
        Number v = 0;
        unroll<q>([&](auto c) { v += p.B[c][th.b] * in[at(th.a, c)]; });
        buffer(smem, th, i)[at(th.a, th.b)] = v;
      }
    }
  }

  /// integrate along e1 (BP3): from buffers 0..3 (3D) or 4..7 (2D) to the node's tests; the lines.
  TCFEM_HD static void integrate_e1(const Params& p, Number* smem, Thread& th, Number* dst) {
    if constexpr (!colloc) {
      if (!face_active(th) || !node_thread(th)) return;
      constexpr int base = dim == 3 ? 0 : 4;
      for (int s = 0; s < 2; ++s) {
        if (!has(p, th, s)) continue;
        const Number* V = buffer(smem, th, base + 2 * s);
        const Number* G = buffer(smem, th, base + 2 * s + 1);
        Number v = 0, g = 0;
        unroll<q>([&](auto c) {
          v += p.B[c][th.a] * V[at(c, th.b)];
          g += p.B[c][th.a] * G[at(c, th.b)];
        });
        th.vt[s] = v;
        th.gt[s] = g;
      }
      lines(p, th, dst);
    }
  }

  /// The program's phases in order for one block: phase(f) runs f(thread) for every thread, with
  /// a barrier after it (the kernel) or one thread after another (the host emulation). Every
  /// group walks p.segment faces (idle past its segment's end).
  template <class Phase>
  TCFEM_HD static void run(const Params& p, Number* smem, Phase&& phase, const Number* src, Number* dst) {
    phase([&](Thread& th) { start(p, th, src); });
    for (int t = 0; t < p.segment; ++t) {
      phase([&](Thread& th) {
        th.j = th.j0 + t;
        trace(p, smem, th, src);
      });
      if constexpr (!colloc) {
        phase([&](Thread& th) { interp_e1(p, smem, th); });
        if constexpr (dim == 3) phase([&](Thread& th) { interp_e2(p, smem, th); });
      }
      phase([&](Thread& th) { flux(p, smem, th); });
      phase([&](Thread& th) { test(p, smem, th, dst); });
      if constexpr (!colloc) {
        if constexpr (dim == 3) phase([&](Thread& th) { integrate_e2(p, smem, th); });
        phase([&](Thread& th) { integrate_e1(p, smem, th, dst); });
      }
    }
  }
};

/// FLOPs per face of the faces program (both sides, interior face).
constexpr double dg_face_flops(int dim, int k, int q) {
  const int n = k + 1;
  const double nf = dim == 3 ? double(q) * q : q;
  const double nn = dim == 3 ? double(n) * n : n;
  double f = 0;
  // per side: trace, interpolation, tangential derivatives; then test, D^T, integration, expansion
  f += 2 * (4.0 * n * nn);
  if (q != n) f += 2 * 2 * (2.0 * n * (dim == 3 ? q * n + nf : nf)) * 2;
  f += 2 * (2.0 * q * nf * (dim - 1)) * 2;
  f += 2 * (4.0 * n * nn);
  f += nf * (8.0 * dim + 10);
  return f;
}

/// The parameters of the faces of direction d of `mesh` (the data pointers unset; `segment` faces
/// per segment of a row, 0: 8; `groups` thread groups per block, 0: the shape's count).
template <int dim, int k, int q, typename Number>
DgFaceParams<dim, k, q, Number> make_dg_face_params(const mesh::BoxMesh<dim>& mesh, fe::QuadratureKind kind, int d,
                                                    int segment = 0, int groups = 0) {
  constexpr int n = k + 1;
  const auto quad = fe::make_quadrature(kind, k);
  TCFEM_ASSERT(quad.size() == q, "quadrature size of the dg faces program");
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto B = fe::basis_values(basis, quad.points).data;                                  // q x n
  const auto D = fe::basis_derivatives(fe::LagrangeBasis1D(quad.points), quad.points).data;  // q x q
  DgFaceParams<dim, k, q, Number> p;
  p.d = d;
  p.n_faces = 1;
  for (int e = 0; e < dim; ++e) {
    p.n_cells[e] = mesh.n_cells()[e];
    p.ext[e] = p.n_cells[e] + (e == d ? 1 : 0);
    p.n_faces *= p.ext[e];
  }
  p.rows = 1;
  for (int e = 0; e < dim; ++e)
    if (e != d) p.rows *= p.n_cells[e];
  p.segment = segment > 0 ? segment : 8;
  p.segments = (p.ext[d] + p.segment - 1) / p.segment;
  p.items = p.rows * p.segments;
  p.groups = groups > 0 ? groups : DgFaceShape<dim, q>::groups_per_block;
  for (int r = 0; r < q; ++r) {
    for (int c = 0; c < n; ++c) p.B[r][c] = Number(B[r * n + c]);
    for (int c = 0; c < q; ++c) p.D[r][c] = Number(D[r * q + c]);
  }
  for (int end = 0; end < 2; ++end)
    for (int i = 0; i < n; ++i) {
      p.ev[end][i] = Number(basis.value(i, end));
      p.ed[end][i] = Number(basis.derivative(i, end));
    }
  return p;
}

/// dst += the face terms of direction p.d by the faces program on the host, thread by thread and
/// phase by phase (`reverse`: the threads of each phase in reverse order).
template <int dim, int k, int q, typename Number>
void emulate_dg_faces(const DgFaceParams<dim, k, q, Number>& p, const Number* src, Number* dst, bool reverse = false) {
  using Prog = DgFaceProgram<dim, k, q, Number>;
  using Shape = DgFaceShape<dim, q>;
  const int threads = p.groups * Shape::group_threads;
  std::vector<Number> smem(std::size_t(p.groups) * Shape::group_elements, Number(std::nan("")));
  std::vector<typename Prog::Thread> th(threads);
  const std::int64_t blocks = (p.items + p.groups - 1) / p.groups;
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    for (int i = 0; i < threads; ++i) Prog::init(p, blk, i, th[i]);
    auto phase = [&](auto&& f) {
      for (int i = 0; i < threads; ++i) f(th[reverse ? threads - 1 - i : i]);
    };
    Prog::run(p, smem.data(), phase, src, dst);
  }
}

}  // namespace tcfem::operators::cuda_core
