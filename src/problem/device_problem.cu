#include "problem/device_problem.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "core/hd.h"
#include "core/jit.h"
#include "core/parallel.h"
#include "fe/lagrange.h"
#include "operators/generic/kernels.h"

namespace tcfem::problem {

namespace {

using operators::generic::apply_1d;
using operators::generic::ipow;

/// Sizes of a chunk's cells.
struct Grid {
  int dim = 3, k = 1, nb = 2, nq = 2;  // 1D sizes
  int n_cells[3] = {1, 1, 1};
  double origin[3] = {0, 0, 0}, h[3] = {1, 1, 1};
  std::int64_t lattice[3] = {1, 1, 1};
  bool dg = false;
  bool dirichlet[6] = {false, false, false, false, false, false};
};

/// The cell and DoF numbering of the generic operator kernels (operators/generic/kernels.h).
__device__ inline operators::OperatorView<double> numbering(const Grid& g) {
  operators::OperatorView<double> v;
  v.dim = g.dim;
  v.nb = g.nb;
  v.dg = g.dg;
  for (int d = 0; d < 3; ++d) {
    v.n_cells[d] = g.n_cells[d];
    v.lattice[d] = g.lattice[d];
  }
  return v;
}

__device__ inline void cell_of(const Grid& g, std::int64_t cell, int* c) {
  operators::generic::cell_coords(numbering(g), cell, c);
}

/// Global index of local DoF i of cell c (one process owns every cell).
__device__ inline std::int64_t dof_of(const Grid& g, const int* c, int i) {
  bool boundary;
  return operators::generic::dof_index(numbering(g), c, i, boundary);
}

/// The tensor-product interpolation of the cell values `in` (nb per direction) to the quadrature
/// points (nq per direction), differentiated along direction e (e < 0: values): B in every
/// direction, D along e. The last direction writes `out`; t0 and t1 hold the intermediate steps.
__device__ inline void interpolate(const ThreadGroup& group, const double* B, const double* D, int nq, int nb,
                                   int dim, int e, const double* in, double* t0, double* t1, double* out) {
  int sizes[3] = {1, 1, 1};
  for (int d = 0; d < dim; ++d) sizes[d] = nb;
  const double* src = in;
  double* bufs[2] = {t0, t1};
  for (int d = 0; d < dim; ++d) {
    double* dst = d + 1 == dim ? out : bufs[d % 2];
    apply_1d<false, false>(group, d == e ? D : B, nq, nb, d, sizes, src, dst);
    sizes[d] = nq;
    src = dst;
  }
}

/// Parameter points of the Gauss-Lobatto nodes of cells first .. first + m - 1, the arithmetic of
/// mesh::MappedCellNodes: P[d * stride + cell_slot * nbc + i].
__global__ void node_points(Grid g, const double* gll, std::int64_t first, std::int64_t m, double* P,
                            std::int64_t stride) {
  const int nbc = ipow(g.nb, g.dim);
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < m * nbc;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t slot = t / nbc;
    int r = int(t % nbc);
    int c[3];
    cell_of(g, first + slot, c);
    for (int d = 0; d < g.dim; ++d) {
      const long p = long(c[d]) * g.k + r % g.nb;
      r /= g.nb;
      const long cell = min(p / g.k, long(g.n_cells[d] - 1));
      const int local = int(p - cell * g.k);
      P[d * stride + t] = g.origin[d] + (double(cell) + gll[local]) * g.h[d];
    }
  }
}

/// Per cell (one block each): the positions X (node coordinates, X[d * xs + slot * nbc + i]) give
/// the quadrature points xq and Jacobians; writes xq[d * qs + slot * nqc + q], jxw and J^{-1}
/// (inv[(a * dim + b) * qs + ...]); det J <= 0 records the cell in bad.
__global__ void cell_points(Grid g, const double* tables, std::int64_t first, std::int64_t m, const double* X,
                            std::int64_t xs, double* xq, double* jxw, double* inv, std::int64_t qs,
                            unsigned long long* bad) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim);
  double* B = smem;               // nq x nb
  double* D = B + nq * nb;        // nq x nb
  double* w = D + nq * nb;        // nq
  double* in = w + nq;            // nbc
  double* t0 = in + nbc;          // nqc
  double* t1 = t0 + nqc;          // nqc
  double* t2 = t1 + nqc;          // nqc
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < 2 * nq * nb + nq; i += blockDim.x) B[i] = tables[i];
  __syncthreads();
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    for (int comp = 0; comp < dim; ++comp) {
      for (int i = threadIdx.x; i < nbc; i += blockDim.x) in[i] = X[comp * xs + slot * nbc + i];
      __syncthreads();
      // value (e = -1) and the derivative along e
      for (int e = -1; e < dim; ++e) {
        interpolate(group, B, D, nq, nb, dim, e, in, t0, t1, t2);
        double* out = e < 0 ? xq + comp * qs : inv + (comp * dim + e) * qs;
        for (int q = threadIdx.x; q < nqc; q += blockDim.x) out[slot * nqc + q] = t2[q];
        __syncthreads();
      }
    }
    __syncthreads();
    for (int q = threadIdx.x; q < nqc; q += blockDim.x) {
      const std::int64_t at = slot * nqc + q;
      double J[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, R[3][3];
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b) J[a][b] = inv[(a * dim + b) * qs + at];
      double det;
      if (dim == 2) {
        det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
        R[0][0] = J[1][1] / det;
        R[0][1] = -J[0][1] / det;
        R[1][0] = -J[1][0] / det;
        R[1][1] = J[0][0] / det;
      } else {
        det = J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
              J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
        R[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) / det;
        R[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) / det;
        R[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) / det;
        R[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) / det;
        R[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) / det;
        R[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) / det;
        R[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) / det;
        R[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) / det;
        R[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) / det;
      }
      if (!(det > 0.0)) atomicMin(bad, (unsigned long long)(first + slot));
      double weight = 1.0;
      for (int d = 0, r = q; d < dim; ++d, r /= nq) weight *= w[r % nq];
      jxw[at] = det * weight;
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b) inv[(a * dim + b) * qs + at] = R[a][b];
    }
    __syncthreads();
  }
}

/// b += integral of v phi_i over each cell: v[slot * nqc + q] times jxw, integrated by B^T.
__global__ void integrate_cells(Grid g, const double* tables, std::int64_t first, std::int64_t m, const double* v,
                                const double* jxw, double scale, double* b) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim);
  double* B = smem;
  double* t0 = B + nq * nb;
  double* t1 = t0 + nqc;
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < nq * nb; i += blockDim.x) B[i] = tables[i];
  __syncthreads();
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    for (int q = threadIdx.x; q < nqc; q += blockDim.x) t0[q] = v[slot * nqc + q] * jxw[slot * nqc + q] * scale;
    __syncthreads();
    int sizes[3] = {1, 1, 1};
    for (int d = 0; d < dim; ++d) sizes[d] = nq;
    const double* src = t0;
    double* bufs[2] = {t1, t0};
    for (int d = 0; d < dim; ++d) {
      double* dst = bufs[d % 2];
      apply_1d<true, false>(group, B, nq, nb, d, sizes, src, dst);
      sizes[d] = nb;
      src = dst;
    }
    int c[3];
    cell_of(g, first + slot, c);
    for (int i = threadIdx.x; i < nbc; i += blockDim.x) {
      const std::int64_t idx = dof_of(g, c, i);
      if (g.dg)
        b[idx] += src[i];
      else
        atomicAdd(b + idx, src[i]);
    }
    __syncthreads();
  }
}

/// Error integrals of u against ue (values) and ge (gradient, ge[d * qs + ...]); sums[0] +=
/// ||u - ue||^2, sums[1] += ||grad u - ge||^2.
__global__ void error_cells(Grid g, const double* tables, std::int64_t first, std::int64_t m, const double* u,
                           const double* ue, const double* ge, const double* jxw, const double* inv, std::int64_t qs,
                           double* sums) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim);
  double* B = smem;
  double* D = B + nq * nb;
  double* in = D + nq * nb + nq;
  double* t0 = in + nbc;
  double* t1 = t0 + nqc;
  double* val = t1 + nqc;       // nqc
  double* grad = val + nqc;     // dim * nqc
  double* red = grad + 3 * nqc;  // 2 * blockDim.x
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < 2 * nq * nb + nq; i += blockDim.x) B[i] = tables[i];
  __syncthreads();
  double e0 = 0.0, e1 = 0.0;
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    int c[3];
    cell_of(g, first + slot, c);
    for (int i = threadIdx.x; i < nbc; i += blockDim.x) in[i] = u[dof_of(g, c, i)];
    __syncthreads();
    for (int e = -1; e < dim; ++e) interpolate(group, B, D, nq, nb, dim, e, in, t0, t1, e < 0 ? val : grad + e * nqc);
    for (int q = threadIdx.x; q < nqc; q += blockDim.x) {
      const std::int64_t at = slot * nqc + q;
      const double wq = jxw[at];
      const double diff = val[q] - ue[at];
      e0 += diff * diff * wq;
      for (int a = 0; a < dim; ++a) {
        double gh = 0.0;
        for (int b = 0; b < dim; ++b) gh += inv[(b * dim + a) * qs + at] * grad[b * nqc + q];
        const double dg = gh - ge[a * qs + at];
        e1 += dg * dg * wq;
      }
    }
    __syncthreads();
  }
  red[threadIdx.x] = e0;
  red[blockDim.x + threadIdx.x] = e1;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) {
      red[threadIdx.x] += red[threadIdx.x + s];
      red[blockDim.x + threadIdx.x] += red[blockDim.x + threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(sums, red[0]);
    atomicAdd(sums + 1, red[blockDim.x]);
  }
}

__global__ void scatter_local(Grid g, const std::int64_t* cells, std::int64_t n, const double* local, double* b,
                              bool set_constrained) {
  const int nbc = ipow(g.nb, g.dim);
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n * nbc;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    int c[3];
    cell_of(g, cells[t / nbc], c);
    const int i = int(t % nbc);
    const std::int64_t idx = dof_of(g, c, i);
    if (set_constrained) {
      if (local[t] == local[t]) b[idx] = local[t];  // NaN marks "not constrained"
    } else if (g.dg) {
      b[idx] += local[t];
    } else {
      atomicAdd(b + idx, local[t]);
    }
  }
}

__global__ void zero_dirichlet_nodes(Grid g, std::int64_t n, double* b) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r = t;
    bool constrained = false;
    for (int d = 0; d < g.dim; ++d) {
      const std::int64_t p = r % g.lattice[d];
      r /= g.lattice[d];
      constrained |= (p == 0 && g.dirichlet[2 * d]) || (p == g.lattice[d] - 1 && g.dirichlet[2 * d + 1]);
    }
    if (constrained) b[t] = 0.0;
  }
}

/// Allows `kernel` `bytes` of dynamic shared memory (beyond 48 KB at high degrees).
template <typename Kernel>
void allow_shared(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024)
    TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

unsigned grid_for(std::int64_t work, unsigned threads) {
  static const int sms = std::max(1, query_device().sm_count);
  return unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>((work + threads - 1) / threads, sms * 32)));
}

template <int dim>
Grid make_grid(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, int nq) {
  if (dofs.n_local() != dofs.n_dofs()) throw InputError("the device setup runs on meshes owned by one process");
  Grid g;
  g.dim = dim;
  g.k = dofs.degree();
  g.nb = g.k + 1;
  g.nq = nq;
  g.dg = dofs.disc() == fe::Disc::dg;
  const auto h = mesh.cell_size();
  for (int d = 0; d < dim; ++d) {
    g.n_cells[d] = mesh.n_cells()[d];
    g.origin[d] = mesh.origin()[d];
    g.h[d] = h[d];
    g.lattice[d] = std::int64_t(mesh.n_cells()[d]) * g.k + 1;
  }
  for (int f = 0; f < 2 * dim; ++f) g.dirichlet[f] = dofs.dirichlet_faces()[f];
  return g;
}

/// A scalar function for the device: a compiled expression, or a host function.
struct Source {
  int jit = -1;                                   // index in the module, or -1
  std::shared_ptr<const Expression> expression;   // for messages (compiled ones)
  std::function<double(const double*)> host;      // when not compiled
  std::string key;
};

}  // namespace

template <int dim>
struct DeviceProblem<dim>::Impl {
  const mesh::BoxMesh<dim>* mesh;
  const fe::DofLayout<dim>* dofs;
  jit::PointFunctions functions;
  bool identity_map = true;
  std::array<Source, dim> map;
  Source rhs, exact;
  std::array<Source, dim> gradient;  // given gradient components (jit < 0 and no host: numerical)
  bool gradient_given = false;
  bool have_exact = false;
  double scale = 1.0;  // 1 / c for a constant coefficient
  bool any_host = false, any_jit = false;

  Source compiled(std::shared_ptr<const Expression> e) {
    Source s;
    s.expression = e;
    s.key = e->key();
    s.jit = functions.add(e->source(ExpressionDialect::cuda), dim);
    any_jit = true;
    return s;
  }
  Source hosted(std::function<double(const double*)> f, std::string key) {
    Source s;
    s.host = std::move(f);
    s.key = std::move(key);
    any_host = true;
    return s;
  }

  /// out[i] = f(p_i) for n points (device arrays, stride); InputError naming the point when the
  /// value is not finite.
  void evaluate(const Source& s, const double* points, std::size_t stride, std::size_t n, double* out) const {
    if (s.jit >= 0) {
      const std::int64_t bad = functions.evaluate(s.jit, points, stride, n, out);
      if (bad >= 0) fail(s, points, stride, bad, out);
      return;
    }
    std::vector<double> p(dim * stride), v(n);
    TCFEM_CUDA_CHECK(cudaMemcpy(p.data(), points, dim * stride * sizeof(double), cudaMemcpyDeviceToHost));
    parallel_chunks(0, n, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        double x[3];
        for (int d = 0; d < dim; ++d) x[d] = p[d * stride + i];
        v[i] = s.host(x);
        if (!std::isfinite(v[i])) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%g", v[i]);
          throw InputError(s.key + ": the value is " + buf + " at the point " + point_text(x, dim));
        }
      }
    }, host_threads(), 1024);
    TCFEM_CUDA_CHECK(cudaMemcpy(out, v.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  }
  [[noreturn]] void fail(const Source& s, const double* points, std::size_t stride, std::int64_t i,
                         const double* out) const {
    double x[3] = {0, 0, 0}, v = 0;
    for (int d = 0; d < dim; ++d)
      TCFEM_CUDA_CHECK(cudaMemcpy(x + d, points + d * stride + i, sizeof(double), cudaMemcpyDeviceToHost));
    TCFEM_CUDA_CHECK(cudaMemcpy(&v, out + i, sizeof(double), cudaMemcpyDeviceToHost));
    throw s.expression->not_finite(v, x);
  }
  /// The gradient of the exact solution at the points: given components, or differences.
  void exact_gradient(const double* points, std::size_t stride, std::size_t n, double* out) const {
    if (gradient_given) {
      for (int d = 0; d < dim; ++d) evaluate(gradient[d], points, stride, n, out + d * stride);
      return;
    }
    if (exact.jit >= 0) {
      const std::int64_t bad = functions.gradient(exact.jit, points, stride, n, out);
      if (bad >= 0) {
        double x[3] = {0, 0, 0};
        for (int d = 0; d < dim; ++d)
          TCFEM_CUDA_CHECK(cudaMemcpy(x + d, points + d * stride + bad, sizeof(double), cudaMemcpyDeviceToHost));
        throw InputError(exact.key + ": its numerical gradient is not finite at the point " + point_text(x, dim));
      }
      return;
    }
    // host: the problem's gradient function (numerical or given as a callable)
    std::vector<double> p(dim * stride), v(dim * stride);
    TCFEM_CUDA_CHECK(cudaMemcpy(p.data(), points, dim * stride * sizeof(double), cudaMemcpyDeviceToHost));
    parallel_chunks(0, n, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        mesh::Point<dim> x;
        for (int d = 0; d < dim; ++d) x[d] = p[d * stride + i];
        const auto g = host_gradient(x);
        for (int d = 0; d < dim; ++d) v[d * stride + i] = g[d];
      }
    }, host_threads(), 1024);
    TCFEM_CUDA_CHECK(cudaMemcpy(out, v.data(), dim * stride * sizeof(double), cudaMemcpyHostToDevice));
  }
  std::function<mesh::Point<dim>(const mesh::Point<dim>&)> host_gradient;

  /// Quadrature data of cells [first, first + m): points, jxw and J^{-1} (device buffers).
  struct Chunk {
    /// The geometry buffers of `cells` cells (X only for a map); the value buffers are the caller's.
    Chunk(const Grid& g, std::int64_t cells, bool mapped) {
      const std::int64_t nbc = ipow(g.nb, dim), nqc = ipow(g.nq, dim);
      P.allocate(dim * cells * nbc);
      if (mapped) X.allocate(dim * cells * nbc);
      xq.allocate(dim * cells * nqc);
      jxw.allocate(cells * nqc);
      inv.allocate(dim * dim * cells * nqc);
    }
    DeviceBuffer<double> P, X, xq, jxw, inv, v, ue, ge;
  };
  std::int64_t chunk_cells(int nq) const {
    const std::int64_t nqc = ipow(nq, dim);
    return std::max<std::int64_t>(1, (std::int64_t(1) << 21) / nqc);
  }
  void geometry(const Grid& g, const DeviceBuffer<double>& tables, const DeviceBuffer<double>& gll,
                std::int64_t first, std::int64_t m, std::int64_t cap, Chunk& c,
                DeviceBuffer<unsigned long long>& bad) const {
    const int nbc = ipow(g.nb, dim), nqc = ipow(g.nq, dim);
    const std::int64_t xs = cap * nbc, qs = cap * nqc;
    node_points<<<grid_for(m * nbc, 256), 256>>>(g, gll.data(), first, m, c.P.data(), xs);
    TCFEM_CUDA_CHECK_LAUNCH();
    const double* X = c.P.data();
    if (!identity_map) {
      for (int d = 0; d < dim; ++d) evaluate(map[d], c.P.data(), xs, m * nbc, c.X.data() + d * xs);
      X = c.X.data();
    }
    const unsigned long long none = std::numeric_limits<unsigned long long>::max();
    bad.copy_from_host(&none, 1);
    const int smem = int(sizeof(double)) * (2 * g.nq * g.nb + g.nq + nbc + 3 * nqc);
    allow_shared(cell_points, smem);
    cell_points<<<grid_for(m, 1), 128, smem>>>(g, tables.data(), first, m, X, xs, c.xq.data(), c.jxw.data(),
                                               c.inv.data(), qs, bad.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    unsigned long long cell = none;
    bad.copy_to_host(&cell, 1);
    if (cell != none) {
      const auto ci = mesh->cell_index(std::size_t(cell));
      std::string name = "(";
      for (int d = 0; d < dim; ++d) name += (d ? "," : "") + std::to_string(ci[d]);
      throw InputError("mesh cell " + name + ") is inverted or degenerate (det J <= 0 at a quadrature point)");
    }
  }
};

namespace {
template <int dim>
std::string builtin_map_text(int d) {
  const auto eps = mesh::BoxMesh<dim>::deformation_amplitudes();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", eps[d]);
  static const char* names[3] = {"x", "y", "z"};
  std::string s = std::string(names[d]) + " + (" + buf + ")";
  for (int e = 0; e < dim; ++e) s += std::string("*sin(pi*") + names[e] + ")";
  return s;
}
template <int dim>
std::string builtin_product(int derivative) {
  static const char* names[3] = {"x", "y", "z"};
  std::string s;
  for (int e = 0; e < dim; ++e)
    s += std::string(e ? "*" : "") + (e == derivative ? "pi*cos(pi*" : "sin(pi*") + names[e] + ")";
  return s;
}
}  // namespace

template <int dim>
DeviceProblem<dim>::DeviceProblem(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                  const ProblemDefinition<dim>* problem)
    : impl_(std::make_unique<Impl>()) {
  require_device("--backend cuda");
  auto& m = *impl_;
  m.mesh = &mesh;
  m.dofs = &dofs;
  auto expression = [&](const std::string& key) -> std::shared_ptr<const Expression> {
    if (!problem) return nullptr;
    const auto it = problem->expressions.find(key);
    return it == problem->expressions.end() ? nullptr : it->second;
  };
  // the map
  m.identity_map = mesh.geometry() == mesh::GeometryKind::cartesian;
  if (mesh.geometry() == mesh::GeometryKind::deformed) {
    for (int d = 0; d < dim; ++d)
      m.map[d] = m.compiled(std::make_shared<const Expression>("deformation", builtin_map_text<dim>(d), dim));
  } else if (mesh.geometry() == mesh::GeometryKind::mapped) {
    bool all = true;
    for (int d = 0; d < dim; ++d) all &= expression("geometry.map[" + std::to_string(d) + "]") != nullptr;
    for (int d = 0; d < dim; ++d) {
      if (all) {
        m.map[d] = m.compiled(expression("geometry.map[" + std::to_string(d) + "]"));
      } else {
        const auto* domain = &mesh.domain();
        m.map[d] = m.hosted([domain, d](const double* X) {
          mesh::Point<dim> p;
          for (int e = 0; e < dim; ++e) p[e] = X[e];
          return domain->map(p)[d];
        }, "geometry map");
      }
    }
  }
  // f and the exact solution
  if (!problem) {
    const std::string u = builtin_product<dim>(-1);
    m.rhs = m.compiled(std::make_shared<const Expression>("rhs", std::to_string(dim) + "*pi^2*" + u, dim));
    m.exact = m.compiled(std::make_shared<const Expression>("exact", u, dim));
    for (int d = 0; d < dim; ++d)
      m.gradient[d] = m.compiled(std::make_shared<const Expression>("exact gradient", builtin_product<dim>(d), dim));
    m.gradient_given = true;
    m.have_exact = true;
  } else {
    m.scale = problem->coefficient ? 1.0 : 1.0 / problem->constant_coefficient;
    if (const auto e = expression("rhs"))
      m.rhs = m.compiled(e);
    else
      m.rhs = m.hosted([f = problem->rhs](const double* x) {
        mesh::Point<dim> p;
        for (int d = 0; d < dim; ++d) p[d] = x[d];
        return f(p);
      }, "rhs");
    m.have_exact = bool(problem->exact);
    if (m.have_exact) {
      if (const auto e = expression("exact"))
        m.exact = m.compiled(e);
      else
        m.exact = m.hosted([f = problem->exact](const double* x) {
          mesh::Point<dim> p;
          for (int d = 0; d < dim; ++d) p[d] = x[d];
          return f(p);
        }, "exact");
      m.host_gradient = problem->exact_gradient;
      bool given = problem->exact_gradient_given;
      for (int d = 0; d < dim && given; ++d) given = expression("exact_gradient[" + std::to_string(d) + "]") != nullptr;
      if (given) {
        for (int d = 0; d < dim; ++d) m.gradient[d] = m.compiled(expression("exact_gradient[" + std::to_string(d) + "]"));
        m.gradient_given = true;
      } else if (m.exact.jit < 0) {
        m.any_host = true;  // the gradient callable on the host
      }
    }
  }
  if (m.any_jit) m.functions.compile(Expression::device_prelude());
}

template <int dim>
DeviceProblem<dim>::~DeviceProblem() = default;

template <int dim>
bool DeviceProblem<dim>::has_exact() const {
  return impl_->have_exact;
}

template <int dim>
double DeviceProblem<dim>::compile_seconds() const {
  return impl_->functions.compile_seconds();
}

template <int dim>
std::string DeviceProblem<dim>::evaluation() const {
  const auto& m = *impl_;
  if (m.any_jit && m.any_host) return "compiled (NVRTC) and host threads";
  return m.any_host ? "host threads" : "compiled (NVRTC)";
}

namespace {
/// B (nq x nb), D (nq x nb) and the weights, on the device.
DeviceBuffer<double> make_tables(int k, const fe::Quadrature1D& quad) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  std::vector<double> t = fe::basis_values(basis, quad.points).data;
  const auto D = fe::basis_derivatives(basis, quad.points).data;
  t.insert(t.end(), D.begin(), D.end());
  t.insert(t.end(), quad.weights.begin(), quad.weights.end());
  return DeviceBuffer<double>(t);
}
}  // namespace

template <int dim>
void DeviceProblem<dim>::add_rhs_volume(double* b, const fe::Quadrature1D& quad) const {
  const auto& m = *impl_;
  const Grid g = make_grid(*m.mesh, *m.dofs, quad.size());
  const auto tables = make_tables(g.k, quad);
  const auto gll = DeviceBuffer<double>(fe::gauss_lobatto(g.k + 1).points);
  const std::int64_t n_cells = std::int64_t(m.mesh->n_owned_cells());
  const std::int64_t cap = std::min(n_cells, m.chunk_cells(g.nq));
  const int nqc = ipow(g.nq, dim);
  typename Impl::Chunk c(g, cap, !m.identity_map);
  c.v.allocate(cap * nqc);
  DeviceBuffer<unsigned long long> bad(1);
  for (std::int64_t first = 0; first < n_cells; first += cap) {
    const std::int64_t count = std::min(cap, n_cells - first);
    m.geometry(g, tables, gll, first, count, cap, c, bad);
    m.evaluate(m.rhs, c.xq.data(), cap * nqc, count * nqc, c.v.data());
    const int smem = int(sizeof(double)) * (g.nq * g.nb + 2 * nqc);
    allow_shared(integrate_cells, smem);
    integrate_cells<<<grid_for(count, 1), 128, smem>>>(
        g, tables.data(), first, count, c.v.data(), c.jxw.data(), m.scale, b);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
}

template <int dim>
Errors DeviceProblem<dim>::errors(const double* u) const {
  const auto& m = *impl_;
  if (!m.have_exact) throw Error("DeviceProblem::errors without an exact solution");
  const Grid g = make_grid(*m.mesh, *m.dofs, m.dofs->degree() + 2);
  const auto quad = fe::gauss(g.k + 2);
  const auto tables = make_tables(g.k, quad);
  const auto gll = DeviceBuffer<double>(fe::gauss_lobatto(g.k + 1).points);
  const std::int64_t n_cells = std::int64_t(m.mesh->n_owned_cells());
  const std::int64_t cap = std::min(n_cells, m.chunk_cells(g.nq));
  const int nbc = ipow(g.nb, dim), nqc = ipow(g.nq, dim);
  typename Impl::Chunk c(g, cap, !m.identity_map);
  c.ue.allocate(cap * nqc);
  c.ge.allocate(dim * cap * nqc);
  DeviceBuffer<unsigned long long> bad(1);
  DeviceBuffer<double> sums(2);
  TCFEM_CUDA_CHECK(cudaMemset(sums.data(), 0, 2 * sizeof(double)));
  const unsigned threads = 128;
  const int smem = int(sizeof(double)) * (2 * g.nq * g.nb + g.nq + nbc + 2 * nqc + nqc + 3 * nqc + 2 * threads);
  for (std::int64_t first = 0; first < n_cells; first += cap) {
    const std::int64_t count = std::min(cap, n_cells - first);
    m.geometry(g, tables, gll, first, count, cap, c, bad);
    m.evaluate(m.exact, c.xq.data(), cap * nqc, count * nqc, c.ue.data());
    m.exact_gradient(c.xq.data(), cap * nqc, count * nqc, c.ge.data());
    allow_shared(error_cells, smem);
    error_cells<<<grid_for(count, 1), threads, smem>>>(g, tables.data(), first, count, u, c.ue.data(), c.ge.data(),
                                                      c.jxw.data(), c.inv.data(), cap * nqc, sums.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  double s[2];
  sums.copy_to_host(s, 2);
  return {std::sqrt(std::max(0.0, s[0])), std::sqrt(std::max(0.0, s[1]))};
}

namespace {
template <int dim>
void scatter_cells(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                   const std::vector<std::size_t>& cells, const std::vector<double>& local, double* x,
                   bool set_constrained) {
  if (cells.empty() || local.empty()) return;  // nothing to add (dg: no lift)
  if (local.size() != cells.size() * dofs.dofs_per_cell())
    throw Error("device scatter of cell vectors: the local values do not match the cells");
  const Grid g = make_grid(mesh, dofs, dofs.degree() + 1);
  std::vector<std::int64_t> ids(cells.begin(), cells.end());
  const DeviceBuffer<std::int64_t> d_cells(ids);
  const DeviceBuffer<double> d_local(local);
  const std::int64_t n = std::int64_t(cells.size());
  scatter_local<<<grid_for(n * dofs.dofs_per_cell(), 256), 256>>>(g, d_cells.data(), n, d_local.data(), x,
                                                                  set_constrained);
  TCFEM_CUDA_CHECK_LAUNCH();
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the buffers go out of scope
}
}  // namespace

template <int dim>
void add_cell_vectors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                      const std::vector<std::size_t>& cells, const std::vector<double>& local, double* b) {
  scatter_cells<dim>(mesh, dofs, cells, local, b, false);
}

template <int dim>
void set_cell_values(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                     const std::vector<std::size_t>& cells, const std::vector<double>& local, double* x) {
  scatter_cells<dim>(mesh, dofs, cells, local, x, true);
}

template <int dim>
void zero_constrained(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, double* b) {
  if (dofs.disc() != fe::Disc::cg) return;
  const Grid g = make_grid(mesh, dofs, dofs.degree() + 1);
  const std::int64_t n = std::int64_t(dofs.n_local());
  zero_dirichlet_nodes<<<grid_for(n, 256), 256>>>(g, n, b);
  TCFEM_CUDA_CHECK_LAUNCH();
}

template class DeviceProblem<2>;
template class DeviceProblem<3>;
template void add_cell_vectors<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const std::vector<std::size_t>&,
                                  const std::vector<double>&, double*);
template void add_cell_vectors<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const std::vector<std::size_t>&,
                                  const std::vector<double>&, double*);
template void set_cell_values<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const std::vector<std::size_t>&,
                                 const std::vector<double>&, double*);
template void set_cell_values<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const std::vector<std::size_t>&,
                                 const std::vector<double>&, double*);
template void zero_constrained<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, double*);
template void zero_constrained<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, double*);

}  // namespace tcfem::problem
