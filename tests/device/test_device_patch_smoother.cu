// DevicePatchSmoother against the CPU VertexPatchSmoother: one forward and then one backward
// smoothing step from fresh random x and b, every variant (fused, separate, global, additive) with
// every contraction of the kernels (dense, even-odd and tensor-core products, the tuning's
// patch_smoother.contraction),
// dim 2 and 3, degrees 1..8, double and float, on anisotropic Cartesian meshes (cell sizes differ
// per direction; several blocks per color), on deformed meshes (global and additive) and with the
// separable surrogates on a curved mesh (the quarter annulus) with a variable coefficient; and the
// cell metric of the device operators' stored data against the CPU operator's. The
// level operator handed to the device smoother is the CPU operator through host copies, so the
// test checks the device smoother alone. The internal work vectors are NaN-poisoned at
// construction.
//
// Tolerance: relative difference in the 2-norm against the CPU smoother in double precision,
// below max(base, 4 e_cpu eps(Number) / eps(float)) with base 1e-12 (double) / 1e-5 (float), where
// e_cpu is the difference between the CPU smoother in float and in double: the local solves
// amplify rounding by the condition number of the patch matrices (growing like k^4), and the
// device may round differently from the CPU only to that extent. One line per case is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "multigrid/device/patch_smoother.h"
#include "multigrid/host/multigrid.h"
#include "patch_smoother_cases.h"
#include "multigrid/host/patch_smoother.h"
#include "operators/device/device_operator.h"
#include "../support/curved_domains.h"

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

/// `g` mapped: the quarter annulus with the coefficient 1 + 3 (r^2 - 1) (1..10) and the separable
/// patch surrogates of its cell metric.
template <int dim>
struct Problem {
  Problem(const std::array<int, dim>& nc, mesh::GeometryKind g, int k,
          const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>())
      : mesh(g == mesh::GeometryKind::mapped ? mesh::BoxMesh<dim>(nc, test_domains::quarter_annulus<dim>())
                                              : mesh::BoxMesh<dim>(nc, g)),
        dofs(mesh, fe::Disc::cg, k, dirichlet),
        config(make_config(k, g == mesh::GeometryKind::mapped)) {}
  static operators::OperatorConfig make_config(int k, bool coefficient) {
    operators::OperatorConfig c;
    c.disc = fe::Disc::cg;
    c.degree = k;
    if (coefficient) c.coefficient = test_domains::annulus_coefficient;
    return c;
  }
  bool surrogate() const { return mesh.geometry() == mesh::GeometryKind::mapped; }
  mesh::BoxMesh<dim> mesh;
  fe::DofLayout<dim> dofs;
  operators::OperatorConfig config;
};

/// Two CPU steps (forward, backward) of the CPU smoother in Number, as doubles.
template <int dim, typename Number>
std::vector<double> cpu_steps(const Problem<dim>& P, Case c, const std::vector<double>& x0,
                              const std::vector<double>& b0) {
  multigrid::MatrixFreeLevelOperator<dim, Number> op(P.mesh, P.dofs, P.config);
  const auto s = settings_of(c);
  const bool additive = c == Case::additive;
  const double omega = s.relaxation.value_or(additive ? multigrid::additive_default_relaxation(dim) : 1.0);
  const auto quadrature = op.matrix_free().path() == operators::Path::cartesian
                              ? fe::gauss(P.config.degree + 1)
                              : fe::make_quadrature(P.config.quadrature, P.config.degree);
  multigrid::VertexPatchSmoother<dim, Number> smoother(P.mesh, P.dofs, quadrature, additive, s.patch_variant, omega, op,
                                                       P.surrogate() ? op.matrix_free().cell_metric()
                                                                     : std::vector<double>{});
  Vector<Number> x(x0.size()), b(b0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) {
    x[i] = static_cast<Number>(x0[i]);
    b[i] = static_cast<Number>(b0[i]);
  }
  smoother.smooth(x, b, SweepOrder::forward);
  smoother.smooth(x, b, SweepOrder::backward);
  return std::vector<double>(x.data(), x.data() + x.size());
}

/// The contractions of the patch kernels (SmootherSettings::kernels.contraction).
const char* const contractions[] = {"dense", "even-odd", "tensor-core"};
multigrid::PatchContraction contraction_of(const std::string& name) {
  if (name == "dense") return multigrid::PatchContraction::dense;
  if (name == "even-odd") return multigrid::PatchContraction::even_odd;
  return multigrid::PatchContraction::tensor_core;
}

template <int dim, typename Number>
std::vector<double> device_steps(const Problem<dim>& P, Case c, const char* contraction, const std::vector<double>& x0,
                                 const std::vector<double>& b0) {
  multigrid::MatrixFreeLevelOperator<dim, Number> op(P.mesh, P.dofs, P.config);
  const auto quadrature = op.matrix_free().path() == operators::Path::cartesian
                              ? fe::gauss(P.config.degree + 1)
                              : fe::make_quadrature(P.config.quadrature, P.config.degree);
  const std::size_t n = x0.size();
  // the level operator: the CPU operator through host copies (stream-ordered, synchronous)
  auto vmult = [&op, n](Number* dst, const Number* src) {
    Vector<Number> hs(n), hd(n);
    TCFEM_CUDA_CHECK(cudaMemcpy(hs.data(), src, n * sizeof(Number), cudaMemcpyDeviceToHost));
    op.vmult(hd, hs);
    TCFEM_CUDA_CHECK(cudaMemcpy(dst, hd.data(), n * sizeof(Number), cudaMemcpyHostToDevice));
  };
  auto settings = settings_of(c);
  settings.kernels.contraction = contraction_of(contraction);
  multigrid::DevicePatchSmoother<dim, Number> smoother(
      P.mesh, P.dofs, quadrature, settings, vmult,
      P.surrogate() ? op.matrix_free().cell_metric() : std::vector<double>{});
  EXPECT_EQ(smoother.description().find("separable surrogates") != std::string::npos, P.surrogate());
  // the surrogate residuals: surrogates, all faces Dirichlet, multiplicative, not the global variant
  const bool surrogate_residuals = P.surrogate() && P.dofs.all_faces_dirichlet() && c != Case::additive &&
                                   settings.patch_variant != multigrid::PatchVariant::global;
  EXPECT_EQ(smoother.description().find("surrogate residuals") != std::string::npos, surrogate_residuals)
      << smoother.description();
  EXPECT_EQ(smoother.description().find("on Neumann faces") != std::string::npos, !P.dofs.all_faces_dirichlet())
      << smoother.description();
  // the patch matrices (Cartesian cell sizes, also for deformed meshes) have the even-odd symmetry
  EXPECT_EQ(smoother.even_odd(), std::string(contraction) == "even-odd") << smoother.description();
  EXPECT_EQ(smoother.contraction(), std::string(contraction)) << smoother.description();
  if (smoother.even_odd()) {
    EXPECT_GT(smoother.flops_performed_per_step(), 0.0);
    // degree 1: one inner node per line, nothing to fold
    if (P.config.degree >= 2) {
      EXPECT_LT(smoother.flops_performed_per_step(), smoother.flops_per_step());
    } else {
      EXPECT_LE(smoother.flops_performed_per_step(), smoother.flops_per_step());
    }
  }
  EXPECT_EQ(smoother.size(), n);
  EXPECT_FALSE(smoother.description().empty());
  EXPECT_GT(smoother.flops_per_step(), 0.0);
  std::vector<Number> xs(n), bs(n);
  for (std::size_t i = 0; i < n; ++i) {
    xs[i] = static_cast<Number>(x0[i]);
    bs[i] = static_cast<Number>(b0[i]);
  }
  DeviceBuffer<Number> dx(xs), db(bs);
  smoother.smooth(dx.data(), db.data(), SweepOrder::forward);
  smoother.smooth(dx.data(), db.data(), SweepOrder::backward);
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = dx.to_host();
  return std::vector<double>(out.begin(), out.end());
}

template <int dim>
void check(const std::array<int, dim>& nc, mesh::GeometryKind g, int k, Case c, std::mt19937_64& seeds,
           const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>()) {
  Problem<dim> P(nc, g, k, dirichlet);
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
  const double tol_d = std::max(1e-12, 4.0 * e_cpu * eps_ratio), tol_f_base = std::max(1e-5, 4.0 * e_cpu);
  std::string cells;
  for (int d = 0; d < dim; ++d) cells += (d ? "x" : "") + std::to_string(nc[d]);
  if (!P.dofs.all_faces_dirichlet()) {
    cells += " neumann ";
    for (int f = 0; f < 2 * dim; ++f) cells += dirichlet[f] ? "" : std::string("xyz").substr(f / 2, 1) + (f % 2 ? "+" : "-");
  }
  for (const char* con : contractions) {
    // float tensor-core products are tf32x3 (hi + lo of 11 bits each, a_lo b_lo dropped): about
    // 2^-21 per product against FP32's 2^-24, so 8 times the float tolerance; index errors are O(1)
    const double tol_f = std::string(con) == "tensor-core" ? 8.0 * tol_f_base : tol_f_base;
    const double e_d = rel_diff(device_steps<dim, double>(P, c, con, x0, b0), ref);
    const double e_f = rel_diff(device_steps<dim, float>(P, c, con, x0, b0), ref);
    const std::string what = std::to_string(dim) + "D k=" + std::to_string(k) + " " + to_string(c) + " " + con +
                             " " + mesh::to_string(g) + " cells " + cells;
    std::printf("patch smoother %-53s fp64 %.2e (tol %.1e)  fp32 %.2e (tol %.1e)  cpu fp32 %.2e  %s\n", what.c_str(),
                e_d, tol_d, e_f, tol_f, e_cpu, e_d < tol_d && e_f < tol_f ? "ok" : "FAILED");
    std::fflush(stdout);
    EXPECT_LT(e_d, tol_d) << what << " fp64";
    EXPECT_LT(e_f, tol_f) << what << " fp32";
  }
}

class DevicePatchSmootherTest : public ::testing::TestWithParam<int> {};

TEST_P(DevicePatchSmootherTest, Cartesian3D) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(1000 + k);
  const int n = k <= 2 ? 6 : k <= 4 ? 4 : 3;
  for (Case c : {Case::fused, Case::separate, Case::global, Case::additive})
    check<3>({n + 1, n, n}, mesh::GeometryKind::cartesian, k, c, seeds);
  // several blocks per color also for the multi-patch blocks of low degrees, odd and even counts;
  // with inner blocks away from the boundary: the fused kernel that replaces x_I (relaxation 1)
  // and the one that adds a damped correction to it
  if (k <= 3)
    for (Case c : {Case::fused, Case::fused_relaxed}) check<3>({9, 8, 7}, mesh::GeometryKind::cartesian, k, c, seeds);
  if (k >= 4) {
    check<3>({7, 6, 6}, mesh::GeometryKind::cartesian, k, Case::fused, seeds);
    check<3>({7, 6, 6}, mesh::GeometryKind::cartesian, k, Case::fused_relaxed, seeds);
  }
  // two cells in a direction: one vertex, colors with no patches
  check<3>({2, n, 3}, mesh::GeometryKind::cartesian, k, Case::fused, seeds);
}

TEST_P(DevicePatchSmootherTest, Cartesian2D) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(2000 + k);
  const int n = 9 - k / 2;
  for (Case c : {Case::fused, Case::separate, Case::global, Case::additive})
    check<2>({n + 1, n}, mesh::GeometryKind::cartesian, k, c, seeds);
  check<2>({40, 23}, mesh::GeometryKind::cartesian, k, Case::fused, seeds);
  check<2>({40, 23}, mesh::GeometryKind::cartesian, k, Case::fused_relaxed, seeds);
  check<2>({n + 1, n}, mesh::GeometryKind::cartesian, k, Case::fused_relaxed, seeds);
  check<2>({2, n}, mesh::GeometryKind::cartesian, k, Case::separate, seeds);
}

TEST_P(DevicePatchSmootherTest, Deformed) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(3000 + k);
  const int n = k <= 2 ? 5 : k <= 4 ? 4 : 3;
  // fused is requested: deformed meshes always use the global residual
  for (Case c : {Case::fused, Case::additive}) {
    check<3>({n + 1, n, n}, mesh::GeometryKind::deformed, k, c, seeds);
    check<2>({n + 2, n + 1}, mesh::GeometryKind::deformed, k, c, seeds);
  }
}

TEST_P(DevicePatchSmootherTest, CurvedWithCoefficientSurrogates) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(4000 + k);
  const int n = k <= 2 ? 5 : k <= 4 ? 4 : 3;
  // fused and separate: the surrogate residuals (one level residual per step); global: one per color
  for (Case c : {Case::fused, Case::separate, Case::global, Case::additive}) {
    check<3>({n + 1, n, n}, mesh::GeometryKind::mapped, k, c, seeds);
    check<2>({n + 2, n + 1}, mesh::GeometryKind::mapped, k, c, seeds);
  }
  if (k <= 3) check<3>({9, 8, 7}, mesh::GeometryKind::mapped, k, Case::fused, seeds);
}

TEST_P(DevicePatchSmootherTest, NeumannFacesBoundaryPatches) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const int k = GetParam();
  std::mt19937_64 seeds(5000 + k);
  const int n = k <= 2 ? 5 : k <= 4 ? 4 : 3;
  // Neumann faces low and high, their edges and corners; fused is requested: on Cartesian cells
  // the boundary patches localize their residuals (fused, separate), on the annulus (surrogates)
  // they take the level operator's
  const fe::DirichletFaces<3> mixed3{true, false, false, true, false, true};
  const fe::DirichletFaces<2> mixed2{false, true, true, false}, neumann2{false, false, false, false};
  for (Case c : {Case::fused, Case::additive})
    for (auto g : {mesh::GeometryKind::cartesian, mesh::GeometryKind::mapped}) {
      check<3>({n + 1, n, n}, g, k, c, seeds, mixed3);
      check<2>({n + 2, n + 1}, g, k, c, seeds, mixed2);
    }
  for (Case c : {Case::separate, Case::global, Case::fused_relaxed}) {
    check<3>({n + 1, n, n}, mesh::GeometryKind::cartesian, k, c, seeds, mixed3);
    check<2>({n + 2, n + 1}, mesh::GeometryKind::cartesian, k, c, seeds, mixed2);
  }
  check<2>({n + 1, n}, mesh::GeometryKind::cartesian, k, Case::fused, seeds, neumann2);
  if (k <= 3) check<3>({9, 8, 7}, mesh::GeometryKind::cartesian, k, Case::fused, seeds, mixed3);
  if (k <= 3) check<3>({9, 8, 7}, mesh::GeometryKind::mapped, k, Case::fused, seeds, mixed3);
}

INSTANTIATE_TEST_SUITE_P(Degrees, DevicePatchSmootherTest, ::testing::Range(1, 9));

/// The device operators' cell metric (their stored quadrature data, computed on the device)
/// against the CPU operator's, generic and cuda-core, BP3 and BP5, fp64 and fp32.
template <int dim>
void check_cell_metric(int k) {
  std::array<int, dim> cells;
  for (int d = 0; d < dim; ++d) cells[d] = 4 + d;
  Problem<dim> P(cells, mesh::GeometryKind::mapped, k);
  for (auto quadrature : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
    auto config = P.config;
    config.quadrature = quadrature;
    const operators::LaplaceOperator<dim, double> cpu(P.mesh, P.dofs, config, operators::Form::laplace);
    const auto ref = cpu.cell_metric();
    ASSERT_EQ(ref.size(), P.mesh.n_owned_cells() * dim);
    for (auto variant : {operators::Variant::generic, operators::Variant::cuda_core})
      for (auto precision : {precision::Precision::fp64, precision::Precision::fp32}) {
        operators::DeviceKernelKey key;
        key.dim = dim;
        key.degree = k;
        key.quadrature = quadrature;
        key.precision = precision;
        key.variant = variant;
        operators::set_geometry(key, P.mesh, P.dofs, config);
        ASSERT_TRUE(key.general_field);
        if (!operators::device_kernel_supported(key)) continue;
        const auto op = operators::make_device_operator<dim>(P.mesh, P.dofs, key, {}, config.coefficient);
        const auto metric = op->cell_metric();
        ASSERT_EQ(metric.size(), ref.size()) << key.to_string();
        std::vector<double> a(metric.begin(), metric.end());
        const double tol = precision == precision::Precision::fp64 ? 1e-13 : 1e-6;
        EXPECT_LT(rel_diff(a, ref), tol) << key.to_string();
        for (double g : metric) EXPECT_GT(g, 0.0) << key.to_string();
        // the same metric written into device memory (NaN-poisoned)
        DeviceBuffer<double> d_metric(std::vector<double>(metric.size(), std::numeric_limits<double>::quiet_NaN()));
        ASSERT_TRUE(op->cell_metric_to(d_metric.data())) << key.to_string();
        const auto on_device = d_metric.to_host();
        std::size_t differ = 0;
        for (std::size_t i = 0; i < metric.size(); ++i) differ += !(on_device[i] == metric[i]);
        EXPECT_EQ(differ, 0u) << key.to_string();
      }
  }
}

/// The surrogates' weights computed on the device from the cell metric in device memory give the
/// smoother of the host-computed weights to the bit (fused and separate, fp64 and fp32).
template <int dim, typename Number>
void check_device_weights(const std::array<int, dim>& cells, int k) {
  Problem<dim> P(cells, mesh::GeometryKind::mapped, k);
  multigrid::MatrixFreeLevelOperator<dim, Number> op(P.mesh, P.dofs, P.config);
  const auto quadrature = fe::make_quadrature(P.config.quadrature, k);
  const auto metric = op.matrix_free().cell_metric();
  DeviceBuffer<double> d_metric(metric);
  const std::size_t n = P.dofs.n_local();
  auto vmult = [&op, n](Number* dst, const Number* src) {
    Vector<Number> hs(n), hd(n);
    TCFEM_CUDA_CHECK(cudaMemcpy(hs.data(), src, n * sizeof(Number), cudaMemcpyDeviceToHost));
    op.vmult(hd, hs);
    TCFEM_CUDA_CHECK(cudaMemcpy(dst, hd.data(), n * sizeof(Number), cudaMemcpyHostToDevice));
  };
  std::mt19937 rng(700 + k);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<Number> x0(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    x0[i] = static_cast<Number>(dist(rng));
    b[i] = static_cast<Number>(dist(rng));
  }
  for (Case c : {Case::fused, Case::separate}) {
    const auto settings = settings_of(c);
    multigrid::DevicePatchSmoother<dim, Number> host(P.mesh, P.dofs, quadrature, settings, vmult, metric);
    multigrid::DevicePatchSmoother<dim, Number> device(P.mesh, P.dofs, quadrature, settings, vmult, {}, {},
                                                       d_metric.data());
    EXPECT_NE(device.description().find("surrogate residuals"), std::string::npos) << device.description();
    DeviceBuffer<Number> xh(x0), xd(x0), db(b);
    for (auto order : {SweepOrder::forward, SweepOrder::backward}) {
      host.smooth(xh.data(), db.data(), order);
      device.smooth(xd.data(), db.data(), order);
    }
    const auto a = xh.to_host(), d = xd.to_host();
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) differ += a[i] != d[i];
    EXPECT_EQ(differ, 0u) << dim << "D k=" << k << " " << to_string(c) << " " << sizeof(Number) * 8 << " bit";
  }
}

TEST(DevicePatchSmoother, SurrogateWeightsOnTheDeviceEqualTheHostOnes) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  check_device_weights<3, double>({5, 4, 6}, 2);
  check_device_weights<3, float>({4, 5, 3}, 4);
  check_device_weights<2, double>({7, 5}, 3);
  check_device_weights<2, float>({6, 6}, 5);
}

TEST(DevicePatchSmoother, CellMetricOfTheDeviceOperatorsMatchesCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (int k : {1, 2, 4, 7}) {
    check_cell_metric<2>(k);
    check_cell_metric<3>(k);
  }
}

TEST(DevicePatchSmoother, RejectsBadInput) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  mesh::BoxMesh<2> mesh({4, 4}, mesh::GeometryKind::cartesian);
  fe::DofLayout<2> dg(mesh, fe::Disc::dg, 2), cg(mesh, fe::Disc::cg, 2);
  multigrid::SmootherSettings s;
  EXPECT_THROW((multigrid::DevicePatchSmoother<2, double>(mesh, dg, fe::gauss(3), s, nullptr)), InputError);
  s.kind = SmootherKind::chebyshev;
  EXPECT_THROW((multigrid::DevicePatchSmoother<2, double>(mesh, cg, fe::gauss(3), s, nullptr)), InputError);
  s.kind = SmootherKind::patch_additive;  // needs the level operator
  EXPECT_THROW((multigrid::DevicePatchSmoother<2, double>(mesh, cg, fe::gauss(3), s, nullptr)), InputError);
  s.kind = SmootherKind::patch;
  for (int carveout : {-2, 101}) {  // percent, or -1 for the driver's choice
    s.kernels.carveout = carveout;
    EXPECT_THROW((multigrid::DevicePatchSmoother<2, double>(mesh, cg, fe::gauss(3), s, nullptr)), InputError);
  }
}

}  // namespace
