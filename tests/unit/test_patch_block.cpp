// The block program of the device vertex-patch smoother (multigrid/patch_kernels/block.h) on the CPU: the
// launch sequence of DevicePatchSmoother::smooth (colors in order, each color's blocks one after
// the other, one host thread per block, shared memory a NaN-poisoned host array) with the same
// setup (multigrid/patch_kernels/setup.h), against VertexPatchSmoother: fused, separate, global and additive,
// forward then backward, dim 2 and 3, degrees 1..8, anisotropic Cartesian meshes, a deformed one,
// and the separable surrogates of a curved (annulus) mesh with a variable coefficient.
// This checks the index maps, the rotating layouts, the buffers and the phase order of the kernels
// without a GPU; the device tests check the same on the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "multigrid/host/multigrid.h"
#include "multigrid/patch_kernels/block.h"
#include "multigrid/patch_kernels/boundary.h"
#include "multigrid/patch_kernels/setup.h"
#include "multigrid/host/patch_smoother.h"
#include "../support/curved_domains.h"

namespace {
using namespace tcfem;
using namespace tcfem::multigrid::patch_kernels;
using multigrid::PatchVariant;
using multigrid::SweepOrder;

template <int dim, int k, typename Number, KernelKind kind, Contraction con>
void run_color(const PatchKernelParams<Number>& p, const std::vector<Number>& mats) {
  constexpr auto L = patch_layout(dim, k, sizeof(Number), kind, con);
  PatchMatrices<dim, k, Number> m;
  ASSERT_EQ(mats.size(), sizeof(m.m) / sizeof(Number));
  std::copy(mats.begin(), mats.end(), m.m);
  std::vector<Number> smem(shared_elements_of(L, con));
  const int bx = (p.count[0] + L.patches - 1) / L.patches, bz = dim == 3 ? p.count[2] : 1;
  for (int z = 0; z < bz; ++z)
    for (int y = 0; y < p.count[1]; ++y)
      for (int x = 0; x < bx; ++x) {
        std::fill(smem.begin(), smem.end(), std::numeric_limits<Number>::quiet_NaN());
        patch_block<dim, k, Number, kind, con>(ThreadGroup{0, 1}, x, y, z, p, m, smem.data());
      }
}

template <int dim, int k, typename Number, Contraction con>
void run_kind(KernelKind kind, const PatchKernelParams<Number>& p, const std::vector<Number>& mats) {
  if (p.n_patches == 0) return;
  switch (kind) {
    case KernelKind::fused: return run_color<dim, k, Number, KernelKind::fused, con>(p, mats);
    case KernelKind::residual: return run_color<dim, k, Number, KernelKind::residual, con>(p, mats);
    case KernelKind::solve_from_buffer: return run_color<dim, k, Number, KernelKind::solve_from_buffer, con>(p, mats);
    case KernelKind::solve_from_vector: return run_color<dim, k, Number, KernelKind::solve_from_vector, con>(p, mats);
  }
}

// fused: x_I += A_II^{-1} r_I; fused_replace: x_I = A_II^{-1} (b_I - A_IB x_B)
// (PatchKernelParams::replace_inner, the device default with relaxation 1)
// surrogate*: the quarter annulus with a variable coefficient, the separable surrogates of the cell
// metric (patch weights): surrogate (fused, x_I replaced) and surrogate_separate take the surrogate
// residuals (one level residual per step, the colors' sweep on the correction), surrogate_global
// the level residual per color, surrogate_additive the additive smoother
enum class Case {
  fused,
  fused_replace,
  separate,
  global,
  additive,
  surrogate,
  surrogate_separate,
  surrogate_global,
  surrogate_additive
};

/// The patches of the vertices on Neumann faces of one color (patch_kernels/boundary.h), one host
/// thread per patch, shared memory NaN-poisoned.
template <int dim, typename Number>
void run_boundary(const BoundaryPatchParams<Number>& p) {
  std::vector<Number> smem(boundary_patch_shared_values(dim, p.ni, p.r == nullptr));
  for (long long j = 0; j < p.n_patches; ++j) {
    std::fill(smem.begin(), smem.end(), std::numeric_limits<Number>::quiet_NaN());
    boundary_patch_block<dim, Number>(ThreadGroup{0, 1}, j, p, smem.data());
  }
}

template <int dim, int k, typename Number = double, Contraction con = Contraction::dense>
double emulation_error(const std::array<int, dim>& nc, mesh::GeometryKind g, Case c, unsigned seed,
                       const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>()) {
  const bool surrogate = c == Case::surrogate || c == Case::surrogate_separate || c == Case::surrogate_global ||
                         c == Case::surrogate_additive;
  mesh::BoxMesh<dim> mesh =
      surrogate ? mesh::BoxMesh<dim>(nc, test_domains::quarter_annulus<dim>()) : mesh::BoxMesh<dim>(nc, g);
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k, dirichlet);
  operators::OperatorConfig config;
  config.disc = fe::Disc::cg;
  config.degree = k;
  if (surrogate) config.coefficient = test_domains::annulus_coefficient;
  multigrid::MatrixFreeLevelOperator<dim, Number> op(mesh, dofs, config);
  const auto quadrature = op.matrix_free().path() == operators::Path::cartesian
                              ? fe::gauss(k + 1)
                              : fe::make_quadrature(config.quadrature, k);
  const bool additive = c == Case::additive || c == Case::surrogate_additive;
  const double omega = additive ? multigrid::additive_default_relaxation(dim) : 1.0;
  PatchVariant variant = c == Case::separate || c == Case::surrogate_separate ? PatchVariant::separate
                         : c == Case::global || c == Case::surrogate_global ? PatchVariant::global
                                                                            : PatchVariant::fused;
  const auto metric = surrogate ? op.matrix_free().cell_metric() : std::vector<double>{};
  multigrid::VertexPatchSmoother<dim, Number> ref(mesh, dofs, quadrature, additive, variant, omega, op, metric);
  EXPECT_EQ(ref.surrogate(), surrogate);
  if (surrogate ? !dofs.all_faces_dirichlet() : mesh.geometry() != mesh::GeometryKind::cartesian)
    variant = PatchVariant::global;
  EXPECT_EQ(ref.variant(), additive ? ref.variant() : variant);
  const bool surrogate_residuals = surrogate && !additive && variant != PatchVariant::global;
  EXPECT_EQ(ref.surrogate_residuals(), surrogate_residuals);

  const std::size_t n = dofs.n_local();
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<Number> x(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<Number>(dist(gen));
    b[i] = static_cast<Number>(dist(gen));
  }
  Vector<Number> y = x;

  std::vector<Number> inverse_diagonal, eigenvalues;
  auto mats = patch_kernel_matrices<dim, Number>(mesh, k, quadrature, inverse_diagonal,
                                                 surrogate ? &eigenvalues : nullptr);
  if constexpr (con == Contraction::even_odd)
    mats = patch_even_odd_matrices<dim, Number>(k, mats, inverse_diagonal, surrogate ? &eigenvalues : nullptr);
  auto colors = patch_kernel_colors<dim, Number>(mesh, dofs);
  std::vector<std::vector<Number>> weights(colors.size());
  if (surrogate)
    for (std::size_t col = 0; col < colors.size(); ++col) {
      weights[col] = patch_kernel_weights<dim, Number>(mesh, colors[col], metric);
      colors[col].patch_weights = weights[col].data();
      colors[col].eigenvalues = eigenvalues.data();
    }
  std::size_t n_patches = 0, largest = 0;
  for (const auto& p : colors) {
    n_patches += p.n_patches;
    largest = std::max<std::size_t>(largest, p.n_patches);
  }
  // the patches of the vertices on Neumann faces, as DevicePatchSmoother sets them up
  const auto bdata = boundary_patch_data<dim, Number>(mesh, dofs, quadrature, metric);
  std::vector<BoundaryPatchParams<Number>> boundary(colors.size());
  for (std::size_t col = 0; col < colors.size(); ++col) {
    auto& p = boundary[col];
    p = boundary_patch_params<dim, Number>(mesh, dofs, bdata, int(col), omega);
    p.vertices = bdata.vertices[col].data();
    p.vectors = bdata.vectors.data();
    p.inverse_diagonal = bdata.inverse_diagonal.data();
    p.eigenvalues = bdata.eigenvalues.data();
    p.weights = surrogate && p.n_patches > 0 ? bdata.weights[col].data() : nullptr;
    p.residual_matrices = bdata.residual_matrices.data();
  }
  EXPECT_EQ(bdata.residual_matrices.empty(), surrogate || bdata.n_patches() == 0);
  EXPECT_EQ(dofs.all_faces_dirichlet(), bdata.n_patches() == 0);
  EXPECT_EQ(n_patches + bdata.n_patches(), ref.n_patches());
  for (int col = 0; col < (1 << dim); ++col)
    EXPECT_EQ(std::size_t(colors[col].n_patches + boundary[col].n_patches), ref.colors()[col].size());
  Vector<Number> residual(n);
  std::vector<Number> buffer(largest * ipow(2 * k - 1, dim), std::numeric_limits<Number>::quiet_NaN());
  auto global_residual = [&](const Vector<Number>& u) {
    op.vmult(residual, u);
    for (std::size_t i = 0; i < n; ++i) residual[i] = b[i] - residual[i];
  };
  const auto& mask = dofs.boundary_mask();
  for (const auto order : {SweepOrder::forward, SweepOrder::backward}) {
    ref.smooth(x, b, order);
    // the launch sequence of DevicePatchSmoother::smooth
    const int n_colors = 1 << dim;
    if (additive) {
      global_residual(y);
      for (int col = 0; col < n_colors; ++col) {
        auto p = colors[col];
        p.inverse_diagonal = inverse_diagonal.data();
        p.omega = static_cast<Number>(omega);
        p.x = y.data();
        p.r_in = residual.data();
        run_kind<dim, k, Number, con>(KernelKind::solve_from_vector, p, mats);
        auto q = boundary[col];
        q.x = y.data();
        q.r = residual.data();
        run_boundary<dim, Number>(q);
      }
    } else if (surrogate_residuals) {
      // the level residual, the sweep on the correction from 0, y += correction
      global_residual(y);
      Vector<Number> correction(n);
      correction.fill(Number(0));
      for (int i = 0; i < n_colors; ++i) {
        auto p = colors[order == SweepOrder::forward ? i : n_colors - 1 - i];
        p.inverse_diagonal = inverse_diagonal.data();
        p.omega = static_cast<Number>(omega);
        p.x = correction.data();
        p.b = residual.data();
        p.replace_inner = variant == PatchVariant::fused;
        if (i == 0) {  // the correction is 0: the first color solves with the residual itself
          p.r_in = residual.data();
          run_kind<dim, k, Number, con>(KernelKind::solve_from_vector, p, mats);
        } else if (variant == PatchVariant::fused) {
          run_kind<dim, k, Number, con>(KernelKind::fused, p, mats);
        } else {
          p.r_out = buffer.data();
          run_kind<dim, k, Number, con>(KernelKind::residual, p, mats);
          p.r_in = buffer.data();
          run_kind<dim, k, Number, con>(KernelKind::solve_from_buffer, p, mats);
        }
      }
      y.add(Number(1), correction);
    } else {
      for (int i = 0; i < n_colors; ++i) {
        const int col = order == SweepOrder::forward ? i : n_colors - 1 - i;
        auto p = colors[col];
        p.inverse_diagonal = inverse_diagonal.data();
        p.omega = static_cast<Number>(omega);
        p.x = y.data();
        p.b = b.data();
        p.replace_inner = c == Case::fused_replace && variant == PatchVariant::fused;
        auto q = boundary[col];  // the localized residuals of the boundary patches
        q.x = y.data();
        q.b = b.data();
        if (variant == PatchVariant::fused) {
          run_kind<dim, k, Number, con>(KernelKind::fused, p, mats);
          run_boundary<dim, Number>(q);
        } else if (variant == PatchVariant::separate) {
          p.r_out = buffer.data();
          run_kind<dim, k, Number, con>(KernelKind::residual, p, mats);
          p.r_in = buffer.data();
          run_kind<dim, k, Number, con>(KernelKind::solve_from_buffer, p, mats);
          run_boundary<dim, Number>(q);
        } else {
          global_residual(y);
          p.r_in = residual.data();
          run_kind<dim, k, Number, con>(KernelKind::solve_from_vector, p, mats);
          auto q = boundary[col];
          q.x = y.data();
          q.r = residual.data();
          run_boundary<dim, Number>(q);
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (mask[i]) y[i] = b[i];
  }
  double d = 0.0, s = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(y[i])) return std::numeric_limits<double>::infinity();
    d += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    s += double(x[i]) * x[i];
  }
  return std::sqrt(d / s);
}

template <int k, Contraction con>
void check_contraction() {
  const int n3 = k <= 2 ? 5 : 3, n2 = 7 - k / 2;
  unsigned seed = 100 * k + 50 * static_cast<unsigned>(con);
  for (Case c : {Case::fused, Case::fused_replace, Case::separate, Case::global, Case::additive}) {
    const std::string what = "k=" + std::to_string(k) + " case " + std::to_string(static_cast<int>(c));
    EXPECT_LT((emulation_error<2, k, double, con>({n2 + 1, n2}, mesh::GeometryKind::cartesian, c, ++seed)), 1e-12) << "2D " << what;
    EXPECT_LT((emulation_error<3, k, double, con>({n3 + 1, n3, n3 + 2}, mesh::GeometryKind::cartesian, c, ++seed)), 1e-12)
        << "3D " << what;
  }
  // several blocks per color (multi-patch blocks: 2D always, 3D for low degrees), colors without patches
  EXPECT_LT((emulation_error<2, k, double, con>({33, 2}, mesh::GeometryKind::cartesian, Case::fused, ++seed)), 1e-12) << k;
  EXPECT_LT((emulation_error<2, k, double, con>({33, 2}, mesh::GeometryKind::cartesian, Case::fused_replace, ++seed)), 1e-12) << k;
  if (k <= 2) {
    EXPECT_LT((emulation_error<3, k, double, con>({9, 6, 2}, mesh::GeometryKind::cartesian, Case::fused, ++seed)), 1e-12) << k;
  }
  // blocks away from the Dirichlet boundary (the gather without the boundary test)
  if (k == 3) {
    for (Case c : {Case::fused, Case::fused_replace})
      EXPECT_LT((emulation_error<3, k, double, con>({13, 5, 6}, mesh::GeometryKind::cartesian, c, ++seed)), 1e-12) << k;
  }
  // deformed: global residual of the level operator, Cartesian patch inverse
  EXPECT_LT((emulation_error<2, k, double, con>({4, 5}, mesh::GeometryKind::deformed, Case::fused, ++seed)), 1e-12) << k;
  // the separable surrogates on a curved mesh with a variable coefficient: the surrogate residuals
  // (fused, separate) and the level residual per color
  for (Case c : {Case::surrogate, Case::surrogate_separate, Case::surrogate_global}) {
    const std::string what = "k=" + std::to_string(k) + " case " + std::to_string(static_cast<int>(c));
    EXPECT_LT((emulation_error<2, k, double, con>({5, 4}, mesh::GeometryKind::mapped, c, ++seed)), 1e-12) << what;
    if (k <= 4) {
      EXPECT_LT((emulation_error<3, k, double, con>({3, 4, 3}, mesh::GeometryKind::mapped, c, ++seed)), 1e-12)
          << what;
    }
  }
  EXPECT_LT((emulation_error<2, k, double, con>({4, 5}, mesh::GeometryKind::mapped, Case::surrogate_additive, ++seed)),
            1e-12)
      << k;
}

template <int k>
void check_degree() {
  check_contraction<k, Contraction::dense>();
  check_contraction<k, Contraction::even_odd>();
  check_contraction<k, Contraction::tensor_core>();  // warp mma emulation (m16n8k4 FP64)
}

/// Neumann faces: the interior patches' kernels and the boundary patches' program in the launch
/// sequence of DevicePatchSmoother::smooth against VertexPatchSmoother (Cartesian cells with the
/// exact patch inverses and localized residuals (fused, separate) or the level operator's
/// (global, additive); the surrogates on the annulus).
template <int k>
void check_neumann() {
  unsigned seed = 900 + 10 * k;
  const fe::DirichletFaces<2> mixed2{false, true, true, false}, neumann2{false, false, false, false};
  const fe::DirichletFaces<3> mixed3{true, false, false, true, false, true};
  for (Case c : {Case::fused, Case::fused_replace, Case::separate, Case::global, Case::additive, Case::surrogate,
                 Case::surrogate_additive}) {
    const std::string what = "k=" + std::to_string(k) + " case " + std::to_string(static_cast<int>(c));
    EXPECT_LT((emulation_error<2, k>({5, 4}, mesh::GeometryKind::cartesian, c, ++seed, mixed2)), 1e-12) << "2D " << what;
    EXPECT_LT((emulation_error<2, k>({4, 3}, mesh::GeometryKind::cartesian, c, ++seed, neumann2)), 1e-12)
        << "2D all Neumann " << what;
    if (k <= 4) {
      EXPECT_LT((emulation_error<3, k>({3, 4, 3}, mesh::GeometryKind::cartesian, c, ++seed, mixed3)), 1e-12)
          << "3D " << what;
    }
  }
  // the kernels' other contractions and fp32 (against the CPU smoother in fp32)
  for (Case c : {Case::global, Case::fused_replace}) {
    EXPECT_LT((emulation_error<2, k, double, Contraction::even_odd>({5, 4}, mesh::GeometryKind::cartesian, c, ++seed,
                                                                    mixed2)),
              1e-12)
        << k;
    EXPECT_LT((emulation_error<2, k, double, Contraction::tensor_core>({5, 4}, mesh::GeometryKind::cartesian, c,
                                                                       ++seed, mixed2)),
              1e-12)
        << k;
  }
  if (k <= 3) {
    EXPECT_LT((emulation_error<3, k, double, Contraction::even_odd>({5, 4, 3}, mesh::GeometryKind::cartesian,
                                                                    Case::fused_replace, ++seed, mixed3)),
              1e-12)
        << k;
  }
  EXPECT_LT((emulation_error<3, k <= 4 ? k : 4, float>({3, 4, 3}, mesh::GeometryKind::cartesian, Case::fused_replace,
                                                       ++seed, mixed3)),
            1e-4)
      << k;
  EXPECT_LT((emulation_error<2, k, float>({5, 4}, mesh::GeometryKind::cartesian, Case::surrogate, ++seed, mixed2)),
            1e-5)
      << k;
}
TEST(PatchBlockEmulation, NeumannFaces) {
  check_neumann<1>();
  check_neumann<2>();
  check_neumann<3>();
  check_neumann<4>();
  check_neumann<5>();
  check_neumann<8>();
}

TEST(PatchBlockEmulation, Degree1) { check_degree<1>(); }
TEST(PatchBlockEmulation, Degree2) { check_degree<2>(); }
TEST(PatchBlockEmulation, Degree3) { check_degree<3>(); }
TEST(PatchBlockEmulation, Degree4) { check_degree<4>(); }
TEST(PatchBlockEmulation, Degree5) { check_degree<5>(); }
TEST(PatchBlockEmulation, Degree6) { check_degree<6>(); }
TEST(PatchBlockEmulation, Degree7) { check_degree<7>(); }
TEST(PatchBlockEmulation, Degree8) { check_degree<8>(); }

// float: the layouts of 4-byte values (32-lane groups, other patches per block); the tolerance
// only separates rounding (float, different operation order than the CPU smoother) from index errors
TEST(PatchBlockEmulation, Float) {
  EXPECT_LT((emulation_error<3, 1, float>({7, 6, 5}, mesh::GeometryKind::cartesian, Case::fused, 11)), 1e-4);
  EXPECT_LT((emulation_error<3, 3, float>({4, 3, 5}, mesh::GeometryKind::cartesian, Case::separate, 12)), 1e-4);
  EXPECT_LT((emulation_error<3, 5, float>({3, 4, 3}, mesh::GeometryKind::cartesian, Case::fused, 13)), 1e-4);
  EXPECT_LT((emulation_error<3, 3, float>({13, 5, 6}, mesh::GeometryKind::cartesian, Case::fused_replace, 17)), 1e-4);
  EXPECT_LT((emulation_error<3, 8, float>({3, 3, 4}, mesh::GeometryKind::cartesian, Case::additive, 14)), 1e-4);
  EXPECT_LT((emulation_error<2, 2, float>({21, 6}, mesh::GeometryKind::cartesian, Case::fused, 15)), 1e-4);
  EXPECT_LT((emulation_error<2, 7, float>({5, 6}, mesh::GeometryKind::cartesian, Case::global, 16)), 1e-4);
  EXPECT_LT((emulation_error<3, 4, float>({3, 4, 3}, mesh::GeometryKind::mapped, Case::surrogate, 18)), 1e-4);
  EXPECT_LT((emulation_error<3, 4, float, Contraction::even_odd>({3, 4, 3}, mesh::GeometryKind::mapped,
                                                                  Case::surrogate, 19)),
            1e-4);
}

TEST(PatchBlockEmulation, Deformed3D) {
  EXPECT_LT((emulation_error<3, 2>({3, 4, 3}, mesh::GeometryKind::deformed, Case::fused, 7)), 1e-12);
  EXPECT_LT((emulation_error<3, 3>({3, 3, 4}, mesh::GeometryKind::deformed, Case::additive, 8)), 1e-12);
}

// the even-odd contraction in float and on deformed meshes
TEST(PatchBlockEmulation, EvenOddFloatAndDeformed) {
  constexpr auto eo = Contraction::even_odd;
  EXPECT_LT((emulation_error<3, 1, float, eo>({7, 6, 5}, mesh::GeometryKind::cartesian, Case::fused, 21)), 1e-4);
  EXPECT_LT((emulation_error<3, 4, float, eo>({4, 3, 5}, mesh::GeometryKind::cartesian, Case::separate, 22)), 1e-4);
  EXPECT_LT((emulation_error<3, 7, float, eo>({3, 4, 3}, mesh::GeometryKind::cartesian, Case::fused, 23)), 1e-4);
  EXPECT_LT((emulation_error<3, 2, float, eo>({17, 6, 5}, mesh::GeometryKind::cartesian, Case::fused_replace, 26)), 1e-4);
  EXPECT_LT((emulation_error<2, 6, float, eo>({5, 6}, mesh::GeometryKind::cartesian, Case::additive, 24)), 1e-4);
  EXPECT_LT((emulation_error<3, 3, double, eo>({3, 3, 4}, mesh::GeometryKind::deformed, Case::fused, 25)), 1e-12);
}

// the tensor-core contraction in float (TF32 m16n8k8, three-product split: FP32 accuracy) and on
// deformed meshes
TEST(PatchBlockEmulation, TensorCoreFloatAndDeformed) {
  constexpr auto tc = Contraction::tensor_core;
  EXPECT_LT((emulation_error<3, 1, float, tc>({7, 6, 5}, mesh::GeometryKind::cartesian, Case::fused, 31)), 1e-4);
  EXPECT_LT((emulation_error<3, 4, float, tc>({4, 3, 5}, mesh::GeometryKind::cartesian, Case::separate, 32)), 1e-4);
  EXPECT_LT((emulation_error<3, 7, float, tc>({3, 4, 3}, mesh::GeometryKind::cartesian, Case::fused, 33)), 1e-4);
  EXPECT_LT((emulation_error<3, 8, float, tc>({3, 3, 4}, mesh::GeometryKind::cartesian, Case::additive, 34)), 1e-4);
  EXPECT_LT((emulation_error<2, 6, float, tc>({5, 6}, mesh::GeometryKind::cartesian, Case::additive, 35)), 1e-4);
  EXPECT_LT((emulation_error<2, 3, float, tc>({21, 6}, mesh::GeometryKind::cartesian, Case::global, 36)), 1e-4);
  EXPECT_LT((emulation_error<3, 3, double, tc>({3, 3, 4}, mesh::GeometryKind::deformed, Case::fused, 37)), 1e-12);
}

// The gather of interleaved layouts (copy_patch_boxes): the threads of a device block run rank by
// rank on the host give the same shared arrays as one thread, and that is node n of patch j at
// n P + j (zero on Dirichlet planes, and on the inner nodes where asked), for every block of
// every color (boundary blocks, blocks with fewer patches), the full box with and without
// zero-filled inner nodes and the inner box.
template <int dim, int k, typename Number>
void check_interleaved_gather(const std::array<int, dim>& nc) {
  constexpr auto L = patch_layout(dim, k, sizeof(Number), KernelKind::fused, Contraction::even_odd);
  ASSERT_TRUE(L.interleaved);
  mesh::BoxMesh<dim> mesh(nc, mesh::GeometryKind::cartesian);
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k);
  std::vector<Number> src(dofs.n_local());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<Number>(i + 1);
  const auto colors = patch_kernel_colors<dim, Number>(mesh, dofs);
  constexpr int nf = 2 * k + 1, ni = 2 * k - 1;
  long checked = 0;
  for (const auto& p : colors) {
    if (p.n_patches == 0) continue;
    for (int bz = 0; bz < (dim == 3 ? p.count[2] : 1); ++bz)
      for (int by = 0; by < p.count[1]; ++by)
        for (int bx = 0; bx * L.patches < p.count[0]; ++bx) {
          PatchPosition pos;
          pos.m[0] = bx * L.patches;
          pos.m[1] = by;
          pos.m[2] = bz;
          const PatchNodes first = patch_nodes<dim, k>(p, pos);
          const int here = p.count[0] - pos.m[0];
          for (int box = 0; box < 3; ++box) {
            // (the box of every patch, also where the fused kernel reads its rows from global memory)
            const std::size_t size = std::max(L.shared_elements(), L.patches * ipow(nf, dim));
            std::vector<Number> one(size, Number(-7)), all(size, Number(-7));
            auto at = [&](int j) { return buf0_offset(L, j); };
            auto gather = [&](ThreadGroup g, std::vector<Number>& smem) {
              if (box == 2)
                copy_patch_boxes<dim, k, ni, 1, false>(g, L, p, first, here, src.data(), smem.data(), at);
              else
                copy_patch_boxes<dim, k, nf, 0, true>(g, L, p, first, here, src.data(), smem.data(), at, box == 1);
            };
            gather(ThreadGroup{0, 1}, one);
            for (int rank = 0; rank < L.threads; ++rank) gather(ThreadGroup{rank, L.threads}, all);
            ASSERT_EQ(one, all) << "block " << bx << " " << by << " " << bz << " box " << box;
            // the one-thread walk itself: node n of patch j at n P + j, zero on Dirichlet planes
            // and (box 1) on inner nodes
            const int nb = box == 2 ? ni : nf;
            const int valid = std::min(here, L.patches);
            for (int j = 0; j < valid; ++j) {
              const PatchNodes pj = next_patch_nodes<k>(p, first, j);
              for (int n = 0; n < ipow(nb, dim); ++n) {
                const Number v = one[n * L.patches + j];
                const bool zero = box == 1 && inner_node<dim, nf>(n);
                if (box == 2)
                  EXPECT_EQ(v, (src[pj.base + box_offset<dim, ni, 1>(p, n)]));
                else if (zero || on_boundary<dim, nf>(pj.boundary, n))
                  EXPECT_EQ(v, Number(0));
                else
                  EXPECT_EQ(v, (src[pj.base + box_offset<dim, nf, 0>(p, n)]));
                ++checked;
              }
            }
          }
        }
  }
  EXPECT_GT(checked, 0);
}

TEST(PatchBlockEmulation, InterleavedGather) {
  check_interleaved_gather<3, 1, double>({9, 4, 5});
  check_interleaved_gather<3, 2, double>({13, 4, 5});
  check_interleaved_gather<3, 3, double>({11, 5, 4});
  check_interleaved_gather<3, 3, float>({11, 4, 5});
  check_interleaved_gather<3, 5, float>({7, 3, 4});
  check_interleaved_gather<2, 1, double>({37, 6});
  check_interleaved_gather<2, 4, double>({35, 5});
  check_interleaved_gather<2, 8, float>({19, 4});
}

}  // namespace
