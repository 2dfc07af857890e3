#pragma once
// Host side of the general-geometry cuda-core kernels (operators/cuda_core/geometry.h): the 1D geometry
// tables of the deformed box, the kernel parameters, the work model and a host emulation of the
// kernel (the same phase functions, thread by thread, phase by phase).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "operators/cuda_core/geometry.h"
#include "operators/cuda_core/layouts.h"
#include "operators/quadratic_nodes.h"
#include "tensor/evaluator.h"

namespace tcfem::operators::cuda_core {

/// Quadrature points per direction of a kind (k+1 or k+2).
constexpr int geom_points(fe::QuadratureKind kind, int k) { return kind == fe::QuadratureKind::gauss_k2 ? k + 2 : k + 1; }

/// The 1D tables of the deformed box for degree k at the points of `quad` (double): per direction d,
/// s[d][c * q + i] = s_d(xi_i) and ds[d][c * q + i] = s_d'(xi_i) / h_d on cell index c, where s_d is
/// the Gauss-Lobatto Q_k interpolant of sin(pi X_d) on the cell; the node coordinates are computed
/// exactly as GeometryField does. A Cartesian mesh gets eps = 0 (the tables are still filled).
template <int dim>
struct DeformedTables {
  std::array<double, dim> h{}, eps{};
  std::array<std::vector<double>, dim> s, ds;
};

template <int dim>
DeformedTables<dim> deformed_tables(const mesh::BoxMesh<dim>& mesh, int k, const fe::Quadrature1D& quad) {
  DeformedTables<dim> t;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto gll = fe::gauss_lobatto(k + 1).points;
  const auto val = fe::basis_values(basis, quad.points);
  const auto der = fe::basis_derivatives(basis, quad.points);
  const int q = quad.size();
  const auto h = mesh.cell_size();
  const auto eps = mesh::BoxMesh<dim>::deformation_amplitudes();
  for (int d = 0; d < dim; ++d) {
    t.h[d] = h[d];
    t.eps[d] = mesh.geometry() == mesh::GeometryKind::deformed ? eps[d] : 0.0;
    const int nc = mesh.n_cells()[d];
    t.s[d].assign(std::size_t(nc) * q, 0.0);
    t.ds[d].assign(std::size_t(nc) * q, 0.0);
    std::vector<double> node(k + 1);
    for (int c = 0; c < nc; ++c) {
      for (int j = 0; j <= k; ++j) {
        const long p = long(c) * k + j;
        const long cell = std::min<long>(p / k, nc - 1);
        const double x = (double(cell) + gll[p - cell * k]) * h[d];
        node[j] = std::sin(std::numbers::pi * x);
      }
      for (int i = 0; i < q; ++i) {
        double sv = 0, sd = 0;
        for (int j = 0; j <= k; ++j) {
          sv += val(i, j) * node[j];
          sd += der(i, j) * node[j];
        }
        t.s[d][std::size_t(c) * q + i] = sv;
        t.ds[d][std::size_t(c) * q + i] = sd / h[d];
      }
    }
  }
  return t;
}

/// Jacobian J[r][j] = d x_r / d xi_j of cell c at the tensor point (i_0, .., i_{dim-1}) from the tables.
template <int dim>
std::array<std::array<double, dim>, dim> deformed_jacobian(const DeformedTables<dim>& t, int q,
                                                           const std::array<int, dim>& c,
                                                           const std::array<int, dim>& i) {
  std::array<double, dim> s{}, g{};
  for (int d = 0; d < dim; ++d) s[d] = t.s[d][std::size_t(c[d]) * q + i[d]];
  for (int j = 0; j < dim; ++j) {
    g[j] = t.ds[j][std::size_t(c[j]) * q + i[j]] * t.h[j];
    for (int e = 0; e < dim; ++e)
      if (e != j) g[j] *= s[e];
  }
  std::array<std::array<double, dim>, dim> J{};
  for (int r = 0; r < dim; ++r)
    for (int j = 0; j < dim; ++j) J[r][j] = (r == j ? t.h[r] : 0.0) + t.eps[r] * g[j];
  return J;
}

/// Host copy of everything the kernel reads; params(s, ds) fills the parameters with the given
/// table pointers (host or device arrays of the same layout as `s`, `ds`).
template <int dim, int k, int q, typename Number>
struct GeomSetup {
  GeomParams<dim, k, q, Number> base{};
  std::array<std::vector<Number>, dim> s, ds;
  std::size_t table_bytes() const {
    std::size_t b = 0;
    for (int d = 0; d < dim; ++d) b += (s[d].size() + ds[d].size()) * sizeof(Number);
    return b;
  }
  GeomParams<dim, k, q, Number> params(const std::array<const Number*, dim>& s_ptr,
                                       const std::array<const Number*, dim>& ds_ptr) const {
    auto p = base;
    for (int d = 0; d < dim; ++d) {
      p.s[d] = s_ptr[d];
      p.ds[d] = ds_ptr[d];
    }
    return p;
  }
  GeomParams<dim, k, q, Number> host_params() const {
    std::array<const Number*, dim> a, b;
    for (int d = 0; d < dim; ++d) {
      a[d] = s[d].data();
      b[d] = ds[d].data();
    }
    return params(a, b);
  }
};

/// The unit tables of stored geometry: h = 1, eps = 0, no 1D tables (the derivatives stay on the
/// reference cell; GeomParams::coef carries the geometry).
template <int dim>
DeformedTables<dim> stored_geometry_tables() {
  DeformedTables<dim> t;
  for (int d = 0; d < dim; ++d) t.h[d] = 1.0;
  return t;
}

/// The parameters of the deformed box (1D tables of the built-in map), or with `stored` of stored
/// geometry or geometry from nodes (reference derivatives; the caller sets coef, or the node field).
/// `buffers`: of the program's layout (GeomProgram::L).
template <int dim, int k, int q, typename Number>
GeomSetup<dim, k, q, Number> make_geom_setup(const mesh::BoxMesh<dim>& mesh, fe::QuadratureKind kind,
                                             bool stored = false, int buffers = 3) {
  const auto quad = fe::make_quadrature(kind, k);
  TCFEM_ASSERT(quad.size() == q, "quadrature size of the general-geometry kernel");
  const auto t = stored ? stored_geometry_tables<dim>() : deformed_tables<dim>(mesh, k, quad);
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  tensor::Evaluator<dim, double> ev(basis, quad);
  GeomSetup<dim, k, q, Number> g;
  auto& p = g.base;
  p.total_cells = 1;
  double hprod = 1;
  for (int d = 0; d < dim; ++d) {
    p.n_cells[d] = mesh.n_cells()[d];
    p.lattice[d] = std::int64_t(mesh.n_cells()[d]) * k + 1;
    p.total_cells *= mesh.n_cells()[d];
    p.inv_h[d] = Number(1.0 / t.h[d]);
    p.eps[d] = Number(t.eps[d]);
    hprod *= t.h[d];
    g.s[d].assign(t.s[d].begin(), t.s[d].end());
    g.ds[d].assign(t.ds[d].begin(), t.ds[d].end());
  }
  p.hprod = Number(hprod);
  for (int i = 0; i < q; ++i) {
    p.w[i] = Number(quad.weights[i]);
    p.xi[i] = Number(quad.points[i]);
    for (int j = 0; j <= k; ++j) p.B[i][j] = Number(ev.B()[i * (k + 1) + j]);
    for (int j = 0; j < q; ++j) {
      p.D[i][j] = Number(ev.Dq()[i * q + j]);
      p.Dc[i][j] = Number(ev.Dq()[i * q + j] / t.h[dim - 1]);
    }
  }
  const auto nodes = fe::gauss_lobatto(k + 1);
  for (int a = 0; a <= k; ++a)
    for (int i = 0; i < 3; ++i) p.phi2n[i][a] = Number(quadratic_basis(i, nodes.points[a]));
  const GeomLayout L = geom_layout(dim, k, q, buffers);
  p.cells = L.cells;
  p.cell_stride = L.cell_stride;
  return g;
}

/// The layout of a launch with `cells` cells per block and `stride` elements per cell slot.
constexpr GeomLayout geom_tuned_layout(GeomLayout L, int cells, int stride) {
  L.cells = cells;
  L.threads = cells * L.cell_threads;
  L.cell_stride = stride;
  return L;
}

/// Blocks of one launch.
template <int dim, int k, int q, bool colloc, typename Number>
std::int64_t geom_blocks(const GeomParams<dim, k, q, Number>& p) {
  return (p.total_cells + p.cells - 1) / p.cells;
}

/// Work of one apply as the kernel performs it (per cell; inactive slots of the last block left out).
struct GeomWork {
  double flops = 0, shared_values = 0;
};
template <int dim, int k, int q, bool colloc, bool stored = false, bool nodes = false, bool bilinear = false>
constexpr GeomWork geom_cell_work() {
  constexpr int n = k + 1;
  GeomWork w;
  auto contraction = [&](double outputs, int len, int shared_in) {
    w.flops += 2.0 * outputs * len;
    w.shared_values += outputs * len * shared_in;  // operand loads from shared memory
  };
  const double Q = dim == 3 ? double(q) * q * q : double(q) * q;
  const double cols = dim == 3 ? double(q) * q : double(q);
  // + the weight product; from nodes: the bilinear part of J (4 x 3), the weight (2, with the coefficient)
  const double per_point_flux = nodes    ? node_flux2_flops() + 12 + 2
                                : stored ? stored_flux_flops(dim)
                                         : deformed_flux_flops(dim) + 1;
  if constexpr (dim == 3) {
    if (!colloc) {
      contraction(double(q) * n * n, n, 1);       // interp x (from shared)
      contraction(double(q) * q * n, n, 1);       // interp y (from shared)
      contraction(Q, n, 0);                       // interp z (registers)
      w.shared_values += double(n) * n * n        // gather stores
                         + double(q) * n * n      // interp x stores
                         + Q;                     // values at the points
    } else {
      w.shared_values += Q;  // gather stores
    }
    contraction(Q, q, 1);  // d/dx
    contraction(Q, q, 1);  // d/dy
    contraction(Q, q, 0);  // d/dz
    w.flops += Q * per_point_flux;
    w.shared_values += 2 * Q;  // flux x, y stores
    contraction(Q, q, 1);
    contraction(Q, q, 1);
    contraction(Q, q, 0);
    w.flops += 2 * Q;  // the two sums joining the three transposed terms
    if (!colloc) {
      contraction(cols * n, q, 0);             // integrate z
      contraction(double(q) * n * n, q, 1);   // integrate y
      contraction(double(n) * n * n, q, 1);   // integrate x
      w.shared_values += cols * n + double(q) * n * n;
    }
  } else {
    if (!colloc) {
      contraction(double(q) * n, n, 1);  // interp x
      contraction(Q, n, 0);              // interp y
      w.shared_values += double(n) * n + Q;
    } else {
      w.shared_values += Q;
    }
    if (nodes && !bilinear) {
      if (!colloc) {
        // the displacement's components from the nodes to the points (interp2)
        contraction(2.0 * q * n, n, 1);
        contraction(2 * Q, n, 0);
        w.shared_values += 2 * Q;
      }
      w.shared_values += 2 * Q;  // the displacement's gather stores
      contraction(2 * Q, q, 1);  // d/dx of its components
      contraction(2 * Q, q, 1);  // d/dy of its components (columns from shared memory)
    }
    contraction(Q, q, 1);
    contraction(Q, q, 0);
    w.flops += Q * per_point_flux;
    w.shared_values += Q;
    contraction(Q, q, 1);
    contraction(Q, q, 0);
    w.flops += Q;
    if (!colloc) {
      contraction(cols * n, q, 0);
      contraction(double(n) * n, q, 1);
      w.shared_values += cols * n;
    }
  }
  return w;
}

/// dst = A src by the block program on the host, thread by thread and phase by phase, with the
/// kernel's zeroing of dst (`zero`; false: dst += the cells' part, as a split apply's later
/// launches). `reverse` runs the threads of each phase in reverse order (a phase that read what
/// another thread of the same phase writes would then give a different result).
template <int dim, int k, int q, bool colloc, typename Number, bool stored = false, bool dg = false,
          typename Stored = Number, bool nodes = false, bool bilinear = false>
void emulate_geom(const GeomParams<dim, k, q, Number>& p, const Number* src, Number* dst, std::size_t n_dofs,
                  bool reverse = false, bool zero = true) {
  using Prog = GeomProgram<dim, k, q, colloc, Number, stored, dg, Stored, nodes, bilinear>;
  const auto L = geom_tuned_layout(Prog::L, p.cells, p.cell_stride);
  if (zero)
    for (std::size_t i = 0; i < n_dofs; ++i) dst[i] = Number(0);
  std::vector<Number> smem(L.smem_elements(), Number(std::nan("")));
  const auto t = Prog::arrays(smem.data(), p);
  std::vector<typename Prog::Thread> th(L.threads);
  const std::int64_t blocks = geom_blocks<dim, k, q, colloc, Number>(p);
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    for (int i = 0; i < L.threads; ++i) {
      Prog::init(p, blk, i, th[i]);
      Prog::load_tables(p, t, i, L.threads);
      Prog::load(p, t, th[i], src, dst);
    }
    const int threads = L.threads;
    auto phase = [&th, threads, reverse](auto&& f) {
      for (int i = 0; i < threads; ++i) f(th[reverse ? threads - 1 - i : i]);
    };
    if constexpr (dim == 3) {
      if constexpr (!colloc) {
        phase([&](auto& x) { Prog::interp_x(t, x); });
        phase([&](auto& x) { Prog::interp_yz(p, t, x); });
      }
      phase([&](auto& x) { Prog::grad_flux3(p, t, x); });
      phase([&](auto& x) { Prog::grad_t3(p, t, x, dst); });
      if constexpr (!colloc) {
        phase([&](auto& x) { Prog::integrate_y(t, x); });
        phase([&](auto& x) { Prog::integrate_x3(p, t, x, dst); });
      }
    } else {
      if constexpr (colloc) {
        phase([&](auto& x) { Prog::grad_flux2(p, t, x, 0, 1); });
        phase([&](auto& x) { Prog::grad_t2(p, t, x, 1, dst); });
      } else {
        phase([&](auto& x) { Prog::interp2(p, t, x); });
        phase([&](auto& x) { Prog::grad_flux2(p, t, x, 1, 2); });
        phase([&](auto& x) { Prog::grad_t2(p, t, x, 2, dst); });
        phase([&](auto& x) { Prog::integrate_x2(p, t, x, dst); });
      }
    }
  }
}

}  // namespace tcfem::operators::cuda_core

namespace tcfem::operators::cuda_core {

/// Every warp-wide shared access pattern of the general-geometry block program for one block:
/// f(name, addresses) (element addresses, -1 for idle lanes). Buffer patterns, per cell slot:
/// 'S' store at (a, b), 'R' read at (c, b) (along x), 'C' read at (a, c) (along y; 3D only), each
/// for the thread masks (a < na, b < nb) the phases use; table patterns: 'T' row r of a table with
/// stride s, r = a or r = b.
template <class F>
void for_each_geom_access(const GeomLayout& L, F&& f) {
  const int n = L.n(), q = L.q;
  const int masks[3][2] = {{n, n}, {q, n}, {q, q}};
  for (int w = 0; w * 32 < L.threads; ++w) {
    auto pattern = [&](char name, auto&& address) {
      std::array<long, warp_lanes> addr;
      for (int l = 0; l < warp_lanes; ++l) {
        const int t = w * 32 + l;
        if (t >= L.threads) {
          addr[l] = -1;
          continue;
        }
        const int slot = t / L.cell_threads, r = t % L.cell_threads;
        const int a = r % q, b = L.dim == 3 ? r / q : 0;
        addr[l] = address(slot, a, b);
      }
      f(name, addr);
    };
    for (const auto& m : masks) {
      const int na = m[0], nb = L.dim == 3 ? m[1] : 1;
      auto in = [&](int a, int b) { return a < na && b < nb; };
      for (int z = 0; z < q; ++z)
        for (int c = 0; c < q; ++c) {
          const int y = L.dim == 3 ? -1 : z, zz = L.dim == 3 ? z : 0;
          pattern('S', [&](int s, int a, int b) {
            return in(a, b) ? long(geom_address(L, s, 0, a, y < 0 ? b : y, zz)) : -1L;
          });
          pattern('R', [&](int s, int a, int b) {
            return in(a, b) ? long(geom_address(L, s, 0, c, y < 0 ? b : y, zz)) : -1L;
          });
          if (L.dim == 3)
            pattern('C', [&](int s, int a, int b) { return in(a, b) ? long(geom_address(L, s, 0, a, c, zz)) : -1L; });
        }
    }
    const int strides[3] = {L.sB, L.sBt, L.sD};
    for (int s : strides)
      for (int c = 0; c < q; ++c) {
        pattern('T', [&](int, int a, int) { return long(a * s + c); });
        if (L.dim == 3) pattern('T', [&](int, int, int b) { return long(b * s + c); });
      }
  }
}

}  // namespace tcfem::operators::cuda_core

namespace tcfem::operators::cuda_core {

/// Shared-memory wavefronts of all buffer accesses of one block under the bank model.
inline long geom_buffer_wavefronts(const GeomLayout& L, int value_bytes) {
  long w = 0;
  for_each_geom_access(L, [&](char name, const std::array<long, warp_lanes>& a) {
    if (name != 'T') w += access_cost(a, value_bytes).wavefronts;
  });
  return w;
}

/// The cell stride in [B Q, B Q + 32) (B = L.buffers) with the fewest buffer wavefronts (the
/// smallest on ties): the padding separates the banks of the rows of neighbouring cells that share
/// a half-warp (fp64) or warp (fp32).
inline int geom_search_cell_stride(const GeomLayout& L, int value_bytes) {
  const int first = L.buffers * L.Q;
  std::vector<long> w(32);
  parallel_chunks(0, w.size(), [&](std::size_t b, std::size_t e, int) {  // over the host threads
    for (std::size_t i = b; i < e; ++i)
      w[i] = geom_buffer_wavefronts(geom_tuned_layout(L, L.cells, first + int(i)), value_bytes);
  });
  return first + int(std::min_element(w.begin(), w.end()) - w.begin());  // the smallest on ties
}

/// geom_search_cell_stride memoized per layout and value size: the search walks every warp's
/// accesses for 32 strides, which every operator of a multigrid hierarchy would repeat.
inline int geom_best_cell_stride(const GeomLayout& L, int value_bytes) {
  static std::mutex m;
  static std::map<std::array<int, 12>, int> cache;
  const std::array<int, 12> key{L.dim, L.k, L.q, L.cells, L.cell_threads, L.Q, L.buffers, L.threads, L.sB, L.sBt, L.sD,
                                value_bytes};
  {
    const std::lock_guard<std::mutex> lock(m);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const int best = geom_search_cell_stride(L, value_bytes);
  const std::lock_guard<std::mutex> lock(m);
  cache[key] = best;
  return best;
}

}  // namespace tcfem::operators::cuda_core
