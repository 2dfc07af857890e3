// DeviceDgPatchSmoother against the CPU DgVertexPatchSmoother: one forward and then one backward
// smoothing step from fresh random x and b, every variant (fused, separate, global, additive),
// dim 2 and 3, degrees 1..8, double and float, on anisotropic Cartesian meshes (several patches per
// color, and a direction of two cells: patches on both boundaries) and on deformed meshes (global
// and additive). The level operator handed to the device smoother is the CPU operator through host
// copies, so the test checks the device smoother alone. Its work vector is NaN-poisoned at
// construction.
//
// Tolerance: relative difference in the 2-norm against the CPU smoother in double precision,
// below max(base, 4 e_cpu eps(Number) / eps(float)) with base 1e-12 (double) / 1e-5 (float), where
// e_cpu is the difference between the CPU smoother in float and in double (the local solves
// amplify rounding by the condition number of the patch matrices). One line per case is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "multigrid/device/dg_patch_smoother.h"
#include "multigrid/host/dg_patch_smoother.h"
#include "multigrid/host/multigrid.h"
#include "patch_smoother_cases.h"

namespace {
using namespace tcfem;
using multigrid::PatchVariant;
using multigrid::SmootherKind;
using multigrid::SweepOrder;

bool have_device() { return query_device(0).available; }

using patch_smoother_tests::Case;
using patch_smoother_tests::rel_diff;
using patch_smoother_tests::settings_of;
using patch_smoother_tests::to_string;

template <int dim>
struct Problem {
  Problem(const std::array<int, dim>& nc, mesh::GeometryKind g, int k)
      : mesh(nc, g), dofs(mesh, fe::Disc::dg, k), config(make_config(k)) {}
  static operators::OperatorConfig make_config(int k) {
    operators::OperatorConfig c;
    c.disc = fe::Disc::dg;
    c.degree = k;
    return c;
  }
  mesh::BoxMesh<dim> mesh;
  fe::DofLayout<dim> dofs;
  operators::OperatorConfig config;
};

template <int dim, typename Number>
fe::Quadrature1D quadrature_of(const multigrid::MatrixFreeLevelOperator<dim, Number>& op, int k) {
  const auto& config = op.matrix_free().config();
  return op.matrix_free().path() == operators::Path::cartesian ? fe::gauss(k + 1)
                                                                : fe::make_quadrature(config.quadrature, k);
}

/// Two CPU steps (forward, backward) of the CPU smoother in Number, as doubles.
template <int dim, typename Number>
std::vector<double> cpu_steps(const Problem<dim>& P, Case c, const std::vector<double>& x0,
                              const std::vector<double>& b0) {
  multigrid::MatrixFreeLevelOperator<dim, Number> op(P.mesh, P.dofs, P.config);
  const auto s = settings_of(c);
  const bool additive = c == Case::additive;
  const double omega = additive ? multigrid::dg_additive_default_relaxation(
                                      dim, P.mesh.geometry() == mesh::GeometryKind::cartesian)
                                : 1.0;
  multigrid::DgVertexPatchSmoother<dim, Number> smoother(P.mesh, P.dofs, quadrature_of(op, P.config.degree), additive,
                                                         s.patch_variant, omega, op);
  Vector<Number> x(x0.size()), b(b0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) {
    x[i] = static_cast<Number>(x0[i]);
    b[i] = static_cast<Number>(b0[i]);
  }
  smoother.smooth(x, b, SweepOrder::forward);
  smoother.smooth(x, b, SweepOrder::backward);
  return std::vector<double>(x.data(), x.data() + x.size());
}

template <int dim, typename Number>
std::vector<double> device_steps(const Problem<dim>& P, Case c, const std::vector<double>& x0,
                                 const std::vector<double>& b0) {
  multigrid::MatrixFreeLevelOperator<dim, Number> op(P.mesh, P.dofs, P.config);
  const std::size_t n = x0.size();
  // the level operator: the CPU operator through host copies (stream-ordered, synchronous)
  auto vmult = [&op, n](Number* dst, const Number* src) {
    Vector<Number> hs(n), hd(n);
    TCFEM_CUDA_CHECK(cudaMemcpy(hs.data(), src, n * sizeof(Number), cudaMemcpyDeviceToHost));
    op.vmult(hd, hs);
    TCFEM_CUDA_CHECK(cudaMemcpy(dst, hd.data(), n * sizeof(Number), cudaMemcpyHostToDevice));
  };
  multigrid::DeviceDgPatchSmoother<dim, Number> smoother(P.mesh, P.dofs, quadrature_of(op, P.config.degree),
                                                         settings_of(c), vmult);
  EXPECT_NE(smoother.description().find("dg vertex patch"), std::string::npos) << smoother.description();
  EXPECT_GT(smoother.device_bytes(), 0u);
  std::vector<Number> xs(n), bs(n);
  for (std::size_t i = 0; i < n; ++i) {
    xs[i] = static_cast<Number>(x0[i]);
    bs[i] = static_cast<Number>(b0[i]);
  }
  multigrid::DeviceVector<Number> dx, db;
  dx.copy_from_host(xs);
  db.copy_from_host(bs);
  smoother.smooth(dx, db, SweepOrder::forward);
  smoother.smooth(dx, db, SweepOrder::backward);
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = dx.to_host();
  return std::vector<double>(out.begin(), out.end());
}

template <int dim>
void check(const std::array<int, dim>& nc, mesh::GeometryKind g, int k, Case c, std::mt19937_64& seeds) {
  Problem<dim> P(nc, g, k);
  const std::size_t n = P.dofs.n_local();
  std::mt19937_64 rng(seeds());
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> x0(n), b0(n);
  for (std::size_t i = 0; i < n; ++i) {
    x0[i] = dist(rng);
    b0[i] = dist(rng);
  }
  const auto ref = cpu_steps<dim, double>(P, c, x0, b0);
  const double e_cpu = rel_diff(cpu_steps<dim, float>(P, c, x0, b0), ref);
  const double eps_ratio = std::numeric_limits<double>::epsilon() / std::numeric_limits<float>::epsilon();
  const double tol_d = std::max(1e-12, 4.0 * e_cpu * eps_ratio), tol_f = std::max(1e-5, 4.0 * e_cpu);
  // the step must change x: a smoother that did nothing would also agree with x0
  EXPECT_GT(rel_diff(x0, ref), 1e-3);
  std::string cells;
  for (int d = 0; d < dim; ++d) cells += (d ? "x" : "") + std::to_string(nc[d]);
  const double e_d = rel_diff(device_steps<dim, double>(P, c, x0, b0), ref);
  const double e_f = rel_diff(device_steps<dim, float>(P, c, x0, b0), ref);
  const std::string what = std::to_string(dim) + "D k=" + std::to_string(k) + " " + to_string(c) + " " +
                           mesh::to_string(g) + " cells " + cells;
  std::printf("dg patch smoother %-42s fp64 %.2e (tol %.1e)  fp32 %.2e (tol %.1e)  cpu fp32 %.2e  %s\n",
              what.c_str(), e_d, tol_d, e_f, tol_f, e_cpu, e_d < tol_d && e_f < tol_f ? "ok" : "FAILED");
  std::fflush(stdout);
  EXPECT_LT(e_d, tol_d) << what << " fp64";
  EXPECT_LT(e_f, tol_f) << what << " fp32";
}

class DeviceDgPatchSmootherTest : public ::testing::TestWithParam<int> {};

TEST_P(DeviceDgPatchSmootherTest, Cartesian3D) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(4000 + k);
  const int n = k <= 3 ? 5 : 4;
  for (Case c : {Case::fused, Case::separate, Case::global, Case::additive})
    check<3>({n + 2, n, n + 1}, mesh::GeometryKind::cartesian, k, c, seeds);
  // two cells along y: every patch touches both y boundaries (variant 3, no outer neighbours)
  check<3>({n, 2, n + 1}, mesh::GeometryKind::cartesian, k, Case::fused, seeds);
}

TEST_P(DeviceDgPatchSmootherTest, Cartesian2D) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(5000 + k);
  for (Case c : {Case::fused, Case::separate, Case::global, Case::additive})
    check<2>({9, 7}, mesh::GeometryKind::cartesian, k, c, seeds);
  check<2>({2, 11}, mesh::GeometryKind::cartesian, k, Case::fused, seeds);
}

TEST_P(DeviceDgPatchSmootherTest, Deformed) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(6000 + k);
  // fused is requested: deformed meshes always use the global residual
  for (Case c : {Case::fused, Case::additive}) {
    check<3>({4, 5, 4}, mesh::GeometryKind::deformed, k, c, seeds);
    check<2>({7, 6}, mesh::GeometryKind::deformed, k, c, seeds);
  }
}

INSTANTIATE_TEST_SUITE_P(Degrees, DeviceDgPatchSmootherTest, ::testing::Range(1, 9));

TEST(DeviceDgPatchSmoother, RejectsBadInput) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  mesh::BoxMesh<2> mesh({4, 4}, mesh::GeometryKind::cartesian);
  fe::DofLayout<2> cg(mesh, fe::Disc::cg, 2), dg(mesh, fe::Disc::dg, 2);
  multigrid::SmootherSettings s;
  EXPECT_THROW((multigrid::DeviceDgPatchSmoother<2, double>(mesh, cg, fe::gauss(3), s, nullptr)), InputError);
  s.kind = SmootherKind::chebyshev;
  EXPECT_THROW((multigrid::DeviceDgPatchSmoother<2, double>(mesh, dg, fe::gauss(3), s, nullptr)), InputError);
}

}  // namespace
