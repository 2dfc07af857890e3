// The device stepper of the wave operator (wave/device_wave.h) and its CUDA-core cell kernels. A
// cell kernel runs a few cells per block with every intermediate in shared memory; each stage of
// the sum factorization is one loop over the block's cells and output entries (x fastest),
// separated by barriers. The tensor-core twins are in device_wave_tc.cu; the registry picks by
// --cores (resolve_cores).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "arch/capability.h"
#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "core/host_array.h"
#include "core/parallel.h"
#include "fe/quadrature.h"
#include "wave/device_wave.h"
#include "wave/device_wave_kernels.cuh"
#include "wave/device_wave_setup.h"

namespace tcfem::wave {

bool device_wave_available() { return true; }

namespace {

using namespace detail;

template <int dim, int K, bool MF>
__host__ __device__ constexpr int shared_doubles_per_cell() {
  constexpr int NP = K + 1, NQ = K, NF = fields<dim, MF>();
  if constexpr (dim == 3) return NF * NP * NP * NP + 2 * NF * NQ * NP * NP + 3 * NF * NQ * NQ * NP + 3 * NQ * NQ * NQ;
  else return NF * NP * NP + 2 * NF * NQ * NP + 2 * NQ * NQ;
}

/// Cells per block: about 512 (3D) or 256 (2D) pressure nodes of one field per block; the
/// matrix-free form, with dim + 1 fields in shared memory, half as many.
template <int dim, int K, bool MF>
__host__ __device__ constexpr int cells_per_block() {
  constexpr int nodes = dim == 3 ? (K + 1) * (K + 1) * (K + 1) : (K + 1) * (K + 1);
  constexpr int target = (dim == 3 ? 512 : 256) / (MF ? 2 : 1);
  return target / nodes > 1 ? target / nodes : 1;
}

template <int dim, int K, bool MF>
constexpr std::size_t shared_bytes() {
  return sizeof(double) * (2 * K * (K + 1) + K + cells_per_block<dim, K, MF>() * shared_doubles_per_cell<dim, K, MF>());
}

template <int K, bool MF, typename G>
__global__ void __launch_bounds__(threads_per_block) wave_cells_3d(CellParams<3> P) {
  constexpr int NP = K + 1, NQ = K, CPB = cells_per_block<3, K, MF>(), NF = fields<3, MF>();
  constexpr int NP3 = NP * NP * NP, NQ3 = NQ * NQ * NQ, SX = NQ * NP * NP, SY = NQ * NQ * NP;
  constexpr int PER = shared_doubles_per_cell<3, K, MF>();
  // per cell: the fields' nodes (NF NP3), X (2 NF SX), Y (3 NF SY), the flux F (3 NQ3)
  constexpr int OX = NF * NP3, OY = OX + 2 * NF * SX, OF = OY + 3 * NF * SY;
  extern __shared__ double smem[];
  const CellBlock blk = gather_cells<3, K, MF>(P, smem, PER, CPB);
  const double *B = blk.B, *D = blk.D, *W = blk.W;
  double* cellmem = blk.cellmem;
  const int first = blk.first, ncells = blk.ncells;
  const int tid = threadIdx.x;
  // x: X0 = B_x f, X1 = D_x f   (qx, j, l)
  for (int i = tid; i < ncells * NF * SX; i += blockDim.x) {
    const int c = i / (NF * SX), r0 = i % (NF * SX), f = r0 / SX, r = r0 % SX, qx = r % NQ, jl = r / NQ;
    const double* in = cellmem + c * PER + f * NP3 + jl * NP;
    double b = 0, d = 0;
#pragma unroll
    for (int a = 0; a < NP; ++a) {
      b += B[qx * NP + a] * in[a];
      d += D[qx * NP + a] * in[a];
    }
    double* base = cellmem + c * PER + OX + 2 * f * SX;
    base[r] = b;
    base[SX + r] = d;
  }
  __syncthreads();
  // y: Y0 = B_y X0 (BxBy), Y1 = D_y X0 (BxDy), Y2 = B_y X1 (DxBy)   (qx, qy, l)
  for (int i = tid; i < ncells * NF * SY; i += blockDim.x) {
    const int c = i / (NF * SY), r0 = i % (NF * SY), f = r0 / SY, r = r0 % SY, qx = r % NQ, qy = (r / NQ) % NQ,
              l = r / (NQ * NQ);
    const double* x0 = cellmem + c * PER + OX + 2 * f * SX + qx + NQ * NP * l;
    const double* x1 = x0 + SX;
    double b0 = 0, d0 = 0, b1 = 0;
#pragma unroll
    for (int j = 0; j < NP; ++j) {
      b0 += B[qy * NP + j] * x0[NQ * j];
      d0 += D[qy * NP + j] * x0[NQ * j];
      b1 += B[qy * NP + j] * x1[NQ * j];
    }
    double* base = cellmem + c * PER + OY + 3 * f * SY;
    base[r] = b0;
    base[SY + r] = d0;
    base[2 * SY + r] = b1;
  }
  __syncthreads();
  // z and the points: the gradients, (MF) the geometry, the velocity's rate, the flux F = C u
  for (int i = tid; i < ncells * NQ3; i += blockDim.x) {
    const int c = i / NQ3, q = i % NQ3, qxy = q % (NQ * NQ), qz = q / (NQ * NQ);
    double g[NF][3];
#pragma unroll
    for (int f = 0; f < NF; ++f) {
      const double* y = cellmem + c * PER + OY + 3 * f * SY + qxy;
      double g0 = 0, g1 = 0, g2 = 0;
#pragma unroll
      for (int l = 0; l < NP; ++l) {
        g0 += B[qz * NP + l] * y[2 * SY + NQ * NQ * l];
        g1 += B[qz * NP + l] * y[SY + NQ * NQ * l];
        g2 += D[qz * NP + l] * y[NQ * NQ * l];
      }
      g[f][0] = g0;
      g[f][1] = g1;
      g[f][2] = g2;
    }
    velocity_point<3, MF, G>(P, first + c, q, NQ3, g, W[q % NQ] * W[(q / NQ) % NQ] * W[qz], cellmem + c * PER + OF + q, NQ3);
  }
  __syncthreads();
  // z^T: Y0 = B_z^T F0 (x path), Y1 = B_z^T F1 (y path), Y2 = D_z^T F2 (z path)   (qx, qy, l)
  for (int i = tid; i < ncells * SY; i += blockDim.x) {
    const int c = i / SY, r = i % SY, qxy = r % (NQ * NQ), l = r / (NQ * NQ);
    const double* F = cellmem + c * PER + OF + qxy;
    double a0 = 0, a1 = 0, a2 = 0;
#pragma unroll
    for (int qz = 0; qz < NQ; ++qz) {
      a0 += B[qz * NP + l] * F[NQ * NQ * qz];
      a1 += B[qz * NP + l] * F[NQ3 + NQ * NQ * qz];
      a2 += D[qz * NP + l] * F[2 * NQ3 + NQ * NQ * qz];
    }
    double* base = cellmem + c * PER + OY;
    base[r] = a0;
    base[SY + r] = a1;
    base[2 * SY + r] = a2;
  }
  __syncthreads();
  // y^T: X0 = B_y^T Y0 (x path), X1 = D_y^T Y1 + B_y^T Y2 (y and z paths)   (qx, j, l)
  for (int i = tid; i < ncells * SX; i += blockDim.x) {
    const int c = i / SX, r = i % SX, qx = r % NQ, j = (r / NQ) % NP, l = r / (NQ * NP);
    const double* y = cellmem + c * PER + OY + qx + NQ * NQ * l;
    double x0 = 0, x1 = 0;
#pragma unroll
    for (int qy = 0; qy < NQ; ++qy) {
      x0 += B[qy * NP + j] * y[NQ * qy];
      x1 += D[qy * NP + j] * y[SY + NQ * qy] + B[qy * NP + j] * y[2 * SY + NQ * qy];
    }
    double* base = cellmem + c * PER + OX;
    base[r] = x0;
    base[SX + r] = x1;
  }
  __syncthreads();
  // x^T and the scatter: rp += D_x^T X0 + B_x^T X1   (a, j, l)
  for (int i = tid; i < ncells * NP3; i += blockDim.x) {
    const int c = i / NP3, n = i % NP3, a = n % NP, jl = n / NP;
    const double* x = cellmem + c * PER + OX + NQ * jl;
    double v = 0;
#pragma unroll
    for (int qx = 0; qx < NQ; ++qx) v += D[qx * NP + a] * x[qx] + B[qx * NP + a] * x[SX + qx];
    atomicAdd(P.rp + node_index<3>(P, first + c, a, jl % NP, jl / NP, K), v);
  }
}

template <int K, bool MF, typename G>
__global__ void __launch_bounds__(threads_per_block) wave_cells_2d(CellParams<2> P) {
  constexpr int NP = K + 1, NQ = K, CPB = cells_per_block<2, K, MF>(), NF = fields<2, MF>();
  constexpr int NP2 = NP * NP, NQ2 = NQ * NQ, SX = NQ * NP;
  constexpr int PER = shared_doubles_per_cell<2, K, MF>();
  constexpr int OX = NF * NP2, OF = OX + 2 * NF * SX;
  extern __shared__ double smem[];
  const CellBlock blk = gather_cells<2, K, MF>(P, smem, PER, CPB);
  const double *B = blk.B, *D = blk.D, *W = blk.W;
  double* cellmem = blk.cellmem;
  const int first = blk.first, ncells = blk.ncells;
  const int tid = threadIdx.x;
  for (int i = tid; i < ncells * NF * SX; i += blockDim.x) {  // (qx, j)
    const int c = i / (NF * SX), r0 = i % (NF * SX), f = r0 / SX, r = r0 % SX, qx = r % NQ, j = r / NQ;
    const double* in = cellmem + c * PER + f * NP2 + j * NP;
    double b = 0, d = 0;
#pragma unroll
    for (int a = 0; a < NP; ++a) {
      b += B[qx * NP + a] * in[a];
      d += D[qx * NP + a] * in[a];
    }
    cellmem[c * PER + OX + 2 * f * SX + r] = b;
    cellmem[c * PER + OX + 2 * f * SX + SX + r] = d;
  }
  __syncthreads();
  for (int i = tid; i < ncells * NQ2; i += blockDim.x) {  // (qx, qy)
    const int c = i / NQ2, q = i % NQ2, qx = q % NQ, qy = q / NQ;
    double g[NF][2];
#pragma unroll
    for (int f = 0; f < NF; ++f) {
      const double* x0 = cellmem + c * PER + OX + 2 * f * SX + qx;
      const double* x1 = x0 + SX;
      double g0 = 0, g1 = 0;
#pragma unroll
      for (int j = 0; j < NP; ++j) {
        g0 += B[qy * NP + j] * x1[NQ * j];
        g1 += D[qy * NP + j] * x0[NQ * j];
      }
      g[f][0] = g0;
      g[f][1] = g1;
    }
    velocity_point<2, MF, G>(P, first + c, q, NQ2, g, W[qx] * W[qy], cellmem + c * PER + OF + q, NQ2);
  }
  __syncthreads();
  for (int i = tid; i < ncells * SX; i += blockDim.x) {  // y^T: (qx, j)
    const int c = i / SX, r = i % SX, qx = r % NQ, j = r / NQ;
    const double* F = cellmem + c * PER + OF + qx;
    double x0 = 0, x1 = 0;
#pragma unroll
    for (int qy = 0; qy < NQ; ++qy) {
      x0 += B[qy * NP + j] * F[NQ * qy];
      x1 += D[qy * NP + j] * F[NQ2 + NQ * qy];
    }
    cellmem[c * PER + OX + r] = x0;
    cellmem[c * PER + OX + SX + r] = x1;
  }
  __syncthreads();
  for (int i = tid; i < ncells * NP2; i += blockDim.x) {  // x^T and the scatter: (a, j)
    const int c = i / NP2, n = i % NP2, a = n % NP, j = n / NP;
    const double* x = cellmem + c * PER + OX + NQ * j;
    double v = 0;
#pragma unroll
    for (int qx = 0; qx < NQ; ++qx) v += D[qx * NP + a] * x[qx] + B[qx * NP + a] * x[SX + qx];
    atomicAdd(P.rp + node_index<2>(P, first + c, a, j, 0, K), v);
  }
}

template <int dim, bool MF, typename G>
CellKernel<dim> cell_kernel_of(int k) {
  return with_degree(k, [](auto degree) {
    constexpr int K = decltype(degree)::value;
    if constexpr (dim == 3)
      return make_cell_kernel<3>(wave_cells_3d<K, MF, G>, cells_per_block<3, K, MF>(), shared_bytes<3, K, MF>());
    else
      return make_cell_kernel<2>(wave_cells_2d<K, MF, G>, cells_per_block<2, K, MF>(), shared_bytes<2, K, MF>());
  });
}

/// Where the tensor-core cell kernel was measured faster than the CUDA-core one (H200, 1.3e8 and
/// 5.3e8 DoFs, docs/performance.md, "Tensor-core cell kernels of the wave operator"): 3D at
/// k >= 5, with stored or recomputed geometry, and at k = 4 with the geometry stored in fp32. In
/// 2D (k = 4) the two are equal (memory-bound) and the CUDA-core kernel is kept.
bool tensor_cores_measured_faster(int dim, int k, bool fp32_storage) {
  return dim == 3 && (k >= 5 || (k == 4 && fp32_storage));
}

/// The tensor-core kernels where asked for, or (automatic) where the GPU has the sm_90 FP64 shapes
/// and they were measured faster; an explicit request on another GPU is refused.
WaveCores resolve_cores(WaveCores cores, const DeviceInfo& info, int dim, int k, bool fp32_storage) {
  const bool native = arch::select_fp64_atom(info.sm_major, info.sm_minor) == arch::Fp64Shape::m16n8k16;
  if (cores == WaveCores::tensor_core && !native)
    throw InputError("--cores tensor-core: the FP64 tensor-core shapes (mma.sync m16n8k4/k8 .f64) need sm_90; " +
                     info.name + " is sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor) +
                     " (use --cores cuda-core)");
  if (cores == WaveCores::automatic)
    return native && tensor_cores_measured_faster(dim, k, fp32_storage) ? WaveCores::tensor_core : WaveCores::cuda_core;
  return cores;
}

template <int dim>
CellKernel<dim> cell_kernel(int k, WaveGeometryForm form, WaveCores cores, bool fp32) {
  const bool mf = form == WaveGeometryForm::mf;
  if (cores == WaveCores::tensor_core) return tensor_core_cell_kernel<dim>(k, mf, fp32);
  if (mf) return cell_kernel_of<dim, true, double>(k);
  return fp32 ? cell_kernel_of<dim, false, float>(k) : cell_kernel_of<dim, false, double>(k);
}

/// out_p = M_p^-1 rp for the whole pressure (rp holds the divergence, and the absorbing and
/// seafloor terms where they apply), rp zeroed after
__global__ void finish_pressure(long long n_p, double* rp, const double* inv_mass, double* out_p) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n_p; i += (long long)gridDim.x * blockDim.x) {
    out_p[i] = inv_mass[i] * rp[i];
    rp[i] = 0.0;
  }
}

/// rp[nodes[i]] -= a[i] p[nodes[i]]: the absorbing faces' term, on their nodes only (each once)
__global__ void absorb_into(long long n, const long long* __restrict__ nodes, const double* __restrict__ a,
                            const double* __restrict__ p, double* __restrict__ rp) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) rp[nodes[i]] -= a[i] * p[nodes[i]];
}

/// The RK4 stage update of the pressure after the stage's cell kernel (which updated the
/// velocity) and the absorbing term: k = M_p^-1 rp; classic: acc (+)= bw k; y = x + aw k; on the
/// last stage x = acc + bw k; nested: y = x + aw k, on the last stage x = x + aw k. rp is zeroed
/// for the next stage. Pointers are offset to the pressure part. One node per thread, the arrays
/// distinct (restrict): a microbenchmark of this pass on the H200 (1.35e8 nodes) ran the grid-stride
/// loop in 6.0 ms and one node per thread in 2.0 ms (docs/performance.md, also for the GPUs on
/// which the pass streams slower inside tcfem).
__global__ void rk4_update_p(long long n_p, double* __restrict__ rp, const double* __restrict__ inv_mass,
                             double* __restrict__ x, double* __restrict__ acc, double* __restrict__ y, double bw,
                             double aw, int stage, bool nested) {
  const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= n_p) return;
  const double xj = x[j];
  const double k = inv_mass[j] * rp[j];
  rp[j] = 0.0;
  if (nested) {
    if (stage == 3) x[j] = xj + aw * k;
    else y[j] = xj + aw * k;
  } else if (stage == 3) {
    x[j] = acc[j] + bw * k;
  } else {
    acc[j] = (stage == 0 ? xj : acc[j]) + bw * k;
    y[j] = xj + aw * k;
  }
}

__global__ void scatter_add(long long n, const long long* nodes, const double* values, double* rp) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    atomicAdd(rp + nodes[i], values[i]);
}

/// rp[nodes[i]] += w0 v0[i] + wh vh[i] + w1 v1[i]: the nested RK4 form's stage forcing from the
/// seafloor values at t, t + dt/2, t + dt (a set with weight 0 is not read: it may not be set yet)
__global__ void scatter_add_combined(long long n, const long long* nodes, const double* v0, const double* vh,
                                     const double* v1, double w0, double wh, double w1, double* rp) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    double v = w0 * v0[i];
    if (wh != 0.0) v += wh * vh[i];
    if (w1 != 0.0) v += w1 * v1[i];
    atomicAdd(rp + nodes[i], v);
  }
}

/// *result += the sum of `value` over the block's threads (threads_per_block of them)
__device__ void block_sum_into(double value, double* result) {
  __shared__ double part[threads_per_block];
  part[threadIdx.x] = value;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(result, part[0]);
}

/// sum w_i x_i y_i over the state, w the diagonal mass: 1 / s per velocity node (every component),
/// M_p per pressure node
template <typename S>
__global__ void mass_inner(long long n_u, long long n_p, int dim_nq, int nq, const S* s, const double* mass_p,
                           const double* x, const double* y, double* result) {
  double sum = 0;
  const long long n = n_u + n_p;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (i < n_u) {
      long long cell, q;
      if (n_u < (1LL << 31)) {
        cell = static_cast<unsigned>(i) / static_cast<unsigned>(dim_nq);
        q = static_cast<unsigned>(i) % static_cast<unsigned>(nq);
      } else {
        cell = i / dim_nq;
        q = i % nq;
      }
      sum += x[i] * y[i] / s[cell * nq + q];
    } else {
      sum += x[i] * y[i] * mass_p[i - n_u];
    }
  }
  block_sum_into(sum, result);
}

/// y = a y + c x (x not read where c is 0) and the sum of the mass-weighted squares of the new y
/// into *result (the weights of mass_inner)
template <typename S>
__global__ void combine_mass_norm(long long n_u, long long n_p, int dim_nq, int nq, const S* s, const double* mass_p,
                                  double a, const double* x, double c, double* y, double* result) {
  double sum = 0;
  const long long n = n_u + n_p;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const double v = c == 0.0 ? a * y[i] : a * y[i] + c * x[i];
    y[i] = v;
    if (i < n_u) sum += v * v / s[(i / dim_nq) * nq + i % nq];
    else sum += v * v * mass_p[i - n_u];
  }
  block_sum_into(sum, result);
}

__global__ void start_vector(long long n, double* v) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    v[i] = start_vector_entry(static_cast<unsigned long long>(i));
}

/// Blocks of threads_per_block for one entry per thread.
unsigned one_per_thread(long long n) { return static_cast<unsigned>((n + threads_per_block - 1) / threads_per_block); }

int grid_for(long long n) {
  return static_cast<int>(std::min<long long>((n + threads_per_block - 1) / threads_per_block, 132LL * 16));
}

template <int dim>
class DeviceWaveStepper final : public WaveStepper {
 public:
  DeviceWaveStepper(const WaveOperator<dim>& op, const DeviceWaveOptions& options)
      : op_(op), n_u_(op.n_u()), n_p_(op.n_p()), info_(query_device()), cores_(resolve_cores(options.cores, info_, dim, op.degree(), options.geometry_storage == WaveStorage::fp32)),
        fp32_(checked_storage(options)),
        kernel_(cell_kernel<dim>(op.degree(), options.geometry_form, cores_, fp32_)),
        form_(options.geometry_form), rk4_form_(resolve_rk4_form(options.rk4)) {
    const std::size_t n = op.n_dofs();
    for (auto* b : {&x_, &y_, &acc_, &x0_}) b->allocate(n);
    if (op.has_cell_data()) {
      // s is also the velocity's mass of the energies (both forms), in the precision the operator uses
      if (fp32_) {
        upload_rounded(s32_, op.geometry_s());
        upload_rounded(c32_, op.geometry_c());
      } else {
        upload(s_, op.geometry_s());
      }
      if (form_ == WaveGeometryForm::pa) {
        if (!fp32_) upload(c_, op.geometry_c());
      } else {
        nodes_ = DeviceBuffer<double>(op.node_field());
        inv_rho_ = DeviceBuffer<double>(op.inverse_density());
      }
      inv_mass_ = DeviceBuffer<double>(op.inverse_mass_p());
      mass_p_ = DeviceBuffer<double>(op.mass_p());
      damping_ = op.damping();
    } else {
      // the cell data and the initial state computed here
      DeviceWaveRequest request;
      request.store_c = form_ == WaveGeometryForm::pa;
      request.fp32 = fp32_;
      request.matrix_free = form_ == WaveGeometryForm::mf;
      auto data = compute_device_wave_data<dim>(op, request, x_.data());
      nodes_ = std::move(data.nodes);
      inv_rho_ = std::move(data.inv_rho);
      c_ = std::move(data.c);
      s_ = std::move(data.s);
      c32_ = std::move(data.c32);
      s32_ = std::move(data.s32);
      inv_mass_ = std::move(data.inv_mass_p);
      mass_p_ = std::move(data.mass_p);
      damping_ = data.damping;
      initial_state_ready_ = true;
    }
    std::vector<double> bd(op.values().data);
    bd.insert(bd.end(), op.derivatives().data.begin(), op.derivatives().data.end());
    const auto gauss = fe::gauss(op.degree());
    bd.insert(bd.end(), gauss.weights.begin(), gauss.weights.end());
    bd_ = DeviceBuffer<double>(bd);
    {  // the absorbing faces' terms, node by node (the host keeps them in both setups)
      const auto& terms = op.absorbing_terms();
      std::vector<long long> nodes(terms.size());
      std::vector<double> values(terms.size());
      for (std::size_t i = 0; i < terms.size(); ++i) {
        nodes[i] = static_cast<long long>(terms[i].node);
        values[i] = terms[i].value;
      }
      if (!terms.empty()) {
        absorb_nodes_ = DeviceBuffer<long long>(nodes);
        absorb_values_ = DeviceBuffer<double>(values);
      }
    }
    rp_.allocate(n_p_);
    TCFEM_CUDA_CHECK(cudaMemset(rp_.data(), 0, n_p_ * sizeof(double)));
    result_.allocate(1);
    if (op.has_seafloor()) {
      const auto nodes = op.seafloor_nodes();
      std::vector<long long> ln(nodes.begin(), nodes.end());
      sea_nodes_ = DeviceBuffer<long long>(ln);
      sea_values_host_.resize(nodes.size());
      for (auto& v : sea_floor_) v.allocate(nodes.size());
      sea_values_.allocate(nodes.size());
    }
    params_.n_cells = static_cast<int>(op.n_cells());
    for (int d = 0; d < 3; ++d) {
      params_.cells[d] = d < dim ? op.cells()[d] : 1;
      params_.p_stride[d] = d < dim ? static_cast<long long>(op.p_strides()[d]) : 0;
    }
    params_.c = c_.data();
    params_.s = s_.data();
    params_.c32 = c32_.data();
    params_.s32 = s32_.data();
    params_.nodes = nodes_.data();
    params_.inv_rho = inv_rho_.data();
    params_.n_p = n_p_;
    params_.bd = bd_.data();
    TCFEM_CUDA_CHECK(cudaEventCreate(&start_));
    TCFEM_CUDA_CHECK(cudaEventCreate(&mid_));
    TCFEM_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~DeviceWaveStepper() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(mid_);
    cudaEventDestroy(stop_);
  }

  void set_state(const std::vector<double>& x) override {
    x_.copy_from_host(x.data(), x.size());
    initial_state_ready_ = false;
  }
  /// With the data computed on the device, the initial state came with them (into x); else (or
  /// once x has changed) it is interpolated on the host and copied.
  void set_initial_state() override {
    if (initial_state_ready_) return;
    set_state(op_.interpolate(op_.problem().initial_p, op_.problem().initial_u));
  }
  /// Whether the cell data and the initial state were computed on the device.
  bool setup_on_device() const { return !op_.has_cell_data(); }
  void get_state(std::vector<double>& x) override {
    x.resize(op_.n_dofs());
    x_.copy_to_host(x.data(), x.size());
  }

  void step(double t, double dt) override {
    const bool nested = rk4_form_ == Rk4Form::nested;
    // classic: acc accumulates bw_i k_i, y = x + aw_i k_i; nested (time_stepping.h): y = x + aw_i
    // (L y + f_i) (y = x first), x += dt (L y + f_4)
    const double bws[4] = {dt / 6, dt / 3, dt / 3, dt / 6};
    const double aws[4] = {nested ? dt / 4 : dt / 2, nested ? dt / 3 : dt / 2, nested ? dt / 2 : dt, nested ? dt : 0};
    const double times[4] = {t, t + dt / 2, t + dt / 2, t + dt};
    for (int stage = 0; stage < 4; ++stage) {
      CellParams<dim> p = params_;
      p.stage = stage;
      p.nested = nested;
      p.x = x_.data();
      p.acc = acc_.data();
      p.y = y_.data();
      p.bw = bws[stage];
      p.aw = aws[stage];
      launch_cells(stage == 0 ? x_.data() : y_.data(), nullptr, p);
      if (!nested) add_seafloor(times[stage]);
      else add_seafloor_nested(t, dt, stage);
      add_absorbing((stage == 0 ? x_.data() : y_.data()) + n_u_);
      rk4_update_p<<<one_per_thread(n_p_), threads_per_block>>>(n_p_, rp_.data(), inv_mass_.data(), x_.data() + n_u_,
                                                                 acc_.data() + n_u_, y_.data() + n_u_, bws[stage],
                                                                 aws[stage], stage, nested);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
    ++steps_;
    initial_state_ready_ = false;
  }
  Rk4Form rk4_form() const override { return rk4_form_; }

  double energy() override { return 0.5 * inner(x_.data(), x_.data()); }
  void set_reference() override {
    TCFEM_CUDA_CHECK(cudaMemcpy(x0_.data(), x_.data(), op_.n_dofs() * sizeof(double), cudaMemcpyDeviceToDevice));
    norm0_ = inner(x0_.data(), x0_.data());
  }
  double projection() override { return norm0_ > 0 ? inner(x_.data(), x0_.data()) / norm0_ : 0.0; }

  SpectralBound spectral_bound(int max_applies) override {
    // skew Lanczos, as WaveOperator::spectral_bound: the RK4 stage vectors (y, acc: written
    // before they are read in a step) and one temporary vector hold the three Lanczos vectors
    DeviceBuffer<double> temporary(op_.n_dofs());
    const long long n = n_u_ + n_p_;
    start_vector<<<grid_for(n), threads_per_block>>>(n, acc_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    SpectralBound bound;
    bound.lanczos = skew_lanczos(
        y_.data(), acc_.data(), temporary.data(), max_applies, lanczos_tolerance,
        [&](const double* x, double* y) { timed_skew_rate(x, y); },
        [&](const double* x) { return std::sqrt(inner(x, x)); },
        [&](double* y, double a, const double* x, double c) { return std::sqrt(combine_norm(y, a, x, c)); });
    bound.damping = damping_;
    bound.radius = bound.lanczos.sigma + damping_;
    return bound;
  }

  /// The full rate r = M^-1 (-A x + b(t)) (for the tests against the CPU operator).
  void rate(double t, const double* x_host, double* r_host) {
    DeviceBuffer<double> in(op_.n_dofs()), out(op_.n_dofs());
    in.copy_from_host(x_host, op_.n_dofs());
    launch_cells(in.data(), out.data());
    add_seafloor(t);
    add_absorbing(in.data() + n_u_);
    finish_pressure<<<grid_for(n_p_), threads_per_block>>>(n_p_, rp_.data(), inv_mass_.data(), out.data() + n_u_);
    TCFEM_CUDA_CHECK_LAUNCH();
    out.copy_to_host(r_host, op_.n_dofs());
  }

  double operator_seconds() const override { return operator_seconds_; }
  double cell_kernel_seconds() const override { return kernel_seconds_; }
  std::size_t operator_applies() const override { return applies_; }
  std::size_t steps() const { return steps_; }
  void synchronize() override { TCFEM_CUDA_CHECK(cudaDeviceSynchronize()); }
  std::string cores() const override { return to_string(cores_); }
  std::string description() const override {
    const std::string data = form_ == WaveGeometryForm::pa
                                 ? "stored geometry (pa: " + std::to_string(dim * dim + 1) + " values per velocity node" +
                                       (fp32_ ? " in fp32" : "") + ")"
                                 : "geometry recomputed from the node coordinates (mf)";
    const std::string units = cores_ == WaveCores::tensor_core ? "FP64 tensor cores (mma.sync m16n8k4/k8)" : "CUDA cores";
    return "cuda (" + info_.name + "), fp64, fused cell kernel on " + units + ", " + data + ", " +
           std::to_string(kernel_.cells_per_block) + " cells per block";
  }
  /// Held while stepping: the state, the two RK4 stage vectors and the reference state (4 vectors),
  /// the geometry, the pressure's residual and masses, the absorbing faces' node terms (the
  /// spectral bound takes one more vector while it runs).
  std::size_t memory_bytes() const override {
    const std::size_t points = n_u_ / dim;  // velocity nodes
    const std::size_t geometry = form_ == WaveGeometryForm::pa ? (dim * dim + 1) * points : dim * n_p_ + 2 * points;
    return sizeof(double) * (4 * op_.n_dofs() + 3 * n_p_) + (sizeof(long long) + sizeof(double)) * absorb_nodes_.size() +
           (fp32_ ? sizeof(float) : sizeof(double)) * geometry;
  }

 private:
  template <typename Array>
  static void upload(DeviceBuffer<double>& buffer, const Array& host) {
    buffer.allocate(host.size());
    buffer.copy_from_host(host.data(), host.size());
  }
  /// host values rounded to fp32 (in parallel chunks) and uploaded
  template <typename Array>
  static void upload_rounded(DeviceBuffer<float>& buffer, const Array& host) {
    HostArray<float> rounded(host.size());
    parallel_chunks(0, host.size(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) rounded[i] = static_cast<float>(host[i]);
    });
    buffer.allocate(host.size());
    buffer.copy_from_host(rounded.data(), rounded.size());
  }
  static bool checked_storage(const DeviceWaveOptions& options) {
    const bool fp32 = options.geometry_storage == WaveStorage::fp32;
    if (fp32 && options.geometry_form == WaveGeometryForm::mf)
      throw InputError("--geometry-storage fp32: the mf form stores no geometry (it recomputes it from the nodes)");
    return fp32;
  }
  void launch_cells(const double* in, double* out) {
    CellParams<dim> p = params_;
    p.stage = -1;
    launch_cells(in, out, p);
  }
  void launch_cells(const double* in, double* out, CellParams<dim> p) {
    p.u = in;
    p.p = in + n_u_;
    p.du = out;
    p.rp = rp_.data();
    const int blocks = (params_.n_cells + kernel_.cells_per_block - 1) / kernel_.cells_per_block;
    kernel_.kernel<<<blocks, threads_per_block, kernel_.shared>>>(p);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  void add_seafloor(double t) {
    if (!op_.has_seafloor()) return;
    op_.seafloor_values(t, sea_values_host_.data());
    scatter_seafloor();
  }
  /// rp -= the absorbing faces' terms times the pressure p (the state's pressure part)
  void add_absorbing(const double* p) {
    const auto n = static_cast<long long>(absorb_nodes_.size());
    if (n == 0) return;
    absorb_into<<<one_per_thread(n), threads_per_block>>>(n, absorb_nodes_.data(), absorb_values_.data(), p, rp_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  /// rp += the seafloor's face node values sea_values_host_
  void scatter_seafloor() {
    sea_values_.copy_from_host(sea_values_host_.data(), sea_values_host_.size());
    scatter_add<<<grid_for(sea_values_host_.size()), threads_per_block>>>(
        static_cast<long long>(sea_values_host_.size()), sea_nodes_.data(), sea_values_.data(), rp_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  /// The nested form's forcing of `stage` (time_stepping.h: rk4_nested_forcing) into rp. The
  /// seafloor values at t, t + dt/2, t + dt are evaluated when a stage first needs them (stages 0,
  /// 1 and 3, each while the stage's cell kernel runs, as the classic form's), kept on the device,
  /// and those at t + dt serve the next step at the same time (to a few units of its last bit).
  void add_seafloor_nested(double t, double dt, int stage) {
    if (!op_.has_seafloor()) return;
    auto evaluate = [&](int slot, double time) {
      op_.seafloor_values(time, sea_values_host_.data());
      sea_floor_[slot].copy_from_host(sea_values_host_.data(), sea_values_host_.size());
    };
    // t + dt of the last step and this step's t (n dt) may differ in their last bits
    const bool cached = std::abs(sea_floor_time_ - t) <= 4 * std::numeric_limits<double>::epsilon() * std::abs(t);
    if (stage == 0 && !cached) evaluate(0, t);
    if (stage == 1) evaluate(1, t + dt / 2);
    if (stage == 3) evaluate(2, t + dt);
    const double* w = rk4_nested_forcing[stage];
    const auto n = static_cast<long long>(sea_values_host_.size());
    scatter_add_combined<<<grid_for(n), threads_per_block>>>(n, sea_nodes_.data(), sea_floor_[0].data(),
                                                              sea_floor_[1].data(), sea_floor_[2].data(), w[0], w[1],
                                                              w[2], rp_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    if (stage == 3) {  // b(t + dt) is the next step's b(t)
      std::swap(sea_floor_[0], sea_floor_[2]);
      sea_floor_time_ = t + dt;
    }
  }
  /// skew_rate with the cell kernel and the whole apply timed by events
  void timed_skew_rate(const double* in, double* out) {
    TCFEM_CUDA_CHECK(cudaEventRecord(start_));
    launch_cells(in, out);
    TCFEM_CUDA_CHECK(cudaEventRecord(mid_));
    finish_pressure<<<grid_for(n_p_), threads_per_block>>>(n_p_, rp_.data(), inv_mass_.data(), out + n_u_);
    TCFEM_CUDA_CHECK_LAUNCH();
    TCFEM_CUDA_CHECK(cudaEventRecord(stop_));
    TCFEM_CUDA_CHECK(cudaEventSynchronize(stop_));
    float kernel_ms = 0, all_ms = 0;
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&kernel_ms, start_, mid_));
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&all_ms, start_, stop_));
    kernel_seconds_ += 1e-3 * kernel_ms;
    operator_seconds_ += 1e-3 * all_ms;
    ++applies_;
  }
  void skew_rate(const double* in, double* out) {
    launch_cells(in, out);
    finish_pressure<<<grid_for(n_p_), threads_per_block>>>(n_p_, rp_.data(), inv_mass_.data(), out + n_u_);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  double inner(const double* a, const double* b) {
    TCFEM_CUDA_CHECK(cudaMemset(result_.data(), 0, sizeof(double)));
    const int g = grid_for(n_u_ + n_p_), dnq = dim * op_.points_per_cell(), nq = op_.points_per_cell();
    if (fp32_) mass_inner<<<g, threads_per_block>>>(n_u_, n_p_, dnq, nq, s32_.data(), mass_p_.data(), a, b, result_.data());
    else mass_inner<<<g, threads_per_block>>>(n_u_, n_p_, dnq, nq, s_.data(), mass_p_.data(), a, b, result_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    double r = 0;
    result_.copy_to_host(&r, 1);
    return r;
  }
  /// y = a y + c x, returning (y, y)_M
  double combine_norm(double* y, double a, const double* x, double c) {
    TCFEM_CUDA_CHECK(cudaMemset(result_.data(), 0, sizeof(double)));
    const int g = grid_for(n_u_ + n_p_), dnq = dim * op_.points_per_cell(), nq = op_.points_per_cell();
    if (fp32_)
      combine_mass_norm<<<g, threads_per_block>>>(n_u_, n_p_, dnq, nq, s32_.data(), mass_p_.data(), a, x, c, y, result_.data());
    else
      combine_mass_norm<<<g, threads_per_block>>>(n_u_, n_p_, dnq, nq, s_.data(), mass_p_.data(), a, x, c, y, result_.data());
    TCFEM_CUDA_CHECK_LAUNCH();
    double r = 0;
    result_.copy_to_host(&r, 1);
    return r;
  }

  const WaveOperator<dim>& op_;
  long long n_u_, n_p_;
  DeviceInfo info_;
  WaveCores cores_;
  bool fp32_;
  CellKernel<dim> kernel_;
  CellParams<dim> params_{};
  WaveGeometryForm form_;
  Rk4Form rk4_form_;
  DeviceBuffer<double> nodes_, inv_rho_;
  DeviceBuffer<double> c_, s_, inv_mass_, mass_p_, absorb_values_, bd_, x_, y_, acc_, x0_, rp_, result_, sea_values_;
  DeviceBuffer<float> c32_, s32_;
  DeviceBuffer<long long> sea_nodes_, absorb_nodes_;
  std::vector<double> sea_values_host_;
  DeviceBuffer<double> sea_floor_[3];  // the nested form's seafloor values at t, t + dt/2, t + dt
  double sea_floor_time_ = std::numeric_limits<double>::quiet_NaN();  // the time of sea_floor_[0]
  cudaEvent_t start_{}, mid_{}, stop_{};
  double operator_seconds_ = 0, kernel_seconds_ = 0, norm0_ = 0, damping_ = 0;
  bool initial_state_ready_ = false;
  std::size_t applies_ = 0, steps_ = 0;
};

}  // namespace

template <int dim>
std::unique_ptr<WaveStepper> make_device_wave_stepper(const WaveOperator<dim>& op, const DeviceWaveOptions& options) {
  if (options.device >= 0) TCFEM_CUDA_CHECK(cudaSetDevice(options.device));
  return std::make_unique<DeviceWaveStepper<dim>>(op, options);
}
template std::unique_ptr<WaveStepper> make_device_wave_stepper<2>(const WaveOperator<2>&, const DeviceWaveOptions&);
template std::unique_ptr<WaveStepper> make_device_wave_stepper<3>(const WaveOperator<3>&, const DeviceWaveOptions&);

template <int dim>
void device_wave_rate(const WaveOperator<dim>& op, double t, const double* x, double* r, WaveGeometryForm form,
                      WaveCores cores, WaveStorage storage) {
  DeviceWaveOptions options;
  options.geometry_form = form;
  options.cores = cores;
  options.geometry_storage = storage;
  DeviceWaveStepper<dim> s(op, options);
  s.rate(t, x, r);
}
template void device_wave_rate<2>(const WaveOperator<2>&, double, const double*, double*, WaveGeometryForm, WaveCores, WaveStorage);
template void device_wave_rate<3>(const WaveOperator<3>&, double, const double*, double*, WaveGeometryForm, WaveCores, WaveStorage);

}  // namespace tcfem::wave
