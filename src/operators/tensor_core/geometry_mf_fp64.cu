// The tensor-core cg Laplacian on any 2D or 3D geometry with the geometry recomputed from the node
// field (matrix-free), fp64: per cell the gradients of u and of the displacement's components at
// the quadrature points, J = J_1 + grad d (J_1 the multilinear cell's Jacobian from its vertices),
// the flux (a w / det J) adj(J) adj(J)^T grad u, and its transpose; every 1D contraction a batch of
// FP64 mma.sync (tensor/dmma_cell.cuh), the pointwise part on CUDA cores. The node field is the
// matrix-free form of the cuda-core family (operators/device/device_geometry.h:
// DeviceNodeGeometry): the vertices (double), the displacement from the multilinear cells at the
// Q_k nodes (or, cells of geometry order 2 below k, on the Q2 lattice, interpolated to the Q_k
// nodes at the gather), the coefficient at the nodes (BP5) or at the points (BP3). Multilinear
// cells (no displacement) take a kernel with u's field only.
//
// Per cell in shared memory: u's layout (the PA kernel's, TcCellLayout), then the displacement's
// components in the same layout ([cell][field]: the contractions of all fields of all cells are
// one batch of rows, as if each field were a cell of its own), and after every cell's fields the
// cells' edge vectors. One block holds `cells` cells (256 threads). Steps, a barrier between each two:
//   1. the cells' indices;
//   2. the gather of u (Dirichlet nodes read as 0, dst = src there), of the displacement, and the
//      edge vectors from the vertices;
//   3. the gradients of every field (BP5, collocated: G_e = D_e f; BP3: [B | D] per direction);
//   4. J, its adjugate and det J at every point, and the flux in place of u's gradient;
//   5. the transpose of u's flux;
//   6. the scatter: atomicAdd of each node's sum (Dirichlet rows left alone).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "arch/capability.h"
#include "fe/quadrature.h"
#include "operators/cuda_core/geometry_kernels.cuh"
#include "operators/quadratic_nodes.h"
#include "operators/tensor_core/geometry_block.cuh"
#include "operators/tensor_core/laplace.h"

namespace tcfem::operators::tensor_core {

namespace {

constexpr int tc_node_threads = tc_cell_threads;

/// Kernel parameters: the mesh, region and table fields (TcCellParams), the node field of the
/// cuda-core programs (cuda_core::NodeFieldParams: the vertices, the displacement at the Q_k
/// nodes, the coefficient at the nodes or the points, the points xi on [0, 1]), the displacement
/// on the Q2 lattice disp2[c * n_nodes2 + node2] (cells of geometry order 2), the weights w on
/// [0, 1], and phi2[i][a] the Q2 basis function i at the node a.
template <int k, int q>
struct TcNodeParams : TcCellParams<k, q>, cuda_core::NodeFieldParams<q, double> {
  static constexpr int n = k + 1;
  const double* disp2 = nullptr;
  std::int64_t n_nodes2 = 0;
  double w[q] = {};
  double phi2[3][n] = {};
};

__host__ __device__ constexpr int even(int v) { return (v + 1) / 2 * 2; }
/// Doubles of a field's region (u's: gradients, flux, transpose; a displacement component's: its
/// nodes and gradients, in the same layout so that the fields of the cells are rows of one batch).
template <int dim, int k, int q>
__host__ __device__ constexpr int tc_node_field_values() {
  return even(TcCellLayout<dim, k, q>::END);
}
/// Fields per cell: u, and the displacement's dim components (disp).
__host__ __device__ constexpr int tc_node_fields(int dim, bool disp) { return disp ? 1 + dim : 1; }
/// The edge vectors of a cell: 12 x 3 (3D), 4 x 2 (2D).
__host__ __device__ constexpr int tc_node_edges(int dim) { return dim == 3 ? 36 : 8; }
/// Doubles per cell: its fields and its edge vectors.
template <int dim, int k, int q, bool disp>
__host__ __device__ constexpr int tc_node_per_cell() {
  return tc_node_fields(dim, disp) * tc_node_field_values<dim, k, q>() + tc_node_edges(dim);
}
/// The largest block's shared memory (bytes) the kernels are built for.
constexpr int tc_node_max_smem = 227 * 1024;
/// Cells per block by default: the block's shared memory at most 56 KB (four blocks of 256 threads
/// per SM by shared memory), 1 to 16 cells in 3D, up to 64 in 2D (at most one point per thread);
/// 0 where one cell does not fit into a block (no kernel).
template <int dim, int k, int q, bool disp>
__host__ __device__ constexpr int tc_node_cells() {
  constexpr int per = tc_node_per_cell<dim, k, q, disp>();
  if ((tc_cell_header<k, q>(1) + per) * 8 > tc_node_max_smem) return 0;
  constexpr int c = 56 * 1024 / (8 * per);
  constexpr int per_thread = tc_node_threads / tc_cell_points<dim, q>();
  constexpr int cap = dim == 3 ? 16 : per_thread < 1 ? 1 : per_thread > 64 ? 64 : per_thread;
  return c < 1 ? 1 : c > cap ? cap : c;
}

/// Cells per block measured fastest where they differ from tc_node_cells (H200, the quarter annulus
/// at 3e7 DoFs, cells with a displacement; docs/performance.md, "Matrix-free geometry on FP64
/// tensor cores"); 0 elsewhere.
__host__ __device__ constexpr int tc_node_measured_cells(int dim, bool colloc, int k) {
  if (dim == 3) return colloc ? (k == 3 || k == 4 ? 4 : 0) : k == 2 ? 4 : k == 3 || k == 4 ? 2 : 0;
  return colloc ? (k == 8 ? 4 : 0) : k >= 7 ? 4 : 0;
}

/// J[c][j] = d x_c / d xi_j of the multilinear cell with edge vectors E at the point xi (t):
/// 3D E[(j * 4 + s) * 3 + c], s = o1 + 2 o2 the other two coordinates in increasing direction
/// order; 2D E[(j * 2 + s) * 2 + c], s the other coordinate.
template <int dim>
__device__ __forceinline__ void multilinear_jacobian(const double* E, const double* t, double (&J)[dim][dim]) {
  if constexpr (dim == 3) {
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const double t1 = t[j == 0 ? 1 : 0], t2 = t[j == 2 ? 1 : 2];
      const double w0 = (1 - t1) * (1 - t2), w1 = t1 * (1 - t2), w2 = (1 - t1) * t2, w3 = t1 * t2;
      const double* e = E + j * 12;
#pragma unroll
      for (int c = 0; c < 3; ++c) J[c][j] = w0 * e[c] + w1 * e[3 + c] + w2 * e[6 + c] + w3 * e[9 + c];
    }
  } else {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const double s = t[1 - j];
      const double* e = E + j * 4;
#pragma unroll
      for (int c = 0; c < 2; ++c) J[c][j] = (1 - s) * e[c] + s * e[2 + c];
    }
  }
}

template <int dim, int k, int q, bool disp>
__device__ __forceinline__ void tc_node_block(const TcNodeParams<k, q>& p, const double* __restrict__ src,
                                              double* __restrict__ dst) {
  constexpr int NP = k + 1, NPD = dim == 2 ? NP * NP : NP * NP * NP, Q = tc_cell_points<dim, q>();
  constexpr bool colloc = q == NP;
  using L = TcCellLayout<dim, k, q>;
  constexpr int FE = tc_node_field_values<dim, k, q>(), F = tc_node_fields(dim, disp), PER = F * FE;
  constexpr int NE = tc_node_edges(dim);
  extern __shared__ __align__(16) double smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  const TcBlock b = tc_block_start<dim, k, q>(p, smem);
  const int* info = b.info;
  double* cellmem = b.cellmem;
  double* edges = cellmem + p.cells * PER;  // NE per cell
  const auto node = [&](int c, int n, bool& bd) { return tc_cell_node<dim, k>(p, info, c, n, bd); };
  // the gather: u, the displacement's components (from the Q_k nodes, or interpolated from the
  // Q2 lattice), the edge vectors
  for (int i = tid; i < b.ncells * NPD; i += blockDim.x) {
    int c, n;
    const std::int64_t g = tc_gather_u<dim, k, q, PER>(p, b, i, src, dst, c, n);
    const int at = colloc ? L::point(n) : n;
    double* cm = cellmem + c * PER;
    if constexpr (disp) {
      if (p.disp2) {
        const int x = n % NP, y = (n / NP) % NP, z = dim == 3 ? n / (NP * NP) : 0;
        const std::int64_t lx = 2 * std::int64_t(p.n_cells[0]) + 1, ly = 2 * std::int64_t(p.n_cells[1]) + 1;
        const std::int64_t base =
            (2 * std::int64_t(dim == 3 ? info[4 * c + 2] : 0) * ly + 2 * std::int64_t(info[4 * c + 1])) * lx +
            2 * info[4 * c];
#pragma unroll
        for (int e = 0; e < dim; ++e) {
          const double* d2 = p.disp2 + e * p.n_nodes2 + base;
          double s = 0.0;
#pragma unroll
          for (int l = 0; l < (dim == 3 ? 3 : 1); ++l)
#pragma unroll
            for (int j = 0; j < 3; ++j) {
              const double* r = d2 + (l * ly + j) * lx;
              const double wz = dim == 3 ? p.phi2[l][z] : 1.0;
              s += wz * p.phi2[j][y] * (p.phi2[0][x] * r[0] + p.phi2[1][x] * r[1] + p.phi2[2][x] * r[2]);
            }
          cm[(1 + e) * FE + at] = s;
        }
        continue;
      }
#pragma unroll
      for (int e = 0; e < dim; ++e) cm[(1 + e) * FE + at] = p.disp[e * p.n_nodes + g];
    }
  }
  for (int i = tid; i < b.ncells * (NE / dim); i += blockDim.x) {
    const int c = i / (NE / dim), r = i - c * (NE / dim);
    int v0[3] = {0, 0, 0}, v1[3] = {0, 0, 0};
    if constexpr (dim == 3) {
      const int j = r / 4, s = r % 4, o1 = j == 0 ? 1 : 0, o2 = j == 2 ? 1 : 2;
      v1[j] = 1;
      v0[o1] = v1[o1] = s % 2;
      v0[o2] = v1[o2] = s / 2;
    } else {
      const int j = r / 2, s = r % 2;
      v1[j] = 1;
      v0[1 - j] = v1[1 - j] = s;
    }
    const std::int64_t nx = p.n_cells[0] + 1, ny = p.n_cells[1] + 1;
    const std::int64_t i0 = (std::int64_t(info[4 * c + 2] + v0[2]) * ny + info[4 * c + 1] + v0[1]) * nx + info[4 * c] + v0[0];
    const std::int64_t i1 = (std::int64_t(info[4 * c + 2] + v1[2]) * ny + info[4 * c + 1] + v1[1]) * nx + info[4 * c] + v1[0];
#pragma unroll
    for (int e = 0; e < dim; ++e)
      edges[c * NE + r * dim + e] = p.vertices[e * p.n_vertices + i1] - p.vertices[e * p.n_vertices + i0];
  }
  __syncthreads();
  // the gradients of u and of the displacement's components: every field of every cell a cell of
  // the layout (stride FE), one batch
  if constexpr (colloc)
    L::template gradients<FE>(b.D, cellmem, b.ncells * F, warp, warps, lane);
  else
    L::template gradients<FE>(b.B, b.D, cellmem, b.ncells * F, warp, warps, lane);
  __syncthreads();
  // J, its adjugate and det J at every point, the flux in place of u's gradient
  constexpr int OG = L::OG, SG = L::SQ;
  for (int i = tid; i < b.ncells * Q; i += blockDim.x) {
    const int c = i / Q, pt = i - c * Q;
    double* cm = cellmem + c * PER;
    double t[3];
    int ix[3];
    ix[0] = pt % q;
    ix[1] = (pt / q) % q;
    ix[2] = dim == 3 ? pt / (q * q) : 0;
#pragma unroll
    for (int d = 0; d < dim; ++d) t[d] = p.xi[ix[d]];
    double J[dim][dim];
    multilinear_jacobian<dim>(edges + c * NE, t, J);
    const int s = OG + L::point(pt);
    if constexpr (disp) {
#pragma unroll
      for (int e = 0; e < dim; ++e)
#pragma unroll
        for (int j = 0; j < dim; ++j) J[e][j] += cm[(1 + e) * FE + s + j * SG];
    }
    double weight = p.w[ix[0]] * p.w[ix[1]];
    if constexpr (dim == 3) weight *= p.w[ix[2]];
    if constexpr (colloc) {
      if (p.a_nodes) {
        bool bd;
        weight *= load_streaming(p.a_nodes + node(c, pt, bd));
      }
    } else {
      if (p.a_points) weight *= load_streaming(p.a_points + std::int64_t(info[4 * c + 3]) * Q + pt);
    }
    double u[dim];
#pragma unroll
    for (int e = 0; e < dim; ++e) u[e] = cm[s + e * SG];
    if constexpr (dim == 3)
      cuda_core::node_flux(J, weight, u);
    else
      cuda_core::node_flux2(J, weight, u);
#pragma unroll
    for (int e = 0; e < dim; ++e) cm[s + e * SG] = u[e];
  }
  tc_transpose_scatter<dim, k, q, PER>(p, b, dst);
}

/// The kernel of cells with (disp) or without a displacement; empty in the sm_80 cubin of a fat
/// binary and where one cell does not fit into a block (the operator refuses those).
template <int dim, int k, int q, bool disp>
__global__ void __launch_bounds__(tc_node_threads) tc_node_kernel(const __grid_constant__ TcNodeParams<k, q> p,
                                                                  const double* __restrict__ src,
                                                                  double* __restrict__ dst) {
  if constexpr (!arch::sm90_absent() && tc_node_cells<dim, k, q, disp>() > 0) tc_node_block<dim, k, q, disp>(p, src, dst);
}

/// The operator: memset of dst + one kernel (or the regions of a split apply); the node field and
/// the diagonal (formed from stored data for the time of its call) of
/// cuda_core::GeometryOperatorBase.
template <int dim, int k, int q>
class TensorCoreNodeGeometryOperator final
    : public cuda_core::GeometryOperatorBase<dim, TcNodeParams<k, q>, double> {
  using Base = cuda_core::GeometryOperatorBase<dim, TcNodeParams<k, q>, double>;

 public:
  TensorCoreNodeGeometryOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                 const DeviceKernelKey& key, const DeviceTuning& tuning,
                                 const Coefficient& coefficient, const jit::DeviceSource& coefficient_source)
      : Base(key, dofs.n_local()) {
    constexpr int n = k + 1, Q = tc_cell_points<dim, q>();
    const auto quad = fe::make_quadrature(key.quadrature, k);
    auto& p = this->params_;
    tc_fill_cell_params<dim, k, q>(p, mesh, dofs, quad);
    for (int i = 0; i < q; ++i) {
      p.xi[i] = quad.points[i];
      p.w[i] = quad.weights[i];
    }
    const auto nodes = fe::gauss_lobatto(n);
    for (int a = 0; a < n; ++a)
      for (int i = 0; i < 3; ++i) p.phi2[i][a] = quadratic_basis(i, nodes.points[a]);
    node_ = this->compute_nodes(mesh, dofs, key.quadrature, coefficient, coefficient_source);
    set_node_field(p, node_);
    const bool disp = p.disp || p.disp2;
    this->geometry_name_ = p.disp2  ? "quadratic nodes"
                           : p.disp ? "nodes"
                           : dim == 2 ? "bilinear vertices"
                                      : "trilinear vertices";
    this->keep_for_diagonal(mesh, dofs, coefficient, coefficient_source);
    const DeviceTuning t = cuda_core::checked_geometry_tuning(tuning);
    const int cells_max = disp ? tc_node_cells<dim, k, q, true>() : tc_node_cells<dim, k, q, false>();
    const int per_cell = disp ? tc_node_per_cell<dim, k, q, true>() : tc_node_per_cell<dim, k, q, false>();
    if (cells_max == 0)
      throw InputError("--variant tensor-core --geometry-form mf: one cell of degree " + std::to_string(k) +
                       " does not fit into a block's shared memory with these points (use --variant cuda-core)");
    // the tuning's count, at most what fits into the block's shared memory
    const int fit = std::max(1, (tc_node_max_smem / 8 - tc_cell_header<k, q>(64)) / per_cell);
    const int measured = disp ? tc_node_measured_cells(dim, q == n, k) : 0;
    p.cells = t.geometry_cells_per_block > 0 ? std::min({t.geometry_cells_per_block, fit, 64})
              : measured > 0               ? std::min(measured, fit)
                                           : cells_max;
    this->threads_ = tc_node_threads;
    this->blocks_ = (p.total_cells + p.cells - 1) / p.cells;
    this->smem_ = int(sizeof(double)) * (tc_cell_header<k, q>(p.cells) + p.cells * per_cell);
    this->kernel_ = disp ? tc_node_kernel<dim, k, q, true> : tc_node_kernel<dim, k, q, false>;
    this->program_ = q == n ? "tensor-core collocated" : "tensor-core";
    this->cells_per_block_ = p.cells;
    this->prepare_launch("tensor-core node-geometry kernel");
    using L = TcCellLayout<dim, k, q>;
    const double cells = double(p.total_cells), nodes_per_cell = dim == 2 ? n * n : n * n * n;
    // u's gradients and transpose (L::flops), the displacement's gradients (half of L::flops each),
    // and per point J (the multilinear part, the displacement's gradient added), adjugate and flux
    const double pointwise = dim == 3 ? cuda_core::node_flux_flops() + 27 + 2 + 9 : cuda_core::node_flux2_flops() + 12 + 2 + 4;
    this->flops_ = (L::flops() * (1.0 + (disp ? 0.5 * dim : 0.0)) + pointwise * Q) * cells;
    // shared values per cell: the contractions' inputs and outputs, the gradients read and the flux
    // written, gather and scatter (the displacement's gradients read once)
    this->shared_ = (L::shared_values() * (1.0 + (disp ? 0.5 * dim : 0.0)) + (2.0 * dim + (disp ? dim * dim : 0)) * Q +
                     (dim + 1.0 + (disp ? dim : 0)) * nodes_per_cell) *
                    cells * sizeof(double);
    this->dram_ = this->dram_model();
  }

 private:
  DeviceNodeGeometry<double> node_;
};

/// The operator of q points per direction.
template <int dim, int k, int q>
struct Build {
  static std::unique_ptr<DeviceOperator> make(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                              const DeviceKernelKey& key, const DeviceTuning& tuning,
                                              const Coefficient& coefficient, const jit::DeviceSource& source) {
    return std::make_unique<TensorCoreNodeGeometryOperator<dim, k, q>>(mesh, dofs, key, tuning, coefficient, source);
  }
};

}  // namespace

bool node_geometry_supported(const DeviceKernelKey& key) {
  return (key.dim == 2 || key.dim == 3) && key.disc == fe::Disc::cg && key.general_field &&
         key.geometry_form == GeometryForm::mf && key.precision == precision::Precision::fp64 && key.degree >= 1 &&
         key.degree <= 8 && (key.quadrature == fe::QuadratureKind::gll_k1 || key.quadrature == fe::QuadratureKind::gauss_k2);
}

template <int dim>
std::unique_ptr<DeviceOperator> make_node_geometry_operator(const mesh::BoxMesh<dim>& mesh,
                                                            const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                            const DeviceTuning& tuning, const Coefficient& coefficient,
                                                            const jit::DeviceSource& coefficient_source) {
  if (!node_geometry_supported(key) || key.dim != dim || dofs.degree() != key.degree || dofs.disc() != key.disc)
    return nullptr;
  if (!tc_one_process(mesh)) return nullptr;
  static const auto table = tc_factory_table<dim, Build>(std::make_integer_sequence<int, 8>{});
  const int row = key.quadrature == fe::QuadratureKind::gll_k1 ? 0 : 1;
  return table[row][key.degree - 1](mesh, dofs, key, tuning, coefficient, coefficient_source);
}

template std::unique_ptr<DeviceOperator> make_node_geometry_operator<2>(const mesh::BoxMesh<2>&,
                                                                        const fe::DofLayout<2>&,
                                                                        const DeviceKernelKey&, const DeviceTuning&,
                                                                        const Coefficient&, const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_node_geometry_operator<3>(const mesh::BoxMesh<3>&,
                                                                        const fe::DofLayout<3>&,
                                                                        const DeviceKernelKey&, const DeviceTuning&,
                                                                        const Coefficient&, const jit::DeviceSource&);

}  // namespace tcfem::operators::tensor_core
