// The layouts of the vertex-patch smoother kernels on the CPU: every warp-wide shared-memory
// access of every kernel (fused, residual, both solve kernels), dim 2 and 3, degrees 1..8, 8- and
// 4-byte values, enumerated and checked for bank conflicts; the buffers hold what the phases
// write; the phase items cover every line and node of every patch exactly once; the shared
// memory fits an sm_90 block; and the work counts match a direct count of the phases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "arch/lane_maps.h"
#include "multigrid/patch_kernels/layouts.h"
#include "operators/cuda_core/layouts.h"

namespace {
using namespace tcfem::multigrid::patch_kernels;
using tcfem::operators::cuda_core::access_cost;

constexpr KernelKind all_kinds[] = {KernelKind::fused, KernelKind::residual, KernelKind::solve_from_buffer,
                                    KernelKind::solve_from_vector};

std::string name(int dim, int k, int bytes, KernelKind kind) {
  return std::to_string(dim) + "D k=" + std::to_string(k) + " bytes=" + std::to_string(bytes) + " kind=" +
         std::to_string(static_cast<int>(kind));
}

// the CUDA-core accesses of both placements of the patches: the layouts of the CUDA-core
// contractions (interleaved where interleave_patches says so) and those of the tensor-core
// contraction (patch arrays apart everywhere)
TEST(PatchKernelLayouts, ConflictFree) {
  int interleaved = 0;
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int bytes : {8, 4})
        for (const auto kind : all_kinds)
          for (const auto con : {Contraction::even_odd, Contraction::tensor_core}) {
            const auto L = patch_layout(dim, k, bytes, kind, con);
            if (con == Contraction::tensor_core) {
              EXPECT_FALSE(L.interleaved);
            }
            interleaved += L.interleaved;
            long accesses = 0;
            int worst = 1;
            char worst_phase = '-';
            for_each_patch_access(L, kind, [&](char ph, const std::array<long, warp_lanes>& a) {
              const auto c = access_cost(a, bytes);
              ++accesses;
              if (c.degree > worst) {
                worst = c.degree;
                worst_phase = ph;
              }
            });
            EXPECT_GT(accesses, 0) << name(dim, k, bytes, kind);
            EXPECT_EQ(worst, 1) << name(dim, k, bytes, kind) << " interleaved " << L.interleaved << " phase "
                                << worst_phase;
          }
  EXPECT_GT(interleaved, 0);
}

// the check can fail: patches sharing a lane group (padding to 4 lanes instead of 16) conflict
TEST(PatchKernelLayouts, BrokenPaddingConflicts) {
  auto L = patch_layout(3, 3, 8, KernelKind::fused, Contraction::tensor_core);
  ASSERT_FALSE(L.interleaved);
  L.group = 4;
  L.patches = 4;
  L.threads = 256;
  int worst = 1;
  for_each_patch_access(L, KernelKind::fused, [&](char, const std::array<long, warp_lanes>& a) {
    worst = std::max(worst, access_cost(a, 8).degree);
  });
  EXPECT_GT(worst, 1);
}

// ... and so do interleaved patches whose count does not divide the lane group (3 patches: the
// line reads (l n_in + j) 3 + p of 16 lanes cover 5 and a third lines)
TEST(PatchKernelLayouts, InterleavedThreePatchesConflict) {
  auto L = patch_layout(3, 3, 8, KernelKind::fused, Contraction::even_odd);
  ASSERT_TRUE(L.interleaved);
  L.patches = 3;
  int worst = 1;
  for_each_patch_access(L, KernelKind::fused, [&](char ph, const std::array<long, warp_lanes>& a) {
    if (ph == 'R') worst = std::max(worst, access_cost(a, 8).degree);
  });
  EXPECT_GT(worst, 1);
}

TEST(PatchKernelLayouts, SizesAndBlocks) {
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int bytes : {8, 4})
        for (const auto kind : all_kinds) {
          const auto L = patch_layout(dim, k, bytes, kind, Contraction::even_odd);
          const std::string what = name(dim, k, bytes, kind);
          EXPECT_EQ(L.threads % warp_lanes, 0) << what;
          EXPECT_LE(L.threads, 1024) << what;
          EXPECT_GE(L.patches, 1) << what;
          EXPECT_LE(L.shared_bytes(), 227 * 1024) << what;  // sm_90 opt-in maximum per block
          // every line phase fits its buffers, inputs and outputs
          const auto P = line_phases(L, kind);
          EXPECT_EQ(P.count, (has_residual(kind) ? dim : 0) + (has_solve(kind) ? 2 * dim : 0)) << what;
          for (int ph = 0; ph < P.count; ++ph) {
            const auto& lp = P.phase[ph];
            if (lp.from >= 0) {
              const int cap_in = lp.from == 0 ? L.buf0 : L.buf1;
              EXPECT_LE(lp.arrays_in * lp.lines * lp.n_in, cap_in) << what << " phase " << ph;
            } else {  // only the x phase of a residual kernel reads global memory
              EXPECT_TRUE(ph == 0 && has_residual(kind) && L.rows_from_global) << what;
            }
            if (lp.to >= 0) {
              const int cap_out = lp.to == 0 ? L.buf0 : L.buf1;
              EXPECT_LE(lp.arrays_out * lp.lines * lp.n_out, cap_out) << what << " phase " << ph;
              EXPECT_NE(lp.to, lp.from) << what << " phase " << ph;
            }
            // consecutive phases chain: the lines of the next phase read what this one wrote
            if (ph + 1 < P.count && lp.to >= 0) {
              const auto& nx = P.phase[ph + 1];
              EXPECT_EQ(nx.from, lp.to) << what;
              EXPECT_EQ(nx.lines * nx.n_in, lp.lines * lp.n_out) << what;
              EXPECT_EQ(nx.arrays_in, lp.arrays_out) << what;
            }
            // at most patch_lines_per_thread slots per thread in every line phase
            EXPECT_LE(phase_slots(L, lp.lines), patch_lines_per_thread(dim, k, bytes) * L.threads) << what;
          }
          // ... and no warp without a slot in the widest one
          const int widest = phase_slots(L, has_residual(kind) ? ipow(L.nf, dim - 1) : ipow(L.ni, dim - 1));
          const int per_thread = patch_lines_per_thread(dim, k, bytes);
          EXPECT_LT(L.threads, (widest + per_thread - 1) / per_thread + warp_lanes) << what;
          EXPECT_LE(gather_count(L, kind), L.buf0) << what;
        }
}

TEST(PatchKernelLayouts, ItemsCoverPatchesOnce) {
  for (int dim : {2, 3})
    for (int k : {1, 3, 8})
      for (int bytes : {8, 4}) {
        for (const auto con : {Contraction::even_odd, Contraction::tensor_core}) {
          const auto L = patch_layout(dim, k, bytes, KernelKind::fused, con);
          for (int count : {gather_count(L, KernelKind::fused), ipow(L.nf, dim - 1), ipow(L.ni, dim - 1)}) {
            std::set<std::pair<int, int>> seen;
            for (int q = 0; q < phase_slots(L, count); ++q) {
              const auto it = phase_item(L, count, q);
              if (!it.valid) continue;
              EXPECT_TRUE(seen.insert({it.patch, it.index}).second);
              const int g0 = q / L.group * L.group;
              if (L.interleaved) {  // a lane group holds consecutive items of every patch
                EXPECT_EQ(it.patch, q % L.patches);
                EXPECT_EQ(phase_item(L, count, g0).index, g0 / L.patches);
              } else {  // a lane group never holds two patches
                EXPECT_EQ(phase_item(L, count, g0).patch, it.patch);
              }
            }
            EXPECT_EQ(seen.size(), std::size_t(L.patches) * count);
            // no slot of a lane group left empty but at the end of the phase
            if (L.interleaved) {
              EXPECT_EQ(phase_slots(L, count), round_up(L.patches * count, L.group));
            }
          }
        }
      }
}

TEST(PatchKernelLayouts, WorkCounts) {
  // 3D k=2: nf=5, ni=3. Residual FMAs: x 2*25*3*5 = 750, y 3*15*3*5 = 675, z 2*9*3*5 = 270;
  // solve 6*27*3 = 486 FMAs + 27 update FMAs; 27 subtractions, 27 scalings.
  EXPECT_DOUBLE_EQ(patch_flops(3, 2, KernelKind::fused), 2.0 * (750 + 675 + 270 + 486 + 27) + 27 + 27);
  EXPECT_DOUBLE_EQ(patch_flops(3, 2, KernelKind::residual), 2.0 * (750 + 675 + 270) + 27);
  // 2D k=2: x 2*5*3*5 = 150, y 2*3*3*5 = 90; solve 4*9*3 = 108 + 9
  EXPECT_DOUBLE_EQ(patch_flops(2, 2, KernelKind::fused), 2.0 * (150 + 90 + 108 + 9) + 9 + 9);
  // shared bytes of the 3D fused kernel, k=2, doubles: gather 125; x reads 125, writes 2*75;
  // y reads 2*75, writes 2*45; z reads 2*45, writes 27; solve 6 phases read 27, 5 write 27;
  // prefetch of b_I and of the old x_I: 27 stores and 27 reads each
  auto L = patch_layout(3, 2, 8, KernelKind::fused, Contraction::even_odd);
  ASSERT_TRUE(L.rows_from_global);
  L.rows_from_global = false;
  EXPECT_DOUBLE_EQ(patch_shared_bytes(L, KernelKind::fused),
                   8.0 * (125 + 125 + 150 + 150 + 90 + 90 + 27 + 6 * 27 + 5 * 27 + 4 * 27));
  // with the x phase's lines from global memory, no gather and no box reads
  L.rows_from_global = true;
  EXPECT_DOUBLE_EQ(patch_shared_bytes(L, KernelKind::fused),
                   8.0 * (150 + 150 + 90 + 90 + 27 + 6 * 27 + 5 * 27 + 4 * 27));
  EXPECT_DOUBLE_EQ(patch_global_bytes(3, 2, 8, KernelKind::fused), 8.0 * (125 + 27 + 2 * 27));
  // x_I = A_II^{-1} (b_I - A_IB x_B): no update FMAs, no old x_I in shared or global memory, and
  // only the 125 - 27 boundary nodes of the box read
  EXPECT_DOUBLE_EQ(patch_flops(3, 2, KernelKind::fused, true), 2.0 * (750 + 675 + 270 + 486) + 27 + 27);
  EXPECT_DOUBLE_EQ(patch_shared_bytes(L, KernelKind::fused, true),
                   8.0 * (150 + 150 + 90 + 90 + 27 + 6 * 27 + 5 * 27 + 2 * 27));
  EXPECT_DOUBLE_EQ(patch_global_bytes(3, 2, 8, KernelKind::fused, true), 8.0 * (98 + 27 + 27));
  // a layout with b_I (and the old x_I) in registers: no prefetch array, no prefetch traffic
  const auto R = patch_layout(2, 3, 8, KernelKind::fused, Contraction::even_odd);
  EXPECT_TRUE(R.inner_registers);
  EXPECT_EQ(R.buf2, 0);
  EXPECT_FALSE(L.inner_registers);
  EXPECT_EQ(L.buf2, 27);
  // 2D k=3 (nf=7, ni=5): gather 49; x reads 49, writes 2*35; y reads 2*35, writes 25; solve
  // 4 phases read 25, 3 write 25
  EXPECT_DOUBLE_EQ(patch_shared_bytes(R, KernelKind::fused), 8.0 * (49 + 49 + 70 + 70 + 25 + 4 * 25 + 3 * 25));
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int bytes : {4, 8}) {
        const auto F = patch_layout(dim, k, bytes, KernelKind::fused, Contraction::even_odd);
        EXPECT_EQ(F.buf2, F.inner_registers ? 0 : ipow(2 * k - 1, dim));
        EXPECT_FALSE(patch_layout(dim, k, bytes, KernelKind::solve_from_buffer, Contraction::even_odd).inner_registers);
      }
}

TEST(PatchKernelLayouts, EvenOddWork) {
  // line of 3 outputs from 5 inputs: even part 2 x 3 (with the middle row and column), odd part 1 x 2
  EXPECT_DOUBLE_EQ(line_fmas(3, 5, Contraction::even_odd), 8.0);
  EXPECT_DOUBLE_EQ(line_fmas(3, 5, Contraction::dense), 15.0);
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (auto kind : {KernelKind::fused, KernelKind::residual, KernelKind::solve_from_buffer}) {
        EXPECT_DOUBLE_EQ(patch_flops_performed(dim, k, kind, Contraction::dense), patch_flops(dim, k, kind));
        if (k >= 3) {
          EXPECT_LT(patch_flops_performed(dim, k, kind, Contraction::even_odd), 0.75 * patch_flops(dim, k, kind));
          EXPECT_GT(patch_flops_performed(dim, k, kind, Contraction::even_odd), 0.5 * patch_flops(dim, k, kind));
        }
      }
}

// ---- Contraction::tensor_core (multigrid/patch_kernels/block.h: tensor_core_phase) --------------------------------

/// Worst bank-conflict degree of the shared accesses of the tensor-core kernels, by kind of
/// access: A fragment loads, B fragment loads at aligned columns (the outputs in tile order), B
/// loads at columns shifted by ni (L_2 of the last residual phase, M_1 of the second y input), and
/// C stores. Mirrors the addressing of multigrid/patch_kernels/block.h (every phase, tile, K step, column tile and
/// fragment element as one warp instruction).
struct TensorCoreConflicts {
  int a = 1, b = 1, b_shifted = 1, c = 1;
  long accesses = 0;
};

template <class Map>
TensorCoreConflicts tensor_core_conflicts(const PatchLayout& L, KernelKind kind) {
  TensorCoreConflicts R;
  const int nf = L.nf, ni = L.ni, dim = L.dim, bytes = L.value_bytes;
  const auto T = tensor_core_matrix_layout(L);
  const int moff = L.shared_elements();
  std::array<long, warp_lanes> addr{};
  // one phase: in(patch, a, l, j), b(a, j, c) -> address (-2: zero without a load, -3: shifted
  // column), out(patch, l, c) -> address or -1 (global)
  auto phase = [&](int lines, int n_in, int inputs, int cols, auto&& in, auto&& b_addr, auto&& out) {
    const int KA = Map::K, k_steps = (n_in + KA - 1) / KA, n_tiles = (cols + 7) / 8, m_tiles = (lines + 15) / 16;
    for (int patch = 0; patch < L.patches; ++patch)
      for (int t = 0; t < m_tiles; ++t) {
        const int row0 = 16 * t;
        for (int s = 0; s < inputs * k_steps; ++s) {
          const int a = s / k_steps;
          for (int i = 0; i < Map::a_elements; ++i) {
            for (int lane = 0; lane < warp_lanes; ++lane) {
              const int j = (s % k_steps) * KA + Map::a_col(lane, i), l = row0 + tile_row_line(Map::a_row(lane, i));
              addr[lane] = j < n_in && l < lines ? in(patch, a, l, j) : -1;
            }
            R.a = std::max(R.a, access_cost(addr, bytes).degree);
            ++R.accesses;
          }
          for (int nt = 0; nt < n_tiles; ++nt)
            for (int i = 0; i < Map::b_elements; ++i) {
              bool shifted = false;
              for (int lane = 0; lane < warp_lanes; ++lane) {
                const int j = (s % k_steps) * KA + Map::b_row(lane, i), c = nt * 8 + tile_col_output(Map::b_col(lane, i));
                long ad = j < n_in && c < cols ? b_addr(a, j, c, shifted) : -1;
                addr[lane] = ad;
              }
              (shifted ? R.b_shifted : R.b) = std::max(shifted ? R.b_shifted : R.b, access_cost(addr, bytes).degree);
              ++R.accesses;
            }
        }
        for (int nt = 0; nt < n_tiles; ++nt)
          for (int i = 0; i < Map::c_elements; ++i) {
            for (int lane = 0; lane < warp_lanes; ++lane) {
              const int l = row0 + tile_row_line(Map::c_row(lane, i)), c = nt * 8 + tile_col_output(Map::c_col(lane, i));
              addr[lane] = l < lines && c < cols ? out(patch, l, c) : -1;
            }
            R.c = std::max(R.c, access_cost(addr, bytes).degree);
            ++R.accesses;
          }
      }
  };
  auto ml = [&](int d, int j, int c) -> long { return moff + d * T.stride + T.ml + j * T.ld_ml + output_tile_col(c); };
  auto two_out = [&](int buf, int lines) {
    return [&, buf, lines](int patch, int l, int c) -> long {
      const int off = buf == 0 ? buf0_offset(L, patch) : buf1_offset(L, patch);
      return off + (c < ni ? 0 : lines * ni) + line_out_address(lines, c < ni ? c : c - ni, l);
    };
  };
  auto lex_out = [&](int buf, int lines) {
    return [&, buf, lines](int patch, int l, int c) -> long {
      if (buf < 0) return -1;
      return (buf == 0 ? buf0_offset(L, patch) : buf1_offset(L, patch)) + line_out_address(lines, c, l);
    };
  };
  auto input = [&](int buf, int lines, int n_in) {
    return [&, buf, lines, n_in](int patch, int a, int l, int j) -> long {
      return (buf == 0 ? buf0_offset(L, patch) : buf1_offset(L, patch)) + a * lines * n_in + line_in_address(n_in, l, j);
    };
  };
  if (has_residual(kind)) {
    const int last = kind == KernelKind::residual ? -1 : (dim == 3 ? 1 : 0);
    const int lx = ipow(nf, dim - 1);
    phase(lx, nf, 1, 2 * ni, input(0, lx, nf), [&](int, int j, int c, bool&) { return ml(0, j, c); }, two_out(1, lx));
    if (dim == 3) {
      phase(ni * nf, nf, 2, 2 * ni, input(1, ni * nf, nf),
            [&](int a, int j, int c, bool& sh) -> long {
              if (a == 0) return ml(1, j, c);
              if (c < ni) return -1;  // zero block: no load
              sh = true;
              return ml(1, j, c - ni);
            },
            two_out(0, ni * nf));
    }
    const int d = dim - 1;
    phase(ni * ipow(ni, dim - 2), nf, 2, ni, input(dim == 3 ? 0 : 1, ni * ipow(ni, dim - 2), nf),
          [&](int a, int j, int c, bool& sh) -> long {
            if (a == 0) {
              sh = true;
              return ml(d, j, ni + c);
            }
            return ml(d, j, c);
          },
          lex_out(last, ni * ipow(ni, dim - 2)));
  }
  if (has_solve(kind)) {
    const int lines = ipow(ni, dim - 1);
    int cur = line_phases(L, kind).residual_buffer;
    for (int s = 0; s < 2 * dim; ++s) {
      const int d = s % dim;
      const int region = s < dim ? T.v : T.vt;
      phase(lines, ni, 1, ni, input(cur, lines, ni),
            [&](int, int j, int c, bool&) -> long { return moff + d * T.stride + region + j * T.ld_v + output_tile_col(c); },
            lex_out(s == 2 * dim - 1 ? -1 : 1 - cur, lines));
      cur = 1 - cur;
    }
  }
  return R;
}

TEST(PatchKernelLayouts, TensorCoreConflictFree) {
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (const auto kind : all_kinds) {
        // FP64 m16n8k4: A loads, aligned B loads and C stores hit distinct banks in every wavefront
        const auto R = tensor_core_conflicts<tcfem::arch::LaneMap_M16N8K4_F64>(patch_layout(dim, k, 8, kind, Contraction::tensor_core), kind);
        EXPECT_GT(R.accesses, 0);
        EXPECT_EQ(R.a, 1) << name(dim, k, 8, kind) << " A";
        EXPECT_EQ(R.b, 1) << name(dim, k, 8, kind) << " B";
        EXPECT_EQ(R.c, 1) << name(dim, k, 8, kind) << " C";
        EXPECT_EQ(R.b_shifted, 1) << name(dim, k, 8, kind) << " B shifted";
        // TF32 m16n8k8 (4-byte values, 32-lane wavefronts): B aligned conflict-free; A and C at
        // most 2-way (16 rows of odd length cannot fill 32 banks for every odd length)
        const auto F = tensor_core_conflicts<tcfem::arch::LaneMap_M16N8K8_TF32>(patch_layout(dim, k, 4, kind, Contraction::tensor_core), kind);
        EXPECT_EQ(F.b, 1) << name(dim, k, 4, kind) << " B";
        EXPECT_LE(F.a, 2) << name(dim, k, 4, kind) << " A";
        EXPECT_LE(F.c, 2) << name(dim, k, 4, kind) << " C";
        if (kind == KernelKind::fused)
          std::printf("tensor-core conflicts %dD k=%d: fp64 A %d B %d B-shifted %d C %d | tf32 A %d B %d B-shifted %d C %d\n",
                      dim, k, R.a, R.b, R.b_shifted, R.c, F.a, F.b, F.b_shifted, F.c);
      }
}

// the check can fail: consecutive tile rows (no tile_row_line permutation) give 2-way conflicts
// of the FP64 A loads for odd line lengths
TEST(PatchKernelLayouts, TensorCoreIdentityRowsConflict) {
  std::array<long, warp_lanes> addr{};
  using Map = tcfem::arch::LaneMap_M16N8K4_F64;
  for (int n : {7, 9, 11}) {
    for (int lane = 0; lane < warp_lanes; ++lane) addr[lane] = Map::a_row(lane, 0) * n + Map::a_col(lane, 0);
    EXPECT_GT(access_cost(addr, 8).degree, 1) << n;
    for (int lane = 0; lane < warp_lanes; ++lane) addr[lane] = tile_row_line(Map::a_row(lane, 0)) * n + Map::a_col(lane, 0);
    EXPECT_EQ(access_cost(addr, 8).degree, 1) << n;
  }
}

TEST(PatchKernelLayouts, TensorCoreWorkAndSharedMemory) {
  // tile maps are permutations; the stored B columns invert the output map
  std::set<int> rows, cols;
  for (int r = 0; r < 16; ++r) rows.insert(tile_row_line(r));
  for (int p = 0; p < 8; ++p) {
    cols.insert(tile_col_output(p));
    EXPECT_EQ(output_tile_col(stored_col_output(p)), p);
    EXPECT_EQ(stored_col_output(output_tile_col(p + 8)), p + 8);
  }
  EXPECT_EQ(rows.size(), 16u);
  EXPECT_EQ(cols.size(), 8u);
  // 3D k=2 fused, K = 4: nf=5 -> 8, ni=3 -> 4; x 25 lines -> 32 rows, 6 cols -> 8: 32*8*8;
  // y 15 -> 16 rows, 2 inputs: 16*16*8; z 9 -> 16, 2 inputs, 3 cols -> 8: 16*16*8;
  // solve 6 phases of 9 -> 16 rows, K 4, 8 cols: 6*16*4*8; + 27 update FMAs, 27 + 27 other
  EXPECT_DOUBLE_EQ(patch_flops_tensor_core(3, 2, KernelKind::fused, 4),
                   2.0 * (32 * 8 * 8 + 16 * 16 * 8 + 16 * 16 * 8 + 6 * 16 * 4 * 8 + 27) + 27 + 27);
  EXPECT_DOUBLE_EQ(patch_flops_performed(3, 2, KernelKind::fused, Contraction::tensor_core),
                   patch_flops_tensor_core(3, 2, KernelKind::fused, 4));
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (const auto kind : all_kinds)
        for (int bytes : {8, 4}) {
          const auto L = patch_layout(dim, k, bytes, kind, Contraction::tensor_core);
          // padded products never fewer than the dense ones
          EXPECT_GE(patch_flops_tensor_core(dim, k, kind, bytes == 8 ? 4 : 8), patch_flops(dim, k, kind));
          // B operands fit behind the patch arrays, and the block within sm_90's 227 KB
          const auto T = tensor_core_matrix_layout(L);
          EXPECT_GE(T.ld_ml, 2 * L.ni);
          EXPECT_GE(T.ld_v, L.ni);
          EXPECT_LE(shared_bytes_of(L, Contraction::tensor_core), 227 * 1024) << name(dim, k, bytes, kind);
          EXPECT_EQ(shared_bytes_of(L, Contraction::dense), L.shared_bytes());
        }
}

// PatchLayout::rows_from_global: the x phase reads global memory, so there are no gather stores
// and no line reads in the first phase, and buf0 no longer holds the node box (2D: only the
// residual)
TEST(PatchKernelLayouts, RowsFromGlobal) {
  int direct = 0, gathered = 0;
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int bytes : {8, 4})
        for (const auto kind : all_kinds)
          for (const auto con : {Contraction::even_odd, Contraction::dense, Contraction::tensor_core}) {
            const auto L = patch_layout(dim, k, bytes, kind, con);
            const std::string what = name(dim, k, bytes, kind);
            EXPECT_EQ(L.rows_from_global, x_rows_from_global(dim, k, bytes, kind, con)) << what;
            if (!has_residual(kind) || con == Contraction::tensor_core) {
              EXPECT_FALSE(L.rows_from_global) << what;
            }
            if (!has_residual(kind)) continue;
            (L.rows_from_global ? direct : gathered) += 1;
            const auto P = line_phases(L, kind);
            EXPECT_EQ(P.phase[0].from, L.rows_from_global ? -1 : 0) << what;
            EXPECT_EQ(gather_count(L, kind), L.rows_from_global ? 0 : ipow(L.nf, dim)) << what;
            int gather_stores = 0, line_reads = 0;
            for_each_patch_access(L, kind, [&](char ph, const std::array<long, warp_lanes>&) {
              gather_stores += ph == 'G';
              line_reads += ph == 'R';
            });
            if (L.rows_from_global) {
              EXPECT_EQ(gather_stores, 0) << what;
              if (dim == 2) {
                EXPECT_EQ(L.buf0, ipow(L.ni, 2)) << what;
              }
            } else {
              EXPECT_GT(gather_stores, 0) << what;
              EXPECT_GE(L.buf0, ipow(L.nf, dim)) << what;
            }
            // the gathered form of the same layout moves the box through shared memory twice more
            // and reads the x phase's lines (nf warp accesses per warp and round) from it
            if (L.rows_from_global) {
              auto G = L;
              G.rows_from_global = false;
              EXPECT_DOUBLE_EQ(patch_shared_bytes(G, kind) - patch_shared_bytes(L, kind), 2.0 * ipow(L.nf, dim) * bytes) << what;
              int gathered_reads = 0;
              for_each_patch_access(G, kind, [&](char ph, const std::array<long, warp_lanes>&) { gathered_reads += ph == 'R'; });
              const int rounds = (phase_slots(L, ipow(L.nf, dim - 1)) + L.threads - 1) / L.threads;
              EXPECT_EQ(gathered_reads - line_reads, rounds * (L.threads / warp_lanes) * L.nf) << what;
            }
          }
  EXPECT_GT(direct, 0);
  EXPECT_GT(gathered, 0);
}

TEST(PatchKernelLayouts, MinBlocks) {
  // even-odd launch bounds of the fused 3D double kernels: shared-memory limit, register floor
  const int expected[8] = {17, 12, 8, 6, 3, 3, 2, 1};
  for (int k = 1; k <= 8; ++k) {
    const auto L = patch_layout(3, k, 8, KernelKind::fused, Contraction::even_odd);
    EXPECT_EQ(L.min_blocks, expected[k - 1]) << k;
    EXPECT_LE(L.min_blocks * (L.shared_bytes() + shared_reserved_per_block), sm90_shared_per_sm) << k;
    EXPECT_GE(registers_per_sm / (L.min_blocks * L.threads), even_odd_register_floor(k)) << k;
  }
  EXPECT_EQ(patch_layout(3, 7, 4, KernelKind::fused, Contraction::even_odd).min_blocks, 1);  // float: unbounded
}

TEST(PatchKernelLayouts, PatchesPerBlock) {
  // 3D fused: fp64 16, 8, 4, 2, 2, 1, 1, 1 patches; fp32 twice the interleaved ones at k = 2..5
  const int fp64[8] = {16, 8, 4, 2, 2, 1, 1, 1}, fp32[8] = {8, 16, 8, 4, 4, 1, 1, 1};
  for (int k = 1; k <= 8; ++k) {
    EXPECT_EQ(patch_layout(3, k, 8, KernelKind::fused, Contraction::even_odd).patches, fp64[k - 1]) << k;
    EXPECT_EQ(patch_layout(3, k, 4, KernelKind::fused, Contraction::even_odd).patches, fp32[k - 1]) << k;
  }
  // the tensor-core kernels and the other kinds keep the sizes of the padded layouts
  EXPECT_EQ(patch_layout(3, 3, 4, KernelKind::fused, Contraction::tensor_core).patches, 4);
  EXPECT_EQ(patch_layout(3, 3, 4, KernelKind::residual, Contraction::even_odd).patches, 4);
}

}  // namespace
