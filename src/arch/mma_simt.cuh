#pragma once
// CUDA-core ("SIMT") twins of the tensor-core atoms: same lane map, same fragments, same mma()
// signature, computed with warp shuffles and FMAs. Kernels switch between an atom and its twin by
// template parameter; the twins also stand in for an instruction the compiled architecture lacks.
#include "arch/lane_maps.h"

namespace tcfem::arch {

/// Lane index within the warp (the %laneid register; independent of the block shape).
__device__ inline int lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return static_cast<int>(lane);
}

/// D = A B + C on CUDA cores for any lane map whose A element index depends only on (row / 8, k)
/// and whose B element index depends only on k (true for every map in lane_maps.h; the unit tests
/// check it). Then, for a fixed C element and k, all lanes read the same register, and the value
/// is fetched from the owning lane with one shuffle. Accumulates in ValueC with one FMA per k in
/// increasing k; products of the narrow formats are exact in FP32.
/// Must be called by all 32 lanes of a warp (shuffles with the full mask).
template <class Map>
struct SimtMma : Map {
  using typename Map::FragA;
  using typename Map::FragB;
  using typename Map::FragC;
  using typename Map::ValueC;
  using Simt = SimtMma<Map>;
  static constexpr bool is_tensor_core = false;
  static constexpr int min_sm = 0;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
    constexpr unsigned full_mask = 0xffffffffu;
    const int lane = lane_id();
    typename Map::ValueA a_values[Map::a_elements];
    typename Map::ValueB b_values[Map::b_elements];
#pragma unroll
    for (int i = 0; i < Map::a_elements; ++i) a_values[i] = Map::get_a(a, i);
#pragma unroll
    for (int i = 0; i < Map::b_elements; ++i) b_values[i] = Map::get_b(b, i);
    ValueC sums[Map::c_elements];
#pragma unroll
    for (int i = 0; i < Map::c_elements; ++i) sums[i] = Map::get_c(c, i);  // c may alias d
#pragma unroll
    for (int i = 0; i < Map::c_elements; ++i) {
      const int row = Map::c_row(lane, i);
      const int col = Map::c_col(lane, i);
      // Element indices from lane 0's coordinates: the same for every lane (see above), and
      // compile-time constants once the loops are unrolled.
      const int row_of_lane0 = Map::c_row(0, i);
      const int col_of_lane0 = Map::c_col(0, i);
#pragma unroll
      for (int k = 0; k < Map::K; ++k) {
        const ValueC a_rk = static_cast<ValueC>(
            __shfl_sync(full_mask, a_values[Map::a_element(row_of_lane0, k)], Map::a_lane(row, k)));
        const ValueC b_kc = static_cast<ValueC>(
            __shfl_sync(full_mask, b_values[Map::b_element(k, col_of_lane0)], Map::b_lane(k, col)));
        sums[i] = fma(a_rk, b_kc, sums[i]);
      }
    }
#pragma unroll
    for (int i = 0; i < Map::c_elements; ++i) Map::set_c(d, i, sums[i]);
  }
};

using Simt_M8N8K4_F64 = SimtMma<LaneMap_M8N8K4_F64>;
using Simt_M16N8K4_F64 = SimtMma<LaneMap_M16N8K4_F64>;
using Simt_M16N8K8_F64 = SimtMma<LaneMap_M16N8K8_F64>;
using Simt_M16N8K16_F64 = SimtMma<LaneMap_M16N8K16_F64>;
using Simt_M16N8K8_TF32 = SimtMma<LaneMap_M16N8K8_TF32>;
using Simt_M16N8K16_F16 = SimtMma<LaneMap_M16N8K16_F16>;
using Simt_M16N8K16_BF16 = SimtMma<LaneMap_M16N8K16_BF16>;
/// The FP32 CUDA-core path (layout of the m16n8k8 TF32 atom, FP32 inputs unrounded).
using Simt_M16N8K8_F32 = SimtMma<LaneMap_M16N8K8_F32>;

}  // namespace tcfem::arch
