// The general-geometry cuda-core kernels (cg Laplacian, geometry from 1D tables) against the CPU
// operator on the general path (MatrixFreeOperator in fp64, same quadrature): fresh random inputs,
// NaN-poisoned outputs, applied twice, every degree, dim 2 and 3, the three quadratures, fp64 and
// fp32, on deformed meshes with several blocks (a partial last one), single-cell directions and the
// Cartesian box on the general path; every tuning setting (geometry_min_blocks_per_sm,
// geometry_cells_per_block: register-capped kernels, fewer cells per block) on the 3D and 2D
// deformed meshes (3D: the lines program, 2D: the points program). One line per case is printed
// (with the worst entry when it fails).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/device_buffer.h"
#include "operators/device/device_operator.h"
#include "operators/cpu/laplace_operator.h"

namespace {
using namespace tcfem;
using operators::DeviceKernelKey;
using precision::Precision;
using fe::QuadratureKind;

bool have_device() { return query_device(0).available; }

/// A tuning of the general-geometry kernels (0: the default) and its label.
struct GeomKnobs {
  int blocks = 0;
  int cells = 0;
  operators::DeviceTuning tuning() const {
    operators::DeviceTuning t;
    t.geometry_min_blocks_per_sm = blocks;
    t.geometry_cells_per_block = cells;
    return t;
  }
  std::string tag() const {
    std::string t;
    if (blocks) t += "blocks=" + std::to_string(blocks) + " ";
    if (cells) t += "cells=" + std::to_string(cells) + " ";
    return t.empty() ? "default" : t.substr(0, t.size() - 1);
  }
};

/// Where the result is worst (filled by geometry_error): index, expected, got.
struct Worst {
  std::size_t index = 0;
  double expected = 0, got = 0;
};
Worst last_worst;

template <int dim, typename Number>
double geometry_error(int k, QuadratureKind kind, const std::array<int, dim>& nc, mesh::GeometryKind geo,
                      std::uint64_t seed, const GeomKnobs& knobs = {}) {
  mesh::BoxMesh<dim> mesh(nc, geo);
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k);
  operators::OperatorConfig cfg;
  cfg.disc = fe::Disc::cg;
  cfg.degree = k;
  cfg.quadrature = kind;
  cfg.cartesian_fast_path = false;
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  DeviceKernelKey key;
  key.dim = dim;
  key.degree = k;
  key.disc = fe::Disc::cg;
  key.cartesian = false;
  key.quadrature = kind;
  key.precision = sizeof(Number) == 8 ? Precision::fp64 : Precision::fp32;
  key.variant = operators::Variant::cuda_core;
  const auto D = operators::make_device_operator<dim>(mesh, dofs, key, knobs.tuning());
  EXPECT_EQ(D->n_local(), dofs.n_local());
  const auto choices = D->choices();
  EXPECT_FALSE(choices.empty());
  for (const auto& [name, value] : choices)
    if (name == "program") EXPECT_EQ(value, dim == 3 ? "lines" : "points");
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
  D->vmult(d_y.data(), d_x.data());
  D->vmult(d_y.data(), d_x.data());
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  d_y.copy_to_host(out.data(), n);
  double diff = 0.0, norm = 0.0, worst = -1;
  last_worst = Worst{};
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::isfinite(double(out[i])) ? std::abs(ref[i] - out[i]) : std::numeric_limits<double>::infinity();
    if (d > worst) {
      worst = d;
      last_worst = Worst{i, ref[i], double(out[i])};
    }
    diff += (ref[i] - out[i]) * (ref[i] - out[i]);
    norm += ref[i] * ref[i];
  }
  if (!std::isfinite(diff)) return std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

template <int dim, typename Number>
void check(int k, QuadratureKind kind, const std::array<int, dim>& nc, mesh::GeometryKind geo, std::uint64_t seed,
           const GeomKnobs& knobs = {}) {
  const double tol = sizeof(Number) == 8 ? 1e-12 : 1e-5;
  const double e = geometry_error<dim, Number>(k, kind, nc, geo, seed, knobs);
  std::string cells;
  for (int d = 0; d < dim; ++d) cells += (d ? "x" : "") + std::to_string(nc[d]);
  std::printf("cuda-core general cg %dD k=%d %-8s %-4s %-9s cells %-8s knobs %-22s rel. error %.3e (tol %.0e) %s\n",
              dim, k, fe::to_string(kind), sizeof(Number) == 8 ? "fp64" : "fp32", mesh::to_string(geo), cells.c_str(),
              knobs.tag().c_str(), e, tol, e < tol ? "ok" : "FAIL");
  if (!(e < tol))
    std::printf("  worst entry %zu of %d-D lattice: expected %.17g got %.17g\n", last_worst.index, dim,
                last_worst.expected, last_worst.got);
  EXPECT_LT(e, tol) << dim << "D k=" << k << " " << fe::to_string(kind) << " cells " << cells << " knobs "
                    << knobs.tag();
}

class CudaCoreGeometry : public ::testing::TestWithParam<int> {};

TEST_P(CudaCoreGeometry, DeformedCgMatchesCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU tests skip";
  const int k = GetParam();
  std::mt19937_64 seeds(std::random_device{}());
  using G = mesh::GeometryKind;
  for (auto kind : {QuadratureKind::gll_k1, QuadratureKind::gauss_k2, QuadratureKind::gauss_k1}) {
    // 3D: several blocks (cells per block = 256 / q^2) with a partial last one
    const std::array<int, 3> m3 = k <= 2 ? std::array<int, 3>{7, 5, 4} : k <= 5 ? std::array<int, 3>{4, 3, 5}
                                                                                 : std::array<int, 3>{3, 2, 3};
    check<3, double>(k, kind, m3, G::deformed, seeds());
    check<3, float>(k, kind, m3, G::deformed, seeds());
    check<3, double>(k, kind, {1, 2, 1}, G::deformed, seeds());
    check<3, double>(k, kind, {2, 1, 3}, G::cartesian, seeds());
    check<2, double>(k, kind, {23, 17}, G::deformed, seeds());
    check<2, float>(k, kind, {23, 17}, G::deformed, seeds());
    check<2, double>(k, kind, {1, 4}, G::deformed, seeds());
    check<2, double>(k, kind, {3, 2}, G::cartesian, seeds());
    // every other tuning (blocks: register caps of the 3D BP5/BP3 kernels; cells: smaller blocks,
    // a partial last one)
    const GeomKnobs settings[] = {{3, 0}, {4, 0}, {1, 1}, {4, 3}, {0, 2}};
    for (const auto& s : settings) {
      check<3, double>(k, kind, m3, G::deformed, seeds(), s);
      check<3, float>(k, kind, m3, G::deformed, seeds(), s);
      check<2, double>(k, kind, {23, 17}, G::deformed, seeds(), s);
    }
  }
  // 3D BP5 and BP3 on meshes of many blocks (about 2000 / 400 cells)
  for (auto kind : {QuadratureKind::gll_k1, QuadratureKind::gauss_k2}) {
    const std::array<int, 3> big = k <= 3 ? std::array<int, 3>{16, 12, 11} : std::array<int, 3>{9, 7, 6};
    check<3, double>(k, kind, big, G::deformed, seeds());
    check<3, float>(k, kind, big, G::deformed, seeds());
    check<3, double>(k, kind, big, G::deformed, seeds(), {4, 0});
  }
}

TEST(CudaCoreGeometryKnobs, BadValuesAreInputErrors) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: GPU tests skip";
  for (const GeomKnobs& bad : {GeomKnobs{2, 0}, GeomKnobs{5, 0}, GeomKnobs{0, -1}, GeomKnobs{0, 2000}}) {
    EXPECT_THROW(
        (geometry_error<3, double>(4, QuadratureKind::gll_k1, {2, 2, 2}, mesh::GeometryKind::deformed, 1, bad)),
        InputError)
        << bad.tag();
  }
}

INSTANTIATE_TEST_SUITE_P(Degrees, CudaCoreGeometry, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& info) { return "K" + std::to_string(info.param); });

TEST(CudaCoreGeometryRegistry, SupportsGeneralCg) {
  DeviceKernelKey key;
  key.variant = operators::Variant::cuda_core;
  key.cartesian = false;
  for (int dim : {2, 3})
    for (int k = 1; k <= 8; ++k)
      for (auto kind : {QuadratureKind::gll_k1, QuadratureKind::gauss_k2, QuadratureKind::gauss_k1})
        for (auto p : {Precision::fp64, Precision::fp32}) {
          key.dim = dim;
          key.degree = k;
          key.quadrature = kind;
          key.precision = p;
          key.disc = fe::Disc::cg;
          EXPECT_TRUE(operators::device_kernel_supported(key)) << key.to_string();
          key.disc = fe::Disc::dg;
          EXPECT_FALSE(operators::device_kernel_supported(key)) << key.to_string();
        }
}

}  // namespace
