#pragma once
// Host emulation of one warp-wide mma: gathers the 32 lanes' fragments into full A, B and C with the
// lane maps, computes D = A B + C, and scatters D back into 32 fragments. Plain C++ (g++, no CUDA);
// works for any type with the LaneMap interface (lane_maps.h), so CPU tests can check the maps and
// the load/store helpers against a naive GEMM.
#include <array>
#include <cmath>

#include "arch/lane_maps.h"

namespace tcfem::arch {

template <class Atom>
using WarpFragmentsA = std::array<typename Atom::FragA, warp_size>;
template <class Atom>
using WarpFragmentsB = std::array<typename Atom::FragB, warp_size>;
template <class Atom>
using WarpFragmentsC = std::array<typename Atom::FragC, warp_size>;

/// D fragments of all lanes for D = A B + C. Products and sums in the accumulator type, one fused
/// multiply-add per k in increasing k (exact products for the narrow formats, as on tensor cores;
/// the hardware's internal accumulation order may differ in the last bits).
template <class Atom>
WarpFragmentsC<Atom> emulate_warp_mma(const WarpFragmentsA<Atom>& a, const WarpFragmentsB<Atom>& b,
                                      const WarpFragmentsC<Atom>& c) {
  using ValueC = typename Atom::ValueC;
  constexpr int M = Atom::M, N = Atom::N, K = Atom::K;
  std::array<ValueC, M * K> a_full{};
  std::array<ValueC, K * N> b_full{};
  std::array<ValueC, M * N> c_full{};
  for (int lane = 0; lane < warp_size; ++lane) {
    for (int i = 0; i < Atom::a_elements; ++i)
      a_full[Atom::a_row(lane, i) * K + Atom::a_col(lane, i)] = static_cast<ValueC>(Atom::get_a(a[lane], i));
    for (int i = 0; i < Atom::b_elements; ++i)
      b_full[Atom::b_row(lane, i) * N + Atom::b_col(lane, i)] = static_cast<ValueC>(Atom::get_b(b[lane], i));
    for (int i = 0; i < Atom::c_elements; ++i)
      c_full[Atom::c_row(lane, i) * N + Atom::c_col(lane, i)] = Atom::get_c(c[lane], i);
  }
  std::array<ValueC, M * N> d_full{};
  for (int row = 0; row < M; ++row)
    for (int col = 0; col < N; ++col) {
      ValueC sum = c_full[row * N + col];
      for (int k = 0; k < K; ++k) sum = std::fma(a_full[row * K + k], b_full[k * N + col], sum);
      d_full[row * N + col] = sum;
    }
  WarpFragmentsC<Atom> d{};
  for (int lane = 0; lane < warp_size; ++lane)
    for (int i = 0; i < Atom::c_elements; ++i)
      Atom::set_c(d[lane], i, d_full[Atom::c_row(lane, i) * N + Atom::c_col(lane, i)]);
  return d;
}

}  // namespace tcfem::arch
