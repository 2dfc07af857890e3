#pragma once
// Pieces the device cell kernels of the wave operator share (the CUDA-core kernels of
// device_wave.cu and the tensor-core kernels of device_wave_tc.cu): the kernel parameters, the
// velocity's output (plain rate or RK4 stage update), node indexing, the geometry at a point, and
// the registry entry of a kernel.
#include <cstddef>
#include <string>
#include <type_traits>

#include "core/cuda_check.h"
#include "core/error.h"

namespace tcfem::wave::detail {

constexpr int threads_per_block = 256;

template <int dim>
struct CellParams {
  int n_cells;
  int cells[3];
  long long p_stride[3];
  const double* c;   // [cell][e * dim + d][q]
  const double* s;   // [cell][q]
  const float* c32;  // c and s stored in fp32 (the kernels with G = float)
  const float* s32;
  const double* bd;  // B (k x (k+1)), D (k x (k+1)), row-major, then the k Gauss weights
  // the matrix-free form: the node coordinates (component d at nodes[d * n_p + node]) and 1 / rho
  // per velocity node ([cell][q]) instead of c and s
  const double* nodes;
  const double* inv_rho;
  long long n_p;
  const double* u;   // input velocity
  const double* p;   // input pressure
  double* du;        // output: the velocity's rate (stage < 0)
  double* rp;        // output (added): G^T u per pressure node
  // stage >= 0: the RK4 stage's update of the velocity in place of du (x, acc, y as rk4_update_p)
  int stage;
  int nested;  // the nested form (time_stepping.h: Rk4Form): y = x + aw k (stage 0..2), x = x + aw k (3)
  double* x;
  double* acc;
  double* y;
  double bw, aw;
};

/// The velocity's rates k[d] at the entries iu + d nq (d < dim) of one velocity node: written (a
/// plain apply) or applied as RK4 stage `stage`. Classic: acc (+)= bw k, y = x + aw k (stage
/// 0..2), x = acc + bw k (stage 3). Nested: y = x + aw k (stage 0..2), x = x + aw k (stage 3). The
/// inputs of the update (x, acc) come from stage_inputs, loaded before any store: the entries
/// are read and written by this thread only, and y may be the input velocity.
template <int dim>
struct StageInputs {
  double x[dim];
  double acc[dim];
};
template <int dim>
__device__ __forceinline__ StageInputs<dim> stage_inputs(const CellParams<dim>& P, long long iu, int nq) {
  StageInputs<dim> in{};
  if (P.stage < 0) return in;
  const bool need_x = P.nested || P.stage < 3, need_acc = !P.nested && P.stage > 0;
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    if (need_x) in.x[d] = P.x[iu + d * nq];
    if (need_acc) in.acc[d] = P.acc[iu + d * nq];
  }
  return in;
}
template <int dim>
__device__ __forceinline__ void velocity_out(const CellParams<dim>& P, long long iu, int nq, const StageInputs<dim>& in,
                                             const double (&k)[dim]) {
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    const long long i = iu + d * nq;
    if (P.stage < 0) {
      P.du[i] = k[d];
    } else if (P.nested) {
      (P.stage == 3 ? P.x : P.y)[i] = in.x[d] + P.aw * k[d];
    } else if (P.stage == 3) {
      P.x[i] = in.acc[d] + P.bw * k[d];
    } else {
      P.acc[i] = (P.stage == 0 ? in.x[d] : in.acc[d]) + P.bw * k[d];
      P.y[i] = in.x[d] + P.aw * k[d];
    }
  }
}

/// Fields interpolated per cell: the pressure, and with the matrix-free form (MF) its dim
/// coordinates too.
template <int dim, bool MF>
__host__ __device__ constexpr int fields() {
  return MF ? dim + 1 : 1;
}

/// The pressure node index of local node (i, j, l) of cell c.
template <int dim>
__device__ __forceinline__ long long node_index(const CellParams<dim>& P, int cell, int i, int j, int l, int K) {
  const int cx = cell % P.cells[0];
  const int rest = cell / P.cells[0];
  const int cy = rest % P.cells[1];
  long long idx = (long long)(cx * K + i) * P.p_stride[0] + (long long)(cy * K + j) * P.p_stride[1];
  if constexpr (dim == 3) idx += (long long)((rest / P.cells[1]) * K + l) * P.p_stride[2];
  return idx;
}

/// C = w det J J^-1 (row e, column d) and s = (1 / rho) / (w det J) from J (J[d][e] = dx_d / dxi_e).
template <int dim>
__device__ __forceinline__ void geometry_at_point(const double (&J)[dim][dim], double w, double inv_rho, double* C,
                                                  double& s) {
  if constexpr (dim == 3) {
    double A[3][3];  // adjugate: A = det J J^-1
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
        A[i][j] = J[i1][j1] * J[i2][j2] - J[i1][j2] * J[i2][j1];
      }
    const double det = J[0][0] * A[0][0] + J[0][1] * A[1][0] + J[0][2] * A[2][0];
    for (int e = 0; e < 3; ++e)
      for (int d = 0; d < 3; ++d) C[e * 3 + d] = w * A[e][d];
    s = inv_rho / (w * det);
  } else {
    const double det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
    C[0] = w * J[1][1];
    C[1] = -w * J[0][1];
    C[2] = -w * J[1][0];
    C[3] = w * J[0][0];
    s = inv_rho / (w * det);
  }
}

/// The pointwise part at velocity node q of cell `cell` (nq nodes per cell): the geometry (stored,
/// or from the gradients g[1 + d][e] = dx_d / dxi_e of the coordinates and the weight w), the
/// velocity's rate -s C^T grad p through velocity_out, and the flux F[e fs] = sum_d C(e, d) u_d.
/// Every value the point reads (the geometry, u, the RK4 update's x and acc) is requested before
/// its first store: a store may alias a later load for all the compiler knows, so loads after
/// a store would wait for it, one memory round trip per component.
template <int dim, bool MF, typename G = double>
__device__ __forceinline__ void velocity_point(const CellParams<dim>& P, long long cell, int q, int nq,
                                               const double (&g)[fields<dim, MF>()][dim], double w, double* F,
                                               int fs) {
  double cm[dim * dim], s;
  if constexpr (MF) {
    double J[dim][dim];
#pragma unroll
    for (int d = 0; d < dim; ++d)
#pragma unroll
      for (int e = 0; e < dim; ++e) J[d][e] = g[1 + d][e];
    geometry_at_point<dim>(J, w, P.inv_rho[cell * nq + q], cm, s);
  } else {
    const G* C = (std::is_same_v<G, float> ? reinterpret_cast<const G*>(P.c32) : reinterpret_cast<const G*>(P.c)) +
                 cell * dim * dim * nq + q;
    const G* S = std::is_same_v<G, float> ? reinterpret_cast<const G*>(P.s32) : reinterpret_cast<const G*>(P.s);
#pragma unroll
    for (int m = 0; m < dim * dim; ++m) cm[m] = C[m * nq];
    s = S[cell * nq + q];
  }
  const long long iu = cell * dim * nq + q;
  double u[dim];
#pragma unroll
  for (int d = 0; d < dim; ++d) u[d] = P.u[iu + d * nq];
  const StageInputs<dim> in = stage_inputs(P, iu, nq);  // requested with u, before any store
  double k[dim];
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    double r = cm[d] * g[0][0];
#pragma unroll
    for (int e = 1; e < dim; ++e) r += cm[e * dim + d] * g[0][e];
    k[d] = -s * r;
  }
  velocity_out(P, iu, nq, in, k);
#pragma unroll
  for (int e = 0; e < dim; ++e) {
    double f = cm[e * dim] * u[0];
#pragma unroll
    for (int d = 1; d < dim; ++d) f += cm[e * dim + d] * u[d];
    F[e * fs] = f;
  }
}

/// A block's view of its shared memory: the 1D tables B and D (k x (k+1), row-major), the Gauss
/// weights W, and from `cellmem` on the block's cells, `per` doubles apart.
struct CellBlock {
  double* B;
  double* D;
  double* W;
  double* cellmem;
  int first;   ///< the block's first cell
  int ncells;  ///< its cells (fewer in the last block)
};

/// The start of a cell kernel of cpb cells per block: the tables at the front of shared memory,
/// then each of the block's cells' fields at its pressure nodes (the pressure; with MF also the
/// dim coordinates, one field after the other). Ends with a barrier.
template <int dim, int K, bool MF>
__device__ __forceinline__ CellBlock gather_cells(const CellParams<dim>& P, double* smem, int per, int cpb) {
  constexpr int NP = K + 1, NQ = K, NF = fields<dim, MF>(), NPD = dim == 3 ? NP * NP * NP : NP * NP;
  const int first = blockIdx.x * cpb;
  const CellBlock b{smem, smem + NQ * NP, smem + 2 * NQ * NP, smem + 2 * NQ * NP + NQ, first,
                    min(cpb, P.n_cells - first)};
  for (int i = threadIdx.x; i < 2 * NQ * NP + NQ; i += blockDim.x) smem[i] = P.bd[i];
  for (int i = threadIdx.x; i < b.ncells * NF * NPD; i += blockDim.x) {
    const int c = i / (NF * NPD), r = i % (NF * NPD), f = r / NPD, n = r % NPD;
    const long long node = node_index<dim>(P, first + c, n % NP, (n / NP) % NP, n / (NP * NP), K);
    b.cellmem[c * per + r] = f == 0 ? P.p[node] : P.nodes[(f - 1) * P.n_p + node];
  }
  __syncthreads();
  return b;
}

/// The registry of the cell kernels: one entry per (dim, degree, geometry form, storage, cores),
/// with its block shape.
template <int dim>
struct CellKernel {
  void (*kernel)(CellParams<dim>) = nullptr;
  int cells_per_block = 1;
  std::size_t shared = 0;
};

/// A registry entry, its dynamic shared memory allowed.
template <int dim>
CellKernel<dim> make_cell_kernel(void (*kernel)(CellParams<dim>), int cells_per_block, std::size_t shared) {
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  return {kernel, cells_per_block, shared};
}

/// f(std::integral_constant<int, k>{}) for a degree k in 2..8; InputError otherwise.
template <class F>
auto with_degree(int k, F&& f) {
  switch (k) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    case 8: return f(std::integral_constant<int, 8>{});
  }
  throw InputError("wave: degree " + std::to_string(k) + " has no device kernel (2..8)");
}

/// The tensor-core cell kernel of (dim, k, form): mf = the geometry recomputed from the nodes,
/// fp32 = the stored geometry in fp32 (pa only). Throws InputError for a degree outside 2..8.
template <int dim>
CellKernel<dim> tensor_core_cell_kernel(int k, bool mf, bool fp32);

}  // namespace tcfem::wave::detail
