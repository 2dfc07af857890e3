// The cuda-core kernel family against the CPU operator (MatrixFreeOperator in fp64): fresh random
// inputs, NaN-poisoned outputs, every degree, dim, disc and both precisions, on anisotropic meshes
// with several tiles (partial ones included), single-cell directions, several work distributions
// (segments of one layer, segments split inside and across tiles) and both zeroing modes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_buffer.h"
#include "operators/device/device_operator.h"
#include "operators/cpu/laplace_operator.h"

namespace {
using namespace tcfem;
using operators::DeviceKernelKey;
using precision::Precision;

bool have_device() { return query_device(0).available; }

template <int dim, typename Number>
/// items: work items per worker (tuning cuda_core_items_per_worker; 0 the default, on the small test
/// meshes items of one layer; small values give long items).
/// interior: the apply split around these cells (vmult_interior + vmult_rest) instead of vmult.
double cuda_core_error(fe::Disc disc, int k, const std::array<int, dim>& nc, double items, std::uint64_t seed,
                       const operators::CellRange* interior = nullptr) {
  mesh::BoxMesh<dim> mesh(nc, mesh::GeometryKind::cartesian);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  DeviceKernelKey key;
  key.dim = dim;
  key.degree = k;
  key.disc = disc;
  key.cartesian = true;
  key.precision = sizeof(Number) == 8 ? Precision::fp64 : Precision::fp32;
  key.variant = operators::Variant::cuda_core;
  operators::DeviceTuning tuning;
  tuning.cuda_core_items_per_worker = items;
  const auto D = operators::make_device_operator<dim>(mesh, dofs, key, tuning);
  if (interior) {
    EXPECT_TRUE(D->split_apply(*interior));
    EXPECT_TRUE(D->is_split());
  }
  EXPECT_FALSE(D->choices().empty());
  EXPECT_EQ(D->n_local(), dofs.n_local());
  EXPECT_GT(D->flops_per_apply(), 0.0);
  EXPECT_GT(D->dram_bytes_per_apply(), 0.0);
  EXPECT_GT(D->shared_bytes_per_apply(), 0.0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::size_t n = dofs.n_local();
  Vector<double> x(n), ref(n);
  std::vector<Number> xs(n), out(n, std::numeric_limits<Number>::quiet_NaN());
  for (std::size_t i = 0; i < n; ++i) x[i] = xs[i] = static_cast<Number>(dist(rng));
  A.vmult(ref, x);
  DeviceBuffer<Number> d_x(xs), d_y(out);  // d_y poisoned with NaN
  // twice: the second apply must not depend on the state the first one left
  for (int twice = 0; twice < 2; ++twice) {
    if (interior) {
      D->vmult_interior(d_y.data(), d_x.data());
      D->vmult_rest(d_y.data(), d_x.data());
    } else {
      D->vmult(d_y.data(), d_x.data());
    }
  }
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  d_y.copy_to_host(out.data(), n);
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(double(out[i]))) return std::numeric_limits<double>::infinity();
    diff += (ref[i] - out[i]) * (ref[i] - out[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

template <int dim>
void check_all(fe::Disc disc, int k, std::mt19937_64& seeds) {
  const std::string what = std::string(fe::to_string(disc)) + " " + std::to_string(dim) + "D k=" + std::to_string(k);
  if constexpr (dim == 3) {
    const int n = k <= 2 ? 6 : k <= 4 ? 4 : 3;
    // (n+1) x n x (n+2): items of one layer, and long items (few per worker)
    for (double items : {0.0, 0.01, 0.037}) {
      EXPECT_LT((cuda_core_error<3, double>(disc, k, {n + 1, n, n + 2}, items, seeds())), 1e-12) << what;
      EXPECT_LT((cuda_core_error<3, float>(disc, k, {n + 1, n, n + 2}, items, seeds())), 1e-5) << what << " fp32";
    }
    // more tiles than one in x and y for every degree (tiles are at most 16 cells wide)
    EXPECT_LT((cuda_core_error<3, double>(disc, k, {17, 18 / k + 2, 3}, 0.0, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<3, double>(disc, k, {17, 18 / k + 2, 3}, 0.03, seeds())), 1e-12) << what;
    // single-cell directions
    EXPECT_LT((cuda_core_error<3, double>(disc, k, {1, n, 2}, 0.0, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<3, double>(disc, k, {n, 1, 1}, 0.0, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<3, float>(disc, k, {1, 1, n}, 0.01, seeds())), 1e-5) << what << " fp32";
    // the apply split around an interior box (tiles are at most 16 cells wide: 35 cells give an
    // interior tile): cut in z only, and on every side (six regions around it)
    operators::CellRange z_cut{{0, 0, 1}, {35, 3, 4}}, all_cut{{1, 2, 1}, {34, 32, 4}};
    EXPECT_LT((cuda_core_error<3, double>(disc, k, {35, 3, 5}, 0.0, seeds(), &z_cut)), 1e-12) << what << " split z";
    EXPECT_LT((cuda_core_error<3, double>(disc, k, {35, 34, 5}, 0.0, seeds(), &all_cut)), 1e-12) << what << " split";
    EXPECT_LT((cuda_core_error<3, float>(disc, k, {35, 34, 5}, 0.01, seeds(), &all_cut)), 1e-5) << what << " split fp32";
  } else {
    const int n = 9 - k / 2;
    for (double items : {0.0, 0.002, 0.01}) {
      EXPECT_LT((cuda_core_error<2, double>(disc, k, {n + 1, n}, items, seeds())), 1e-12) << what;
      EXPECT_LT((cuda_core_error<2, float>(disc, k, {n + 1, n}, items, seeds())), 1e-5) << what << " fp32";
    }
    EXPECT_LT((cuda_core_error<2, double>(disc, k, {70, 5}, 0.0, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<2, double>(disc, k, {70, 5}, 0.005, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<2, double>(disc, k, {1, n}, 0.0, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<2, double>(disc, k, {n, 1}, 0.0, seeds())), 1e-12) << what;
    EXPECT_LT((cuda_core_error<2, float>(disc, k, {1, 1}, 0.0, seeds())), 1e-5) << what << " fp32";
    // split applies (2D tiles are at most 32 cells wide)
    operators::CellRange y_cut{{0, 2}, {70, 5}}, all_cut{{1, 1}, {69, 5}};
    EXPECT_LT((cuda_core_error<2, double>(disc, k, {70, 6}, 0.0, seeds(), &y_cut)), 1e-12) << what << " split y";
    EXPECT_LT((cuda_core_error<2, double>(disc, k, {70, 6}, 0.0, seeds(), &all_cut)), 1e-12) << what << " split";
    EXPECT_LT((cuda_core_error<2, float>(disc, k, {70, 6}, 0.005, seeds(), &all_cut)), 1e-5) << what << " split fp32";
  }
}

// An interior box that holds no whole tile and layer: no split, whole applies.
TEST(CudaCoreSplit, EmptyInteriorKeepsWholeApplies) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU tests skip";
  mesh::BoxMesh<3> mesh({6, 5, 4}, mesh::GeometryKind::cartesian);
  fe::DofLayout<3> dofs(mesh, fe::Disc::cg, 3);
  DeviceKernelKey key;
  key.degree = 3;
  key.variant = operators::Variant::cuda_core;
  const auto D = operators::make_device_operator<3>(mesh, dofs, key);
  EXPECT_FALSE(D->split_apply(operators::CellRange{{1, 1, 2}, {5, 4, 2}}));
  EXPECT_FALSE(D->is_split());
  DeviceBuffer<double> a(dofs.n_local()), b(dofs.n_local());
  EXPECT_THROW(D->vmult_interior(a.data(), b.data()), Error);
}

class CudaCore : public ::testing::TestWithParam<int> {};

TEST_P(CudaCore, CartesianCgMatchesCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU tests skip";
  std::mt19937_64 seeds(std::random_device{}());
  check_all<3>(fe::Disc::cg, GetParam(), seeds);
  check_all<2>(fe::Disc::cg, GetParam(), seeds);
}

TEST_P(CudaCore, CartesianDgMatchesCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU tests skip";
  std::mt19937_64 seeds(std::random_device{}());
  check_all<3>(fe::Disc::dg, GetParam(), seeds);
  check_all<2>(fe::Disc::dg, GetParam(), seeds);
}

INSTANTIATE_TEST_SUITE_P(Degrees, CudaCore, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& info) { return "K" + std::to_string(info.param); });

TEST(CudaCoreRegistry, SupportsWhatItBuilds) {
  DeviceKernelKey key;
  key.variant = operators::Variant::cuda_core;
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (auto disc : {fe::Disc::cg, fe::Disc::dg})
        for (auto p : {Precision::fp64, Precision::fp32}) {
          key.dim = dim;
          key.degree = k;
          key.disc = disc;
          key.precision = p;
          EXPECT_TRUE(operators::device_kernel_supported(key)) << key.to_string();
        }
  key.cartesian = false;  // general geometry: cg only (test_cuda_core_geometry.cu)
  key.disc = fe::Disc::dg;
  EXPECT_FALSE(operators::device_kernel_supported(key));
  key.cartesian = true;
  key.form = operators::Form::mass;
  EXPECT_FALSE(operators::device_kernel_supported(key));
}

}  // namespace
