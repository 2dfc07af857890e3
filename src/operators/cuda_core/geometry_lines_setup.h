#pragma once
// Host side of the lines program of the general-geometry cuda-core kernel (3D,
// operators/cuda_core/geometry_lines.h): parameters, the searched padded layout, the work model and a host
// emulation (the same phase functions, thread by thread, phase by phase).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "operators/cuda_core/geometry_lines.h"
#include "operators/cuda_core/geometry_setup.h"
#include "operators/quadratic_nodes.h"

namespace tcfem::operators::cuda_core {

/// Shared-memory wavefronts of all accesses of one block under the bank model.
inline long geom_lines_wavefronts(const GeomLinesLayout& L, int n, int value_bytes) {
  long w = 0;
  for_each_geom_lines_access(L, n, [&](char, const std::array<long, warp_lanes>& a) {
    w += access_cost(a, value_bytes).wavefronts;
  });
  return w;
}

/// The padded layout with the fewest wavefronts: row stride sx in [q, q + 4], plane stride sp in
/// [q sx, q sx + 15] (buffer stride q sp) with the unpadded cell stride (buffers sb + extra), then
/// the cell stride in [that, that + 16) (the smallest on ties, in that order), among the layouts that keep the resident
/// blocks per SM of the unpadded one (geom_lines_blocks_per_sm), or `other_limit` blocks when that is
/// lower (the registers' limit; 0: none). n: nodes per direction (the thread masks of the
/// interpolation phases when n < q). Memoized per (q, n, cells, bytes, limit).
inline GeomLinesLayout geom_lines_search_layout(GeomLinesLayout L, int n, int value_bytes, int other_limit = 0) {
  const int q = L.q;
  GeomLinesLayout best = L;
  long best_w = geom_lines_wavefronts(L, n, value_bytes);
  int blocks = geom_lines_blocks_per_sm(L, value_bytes);
  if (other_limit > 0 && other_limit < blocks) blocks = other_limit;
  auto fits = [&](const GeomLinesLayout& T) { return geom_lines_blocks_per_sm(T, value_bytes) >= blocks; };
  // the candidates' wavefronts over the host threads (tenths of a second on one at high
  // degrees), the first of the fewest taken in the candidates' order
  auto take_best = [&](const std::vector<GeomLinesLayout>& candidates) {
    std::vector<long> w(candidates.size());
    parallel_chunks(0, candidates.size(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) w[i] = geom_lines_wavefronts(candidates[i], n, value_bytes);
    });
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (w[i] < best_w) {
        best_w = w[i];
        best = candidates[i];
      }
  };
  std::vector<GeomLinesLayout> candidates;
  for (int sx = q; sx <= q + 4; ++sx)
    for (int sp = q * sx; sp < q * sx + 16; ++sp) {
      GeomLinesLayout T = L;
      T.sx = sx;
      T.sp = sp;
      T.sb = q * sp;
      T.cell_stride = T.min_cell_stride();
      if (fits(T)) candidates.push_back(T);
    }
  take_best(candidates);
  const GeomLinesLayout base = best;
  candidates.clear();
  for (int cs = base.min_cell_stride() + 1; cs < base.min_cell_stride() + 16; ++cs) {
    GeomLinesLayout T = base;
    T.cell_stride = cs;
    if (fits(T)) candidates.push_back(T);
  }
  take_best(candidates);
  return best;
}

inline GeomLinesLayout geom_lines_best_layout(const GeomLinesLayout& L, int n, int value_bytes, int other_limit = 0) {
  static std::mutex m;
  static std::map<std::tuple<int, int, int, int, int, int, int>, GeomLinesLayout> cache;
  const auto key = std::make_tuple(L.q, n, L.cells, value_bytes, other_limit, L.buffers, L.extra);
  {
    const std::lock_guard<std::mutex> lock(m);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // the search is staged (greedy): the relaxed search may miss the layout the strict one finds
  GeomLinesLayout best = geom_lines_search_layout(L, n, value_bytes);
  if (other_limit > 0) {
    const GeomLinesLayout relaxed = geom_lines_search_layout(L, n, value_bytes, other_limit);
    if (geom_lines_wavefronts(relaxed, n, value_bytes) < geom_lines_wavefronts(best, n, value_bytes)) best = relaxed;
  }
  const std::lock_guard<std::mutex> lock(m);
  cache[key] = best;
  return best;
}

template <int k, int q, typename Number>
struct GeomLinesSetup {
  GeomLinesParams<k, q, Number> base{};
  std::array<std::vector<Number>, 3> s, ds;
  std::size_t table_bytes() const {
    std::size_t b = 0;
    for (int d = 0; d < 3; ++d) b += (s[d].size() + ds[d].size()) * sizeof(Number);
    return b;
  }
  GeomLinesParams<k, q, Number> params(const std::array<const Number*, 3>& s_ptr,
                                    const std::array<const Number*, 3>& ds_ptr) const {
    auto p = base;
    for (int d = 0; d < 3; ++d) {
      p.s[d] = s_ptr[d];
      p.ds[d] = ds_ptr[d];
    }
    return p;
  }
  GeomLinesParams<k, q, Number> host_params() const {
    std::array<const Number*, 3> a, b;
    for (int d = 0; d < 3; ++d) {
      a[d] = s[d].data();
      b[d] = ds[d].data();
    }
    return params(a, b);
  }
};

/// The launch's cells per block for a `cells` knob value (0: the default).
constexpr int geom_lines_cells(int q, int cells) {
  const int c = geom_lines_layout(q).cells;
  return cells > 0 && cells < c ? cells : c;
}

/// Parameters of the lines program on `mesh` with the quadrature `kind` (q points); `cells` cells
/// per block (0: the default), `padded`: the searched layout (else unpadded), `block_limit`: resident
/// blocks per SM the registers allow (0: unknown; see geom_lines_search_layout).
/// `stored` (stored geometry) and `nodes` (geometry from nodes; `trilinear`: from the vertices
/// only) use the unit tables; the caller sets the data pointers.
template <int k, int q, typename Number>
GeomLinesSetup<k, q, Number> make_geom_lines_setup(const mesh::BoxMesh<3>& mesh, fe::QuadratureKind kind,
                                                   int cells = 0, bool padded = true, int block_limit = 0,
                                                   bool stored = false, bool nodes = false, bool trilinear = false) {
  constexpr int n = k + 1;
  const auto quad = fe::make_quadrature(kind, k);
  TCFEM_ASSERT(quad.size() == q, "quadrature size of the general-geometry lines kernel");
  const auto t = stored || nodes ? stored_geometry_tables<3>() : deformed_tables<3>(mesh, k, quad);
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  tensor::Evaluator<3, double> ev(basis, quad);
  GeomLinesSetup<k, q, Number> g;
  auto& p = g.base;
  p.total_cells = 1;
  double hprod = 1;
  for (int d = 0; d < 3; ++d) {
    p.n_cells[d] = mesh.n_cells()[d];
    p.lattice[d] = std::int64_t(mesh.n_cells()[d]) * k + 1;
    p.total_cells *= mesh.n_cells()[d];
    p.eps[d] = Number(t.eps[d]);
    hprod *= t.h[d];
    g.s[d].assign(t.s[d].begin(), t.s[d].end());
    g.ds[d].assign(t.ds[d].begin(), t.ds[d].end());
  }
  p.hprod = Number(hprod);
  std::vector<double> D(q * q), Dt(q * q), B(q * n), Bt(n * q);
  for (int i = 0; i < q; ++i) {
    p.w[i] = Number(quad.weights[i]);
    p.xi[i] = Number(quad.points[i]);
    for (int j = 0; j < 3; ++j) p.phi2[j][i] = Number(quadratic_basis(j, quad.points[i]));
    for (int j = 0; j < n; ++j) {
      B[i * n + j] = ev.B()[i * n + j];
      Bt[j * q + i] = ev.B()[i * n + j];
    }
    for (int j = 0; j < q; ++j) {
      D[i * q + j] = ev.Dq()[i * q + j];
      Dt[j * q + i] = ev.Dq()[i * q + j];
    }
  }
  if (eo_symmetry_defect(D.data(), q, q, -1) > 1e-12)
    throw InputError("cuda-core lines kernel: the collocation derivative is not anti-centrosymmetric");
  if (eo_symmetry_defect(B.data(), q, n, 1) > 1e-12)
    throw InputError("cuda-core lines kernel: the interpolation matrix is not centrosymmetric");
  auto scaled = [&](const std::vector<double>& M, double h) {
    std::vector<double> S(M.size());
    for (std::size_t i = 0; i < M.size(); ++i) S[i] = M[i] / h;
    return S;
  };
  using Eo = typename GeomLinesParams<k, q, Number>::Eo;
  auto eo = [&](const std::vector<double>& M, double h) -> Eo {
    return make_eo_matrix<q, q, -1, Number>(scaled(M, h).data());
  };
  p.Dx = eo(D, t.h[0]);
  p.Dy = eo(D, t.h[1]);
  p.Dz = eo(D, t.h[2]);
  p.DxT = eo(Dt, t.h[0]);
  p.DyT = eo(Dt, t.h[1]);
  p.DzT = eo(Dt, t.h[2]);
  p.B = make_eo_matrix<q, n, 1, Number>(B.data());
  p.Bt = make_eo_matrix<n, q, 1, Number>(Bt.data());
  const GeomLinesLayout L =
      geom_lines_with_cells(geom_lines_layout(q, nodes, trilinear), geom_lines_cells(q, cells));
  p.layout = padded ? geom_lines_best_layout(L, n, int(sizeof(Number)), block_limit) : L;
  return g;
}

/// Work of one apply per cell as the kernel performs it (`nodes`: geometry from nodes, with the
/// displacement's lines unless `trilinear`; `quadratic`: the displacement from the Q2 lattice).
constexpr GeomWork geom_lines_cell_work(int k, int q, bool colloc, bool stored = false, bool nodes = false,
                                        bool trilinear = false, bool quadratic = false) {
  const double n = k + 1, Q = double(q) * q * q, lines = double(q) * q;
  GeomWork w;
  w.flops = 6 * lines * eo_apply_flops(q, q, -1) + Q * (stored ? stored_flux_flops(3) : deformed_flux_flops(3) + 1) +
            2 * Q;
  w.shared_values = 15 * Q;  // points: gather (or interp z) 1, lines 4, column 4, lines 4, scatter (or integrate z) 2
  if (nodes) {
    // 9 derivative lines (with a displacement), the trilinear part (9 lerps = 27), the flux, the weight (2)
    w.flops = (trilinear ? 6 : 15) * lines * eo_apply_flops(q, q, -1) + Q * (node_flux_flops() + 27 + 2 + (trilinear ? 0 : 9)) +
              2 * Q;
    // per point and component of the displacement: gather 1, x line 2, z column 1, y line 2, column 2;
    // the edge vectors once per column
    w.shared_values = 15 * Q + (trilinear ? 0 : 3 * 8 * Q) + 36 * lines;
    if (quadratic) {
      // the x interpolation of 27 values to 27 q, per column 3 x 3 y sums and the z expansion
      w.flops += 27 * q * 5 + lines * 3 * (3 * 5 + q * 5);
      w.shared_values += 27 * q + lines * 27;
    } else if (!trilinear && !colloc) {
      // the displacement's components from the nodes to the points (node_interp): the lines of
      // interp_x, interp_y, interp_z, in place
      w.flops += 3 * (n * n + q * n + q * q) * eo_apply_flops(q, k + 1, 1);
      w.shared_values += 3 * (n * n * n + 2 * q * n * n + 2 * q * q * n + Q);
    }
  }
  if (!colloc) {
    w.flops += (n * n + q * n + q * q) * (eo_apply_flops(q, k + 1, 1) + eo_apply_flops(k + 1, q, 1));
    w.shared_values += 2 * n * n * n + 3 * q * n * n + 3 * q * q * n;
  }
  return w;
}

/// dst = A src by the lines program on the host, thread by thread and phase by phase, with the
/// kernel's zeroing of dst (`zero`; false: dst += the cells' part, as a split apply's later
/// launches); `reverse` runs the threads of each phase in reverse order.
template <int k, int q, bool colloc, typename Number, bool stored = false, bool nodes = false, bool trilinear = false,
          bool dg = false, typename Stored = Number>
void emulate_geom_lines(const GeomLinesParams<k, q, Number>& p, const Number* src, Number* dst, std::size_t n_dofs,
                        bool reverse = false, bool zero = true) {
  using Prog = GeomLinesProgram<k, q, colloc, Number, stored, nodes, trilinear, dg, Stored>;
  const auto& L = p.layout;
  if (zero)
    for (std::size_t i = 0; i < n_dofs; ++i) dst[i] = Number(0);
  std::vector<Number> smem(L.smem_elements(), Number(std::nan("")));
  std::vector<typename Prog::Thread> th(L.threads);
  const std::int64_t blocks = (p.total_cells + L.cells - 1) / L.cells;
  const int threads = L.threads;
  auto phase = [&th, threads, reverse](auto&& f) {
    for (int i = 0; i < threads; ++i) f(th[reverse ? threads - 1 - i : i]);
  };
  Number* sm = smem.data();
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    std::fill(smem.begin(), smem.end(), Number(std::nan("")));
    for (int i = 0; i < threads; ++i) Prog::init(p, blk, i, th[i]);
    phase([&](auto& x) {
      Prog::load(p, sm, x, src, dst);
      if constexpr (nodes) Prog::load_nodes(p, sm, x);
    });
    if constexpr (Prog::displacement)
      if (p.disp2) phase([&](auto& x) { Prog::quadratic_nodes(p, sm, x); });
    if constexpr (!colloc) {
      phase([&](auto& x) {
        Prog::interp_x(p, sm, x);
        Prog::template node_interp<0>(p, sm, x);
      });
      phase([&](auto& x) {
        Prog::interp_y(p, sm, x);
        Prog::template node_interp<1>(p, sm, x);
      });
      phase([&](auto& x) {
        Prog::interp_z(p, sm, x);
        Prog::template node_interp<2>(p, sm, x);
      });
    }
    phase([&](auto& x) {
      Prog::lines(p, sm, x, p.Dx, p.Dy, 0, 1, 0, 2);
      if constexpr (nodes) Prog::node_lines(p, sm, x);
    });
    if constexpr (Prog::displacement) phase([&](auto& x) { Prog::node_y_lines(p, sm, x); });
    phase([&](auto& x) { Prog::column_flux(p, sm, x); });
    phase([&](auto& x) { Prog::lines(p, sm, x, p.DxT, p.DyT, 1, 0, 2, 3); });
    if constexpr (colloc) {
      phase([&](auto& x) { Prog::scatter(p, sm, x, dst); });
    } else {
      phase([&](auto& x) { Prog::integrate_z(p, sm, x); });
      phase([&](auto& x) { Prog::integrate_y(p, sm, x); });
      phase([&](auto& x) { Prog::integrate_x(p, sm, x, dst); });
    }
  }
}

}  // namespace tcfem::operators::cuda_core
