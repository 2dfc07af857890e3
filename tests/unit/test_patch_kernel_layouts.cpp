// The layouts of the vertex-patch smoother kernels on the CPU: every warp-wide shared-memory
// access of every kernel (fused, residual, both solve kernels), dim 2 and 3, degrees 1..8, 8- and
// 4-byte values, enumerated and checked for bank conflicts; the buffers hold what the phases
// write; the phase items cover every line and node of every patch exactly once; the shared
// memory fits an sm_90 block; and the work counts match a direct count of the phases.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "multigrid/patch_kernel_layouts.h"
#include "operators/cuda_core_layouts.h"

namespace {
using namespace tcfem::multigrid::patch_kernels;
using tcfem::operators::cuda_core::access_cost;

constexpr KernelKind all_kinds[] = {KernelKind::fused, KernelKind::residual, KernelKind::solve_from_buffer,
                                    KernelKind::solve_from_vector};

std::string name(int dim, int k, int bytes, KernelKind kind) {
  return std::to_string(dim) + "D k=" + std::to_string(k) + " bytes=" + std::to_string(bytes) + " kind=" +
         std::to_string(static_cast<int>(kind));
}

TEST(PatchKernelLayouts, ConflictFree) {
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int bytes : {8, 4})
        for (const auto kind : all_kinds) {
          const auto L = patch_layout(dim, k, bytes, kind);
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
          EXPECT_EQ(worst, 1) << name(dim, k, bytes, kind) << " phase " << worst_phase;
        }
}

// the check can fail: patches sharing a lane group (padding to 4 lanes instead of 16) conflict
TEST(PatchKernelLayouts, BrokenPaddingConflicts) {
  auto L = patch_layout(3, 3, 8, KernelKind::fused);
  L.group = 4;
  L.patches = 4;
  L.threads = 256;
  int worst = 1;
  for_each_patch_access(L, KernelKind::fused, [&](char, const std::array<long, warp_lanes>& a) {
    worst = std::max(worst, access_cost(a, 8).degree);
  });
  EXPECT_GT(worst, 1);
}

TEST(PatchKernelLayouts, SizesAndBlocks) {
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (int bytes : {8, 4})
        for (const auto kind : all_kinds) {
          const auto L = patch_layout(dim, k, bytes, kind);
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
            const int cap_in = lp.from == 0 ? L.buf0 : L.buf1;
            EXPECT_LE(lp.arrays_in * lp.lines * lp.n_in, cap_in) << what << " phase " << ph;
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
            // one slot per thread at most for the widest line phase
            EXPECT_LE(phase_slots(L, lp.lines), L.threads) << what;
          }
          EXPECT_LE(gather_count(L, kind), L.buf0) << what;
        }
}

TEST(PatchKernelLayouts, ItemsCoverPatchesOnce) {
  for (int dim : {2, 3})
    for (int k : {1, 3, 8})
      for (int bytes : {8, 4}) {
        const auto L = patch_layout(dim, k, bytes, KernelKind::fused);
        for (int count : {gather_count(L, KernelKind::fused), ipow(L.nf, dim - 1), ipow(L.ni, dim - 1)}) {
          std::set<std::pair<int, int>> seen;
          for (int q = 0; q < phase_slots(L, count); ++q) {
            const auto it = phase_item(L, count, q);
            if (!it.valid) continue;
            EXPECT_TRUE(seen.insert({it.patch, it.index}).second);
            // a lane group never holds two patches
            const int g0 = q / L.group * L.group;
            EXPECT_EQ(phase_item(L, count, g0).patch, it.patch);
          }
          EXPECT_EQ(seen.size(), std::size_t(L.patches) * count);
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
  // y reads 2*75, writes 2*45; z reads 2*45, writes 27; solve 6 phases read 27, 5 write 27
  const auto L = patch_layout(3, 2, 8, KernelKind::fused);
  EXPECT_DOUBLE_EQ(patch_shared_bytes(L, KernelKind::fused),
                   8.0 * (125 + 125 + 150 + 150 + 90 + 90 + 27 + 6 * 27 + 5 * 27));
  EXPECT_DOUBLE_EQ(patch_global_bytes(3, 2, 8, KernelKind::fused), 8.0 * (125 + 27 + 2 * 27));
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

TEST(PatchKernelLayouts, MinBlocks) {
  // even-odd launch bounds of the fused 3D double kernels: shared-memory limit, register floor
  const int expected[8] = {3, 3, 3, 4, 3, 3, 2, 1};
  for (int k = 1; k <= 8; ++k) {
    const auto L = patch_layout(3, k, 8, KernelKind::fused);
    EXPECT_EQ(L.min_blocks, expected[k - 1]) << k;
    EXPECT_LE(L.min_blocks * (L.shared_bytes() + shared_reserved_per_block), sm90_shared_per_sm) << k;
    EXPECT_GE(registers_per_sm / (L.min_blocks * L.threads), 80) << k;
  }
  EXPECT_EQ(patch_layout(3, 7, 4, KernelKind::fused).min_blocks, 1);  // float: unbounded
}

}  // namespace
