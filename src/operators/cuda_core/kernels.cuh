#pragma once
// __global__ kernels of the cuda-core family: they run the block programs of operators/cuda_core/blocks.h
// (cg) and operators/cuda_core/dg_blocks.h (dg) on the work items they take from the queue counter, with
// barriers between phases and shuffles inside the line phases.
#include <cuda_runtime.h>

#include <type_traits>

#include "operators/cuda_core/blocks.h"
#include "operators/cuda_core/dg_blocks.h"

namespace tcfem::operators::cuda_core {

inline constexpr unsigned full_mask = 0xffffffffu;

/// f(item) for the work items this block takes from the queue (3D: blocks are the workers).
template <class F>
__device__ inline void block_items(unsigned* queue, std::int64_t items, F&& f) {
  __shared__ unsigned next_item;
  for (;;) {
    if (threadIdx.x == 0) next_item = atomicAdd(queue, 1u);
    __syncthreads();
    const std::int64_t item = next_item;
    __syncthreads();
    if (item >= items) return;
    f(item);
  }
}

/// f(item) for the work items this warp takes from the queue (2D: warps are the workers).
template <class F>
__device__ inline void warp_items(unsigned* queue, std::int64_t items, F&& f) {
  for (;;) {
    unsigned item = 0;
    if (threadIdx.x % warp_lanes == 0) item = atomicAdd(queue, 1u);
    item = __shfl_sync(full_mask, item, 0);
    if (item >= items) return;
    f(std::int64_t(item));
  }
}

/// One cg line phase: every warp takes units warp, warp + warps, ... (uniform over its lanes, so
/// the shuffle sees all 32 lanes).
template <class Prog, class Compute, class Store>
__device__ inline void line_phase(int n_units, Compute&& compute, Store&& store) {
  const int warp = threadIdx.x / warp_lanes, lane = threadIdx.x % warp_lanes, warps = blockDim.x / warp_lanes;
  for (int unit = warp; unit < n_units; unit += warps) {
    typename Prog::LineOut o;
    compute(unit, lane, o);
    const auto la = __shfl_up_sync(full_mask, o.a[Prog::n - 1], Prog::delta);
    const auto lb = __shfl_up_sync(full_mask, o.b[Prog::n - 1], Prog::delta);
    store(o, la, lb);
  }
}

template <int k, typename Number>
__global__ void __launch_bounds__(Cg3Program<k, Number>::L.threads, Cg3Program<k, Number>::L.min_blocks)
    cg3_kernel(const __grid_constant__ CgParams<3, k, Number> p, const Number* __restrict__ src,
               Number* __restrict__ dst) {
  using Prog = Cg3Program<k, Number>;
  using Out = typename Prog::LineOut;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const auto sm = Prog::smem_arrays(reinterpret_cast<Number*>(smem_raw));
  auto lines = [&](int np) {
    line_phase<Prog>(
        line_units(Prog::L, np), [&](int u, int l, Out& o) { Prog::x_compute(p, sm, u, l, np, o); },
        [&](Out& o, Number a, Number b) { Prog::x_store(sm, o, a, b); });
    __syncthreads();
    line_phase<Prog>(
        line_units(Prog::L, np), [&](int u, int l, Out& o) { Prog::y_compute(p, sm, u, l, np, o); },
        [&](Out& o, Number a, Number b) { Prog::y_store(sm, o, a, b); });
    __syncthreads();
  };
  block_items(p.queue, p.n_items(), [&](std::int64_t item) {
    const auto blk = Prog::block(p, p.segment(item));
    typename Prog::Thread th;
    Prog::init(p, blk, threadIdx.x, th);
    Prog::load_bottom(p, blk, th, sm, src, dst);
    Prog::prefetch(p, th, blk.cz0, src);
    __syncthreads();
    lines(1);
    Prog::column_start(th, sm);
    Prog::put(p, th, blk.cz0, sm, dst);
    if (blk.cz0 + 1 < blk.cz1) Prog::prefetch(p, th, blk.cz0 + 1, src);
    __syncthreads();
    for (int cz = blk.cz0; cz < blk.cz1; ++cz) {
      lines(k);
      Prog::column_output(p, blk, th, cz, sm, dst);
      if (cz + 1 < blk.cz1) {
        Prog::put(p, th, cz + 1, sm, dst);
        if (cz + 2 < blk.cz1) Prog::prefetch(p, th, cz + 2, src);
      }
      __syncthreads();
    }
    Prog::finish(p, blk, th, dst);
  });
}

template <int k, typename Number>
__global__ void __launch_bounds__(Cg2Program<k, Number>::L.warps * warp_lanes, 4)
    cg2_kernel(const __grid_constant__ CgParams<2, k, Number> p, const Number* __restrict__ src,
               Number* __restrict__ dst) {
  using Prog = Cg2Program<k, Number>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / warp_lanes, lane = threadIdx.x % warp_lanes;
  const auto sm = Prog::smem_arrays(reinterpret_cast<Number*>(smem_raw), warp);
  auto lines = [&](int np) {
    for (int unit = 0; unit < line_units(Prog::L, np); ++unit) {
      typename Prog::LineOut o;
      Prog::x_compute(p, sm, unit, lane, np, o);
      const Number la = __shfl_up_sync(full_mask, o.a[k], Prog::delta);
      const Number lb = __shfl_up_sync(full_mask, o.b[k], Prog::delta);
      Prog::x_store(sm, o, la, lb);
    }
    __syncwarp();
  };
  warp_items(p.queue, p.n_items(), [&](std::int64_t item) {
    const auto blk = Prog::block(p, p.segment(item));
    typename Prog::Thread th;
    Prog::init(p, blk, lane, th);
    Prog::load_bottom(p, blk, th, sm, src, dst);
    Prog::prefetch(p, th, blk.cy0, src);
    __syncwarp();
    lines(1);
    Prog::column_start(th, sm);
    Prog::put(p, th, blk.cy0, sm, dst);
    if (blk.cy0 + 1 < blk.cy1) Prog::prefetch(p, th, blk.cy0 + 1, src);
    __syncwarp();
    for (int cy = blk.cy0; cy < blk.cy1; ++cy) {
      lines(k);
      Prog::column_output(p, blk, th, cy, sm, dst);
      if (cy + 1 < blk.cy1) {
        Prog::put(p, th, cy + 1, sm, dst);
        if (cy + 2 < blk.cy1) Prog::prefetch(p, th, cy + 2, src);
      }
      __syncwarp();
    }
    Prog::finish(p, blk, th, dst);
  });
}

/// One dg line phase: each item receives the face data of the items left and right of it.
template <class Prog, class Compute, class Finish>
__device__ inline void dg_line_phase(int n_units, Compute&& compute, Finish&& finish) {
  const int warp = threadIdx.x / warp_lanes, lane = threadIdx.x % warp_lanes, warps = blockDim.x / warp_lanes;
  for (int unit = warp; unit < n_units; unit += warps) {
    typename Prog::LineOut o;
    compute(unit, lane, o);
    const auto l_uk = __shfl_up_sync(full_mask, o.f.uk, Prog::delta);
    const auto l_g1 = __shfl_up_sync(full_mask, o.f.g1, Prog::delta);
    const auto r_u0 = __shfl_down_sync(full_mask, o.f.u0, Prog::delta);
    const auto r_g0 = __shfl_down_sync(full_mask, o.f.g0, Prog::delta);
    finish(o, l_uk, l_g1, r_u0, r_g0);
  }
}

template <int k, typename Number>
__global__ void __launch_bounds__(Dg3Program<k, Number>::L.threads, Dg3Program<k, Number>::L.min_blocks)
    dg3_kernel(const __grid_constant__ DgParams<3, k, Number> p, const Number* __restrict__ src,
               Number* __restrict__ dst) {
  using Prog = Dg3Program<k, Number>;
  using Out = typename Prog::LineOut;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const auto sm = Prog::smem_arrays(reinterpret_cast<Number*>(smem_raw));
  block_items(p.queue, p.n_items(), [&](std::int64_t item) {
    const auto blk = Prog::block(p, p.segment(item));
    typename Prog::Thread th;
    Prog::init(p, blk, threadIdx.x, th);
    Prog::start(p, blk, th, src);
    for (int cz = blk.cz0; cz < blk.cz1; ++cz) {
      Prog::halo(p, blk, threadIdx.x, cz, sm, src);
      Prog::column(p, blk, th, cz, sm, src);
      __syncthreads();
      dg_line_phase<Prog>(
          x_line_units(Prog::L), [&](int u, int l, Out& o) { Prog::x_compute(p, sm, u, l, o); },
          [&](Out& o, Number a, Number b, Number c, Number d) { Prog::x_finish(p, blk, sm, o, a, b, c, d); });
      __syncthreads();
      dg_line_phase<Prog>(
          y_line_units(Prog::L), [&](int u, int l, Out& o) { Prog::y_compute(p, sm, u, l, o); },
          [&](Out& o, Number a, Number b, Number c, Number d) { Prog::y_finish(p, blk, sm, o, a, b, c, d, cz, dst); });
      __syncthreads();
    }
  });
}

template <int k, typename Number>
__global__ void __launch_bounds__(Dg2Program<k, Number>::L.warps * warp_lanes, 4)
    dg2_kernel(const __grid_constant__ DgParams<2, k, Number> p, const Number* __restrict__ src,
               Number* __restrict__ dst) {
  using Prog = Dg2Program<k, Number>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int warp = threadIdx.x / warp_lanes, lane = threadIdx.x % warp_lanes;
  const auto sm = Prog::smem_arrays(reinterpret_cast<Number*>(smem_raw), warp);
  warp_items(p.queue, p.n_items(), [&](std::int64_t item) {
    const auto blk = Prog::block(p, p.segment(item));
    typename Prog::Thread th;
    Prog::init(p, blk, lane, th);
    Prog::start(p, blk, th, src);
    for (int cy = blk.cy0; cy < blk.cy1; ++cy) {
      Prog::halo(p, blk, lane, cy, sm, src);
      Prog::column(p, blk, th, cy, sm, src);
      __syncwarp();
      for (int unit = 0; unit < line_units(Prog::L); ++unit) {
        typename Prog::LineOut o;
        Prog::x_compute(p, sm, unit, lane, o);
        const Number l_uk = __shfl_up_sync(full_mask, o.f.uk, Prog::delta);
        const Number l_g1 = __shfl_up_sync(full_mask, o.f.g1, Prog::delta);
        const Number r_u0 = __shfl_down_sync(full_mask, o.f.u0, Prog::delta);
        const Number r_g0 = __shfl_down_sync(full_mask, o.f.g0, Prog::delta);
        Prog::x_finish(p, blk, sm, o, l_uk, l_g1, r_u0, r_g0, cy, dst);
      }
      __syncwarp();
    }
  });
}

}  // namespace tcfem::operators::cuda_core
