#pragma once
// __global__ code of the tensor-core family: the Cartesian cg Laplacian and the self part of the
// SIPG (dg) Laplacian by sum factorization with every 1D contraction a warp-level mma
// (operators/tensor_core/layouts.h explains the algorithm, the row and column maps and the shared-memory
// layout). One kernel body for every dimension, degree, precision and discretization:
//   template <int dim, int n, class Policy, bool dg>  (Policy from precision/policies.cuh)
// A block of W warps runs batches of C cells: gather (global -> slot 1 of shared memory; cg:
// Dirichlet nodes read as 0), dim phases (load_a from shared memory -> mma with the B operands held
// in registers for the whole kernel -> store back in place), scatter (cg: interior nodes,
// atomicAdd; dg: every DoF of the cell, dst += v, one thread per DoF: no atomics).
#include <cstdint>
#include <type_traits>
#include <utility>

#include "arch/mma_atoms.cuh"
#include "operators/tensor_core/laplace.h"
#include "operators/tensor_core/layouts.h"
#include "precision/policies.cuh"

namespace tcfem::operators::tensor_core {

/// f(std::integral_constant<int, 0>), ..., f(std::integral_constant<int, N - 1>).
template <int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

/// Compile-time facts of one kernel instantiation. dg: the cell-wise DoF numbering of the SIPG
/// space (n^dim DoFs per cell, cells in lexicographic order), the 1D matrices M and S_d
/// (operators/tensor_core/dg_faces.h), dst += scale * v (dst holds the face terms).
template <int dim_, int n_, class Policy_, bool dg_ = false>
struct CgConfig {
  static constexpr bool dg = dg_;
  using Policy = Policy_;
  using Atom = typename Policy::Atom;
  using Storage = typename Policy::Storage;
  static constexpr int dim = dim_;
  static constexpr int n = n_;
  static constexpr bool packed16 = Atom::RegistersA::elements_per_register == 2;
  static constexpr AtomShape shape{static_cast<int>(sizeof(Storage)), Atom::M, Atom::K, packed16};
  static constexpr CgLayout layout = make_cg_layout(dim, n, shape);
  static_assert(layout.cell_stride > 0, "no conflict-free layout found");
  static_assert(Atom::N == atom_n, "the kernels assume N = 8 instructions");
  static_assert(layout.cells % (shape.word_bytes == 8 ? 4 : 8) == 0, "lockstep cells must fill a (half-)warp");
  /// Bytes of dynamic shared memory: the tensors, then [3][C] node bases and [3][C] cell flags.
  static constexpr int tensor_bytes = ((layout.smem_words() * static_cast<int>(sizeof(Storage)) + 15) / 16) * 16;
  static constexpr int smem_bytes = tensor_bytes + 3 * layout.cells * (8 + 4);
  /// Blocks per multiprocessor the registers must allow: about 16 warps.
  static constexpr int min_blocks = layout.warps >= 16 ? 1 : 16 / layout.warps;
};

/// The B operands of phase p: [K chunk][N tile], built once per thread.
template <class Policy, int chunks, int tiles>
struct PhaseOperands {
  typename Policy::OperandB b[chunks][tiles];
};
template <class Config, int p>
using PhaseOperandsOf = PhaseOperands<typename Config::Policy, k_chunks(Config::layout, p), n_tiles(Config::layout, p)>;
struct NoOperands {};

template <class Config, int p, class Ops>
__device__ __forceinline__ void build_phase_operands(Ops& ops, const double* __restrict__ matrices, int lane) {
  using Policy = typename Config::Policy;
  using Atom = typename Config::Atom;
  using Storage = typename Config::Storage;
  constexpr CgLayout L = Config::layout;
  constexpr int n = L.n;
  constexpr PhaseKind kind = phase_kind(L.dim, p);
  const double* mass = matrices;
  const double* laplace = matrices + (1 + phase_direction(L.dim, p)) * n * n;
  static_for<k_chunks(L, p)>([&](auto kc_constant) {
    static_for<n_tiles(L, p)>([&](auto nt_constant) {
      constexpr int kc = decltype(kc_constant)::value, nt = decltype(nt_constant)::value;
      Storage values[Policy::b_elements];
#pragma unroll
      for (int e = 0; e < Policy::b_elements; ++e) {
        const int j = kc * L.atom.k + kperm(Config::packed16, Atom::b_row(lane, e));
        const int i = nt * atom_n + nperm(Atom::b_col(lane, e));
        const BEntry entry = b_entry(kind, n, j, i);
        double v = 0.0;
        if (entry.matrix == Matrix1D::mass) v = mass[entry.row * n + entry.col];
        if (entry.matrix == Matrix1D::laplace) v = laplace[entry.row * n + entry.col];
        values[e] = static_cast<Storage>(v);
      }
      Policy::make_b(ops.b[kc][nt], values);
    });
  });
}

/// One phase: every tile of this warp: A from shared memory, mma, C back in place.
/// Addressing: lane (g, t) touches logical columns jbase + t (jbase a compile-time constant per
/// fragment element), so an address is row pointer (smem + row base + t * stride, once per tile)
/// + a compile-time offset; only groups of four columns that straddle the two concatenated slots
/// add a per-lane adjustment, and only groups past the end need a per-lane predicate.
template <class Config, int p, class Ops>
__device__ __forceinline__ void run_phase(typename Config::Storage* smem, const Ops& ops, int warp, int lane) {
  using Policy = typename Config::Policy;
  using Atom = typename Config::Atom;
  using Storage = typename Config::Storage;
  constexpr CgLayout L = Config::layout;
  constexpr int d = phase_direction(L.dim, p);
  constexpr PhaseKind kind = phase_kind(L.dim, p);
  constexpr int KC = k_chunks(L, p), NT = n_tiles(L, p);
  constexpr int k_end = k_total(kind, L.n), n_end = n_total(kind, L.n);
  constexpr int row_halves = Atom::M / 8;
  constexpr int S = L.stride[d];
  const int g = (lane & 31) >> 2, t = lane & 3;

  // per-lane corrections of the affine address (jbase + t) * S (+ slot): nonzero only where a
  // group of four columns straddles the slots; validity only for groups past the end
  int in_adj[KC][Policy::a_elements];
  bool in_valid[KC][Policy::a_elements];
  int out_adj[NT][Atom::c_elements];
  bool out_valid[NT][Atom::c_elements];
#pragma unroll
  for (int kc = 0; kc < KC; ++kc)
#pragma unroll
    for (int e = 0; e < Policy::a_elements; ++e) {
      const int jbase = kc * L.atom.k + kperm(Config::packed16, Atom::a_col(0, e));
      in_valid[kc][e] = jbase + 3 < k_end || jbase + t < k_end;
      in_adj[kc][e] = in_adjust(L, p, jbase, t);
    }
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < Atom::c_elements; ++e) {
      const int ibase = nt * atom_n + nperm(Atom::c_col(0, e));
      out_valid[nt][e] = ibase + 3 < n_end || ibase + t < n_end;
      out_adj[nt][e] = out_adjust(L, p, ibase, t);
    }

  for (int tile = warp; tile < L.tiles(); tile += L.warps) {
    Storage* row[row_halves];
    bool valid[row_halves];
#pragma unroll
    for (int h = 0; h < row_halves; ++h) {
      // rows tile * M + 8h + g: warp-uniform line (C >= 8), cell = uniform + g
      const RowRef ref = row_ref_split(L, d, tile * Atom::M + 8 * h, g);
      row[h] = smem + ref.base + t * S;
      valid[h] = L.rows() % Atom::M == 0 || ref.valid;  // padding rows only where tiles do not divide
    }
    typename Policy::Accumulator acc[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) Policy::clear(acc[nt]);
    static_for<KC>([&](auto kc_constant) {
      constexpr int kc = decltype(kc_constant)::value;
      Storage values[Policy::a_elements];
#pragma unroll
      for (int e = 0; e < Policy::a_elements; ++e) {
        const int h = Atom::a_row(0, e) >> 3;  // the same for every lane
        const int jbase = kc * L.atom.k + kperm(Config::packed16, Atom::a_col(0, e));
        const int offset = in_offset(L, p, jbase) + in_adj[kc][e];
        values[e] = (valid[h] && in_valid[kc][e]) ? row[h][offset] : Storage(0);
      }
      typename Policy::OperandA a;
      Policy::make_a(a, values);
      static_for<NT>([&](auto nt_constant) {
        constexpr int nt = decltype(nt_constant)::value;
        if constexpr (block_nonzero(Config::layout, p, kc, nt)) Policy::mma(acc[nt], a, ops.b[kc][nt]);
      });
    });
    __syncwarp();  // every lane's loads of these lines are done before any lane overwrites them
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const typename Atom::FragC c = Policy::resolve(acc[nt]);
#pragma unroll
      for (int e = 0; e < Atom::c_elements; ++e) {
        const int h = Atom::c_row(0, e) >> 3;
        const int ibase = nt * atom_n + nperm(Atom::c_col(0, e));
        const int offset = out_offset(L, p, ibase) + out_adj[nt][e];
        if (valid[h] && out_valid[nt][e]) row[h][offset] = static_cast<Storage>(Atom::get_c(c, e));
      }
    }
  }
}

/// Per-cell data of a batch: global index of the cell's first node, boundary flags (bit 2e: on the
/// lower boundary of direction e, bit 2e+1: upper), -1 for cells past the end. 32-bit cell numbers
/// (the host checks that the mesh has fewer than 2^31 cells).
template <class Config>
__device__ __forceinline__ void write_cell_info(const CgKernelParams<typename Config::Storage>& prm,
                                                std::int64_t batch, std::int64_t* info_base, int* info_flags, int tid) {
  constexpr CgLayout L = Config::layout;
  constexpr int k = L.n - 1;
  if (tid >= L.cells) return;
  const std::int64_t cell = batch * L.cells + tid;
  if (cell >= prm.total_cells) {
    info_base[tid] = 0;
    info_flags[tid] = -1;
    return;
  }
  if constexpr (Config::dg) {
    info_base[tid] = cell * L.nodes_per_cell();
    info_flags[tid] = 0;
    return;
  }
  unsigned rest = static_cast<unsigned>(cell);
  std::int64_t base = 0, stride = 1;
  int flags = 0;
#pragma unroll
  for (int e = 0; e < L.dim; ++e) {
    const unsigned extent = static_cast<unsigned>(prm.n_cells[e]);
    const unsigned c = rest % extent;
    rest /= extent;
    base += std::int64_t(c) * k * stride;
    stride *= prm.lattice[e];
    flags |= (c == 0 ? 1 : 0) << (2 * e);
    flags |= (c == extent - 1 ? 1 : 0) << (2 * e + 1);
  }
  info_base[tid] = base;
  info_flags[tid] = flags;
}

/// Whether the item's node lies on the Dirichlet boundary in a direction below the outermost one
/// (or the cell is past the end).
template <int dim, int n>
__device__ __forceinline__ bool on_inner_boundary(int flags, const NodeRef& ref) {
  bool b = flags < 0;
#pragma unroll
  for (int e = 0; e < dim - 1; ++e)
    b |= (((flags >> (2 * e)) & 1) && ref.local[e] == 0) || (((flags >> (2 * e + 1)) & 1) && ref.local[e] == n - 1);
  return b;
}

template <class Config>
__global__ void __launch_bounds__(Config::layout.threads(), Config::min_blocks)
    cg_laplace_kernel(const CgKernelParams<typename Config::Storage> prm,
                      const typename Config::Storage* __restrict__ src, typename Config::Storage* __restrict__ dst) {
  using Storage = typename Config::Storage;
  constexpr CgLayout L = Config::layout;
  constexpr int dim = L.dim, n = L.n;
  constexpr int threads = L.threads();
  constexpr int outer = dim - 1;                   // outermost direction (z in 3D, y in 2D)
  constexpr int outer_smem = L.outer_stride();     // its stride in shared memory
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Storage* tensors = reinterpret_cast<Storage*>(smem_raw);
  std::int64_t* info_base = reinterpret_cast<std::int64_t*>(smem_raw + Config::tensor_bytes);
  int* info_flags = reinterpret_cast<int*>(info_base + 3 * L.cells);
  const int tid = static_cast<int>(threadIdx.x);
  // lane and warp from bit operations, so that the compiler knows 0 <= lane < 32
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31u);
  // global strides of y and of the outermost direction (dg: inside the cell's block of DoFs)
  const std::int64_t row_global = Config::dg ? n : prm.lattice[0];
  const std::int64_t outer_global =
      Config::dg ? (dim == 3 ? n * n : n) : (dim == 3 ? prm.lattice[0] * prm.lattice[1] : prm.lattice[0]);

  PhaseOperandsOf<Config, 0> ops0;
  PhaseOperandsOf<Config, 1> ops1;
  std::conditional_t<dim == 3, PhaseOperandsOf<Config, dim - 1>, NoOperands> ops2;
  build_phase_operands<Config, 0>(ops0, prm.matrices, lane);
  build_phase_operands<Config, 1>(ops1, prm.matrices, lane);
  if constexpr (dim == 3) build_phase_operands<Config, 2>(ops2, prm.matrices, lane);

  std::int64_t batch = blockIdx.x;
  if (batch >= prm.n_batches) return;
  write_cell_info<Config>(prm, batch, info_base, info_flags, tid);
  __syncthreads();
  for (int iteration = 0; batch < prm.n_batches; batch += gridDim.x, ++iteration) {
    const int slot = iteration % 3;
    const std::int64_t* cell_base = info_base + slot * L.cells;
    const int* cell_flags = info_flags + slot * L.cells;
    // gather u into slot 1: per item the n nodes along the outermost direction, loads first
#pragma unroll 1
    for (int s = 0; s < L.plane_iterations(); ++s) {
      const NodeRef ref = plane_node_ref(L, s * threads + tid);
      if (!ref.valid) continue;
      const int flags = cell_flags[ref.cell];
      const bool skip = Config::dg ? flags < 0 : on_inner_boundary<dim, n>(flags, ref);
      const bool low = !Config::dg && ((flags >> (2 * outer)) & 1), high = !Config::dg && ((flags >> (2 * outer + 1)) & 1);
      const Storage* p = src + cell_base[ref.cell] + ref.local[0] + (dim == 3 ? ref.local[1] * row_global : 0);
      Storage values[n];
#pragma unroll
      for (int o = 0; o < n; ++o) {
        const bool b = skip || (o == 0 && low) || (o == n - 1 && high);
        values[o] = b ? Storage(0) : p[o * outer_global];
      }
#pragma unroll
      for (int o = 0; o < n; ++o) tensors[ref.offset + L.tensor_stride + o * outer_smem] = values[o];
    }
    if (batch + gridDim.x < prm.n_batches)
      write_cell_info<Config>(prm, batch + gridDim.x, info_base + ((iteration + 1) % 3) * L.cells,
                              info_flags + ((iteration + 1) % 3) * L.cells, tid);
    __syncthreads();
    run_phase<Config, 0>(tensors, ops0, warp, lane);
    __syncthreads();
    run_phase<Config, 1>(tensors, ops1, warp, lane);
    __syncthreads();
    if constexpr (dim == 3) {
      run_phase<Config, 2>(tensors, ops2, warp, lane);
      __syncthreads();
    }
    // scatter v (slot 0) into the interior nodes
#pragma unroll 1
    for (int s = 0; s < L.plane_iterations(); ++s) {
      const NodeRef ref = plane_node_ref(L, s * threads + tid);
      if (!ref.valid) continue;
      const int flags = cell_flags[ref.cell];
      Storage* p = dst + cell_base[ref.cell] + ref.local[0] + (dim == 3 ? ref.local[1] * row_global : 0);
      if constexpr (Config::dg) {
        // every DoF of the cell belongs to this thread alone: read-modify-write, no atomics
        if (flags < 0) continue;
        Storage values[n];
#pragma unroll
        for (int o = 0; o < n; ++o) values[o] = p[o * outer_global];
#pragma unroll
        for (int o = 0; o < n; ++o) p[o * outer_global] = values[o] + prm.scale * tensors[ref.offset + o * outer_smem];
        continue;
      }
      if (on_inner_boundary<dim, n>(flags, ref)) continue;
      const bool low = (flags >> (2 * outer)) & 1, high = (flags >> (2 * outer + 1)) & 1;
#pragma unroll
      for (int o = 0; o < n; ++o) {
        if ((o == 0 && low) || (o == n - 1 && high)) continue;
        atomicAdd(p + o * outer_global, prm.scale * tensors[ref.offset + o * outer_smem]);
      }
    }
  }
}

/// dst_b = src_b on the boundary nodes of the lattice (enumerated face by face).
template <int dim, typename Storage>
__global__ void cg_boundary_copy_kernel(std::int64_t lx, std::int64_t ly, std::int64_t lz,
                                        const Storage* __restrict__ src, Storage* __restrict__ dst) {
  const std::int64_t plane = lx * ly;
  const std::int64_t inner_y = ly - 2;
  std::int64_t count;
  if constexpr (dim == 2)
    count = 2 * lx + 2 * inner_y;
  else
    count = 2 * plane + 2 * lx * (lz - 2) + 2 * inner_y * (lz - 2);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t x, y, z = 0, r = i;
    if constexpr (dim == 2) {
      if (r < 2 * lx) {
        y = r < lx ? 0 : ly - 1;
        x = r % lx;
      } else {
        r -= 2 * lx;
        x = r < inner_y ? 0 : lx - 1;
        y = 1 + r % inner_y;
      }
    } else {
      if (r < 2 * plane) {
        z = r < plane ? 0 : lz - 1;
        x = (r % plane) % lx;
        y = (r % plane) / lx;
      } else if ((r -= 2 * plane) < 2 * lx * (lz - 2)) {
        const std::int64_t face = lx * (lz - 2);
        y = r < face ? 0 : ly - 1;
        x = (r % face) % lx;
        z = 1 + (r % face) / lx;
      } else {
        r -= 2 * lx * (lz - 2);
        const std::int64_t face = inner_y * (lz - 2);
        x = r < face ? 0 : lx - 1;
        y = 1 + (r % face) % inner_y;
        z = 1 + (r % face) / inner_y;
      }
    }
    const std::int64_t idx = (z * ly + y) * lx + x;
    dst[idx] = src[idx];
  }
}

}  // namespace tcfem::operators::tensor_core
