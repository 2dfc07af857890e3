// The device benchmark and ceilings on a real GPU: a small measurement of the generic kernels with
// its reference check, and sane ceilings (positive, below known hardware limits, shared > DRAM).
#include <gtest/gtest.h>

#include "bench/ceilings.h"
#include "bench/operator_bench.h"
#include "core/device.h"

namespace {
using namespace tcfem;
using precision::Precision;

#define SKIP_WITHOUT_DEVICE()                                                                  \
  do {                                                                                         \
    const auto info_ = query_device(0);                                                        \
    if (!info_.available) GTEST_SKIP() << "no CUDA device: skipping (" << info_.reason << ")"; \
  } while (0)

bench::BenchCase small_case(int dim, fe::Disc disc, bool cartesian, Precision p) {
  bench::BenchCase c;
  c.backend = bench::Backend::cuda;
  c.key.dim = dim;
  c.key.degree = 3;
  c.key.disc = disc;
  c.key.cartesian = cartesian;
  c.key.precision = p;
  c.key.variant = operators::Variant::generic;
  c.target_dofs = 2e4;
  c.repetitions = 5;
  c.warmup = 1;
  return c;
}

TEST(DeviceBench, GenericFp32MatchesTheFp64Reference) {
  SKIP_WITHOUT_DEVICE();
  for (int dim : {2, 3})
    for (auto disc : {fe::Disc::cg, fe::Disc::dg})
      for (bool cartesian : {true, false}) {
        const auto r = bench::run_cuda_bench(small_case(dim, disc, cartesian, Precision::fp32));
        EXPECT_GE(r.n_dofs, 20000u);
        EXPECT_GT(r.min_seconds, 0.0);
        EXPECT_LE(r.min_seconds, r.median_seconds);
        ASSERT_TRUE(r.checked);
        ASSERT_TRUE(r.check_rel_diff.has_value()) << "non-finite output";
        EXPECT_LT(*r.check_rel_diff, 1e-5);
        EXPECT_TRUE(r.check_passed);
        EXPECT_GE(r.dram_bytes_per_apply, 8.0 * r.n_dofs);
        ASSERT_TRUE(r.flops_per_apply.has_value());
        EXPECT_GT(*r.flops_per_apply, 0.0);
      }
}

TEST(DeviceBench, ReferenceCaseIsNotChecked) {
  SKIP_WITHOUT_DEVICE();
  const auto r = bench::run_cuda_bench(small_case(3, fe::Disc::cg, true, Precision::fp64));
  EXPECT_FALSE(r.checked);
  EXPECT_GT(r.median_seconds, 0.0);
}

TEST(DeviceCeilings, PositiveAndPlausible) {
  SKIP_WITHOUT_DEVICE();
  bench::CeilingOptions o;
  o.runs = 2;
  o.dram_buffer_bytes = std::size_t(256) << 20;
  const auto c = bench::measure_ceilings(o);
  EXPECT_GT(c.dram_copy_kernel_tb_per_s, 0.05);
  EXPECT_LT(c.dram_tb_per_s(), 20.0);
  EXPECT_GT(c.fp64_fma_tflop_per_s, 0.0);
  EXPECT_GT(c.fp32_fma_tflop_per_s, c.fp64_fma_tflop_per_s);
  EXPECT_GT(c.shared_load_tb_per_s, c.dram_tb_per_s());
  EXPECT_LT(c.shared_load_tb_per_s, 100.0);
  const auto shape = arch::select_fp64_atom(c.sm_major, c.sm_minor);
  EXPECT_EQ(c.dmma_m16n8k16_tflop_per_s.has_value(), shape == arch::Fp64Shape::m16n8k16);
  if (shape == arch::Fp64Shape::m16n8k16) {
    EXPECT_GT(*c.dmma_m16n8k16_tflop_per_s, *c.dmma_m8n8k4_tflop_per_s);
  }
  if (c.hmma_f16_tflop_per_s) {
    EXPECT_GT(*c.hmma_f16_tflop_per_s, c.fp32_fma_tflop_per_s);
  }
}

}  // namespace
