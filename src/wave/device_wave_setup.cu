// The wave stepper's cell data computed on the device (wave/device_wave_setup.h). The node
// coordinates live on the pressure lattice (dim doubles per node); the pressure's mass is summed
// per lattice node over the cells that share it (no atomics: the same sum on every run), each
// cell's Jacobian at the node from the lattice lines through it; the velocity nodes' data come
// cell by cell from the nodes interpolated to the Gauss points (operators/device/device_points.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "fe/quadrature.h"
#include "operators/device/device_points.h"
#include "wave/device_wave_setup.h"

namespace tcfem::wave::detail {

namespace {

using operators::setup::determinant;
using operators::setup::NodeInterpolation;
using operators::setup::PointFunction;
using operators::setup::PointFunctionSet;

constexpr unsigned long long no_index = std::numeric_limits<unsigned long long>::max();

/// The pressure lattice and the 1D tables, by value into the kernels.
struct Lattice {
  int dim, k;
  int n_cells[3];
  long long extent[3];  // k n_d + 1 nodes per direction
  long long stride[3];
  long long n_p;
  double origin[3], h[3];
  double gll[9];    // the Gauss-Lobatto points on [0, 1]
  double wl[9];     // their weights
  double dgll[81];  // dgll[i (k + 1) + j]: the derivative of basis function j at point i
};

__device__ inline long long grid_stride_begin() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
__device__ inline long long grid_stride() { return (long long)gridDim.x * blockDim.x; }

/// P[d n_p + t]: the parameter point of lattice node t, with mesh::MappedCellNodes's arithmetic
/// (the node's cell on its right, the last cell for the last node), rounded operation by operation.
__global__ void lattice_parameters(Lattice L, double* P) {
  for (long long t = grid_stride_begin(); t < L.n_p; t += grid_stride())
    for (int d = 0; d < L.dim; ++d) {
      const long long p = (t / L.stride[d]) % L.extent[d];
      const long long cell = min(p / L.k, (long long)(L.n_cells[d] - 1));
      const int local = int(p - cell * L.k);
      P[d * L.n_p + t] = __dadd_rn(L.origin[d], __dmul_rn(__dadd_rn(double(cell), L.gll[local]), L.h[d]));
    }
}

/// mass[t] = sum over the cells at lattice node t of w det J / K (the lumped Gauss-Lobatto mass;
/// J from the derivative matrix along the cell's lattice lines through the node). A cell with
/// det J <= 0 at a node: its number times (k + 1)^dim plus the node's local index into *bad
/// (the smallest such).
__global__ void pressure_mass(Lattice L, const double* X, const double* Kn, double* mass, unsigned long long* bad) {
  const int dim = L.dim, k = L.k, nb = k + 1;
  for (long long t = grid_stride_begin(); t < L.n_p; t += grid_stride()) {
    long long p[3], cells[3][2];
    int local[3][2], options[3] = {1, 1, 1};
    for (int d = 0; d < dim; ++d) {
      p[d] = (t / L.stride[d]) % L.extent[d];
      int n = 0;
      if (p[d] < (long long)L.n_cells[d] * k) {
        cells[d][n] = p[d] / k;
        local[d][n++] = int(p[d] % k);
      }
      if (p[d] % k == 0 && p[d] > 0) {
        cells[d][n] = p[d] / k - 1;
        local[d][n++] = k;
      }
      options[d] = n;
    }
    const double inverse_k = 1.0 / Kn[t];
    double sum = 0.0;
    for (int m = 0; m < options[0] * options[1] * options[2]; ++m) {
      int sel[3] = {0, 0, 0};
      for (int d = 0, r = m; d < dim; ++d) {
        sel[d] = r % options[d];
        r /= options[d];
      }
      double J[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, w = 1.0;
      for (int e = 0; e < dim; ++e) {
        const int i = local[e][sel[e]];
        w *= L.wl[i];
        const long long line = t + (cells[e][sel[e]] * k - p[e]) * L.stride[e];  // the cell's first node on the line
        for (int d = 0; d < dim; ++d) {
          double v = 0.0;
          for (int j = 0; j < nb; ++j) v += L.dgll[i * nb + j] * X[d * L.n_p + line + j * L.stride[e]];
          J[d][e] = v;
        }
      }
      const double det = determinant(dim, J);
      if (!(det > 0)) {
        unsigned long long cell = 0, node = 0, cs = 1, ns = 1;
        for (int d = 0; d < dim; ++d) {
          cell += (unsigned long long)cells[d][sel[d]] * cs;
          node += (unsigned long long)local[d][sel[d]] * ns;
          cs *= (unsigned long long)L.n_cells[d];
          ns *= (unsigned long long)nb;
        }
        atomicMin(bad, cell * ns + node);
      }
      sum += w * det * inverse_k;
    }
    mass[t] = sum;
  }
}

/// The velocity nodes (Gauss points) of cells first .. first + m - 1: their coordinates into xq
/// ([d * stride + j nqc + q], j the chunk's cell), w det J into jxw ([j nqc + q]) and, where c is
/// not null, C = w det J J^-1 ([cell][e dim + d][q]). The cell's node coordinates are taken
/// relative to its first node (the derivatives rounded to the cell's size). det J <= 0: the
/// smallest j nqc + q into *bad.
template <typename Number>
__global__ void velocity_geometry(Lattice L, const double* tables, const double* X, long long first, long long m,
                                  Number* c, double* jxw, double* xq, long long stride, unsigned long long* bad) {
  extern __shared__ double smem[];
  const int dim = L.dim, nb = L.k + 1, nq = L.k;
  const NodeInterpolation ni(smem, tables, dim, nb, nq, dim);
  int nbc = 1, nqc = 1;
  for (int d = 0; d < dim; ++d) {
    nbc *= nb;
    nqc *= nq;
  }
  for (long long j = blockIdx.x; j < m; j += gridDim.x) {
    const long long cell = first + j;
    long long base = 0, r = cell;
    for (int d = 0; d < dim; ++d) {
      base += (r % L.n_cells[d]) * L.k * L.stride[d];
      r /= L.n_cells[d];
    }
    double x0[3] = {0, 0, 0};
    for (int d = 0; d < dim; ++d) x0[d] = X[d * L.n_p + base];
    for (int i = threadIdx.x; i < dim * nbc; i += blockDim.x) {
      const int comp = i / nbc;
      int l = i - comp * nbc;
      long long offset = 0;
      for (int d = 0; d < dim; ++d) {
        offset += (l % nb) * L.stride[d];
        l /= nb;
      }
      ni.buf_a[i] = X[comp * L.n_p + base + offset] - x0[comp];
    }
    __syncthreads();
    const double* v = operators::setup::interpolate_all(ni.B, ni.D, nq, nb, dim, dim, ni.buf_a, ni.buf_b);
    for (int q = threadIdx.x; q < nqc; q += blockDim.x) {
      double J[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, R[3][3];
      for (int d = 0; d < dim; ++d)
        for (int e = 0; e < dim; ++e) J[d][e] = v[((dim + 1) * d + 1 + e) * nqc + q];
      const double det = operators::setup::invert(dim, J, R);
      double w = 1.0;
      for (int d = 0, qi = q; d < dim; ++d, qi /= nq) w *= ni.w[qi % nq];
      if (!(det > 0)) atomicMin(bad, (unsigned long long)(j * nqc + q));
      const double wdet = w * det;
      if (c)
        for (int e = 0; e < dim; ++e)
          for (int d = 0; d < dim; ++d) c[(cell * dim * dim + e * dim + d) * nqc + q] = Number(wdet * R[e][d]);
      jxw[j * nqc + q] = wdet;
      for (int d = 0; d < dim; ++d) xq[d * stride + j * nqc + q] = x0[d] + v[(dim + 1) * d * nqc + q];
    }
    __syncthreads();
  }
}

/// s = 1 / (rho w det J) from n values starting at velocity node `first` (rho, jxw: the chunk's),
/// and 1 / rho where inv_rho is not null.
template <typename Number>
__global__ void velocity_mass(long long first, long long n, const double* rho, const double* jxw, Number* s,
                              double* inv_rho) {
  for (long long i = grid_stride_begin(); i < n; i += grid_stride()) {
    s[first + i] = Number(1.0 / (rho[i] * jxw[i]));
    if (inv_rho) inv_rho[first + i] = 1.0 / rho[i];
  }
}

/// u[((first + j) dim + d) nqc + q] = values[j nqc + q]: component d of the velocity at the chunk's nodes.
__global__ void scatter_velocity(long long first, long long n, int nqc, int dim, int d, const double* values, double* u) {
  for (long long i = grid_stride_begin(); i < n; i += grid_stride()) {
    const long long j = i / nqc, q = i - j * nqc;
    u[((first + j) * dim + d) * nqc + q] = values[i];
  }
}

/// target[nodes[i]] += values[i] (the nodes distinct).
__global__ void add_terms(long long n, const long long* nodes, const double* values, double* target) {
  for (long long i = grid_stride_begin(); i < n; i += grid_stride()) target[nodes[i]] += values[i];
}

__global__ void reciprocal(long long n, const double* in, double* out) {
  for (long long i = grid_stride_begin(); i < n; i += grid_stride()) out[i] = 1.0 / in[i];
}

/// out[i] = in[nodes[i]]
__global__ void gather(long long n, const long long* nodes, const double* in, double* out) {
  for (long long i = grid_stride_begin(); i < n; i += grid_stride()) out[i] = in[nodes[i]];
}

unsigned blocks_for(long long n) { return operators::setup::grid_for(n, 256); }

template <int dim>
[[noreturn]] void refuse_inverted(const WaveOperator<dim>& op, std::size_t cell, const double* x) {
  const auto ci = op.mesh().cell_index(cell);
  std::string name = "(";
  for (int d = 0; d < dim; ++d) name += std::to_string(ci[d]) + (d + 1 < dim ? ", " : ")");
  throw InputError("geometry: the map is inverted or degenerate (det J <= 0) in cell " + name + " at the point " +
                   point_text(x, dim));
}

unsigned long long read_index(const DeviceBuffer<unsigned long long>& bad) {
  unsigned long long v = no_index;
  bad.copy_to_host(&v, 1);
  return v;
}

/// A sorted list of node terms on the device (nodes and values).
struct DeviceTerms {
  DeviceBuffer<long long> nodes;
  DeviceBuffer<double> values;
  std::vector<long long> host_nodes;
  std::vector<double> host_values;
  explicit DeviceTerms(const std::vector<NodeTerm>& terms) {
    for (const auto& t : terms) {
      host_nodes.push_back(static_cast<long long>(t.node));
      host_values.push_back(t.value);
    }
    if (!terms.empty()) {
      nodes = DeviceBuffer<long long>(host_nodes);
      values = DeviceBuffer<double>(host_values);
    }
  }
  long long size() const { return static_cast<long long>(host_nodes.size()); }
  void add_to(double* target) const {
    if (size() == 0) return;
    add_terms<<<blocks_for(size()), 256>>>(size(), nodes.data(), values.data(), target);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
};

}  // namespace

template <int dim>
DeviceWaveData compute_device_wave_data(const WaveOperator<dim>& op, const DeviceWaveRequest& request, double* state) {
  const auto& problem = op.problem();
  const auto& mesh = op.mesh();
  const int k = op.degree(), nb = k + 1, nq = k;
  const long long n_p = static_cast<long long>(op.n_p()), n_cells = static_cast<long long>(op.n_cells());
  const long long n_u = static_cast<long long>(op.n_u()), nqc = op.points_per_cell();
  DeviceWaveData data;

  Lattice L{};
  L.dim = dim;
  L.k = k;
  L.n_p = n_p;
  const auto h = mesh.cell_size();
  const auto gll = fe::gauss_lobatto(nb);
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto dgll = fe::basis_derivatives(basis, basis.nodes());
  for (int d = 0; d < 3; ++d) {
    L.n_cells[d] = d < dim ? op.cells()[d] : 1;
    L.extent[d] = d < dim ? static_cast<long long>(k) * L.n_cells[d] + 1 : 1;
    L.stride[d] = d < dim ? static_cast<long long>(op.p_strides()[d]) : 0;
    L.origin[d] = d < dim ? mesh.origin()[d] : 0.0;
    L.h[d] = d < dim ? h[d] : 1.0;
  }
  for (int i = 0; i < nb; ++i) {
    L.gll[i] = gll.points[i];
    L.wl[i] = gll.weights[i];
    for (int j = 0; j < nb; ++j) L.dgll[i * nb + j] = dgll(i, j);
  }

  // the functions: the map, rho, K, the initial data (compiled together, or host callables)
  PointFunctionSet set(dim);
  const auto map = operators::setup::map_functions<dim>(mesh, set);
  const PointFunction rho = set.add(problem.rho_source, problem.rho, "rho");
  const PointFunction K = set.add(problem.K_source, problem.K, "K");
  PointFunction p0;
  std::array<PointFunction, dim> u0{};
  if (state) {
    if (problem.initial_p) p0 = set.add(problem.initial_p_source, problem.initial_p, "initial.p");
    for (int d = 0; d < dim; ++d)
      if (problem.initial_u[d])
        u0[d] = set.add(problem.initial_u_source[d], problem.initial_u[d], "initial.u[" + std::to_string(d) + "]");
  }
  set.compile();
  data.compile_seconds = set.compile_seconds();

  // the node coordinates on the lattice
  DeviceBuffer<double> X(dim * n_p);
  if (map[0].empty()) {
    lattice_parameters<<<blocks_for(n_p), 256>>>(L, X.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  } else {
    DeviceBuffer<double> P(dim * n_p);
    lattice_parameters<<<blocks_for(n_p), 256>>>(L, P.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    for (int d = 0; d < dim; ++d) map[d].evaluate(dim, P.data(), n_p, n_p, X.data() + d * n_p);
  }

  // the pressure's mass: the cells' w det J / K at the nodes, the free surface's terms
  DeviceBuffer<unsigned long long> bad(1);
  bad.copy_from_host(&no_index, 1);
  data.mass_p.allocate(n_p);
  {
    DeviceBuffer<double> Kn(n_p);
    K.evaluate(dim, X.data(), n_p, n_p, Kn.data(), true);
    pressure_mass<<<blocks_for(n_p), 256>>>(L, X.data(), Kn.data(), data.mass_p.data(), bad.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  if (const auto key = read_index(bad); key != no_index) {
    const long long npc = op.nodes_per_cell();
    const std::size_t cell = key / npc;
    const auto ci = mesh.cell_index(cell);
    long long t = 0;
    for (int d = 0, r = int(key % npc); d < dim; ++d, r /= nb) t += (static_cast<long long>(ci[d]) * k + r % nb) * L.stride[d];
    double x[3] = {0, 0, 0};
    for (int d = 0; d < dim; ++d) TCFEM_CUDA_CHECK(cudaMemcpy(x + d, X.data() + d * n_p + t, sizeof(double), cudaMemcpyDeviceToHost));
    refuse_inverted(op, cell, x);
  }
  const DeviceTerms surface(op.surface_mass_terms());
  surface.add_to(data.mass_p.data());
  data.inv_mass_p.allocate(n_p);
  reciprocal<<<blocks_for(n_p), 256>>>(n_p, data.mass_p.data(), data.inv_mass_p.data());
  TCFEM_CUDA_CHECK_LAUNCH();

  // the absorbing faces' largest rate absorbing / mass (the stepper applies their terms node by
  // node from the host's list)
  const DeviceTerms absorbing(op.absorbing_terms());
  if (absorbing.size() > 0) {
    DeviceBuffer<double> inv(absorbing.size());
    gather<<<blocks_for(absorbing.size()), 256>>>(absorbing.size(), absorbing.nodes.data(), data.inv_mass_p.data(), inv.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    std::vector<double> host(absorbing.size());
    inv.copy_to_host(host.data(), host.size());
    for (std::size_t i = 0; i < host.size(); ++i) data.damping = std::max(data.damping, absorbing.host_values[i] * host[i]);
  }

  // the initial pressure at the nodes
  if (state) {
    TCFEM_CUDA_CHECK(cudaMemset(state, 0, (n_u + n_p) * sizeof(double)));
    if (!p0.empty()) p0.evaluate(dim, X.data(), n_p, n_p, state + n_u);
  }

  // the velocity nodes, in chunks of cells
  const bool fp32 = request.fp32;
  if (fp32) {
    data.s32.allocate(n_cells * nqc);
    if (request.store_c) data.c32.allocate(n_cells * dim * dim * nqc);
  } else {
    data.s.allocate(n_cells * nqc);
    if (request.store_c) data.c.allocate(n_cells * dim * dim * nqc);
  }
  if (request.matrix_free) data.inv_rho.allocate(n_cells * nqc);
  const long long capacity = std::max<long long>(1, std::min<long long>(n_cells, (1LL << 22) / nqc));
  const long long stride = capacity * nqc;
  DeviceBuffer<double> xq(dim * stride), jxw(stride), values(stride);
  std::vector<double> tables(op.values().data);
  tables.insert(tables.end(), op.derivatives().data.begin(), op.derivatives().data.end());
  const auto gauss = fe::gauss(nq);
  tables.insert(tables.end(), gauss.weights.begin(), gauss.weights.end());
  const DeviceBuffer<double> table_buffer(tables);
  const int smem = static_cast<int>(sizeof(double)) * NodeInterpolation::smem_doubles(dim, nb, nq, dim);
  operators::setup::allow_shared(velocity_geometry<double>, smem);
  operators::setup::allow_shared(velocity_geometry<float>, smem);
  for (long long first = 0; first < n_cells; first += capacity) {
    const long long m = std::min(capacity, n_cells - first), n = m * nqc;
    const unsigned blocks = operators::setup::grid_for(m, 1);
    if (fp32)
      velocity_geometry<float><<<blocks, 128, smem>>>(L, table_buffer.data(), X.data(), first, m, data.c32.data(),
                                                      jxw.data(), xq.data(), stride, bad.data());
    else
      velocity_geometry<double><<<blocks, 128, smem>>>(L, table_buffer.data(), X.data(), first, m, data.c.data(),
                                                       jxw.data(), xq.data(), stride, bad.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    if (const auto key = read_index(bad); key != no_index) {
      double x[3] = {0, 0, 0};
      for (int d = 0; d < dim; ++d)
        TCFEM_CUDA_CHECK(cudaMemcpy(x + d, xq.data() + d * stride + key, sizeof(double), cudaMemcpyDeviceToHost));
      refuse_inverted(op, static_cast<std::size_t>(first + static_cast<long long>(key) / nqc), x);
    }
    rho.evaluate(dim, xq.data(), stride, n, values.data(), true);
    if (fp32)
      velocity_mass<float><<<blocks_for(n), 256>>>(first * nqc, n, values.data(), jxw.data(), data.s32.data(),
                                                   request.matrix_free ? data.inv_rho.data() : nullptr);
    else
      velocity_mass<double><<<blocks_for(n), 256>>>(first * nqc, n, values.data(), jxw.data(), data.s.data(),
                                                    request.matrix_free ? data.inv_rho.data() : nullptr);
    TCFEM_CUDA_CHECK_LAUNCH();
    for (int d = 0; d < dim; ++d) {
      if (u0[d].empty()) continue;
      u0[d].evaluate(dim, xq.data(), stride, n, values.data());
      scatter_velocity<<<blocks_for(n), 256>>>(first, n, static_cast<int>(nqc), dim, d, values.data(), state);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  if (request.matrix_free) data.nodes = std::move(X);
  return data;
}

template DeviceWaveData compute_device_wave_data<2>(const WaveOperator<2>&, const DeviceWaveRequest&, double*);
template DeviceWaveData compute_device_wave_data<3>(const WaveOperator<3>&, const DeviceWaveRequest&, double*);

}  // namespace tcfem::wave::detail
