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
#include "operators/device/device_operator.h"
#include "operators/device/device_points.h"

namespace tcfem::problem {

namespace {

using operators::generic::apply_1d;
using operators::generic::ipow;
using operators::setup::allow_shared;
using operators::setup::cell_of;
using operators::setup::dof_of;
using operators::setup::Grid;
using operators::setup::grid_for;
using operators::setup::make_grid;
using DeviceFunction = operators::setup::PointFunction;

/// b += integral of v phi_i over each cell: v[slot * nqc + q] times jxw (null: the tensor weights
/// of the tables, for Cartesian cells whose volume is in `scale`), integrated by B^T.
__global__ void integrate_cells(Grid g, const double* tables, std::int64_t first, std::int64_t m, const double* v,
                                const double* jxw, double scale, double* b) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim);
  double* B = smem;
  double* w = B + nq * nb;
  double* t0 = w + nq;
  double* t1 = t0 + nqc;
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < nq * nb; i += blockDim.x) B[i] = tables[i];
  for (int i = threadIdx.x; i < nq; i += blockDim.x) w[i] = tables[2 * nq * nb + i];
  __syncthreads();
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    for (int q = threadIdx.x; q < nqc; q += blockDim.x) {
      double weight = 1.0;
      if (jxw) {
        weight = jxw[slot * nqc + q];
      } else {
        for (int d = 0, r = q; d < dim; ++d, r /= nq) weight *= w[r % nq];
      }
      t0[q] = v[slot * nqc + q] * weight * scale;
    }
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
/// Cells outside `window` add nothing (a rank's owned cells in its ghosted box).
__global__ void error_cells(Grid g, const double* tables, std::int64_t first, std::int64_t m, const double* u,
                           const double* ue, const double* ge, const double* jxw, const double* inv, std::int64_t qs,
                           operators::CellRange window, double* sums) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq;
  const int nbc = ipow(nb, dim), nqc = ipow(nq, dim);
  double* B = smem;
  double* D = B + nq * nb;
  double* red = D + nq * nb + nq;   // 2 * blockDim.x
  double* buf_a = red + 2 * blockDim.x;
  double* buf_b = buf_a + operators::setup::interpolate_all_scratch(dim, nb, nq, 1).a;
  for (int i = threadIdx.x; i < 2 * nq * nb + nq; i += blockDim.x) B[i] = tables[i];
  __syncthreads();
  double e0 = 0.0, e1 = 0.0;
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    int c[3];
    cell_of(g, first + slot, c);
    bool inside = true;
    for (int d = 0; d < dim; ++d) inside = inside && c[d] >= window.lo[d] && c[d] < window.hi[d];
    if (!inside) continue;  // the same for every thread of the block
    for (int i = threadIdx.x; i < nbc; i += blockDim.x) buf_a[i] = u[dof_of(g, c, i)];
    __syncthreads();
    // the value at [0] and the derivative along b at [(1 + b) * nqc]
    const double* val = operators::setup::interpolate_all(B, D, nq, nb, dim, 1, buf_a, buf_b);
    const double* grad = val + nqc;
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

__global__ void scatter_local(Grid g, const std::int64_t* cells, std::int64_t n, const double* local, double* b) {
  const int nbc = ipow(g.nb, g.dim);
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n * nbc;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    int c[3];
    cell_of(g, cells[t / nbc], c);
    const int i = int(t % nbc);
    const std::int64_t idx = dof_of(g, c, i);
    if (g.dg) {
      b[idx] += local[t];
    } else {
      atomicAdd(b + idx, local[t]);
    }
  }
}


/// The nodes of Dirichlet face `face` of the cg lattice, j = 0 .. n-1 over the face's lattice (the
/// other directions, lexicographic): their parameter points X[e * stride + j] and their lattice
/// (DoF) numbers, -1 for nodes that lie on an earlier Dirichlet face, which gives their value (the
/// rule of the host's local_lift).
__global__ void dirichlet_face_nodes(Grid g, const double* gll, int face, std::int64_t n, double* X,
                                     std::int64_t stride, std::int64_t* index) {
  const int d = face / 2;
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t p[3] = {0, 0, 0}, r = j;
    for (int e = 0; e < g.dim; ++e) {
      if (e == d) {
        p[e] = face % 2 ? g.lattice[e] - 1 : 0;
      } else {
        p[e] = r % g.lattice[e];
        r /= g.lattice[e];
      }
    }
    bool earlier = false;
    for (int f = 0; f < face; ++f)
      earlier |= g.dirichlet[f] && p[f / 2] == (f % 2 ? g.lattice[f / 2] - 1 : 0);
    std::int64_t t = 0;
    for (int e = g.dim - 1; e >= 0; --e) t = t * g.lattice[e] + p[e];
    index[j] = earlier ? -1 : t;
    for (int e = 0; e < g.dim; ++e) X[e * stride + j] = node_coordinate(g, gll, e, int(p[e] / g.k), int(p[e] % g.k));
  }
}

/// Parameter points of the Gauss-Lobatto nodes of the n cells on box face `face` (cells j
/// lexicographic in the other directions, their face nodes i likewise): P[e * stride + j * nbf + i].
__global__ void boundary_face_nodes(Grid g, const double* gll, int face, std::int64_t n, double* P,
                                    std::int64_t stride) {
  const int d = face / 2, side = face % 2, nbf = ipow(g.nb, g.dim - 1);
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n * nbf;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r = t / nbf;
    int ri = int(t % nbf);
    for (int e = 0; e < g.dim; ++e) {
      int c, i;
      if (e == d) {
        c = side ? g.n_cells[e] - 1 : 0;
        i = side ? g.k : 0;
      } else {
        c = int(r % g.n_cells[e]);
        r /= g.n_cells[e];
        i = ri % g.nb;
        ri /= g.nb;
      }
      P[e * stride + t] = node_coordinate(g, gll, e, c, i);
    }
  }
}

/// Per boundary cell face (one block): the face points xf[c * fs + j * nf + q] and the surface
/// element times the weight, jw[j * nf + q] = |dx/ds_0 x dx/ds_1| w (2D: |dx/ds_0| w), from the
/// map's values X at the face nodes (X[c * xs + j * nbf + i]). tables: B, D (nq x nb), w (nq).
__global__ void boundary_face_points(Grid g, const double* tables, std::int64_t n, const double* X, std::int64_t xs,
                                     double* xf, double* jw, std::int64_t fs) {
  extern __shared__ double smem[];
  const int dim = g.dim, nq = g.nq, fd = dim - 1, nf = ipow(nq, fd);
  const operators::setup::NodeInterpolation nodes(smem, tables, fd, g.nb, nq, dim);
  const double* w = nodes.w;
  for (std::int64_t j = blockIdx.x; j < n; j += gridDim.x) {
    // field c's value at [dim c], its derivative along face direction a at [dim c + 1 + a]
    const double* r = nodes(X, xs, j);
    for (int q = threadIdx.x; q < nf; q += blockDim.x) {
      double t[2][3] = {{0, 0, 0}, {0, 0, 0}};
      for (int c = 0; c < dim; ++c) {
        xf[c * fs + j * nf + q] = r[dim * c * nf + q];
        for (int a = 0; a < fd; ++a) t[a][c] = r[(dim * c + 1 + a) * nf + q];
      }
      double area;
      if (dim == 2) {
        area = sqrt(t[0][0] * t[0][0] + t[0][1] * t[0][1]);
      } else {
        const double n0 = t[0][1] * t[1][2] - t[0][2] * t[1][1], n1 = t[0][2] * t[1][0] - t[0][0] * t[1][2],
                     n2 = t[0][0] * t[1][1] - t[0][1] * t[1][0];
        area = sqrt(n0 * n0 + n1 * n1 + n2 * n2);
      }
      double weight = 1.0;
      for (int a = 0, rq = q; a < fd; ++a, rq /= nq) weight *= w[rq % nq];
      jw[j * nf + q] = area * weight;
    }
    __syncthreads();
  }
}

/// Per boundary cell face (one block): b[idx(i)] += sum_q phi_i(q) h(q) jw(q) scale over the face
/// nodes i of the cell (B^T along the face directions), atomically (shared cg nodes).
__global__ void boundary_face_integrate(Grid g, const double* tables, int face, std::int64_t n, const double* h,
                                        const double* jw, double scale, double* b) {
  extern __shared__ double smem[];
  const int dim = g.dim, nb = g.nb, nq = g.nq, fd = dim - 1, d = face / 2, side = face % 2;
  const int nbf = ipow(nb, fd), nf = ipow(nq, fd), n_max = nq > nb ? nq : nb;
  double* B = smem;
  double* t0 = B + nq * nb;
  double* t1 = t0 + ipow(n_max, fd);
  const ThreadGroup group{int(threadIdx.x), int(blockDim.x)};
  for (int i = threadIdx.x; i < nq * nb; i += blockDim.x) B[i] = tables[i];
  __syncthreads();
  for (std::int64_t j = blockIdx.x; j < n; j += gridDim.x) {
    for (int q = threadIdx.x; q < nf; q += blockDim.x) t0[q] = h[j * nf + q] * jw[j * nf + q] * scale;
    __syncthreads();
    int sizes[3] = {nq, fd == 2 ? nq : 1, 1};
    double* in = t0;
    double* out = t1;
    for (int a = 0; a < fd; ++a) {
      apply_1d<true, false>(group, B, nq, nb, a, sizes, in, out);
      sizes[a] = nb;
      double* tmp = in;
      in = out;
      out = tmp;
    }
    // the cell and the cell-local index of face node i
    int c[3] = {0, 0, 0};
    std::int64_t r = j;
    for (int e = 0; e < dim; ++e) {
      if (e == d) {
        c[e] = side ? g.n_cells[e] - 1 : 0;
      } else {
        c[e] = int(r % g.n_cells[e]);
        r /= g.n_cells[e];
      }
    }
    for (int i = threadIdx.x; i < nbf; i += blockDim.x) {
      int local = 0, stride = 1, ri = i;
      for (int e = 0; e < dim; ++e, stride *= nb) {
        int li;
        if (e == d) {
          li = side ? nb - 1 : 0;
        } else {
          li = ri % nb;
          ri /= nb;
        }
        local += li * stride;
      }
      atomicAdd(b + dof_of(g, c, local), in[i]);
    }
    __syncthreads();
  }
}

/// x[index[j]] = value[j] where index[j] >= 0.
__global__ void set_indexed(std::int64_t n, const std::int64_t* index, const double* value, double* x) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x)
    if (index[j] >= 0) x[index[j]] = value[j];
}

__global__ void negate(std::int64_t n, double* x) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = -x[i];
}

}  // namespace

template <int dim>
struct DeviceProblem<dim>::Impl {
  const mesh::BoxMesh<dim>* mesh;
  const fe::DofLayout<dim>* dofs;
  operators::setup::PointFunctionSet functions{dim};
  std::array<DeviceFunction, 3> map;  // empty for Cartesian meshes
  DeviceFunction rhs, exact;
  std::array<DeviceFunction, dim> gradient;  // given gradient components
  bool gradient_given = false;
  bool have_exact = false;
  double scale = 1.0;  // 1 / c for a constant coefficient
  // errors(): the cells integrated (all by default) and the ranks summed over (null: none)
  operators::CellRange owned{{0, 0, 0}, {1 << 30, 1 << 30, 1 << 30}};
  Communicator comm_copy;
  const Communicator* comm = nullptr;
  std::function<mesh::Point<dim>(const mesh::Point<dim>&)> host_gradient;
  /// cg: g of each Dirichlet face (empty functions elsewhere), and after set_rhs_lift the
  /// lift's values at the nodes of each Dirichlet face with their DoF numbers (-1: skipped)
  std::array<DeviceFunction, 2 * dim> dirichlet;
  std::array<DeviceFunction, 2 * dim> neumann;  ///< h of each Neumann face (empty elsewhere)
  std::vector<DeviceBuffer<std::int64_t>> lift_index;
  std::vector<DeviceBuffer<double>> lift_value;

  /// The physical points of n parameter points P (P[e * stride + i]): P itself on Cartesian
  /// meshes, else the map's values, computed into X.
  const double* physical(const double* P, std::int64_t stride, std::int64_t n, DeviceBuffer<double>& X) const {
    if (map[0].empty()) return P;
    X.allocate(dim * stride);
    for (int d = 0; d < dim; ++d) map[d].evaluate(dim, P, stride, n, X.data() + d * stride);
    return X.data();
  }

  DeviceFunction function(std::shared_ptr<const Expression> e, std::function<double(const double*)> host,
                         const std::string& name) {
    if (e) return functions.add({e->source(ExpressionDialect::cuda), Expression::device_prelude()}, {}, e->key());
    return functions.add({}, std::move(host), name);
  }

  /// The gradient of the exact solution at the points: given components, or differences.
  /// `slot` (operators::setup::ChunkChecks): compiled functions flag it and do not wait.
  void exact_gradient(const double* points, std::size_t stride, std::size_t n, double* out,
                      unsigned long long* slot = nullptr) const {
    if (gradient_given) {
      for (int d = 0; d < dim; ++d) gradient[d].evaluate(dim, points, stride, n, out + d * stride, false, slot);
      return;
    }
    if (exact.index >= 0 && slot) {
      exact.module->gradient_async(exact.index, points, stride, n, out, slot);
      return;
    }
    if (exact.index >= 0) {
      const std::int64_t bad = exact.module->gradient(exact.index, points, stride, n, out);
      if (bad >= 0) {
        double x[3] = {0, 0, 0};
        for (int d = 0; d < dim; ++d)
          TCFEM_CUDA_CHECK(cudaMemcpy(x + d, points + d * stride + bad, sizeof(double), cudaMemcpyDeviceToHost));
        throw InputError(exact.name + ": its numerical gradient is not finite at the point " + point_text(x, dim));
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

  /// The quadrature points of chunks of cells for the rule `quad`.
  operators::setup::CellPoints points(const Grid& g, const fe::Quadrature1D& quad, bool inverse) const {
    const std::int64_t n_cells = std::int64_t(mesh->n_owned_cells());
    return operators::setup::CellPoints(g, quad, map, mesh->geometry() == mesh::GeometryKind::cartesian,
                                        operators::setup::CellPoints::default_capacity(g, n_cells), inverse);
  }
};

namespace {
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
  const auto map = operators::setup::map_functions<dim>(mesh, m.functions);
  for (int d = 0; d < dim; ++d) m.map[d] = map[d];
  auto callable = [](const problem::PointFunction<dim>& f) {
    return [f](const double* x) {
      mesh::Point<dim> p;
      for (int d = 0; d < dim; ++d) p[d] = x[d];
      return f(p);
    };
  };
  if (!problem) {
    const std::string u = builtin_product<dim>(-1);
    m.rhs = m.function(std::make_shared<const Expression>("rhs", std::to_string(dim) + "*pi^2*" + u, dim), {}, "rhs");
    m.exact = m.function(std::make_shared<const Expression>("exact", u, dim), {}, "exact");
    for (int d = 0; d < dim; ++d)
      m.gradient[d] =
          m.function(std::make_shared<const Expression>("exact gradient", builtin_product<dim>(d), dim), {}, "");
    m.gradient_given = true;
    m.have_exact = true;
  } else {
    m.scale = problem->coefficient ? 1.0 : 1.0 / problem->constant_coefficient;
    m.rhs = m.function(expression("rhs"), callable(problem->rhs), "rhs");
    m.have_exact = bool(problem->exact);
    if (m.have_exact) {
      m.exact = m.function(expression("exact"), callable(problem->exact), "exact");
      m.host_gradient = problem->exact_gradient;
      bool given = problem->exact_gradient_given;
      for (int d = 0; d < dim && given; ++d) given = expression("exact_gradient[" + std::to_string(d) + "]") != nullptr;
      if (given) {
        for (int d = 0; d < dim; ++d)
          m.gradient[d] = m.function(expression("exact_gradient[" + std::to_string(d) + "]"), {}, "");
        m.gradient_given = true;
      }
    }
  }
  if (problem)
    for (int f = 0; f < 2 * dim; ++f) {
      if (!problem->dirichlet_faces[f]) {
        const std::string key = "neumann." + problem->face_parts[f];
        m.neumann[f] = m.function(expression(key), callable(problem->boundary[f]), key);
      } else if (dofs.disc() == fe::Disc::cg) {
        const std::string key = "dirichlet." + problem->face_parts[f];
        m.dirichlet[f] = m.function(expression(key), callable(problem->boundary[f]), key);
      }
    }
  m.functions.compile();
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
  const auto& f = impl_->functions;
  const bool host = f.any_host() || (impl_->have_exact && !impl_->gradient_given && impl_->exact.index < 0);
  const std::string compiled = f.cached() ? "compiled (NVRTC, cached)" : "compiled (NVRTC)";
  if (f.any_compiled() && host) return compiled + " and host threads";
  return host ? "host threads" : compiled;
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
  const std::int64_t n_cells = std::int64_t(m.mesh->n_owned_cells());
  const int nqc = ipow(g.nq, dim);
  const int smem = int(sizeof(double)) * (g.nq * g.nb + g.nq + 2 * nqc);
  allow_shared(integrate_cells, smem);
  if (m.mesh->geometry() == mesh::GeometryKind::cartesian && m.rhs.index >= 0) {
    // Cartesian cells and a compiled f: the points computed where f is evaluated, the weights
    // and the cell volume applied where it is integrated (no point or JxW arrays)
    const std::int64_t cap = operators::setup::CellPoints::default_capacity(g, n_cells);
    const DeviceBuffer<double> points(quad.points);
    jit::PointFunctions::TensorPoints t;
    t.points = points.data();
    t.nq = g.nq;
    double volume = 1.0;
    for (int d = 0; d < dim; ++d) {
      t.n_cells[d] = g.n_cells[d];
      t.origin[d] = g.origin[d];
      t.h[d] = g.h[d];
      volume *= g.h[d];
    }
    DeviceBuffer<double> v(cap * nqc);
    operators::setup::for_each_chunk(n_cells, cap, [&](std::int64_t first, std::int64_t count,
                                                       unsigned long long* slot) {
      if (slot) {
        m.rhs.module->evaluate_tensor_async(m.rhs.index, t, first, std::size_t(count * nqc), v.data(), slot);
      } else if (const std::int64_t bad =
                     m.rhs.module->evaluate_tensor(m.rhs.index, t, first, std::size_t(count * nqc), v.data());
                 bad >= 0) {
        double value = 0.0, x[3] = {0, 0, 0};
        TCFEM_CUDA_CHECK(cudaMemcpy(&value, v.data() + bad, sizeof(double), cudaMemcpyDeviceToHost));
        const auto c = m.mesh->cell_index(std::size_t(first + bad / nqc));
        for (int d = 0, r = int(bad % nqc); d < dim; ++d, r /= g.nq)
          x[d] = g.origin[d] + (double(c[d]) + quad.points[r % g.nq]) * g.h[d];
        char text[32];
        std::snprintf(text, sizeof text, "%.6g", value);
        throw InputError(m.rhs.name + ": the value is " + text + " at the point " + point_text(x, dim));
      }
      integrate_cells<<<grid_for(count, 1), 128, smem>>>(g, tables.data(), first, count, v.data(), nullptr,
                                                         m.scale * volume, b);
      TCFEM_CUDA_CHECK_LAUNCH();
    });
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // v goes out of scope
    return;
  }
  auto points = m.points(g, quad, false);
  const std::int64_t cap = points.capacity();
  DeviceBuffer<double> v(cap * nqc);
  operators::setup::for_each_chunk(n_cells, cap, [&](std::int64_t first, std::int64_t count,
                                                     unsigned long long* slot) {
    points.compute(*m.mesh, first, count, slot);
    m.rhs.evaluate(dim, points.xq(), points.stride(), count * nqc, v.data(), false, slot);
    integrate_cells<<<grid_for(count, 1), 128, smem>>>(g, tables.data(), first, count, v.data(), points.jxw(),
                                                       m.scale, b);
    TCFEM_CUDA_CHECK_LAUNCH();
  });
}

template <int dim>
bool DeviceProblem<dim>::has_lift() const {
  for (const auto& g : impl_->dirichlet)
    if (!g.empty()) return true;
  return false;
}

template <int dim>
void DeviceProblem<dim>::set_rhs_lift(double* b, const operators::DeviceOperator& A,
                                      const operators::OperatorConfig& config) {
  auto& m = *impl_;
  if (!has_lift()) return;
  const std::int64_t n = std::int64_t(m.dofs->n_local());
  if (A.n_local() != std::size_t(n)) throw Error("DeviceProblem::set_rhs_lift: the operator's size differs");
  const Grid g = make_grid(*m.mesh, *m.dofs, m.dofs->degree() + 1);
  const DeviceBuffer<double> gll(fe::gauss_lobatto(g.k + 1).points);
  m.lift_index.clear();
  m.lift_value.clear();
  DeviceBuffer<double> lift(n);
  TCFEM_CUDA_CHECK(cudaMemset(lift.data(), 0, n * sizeof(double)));
  for (int f = 0; f < 2 * dim; ++f) {
    if (m.dirichlet[f].empty()) continue;
    std::int64_t nodes = 1;
    for (int e = 0; e < dim; ++e)
      if (e != f / 2) nodes *= g.lattice[e];
    DeviceBuffer<double> X(dim * nodes), x;
    DeviceBuffer<std::int64_t> index(nodes);
    DeviceBuffer<double> value(nodes);
    dirichlet_face_nodes<<<grid_for(nodes, 256), 256>>>(g, gll.data(), f, nodes, X.data(), nodes, index.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    m.dirichlet[f].evaluate(dim, m.physical(X.data(), nodes, nodes, x), nodes, nodes, value.data());
    set_indexed<<<grid_for(nodes, 256), 256>>>(nodes, index.data(), value.data(), lift.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // X and x go out of scope
    m.lift_index.push_back(std::move(index));
    m.lift_value.push_back(std::move(value));
  }
  // b = -A_u g_h: the constrained rows are zeroed by the caller (zero_constrained)
  std::unique_ptr<operators::DeviceOperator> twin;
  if (A.value_size() != sizeof(double) || !A.vmult_unconstrained(b, lift.data())) {
    operators::DeviceKernelKey key = A.key();
    key.variant = operators::Variant::generic;
    key.precision = precision::Precision::fp64;
    twin = operators::make_device_operator<dim>(*m.mesh, *m.dofs, key, {}, config.coefficient,
                                                config.coefficient_source);
    if (!twin->vmult_unconstrained(b, lift.data()))
      throw Error("DeviceProblem::set_rhs_lift: the generic operator has no unconstrained apply");
  }
  negate<<<grid_for(n, 256), 256>>>(n, b);
  TCFEM_CUDA_CHECK_LAUNCH();
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // lift goes out of scope
}

template <int dim>
void DeviceProblem<dim>::set_lift(double* x) const {
  const auto& m = *impl_;
  for (std::size_t i = 0; i < m.lift_index.size(); ++i) {
    const std::int64_t nodes = std::int64_t(m.lift_index[i].size());
    set_indexed<<<grid_for(nodes, 256), 256>>>(nodes, m.lift_index[i].data(), m.lift_value[i].data(), x);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
}

template <int dim>
void DeviceProblem<dim>::add_rhs_neumann(double* b, const fe::Quadrature1D& quad) const {
  const auto& m = *impl_;
  const Grid g = make_grid(*m.mesh, *m.dofs, quad.size());
  const DeviceBuffer<double> gll(fe::gauss_lobatto(g.k + 1).points);
  const auto tables = make_tables(g.k, quad);  // B, D, w
  const int nbf = ipow(g.nb, dim - 1), nf = ipow(g.nq, dim - 1), n_max = std::max(g.nq, g.nb);
  const int smem_points =
      int(sizeof(double)) * operators::setup::NodeInterpolation::smem_doubles(dim - 1, g.nb, g.nq, dim);
  const int smem_integrate = int(sizeof(double)) * (g.nq * g.nb + 2 * ipow(n_max, dim - 1));
  allow_shared(boundary_face_points, smem_points);
  allow_shared(boundary_face_integrate, smem_integrate);
  for (int f = 0; f < 2 * dim; ++f) {
    if (m.neumann[f].empty()) continue;
    std::int64_t n = 1;
    for (int e = 0; e < dim; ++e)
      if (e != f / 2) n *= g.n_cells[e];
    const std::int64_t xs = n * nbf, fs = n * nf;
    DeviceBuffer<double> P(dim * xs), X, xf(dim * fs), jw(fs), h(fs);
    boundary_face_nodes<<<grid_for(xs, 256), 256>>>(g, gll.data(), f, n, P.data(), xs);
    TCFEM_CUDA_CHECK_LAUNCH();
    const double* nodes = m.physical(P.data(), xs, xs, X);
    boundary_face_points<<<grid_for(n, 1), 128, smem_points>>>(g, tables.data(), n, nodes, xs, xf.data(),
                                                                jw.data(), fs);
    TCFEM_CUDA_CHECK_LAUNCH();
    m.neumann[f].evaluate(dim, xf.data(), fs, fs, h.data());
    boundary_face_integrate<<<grid_for(n, 1), 128, smem_integrate>>>(g, tables.data(), f, n, h.data(), jw.data(),
                                                                      m.scale, b);
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the face buffers go out of scope
  }
}

template <int dim>
Errors DeviceProblem<dim>::errors(const double* u) const {
  const auto& m = *impl_;
  if (!m.have_exact) throw Error("DeviceProblem::errors without an exact solution");
  const Grid g = make_grid(*m.mesh, *m.dofs, m.dofs->degree() + 2);
  const auto quad = fe::gauss(g.k + 2);
  const auto tables = make_tables(g.k, quad);
  const std::int64_t n_cells = std::int64_t(m.mesh->n_owned_cells());
  auto points = m.points(g, quad, true);
  const std::int64_t cap = points.capacity(), qs = points.stride();
  const int nbc = ipow(g.nb, dim), nqc = ipow(g.nq, dim);
  DeviceBuffer<double> ue(qs), ge(dim * qs), sums(2);
  TCFEM_CUDA_CHECK(cudaMemset(sums.data(), 0, 2 * sizeof(double)));
  const unsigned threads = 128;
  const int smem = int(sizeof(double)) * (2 * g.nq * g.nb + g.nq + 2 * threads +
                                          operators::setup::interpolate_all_scratch(dim, g.nb, g.nq, 1).total());
  allow_shared(error_cells, smem);
  operators::setup::for_each_chunk(n_cells, cap, [&](std::int64_t first, std::int64_t count,
                                                     unsigned long long* slot) {
    points.compute(*m.mesh, first, count, slot);
    m.exact.evaluate(dim, points.xq(), qs, count * nqc, ue.data(), false, slot);
    m.exact_gradient(points.xq(), qs, count * nqc, ge.data(), slot);
    error_cells<<<grid_for(count, 1), threads, smem>>>(g, tables.data(), first, count, u, ue.data(), ge.data(),
                                                      points.jxw(), points.inv(), qs, m.owned, sums.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  });
  double s[2];
  sums.copy_to_host(s, 2);
  if (m.comm) m.comm->sum(s, 2);
  return {std::sqrt(std::max(0.0, s[0])), std::sqrt(std::max(0.0, s[1]))};
}

template <int dim>
void DeviceProblem<dim>::set_owned_cells(const operators::CellRange& owned, const Communicator& comm) {
  impl_->owned = owned;
  impl_->comm_copy = comm;
  impl_->comm = &impl_->comm_copy;
}

template <int dim>
void add_cell_vectors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                      const std::vector<std::size_t>& cells, const std::vector<double>& local, double* b) {
  if (cells.empty() || local.empty()) return;  // nothing to add
  if (local.size() != cells.size() * dofs.dofs_per_cell())
    throw Error("add_cell_vectors: the local values do not match the cells");
  const Grid g = make_grid(mesh, dofs, dofs.degree() + 1);
  std::vector<std::int64_t> ids(cells.begin(), cells.end());
  const DeviceBuffer<std::int64_t> d_cells(ids);
  const DeviceBuffer<double> d_local(local);
  const std::int64_t n = std::int64_t(cells.size());
  scatter_local<<<grid_for(n * dofs.dofs_per_cell(), 256), 256>>>(g, d_cells.data(), n, d_local.data(), b);
  TCFEM_CUDA_CHECK_LAUNCH();
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the buffers go out of scope
}

template <int dim>
void zero_constrained(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, double* b) {
  if (dofs.disc() != fe::Disc::cg) return;
  const Grid g = make_grid(mesh, dofs, dofs.degree() + 1);
  operators::setup::set_constrained<double>(g, std::int64_t(dofs.n_local()), 0.0, b);
}

template class DeviceProblem<2>;
template class DeviceProblem<3>;
template void add_cell_vectors<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const std::vector<std::size_t>&,
                                  const std::vector<double>&, double*);
template void add_cell_vectors<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const std::vector<std::size_t>&,
                                  const std::vector<double>&, double*);
template void zero_constrained<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, double*);
template void zero_constrained<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, double*);

}  // namespace tcfem::problem
