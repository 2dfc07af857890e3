// The plain-C++ parts of the operator benchmark: problem sizes for a DoF target, the choice of the
// compute ceiling per (precision, variant), check tolerances, and one small CPU measurement.
#include <gtest/gtest.h>

#include <limits>

#include <cmath>

#include "bench/ceilings.h"
#include "bench/operator_bench.h"
#include "core/error.h"

namespace {

using namespace tcfem;
using operators::Variant;
using precision::Precision;

double dofs(int dim, int k, fe::Disc disc, int n) {
  return disc == fe::Disc::cg ? std::pow(n * k + 1.0, dim) : std::pow(n * (k + 1.0), dim);
}

TEST(BenchSize, SmallestBoxReachingTheTarget) {
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (auto disc : {fe::Disc::cg, fe::Disc::dg})
        for (double target : {1.0, 2.0, 8.0, 27.0, 1e3, 2e4, 1e5, 999999.0, 1e6, 3e7, 1e9}) {
          const auto s = bench::size_for_target(dim, k, disc, target);
          const int n = s.cells_per_direction;
          EXPECT_GE(s.n_dofs, target);
          EXPECT_EQ(s.n_dofs, dofs(dim, k, disc, n));
          EXPECT_EQ(s.n_cells, std::pow(double(n), dim));
          if (n > 1) {
            EXPECT_LT(dofs(dim, k, disc, n - 1), target) << dim << "D k=" << k << " target " << target;
          }
        }
  EXPECT_EQ(bench::size_for_target(3, 2, fe::Disc::cg, 2e4).cells_per_direction, 14);  // 29^3 = 24389
  EXPECT_EQ(bench::size_for_target(3, 1, fe::Disc::dg, 8.0).cells_per_direction, 1);
}

TEST(BenchPlan, CpuBackendRunsGenericFp64AndFp32) {
  operators::DeviceKernelKey key;
  for (auto p : precision::all_precisions) {
    key.precision = p;
    key.variant = Variant::generic;
    EXPECT_EQ(bench::cpu_supported(key), p == Precision::fp64 || p == Precision::fp32);
    key.variant = Variant::tensor_core;
    EXPECT_FALSE(bench::cpu_supported(key));
  }
}

TEST(BenchPlan, ReferenceIsNotCheckedAgainstItself) {
  bench::BenchCase c;
  c.key.variant = Variant::generic;
  c.key.precision = Precision::fp64;
  EXPECT_FALSE(bench::needs_check(c));
  c.key.precision = Precision::fp32;
  EXPECT_TRUE(bench::needs_check(c));
  c.key.variant = Variant::tensor_core;
  c.key.precision = Precision::fp64;
  EXPECT_TRUE(bench::needs_check(c));
  c.check = false;
  EXPECT_FALSE(bench::needs_check(c));
  EXPECT_EQ(bench::check_tolerance(Precision::fp64), 1e-12);
  EXPECT_EQ(bench::check_tolerance(Precision::tf32x3), 1e-5);
  EXPECT_EQ(bench::check_tolerance(Precision::bf16), 1e-2);
  // fp64 with fp32 stored geometry: the rounding of the stored data
  operators::DeviceKernelKey key;
  key.precision = Precision::fp64;
  key.general_field = true;
  EXPECT_EQ(bench::check_tolerance(key), 1e-12);
  key.geometry_storage = operators::GeometryStorage::fp32;
  EXPECT_EQ(bench::check_tolerance(key), 1e-6);
  key.precision = Precision::fp32;
  EXPECT_EQ(bench::check_tolerance(key), 1e-5);
}

TEST(BenchPlan, NodeGeometryToleranceGrowsWithTheCellsOfAFineMesh) {
  // fp64 geometry from the nodes: the coordinates' rounding differentiated over a cell
  operators::DeviceKernelKey key;
  key.dim = 2;
  key.degree = 4;
  key.precision = Precision::fp64;
  key.general_field = true;
  key.geometry_form = operators::GeometryForm::mf;
  const mesh::BoxMesh<2> coarse({8, 8}, mesh::Domain<2>::box({0.0, 0.0}, {1.0, 1.0}));
  EXPECT_EQ(bench::node_geometry_tolerance<2>(key, coarse), 1e-12);
  // [1000, 1001] x [0, 1] on 2000 x 10 cells: eps 16 2000 1001 / 1
  const mesh::BoxMesh<2> far({2000, 10}, mesh::Domain<2>::box({1000.0, 0.0}, {1001.0, 1.0}));
  const double expected = std::numeric_limits<double>::epsilon() * 16.0 * 2000.0 * 1001.0;
  EXPECT_NEAR(bench::node_geometry_tolerance<2>(key, far), expected, 1e-6 * expected);
  // stored geometry, and fp32: the precision's tolerance
  key.geometry_form = operators::GeometryForm::pa;
  EXPECT_EQ(bench::node_geometry_tolerance<2>(key, far), 1e-12);
  key.geometry_form = operators::GeometryForm::mf;
  key.precision = Precision::fp32;
  EXPECT_EQ(bench::node_geometry_tolerance<2>(key, far), 1e-5);
}

TEST(BenchPlan, MemoryEstimateGrowsWithTheProblem) {
  bench::BenchCase c;
  c.key.degree = 4;
  c.key.cartesian = false;
  c.target_dofs = 1e5;
  const auto small = bench::estimate_memory(c);
  c.target_dofs = 1e7;
  const auto large = bench::estimate_memory(c);
  EXPECT_GT(small.host_bytes, 16e5);
  EXPECT_GT(large.host_bytes, 20.0 * small.host_bytes);  // 100x the DoFs, plus a fixed slack
  EXPECT_EQ(large.device_bytes, 0.0);
  c.backend = bench::Backend::cuda;
  EXPECT_GT(bench::estimate_memory(c).device_bytes, 16e7);
}

TEST(Ceilings, ComputeCeilingByPrecisionAndVariant) {
  bench::Ceilings h200;  // the figures of reference/h200.md
  h200.sm_major = 9;
  h200.fp64_fma_tflop_per_s = 31.6;
  h200.fp32_fma_tflop_per_s = 60.0;
  h200.dmma_m8n8k4_tflop_per_s = 33.2;
  h200.dmma_m16n8k16_tflop_per_s = 66.7;
  h200.hmma_f16_tflop_per_s = 629.0;
  h200.tf32_mma_tflop_per_s = 300.0;
  auto name = [&](const bench::Ceilings& c, Precision p, Variant v) {
    const auto cc = bench::compute_ceiling(c, p, v);
    return cc ? cc->name : std::string("none");
  };
  EXPECT_EQ(name(h200, Precision::fp64, Variant::generic), "fp64_fma");
  EXPECT_EQ(name(h200, Precision::fp64, Variant::cuda_core), "fp64_fma");
  EXPECT_EQ(name(h200, Precision::fp64, Variant::tensor_core), "dmma_m16n8k16");
  EXPECT_EQ(bench::compute_ceiling(h200, Precision::fp64, Variant::tensor_core)->tflop_per_s, 66.7);
  EXPECT_EQ(name(h200, Precision::fp32, Variant::generic), "fp32_fma");
  EXPECT_EQ(name(h200, Precision::tf32x3, Variant::tensor_core), "tf32_mma");
  EXPECT_EQ(name(h200, Precision::fp16ec, Variant::tensor_core), "hmma_f16");
  EXPECT_EQ(name(h200, Precision::bf16, Variant::cuda_core), "fp32_fma");

  bench::Ceilings a100 = h200;  // sm_80: m8n8k4, no m16n8k16
  a100.sm_major = 8;
  a100.dmma_m16n8k16_tflop_per_s.reset();
  EXPECT_EQ(name(a100, Precision::fp64, Variant::tensor_core), "dmma_m8n8k4");
  bench::Ceilings none;  // not measured
  EXPECT_EQ(name(none, Precision::fp64, Variant::generic), "none");
  EXPECT_EQ(h200.dram_tb_per_s(), 0.0);
  h200.dram_copy_kernel_tb_per_s = 3.96;
  h200.dram_memcpy_tb_per_s = 4.3;
  EXPECT_EQ(h200.dram_tb_per_s(), 4.3);
}

TEST(CpuBench, MeasuresAndChecksFp32) {
  bench::BenchCase c;
  c.key.dim = 2;
  c.key.degree = 3;
  c.key.disc = fe::Disc::dg;
  c.key.precision = Precision::fp32;
  c.target_dofs = 500;
  c.repetitions = 3;
  c.warmup = 1;
  const auto r = bench::run_cpu_bench(c);
  EXPECT_GE(r.n_dofs, 500u);
  EXPECT_GT(r.median_seconds, 0.0);
  EXPECT_LE(r.min_seconds, r.median_seconds);
  EXPECT_LE(r.median_seconds, r.max_seconds);
  EXPECT_GE(r.dram_bytes_per_apply, 8.0 * r.n_dofs);
  ASSERT_TRUE(r.checked);
  ASSERT_TRUE(r.check_rel_diff.has_value());
  EXPECT_LT(*r.check_rel_diff, 1e-5);
  EXPECT_GT(*r.check_rel_diff, 0.0);  // fp32 differs from fp64 somewhere
  EXPECT_TRUE(r.check_passed);
  c.key.variant = Variant::tensor_core;
  EXPECT_THROW(bench::run_cpu_bench(c), InputError);
}

}  // namespace
