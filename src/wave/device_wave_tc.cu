// The tensor-core cell kernels of the wave operator: the same fused pass over the cells as the
// CUDA-core kernels of device_wave.cu (the pressure's gradient at the velocity nodes, the
// velocity's rate or RK4 update, the flux and its divergence added to the pressure's residual),
// with every 1D contraction of the sum factorization a batch of FP64 mma.sync instructions
// (tensor/dmma_rows.cuh): the rows of a block's cells in shared memory times a fixed 1D matrix
// held in registers; in 3D the two halves are tensor/dmma_cell.cuh's DmmaCell3 (k+1 nodes, k
// points). The pointwise part runs on CUDA cores (velocity_point).
//
// Per cell, in shared memory (the CUDA-core kernels' layout): the fields' nodes [NF][(k+1)^dim],
// the x-contractions X [NF][2][...], (3D) the y-contractions Y [NF][3][...], the flux F [dim][k^dim];
// the gradients G [NF][dim][k^dim] overwrite the nodes and X once these are read (3D; a region of
// its own in 2D), and the pressure's residual per node is staged in the nodes' place before the
// atomic scatter, so that consecutive threads add to consecutive nodes.
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "tensor/dmma_cell.cuh"
#include "wave/device_wave_kernels.cuh"

namespace tcfem::wave::detail {

namespace {

using tensor::DmmaMatrix;
using tensor::dmma_rows;
using tensor::Entries1D;
using tensor::Matrix1D;
using tensor::row_map;

/// The 3D cell layout: NF fields of k+1 nodes and k points per direction (tensor/dmma_cell.cuh),
/// the flux F [3][SQ] after Y.
template <int K, bool MF>
using Cell3 = tensor::DmmaCell3<K + 1, K, fields<3, MF>()>;

template <int dim, int K, bool MF>
__host__ __device__ constexpr int tc_doubles_per_cell() {
  constexpr int NP = K + 1, NQ = K, NF = fields<dim, MF>();
  if constexpr (dim == 3) return Cell3<K, MF>::END + 3 * Cell3<K, MF>::SQ;
  else return NF * NP * NP + 2 * NF * NQ * NP + 2 * NQ * NQ + 2 * NF * NQ * NQ;
}

/// Cells per block, measured (H200, docs/performance.md): with stored geometry about 1024 pressure
/// nodes and at least two cells, so that each contraction has several 16-row tiles per warp; with
/// the geometry recomputed (four fields in shared memory) about 256 nodes, two cells at k = 5.
template <int dim, int K, bool MF>
__host__ __device__ constexpr int tc_cells_per_block() {
  constexpr int nodes = dim == 3 ? (K + 1) * (K + 1) * (K + 1) : (K + 1) * (K + 1);
  if constexpr (MF) return dim == 3 && K == 5 ? 2 : (256 / nodes > 1 ? 256 / nodes : 1);
  else return 1024 / nodes > 2 ? 1024 / nodes : 2;
}

template <int dim, int K, bool MF>
constexpr std::size_t tc_shared_bytes() {
  return sizeof(double) * (2 * K * (K + 1) + K + tc_cells_per_block<dim, K, MF>() * tc_doubles_per_cell<dim, K, MF>());
}

template <int K, bool MF, typename G>
__device__ __forceinline__ void wave_cells_tc_3d_block(const CellParams<3>& P) {
  using L = Cell3<K, MF>;
  constexpr int NP = K + 1, NQ = K, CPB = tc_cells_per_block<3, K, MF>(), NF = fields<3, MF>();
  constexpr int NP2 = NP * NP, NQ2 = NQ * NQ, NP3 = NP * NP * NP, NQ3 = NQ * NQ * NQ;
  constexpr int PER = tc_doubles_per_cell<3, K, MF>(), OF = L::END, SQ = L::SQ;
  static_assert(L::OG == 0, "the gradients overwrite the nodes and X");
  extern __shared__ double smem[];
  const CellBlock blk = gather_cells<3, K, MF>(P, smem, PER, CPB);
  const double *B = blk.B, *D = blk.D, *W = blk.W;
  double* cellmem = blk.cellmem;
  const int first = blk.first, ncells = blk.ncells;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  L::template gradients<PER>(B, D, cellmem, ncells, warp, warps, lane);
  __syncthreads();
  // the points: the geometry, the velocity's rate, the flux F = C u
  for (int i = tid; i < ncells * NQ3; i += blockDim.x) {
    const int c = i / NQ3, q = i % NQ3, qz = q / NQ2, qs = L::point(q);  // qs: q in the padded layout
    double g[NF][3];
#pragma unroll
    for (int f = 0; f < NF; ++f)
#pragma unroll
      for (int e = 0; e < 3; ++e) g[f][e] = cellmem[c * PER + (3 * f + e) * SQ + qs];
    velocity_point<3, MF, G>(P, first + c, q, NQ3, g, W[q % NQ] * W[(q / NQ) % NQ] * W[qz], cellmem + c * PER + OF + qs,
                             SQ);
  }
  __syncthreads();
  L::template divergence<PER, OF>(B, D, cellmem, ncells, warp, warps, lane);
  __syncthreads();
  for (int i = tid; i < ncells * NP3; i += blockDim.x) {  // the scatter, (a, j, l) with a fastest
    const int c = i / NP3, n = i % NP3;
    atomicAdd(P.rp + node_index<3>(P, first + c, n % NP, (n / NP) % NP, n / NP2, K), cellmem[c * PER + n]);
  }
}

template <int K, bool MF, typename G>
__device__ __forceinline__ void wave_cells_tc_2d_block(const CellParams<2>& P) {
  constexpr int NP = K + 1, NQ = K, CPB = tc_cells_per_block<2, K, MF>(), NF = fields<2, MF>();
  constexpr int NP2 = NP * NP, NQ2 = NQ * NQ, SX = NQ * NP;
  constexpr int PER = tc_doubles_per_cell<2, K, MF>();
  constexpr int OX = NF * NP2, OF = OX + 2 * NF * SX, OG = OF + 2 * NQ2;
  extern __shared__ double smem[];
  const CellBlock blk = gather_cells<2, K, MF>(P, smem, PER, CPB);
  const double *B = blk.B, *D = blk.D, *W = blk.W;
  double* cellmem = blk.cellmem;
  const int first = blk.first, ncells = blk.ncells;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
  const Entries1D<K + 1, K> fwd_bd{B, D, Matrix1D::fwd_bd}, fwd_b{B, D, Matrix1D::fwd_b},
      fwd_d{B, D, Matrix1D::fwd_d}, tr_b{B, D, Matrix1D::tr_b}, tr_d{B, D, Matrix1D::tr_d},
      tr_db{B, D, Matrix1D::tr_db};
  const auto plain = [](int a) { return a; };
  const auto stride_nq = [](int a) { return a * NQ; };
  {  // x: X0 = B_x f, X1 = D_x f; rows (cell, field, j), X index qx + NQ j
    constexpr int R = NF * NP;
    const DmmaMatrix<NP, 2 * NQ> m(fwd_bd, lane);
    dmma_rows(m, ncells * R, cellmem, cellmem,
              row_map(
                  [](int r) {
                    const int c = r / R, rc = r - c * R, f = rc / NP, j = rc - f * NP;
                    return make_int2(c * PER + rc * NP, c * PER + OX + 2 * f * SX + NQ * j);
                  },
                  plain, [](int o) { return o < NQ ? o : SX + o - NQ; }),
              warp, warps, 0, lane);
  }
  __syncthreads();
  {  // y: G0 = B_y X1 (d/dx), G1 = D_y X0 (d/dy); rows (cell, field, qx), G index (2 f + e) NQ2 + qx + NQ qy
    constexpr int R = NF * NQ;
    const auto row = [](int r) {  // X0 of the row, G0 of the row
      const int c = r / R, rc = r - c * R, f = rc / NQ, qx = rc - f * NQ;
      return make_int2(c * PER + OX + 2 * f * SX + qx, c * PER + OG + 2 * f * NQ2 + qx);
    };
    int shift = 0;
    {
      const DmmaMatrix<NP, NQ> m(fwd_b, lane);
      shift += dmma_rows(m, ncells * R, cellmem, cellmem,
                         row_map(
                             [&](int r) {
                               const int2 o = row(r);
                               return make_int2(o.x + SX, o.y);
                             },
                             stride_nq, stride_nq),
                         warp, warps, shift, lane);
    }
    {
      const DmmaMatrix<NP, NQ> m(fwd_d, lane);
      dmma_rows(m, ncells * R, cellmem, cellmem,
                row_map(
                    [&](int r) {
                      const int2 o = row(r);
                      return make_int2(o.x, o.y + NQ2);
                    },
                    stride_nq, stride_nq),
                warp, warps, shift, lane);
    }
  }
  __syncthreads();
  for (int i = tid; i < ncells * NQ2; i += blockDim.x) {  // the points
    const int c = i / NQ2, q = i % NQ2;
    double g[NF][2];
#pragma unroll
    for (int f = 0; f < NF; ++f)
#pragma unroll
      for (int e = 0; e < 2; ++e) g[f][e] = cellmem[c * PER + OG + (2 * f + e) * NQ2 + q];
    velocity_point<2, MF, G>(P, first + c, q, NQ2, g, W[q % NQ] * W[q / NQ], cellmem + c * PER + OF + q, NQ2);
  }
  __syncthreads();
  {  // y^T: X0 = B_y^T F0, X1 = D_y^T F1; rows (cell, qx)
    const auto row = [](int r) {
      const int c = r / NQ, qx = r - c * NQ;
      return make_int2(c * PER + OF + qx, c * PER + OX + qx);
    };
    int shift = 0;
    {
      const DmmaMatrix<NQ, NP> m(tr_b, lane);
      shift += dmma_rows(m, ncells * NQ, cellmem, cellmem, row_map(row, stride_nq, stride_nq), warp, warps, shift, lane);
    }
    {
      const DmmaMatrix<NQ, NP> m(tr_d, lane);
      dmma_rows(m, ncells * NQ, cellmem, cellmem,
                row_map(
                    [&](int r) {
                      const int2 o = row(r);
                      return make_int2(o.x + NQ2, o.y + SX);
                    },
                    stride_nq, stride_nq),
                warp, warps, shift, lane);
    }
  }
  __syncthreads();
  {  // x^T: D_x^T X0 + B_x^T X1 per node, staged in the nodes' place; rows (cell, j)
    const DmmaMatrix<2 * NQ, NP> m(tr_db, lane);
    dmma_rows(m, ncells * NP, cellmem, cellmem,
              row_map(
                  [](int r) {
                    const int c = r / NP, j = r - c * NP;
                    return make_int2(c * PER + OX + NQ * j, c * PER + NP * j);
                  },
                  [](int a) { return a < NQ ? a : SX + a - NQ; }, plain),
              warp, warps, 0, lane);
  }
  __syncthreads();
  for (int i = tid; i < ncells * NP2; i += blockDim.x) {
    const int c = i / NP2, n = i % NP2;
    atomicAdd(P.rp + node_index<2>(P, first + c, n % NP, n / NP, 0, K), cellmem[c * PER + n]);
  }
}

// The kernels; the sm_80 cubin of a fat binary carries empty ones (the registry takes the tensor
// cores only on GPUs with the sm_90 FP64 shapes).
template <int K, bool MF, typename G>
__global__ void __launch_bounds__(threads_per_block) wave_cells_tc_3d(CellParams<3> P) {
  if constexpr (!arch::sm90_absent()) wave_cells_tc_3d_block<K, MF, G>(P);
}

template <int K, bool MF, typename G>
__global__ void __launch_bounds__(threads_per_block) wave_cells_tc_2d(CellParams<2> P) {
  if constexpr (!arch::sm90_absent()) wave_cells_tc_2d_block<K, MF, G>(P);
}

template <int dim, bool MF, typename G>
CellKernel<dim> tc_of(int k) {
  return with_degree(k, [](auto degree) {
    constexpr int K = decltype(degree)::value;
    if constexpr (dim == 3)
      return make_cell_kernel<3>(wave_cells_tc_3d<K, MF, G>, tc_cells_per_block<3, K, MF>(), tc_shared_bytes<3, K, MF>());
    else
      return make_cell_kernel<2>(wave_cells_tc_2d<K, MF, G>, tc_cells_per_block<2, K, MF>(), tc_shared_bytes<2, K, MF>());
  });
}

}  // namespace

template <int dim>
CellKernel<dim> tensor_core_cell_kernel(int k, bool mf, bool fp32) {
  if (mf) return tc_of<dim, true, double>(k);
  return fp32 ? tc_of<dim, false, float>(k) : tc_of<dim, false, double>(k);
}
template CellKernel<2> tensor_core_cell_kernel<2>(int, bool, bool);
template CellKernel<3> tensor_core_cell_kernel<3>(int, bool, bool);

}  // namespace tcfem::wave::detail
