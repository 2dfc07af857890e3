// The tensor-core cg Laplacian on any 2D or 3D geometry with stored geometry (partial assembly),
// fp64: per cell the gradient at the quadrature points, the flux C grad u with the stored
// C = a w |det J| J^{-1} J^{-T} (three values per point in 2D, six in 3D, the cuda-core family's
// data), and its transpose, every 1D contraction a batch of FP64 mma.sync (tensor/dmma_cell.cuh).
// The stored data is fp64, or rounded to fp32 (GeometryStorage::fp32: read into registers and
// widened; every operation in fp64).
//
// One block holds `cells` cells (about 256 threads). Steps, a barrier between each two:
//   1. the cells' indices; the stored data is requested (first used in step 4: in flight during
//      steps 2-3), into registers or, per degree, staged in shared memory (tc_geom_staged);
//   2. the gather of the nodes (Dirichlet nodes read as 0, dst = src there);
//   3. the gradients (BP5, collocated: G_e = D_e u; BP3: [B | D] per direction, DmmaCell2/3);
//   4. the flux in place of the gradient at every point;
//   5. the transpose (BP5: dim outputs summed at the scatter);
//   6. the scatter: atomicAdd of each node's sum (Dirichlet rows left alone).
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "arch/async_copy.h"
#include "arch/capability.h"
#include "operators/cuda_core/geometry_kernels.cuh"
#include "operators/tensor_core/geometry_block.cuh"
#include "operators/tensor_core/laplace.h"

namespace tcfem::operators::tensor_core {

namespace {

constexpr int tc_geom_threads = tc_cell_threads;

/// Kernel parameters: the mesh, region and table fields (TcCellParams), and the stored data
/// coef[cell][S][Q] (Q = q^dim points, S = dim (dim + 1) / 2 values per point,
/// operators/geometry_data.h: sym_index).
template <int k, int q>
struct TcGeomParams : TcCellParams<k, q> {
  const double* coef = nullptr;
  const float* coef_fp32 = nullptr;  ///< the stored data rounded to fp32 (GeometryStorage::fp32), else null
};

/// Where the stored data waits between its request and the flux: in shared memory (`staged`:
/// 16-byte asynchronous copies, arch/async_copy.h) or in registers (streaming loads). Measured on
/// the H200 (docs/performance.md, "Curved geometry on FP64 tensor cores"): shared memory for BP5
/// at k >= 6 in 3D, where the registers cost resident blocks; registers elsewhere (2D: three
/// values per point; fp32 data: half the registers, and its cells' data not 16-byte aligned).
template <int dim, int k, int q, typename Stored = double>
__host__ __device__ constexpr bool tc_geom_staged() {
  return dim == 3 && q == k + 1 && k >= 6 && std::is_same_v<Stored, double>;
}
/// Doubles of shared memory per cell: the layout's, then (staged) the stored data at an even offset.
template <int dim, int k, int q>
__host__ __device__ constexpr int tc_geom_stored_offset() {
  return (TcCellLayout<dim, k, q>::END + 1) / 2 * 2;
}
template <int dim, int k, int q, typename Stored = double>
__host__ __device__ constexpr int tc_geom_per_cell() {
  return tc_geom_staged<dim, k, q, Stored>()
             ? tc_geom_stored_offset<dim, k, q>() + n_sym<dim> * tc_cell_points<dim, q>()
             : TcCellLayout<dim, k, q>::END;
}
/// Cells per block (compile time: the registers of the stored data follow from it): the block's
/// shared memory at most 28 KB with the data in registers (eight blocks of 256 threads per SM by
/// shared memory) and 48 KB staged, 1 to 16 cells in 3D (measured on the H200: the fastest counts
/// were those with the most resident blocks, docs/performance.md), up to 64 in 2D (at most one
/// point per thread).
template <int dim, int k, int q, typename Stored = double>
__host__ __device__ constexpr int tc_geom_cells() {
  constexpr int c =
      (tc_geom_staged<dim, k, q, Stored>() ? 48 : 28) * 1024 / (8 * tc_geom_per_cell<dim, k, q, Stored>());
  constexpr int per_thread = tc_geom_threads / tc_cell_points<dim, q>();
  constexpr int cap = dim == 3 ? 16 : per_thread < 1 ? 1 : per_thread > 64 ? 64 : per_thread;
  return c < 1 ? 1 : c > cap ? cap : c;
}

template <int dim, int k, int q, typename Stored>
__device__ __forceinline__ void tc_geom_block(const TcGeomParams<k, q>& p, const double* __restrict__ src,
                                              double* __restrict__ dst) {
  constexpr int NP = k + 1, NPD = dim == 2 ? NP * NP : NP * NP * NP, Q = tc_cell_points<dim, q>();
  constexpr int NS = n_sym<dim>;
  constexpr bool colloc = q == NP;
  using L = TcCellLayout<dim, k, q>;
  constexpr int PER = tc_geom_per_cell<dim, k, q, Stored>();
  constexpr int PPT = (tc_geom_cells<dim, k, q, Stored>() * Q + tc_geom_threads - 1) / tc_geom_threads;  // per thread
  extern __shared__ __align__(16) double smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  const TcBlock b = tc_block_start<dim, k, q>(p, smem);
  const int* info = b.info;
  double* cellmem = b.cellmem;
  // the stored data, requested now and first used at the flux: its latency overlaps the gather
  // and the gradients. Staged: every cell's data into shared memory (OC + [NS][Q] per cell);
  // else each thread's points (i = tid + j blockDim) into registers, in the stored type.
  constexpr bool staged = tc_geom_staged<dim, k, q, Stored>();
  constexpr int OC = tc_geom_stored_offset<dim, k, q>();
  const Stored* coef;
  if constexpr (std::is_same_v<Stored, double>)
    coef = p.coef;
  else
    coef = p.coef_fp32;
  [[maybe_unused]] Stored C[staged ? 1 : PPT][NS];
  if constexpr (staged) {
    const arch::SharedArray<double> cs(cellmem);
    constexpr int chunks = NS * Q / 2;
    static_assert(NS * Q % 2 == 0, "16-byte copies of the stored data");
    for (int i = tid; i < b.ncells * chunks; i += blockDim.x) {
      const int c = i / chunks, r = i - c * chunks;
      arch::async_copy16(cs, c * PER + OC + 2 * r, coef + std::int64_t(info[4 * c + 3]) * (NS * Q) + 2 * r);
    }
    arch::async_commit();
  } else {
#pragma unroll
    for (int j = 0; j < PPT; ++j) {
      const int i = tid + j * tc_geom_threads;
      if (i < b.ncells * Q) {
        const int c = i / Q, pt = i - c * Q;
        const Stored* cc = coef + std::int64_t(info[4 * c + 3]) * (NS * Q) + pt;
#pragma unroll
        for (int e = 0; e < NS; ++e) C[j][e] = load_streaming(cc + e * Q);
      }
    }
  }
  for (int i = tid; i < b.ncells * NPD; i += blockDim.x) {
    int c, n;
    tc_gather_u<dim, k, q, PER>(p, b, i, src, dst, c, n);
  }
  __syncthreads();
  if constexpr (colloc)
    L::template gradients<PER>(b.D, cellmem, b.ncells, warp, warps, lane);
  else
    L::template gradients<PER>(b.B, b.D, cellmem, b.ncells, warp, warps, lane);
  // the flux at the points, in place of the gradient
  constexpr int OG = L::OG, SG = L::SQ;
  const auto flux = [&](int i, const auto& c_of) {
    const int c = i / Q, pt = i - c * Q, s = c * PER + OG + L::point(pt);
    if constexpr (dim == 2) {
      const double u0 = cellmem[s], u1 = cellmem[s + SG];
      cellmem[s] = c_of(c, pt, 0) * u0 + c_of(c, pt, 1) * u1;
      cellmem[s + SG] = c_of(c, pt, 1) * u0 + c_of(c, pt, 2) * u1;
    } else {
      const double u0 = cellmem[s], u1 = cellmem[s + SG], u2 = cellmem[s + 2 * SG];
      cellmem[s] = c_of(c, pt, 0) * u0 + c_of(c, pt, 1) * u1 + c_of(c, pt, 2) * u2;
      cellmem[s + SG] = c_of(c, pt, 1) * u0 + c_of(c, pt, 3) * u1 + c_of(c, pt, 4) * u2;
      cellmem[s + 2 * SG] = c_of(c, pt, 2) * u0 + c_of(c, pt, 4) * u1 + c_of(c, pt, 5) * u2;
    }
  };
  if constexpr (staged) {
    arch::async_wait<0>();
    __syncthreads();
    for (int i = tid; i < b.ncells * Q; i += blockDim.x)
      flux(i, [&](int c, int pt, int e) { return cellmem[c * PER + OC + e * Q + pt]; });
  } else {
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PPT; ++j) {
      const int i = tid + j * tc_geom_threads;
      if (i < b.ncells * Q) flux(i, [&](int, int, int e) { return double(C[j][e]); });
    }
  }
  tc_transpose_scatter<dim, k, q, PER>(p, b, dst);
}

/// The kernel; the sm_80 cubin of a fat binary carries an empty one (the operator runs only on
/// GPUs with the sm_90 FP64 shapes).
template <int dim, int k, int q, typename Stored>
__global__ void __launch_bounds__(tc_geom_threads) tc_geom_kernel(const __grid_constant__ TcGeomParams<k, q> p,
                                                                  const double* __restrict__ src,
                                                                  double* __restrict__ dst) {
  if constexpr (!arch::sm90_absent()) tc_geom_block<dim, k, q, Stored>(p, src, dst);
}

/// The operator: memset of dst + one kernel (or the regions of a split apply); the stored data
/// (fp64, or rounded to fp32 for GeometryStorage::fp32) and the diagonal of
/// cuda_core::GeometryOperatorBase.
template <int dim, int k, int q, typename Stored>
class TensorCoreGeometryOperator final
    : public cuda_core::GeometryOperatorBase<dim, TcGeomParams<k, q>, double> {
  using Base = cuda_core::GeometryOperatorBase<dim, TcGeomParams<k, q>, double>;

 public:
  TensorCoreGeometryOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                             const DeviceTuning& tuning, const Coefficient& coefficient,
                             const jit::DeviceSource& coefficient_source)
      : Base(key, dofs.n_local()) {
    constexpr int n = k + 1, Q = tc_cell_points<dim, q>();
    auto& p = this->params_;
    tc_fill_cell_params<dim, k, q>(p, mesh, dofs, fe::make_quadrature(key.quadrature, k));
    if constexpr (std::is_same_v<Stored, double>)
      p.coef = this->compute_stored(mesh, dofs, key.quadrature, coefficient, coefficient_source);
    else
      p.coef_fp32 = this->compute_stored_fp32(mesh, dofs, key.quadrature, coefficient, coefficient_source);
    const DeviceTuning t = cuda_core::checked_geometry_tuning(tuning);
    // the tuning's count capped at the kernel's (the registers of the stored data are sized for it)
    constexpr int cells_max = tc_geom_cells<dim, k, q, Stored>();
    p.cells = t.geometry_cells_per_block > 0 ? std::min(t.geometry_cells_per_block, cells_max) : cells_max;
    this->threads_ = tc_geom_threads;
    this->blocks_ = (p.total_cells + p.cells - 1) / p.cells;
    this->smem_ =
        int(sizeof(double)) * (tc_cell_header<k, q>(p.cells) + p.cells * tc_geom_per_cell<dim, k, q, Stored>());
    this->kernel_ = tc_geom_kernel<dim, k, q, Stored>;
    this->program_ = q == n ? "tensor-core collocated" : "tensor-core";
    this->cells_per_block_ = p.cells;
    this->prepare_launch("tensor-core general-geometry kernel");
    using L = TcCellLayout<dim, k, q>;
    const double cells = double(p.total_cells), nodes = dim == 2 ? n * n : n * n * n;
    // the flux: dim^2 products and dim (dim - 1) sums per point
    this->flops_ = (L::flops() + (2.0 * dim * dim - dim) * Q) * cells;
    // shared values per cell: the contractions' inputs and outputs, the gradients read and the flux
    // written, gather and scatter
    this->shared_ = (L::shared_values() + 2.0 * dim * Q + (dim + 1.0) * nodes) * cells * sizeof(double);
    this->dram_ = this->dram_model();
  }
};

/// The operator of q points per direction (fp32 stored data where the key asks for it).
template <int dim, int k, int q>
struct Build {
  static std::unique_ptr<DeviceOperator> make(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                              const DeviceKernelKey& key, const DeviceTuning& tuning,
                                              const Coefficient& coefficient, const jit::DeviceSource& source) {
    if (fp32_stored_fp64(key))
      return std::make_unique<TensorCoreGeometryOperator<dim, k, q, float>>(mesh, dofs, key, tuning, coefficient, source);
    return std::make_unique<TensorCoreGeometryOperator<dim, k, q, double>>(mesh, dofs, key, tuning, coefficient, source);
  }
};

}  // namespace

bool geometry_supported(const DeviceKernelKey& key) {
  return (key.dim == 2 || key.dim == 3) && key.disc == fe::Disc::cg && key.general_field && key.geometry_form != GeometryForm::mf &&
         key.precision == precision::Precision::fp64 && key.degree >= 1 && key.degree <= 8 &&
         (key.quadrature == fe::QuadratureKind::gll_k1 || key.quadrature == fe::QuadratureKind::gauss_k2);
}

template <int dim>
std::unique_ptr<DeviceOperator> make_geometry_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                       const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                       const Coefficient& coefficient,
                                                       const jit::DeviceSource& coefficient_source) {
  if (!geometry_supported(key) || key.dim != dim || dofs.degree() != key.degree || dofs.disc() != key.disc)
    return nullptr;
  if (!tc_one_process(mesh)) return nullptr;
  static const auto table = tc_factory_table<dim, Build>(std::make_integer_sequence<int, 8>{});
  DeviceKernelKey resolved = key;  // the operator reports the form it runs
  resolved.geometry_form = GeometryForm::pa;
  const int row = key.quadrature == fe::QuadratureKind::gll_k1 ? 0 : 1;
  return table[row][key.degree - 1](mesh, dofs, resolved, tuning, coefficient, coefficient_source);
}

template std::unique_ptr<DeviceOperator> make_geometry_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                   const DeviceKernelKey&, const DeviceTuning&,
                                                                   const Coefficient&, const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_geometry_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                   const DeviceKernelKey&, const DeviceTuning&,
                                                                   const Coefficient&, const jit::DeviceSource&);

}  // namespace tcfem::operators::tensor_core
