#include "operators/device/device_points.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <utility>

#include "core/device.h"
#include "core/error.h"
#include "core/parallel.h"
#include "fe/lagrange.h"

namespace tcfem::operators::setup {

using generic::ipow;

namespace {

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
    for (int d = 0; d < g.dim; ++d, r /= g.nb) P[d * stride + t] = node_coordinate(g, gll, d, c[d], r % g.nb);
  }
}

template <typename Number>
__global__ void constrained_values(Grid g, std::int64_t n, Number value, Number* x) {
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n;
       t += std::int64_t(gridDim.x) * blockDim.x)
    if (constrained_node(g, t)) x[t] = value;
}

/// Quadrature data of a chunk of cells from the map's values at their Gauss-Lobatto nodes (X,
/// per component X[comp * xs + slot * nbc + i]): points xq, J^{-1} inv and jxw (det J times the
/// tensor weight), det J <= 0 reported in `bad` (the smallest such cell). The values and
/// derivatives of all components are interpolated together (interpolate_all: dim barriers a cell),
/// inlined with the sizes dim, nb, nq: its loops and index arithmetic are specialized to them.
template <int dim, int nb, int nq>
__global__ void __launch_bounds__(256) cell_points(const double* tables, std::int64_t first, std::int64_t m,
                                                   const double* X, std::int64_t xs, double* xq, double* jxw,
                                                   double* inv, std::int64_t qs, unsigned long long* bad) {
  extern __shared__ double smem[];
  const int nqc = ipow(nq, dim), nbc = ipow(nb, dim);
  const NodeInterpolation nodes(smem, tables, dim, nb, nq, dim);
  const double* w = nodes.w;
  for (std::int64_t slot = blockIdx.x; slot < m; slot += gridDim.x) {
    // the coordinates relative to the cell's first node: J rounded to the cell's size
    const double* r = nodes(X, xs, slot, true);
    for (int q = threadIdx.x; q < nqc; q += blockDim.x) {
      const std::int64_t at = slot * nqc + q;
      double J[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, R[3][3];
      for (int a = 0; a < dim; ++a) {
        xq[a * qs + at] = X[a * xs + slot * nbc] + r[(dim + 1) * a * nqc + q];
        for (int b = 0; b < dim; ++b) J[a][b] = r[((dim + 1) * a + 1 + b) * nqc + q];
      }
      const double det = invert(dim, J, R);
      if (!(det > 0.0)) atomicMin(bad, (unsigned long long)(first + slot));
      double weight = 1.0;
      for (int d = 0, rq = q; d < dim; ++d, rq /= nq) weight *= w[rq % nq];
      jxw[at] = det * weight;
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b) inv[(a * dim + b) * qs + at] = R[a][b];
    }
    __syncthreads();
  }
}

using CellPointsKernel = void (*)(const double*, std::int64_t, std::int64_t, const double*, std::int64_t, double*,
                                  double*, double*, std::int64_t, unsigned long long*);

/// [nb - 2][nq - nb] of one dimension: nb = 2..9 (k = 1..8) and nq = nb (the Gauss-Lobatto and
/// Gauss rules of k + 1 points) or nb + 1 (Gauss k + 2: BP3, and the error integrals).
template <int dim, int... I>
constexpr std::array<std::array<CellPointsKernel, 2>, 8> cell_points_table(std::integer_sequence<int, I...>) {
  return {{std::array<CellPointsKernel, 2>{&cell_points<dim, I + 2, I + 2>, &cell_points<dim, I + 2, I + 3>}...}};
}

/// The kernel of the grid's sizes.
CellPointsKernel cell_points_kernel(const Grid& g) {
  static const std::array<std::array<std::array<CellPointsKernel, 2>, 8>, 2> table{
      cell_points_table<2>(std::make_integer_sequence<int, 8>{}),
      cell_points_table<3>(std::make_integer_sequence<int, 8>{})};
  if ((g.dim != 2 && g.dim != 3) || g.nb < 2 || g.nb > 9 || (g.nq != g.nb && g.nq != g.nb + 1))
    throw Error("CellPoints: no kernel for dim " + std::to_string(g.dim) + ", " + std::to_string(g.nb) +
                " nodes and " + std::to_string(g.nq) + " points per direction");
  return table[g.dim - 2][g.nb - 2][g.nq - g.nb];
}

/// Threads of a cell_points block: the cell's points rounded up to warps, 64 to 256.
unsigned cell_points_threads(const Grid& g) {
  const int nqc = ipow(g.nq, g.dim);
  return unsigned(std::clamp((nqc + 31) / 32 * 32, 64, 256));
}

/// The quadrature data of Cartesian cells (the identity map: no node field, no interpolation):
/// points x = origin + (c + xi_q) h, jxw = w_q prod h_d, J^{-1} = diag(1 / h) (when inv is given).
__global__ void cartesian_points(Grid g, const double* points, const double* weights, std::int64_t first,
                                 std::int64_t m, double* xq, double* jxw, double* inv, std::int64_t qs) {
  const int dim = g.dim, nq = g.nq;
  const int nqc = ipow(nq, dim);
  double volume = 1.0;
  for (int d = 0; d < dim; ++d) volume *= g.h[d];
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < m * nqc;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    int c[3];
    cell_of(g, first + t / nqc, c);
    double weight = volume;
    for (int d = 0, r = int(t % nqc); d < dim; ++d, r /= nq) {
      xq[d * qs + t] = g.origin[d] + (double(c[d]) + points[r % nq]) * g.h[d];
      weight *= weights[r % nq];
    }
    jxw[t] = weight;
    if (inv)
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b) inv[(a * dim + b) * qs + t] = a == b ? 1.0 / g.h[a] : 0.0;
  }
}

/// The first i < n with v[i] <= 0 (or NaN) into bad.
__global__ void first_not_positive(const double* v, std::int64_t n, unsigned long long* bad) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    if (!(v[i] > 0.0)) atomicMin(bad, (unsigned long long)i);
}

std::string value_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

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

void PointFunction::evaluate(int dim, const double* points, std::size_t stride, std::size_t n, double* out,
                             bool positive, unsigned long long* slot) const {
  if (n == 0) return;
  if (slot && index >= 0) {  // a compiled function: the checks into the slot, no wait
    this->module->evaluate_async(index, points, stride, n, out, slot);
    if (positive) {
      first_not_positive<<<grid_for(std::int64_t(n), 256), 256>>>(out, std::int64_t(n), slot);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  auto point_of = [&](std::int64_t i) {
    double x[3] = {0, 0, 0};
    for (int d = 0; d < dim; ++d)
      TCFEM_CUDA_CHECK(cudaMemcpy(x + d, points + d * stride + i, sizeof(double), cudaMemcpyDeviceToHost));
    return std::array<double, 3>{x[0], x[1], x[2]};
  };
  auto refuse = [&](std::int64_t i) {
    double v = 0.0;
    TCFEM_CUDA_CHECK(cudaMemcpy(&v, out + i, sizeof(double), cudaMemcpyDeviceToHost));
    const auto x = point_of(i);
    throw InputError(name + ": the value is " + value_text(v) + " at the point " + point_text(x.data(), dim) +
                     (positive ? "; it must be positive and finite at every quadrature point" : ""));
  };
  if (index >= 0) {
    const std::int64_t bad = module->evaluate(index, points, stride, n, out);
    if (bad >= 0) refuse(bad);
  } else {
    std::vector<double> p(dim * stride), v(n);
    TCFEM_CUDA_CHECK(cudaMemcpy(p.data(), points, dim * stride * sizeof(double), cudaMemcpyDeviceToHost));
    parallel_chunks(0, n, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        double x[3] = {0, 0, 0};
        for (int d = 0; d < dim; ++d) x[d] = p[d * stride + i];
        v[i] = host(x);
        if (!std::isfinite(v[i]) || (positive && !(v[i] > 0.0)))
          throw InputError(name + ": the value is " + value_text(v[i]) + " at the point " + point_text(x, dim) +
                           (positive ? "; it must be positive and finite at every quadrature point" : ""));
      }
    }, host_threads(), 1024);
    TCFEM_CUDA_CHECK(cudaMemcpy(out, v.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    return;
  }
  if (positive) {
    DeviceBuffer<unsigned long long> bad(1);
    const unsigned long long none = std::numeric_limits<unsigned long long>::max();
    bad.copy_from_host(&none, 1);
    first_not_positive<<<grid_for(std::int64_t(n), 256), 256>>>(out, std::int64_t(n), bad.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    unsigned long long first = none;
    bad.copy_to_host(&first, 1);
    if (first != none) refuse(std::int64_t(first));
  }
}

PointFunction PointFunctionSet::add(const jit::DeviceSource& source, std::function<double(const double*)> host,
                                    std::string name) {
  PointFunction f;
  f.name = std::move(name);
  if (!source.empty()) {
    if (!prelude_.empty() && !source.prelude.empty() && prelude_ != source.prelude)
      throw Error("device setup: functions with different preludes in one module");
    if (!source.prelude.empty()) prelude_ = source.prelude;
    f.module = &functions_;
    f.index = functions_.add(source.expression, dim_);
    sources_.push_back(source.expression);
  } else {
    if (!host) throw Error("device setup: " + f.name + " has neither a device form nor a host function");
    f.host = std::move(host);
    any_host_ = true;
  }
  return f;
}

void PointFunctionSet::compile() {
  if (!sources_.empty()) functions_.compile(prelude_);
}

template <int dim>
std::array<PointFunction, dim> map_functions(const mesh::BoxMesh<dim>& mesh, PointFunctionSet& set) {
  std::array<PointFunction, dim> f;
  const auto& domain = mesh.domain();
  if (mesh.geometry() == mesh::GeometryKind::cartesian) return f;
  bool sources = true;
  std::array<jit::DeviceSource, dim> src;
  if (mesh.geometry() == mesh::GeometryKind::deformed) {
    // BoxMesh::map's built-in deformation, operation by operation
    const auto eps = mesh::BoxMesh<dim>::deformation_amplitudes();
    char pi[64];
    std::snprintf(pi, sizeof pi, "(%a)", std::numbers::pi);
    std::string phi = "(1.0";
    for (int e = 0; e < dim; ++e) phi = "(" + phi + " * sin(" + pi + " * x[" + std::to_string(e) + "]))";
    phi += ")";
    for (int d = 0; d < dim; ++d) {
      char a[64];
      std::snprintf(a, sizeof a, "(%a)", eps[d]);
      src[d].expression = "(x[" + std::to_string(d) + "] + " + a + " * " + phi + ")";
    }
  } else {
    src = domain.map_source;
    for (int d = 0; d < dim; ++d) sources &= !src[d].empty();
  }
  for (int d = 0; d < dim; ++d) {
    auto host = [&mesh, d](const double* X) {
      mesh::Point<dim> p;
      for (int e = 0; e < dim; ++e) p[e] = X[e];
      return mesh.map(p)[d];
    };
    f[d] = set.add(sources ? src[d] : jit::DeviceSource{}, host, "geometry map[" + std::to_string(d) + "]");
  }
  return f;
}

CellPoints::CellPoints(const Grid& grid, const fe::Quadrature1D& quad, std::array<PointFunction, 3> map,
                       bool identity, std::int64_t capacity, bool inverse)
    : g_(grid), map_(std::move(map)), identity_(identity), inverse_(inverse || !identity), capacity_(capacity) {
  const int dim = g_.dim;
  const std::int64_t nbc = ipow(g_.nb, dim), nqc = ipow(g_.nq, dim);
  stride_ = capacity_ * nqc;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(g_.k);
  std::vector<double> t = fe::basis_values(basis, quad.points).data;
  const auto D = fe::basis_derivatives(basis, quad.points).data;
  t.insert(t.end(), D.begin(), D.end());
  t.insert(t.end(), quad.weights.begin(), quad.weights.end());
  tables_ = DeviceBuffer<double>(t);
  gll_ = DeviceBuffer<double>(fe::gauss_lobatto(g_.k + 1).points);
  points_ = DeviceBuffer<double>(quad.points);
  if (!identity_) {
    P_.allocate(dim * capacity_ * nbc);
    X_.allocate(dim * capacity_ * nbc);
  }
  xq_.allocate(dim * stride_);
  jxw_.allocate(stride_);
  if (inverse_) inv_.allocate(dim * dim * stride_);
}

std::int64_t CellPoints::default_capacity(const Grid& g, std::int64_t n_cells) {
  const std::int64_t nqc = ipow(g.nq, g.dim);
  // larger chunks where the memory allows: fewer launches, shorter tails (the points, J^{-1},
  // the weights, the coefficient and a caller's values: at most about 24 doubles per point)
  std::size_t free = 0, total = 0;
  TCFEM_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::int64_t by_memory = std::int64_t(free / 16 / (24 * sizeof(double)));
  const std::int64_t points = std::clamp<std::int64_t>(by_memory, std::int64_t(1) << 22, std::int64_t(1) << 24);
  return std::min(n_cells, std::max<std::int64_t>(1, points / nqc));
}

ChunkChecks::ChunkChecks(std::int64_t n_chunks) : slots_(std::size_t(std::max<std::int64_t>(n_chunks, 1))) {
  TCFEM_CUDA_CHECK(cudaMemset(slots_.data(), 0xFF, slots_.size() * sizeof(unsigned long long)));
}

std::int64_t ChunkChecks::first_failed() const {
  const auto flags = slots_.to_host();
  const unsigned long long none = std::numeric_limits<unsigned long long>::max();
  for (std::size_t c = 0; c < flags.size(); ++c)
    if (flags[c] != none) return std::int64_t(c);
  return -1;
}

template <int dim>
void CellPoints::compute(const mesh::BoxMesh<dim>& mesh, std::int64_t first, std::int64_t m,
                         unsigned long long* slot) {
  if (m > capacity_) throw Error("CellPoints::compute: more cells than the capacity");
  const int nbc = ipow(g_.nb, dim), nqc = ipow(g_.nq, dim);
  if (identity_) {
    const double* weights = tables_.data() + 2 * g_.nq * g_.nb;
    cartesian_points<<<grid_for(m * nqc, 256), 256>>>(g_, points_.data(), weights, first, m, xq_.data(),
                                                       jxw_.data(), inverse_ ? inv_.data() : nullptr, stride_);
    TCFEM_CUDA_CHECK_LAUNCH();
    return;
  }
  const std::int64_t xs = capacity_ * nbc;
  node_points<<<grid_for(m * nbc, 256), 256>>>(g_, gll_.data(), first, m, P_.data(), xs);
  TCFEM_CUDA_CHECK_LAUNCH();
  for (int d = 0; d < dim; ++d) map_[d].evaluate(dim, P_.data(), xs, m * nbc, X_.data() + d * xs, false, slot);
  const unsigned long long none = std::numeric_limits<unsigned long long>::max();
  if (!slot) bad_.copy_from_host(&none, 1);
  const int smem = int(sizeof(double)) * NodeInterpolation::smem_doubles(dim, g_.nb, g_.nq, dim);
  const CellPointsKernel kernel = cell_points_kernel(g_);
  allow_shared(kernel, smem);
  kernel<<<grid_for(m, 1), cell_points_threads(g_), smem>>>(tables_.data(), first, m, X_.data(), xs, xq_.data(),
                                                            jxw_.data(), inv_.data(), stride_,
                                                            slot ? slot : bad_.data());
  TCFEM_CUDA_CHECK_LAUNCH();
  if (slot) return;
  unsigned long long cell = none;
  bad_.copy_to_host(&cell, 1);
  if (cell != none) {
    const auto ci = mesh.cell_index(std::size_t(cell));
    std::string name = "(";
    for (int d = 0; d < dim; ++d) name += (d ? "," : "") + std::to_string(ci[d]);
    throw InputError("mesh cell " + name + ") is inverted or degenerate (det J <= 0 at a quadrature point)");
  }
}

template <typename Number>
void set_constrained(const Grid& g, std::int64_t n, Number value, Number* x) {
  if (n == 0) return;
  constrained_values<Number><<<grid_for(n, 256), 256>>>(g, n, value, x);
  TCFEM_CUDA_CHECK_LAUNCH();
}

template void set_constrained<double>(const Grid&, std::int64_t, double, double*);
template void set_constrained<float>(const Grid&, std::int64_t, float, float*);
template Grid make_grid<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, int);
template Grid make_grid<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, int);
template std::array<PointFunction, 2> map_functions<2>(const mesh::BoxMesh<2>&, PointFunctionSet&);
template std::array<PointFunction, 3> map_functions<3>(const mesh::BoxMesh<3>&, PointFunctionSet&);
template void CellPoints::compute<2>(const mesh::BoxMesh<2>&, std::int64_t, std::int64_t, unsigned long long*);
template void CellPoints::compute<3>(const mesh::BoxMesh<3>&, std::int64_t, std::int64_t, unsigned long long*);

}  // namespace tcfem::operators::setup
