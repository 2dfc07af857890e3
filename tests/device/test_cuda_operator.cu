// The CUDA operator and the CUDA CG solve against the CPU reference: fresh random inputs,
// NaN-poisoned outputs, every degree, dim, disc, geometry and form.
//
// GCC 12 reports std::vector's inlined deallocation in solve_cg as a free of a non-heap pointer, a
// false positive of its middle end that CMakeLists.txt turns off for the C++ targets; nvcc's host
// compilation of this file needs it here.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "operators/device/device_operator.h"
#include "operators/generic/cuda_operator.h"
#include "problem/poisson.h"
#include "solvers/cuda_solve.h"

namespace {
using namespace tcfem;
using operators::Form;

#define SKIP_WITHOUT_DEVICE()                                                      \
  do {                                                                             \
    const auto info_ = query_device(0);                                            \
    if (!info_.available) GTEST_SKIP() << "no CUDA device: skipping (" << info_.reason << ")"; \
  } while (0)

template <int dim, typename Number>
double device_vs_cpu(fe::Disc disc, mesh::GeometryKind g, int k, int n, bool fast, Form form,
                     fe::QuadratureKind quad, std::uint64_t seed) {
  std::array<int, dim> nc;
  nc.fill(n);
  nc[0] = n + 1;
  mesh::BoxMesh<dim> mesh(nc, g);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  cfg.cartesian_fast_path = fast;
  cfg.quadrature = quad;
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, form);
  operators::CudaOperator<dim, Number> D(mesh, dofs, cfg, form);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::size_t n_local = dofs.n_local();
  Vector<double> x(n_local), ref(n_local);
  std::vector<Number> xs(n_local), out(n_local, std::numeric_limits<Number>::quiet_NaN());
  for (std::size_t i = 0; i < n_local; ++i) {
    xs[i] = static_cast<Number>(dist(rng));
    x[i] = xs[i];
  }
  A.vmult(ref, x);
  DeviceBuffer<Number> d_x(xs), d_y(out);  // d_y poisoned with NaN
  D.vmult(d_y.data(), d_x.data());
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  d_y.copy_to_host(out.data(), n_local);
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < n_local; ++i) {
    if (!std::isfinite(double(out[i]))) return std::numeric_limits<double>::infinity();
    diff += (ref[i] - out[i]) * (ref[i] - out[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

TEST(CudaOperator, MatchesCpuFp64EveryDegree) {
  SKIP_WITHOUT_DEVICE();
  using G = mesh::GeometryKind;
  using Q = fe::QuadratureKind;
  std::random_device rd;
  for (int k = 1; k <= 8; ++k)
    for (auto disc : {fe::Disc::cg, fe::Disc::dg})
      for (auto form : {Form::laplace, Form::mass}) {
        const std::string what = std::string(fe::to_string(disc)) + (form == Form::mass ? " mass" : " laplace") +
                                 " k=" + std::to_string(k);
        EXPECT_LT((device_vs_cpu<2, double>(disc, G::cartesian, k, 5, true, form, Q::gauss_k2, rd())), 1e-12) << what;
        EXPECT_LT((device_vs_cpu<2, double>(disc, G::deformed, k, 4, false, form, Q::gauss_k2, rd())), 1e-12) << what;
        EXPECT_LT((device_vs_cpu<3, double>(disc, G::cartesian, k, 3, true, form, Q::gauss_k2, rd())), 1e-12) << what;
        EXPECT_LT((device_vs_cpu<3, double>(disc, G::deformed, k, 3, false, form, Q::gauss_k2, rd())), 1e-12) << what;
        EXPECT_LT((device_vs_cpu<3, double>(disc, G::deformed, k, 2, false, form, Q::gll_k1, rd())), 1e-12) << what;
      }
}

TEST(CudaOperator, MatchesCpuFp32) {
  SKIP_WITHOUT_DEVICE();
  using G = mesh::GeometryKind;
  using Q = fe::QuadratureKind;
  std::random_device rd;
  for (int k : {1, 3, 5, 8})
    for (auto disc : {fe::Disc::cg, fe::Disc::dg}) {
      EXPECT_LT((device_vs_cpu<3, float>(disc, G::cartesian, k, 3, true, Form::laplace, Q::gauss_k2, rd())), 1e-5);
      EXPECT_LT((device_vs_cpu<3, float>(disc, G::deformed, k, 2, false, Form::laplace, Q::gauss_k2, rd())), 1e-5);
    }
}

template <int dim>
void check_solve(fe::Disc disc, mesh::GeometryKind g, int k, int n) {
  std::array<int, dim> nc;
  nc.fill(n);
  mesh::BoxMesh<dim> mesh(nc, g);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, Form::laplace);
  Vector<double> diag;
  A.compute_diagonal(diag);
  const auto b = problem::assemble_rhs<dim>(mesh, dofs);
  solvers::SolverControl control;
  control.tolerance = 1e-10;
  Vector<double> x_cpu(dofs.n_local()), x_gpu(dofs.n_local());
  const auto r_cpu = solvers::solve_cg(A, x_cpu, b, solvers::JacobiPreconditioner<double>(diag), control);
  const auto r_gpu = solvers::solve_cg_cuda<dim>(mesh, dofs, cfg, b, diag, x_gpu, control);
  EXPECT_TRUE(r_gpu.result.converged);
  EXPECT_LE(std::abs(r_gpu.result.iterations - r_cpu.iterations), 1);
  const auto e_cpu = problem::compute_errors<dim>(mesh, dofs, x_cpu);
  const auto e_gpu = problem::compute_errors<dim>(mesh, dofs, x_gpu);
  EXPECT_NEAR(e_gpu.l2, e_cpu.l2, 1e-6 * e_cpu.l2);
  EXPECT_NEAR(e_gpu.h1_semi, e_cpu.h1_semi, 1e-6 * e_cpu.h1_semi);
}

TEST(CudaSolve, AgreesWithCpuSolve) {
  SKIP_WITHOUT_DEVICE();
  check_solve<3>(fe::Disc::cg, mesh::GeometryKind::cartesian, 3, 6);
  check_solve<3>(fe::Disc::dg, mesh::GeometryKind::cartesian, 2, 4);
  check_solve<3>(fe::Disc::cg, mesh::GeometryKind::deformed, 4, 3);
  check_solve<2>(fe::Disc::dg, mesh::GeometryKind::deformed, 3, 6);
}

}  // namespace

namespace {
// A mapped box (a curved annulus sector, extruded in 3D), a variable coefficient and, for dg and
// with `neumann`, Neumann faces: the registry's operator of `variant` (generic, or cuda-core with stored geometry;
// general field) against the CPU operator. With `compiled` the map and the coefficient also have
// their CUDA forms (the device geometry compiles them); without, the device geometry evaluates the
// callables on the host threads. The relative error of the diagonal against the CPU operator's
// goes to *diagonal_error when given; `tuning`: the kernel choices of the operator; `storage`: the
// precision of the stored geometry (fp32 with fp64: the cuda-core kernels reading it rounded).
template <int dim>
double mapped_device_vs_cpu(fe::Disc disc, int k, precision::Precision p, std::uint64_t seed, bool compiled = false,
                            double* diagonal_error = nullptr, operators::Variant variant = operators::Variant::generic,
                            fe::QuadratureKind quadrature = fe::QuadratureKind::gauss_k2, bool neumann = false,
                            operators::GeometryForm form = operators::GeometryForm::pa, bool affine = false,
                            bool split = false, const operators::DeviceTuning& tuning = {},
                            operators::GeometryStorage storage = operators::GeometryStorage::fp64,
                            bool quadratic = false, bool box = false) {
  // box: a Cartesian box [0.5, 2] x [-1, 0.5] (x [0, 3]) with Neumann parts and no coefficient (the
  // cuda-core kernels read the box's 1D tables)
  if (box) neumann = true;
  // the curved map, an affine one (trilinear cells), or one quadratic in each coordinate (cells of
  // geometry order 2)
  auto map = [affine, quadratic](const mesh::Point<dim>& X) {
    mesh::Point<dim> x = X;
    if (quadratic) {
      x[0] = X[0] + 0.3 * X[1] * X[1];
      x[1] = X[1] + 0.1 * X[0] * X[0];
      if constexpr (dim == 3) {
        x[0] -= 0.1 * X[0] * X[1] * X[2] * X[2];
        x[1] += 0.2 * X[2] * X[2] * X[0];
        x[2] = 1.5 * X[2] - 0.2 * X[0] * X[0] * X[1] * X[1] + 0.1 * X[1];
      }
      return x;
    }
    if (affine) {
      x[0] = 2.0 * X[0] + 0.3 * X[1];
      x[1] = 0.5 * X[1] + 1.0;
      if constexpr (dim == 3) {
        x[1] -= 0.2 * X[2];
        x[2] = 0.8 * X[2] + 0.1 * X[0];
      }
      return x;
    }
    x[0] = (1.0 + X[0]) * std::cos(0.5 * M_PI * X[1]);
    x[1] = (1.0 + X[0]) * std::sin(0.5 * M_PI * X[1]) + 0.1 * X[0] * X[0];
    return x;
  };
  mesh::Point<dim> lo, hi;
  lo.fill(0.0);
  hi.fill(1.0);
  if (box) {
    lo[0] = 0.5, hi[0] = 2.0, lo[1] = -1.0, hi[1] = 0.5;
    if constexpr (dim == 3) hi[2] = 3.0;
  }
  std::array<int, dim> nc;
  nc.fill(3);
  nc[0] = 4;
  auto domain = box ? mesh::Domain<dim>::box(lo, hi) : mesh::Domain<dim>::box(lo, hi, map);
  if (compiled && quadratic) {
    domain.map_source[0].expression = dim == 3 ? "x[0] + 0.3 * x[1] * x[1] - 0.1 * x[0] * x[1] * x[2] * x[2]"
                                               : "x[0] + 0.3 * x[1] * x[1]";
    domain.map_source[1].expression = dim == 3 ? "x[1] + 0.1 * x[0] * x[0] + 0.2 * x[2] * x[2] * x[0]"
                                               : "x[1] + 0.1 * x[0] * x[0]";
    if (dim == 3) domain.map_source[dim - 1].expression = "1.5 * x[2] - 0.2 * x[0] * x[0] * x[1] * x[1] + 0.1 * x[1]";
  } else if (compiled && affine) {
    domain.map_source[0].expression = "2.0 * x[0] + 0.3 * x[1]";
    domain.map_source[1].expression = dim == 3 ? "0.5 * x[1] + 1.0 - 0.2 * x[2]" : "0.5 * x[1] + 1.0";
    if (dim == 3) domain.map_source[dim - 1].expression = "0.8 * x[2] + 0.1 * x[0]";
  } else if (compiled) {
    const std::string pi = "3.141592653589793";  // M_PI to the last digit
    domain.map_source[0].expression = "(1.0 + x[0]) * cos(0.5 * " + pi + " * x[1])";
    domain.map_source[1].expression = "(1.0 + x[0]) * sin(0.5 * " + pi + " * x[1]) + 0.1 * x[0] * x[0]";
    if (dim == 3) domain.map_source[dim - 1].expression = "x[2]";
  }
  mesh::BoxMesh<dim> mesh(nc, domain);
  auto dir = fe::all_dirichlet<dim>();
  if (disc == fe::Disc::dg || neumann) dir[1] = dir[2] = false;
  fe::DofLayout<dim> dofs(mesh, disc, k, dir);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  cfg.quadrature = quadrature;
  // the box: the CPU operator with the quadrature too (its Kronecker path integrates exactly)
  if (box) cfg.cartesian_fast_path = false;
  cfg.geometry_form = form;
  cfg.geometry_storage = storage;
  if (!box) {
    cfg.coefficient = [](const double* x) { return 1.0 + 0.5 * x[0] * x[1] + 0.25 * std::sin(3.0 * x[0]); };
    if (compiled) cfg.coefficient_source.expression = "1.0 + 0.5 * x[0] * x[1] + 0.25 * sin(3.0 * x[0])";
  }
  operators::DeviceKernelKey key;
  key.dim = dim;
  key.degree = k;
  key.disc = disc;
  key.quadrature = cfg.quadrature;
  key.precision = p;
  key.variant = operators::Variant::cuda_core;
  operators::set_geometry(key, mesh, dofs, cfg);
  EXPECT_TRUE(key.general_field);
  EXPECT_EQ(key.box_tables, box && disc == fe::Disc::cg);
  // the cuda-core family serves cg and dg on any geometry with stored geometry, for BP3 and BP5
  // quadrature (dg: stored data only); fp64 with fp32 stored geometry: cg with stored data only
  const bool stored_fp32 = operators::fp32_stored_fp64(key);
  EXPECT_EQ(operators::device_kernel_supported(key),
            quadrature != fe::QuadratureKind::gauss_k1 &&
                (disc == fe::Disc::cg || form != operators::GeometryForm::mf) &&
                (!stored_fp32 || (disc == fe::Disc::cg && form != operators::GeometryForm::mf)));
  if (stored_fp32) {
    // the generic family stores fp64: it refuses the key; the tensor-core kernels of cg take it
    auto o = key;
    o.variant = operators::Variant::generic;
    EXPECT_FALSE(operators::device_kernel_supported(o)) << o.to_string();
    o.variant = operators::Variant::tensor_core;
    EXPECT_EQ(operators::device_kernel_supported(o), disc == fe::Disc::cg && form != operators::GeometryForm::mf)
        << o.to_string();
  }
  key.variant = variant;
  const auto D = operators::make_device_operator<dim>(mesh, dofs, key, tuning, cfg.coefficient, cfg.coefficient_source);
  EXPECT_EQ(D->key().variant, variant);
  if (variant == operators::Variant::cuda_core || variant == operators::Variant::tensor_core) {
    const auto choices = D->choices();
    // Q1 node fields (k = 1) are trilinear whatever the map; cells of geometry order 2 read the Q2
    // lattice below k
    const std::string expected = box && variant == operators::Variant::cuda_core && form != operators::GeometryForm::mf
                                     ? "box tables"
                                 : form == operators::GeometryForm::pa ? (stored_fp32 ? "stored fp32" : "stored")
                                 : affine || box || k == 1 ? (dim == 2 ? "bilinear vertices" : "trilinear vertices")
                                 : quadratic && k >= 3              ? "quadratic nodes"
                                                                     : "nodes";
    bool found = false;
    for (const auto& [name, value] : choices) found |= name == "geometry" && value == expected;
    EXPECT_TRUE(found) << "geometry " << expected << ": " << operators::describe(choices);
    // the matrix-free form holds at least the vertices (double) of its node field
    std::size_t n_vertices = 1;
    for (int d = 0; d < dim; ++d) n_vertices *= std::size_t(nc[d] + 1);
    if (form == operators::GeometryForm::mf) EXPECT_GE(D->device_bytes(), dim * sizeof(double) * n_vertices);
  }
  // split: the apply around interior cells (vmult_interior, then vmult_rest), as a rank's ghosted
  // box runs it beside its exchange
  if (split) {
    operators::CellRange interior{{1, 1, 1}, {3, 2, 2}};
    EXPECT_TRUE(D->split_apply(interior));
    EXPECT_TRUE(D->is_split());
    bool found = false;
    for (const auto& [name, value] : D->choices()) found |= name == "split_launches" && value == std::to_string(2 * dim + 1);
    EXPECT_TRUE(found) << operators::describe(D->choices());
  }
  auto apply = [&](void* y, const void* x) {
    if (!split) {
      D->vmult(y, x);
      return;
    }
    D->vmult_interior(y, x);
    D->vmult_rest(y, x);
  };
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, Form::laplace);
  if (box && disc == fe::Disc::cg) {
    // the patch surrogates' weights: the box's cell metric, as the CPU operator's
    const auto m = D->cell_metric(), m_ref = A.cell_metric();
    EXPECT_EQ(m.size(), m_ref.size());
    for (std::size_t i = 0; i < std::min(m.size(), m_ref.size()); ++i)
      EXPECT_NEAR(m[i], m_ref[i], 1e-12 * std::abs(m_ref[i])) << i;
  }
  if (diagonal_error) {
    Vector<double> d_ref;
    A.compute_diagonal(d_ref);
    const std::size_t n = dofs.n_local();
    std::vector<double> dd(n);
    if (p == precision::Precision::fp64) {
      DeviceBuffer<double> d(std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()));
      EXPECT_TRUE(D->diagonal(d.data()));
      d.copy_to_host(dd.data(), n);
    } else {
      DeviceBuffer<float> d(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
      EXPECT_TRUE(D->diagonal(d.data()));
      std::vector<float> df(n);
      d.copy_to_host(df.data(), n);
      for (std::size_t i = 0; i < n; ++i) dd[i] = df[i];
    }
    double worst = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double e = std::abs(dd[i] - d_ref[i]) / std::abs(d_ref[i]);
      worst = std::isfinite(dd[i]) ? std::max(worst, e) : std::numeric_limits<double>::infinity();
    }
    *diagonal_error = worst;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::size_t n = dofs.n_local();
  Vector<double> x(n), ref(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = dist(rng);
  A.vmult(ref, x);
  std::vector<double> out(n);
  if (p == precision::Precision::fp64) {
    std::vector<double> xs(x.data(), x.data() + n), o(n, std::numeric_limits<double>::quiet_NaN());
    DeviceBuffer<double> d_x(xs), d_y(o);
    apply(d_y.data(), d_x.data());
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    d_y.copy_to_host(out.data(), n);
  } else {
    std::vector<float> xs(n), o(n, std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < n; ++i) xs[i] = float(x[i]);
    DeviceBuffer<float> d_x(xs), d_y(o);
    apply(d_y.data(), d_x.data());
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    d_y.copy_to_host(o.data(), n);
    for (std::size_t i = 0; i < n; ++i) out[i] = o[i];
  }
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    diff += (ref[i] - out[i]) * (ref[i] - out[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

TEST(CudaOperator, MappedBoxWithCoefficientMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  for (int k = 1; k <= 8; ++k)
    for (auto disc : {fe::Disc::cg, fe::Disc::dg}) {
      const std::string what = std::string(fe::to_string(disc)) + " k=" + std::to_string(k);
      EXPECT_LT(mapped_device_vs_cpu<2>(disc, k, P::fp64, rd()), 1e-12) << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(disc, k, P::fp32, rd()), 1e-5) << what;
      if (k <= 6) EXPECT_LT(mapped_device_vs_cpu<3>(disc, k, P::fp64, rd()), 1e-12) << what;
    }
  // cg with Neumann faces: the nodes on them are free
  for (int k = 1; k <= 8; ++k) {
    const std::string what = "cg Neumann k=" + std::to_string(k);
    double diag = 0.0;
    EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), k % 2 == 0, &diag, operators::Variant::generic,
                                      fe::QuadratureKind::gauss_k2, true),
              1e-12)
        << what;
    EXPECT_LT(diag, 1e-12) << what;
    if (k <= 6)
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp32, rd(), false, nullptr, operators::Variant::generic,
                                        fe::QuadratureKind::gauss_k2, true),
                1e-5)
          << what;
  }
}

TEST(CudaOperator, CompiledMapAndCoefficientMatchCpu) {
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  for (int k : {1, 2, 4, 7})
    for (auto disc : {fe::Disc::cg, fe::Disc::dg}) {
      const std::string what = std::string(fe::to_string(disc)) + " k=" + std::to_string(k);
      double diag = 0.0;
      EXPECT_LT(mapped_device_vs_cpu<2>(disc, k, P::fp64, rd(), true, &diag), 1e-12) << what;
      EXPECT_LT(diag, 1e-12) << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(disc, k, P::fp32, rd(), true, &diag), 1e-5) << what;
      EXPECT_LT(diag, 1e-5) << what;
      if (k <= 6) {
        EXPECT_LT(mapped_device_vs_cpu<3>(disc, k, P::fp64, rd(), true, &diag), 1e-12) << what;
        EXPECT_LT(diag, 1e-12) << what;
        EXPECT_LT(mapped_device_vs_cpu<3>(disc, k, P::fp32, rd(), false, &diag), 1e-5) << what;
        EXPECT_LT(diag, 1e-5) << what;
      }
    }
}

/// The cuda-core operator of `disc` with stored geometry against the CPU operator, operator and
/// diagonal: 2D and 3D, fp64 (within 1e-12) and fp32 (1e-5); `compiled` alternates the compiled
/// and the host-evaluated map and coefficient.
void check_cuda_core_stored(fe::Disc disc, int k, fe::QuadratureKind quad, bool compiled, std::random_device& rd,
                            const std::string& what) {
  using P = precision::Precision;
  using operators::Variant;
  double diag = 0.0;
  EXPECT_LT(mapped_device_vs_cpu<2>(disc, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, quad), 1e-12)
      << "2D " << what;
  EXPECT_LT(diag, 1e-12) << "2D " << what;
  EXPECT_LT(mapped_device_vs_cpu<2>(disc, k, P::fp32, rd(), !compiled, &diag, Variant::cuda_core, quad), 1e-5)
      << "2D fp32 " << what;
  EXPECT_LT(diag, 1e-5) << "2D fp32 " << what;
  EXPECT_LT(mapped_device_vs_cpu<3>(disc, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, quad), 1e-12)
      << "3D " << what;
  EXPECT_LT(diag, 1e-12) << "3D " << what;
  EXPECT_LT(mapped_device_vs_cpu<3>(disc, k, P::fp32, rd(), true, &diag, Variant::cuda_core, quad), 1e-5)
      << "3D fp32 " << what;
  EXPECT_LT(diag, 1e-5) << "3D fp32 " << what;
}

TEST(CudaOperator, CudaCoreStoredGeometryMatchesCpu) {
  // the cuda-core kernels with stored geometry (partial assembly): every degree, BP3 and BP5,
  // 2D and 3D, fp64 and fp32, the compiled and the host-evaluated map and coefficient; operator
  // and diagonal against the CPU operator
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  for (int k = 1; k <= 8; ++k)
    for (auto quad : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
      const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(quad);
      const bool compiled = k % 2 == 0;
      double diag = 0.0;
      check_cuda_core_stored(fe::Disc::cg, k, quad, compiled, rd, what);
      // Neumann faces (free nodes on two faces)
      EXPECT_LT(
          mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, quad, true),
          1e-12)
          << "2D Neumann " << what;
      EXPECT_LT(diag, 1e-12) << "2D Neumann " << what;
      EXPECT_LT(
          mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), !compiled, &diag, Variant::cuda_core, quad, true),
          1e-12)
          << "3D Neumann " << what;
      EXPECT_LT(diag, 1e-12) << "3D Neumann " << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp32, rd(), true, &diag, Variant::cuda_core, quad, true),
                1e-5)
          << "3D fp32 Neumann " << what;
      EXPECT_LT(diag, 1e-5) << "3D fp32 Neumann " << what;
      // the 3D program with the stored data's L2 prefetch on and off (whatever the default), one
      // cell per block and the layout's count, registers capped for three and four blocks per SM
      const auto pa = operators::GeometryForm::pa;
      for (int prefetch : {-1, 1})
        for (int cells : {1, 64}) {
          operators::DeviceTuning t;
          t.geometry_prefetch = prefetch;
          t.geometry_cells_per_block = cells;
          t.geometry_min_blocks_per_sm = prefetch > 0 ? 4 : 3;
          const std::string tag = " prefetch=" + std::to_string(prefetch) + " cells=" + std::to_string(cells) +
                                  " min_blocks=" + std::to_string(t.geometry_min_blocks_per_sm);
          EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::cuda_core, quad,
                                            false, pa, false, false, t),
                    1e-12)
              << "3D" << tag << " " << what;
          EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp32, rd(), !compiled, nullptr, Variant::cuda_core, quad,
                                            true, pa, false, false, t),
                    1e-5)
              << "3D fp32 Neumann" << tag << " " << what;
        }
      // fp64 with the stored geometry rounded to fp32 (GeometryStorage::fp32): the operator within
      // the rounding of its stored data; the diagonal from the fp64 data, formed for the call
      const auto s32 = operators::GeometryStorage::fp32;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, quad, true,
                                        pa, false, false, {}, s32),
                1e-6)
          << "2D fp32-stored Neumann " << what;
      EXPECT_LT(diag, 1e-12) << "2D fp32-stored Neumann " << what;
      operators::DeviceTuning one_cell;
      one_cell.geometry_cells_per_block = 1;
      one_cell.geometry_prefetch = 1;
      one_cell.geometry_min_blocks_per_sm = 4;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), !compiled, &diag, Variant::cuda_core, quad,
                                        true, pa, false, k % 2 == 1, one_cell, s32),
                1e-6)
          << "3D fp32-stored Neumann cells=1 prefetch min_blocks=4 " << what;
      EXPECT_LT(diag, 1e-12) << "3D fp32-stored Neumann " << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::cuda_core, quad,
                                        false, pa, false, false, {}, s32),
                1e-6)
          << "3D fp32-stored " << what;
      // an fp32 operator with fp32 storage asked for: the same fp32 operator
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp32, rd(), compiled, nullptr, Variant::cuda_core, quad,
                                        false, pa, false, false, {}, s32),
                1e-5)
          << "3D fp32 operator, fp32 storage " << what;
    }
}

TEST(CudaOperator, Fp32StoredGeometryKeys) {
  // fp64 keys with fp32 stored geometry: the cuda-core and tensor-core cg kernels with stored data
  // have them; dg, the matrix-free form, the Cartesian and 1D-table paths and the generic family
  // refuse them
  operators::DeviceKernelKey key;
  key.dim = 3;
  key.degree = 4;
  key.cartesian = false;
  key.general_field = true;
  key.quadrature = fe::QuadratureKind::gll_k1;
  key.precision = precision::Precision::fp64;
  key.variant = operators::Variant::cuda_core;
  key.geometry_storage = operators::GeometryStorage::fp32;
  EXPECT_TRUE(operators::device_kernel_supported(key));
  EXPECT_NE(key.to_string().find("stored-fp32"), std::string::npos) << key.to_string();
  EXPECT_EQ(operators::resolve_geometry_form(
                [&] {
                  auto a = key;
                  a.geometry_form = operators::GeometryForm::automatic;
                  return a;
                }(),
                mesh::GeometryKind::cartesian),
            operators::GeometryForm::pa);
  auto refused = [&](auto&& change) {
    auto k2 = key;
    change(k2);
    EXPECT_FALSE(operators::device_kernel_supported(k2)) << k2.to_string();
  };
  refused([](auto& k2) { k2.disc = fe::Disc::dg; });
  refused([](auto& k2) { k2.geometry_form = operators::GeometryForm::mf; });
  refused([](auto& k2) { k2.general_field = false; });
  refused([](auto& k2) { k2.variant = operators::Variant::generic; });
  refused([](auto& k2) {
    k2.variant = operators::Variant::tensor_core;
    k2.disc = fe::Disc::dg;
  });
  auto tc = key;
  tc.variant = operators::Variant::tensor_core;
  EXPECT_TRUE(operators::device_kernel_supported(tc)) << tc.to_string();
  tc.dim = 2;
  EXPECT_TRUE(operators::device_kernel_supported(tc)) << tc.to_string();
  // fp32 keys store fp32 anyway: the request changes nothing
  auto f = key;
  f.precision = precision::Precision::fp32;
  EXPECT_TRUE(operators::device_kernel_supported(f));
  EXPECT_EQ(f.to_string().find("stored-fp32"), std::string::npos) << f.to_string();
}

TEST(CudaOperator, CudaCoreDgStoredGeometryMatchesCpu) {
  // the cuda-core dg (SIPG) kernels with stored cell and face data: every degree, BP3 and BP5, 2D
  // and 3D, fp64 and fp32, the compiled and the host-evaluated map and coefficient, Nitsche and
  // Neumann faces; operator and diagonal against the CPU operator, and the choices it reports
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  const auto pa = operators::GeometryForm::pa;
  for (int k = 1; k <= 8; ++k)
    for (auto quad : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
      const std::string what = "dg k=" + std::to_string(k) + " " + fe::to_string(quad);
      const bool compiled = k % 2 == 0;
      check_cuda_core_stored(fe::Disc::dg, k, quad, compiled, rd, what);
      // one cell per block and the L2 prefetch of the cells' stored data forced on
      operators::DeviceTuning t;
      t.geometry_prefetch = 1;
      t.geometry_cells_per_block = 1;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::dg, k, P::fp64, rd(), !compiled, nullptr, Variant::cuda_core, quad,
                                        false, pa, false, false, t),
                1e-12)
          << "3D cells=1 prefetch " << what;
    }
}

TEST(CudaOperator, TensorCoreStoredGeometryMatchesCpu) {
  // the tensor-core kernels with stored geometry (2D and 3D cg fp64, partial assembly): every
  // degree, BP3 (DmmaCell2/3) and BP5 (collocated), the compiled and the host-evaluated map and
  // coefficient, Neumann faces, the apply split around interior cells; operator and diagonal
  // against the CPU
  SKIP_WITHOUT_DEVICE();
  if (query_device(0).sm_major != 9) GTEST_SKIP() << "the general-geometry tensor-core kernels need sm_90";
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  const auto pa = operators::GeometryForm::pa;
  for (int k = 1; k <= 8; ++k)
    for (auto quad : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
      const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(quad);
      const bool compiled = k % 2 == 0;
      double diag = 0.0;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::tensor_core, quad),
                1e-12)
          << what;
      EXPECT_LT(diag, 1e-12) << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::tensor_core, quad,
                                        true),
                1e-12)
          << "Neumann " << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::tensor_core, quad,
                                        k % 2 == 1, pa, false, true),
                1e-12)
          << "split " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), !compiled, &diag, Variant::tensor_core, quad),
                1e-12)
          << "2D " << what;
      EXPECT_LT(diag, 1e-12) << "2D " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::tensor_core, quad,
                                        true),
                1e-12)
          << "2D Neumann " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::tensor_core, quad,
                                        k % 2 == 0, pa, false, true),
                1e-12)
          << "2D split " << what;
      // the stored data rounded to fp32 (every operation in fp64): within the rounding of the data;
      // the diagonal from the fp64 data
      const auto s32 = operators::GeometryStorage::fp32;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::tensor_core, quad,
                                        k % 2 == 0, pa, false, k % 2 == 1, {}, s32),
                1e-6)
          << "fp32 storage " << what;
      EXPECT_LT(diag, 1e-12) << "fp32 storage " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), !compiled, &diag, Variant::tensor_core, quad,
                                        k % 2 == 1, pa, false, k % 2 == 0, {}, s32),
                1e-6)
          << "2D fp32 storage " << what;
      EXPECT_LT(diag, 1e-12) << "2D fp32 storage " << what;
    }
}

TEST(CudaOperator, CudaCoreBoxWithNeumannPartsFromTables) {
  // a cg Cartesian box with Neumann parts and a constant coefficient: the cuda-core kernels read
  // the box's 1D tables (pa and auto; fp32 storage asked for: nothing stored), the matrix-free form
  // its vertices, the tensor cores their stored data; every degree, BP3 and BP5, 2D and 3D, fp64
  // and fp32, the split apply; operator, diagonal and cell metric against the CPU
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  const auto pa = operators::GeometryForm::pa, automatic = operators::GeometryForm::automatic;
  const auto s64 = operators::GeometryStorage::fp64, s32 = operators::GeometryStorage::fp32;
  const bool sm90 = query_device(0).sm_major == 9;
  for (int k = 1; k <= 8; ++k)
    for (auto quad : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
      const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(quad);
      double diag = 0.0;
      for (auto p : {P::fp64, P::fp32}) {
        const double tol = p == P::fp64 ? 1e-12 : 1e-5;
        const std::string w = what + (p == P::fp64 ? " fp64" : " fp32");
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, p, rd(), false, &diag, Variant::cuda_core, quad, true, pa,
                                          false, k % 2 == 0, {}, s64, false, true),
                  tol)
            << "3D " << w;
        EXPECT_LT(diag, tol) << "3D diagonal " << w;
        EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, p, rd(), false, &diag, Variant::cuda_core, quad, true,
                                          automatic, false, k % 2 == 1, {}, s64, false, true),
                  tol)
            << "2D auto " << w;
        EXPECT_LT(diag, tol) << "2D diagonal " << w;
      }
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), false, nullptr, Variant::cuda_core, quad, true,
                                        automatic, false, false, {}, s32, false, true),
                1e-12)
          << "3D auto, fp32 storage asked " << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), false, nullptr, Variant::cuda_core, quad,
                                        true, operators::GeometryForm::mf, false, false, {}, s64, false, true),
                1e-12)
          << "3D mf " << what;
      if (sm90) {
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), false, nullptr, Variant::tensor_core, quad,
                                          true, pa, false, false, {}, s64, false, true),
                  1e-12)
            << "3D tensor-core " << what;
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), false, nullptr, Variant::tensor_core, quad,
                                          true, operators::GeometryForm::mf, false, false, {}, s64, false, true),
                  1e-12)
            << "3D tensor-core mf " << what;
      }
    }
}

TEST(CudaOperator, TensorCoreNodeGeometryMatchesCpu) {
  // the tensor-core kernels with the geometry from the node field (2D and 3D cg fp64, matrix-free):
  // every degree, BP3 and BP5, curved cells (the Q_k displacement), multilinear cells (the
  // vertices), 3D cells of geometry order 2 (the Q2 lattice), the compiled and the host-evaluated
  // map and coefficient, Neumann faces, the apply split around interior cells, other cells per
  // block; operator and diagonal against the CPU (NaN-poisoned outputs)
  SKIP_WITHOUT_DEVICE();
  if (query_device(0).sm_major != 9) GTEST_SKIP() << "the general-geometry tensor-core kernels need sm_90";
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  const auto mf = operators::GeometryForm::mf;
  const auto s64 = operators::GeometryStorage::fp64;
  for (int k = 1; k <= 8; ++k)
    for (auto quad : {fe::QuadratureKind::gauss_k2, fe::QuadratureKind::gll_k1}) {
      const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(quad);
      const bool compiled = k % 2 == 0;
      operators::DeviceTuning three;
      three.geometry_cells_per_block = 3;
      double diag = 0.0;
      // 3D BP3 at k = 8 with a displacement: one cell does not fit into a block
      const bool fits3 = !(k == 8 && quad == fe::QuadratureKind::gauss_k2);
      if (fits3) {
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::tensor_core, quad,
                                          false, mf),
                  1e-12)
            << what;
        EXPECT_LT(diag, 1e-12) << what;
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::tensor_core,
                                          quad, true, mf, false, k % 2 == 1),
                  1e-12)
            << "Neumann " << what;
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::tensor_core, quad,
                                          true, mf, false, k % 2 == 0, {}, s64, true),
                  1e-12)
            << "quadratic " << what;
        EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::tensor_core,
                                          quad, false, mf, false, false, three),
                  1e-12)
            << "three cells per block " << what;
      } else {
        EXPECT_THROW(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::tensor_core,
                                             quad, false, mf),
                     InputError)
            << what;
      }
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::tensor_core, quad,
                                        true, mf, true, k % 2 == 0),
                1e-12)
          << "affine " << what;
      EXPECT_LT(diag, 1e-12) << "affine " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), !compiled, &diag, Variant::tensor_core, quad,
                                        false, mf),
                1e-12)
          << "2D " << what;
      EXPECT_LT(diag, 1e-12) << "2D " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::tensor_core, quad,
                                        true, mf, false, k % 2 == 1, three),
                1e-12)
          << "2D Neumann " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::tensor_core, quad,
                                        false, mf, true, k % 2 == 0),
                1e-12)
          << "2D affine " << what;
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::tensor_core, quad,
                                        true, mf, false, k % 2 == 1, {}, s64, true),
                1e-12)
          << "2D quadratic " << what;
    }
}

TEST(CudaOperator, CudaCoreGeometrySplitMatchesCpu) {
  // the general-geometry programs' apply split around interior cells (the interior, then up to
  // 2 dim launches around it; NaN-poisoned output): stored geometry in 2D and 3D, BP3 and BP5,
  // the geometry from the nodes (3D BP5, curved and trilinear; 3D BP3), fp64 and fp32, Neumann faces
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  const auto bp3 = fe::QuadratureKind::gauss_k2, bp5 = fe::QuadratureKind::gll_k1;
  const auto pa = operators::GeometryForm::pa, mf = operators::GeometryForm::mf;
  for (int k = 1; k <= 8; ++k) {
    const std::string what = "k=" + std::to_string(k);
    const bool compiled = k % 2 == 0;
    for (auto quad : {bp3, bp5}) {
      EXPECT_LT(mapped_device_vs_cpu<2>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::cuda_core, quad,
                                        false, pa, false, true),
                1e-12)
          << "2D " << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::cuda_core, quad,
                                        k % 2 == 1, pa, false, true),
                1e-12)
          << "3D " << what;
      EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp32, rd(), !compiled, nullptr, Variant::cuda_core, quad,
                                        false, pa, false, true),
                1e-5)
          << "3D fp32 " << what;
    }
    EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), compiled, nullptr, Variant::cuda_core, bp5, true,
                                      mf, false, true),
              1e-12)
        << "3D mf Neumann " << what;
    EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp32, rd(), !compiled, nullptr, Variant::cuda_core, bp5,
                                      false, mf, true, true),
              1e-5)
        << "3D mf trilinear fp32 " << what;
    EXPECT_LT(mapped_device_vs_cpu<3>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::cuda_core, bp3, true,
                                      mf, false, true),
              1e-12)
        << "3D mf bp3 Neumann " << what;
  }
}

/// The cuda-core programs with the geometry recomputed from the nodes (matrix-free, BP5 and BP3:
/// the points program in 2D, the lines program in 3D) at degree k and the
/// quadrature `bp5` (its name for the common case): fp64 and fp32, the compiled and the
/// host-evaluated map and coefficient, Neumann faces, an affine map (multilinear cells: the
/// vertices only), a map quadratic in each coordinate (3D: the Q2 lattice from k = 3), the split
/// apply; operator and diagonal against the CPU.
template <int dim>
void check_node_geometry(int k, std::random_device& rd,
                         const fe::QuadratureKind bp5 = fe::QuadratureKind::gll_k1) {
  using P = precision::Precision;
  using operators::Variant;
  const auto mf = operators::GeometryForm::mf;
  const auto s64 = operators::GeometryStorage::fp64;
  const std::string what = std::to_string(dim) + "D k=" + std::to_string(k) + " " + fe::to_string(bp5);
  const bool compiled = k % 2 == 0;
  double diag = 0.0;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, bp5, false, mf),
            1e-12)
      << what;
  EXPECT_LT(diag, 1e-12) << what;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp32, rd(), !compiled, &diag, Variant::cuda_core, bp5, false, mf),
            1e-5)
      << "fp32 " << what;
  EXPECT_LT(diag, 1e-5) << "fp32 " << what;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, bp5, true, mf),
            1e-12)
      << "Neumann " << what;
  EXPECT_LT(diag, 1e-12) << "Neumann " << what;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp64, rd(), !compiled, nullptr, Variant::cuda_core, bp5, false,
                                      mf, true),
            1e-12)
      << "affine " << what;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp32, rd(), compiled, nullptr, Variant::cuda_core, bp5, true,
                                      mf, true, dim == 2),
            1e-5)
      << "affine fp32 Neumann " << what;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp64, rd(), compiled, &diag, Variant::cuda_core, bp5, true,
                                      mf, false, dim == 2 || k % 3 == 0, {}, s64, true),
            1e-12)
      << "quadratic Neumann " << what;
  EXPECT_LT(diag, 1e-12) << "quadratic Neumann " << what;
  EXPECT_LT(mapped_device_vs_cpu<dim>(fe::Disc::cg, k, P::fp32, rd(), !compiled, nullptr, Variant::cuda_core, bp5, false,
                                      mf, false, false, {}, s64, true),
            1e-5)
      << "quadratic fp32 " << what;
}

/// --geometry-form auto on a Cartesian box with a coefficient (multilinear cells): the operator's
/// reported geometry for degree k and precision p.
template <int dim>
void check_auto_geometry(int k, precision::Precision p, const std::string& expected,
                         fe::QuadratureKind quadrature = fe::QuadratureKind::gll_k1) {
  mesh::Point<dim> lo, hi;
  lo.fill(0.0);
  hi.fill(1.0);
  hi[1] = 2.0;
  std::array<int, dim> nc;
  nc.fill(2);
  nc[0] = 3;
  mesh::BoxMesh<dim> box(nc, mesh::Domain<dim>::box(lo, hi));
  fe::DofLayout<dim> dofs(box, fe::Disc::cg, k);
  operators::OperatorConfig cfg;
  cfg.degree = k;
  cfg.quadrature = quadrature;
  cfg.coefficient = [](const double* x) { return 1.0 + x[0]; };
  cfg.geometry_form = operators::GeometryForm::automatic;
  operators::DeviceKernelKey key;
  key.dim = dim;
  key.degree = k;
  key.quadrature = cfg.quadrature;
  key.precision = p;
  key.variant = operators::Variant::cuda_core;
  operators::set_geometry(key, box, dofs, cfg);
  const auto D = operators::make_device_operator<dim>(box, dofs, key, {}, cfg.coefficient);
  bool found = false;
  for (const auto& [name, value] : D->choices()) found |= name == "geometry" && value == expected;
  EXPECT_TRUE(found) << dim << "D k=" << k << " " << fe::to_string(quadrature) << ": "
                     << operators::describe(D->choices());
}

TEST(CudaOperator, CudaCoreNodeGeometry2DMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  for (int k = 1; k <= 8; ++k) {
    check_node_geometry<2>(k, rd);
    check_node_geometry<2>(k, rd, fe::QuadratureKind::gauss_k2);
  }
  // auto: the vertices where measured faster (fp64 from k = 3, fp32 from k = 4), else stored data
  using P = precision::Precision;
  check_auto_geometry<2>(3, P::fp64, "bilinear vertices");
  check_auto_geometry<2>(4, P::fp32, "bilinear vertices");
  check_auto_geometry<2>(2, P::fp64, "stored");
  check_auto_geometry<2>(3, P::fp32, "stored");
  // BP3: fp64 from k = 2, fp32 from k = 4
  const auto bp3 = fe::QuadratureKind::gauss_k2;
  check_auto_geometry<2>(2, P::fp64, "bilinear vertices", bp3);
  check_auto_geometry<2>(4, P::fp32, "bilinear vertices", bp3);
  check_auto_geometry<2>(3, P::fp32, "stored", bp3);
}

TEST(CudaOperator, CudaCoreNodeGeometryMatchesCpu) {
  SKIP_WITHOUT_DEVICE();
  std::random_device rd;
  using P = precision::Precision;
  using operators::Variant;
  const auto bp5 = fe::QuadratureKind::gll_k1;
  const auto mf = operators::GeometryForm::mf;
  for (int k = 1; k <= 8; ++k) {
    check_node_geometry<3>(k, rd);
    check_node_geometry<3>(k, rd, fe::QuadratureKind::gauss_k2);
  }
  // auto: the vertices where measured faster (fp64; fp32 from k = 5), else stored data
  check_auto_geometry<3>(3, P::fp64, "trilinear vertices");
  check_auto_geometry<3>(5, P::fp32, "trilinear vertices");
  check_auto_geometry<3>(4, P::fp32, "stored");
  // BP3: fp64 from k = 4
  check_auto_geometry<3>(4, P::fp64, "trilinear vertices", fe::QuadratureKind::gauss_k2);
  check_auto_geometry<3>(3, P::fp64, "stored", fe::QuadratureKind::gauss_k2);
  check_auto_geometry<3>(6, P::fp32, "stored", fe::QuadratureKind::gauss_k2);
  // matrix-free kernels: BP5 and BP3 in 2D and 3D; none for Gauss k+1
  operators::DeviceKernelKey key;
  key.dim = 3;
  key.degree = 3;
  key.cartesian = false;
  key.general_field = true;
  key.variant = Variant::cuda_core;
  key.geometry_form = mf;
  key.quadrature = fe::QuadratureKind::gauss_k2;
  EXPECT_TRUE(operators::device_kernel_supported(key));
  key.quadrature = fe::QuadratureKind::gauss_k1;
  EXPECT_FALSE(operators::device_kernel_supported(key));
  key.dim = 2;
  EXPECT_FALSE(operators::device_kernel_supported(key));
  key.quadrature = fe::QuadratureKind::gauss_k2;
  EXPECT_TRUE(operators::device_kernel_supported(key));
  key.quadrature = bp5;
  EXPECT_TRUE(operators::device_kernel_supported(key));
  key.dim = 3;
  EXPECT_TRUE(operators::device_kernel_supported(key));
  key.variant = Variant::generic;
  EXPECT_FALSE(operators::device_kernel_supported(key));
}

TEST(CudaOperator, DeviceGeometryRefusesBadCoefficientAndInvertedMap) {
  SKIP_WITHOUT_DEVICE();
  mesh::Point<2> lo{0.0, 0.0}, hi{1.0, 1.0};
  operators::DeviceKernelKey key;
  key.dim = 2;
  key.degree = 3;
  key.cartesian = false;
  key.general_field = true;
  // a coefficient that is negative near x = 1 (compiled, and as a callable on the host), for the
  // generic and the cuda-core (stored geometry) kernels
  for (bool compiled : {true, false})
    for (auto variant : {operators::Variant::generic, operators::Variant::cuda_core}) {
      key.variant = variant;
      mesh::BoxMesh<2> mesh({4, 3}, mesh::Domain<2>::box(lo, hi));
      fe::DofLayout<2> dofs(mesh, fe::Disc::cg, 3);
      jit::DeviceSource source;
      if (compiled) source.expression = "0.9 - x[0]";
      try {
        operators::make_device_operator<2>(mesh, dofs, key, {}, [](const double* x) { return 0.9 - x[0]; }, source);
        ADD_FAILURE() << "a negative coefficient was accepted";
      } catch (const InputError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("coefficient"), std::string::npos) << m;
        EXPECT_NE(m.find("at the point ("), std::string::npos) << m;
        EXPECT_NE(m.find("positive"), std::string::npos) << m;
      }
    }
  key.variant = operators::Variant::generic;
  // a map folding the box over itself
  auto fold = [](const mesh::Point<2>& X) { return mesh::Point<2>{X[0] * (1.0 - 2.0 * X[0]), X[1]}; };
  mesh::BoxMesh<2> mesh({4, 3}, mesh::Domain<2>::box(lo, hi, fold));
  fe::DofLayout<2> dofs(mesh, fe::Disc::dg, 2);
  key.disc = fe::Disc::dg;
  key.degree = 2;
  try {
    operators::make_device_operator<2>(mesh, dofs, key);
    ADD_FAILURE() << "an inverted map was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("inverted"), std::string::npos) << e.what();
  }
}

TEST(CudaOperator, NeumannCgTakesGeneralKeys) {
  // cg with Neumann faces on a Cartesian box: a Cartesian key (whose kernels constrain every
  // boundary node) is refused; set_geometry gives the general-geometry key, which the CPU's
  // Kronecker operator matches
  SKIP_WITHOUT_DEVICE();
  mesh::BoxMesh<2> mesh({3, 4}, mesh::GeometryKind::cartesian);
  fe::DofLayout<2> dofs(mesh, fe::Disc::cg, 2, {true, false, true, true});
  operators::DeviceKernelKey key;
  key.dim = 2;
  key.degree = 2;
  EXPECT_THROW(operators::make_device_operator<2>(mesh, dofs, key), InputError);
  operators::OperatorConfig cfg;
  cfg.degree = 2;
  operators::set_geometry(key, mesh, dofs, cfg);
  EXPECT_FALSE(key.cartesian);
  EXPECT_TRUE(key.general_field);
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  operators::MatrixFreeOperator<2, double> A(mesh, dofs, cfg, Form::laplace);
  for (auto variant : {operators::Variant::generic, operators::Variant::cuda_core}) {
    key.variant = variant;
    const auto D = operators::make_device_operator<2>(mesh, dofs, key);
    const std::size_t n = dofs.n_local();
    Vector<double> xv(n), ref(n);
    for (std::size_t i = 0; i < n; ++i) xv[i] = dist(rng);
    A.vmult(ref, xv);
    DeviceBuffer<double> dx(std::vector<double>(xv.data(), xv.data() + n)),
        dy(std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()));
    D->vmult(dy.data(), dx.data());
    std::vector<double> y(n);
    dy.copy_to_host(y.data(), n);
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      diff += (y[i] - ref[i]) * (y[i] - ref[i]);
      norm += ref[i] * ref[i];
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-12) << operators::to_string(variant);
  }
}
}  // namespace
