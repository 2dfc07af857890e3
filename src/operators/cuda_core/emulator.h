#pragma once
// Host emulation of the cuda-core kernels: runs the block programs of operators/cuda_core/blocks.h and
// operators/cuda_core/dg_blocks.h phase by phase, thread by thread, with the shuffle replaced by reading the
// neighbouring lane's result. The kernels in operators/cuda_core/kernels.cuh call the same phase functions
// in the same order, so CPU tests of the emulator check the device kernels' index logic, tiling,
// work distribution, zeroing and boundary handling (the barriers and shuffles themselves need the device tests).
#include <cstdint>
#include <vector>

#include "operators/cuda_core/blocks.h"
#include "operators/cuda_core/dg_blocks.h"

namespace tcfem::operators::cuda_core {

/// One line phase of one block: all warps' units, lanes computed first, then stored.
template <class Prog, class Compute, class Store>
void emulate_line_phase(int n_units, Compute&& compute, Store&& store) {
  std::vector<typename Prog::LineOut> outs(warp_lanes);
  for (int unit = 0; unit < n_units; ++unit) {
    for (int l = 0; l < warp_lanes; ++l) compute(unit, l, outs[l]);
    for (int l = warp_lanes - 1; l >= 0; --l) {
      // lane l receives lane (l - delta)'s result as it was before any store (shfl_up keeps the
      // own value for l < delta)
      const auto& left = outs[l >= Prog::delta ? l - Prog::delta : l];
      store(outs[l], left.a[Prog::n - 1], left.b[Prog::n - 1]);
    }
  }
}

/// dst = A src with the 3D cg block program. Only the nodes updated with atomics are zeroed first
/// (the operator zeroes all of dst), so the tests also check that the program writes every other node.
/// `zero` false: nothing is zeroed (a launch of a split apply adds to what dst holds; p.region
/// the launch's tiles and layers).
template <int k, typename Number>
void emulate_cg3(const CgParams<3, k, Number>& p, const Number* src, Number* dst, bool zero = true) {
  using Prog = Cg3Program<k, Number>;
  constexpr auto L = Prog::L;
  if (zero) Prog::zero_nodes(p, 0, 1, [&](std::int64_t i) { dst[i] = Number(0); });
  std::vector<Number> smem(Prog::smem_elements());
  const auto sm = Prog::smem_arrays(smem.data());
  std::vector<typename Prog::Thread> th(L.threads);
  auto lines = [&](int np) {
    emulate_line_phase<Prog>(
        line_units(L, np), [&](int u, int l, typename Prog::LineOut& o) { Prog::x_compute(p, sm, u, l, np, o); },
        [&](typename Prog::LineOut& o, Number a, Number c) { Prog::x_store(sm, o, a, c); });
    emulate_line_phase<Prog>(
        line_units(L, np), [&](int u, int l, typename Prog::LineOut& o) { Prog::y_compute(p, sm, u, l, np, o); },
        [&](typename Prog::LineOut& o, Number a, Number c) { Prog::y_store(sm, o, a, c); });
  };
  for (std::int64_t item = 0; item < p.n_items(); ++item) {
      const auto blk = Prog::block(p, p.segment(item));
      for (int t = 0; t < L.threads; ++t) Prog::init(p, blk, t, th[t]);
      for (auto& t : th) {
        Prog::load_bottom(p, blk, t, sm, src, dst);
        Prog::prefetch(p, t, blk.cz0, src);
      }
      lines(1);
      for (auto& t : th) {
        Prog::column_start(t, sm);
        Prog::put(p, t, blk.cz0, sm, dst);
        if (blk.cz0 + 1 < blk.cz1) Prog::prefetch(p, t, blk.cz0 + 1, src);
      }
      for (int cz = blk.cz0; cz < blk.cz1; ++cz) {
        lines(k);
        for (auto& t : th) {
          Prog::column_output(p, blk, t, cz, sm, dst);
          if (cz + 1 < blk.cz1) {
            Prog::put(p, t, cz + 1, sm, dst);
            if (cz + 2 < blk.cz1) Prog::prefetch(p, t, cz + 2, src);
          }
        }
      }
      for (auto& t : th) Prog::finish(p, blk, t, dst);
    }
}

/// dst = A src with the 2D cg block program (zeroing as in emulate_cg3).
template <int k, typename Number>
void emulate_cg2(const CgParams<2, k, Number>& p, const Number* src, Number* dst, bool zero = true) {
  using Prog = Cg2Program<k, Number>;
  constexpr auto L = Prog::L;
  if (zero) Prog::zero_nodes(p, 0, 1, [&](std::int64_t i) { dst[i] = Number(0); });
  std::vector<Number> smem(Prog::smem_elements());
  const auto sm = Prog::smem_arrays(smem.data(), 0);
  std::vector<typename Prog::Thread> th(warp_lanes);
  auto lines = [&](int np) {
    emulate_line_phase<Prog>(
        line_units(L, np), [&](int u, int l, typename Prog::LineOut& o) { Prog::x_compute(p, sm, u, l, np, o); },
        [&](typename Prog::LineOut& o, Number a, Number c) { Prog::x_store(sm, o, a, c); });
  };
  for (std::int64_t item = 0; item < p.n_items(); ++item) {
      const auto blk = Prog::block(p, p.segment(item));
      for (int l = 0; l < warp_lanes; ++l) Prog::init(p, blk, l, th[l]);
      for (auto& t : th) {
        Prog::load_bottom(p, blk, t, sm, src, dst);
        Prog::prefetch(p, t, blk.cy0, src);
      }
      lines(1);
      for (auto& t : th) {
        Prog::column_start(t, sm);
        Prog::put(p, t, blk.cy0, sm, dst);
        if (blk.cy0 + 1 < blk.cy1) Prog::prefetch(p, t, blk.cy0 + 1, src);
      }
      for (int cy = blk.cy0; cy < blk.cy1; ++cy) {
        lines(k);
        for (auto& t : th) {
          Prog::column_output(p, blk, t, cy, sm, dst);
          if (cy + 1 < blk.cy1) {
            Prog::put(p, t, cy + 1, sm, dst);
            if (cy + 2 < blk.cy1) Prog::prefetch(p, t, cy + 2, src);
          }
        }
      }
      for (auto& t : th) Prog::finish(p, blk, t, dst);
    }
}

/// One dg line phase of one block (face data exchanged with the lanes delta to the left and right).
template <class Prog, class Compute, class Finish>
void emulate_dg_line_phase(int n_units, Compute&& compute, Finish&& finish) {
  std::vector<typename Prog::LineOut> outs(warp_lanes);
  for (int unit = 0; unit < n_units; ++unit) {
    for (int l = 0; l < warp_lanes; ++l) compute(unit, l, outs[l]);
    std::vector<typename Prog::LineOut> before = outs;
    for (int l = 0; l < warp_lanes; ++l) {
      const auto& left = before[l >= Prog::delta ? l - Prog::delta : l];
      const auto& right = before[l + Prog::delta < warp_lanes ? l + Prog::delta : l];
      finish(outs[l], left.f.uk, left.f.g1, right.f.u0, right.f.g0);
    }
  }
}

/// dst = A src with the 3D dg block program.
template <int k, typename Number>
void emulate_dg3(const DgParams<3, k, Number>& p, const Number* src, Number* dst) {
  using Prog = Dg3Program<k, Number>;
  using Out = typename Prog::LineOut;
  constexpr auto L = Prog::L;
  std::vector<Number> smem(Prog::smem_elements());
  const auto sm = Prog::smem_arrays(smem.data());
  std::vector<typename Prog::Thread> th(L.threads);
  for (std::int64_t item = 0; item < p.n_items(); ++item) {
      const auto blk = Prog::block(p, p.segment(item));
      for (int t = 0; t < L.threads; ++t) {
        Prog::init(p, blk, t, th[t]);
        Prog::start(p, blk, th[t], src);
      }
      for (int cz = blk.cz0; cz < blk.cz1; ++cz) {
        for (int t = 0; t < L.threads; ++t) {
          Prog::halo(p, blk, t, cz, sm, src);
          Prog::column(p, blk, th[t], cz, sm, src);
        }
        emulate_dg_line_phase<Prog>(
            x_line_units(L), [&](int u, int l, Out& o) { Prog::x_compute(p, sm, u, l, o); },
            [&](Out& o, Number a, Number c, Number d, Number e) { Prog::x_finish(p, blk, sm, o, a, c, d, e); });
        emulate_dg_line_phase<Prog>(
            y_line_units(L), [&](int u, int l, Out& o) { Prog::y_compute(p, sm, u, l, o); },
            [&](Out& o, Number a, Number c, Number d, Number e) { Prog::y_finish(p, blk, sm, o, a, c, d, e, cz, dst); });
      }
    }
}

/// dst = A src with the 2D dg block program.
template <int k, typename Number>
void emulate_dg2(const DgParams<2, k, Number>& p, const Number* src, Number* dst) {
  using Prog = Dg2Program<k, Number>;
  using Out = typename Prog::LineOut;
  constexpr auto L = Prog::L;
  std::vector<Number> smem(Prog::smem_elements());
  std::vector<typename Prog::Thread> th(warp_lanes);
  const auto sm = Prog::smem_arrays(smem.data(), 0);
  for (std::int64_t item = 0; item < p.n_items(); ++item) {
      const auto blk = Prog::block(p, p.segment(item));
      for (int l = 0; l < warp_lanes; ++l) {
        Prog::init(p, blk, l, th[l]);
        Prog::start(p, blk, th[l], src);
      }
      for (int cy = blk.cy0; cy < blk.cy1; ++cy) {
        for (int l = 0; l < warp_lanes; ++l) {
          Prog::halo(p, blk, l, cy, sm, src);
          Prog::column(p, blk, th[l], cy, sm, src);
        }
        emulate_dg_line_phase<Prog>(
            line_units(L), [&](int u, int l, Out& o) { Prog::x_compute(p, sm, u, l, o); },
            [&](Out& o, Number a, Number c, Number d, Number e) { Prog::x_finish(p, blk, sm, o, a, c, d, e, cy, dst); });
      }
    }
}

}  // namespace tcfem::operators::cuda_core
