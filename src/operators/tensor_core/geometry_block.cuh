#pragma once
// What the tensor-core cg kernels on general geometry share (geometry_fp64.cu: stored data;
// geometry_mf_fp64.cu: the geometry from the node field): the mesh and region parameters, the
// per-field layout, the block's start (the 1D tables and the cells' indices in shared memory), the
// node index of a cell's node, the transpose of u's flux with the atomic scatter, and the host's
// filling of the parameters and the one-process check. Includes CUDA headers: for .cu files only.
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/jit.h"
#include "fe/dirichlet_bits.h"
#include "fe/dof_layout.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "operators/cuda_core/geometry.h"
#include "operators/device/device_operator.h"
#include "tensor/dmma_cell.cuh"
#include "tensor/evaluator.h"

namespace tcfem::operators::tensor_core {

/// Threads per block of both kernels.
constexpr int tc_cell_threads = 256;

/// The mesh and region fields of the cuda-core programs (region_cell), the cells per block, and
/// the 1D tables B (q x n, the basis at the points; unused when collocated) and D (q x n, its
/// derivatives; collocated: the n x n collocation derivative), row-major.
template <int k, int q>
struct TcCellParams {
  static constexpr int n = k + 1;
  int n_cells[3] = {1, 1, 1};
  std::int64_t lattice[3] = {1, 1, 1};
  unsigned dirichlet = fe::all_dirichlet_bits;
  std::int64_t total_cells = 0;
  int region_lo[3] = {0, 0, 0};
  int region_n[3] = {0, 0, 0};
  int cells = 1;  ///< cells per block
  double B[q * n] = {};
  double D[q * n] = {};
};

/// The per-field layout of a (dim, k, q) triple: DmmaColloc2/3 (BP5) or DmmaCell2/3 with one field (BP3).
template <int dim, int k, int q>
using TcCellLayout =
    std::conditional_t<dim == 2,
                       std::conditional_t<q == k + 1, tensor::DmmaColloc2<k + 1>, tensor::DmmaCell2<k + 1, q>>,
                       std::conditional_t<q == k + 1, tensor::DmmaColloc3<k + 1>, tensor::DmmaCell3<k + 1, q, 1>>>;

template <int dim, int q>
__host__ __device__ constexpr int tc_cell_points() {
  return dim == 2 ? q * q : q * q * q;
}
/// Doubles before the cells: B and D, the cells' indices (four ints per cell), rounded to even.
template <int k, int q>
__host__ __device__ constexpr int tc_cell_header(int cells) {
  return (2 * q * (k + 1) + 2 * cells + 1) / 2 * 2;
}

/// The block's shared memory as the kernels lay it out: B, D, the cells' indices (c0, c1, c2,
/// linear index per cell), then the cells.
struct TcBlock {
  double* B;
  double* D;
  int* info;
  double* cellmem;
  std::int64_t first;  ///< the block's first cell (of the launch)
  int ncells;          ///< the block's cells
};

/// B and D to shared memory and the indices of the block's cells; a barrier after.
template <int dim, int k, int q, class Params>
__device__ __forceinline__ TcBlock tc_block_start(const Params& p, double* smem) {
  constexpr int NP = k + 1;
  TcBlock b;
  b.first = std::int64_t(blockIdx.x) * p.cells;
  b.ncells = int(p.total_cells - b.first < p.cells ? p.total_cells - b.first : p.cells);
  b.B = smem;
  b.D = b.B + q * NP;
  b.info = reinterpret_cast<int*>(b.D + q * NP);
  b.cellmem = smem + tc_cell_header<k, q>(p.cells);
  const int tid = threadIdx.x;
  for (int i = tid; i < q * NP; i += blockDim.x) {
    b.B[i] = p.B[i];
    b.D[i] = p.D[i];
  }
  if (tid < b.ncells) {
    int c[3] = {0, 0, 0};
    std::int64_t cell;
    cuda_core::region_cell<dim>(p, b.first + tid, c, cell);
    b.info[4 * tid] = c[0];
    b.info[4 * tid + 1] = c[1];
    b.info[4 * tid + 2] = c[2];
    b.info[4 * tid + 3] = int(cell);
  }
  __syncthreads();
  return b;
}

/// The lattice index of node n (lexicographic in the cell, x fastest) of the block's cell c; bd:
/// whether it lies on a constrained face.
template <int dim, int k, class Params>
__device__ __forceinline__ std::int64_t tc_cell_node(const Params& p, const int* info, int c, int n, bool& bd) {
  constexpr int NP = k + 1;
  const int x = n % NP, y = (n / NP) % NP;
  const std::int64_t px = std::int64_t(info[4 * c]) * k + x, py = std::int64_t(info[4 * c + 1]) * k + y;
  bd = fe::on_dirichlet_face(px, p.lattice[0], 0, p.dirichlet) || fe::on_dirichlet_face(py, p.lattice[1], 1, p.dirichlet);
  if constexpr (dim == 2) {
    return py * p.lattice[0] + px;
  } else {
    const std::int64_t pz = std::int64_t(info[4 * c + 2]) * k + n / (NP * NP);
    bd = bd || fe::on_dirichlet_face(pz, p.lattice[2], 2, p.dirichlet);
    return (pz * p.lattice[1] + py) * p.lattice[0] + px;
  }
}

/// Entry i of the block's gather (cell c = i / (k + 1)^dim, node n): u from src into the cell's
/// field at cellmem + c PER, 0 on constrained nodes (whose dst entries get src's); returns the
/// node's lattice index.
template <int dim, int k, int q, int PER, class Params>
__device__ __forceinline__ std::int64_t tc_gather_u(const Params& p, const TcBlock& b, int i,
                                                    const double* __restrict__ src, double* __restrict__ dst, int& c,
                                                    int& n) {
  using L = TcCellLayout<dim, k, q>;
  constexpr int NP = k + 1, NPD = dim == 2 ? NP * NP : NP * NP * NP;
  c = i / NPD;
  n = i - c * NPD;
  bool bd;
  const std::int64_t g = tc_cell_node<dim, k>(p, b.info, c, n, bd);
  const double v = src[g];
  if (bd) dst[g] = v;
  b.cellmem[c * PER + (q == NP ? L::point(n) : n)] = bd ? 0.0 : v;
  return g;
}

/// After a barrier, the transpose of the flux in place of u's gradient (cells at cellmem + c
/// PER), then each node's sum added to dst (Dirichlet rows left alone). A barrier before the
/// scatter, none after.
template <int dim, int k, int q, int PER, class Params>
__device__ __forceinline__ void tc_transpose_scatter(const Params& p, const TcBlock& b, double* __restrict__ dst) {
  using L = TcCellLayout<dim, k, q>;
  constexpr int NP = k + 1, NPD = dim == 2 ? NP * NP : NP * NP * NP;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if constexpr (q == NP)
    L::template divergence<PER>(b.D, b.cellmem, b.ncells, warp, warps, lane);
  else
    L::template divergence<PER, L::OG>(b.B, b.D, b.cellmem, b.ncells, warp, warps, lane);
  __syncthreads();
  for (int i = tid; i < b.ncells * NPD; i += blockDim.x) {
    const int c = i / NPD, n = i - c * NPD;
    bool bd;
    const std::int64_t g = tc_cell_node<dim, k>(p, b.info, c, n, bd);
    double v;
    if constexpr (q == NP) {
      const int s = c * PER + L::point(n);
      v = b.cellmem[s + L::transposed(0)] + b.cellmem[s + L::transposed(1)];
      if constexpr (dim == 3) v += b.cellmem[s + L::transposed(2)];
    } else {
      v = b.cellmem[c * PER + n];
    }
    if (!bd) atomicAdd(dst + g, v);
  }
}

/// The mesh fields, B and D (the Gauss-Lobatto basis of degree k at `quad`) and the constrained
/// faces of the parameters; InputError where the mesh has too many cells for the kernels' ints.
template <int dim, int k, int q>
void tc_fill_cell_params(TcCellParams<k, q>& p, const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                         const fe::Quadrature1D& quad) {
  constexpr int n = k + 1;
  TCFEM_ASSERT(quad.size() == q, "quadrature size of the tensor-core geometry kernels");
  const tensor::Evaluator<dim, double> ev(fe::LagrangeBasis1D::gauss_lobatto(k), quad);
  p.total_cells = 1;
  for (int d = 0; d < dim; ++d) {
    p.n_cells[d] = mesh.n_cells()[d];
    p.lattice[d] = std::int64_t(mesh.n_cells()[d]) * k + 1;
    p.total_cells *= mesh.n_cells()[d];
  }
  if (p.total_cells > std::int64_t(0x7fffffff)) throw InputError("tensor-core: the mesh has too many cells");
  for (int i = 0; i < q * n; ++i) {
    p.B[i] = ev.B()[i];
    p.D[i] = ev.Db()[i];
  }
  p.dirichlet = fe::dirichlet_bits(dofs.dirichlet_faces());
}

/// Whether one process owns the whole box (the kernels index the global lattice), as the cuda-core
/// programs require.
template <int dim>
bool tc_one_process(const mesh::BoxMesh<dim>& mesh) {
  return mesh.partition().owned.n_cells() == mesh.n_global_cells() &&
         mesh.partition().ghosted.n_cells() == mesh.n_global_cells();
}

/// The operators of one family by degree (k = 1..8) and quadrature (row 0 BP5, row 1 BP3):
/// Build<dim, k, q>::make constructs the operator of q points per direction.
template <int dim>
using TcFactory = std::unique_ptr<DeviceOperator> (*)(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                      const DeviceKernelKey&, const DeviceTuning&, const Coefficient&,
                                                      const jit::DeviceSource&);
template <int dim, template <int, int, int> class Build, int... K>
std::array<std::array<TcFactory<dim>, 8>, 2> tc_factory_table(std::integer_sequence<int, K...>) {
  std::array<std::array<TcFactory<dim>, 8>, 2> t{};
  ((t[0][K] = &Build<dim, K + 1, K + 2>::make), ...);
  ((t[1][K] = &Build<dim, K + 1, K + 3>::make), ...);
  return t;
}

}  // namespace tcfem::operators::tensor_core
