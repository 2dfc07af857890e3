#include "operators/device/device_geometry.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/device.h"
#include "core/error.h"
#include "fe/lagrange.h"
#include "operators/quadratic_nodes.h"

namespace tcfem::operators {

using generic::apply_1d;
using generic::ipow;
using setup::allow_shared;
using setup::Grid;
using setup::grid_for;

namespace {

__device__ inline int sym(int dim, int i, int j) {
  if (i > j) {
    const int t = i;
    i = j;
    j = t;
  }
  return i * dim - i * (i - 1) / 2 + (j - i);
}

/// coef and jxw (null: not written) of cells first .. first + m - 1 from the points' jxw, J^{-1} and a
/// (null: 1).
template <typename Number>
__global__ void cell_coefficients(int dim, int nqc, std::int64_t first, std::int64_t m, const double* a,
                                  const double* jxw_in, const double* inv, std::int64_t qs, Number* coef,
                                  Number* jxw) {
  const int ns = dim * (dim + 1) / 2;
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < m * nqc;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t cell = first + t / nqc;
    const int q = int(t % nqc);
    const double aq = a ? a[t] : 1.0, w = jxw_in[t];
    if (jxw) jxw[cell * nqc + q] = static_cast<Number>(w);
    for (int i = 0; i < dim; ++i)
      for (int j = i; j < dim; ++j) {
        double s = 0.0;
        for (int k = 0; k < dim; ++k) s += inv[(i * dim + k) * qs + t] * inv[(j * dim + k) * qs + t];
        coef[(cell * ns + sym(dim, i, j)) * nqc + q] = static_cast<Number>(aq * s * w);
      }
  }
}

/// dst[i] = src[i] rounded to Number, i < n.
template <typename Number>
__global__ void convert_values(const double* __restrict__ src, std::int64_t n, Number* __restrict__ dst) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = static_cast<Number>(src[i]);
}

/// volume[cell] = sum of the cell's jxw, in the host's order.
__global__ void cell_volumes(int nqc, std::int64_t first, std::int64_t m, const double* jxw, double* volume) {
  for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < m;
       c += std::int64_t(gridDim.x) * blockDim.x) {
    double v = 0.0;
    for (int q = 0; q < nqc; ++q) v += jxw[c * nqc + q];
    volume[first + c] = v;
  }
}

/// Position (cell multi-index of the + side) of face f of direction d (one process owns all).
__device__ inline void face_pos(const Grid& g, int d, std::int64_t f, int* pos) {
  for (int e = 0; e < 3; ++e) {
    if (e >= g.dim) {
      pos[e] = 0;
      continue;
    }
    const std::int64_t extent = g.n_cells[e] + (e == d ? 1 : 0);
    pos[e] = int(f % extent);
    f /= extent;
  }
}

/// Parameter points of the nodes of the two cells of each face: P[c * stride + (2 slot + side) *
/// nbc + i], side 0 the - cell (clamped into the mesh where it is missing; unused then).
__global__ void face_node_points(Grid g, const double* gll, int d, std::int64_t first, std::int64_t m, double* P,
                                 std::int64_t stride) {
  const int nbc = ipow(g.nb, g.dim);
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < 2 * m * nbc;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t slot = t / (2 * nbc);
    const int side = int((t / nbc) % 2);
    int r = int(t % nbc);
    int c[3];
    face_pos(g, d, first + slot, c);
    if (side == 0) c[d] -= 1;
    c[d] = max(0, min(c[d], g.n_cells[d] - 1));
    for (int e = 0; e < g.dim; ++e, r /= g.nb) P[e * stride + t] = setup::node_coordinate(g, gll, e, c[e], r % g.nb);
  }
}

/// Per face (one block): the geometry of both sides at the face points. Writes the reference
/// side's points xf[c * fs + slot * nf + q], jxw (unscaled by nothing: |det J| |J^{-T} e_d| w),
/// v_minus / v_plus[(slot * dim + e) * nf + q] = J_side^{-1} n (boundary faces: their one side
/// in v_minus) and the face area.
/// tables: B (nq x nb), D (nq x nb), w (nq), end values (2 x nb), end derivatives (2 x nb).
__global__ void face_points(Grid g, const double* tables, int d, std::int64_t first, std::int64_t m, const double* X,
                            std::int64_t xs, double* xf, double* jxw, double* vm, double* vp, double* area,
                            std::int64_t fs) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim), nf = ipow(nq, dim - 1);
  double* B = smem;             // nq x nb
  double* D = B + nq * nb;      // nq x nb
  double* w = D + nq * nb;      // nq
  double* ev = w + nq;          // 2 x nb
  double* ed = ev + 2 * nb;     // 2 x nb
  double* in = ed + 2 * nb;     // nbc
  double* t0 = in + nbc;        // nqc
  double* t1 = t0 + nqc;        // nqc
  double* t2 = t1 + nqc;        // nqc
  double* Js = t2 + nqc;        // [side][c][e][nf]
  double* xr = Js + 2 * dim * dim * nf;  // [c][nf] of the reference side
  double* jw = xr + dim * nf;            // nf
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < 2 * nq * nb + nq + 4 * nb; i += blockDim.x) B[i] = tables[i];
  __syncthreads();
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    int pos[3];
    face_pos(g, d, first + slot, pos);
    const bool have[2] = {pos[d] > 0, pos[d] < g.n_cells[d]};
    const int ref = have[0] ? 0 : 1;
    for (int s = 0; s < 2; ++s) {
      if (!have[s]) continue;
      const int end = s == 0 ? 1 : 0;  // the face is the - cell's upper end and the + cell's lower one
      for (int comp = 0; comp < dim; ++comp) {
        for (int i = threadIdx.x; i < nbc; i += blockDim.x) in[i] = X[comp * xs + (2 * slot + s) * nbc + i];
        __syncthreads();
        for (int e = -1; e < dim; ++e) {
          int sizes[3] = {1, 1, 1};
          for (int dd = 0; dd < dim; ++dd) sizes[dd] = nb;
          const double* src = in;
          double* bufs[2] = {t0, t1};
          for (int dd = 0; dd < dim; ++dd) {
            double* dst = dd + 1 == dim ? t2 : bufs[dd % 2];
            if (dd == d) {
              apply_1d<false, false>(group, (e == d ? ed : ev) + end * nb, 1, nb, dd, sizes, src, dst);
              sizes[dd] = 1;
            } else {
              apply_1d<false, false>(group, e == dd ? D : B, nq, nb, dd, sizes, src, dst);
              sizes[dd] = nq;
            }
            src = dst;
          }
          for (int q = threadIdx.x; q < nf; q += blockDim.x) {
            if (e < 0) {
              if (s == ref) xr[comp * nf + q] = t2[q];
            } else {
              Js[((s * dim + comp) * dim + e) * nf + q] = t2[q];
            }
          }
          __syncthreads();
        }
      }
    }
    for (int q = threadIdx.x; q < nf; q += blockDim.x) {
      double J[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, R[3][3];
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b) J[a][b] = Js[((ref * dim + a) * dim + b) * nf + q];
      const double det = setup::invert(dim, J, R);
      double mvec[3] = {0, 0, 0}, mn = 0.0;
      for (int c = 0; c < dim; ++c) {
        mvec[c] = R[d][c];
        mn += mvec[c] * mvec[c];
      }
      mn = sqrt(mn);
      const double sign = have[0] ? 1.0 : -1.0;
      double n[3] = {0, 0, 0};
      for (int c = 0; c < dim; ++c) n[c] = sign * mvec[c] / mn;
      double weight = 1.0;
      for (int e = 0, r = q; e < dim; ++e) {
        if (e == d) continue;
        weight *= w[r % nq];
        r /= nq;
      }
      const double wq = fabs(det) * mn * weight;
      jw[q] = wq;
      jxw[slot * nf + q] = wq;
      for (int c = 0; c < dim; ++c) xf[c * fs + slot * nf + q] = xr[c * nf + q];
      for (int s = 0; s < 2; ++s) {
        if (!have[s]) continue;
        for (int a = 0; a < dim; ++a)
          for (int b = 0; b < dim; ++b) J[a][b] = Js[((s * dim + a) * dim + b) * nf + q];
        setup::invert(dim, J, R);
        double* target = (have[0] && have[1] && s == 1) ? vp : vm;
        for (int e = 0; e < dim; ++e) {
          double v = 0.0;
          for (int c = 0; c < dim; ++c) v += R[e][c] * n[c];
          target[(slot * dim + e) * nf + q] = v;
        }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double s = 0.0;
      for (int q = 0; q < nf; ++q) s += jw[q];
      area[slot] = s;
    }
    __syncthreads();
  }
}

/// The stored face data of faces first .. first + m - 1 (one thread per face).
template <typename Number>
__global__ void face_finalize(Grid g, int d, std::int64_t first, std::int64_t m, const double* a, const double* jxw_in,
                              const double* vm, const double* vp, const double* area, const double* volume,
                              double penalty_factor, Number* jxw, Number* am, Number* ap, Number* pen) {
  const int dim = g.dim, nf = ipow(g.nq, dim - 1);
  for (std::int64_t slot = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; slot < m;
       slot += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t f = first + slot;
    int pos[3];
    face_pos(g, d, f, pos);
    const bool have_minus = pos[d] > 0, have_plus = pos[d] < g.n_cells[d];
    const bool interior = have_minus && have_plus;
    const bool neumann = !interior && !g.dirichlet[2 * d + (have_minus ? 1 : 0)];
    double a_max = 0.0;
    for (int q = 0; q < nf; ++q) {
      const double aq = a ? a[slot * nf + q] : 1.0;
      a_max = fmax(a_max, aq);
      jxw[f * nf + q] = static_cast<Number>(jxw_in[slot * nf + q]);
      for (int e = 0; e < dim; ++e) {
        const std::int64_t at = (slot * dim + e) * nf + q, out = (f * dim + e) * nf + q;
        am[out] = static_cast<Number>(neumann ? 0.0 : aq * vm[at]);
        ap[out] = static_cast<Number>(neumann || !interior ? 0.0 : aq * vp[at]);
      }
    }
    auto cell_number = [&](int shift) {
      std::int64_t idx = 0;
      for (int e = dim - 1; e >= 0; --e) idx = idx * g.n_cells[e] + (pos[e] - (e == d ? shift : 0));
      return idx;
    };
    double p;
    if (interior)
      p = penalty_factor * (area[slot] / volume[cell_number(1)] + area[slot] / volume[cell_number(0)]);
    else
      p = 2.0 * penalty_factor * area[slot] / volume[cell_number(have_minus ? 1 : 0)];
    pen[f] = static_cast<Number>(neumann ? 0.0 : p * a_max);
  }
}

/// Cell part of the diagonal: per cell, sum over the coefficient's components of the contraction
/// with F[x][y] = X_x(q, i) X_y(q, i) (X_0 = B, X_1 = Db), F at F + (2 x + y) nq nb.
template <typename Number>
__global__ void cell_diagonal(OperatorView<Number> v, const Number* F, std::int64_t n_cells, Number* diag) {
  extern __shared__ __align__(16) unsigned char raw[];
  Number* smem = reinterpret_cast<Number*>(raw);
  const int dim = v.dim, nb = v.nb, nq = v.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim), ns = dim * (dim + 1) / 2;
  Number* f = smem;              // 4 nq nb
  Number* b0 = f + 4 * nq * nb;  // nqc
  Number* b1 = b0 + nqc;         // nqc
  Number* b2 = b1 + nqc;         // nqc
  Number* acc = b2 + nqc;        // nbc
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < 4 * nq * nb; i += blockDim.x) f[i] = F[i];
  __syncthreads();
  for (std::int64_t cell = blockIdx.x; cell < n_cells; cell += gridDim.x) {
    for (int i = threadIdx.x; i < nbc; i += blockDim.x) acc[i] = Number(0);
    for (int a = 0; a < dim; ++a)
      for (int b = a; b < dim; ++b) {
        const Number* coef = v.cell_coef + (cell * ns + sym(dim, a, b)) * nqc;
        for (int q = threadIdx.x; q < nqc; q += blockDim.x) b0[q] = coef[q];
        __syncthreads();
        int sizes[3] = {1, 1, 1};
        for (int e = 0; e < dim; ++e) sizes[e] = nq;
        const Number* in = b0;
        Number* bufs[2] = {b1, b2};
        int which = 0;
        for (int e = dim - 1; e >= 0; --e) {
          Number* out = bufs[which];
          which ^= 1;
          apply_1d<true, false>(group, f + (2 * (e == a) + (e == b)) * nq * nb, nq, nb, e, sizes, in, out);
          sizes[e] = nb;
          in = out;
        }
        const Number scale = a == b ? Number(1) : Number(2);
        for (int i = threadIdx.x; i < nbc; i += blockDim.x) acc[i] += scale * in[i];
        __syncthreads();
      }
    int c[3];
    generic::cell_coords(v, cell, c);
    for (int i = threadIdx.x; i < nbc; i += blockDim.x) {
      bool boundary;
      atomicAdd(diag + generic::dof_index(v, c, i, boundary), acc[i]);
    }
    __syncthreads();
  }
}

/// Face part of the SIPG diagonal (direction d): per face and side the penalty, the normal
/// derivative and the tangential terms, as MatrixFreeOperator::diagonal_faces_general.
/// T: BB (nq x nb), DB (nq x nb).
template <typename Number>
__global__ void face_diagonal(OperatorView<Number> v, const Number* T, int d, std::int64_t n_faces, Number* diag) {
  extern __shared__ __align__(16) unsigned char raw[];
  Number* smem = reinterpret_cast<Number*>(raw);
  const int dim = v.dim, nb = v.nb, nq = v.nq;
  const int nbc = ipow(nb, dim), nf = ipow(nq, dim - 1);
  const int big = ipow(nb > nq ? nb : nq, dim);
  Number* BB = smem;               // nq nb
  Number* DB = BB + nq * nb;       // nq nb
  Number* vv = DB + nq * nb;       // nb
  Number* vd = vv + nb;            // nb
  Number* cf = vd + nb;            // nf
  Number* b1 = cf + nf;            // big
  Number* b2 = b1 + big;           // big
  Number* out = b2 + big;          // nbc
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < 2 * nq * nb; i += blockDim.x) BB[i] = T[i];
  __syncthreads();
  Grid g;
  g.dim = dim;
  for (int e = 0; e < dim; ++e) g.n_cells[e] = v.n_cells[e];
  auto contract = [&](int tdir, const Number* normal) {
    int sizes[3] = {1, 1, 1};
    for (int e = 0; e < dim; ++e) sizes[e] = nq;
    sizes[d] = 1;
    const Number* in = cf;
    Number* bufs[2] = {b1, b2};
    int which = 0;
    for (int e = dim - 1; e >= 0; --e) {
      if (e == d) continue;
      Number* o = bufs[which];
      which ^= 1;
      apply_1d<true, false>(group, e == tdir ? DB : BB, nq, nb, e, sizes, in, o);
      sizes[e] = nb;
      in = o;
    }
    apply_1d<true, true>(group, normal, 1, nb, d, sizes, in, out);
  };
  for (std::int64_t f = blockIdx.x; f < n_faces; f += gridDim.x) {
    int pos[3];
    face_pos(g, d, f, pos);
    const bool has[2] = {pos[d] > 0, pos[d] < v.n_cells[d]};
    const bool interior = has[0] && has[1];
    const Number* jxw = v.face_jxw[d] + f * nf;
    const Number gamma = v.face_pen[d][f];
    for (int s = 0; s < 2; ++s) {
      if (!has[s]) continue;
      const int ref_side = s == 0 ? 1 : 0;
      const Number* a = (interior && s == 1) ? v.face_ap[d] + f * dim * nf : v.face_am[d] + f * dim * nf;
      const Number sign = (interior && s == 1) ? Number(-1) : Number(1);
      const Number c = interior ? Number(1) : Number(2);
      for (int i = threadIdx.x; i < nb; i += blockDim.x) {
        const Number e0 = v.end_val[ref_side * nb + i], e1 = v.end_der[ref_side * nb + i];
        vv[i] = e0 * e0;
        vd[i] = e0 * e1;
      }
      for (int i = threadIdx.x; i < nbc; i += blockDim.x) out[i] = Number(0);
      for (int q = threadIdx.x; q < nf; q += blockDim.x) cf[q] = gamma * jxw[q];
      __syncthreads();
      contract(-1, vv);
      for (int q = threadIdx.x; q < nf; q += blockDim.x) cf[q] = -c * sign * jxw[q] * a[d * nf + q];
      __syncthreads();
      contract(-1, vd);
      for (int e = 0; e < dim; ++e) {
        if (e == d) continue;
        for (int q = threadIdx.x; q < nf; q += blockDim.x) cf[q] = -c * sign * jxw[q] * a[e * nf + q];
        __syncthreads();
        contract(e, vv);
      }
      int cell[3] = {pos[0], pos[1], pos[2]};
      if (s == 0) cell[d] -= 1;
      for (int i = threadIdx.x; i < nbc; i += blockDim.x) {
        bool boundary;
        atomicAdd(diag + generic::dof_index(v, cell, i, boundary), out[i]);
      }
      __syncthreads();
    }
  }
}

/// metric[cell * dim + d] = sum over the points of coef[cell][sym(d, d)][q]: one warp per (cell, d).
template <typename Number>
__global__ void cell_metric_kernel(int dim, int nqc, std::int64_t n_cells, const Number* __restrict__ coef,
                                   double* __restrict__ metric) {
  const int n_sym = dim * (dim + 1) / 2;
  const int lane = threadIdx.x & 31;
  const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t w = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; w < n_cells * dim; w += warps) {
    const std::int64_t cell = w / dim;
    const int d = static_cast<int>(w - cell * dim);
    const int sym = d * dim - d * (d - 1) / 2;  // (d, d) in the row-wise upper triangle
    const Number* c = coef + (cell * n_sym + sym) * nqc;
    double s = 0.0;
    for (int q = lane; q < nqc; q += 32) s += static_cast<double>(c[q]);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) metric[w] = s;
  }
}

}  // namespace

template <int dim, typename Number>
void device_cell_geometry(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                          const fe::Quadrature1D& quad, const setup::PointFunction& coefficient,
                          const std::array<setup::PointFunction, 3>& map, Number* coef, Number* jxw, double* volume) {
  const Grid g = setup::make_grid(mesh, dofs, quad.size());
  const std::int64_t n_cells = std::int64_t(mesh.n_owned_cells());
  const int nqc = ipow(g.nq, dim);
  setup::CellPoints points(g, quad, map, mesh.geometry() == mesh::GeometryKind::cartesian,
                           setup::CellPoints::default_capacity(g, n_cells), true);
  const std::int64_t cap = points.capacity();
  DeviceBuffer<double> a(coefficient.empty() ? 0 : cap * nqc);
  setup::for_each_chunk(n_cells, cap, [&](std::int64_t first, std::int64_t m, unsigned long long* slot) {
    points.compute(mesh, first, m, slot);
    if (!coefficient.empty())
      coefficient.evaluate(dim, points.xq(), points.stride(), m * nqc, a.data(), true, slot);
    cell_coefficients<Number><<<grid_for(m * nqc, 256), 256>>>(dim, nqc, first, m, a.size() ? a.data() : nullptr,
                                                               points.jxw(), points.inv(), points.stride(), coef, jxw);
    TCFEM_CUDA_CHECK_LAUNCH();
    if (volume) {
      cell_volumes<<<grid_for(m, 128), 128>>>(nqc, first, m, points.jxw(), volume);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  });
}

template <int dim, typename Number>
std::vector<double> device_cell_metric_of(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                          const fe::Quadrature1D& quad, const setup::PointFunction& coefficient,
                                          const std::array<setup::PointFunction, 3>& map, Number* a_points) {
  const Grid g = setup::make_grid(mesh, dofs, quad.size());
  const std::int64_t n_cells = std::int64_t(mesh.n_owned_cells());
  const int nqc = ipow(g.nq, dim), ns = dim * (dim + 1) / 2;
  setup::CellPoints points(g, quad, map, mesh.geometry() == mesh::GeometryKind::cartesian,
                           setup::CellPoints::default_capacity(g, n_cells), true);
  const std::int64_t cap = points.capacity();
  DeviceBuffer<double> a(coefficient.empty() ? 0 : cap * nqc), coef(cap * nqc * ns);
  DeviceBuffer<double> metric(static_cast<std::size_t>(n_cells * dim));
  setup::for_each_chunk(n_cells, cap, [&](std::int64_t first, std::int64_t m, unsigned long long* slot) {
    points.compute(mesh, first, m, slot);
    if (!coefficient.empty())
      coefficient.evaluate(dim, points.xq(), points.stride(), m * nqc, a.data(), true, slot);
    cell_coefficients<double><<<grid_for(m * nqc, 256), 256>>>(dim, nqc, 0, m, a.size() ? a.data() : nullptr,
                                                               points.jxw(), points.inv(), points.stride(),
                                                               coef.data(), nullptr);
    TCFEM_CUDA_CHECK_LAUNCH();
    cell_metric_kernel<double><<<grid_for(m * dim * 32, 256), 256>>>(dim, nqc, m, coef.data(),
                                                                     metric.data() + first * dim);
    TCFEM_CUDA_CHECK_LAUNCH();
    if (a_points && a.size()) {
      convert_values<<<grid_for(m * nqc, 256), 256>>>(a.data(), m * nqc, a_points + first * nqc);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  });
  return metric.to_host();
}

template <int dim, typename Number>
void device_face_geometry(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                          const fe::Quadrature1D& quad, const setup::PointFunction& coefficient,
                          const std::array<setup::PointFunction, 3>& map, double penalty_factor, int d,
                          const double* volume, Number* jxw, Number* a_minus, Number* a_plus, Number* penalty) {
  const Grid g = setup::make_grid(mesh, dofs, quad.size());
  const int nb = g.nb, nq = g.nq, nbc = ipow(nb, dim), nqc = ipow(nq, dim), nf = ipow(nq, dim - 1);
  std::int64_t n_faces = 1;
  for (int e = 0; e < dim; ++e) n_faces *= g.n_cells[e] + (e == d ? 1 : 0);
  const std::int64_t cap = std::min<std::int64_t>(n_faces, std::max<std::int64_t>(1, (std::int64_t(1) << 21) / nbc));
  const std::int64_t xs = 2 * cap * nbc, fs = cap * nf;
  // tables: B, D, w, end values, end derivatives
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(g.k);
  std::vector<double> t = fe::basis_values(basis, quad.points).data;
  const auto Dm = fe::basis_derivatives(basis, quad.points).data;
  t.insert(t.end(), Dm.begin(), Dm.end());
  t.insert(t.end(), quad.weights.begin(), quad.weights.end());
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < nb; ++i) t.push_back(basis.value(i, s));
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < nb; ++i) t.push_back(basis.derivative(i, s));
  const DeviceBuffer<double> tables(t), gll(fe::gauss_lobatto(g.k + 1).points);
  DeviceBuffer<double> P(dim * xs), X, xf(dim * fs), jw(fs), vm(dim * fs), vp(dim * fs), area(cap);
  DeviceBuffer<double> a(coefficient.empty() ? 0 : fs);
  const bool identity = mesh.geometry() == mesh::GeometryKind::cartesian;
  if (!identity) X.allocate(dim * xs);
  const int smem = int(sizeof(double)) * (2 * nq * nb + nq + 4 * nb + nbc + 3 * nqc + 2 * dim * dim * nf + dim * nf + nf);
  allow_shared(face_points, smem);
  for (std::int64_t first = 0; first < n_faces; first += cap) {
    const std::int64_t m = std::min(cap, n_faces - first);
    face_node_points<<<grid_for(2 * m * nbc, 256), 256>>>(g, gll.data(), d, first, m, P.data(), xs);
    TCFEM_CUDA_CHECK_LAUNCH();
    if (!identity)
      for (int c = 0; c < dim; ++c) map[c].evaluate(dim, P.data(), xs, 2 * m * nbc, X.data() + c * xs);
    face_points<<<grid_for(m, 1), 128, smem>>>(g, tables.data(), d, first, m, identity ? P.data() : X.data(), xs,
                                                xf.data(), jw.data(), vm.data(), vp.data(), area.data(), fs);
    TCFEM_CUDA_CHECK_LAUNCH();
    if (!coefficient.empty()) coefficient.evaluate(dim, xf.data(), fs, m * nf, a.data(), true);
    face_finalize<Number><<<grid_for(m, 128), 128>>>(g, d, first, m, a.size() ? a.data() : nullptr, jw.data(),
                                                      vm.data(), vp.data(), area.data(), volume, penalty_factor, jxw,
                                                      a_minus, a_plus, penalty);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the chunk buffers go out of scope
}

template <typename Number>
void device_general_diagonal(const OperatorView<Number>& v, const Grid& grid, const std::vector<double>& Db,
                             Number* diag) {
  if (v.cartesian || v.mass) throw Error("device_general_diagonal: the Laplacian of general geometry only");
  const int dim = v.dim, nb = v.nb, nq = v.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim), nf = ipow(nq, dim - 1);
  std::int64_t n_cells = 1, n_local = 1;
  for (int d = 0; d < dim; ++d) {
    n_cells *= v.n_cells[d];
    n_local *= v.lattice[d];
  }
  if (v.dg) n_local = n_cells * nbc;
  // B from the view's table (host copy), Db given
  std::vector<Number> B(nq * nb);
  TCFEM_CUDA_CHECK(cudaMemcpy(B.data(), v.B, B.size() * sizeof(Number), cudaMemcpyDeviceToHost));
  std::vector<Number> F(4 * nq * nb), T(2 * nq * nb);
  for (int k = 0; k < nq * nb; ++k) {
    const Number b = B[k], db = static_cast<Number>(Db[k]);
    F[0 * nq * nb + k] = b * b;
    F[1 * nq * nb + k] = b * db;
    F[2 * nq * nb + k] = db * b;
    F[3 * nq * nb + k] = db * db;
    T[k] = b * b;
    T[nq * nb + k] = db * b;
  }
  const DeviceBuffer<Number> dF(F), dT(T);
  TCFEM_CUDA_CHECK(cudaMemset(diag, 0, n_local * sizeof(Number)));
  const int threads = 128;
  const int smem_cell = int(sizeof(Number)) * (4 * nq * nb + 3 * nqc + nbc);
  allow_shared(cell_diagonal<Number>, smem_cell);
  cell_diagonal<Number><<<grid_for(n_cells, 1), threads, smem_cell>>>(v, dF.data(), n_cells, diag);
  TCFEM_CUDA_CHECK_LAUNCH();
  if (v.dg) {
    const int big = ipow(std::max(nb, nq), dim);
    const int smem_face = int(sizeof(Number)) * (2 * nq * nb + 2 * nb + nf + 2 * big + nbc);
    allow_shared(face_diagonal<Number>, smem_face);
    for (int d = 0; d < dim; ++d) {
      std::int64_t n_faces = 1;
      for (int e = 0; e < dim; ++e) n_faces *= v.n_cells[e] + (e == d ? 1 : 0);
      face_diagonal<Number><<<grid_for(n_faces, 1), threads, smem_face>>>(v, dT.data(), d, n_faces, diag);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  } else {
    setup::set_constrained<Number>(grid, n_local, Number(1), diag);
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the tables go out of scope
}

template void device_cell_geometry<2, double>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                              const fe::Quadrature1D&, const setup::PointFunction&,
                                              const std::array<setup::PointFunction, 3>&, double*, double*, double*);
template void device_cell_geometry<3, double>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                              const fe::Quadrature1D&, const setup::PointFunction&,
                                              const std::array<setup::PointFunction, 3>&, double*, double*, double*);
template void device_cell_geometry<2, float>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                             const fe::Quadrature1D&, const setup::PointFunction&,
                                             const std::array<setup::PointFunction, 3>&, float*, float*, double*);
template void device_cell_geometry<3, float>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                             const fe::Quadrature1D&, const setup::PointFunction&,
                                             const std::array<setup::PointFunction, 3>&, float*, float*, double*);
#define TCFEM_FACE_GEOMETRY(DIM, NUMBER)                                                                            \
  template void device_face_geometry<DIM, NUMBER>(                                                                  \
      const mesh::BoxMesh<DIM>&, const fe::DofLayout<DIM>&, const fe::Quadrature1D&, const setup::PointFunction&, \
      const std::array<setup::PointFunction, 3>&, double, int, const double*, NUMBER*, NUMBER*, NUMBER*, NUMBER*);
TCFEM_FACE_GEOMETRY(2, double)
TCFEM_FACE_GEOMETRY(3, double)
TCFEM_FACE_GEOMETRY(2, float)
TCFEM_FACE_GEOMETRY(3, float)
#undef TCFEM_FACE_GEOMETRY
namespace {

/// Parameter points of the vertices (first .. first + m - 1 of the (n_cells + 1)-lattice, k = 0
/// of the node arithmetic) or of the nodes of the Q_k lattice: P[d * stride + t].
__global__ void lattice_points(Grid g, const double* gll, bool vertices, std::int64_t first, std::int64_t m,
                               double* P, std::int64_t stride) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < m;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r = first + t;
    for (int d = 0; d < g.dim; ++d) {
      const std::int64_t extent = vertices ? g.n_cells[d] + 1 : g.lattice[d];
      const std::int64_t p = (vertices ? g.k : 1) * (r % extent);
      r /= extent;
      const int c = int(min(p / g.k, std::int64_t(g.n_cells[d] - 1)));
      P[d * stride + t] = setup::node_coordinate(g, gll, d, c, int(p - std::int64_t(c) * g.k));
    }
  }
}

/// Order-preserving unsigned encoding of a double (for atomicMin / atomicMax).
__device__ inline unsigned long long ordered(double x) {
  const unsigned long long b = __double_as_longlong(x);
  return (b >> 63) ? ~b : b | 0x8000000000000000ull;
}
__host__ inline double unordered(unsigned long long e) {
  const unsigned long long b = (e >> 63) ? e & 0x7fffffffffffffffull : ~e;
  double x;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

/// The vertices' smallest and largest coordinate along each direction: range[2 d], range[2 d + 1].
__global__ void vertex_range(int dim, const double* V, std::int64_t nv, unsigned long long* range) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < nv;
       t += std::int64_t(gridDim.x) * blockDim.x)
    for (int d = 0; d < dim; ++d) {
      atomicMin(range + 2 * d, ordered(V[d * nv + t]));
      atomicMax(range + 2 * d + 1, ordered(V[d * nv + t]));
    }
}

/// Nodes first .. first + m - 1: disp = x - (the multilinear interpolant of the owning cell's
/// vertices), its largest magnitude into *worst (ordered), a at the nodes rounded.
template <typename Number>
__global__ void node_displacement(Grid g, const double* gll, const double* V, std::int64_t nv, std::int64_t n_nodes,
                                  std::int64_t first, std::int64_t m, const double* X, std::int64_t xs,
                                  const double* a, Number* disp, Number* a_nodes, unsigned long long* worst) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < m;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t node = first + t;
    std::int64_t r = node;
    int c[3] = {0, 0, 0};
    double xi[3] = {0, 0, 0};
    for (int d = 0; d < g.dim; ++d) {
      const std::int64_t p = r % g.lattice[d];
      r /= g.lattice[d];
      c[d] = int(min(p / g.k, std::int64_t(g.n_cells[d] - 1)));
      xi[d] = gll[int(p - std::int64_t(c[d]) * g.k)];
    }
    double big = 0;
    for (int comp = 0; comp < g.dim; ++comp) {
      // relative to the cell's first vertex x_0 (the phi sum to 1): rounded to the cell's size,
      // not to the coordinates' magnitude
      double lin = 0, x0 = 0;
      for (int v = 0; v < (1 << g.dim); ++v) {
        double phi = 1;
        std::int64_t vertex = 0;
        for (int d = g.dim - 1; d >= 0; --d) {
          const int b = v >> d & 1;
          phi *= b ? xi[d] : 1 - xi[d];
          vertex = vertex * (g.n_cells[d] + 1) + c[d] + b;
        }
        if (v == 0) x0 = V[comp * nv + vertex];
        lin += phi * (V[comp * nv + vertex] - x0);
      }
      const double d = (X[comp * xs + t] - x0) - lin;
      disp[comp * n_nodes + node] = static_cast<Number>(d);
      big = fmax(big, fabs(d));
    }
    atomicMax(worst, ordered(big));
    if (a) a_nodes[node] = static_cast<Number>(a[t]);
  }
}

/// disp2 = the Q2 lattice values of the Q_k displacement (q2_value), every component (comps).
template <typename Number>
__global__ void q2_values(const Number* disp, NodeLattice L, const double* mid, int comps, Number* disp2) {
  const std::int64_t n2 = L.nodes2();
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < comps * n2;
       t += std::int64_t(gridDim.x) * blockDim.x)
    disp2[t] = static_cast<Number>(q2_value(disp, L, mid, int(t / n2), t % n2));
}

/// The largest q2_defect over every node and component into *worst (ordered).
template <typename Number>
__global__ void q2_defects(const Number* disp, const Number* disp2, NodeLattice L, const double* gll, int comps,
                           unsigned long long* worst) {
  const std::int64_t n = L.nodes();
  double big = 0;
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < comps * n;
       t += std::int64_t(gridDim.x) * blockDim.x)
    big = fmax(big, q2_defect(disp, disp2, L, gll, int(t / n), t % n));
  atomicMax(worst, ordered(big));
}

}  // namespace

template <typename Number, int dim>
DeviceNodeGeometry<Number> device_node_geometry(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                const setup::PointFunction& coefficient,
                                                const std::array<setup::PointFunction, 3>& map) {
  const Grid g = setup::make_grid(mesh, dofs, dofs.degree() + 1);
  const auto nodes_1d = fe::LagrangeBasis1D::gauss_lobatto(g.k).nodes();
  const DeviceBuffer<double> gll(nodes_1d);
  DeviceNodeGeometry<Number> out;
  out.n_vertices = 1;
  out.n_nodes = 1;
  for (int d = 0; d < dim; ++d) {
    out.n_vertices *= g.n_cells[d] + 1;
    out.n_nodes *= g.lattice[d];
  }
  const bool identity = map[0].empty();
  auto evaluate_map = [&](const double* P, std::int64_t stride, std::int64_t m, double* X) {
    for (int d = 0; d < dim; ++d) {
      if (identity)
        TCFEM_CUDA_CHECK(cudaMemcpy(X + d * stride, P + d * stride, m * sizeof(double), cudaMemcpyDeviceToDevice));
      else
        map[d].evaluate(dim, P, stride, m, X + d * stride);
    }
  };
  // the vertices
  out.vertices = std::make_unique<DeviceBuffer<double>>(dim * out.n_vertices);
  {
    DeviceBuffer<double> P(dim * out.n_vertices);
    const std::int64_t nv = out.n_vertices;
    lattice_points<<<grid_for(nv, 256), 256>>>(g, gll.data(), true, 0, nv, P.data(), nv);
    TCFEM_CUDA_CHECK_LAUNCH();
    evaluate_map(P.data(), nv, nv, out.vertices->data());
  }
  // the vertices' extent, and the coordinates' largest magnitude
  double scale = 0;
  {
    std::vector<unsigned long long> init(2 * dim);
    for (int d = 0; d < dim; ++d) {
      init[2 * d] = ~0ull;
      init[2 * d + 1] = 0ull;
    }
    DeviceBuffer<unsigned long long> range(init);
    vertex_range<<<grid_for(out.n_vertices, 256), 256>>>(dim, out.vertices->data(), out.n_vertices, range.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    const auto r = range.to_host();
    for (int d = 0; d < dim; ++d) {
      out.extent = std::max(out.extent, unordered(r[2 * d + 1]) - unordered(r[2 * d]));
      scale = std::max({scale, std::abs(unordered(r[2 * d])), std::abs(unordered(r[2 * d + 1]))});
    }
  }
  // every node, in chunks
  out.disp = std::make_unique<DeviceBuffer<Number>>(dim * out.n_nodes);
  if (!coefficient.empty()) out.a_nodes = std::make_unique<DeviceBuffer<Number>>(out.n_nodes);
  const std::int64_t chunk = std::min<std::int64_t>(out.n_nodes, std::int64_t(1) << 22);
  DeviceBuffer<double> P(dim * chunk), X(dim * chunk), A(coefficient.empty() ? 1 : chunk);
  DeviceBuffer<unsigned long long> worst(std::vector<unsigned long long>{0ull});
  for (std::int64_t first = 0; first < out.n_nodes; first += chunk) {
    const std::int64_t m = std::min(chunk, out.n_nodes - first);
    lattice_points<<<grid_for(m, 256), 256>>>(g, gll.data(), false, first, m, P.data(), chunk);
    TCFEM_CUDA_CHECK_LAUNCH();
    evaluate_map(P.data(), chunk, m, X.data());
    if (!coefficient.empty()) coefficient.evaluate(dim, X.data(), chunk, m, A.data(), true);
    node_displacement<Number><<<grid_for(m, 256), 256>>>(
        g, gll.data(), out.vertices->data(), out.n_vertices, out.n_nodes, first, m, X.data(), chunk,
        coefficient.empty() ? nullptr : A.data(), out.disp->data(), out.a_nodes ? out.a_nodes->data() : nullptr,
        worst.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  out.max_disp = unordered(worst.to_host()[0]);
  if (!(out.max_disp > 1e-13 * out.extent)) {
    out.disp.reset();
    return out;
  }
  if (g.k >= 3) {
    // cells of geometry order 2: the Q2 lattice values, kept where they reproduce the field
    NodeLattice L;
    L.k = g.k;
    for (int d = 0; d < 3; ++d) L.n_cells[d] = d < dim ? g.n_cells[d] : 0;
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(g.k);
    std::vector<double> mid_host(g.k + 1);
    for (int j = 0; j <= g.k; ++j) mid_host[j] = basis.value(j, 0.5);
    const DeviceBuffer<double> mid(mid_host);
    auto disp2 = std::make_unique<DeviceBuffer<Number>>(dim * L.nodes2());
    q2_values<Number><<<grid_for(dim * L.nodes2(), 256), 256>>>(out.disp->data(), L, mid.data(), dim, disp2->data());
    TCFEM_CUDA_CHECK_LAUNCH();
    DeviceBuffer<unsigned long long> defect(std::vector<unsigned long long>{0ull});
    q2_defects<Number><<<grid_for(dim * out.n_nodes, 256), 256>>>(out.disp->data(), disp2->data(), L, gll.data(),
                                                                   dim, defect.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    if (unordered(defect.to_host()[0]) <= q2_tolerance<Number>(out.max_disp, scale)) {
      out.disp2 = std::move(disp2);
      out.n_nodes2 = L.nodes2();
      out.disp.reset();
    }
  }
  return out;
}

void device_round_to_float(const double* src, float* dst, std::size_t n) {
  if (n == 0) return;
  convert_values<float><<<grid_for(std::int64_t(n), 256), 256>>>(src, std::int64_t(n), dst);
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
void device_cell_metric_to(const OperatorView<Number>& v, double* metric) {
  if (v.cartesian || v.mass || !v.cell_coef) throw Error("device_cell_metric: the stored data of the general Laplacian only");
  std::int64_t n_cells = 1;
  for (int d = 0; d < v.dim; ++d) n_cells *= v.n_cells[d];
  cell_metric_kernel<Number><<<grid_for(n_cells * v.dim * 32, 256), 256>>>(v.dim, ipow(v.nq, v.dim), n_cells,
                                                                         v.cell_coef, metric);
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <typename Number>
std::vector<double> device_cell_metric(const OperatorView<Number>& v) {
  std::int64_t n_cells = 1;
  for (int d = 0; d < v.dim; ++d) n_cells *= v.n_cells[d];
  DeviceBuffer<double> metric(static_cast<std::size_t>(n_cells * v.dim));
  device_cell_metric_to<Number>(v, metric.data());
  std::vector<double> host(metric.size());
  TCFEM_CUDA_CHECK(cudaMemcpy(host.data(), metric.data(), host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  return host;
}

template void device_general_diagonal<double>(const OperatorView<double>&, const Grid&, const std::vector<double>&,
                                              double*);
template void device_general_diagonal<float>(const OperatorView<float>&, const Grid&, const std::vector<double>&,
                                             float*);
template std::vector<double> device_cell_metric<double>(const OperatorView<double>&);
template void device_cell_metric_to<double>(const OperatorView<double>&, double*);
#define TCFEM_CELL_METRIC_OF(dim, Number)                                                                         \
  template std::vector<double> device_cell_metric_of<dim, Number>(                                                 \
      const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&, const fe::Quadrature1D&, const setup::PointFunction&, \
      const std::array<setup::PointFunction, 3>&, Number*);
TCFEM_CELL_METRIC_OF(2, double)
TCFEM_CELL_METRIC_OF(3, double)
TCFEM_CELL_METRIC_OF(2, float)
TCFEM_CELL_METRIC_OF(3, float)
#undef TCFEM_CELL_METRIC_OF
template DeviceNodeGeometry<double> device_node_geometry<double, 2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                    const setup::PointFunction&,
                                                                    const std::array<setup::PointFunction, 3>&);
template DeviceNodeGeometry<float> device_node_geometry<float, 2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                  const setup::PointFunction&,
                                                                  const std::array<setup::PointFunction, 3>&);
template DeviceNodeGeometry<double> device_node_geometry<double, 3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                    const setup::PointFunction&,
                                                                    const std::array<setup::PointFunction, 3>&);
template DeviceNodeGeometry<float> device_node_geometry<float, 3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                  const setup::PointFunction&,
                                                                  const std::array<setup::PointFunction, 3>&);
template std::vector<double> device_cell_metric<float>(const OperatorView<float>&);
template void device_cell_metric_to<float>(const OperatorView<float>&, double*);

}  // namespace tcfem::operators
