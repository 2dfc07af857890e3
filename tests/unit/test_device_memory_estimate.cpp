// The device memory estimate of the multigrid solve: parts as counted from the allocations, and a
// refusal message that names the parts and the way out.
#include <gtest/gtest.h>

#include <cmath>

#include "multigrid/device/multigrid_solve.h"
#include "operators/device/device_operator.h"

namespace {
using namespace tcfem;
using namespace tcfem::multigrid;

MultigridSolveSettings settings(OuterSolver solver, precision::Precision p, int restart = 30) {
  MultigridSolveSettings s;
  s.solver = solver;
  s.precision = p;
  s.fgmres.restart = restart;
  return s;
}

operators::OperatorConfig cg_config(int k) {
  operators::OperatorConfig c;
  c.disc = fe::Disc::cg;
  c.degree = k;
  return c;
}

TEST(DeviceMemoryEstimate, PartsPerDof) {
  const double n = 1e8;
  const auto cart = mesh::GeometryKind::cartesian;
  // FGMRES(30), fp64 V-cycle, fused patch smoother: 2 + 61 + 4 outer vectors; per level x, b, r,
  // transfer work (r only on the finest level)
  const auto e = estimate_device_multigrid_memory(3, n, cg_config(4), cart, settings(OuterSolver::fgmres, precision::Precision::fp64));
  EXPECT_DOUBLE_EQ(e.outer, 67.0 * 8.0 * n);
  EXPECT_NEAR(e.levels, 8.0 * n * (8.0 / 7.0 * 4.0 - 2.0), 1.0);
  EXPECT_EQ(e.operators, 0.0);  // Cartesian kernels store no geometry
  EXPECT_NEAR(e.total(), e.outer + e.levels + e.fixed, 1.0);
  // fp32 V-cycle: half the level bytes, plus b and x in float
  const auto f = estimate_device_multigrid_memory(3, n, cg_config(4), cart, settings(OuterSolver::fgmres, precision::Precision::fp32));
  EXPECT_NEAR(f.levels, e.levels / 2.0, 1.0);
  EXPECT_DOUBLE_EQ(f.outer, e.outer + 8.0 * n);
  // CG: 2 + 4 outer vectors
  const auto c = estimate_device_multigrid_memory(3, n, cg_config(4), cart, settings(OuterSolver::cg, precision::Precision::fp16ec));
  EXPECT_DOUBLE_EQ(c.outer, 6.0 * 8.0 * n + 8.0 * n);
  // the Chebyshev smoother's four vectors per level
  auto s = settings(OuterSolver::cg, precision::Precision::fp64);
  s.multigrid.smoother.kind = SmootherKind::chebyshev;
  const auto ch = estimate_device_multigrid_memory(3, n, cg_config(4), cart, s);
  EXPECT_NEAR(ch.levels - estimate_device_multigrid_memory(3, n, cg_config(4), cart, settings(OuterSolver::cg, precision::Precision::fp64)).levels,
              8.0 * n * 8.0 / 7.0 * 4.0, 1.0);
  // general geometry stores quadrature data: more than the Cartesian path
  const auto g = estimate_device_multigrid_memory(3, n, cg_config(4), mesh::GeometryKind::deformed,
                                                  settings(OuterSolver::cg, precision::Precision::fp64));
  EXPECT_GT(g.operators, 0.0);
  // a cg box with Neumann parts runs the general-geometry kernels (the Kronecker ones constrain
  // every boundary node): with a constant coefficient from the box's 1D tables (nothing stored,
  // the finest diagonal's transient stored data counted once, the patches' global residual); with
  // a coefficient its stored data are counted as on a deformed mesh; dg keeps its path
  const auto box_cg = settings(OuterSolver::cg, precision::Precision::fp64);
  const auto neumann = estimate_device_multigrid_memory(3, n, cg_config(4), cart, box_cg, true);
  const auto dirichlet = estimate_device_multigrid_memory(3, n, cg_config(4), cart, box_cg, false);
  EXPECT_EQ(neumann.operators, 0.0);
  EXPECT_EQ(dirichlet.operators, 0.0);
  EXPECT_NEAR(neumann.fixed - dirichlet.fixed, g.operators / (8.0 / 7.0), 1.0);
  EXPECT_GE(neumann.levels, dirichlet.levels);
  auto coefficient = cg_config(4);
  coefficient.coefficient = [](const double*) { return 2.0; };
  const auto g_coef = estimate_device_multigrid_memory(3, n, coefficient, mesh::GeometryKind::deformed, box_cg);
  EXPECT_GT(g_coef.operators, 0.0);
  EXPECT_DOUBLE_EQ(estimate_device_multigrid_memory(3, n, coefficient, cart, box_cg, true).operators,
                   g_coef.operators);
  auto dg = cg_config(4);
  dg.disc = fe::Disc::dg;
  EXPECT_DOUBLE_EQ(estimate_device_multigrid_memory(3, n, dg, cart, box_cg, true).operators,
                   estimate_device_multigrid_memory(3, n, dg, cart, box_cg, false).operators);
}

// The matrix-free geometry form (cg BP5 and BP3, 2D and 3D): the displacement and the coefficient
// at the nodes (BP5) or at the (k + 2)^dim points of each cell (BP3) instead of the stored
// quadrature data.
TEST(DeviceMemoryEstimate, MatrixFreeGeometry) {
  const double n = 1e8, ls = 8.0 / 7.0;
  auto c = cg_config(4);
  c.quadrature = fe::QuadratureKind::gll_k1;
  c.coefficient = [](const double*) { return 1.0; };
  const auto mapped = mesh::GeometryKind::mapped;
  const auto s = settings(OuterSolver::cg, precision::Precision::fp64);
  const auto pa = estimate_device_multigrid_memory(3, n, c, mapped, s);
  c.geometry_form = operators::GeometryForm::mf;
  const auto mf = estimate_device_multigrid_memory(3, n, c, mapped, s);
  EXPECT_NEAR(mf.operators, ls * n * (4.0 * 8.0 + 24.0 / 64.0), 1.0);
  EXPECT_LT(mf.operators, pa.operators / 2.0);
  EXPECT_DOUBLE_EQ(mf.outer, pa.outer);
  // BP3: the coefficient at 6^3 points per 4^3 DoFs (6^2 per 4^2 in 2D)
  c.quadrature = fe::QuadratureKind::gauss_k2;
  auto bp3_pa = c;
  bp3_pa.geometry_form = operators::GeometryForm::pa;
  const auto mf3 = estimate_device_multigrid_memory(3, n, c, mapped, s);
  EXPECT_NEAR(mf3.operators, ls * n * ((3.0 + 216.0 / 64.0) * 8.0 + 24.0 / 64.0), 1.0);
  EXPECT_LT(mf3.operators, estimate_device_multigrid_memory(3, n, bp3_pa, mapped, s).operators / 2.0);
  EXPECT_NEAR(estimate_device_multigrid_memory(2, n, c, mapped, s).operators,
              4.0 / 3.0 * n * ((2.0 + 36.0 / 16.0) * 8.0 + 16.0 / 16.0), 1.0);
  c.coefficient = {};
  EXPECT_NEAR(estimate_device_multigrid_memory(3, n, c, mapped, s).operators, ls * n * (3.0 * 8.0 + 24.0 / 64.0), 1.0);
  c.coefficient = [](const double*) { return 1.0; };
  // 2D: two displacement components and the coefficient per node, two doubles per k^2 nodes
  c.quadrature = fe::QuadratureKind::gll_k1;
  auto pa2 = c;
  pa2.geometry_form = operators::GeometryForm::pa;
  const auto mf2 = estimate_device_multigrid_memory(2, n, c, mapped, s);
  EXPECT_NEAR(mf2.operators, 4.0 / 3.0 * n * (3.0 * 8.0 + 16.0 / 16.0), 1.0);
  EXPECT_LT(mf2.operators, estimate_device_multigrid_memory(2, n, pa2, mapped, s).operators);
}

// --geometry-storage fp32: the fp64 operators (the outer one, and the fp64 levels of the FMG
// start or an fp64 V-cycle) hold half the stored bytes; an fp32 V-cycle's levels hold fp32 anyway.
TEST(DeviceMemoryEstimate, Fp32StoredGeometry) {
  const double n = 1e8, ls = 8.0 / 7.0;
  auto c = cg_config(4);
  c.quadrature = fe::QuadratureKind::gll_k1;
  const auto mapped = mesh::GeometryKind::mapped;
  const auto fp64 = settings(OuterSolver::cg, precision::Precision::fp64);
  auto fp32 = settings(OuterSolver::fgmres, precision::Precision::fp32);
  fp32.start = StartKind::fmg;
  const auto pa64 = estimate_device_multigrid_memory(3, n, c, mapped, fp64);
  const auto pa32 = estimate_device_multigrid_memory(3, n, c, mapped, fp32);
  c.geometry_storage = operators::GeometryStorage::fp32;
  const auto s64 = estimate_device_multigrid_memory(3, n, c, mapped, fp64);
  const auto s32 = estimate_device_multigrid_memory(3, n, c, mapped, fp32);
  EXPECT_GT(pa64.operators, 0.0);
  EXPECT_NEAR(s64.operators, pa64.operators / 2.0, 1.0);
  // the finest level's fp64 data, formed for the time of the setup before its rounding
  EXPECT_NEAR(s64.fixed - pa64.fixed, pa64.operators / ls, 1.0);
  // fp32 V-cycle with the FMG start: the levels (fp32 either way) keep their bytes, the outer
  // operator and the FMG's fp64 operators of the coarser levels halve theirs
  const double per_dof = pa64.operators / (ls * n);
  EXPECT_NEAR(pa32.operators - s32.operators, 0.5 * per_dof * n * (1.0 + (ls - 1.0)), 1.0);
  EXPECT_DOUBLE_EQ(s32.levels, pa32.levels);
  // dg keeps its stored data in fp64 (no fp32-stored dg kernel)
  c.disc = fe::Disc::dg;
  auto d64 = c;
  d64.geometry_storage = operators::GeometryStorage::fp64;
  EXPECT_DOUBLE_EQ(estimate_device_multigrid_memory(3, n, c, mapped, fp64).operators,
                   estimate_device_multigrid_memory(3, n, d64, mapped, fp64).operators);
}

// --geometry-form auto: mf for the trilinear (bilinear) cells of a Cartesian mesh (general
// geometry: a coefficient or Neumann faces) where measured faster, pa for curved cells and elsewhere.
TEST(GeometryForm, AutomaticResolution) {
  using operators::GeometryForm;
  using P = precision::Precision;
  operators::DeviceKernelKey key;
  key.dim = 3;
  key.degree = 4;
  key.cartesian = false;
  key.general_field = true;
  key.quadrature = fe::QuadratureKind::gll_k1;
  key.precision = P::fp64;
  key.geometry_form = GeometryForm::automatic;
  const auto cart = mesh::GeometryKind::cartesian, mapped = mesh::GeometryKind::mapped;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  EXPECT_EQ(operators::resolve_geometry_form(key, mapped), GeometryForm::pa);
  key.precision = P::fp32;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);  // fp32 below k = 5: pa faster
  key.degree = 5;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  key.degree = 3;
  key.precision = P::fp64;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  // BP3: fp64 from k = 4 in 3D; from k = 2 in 2D, fp32 from k = 4
  key.quadrature = fe::QuadratureKind::gauss_k2;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.degree = 4;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  EXPECT_EQ(operators::resolve_geometry_form(key, mapped), GeometryForm::pa);
  key.precision = P::fp32;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.dim = 2;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  key.degree = 3;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.precision = P::fp64;
  key.degree = 2;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  key.quadrature = fe::QuadratureKind::gauss_k1;  // no matrix-free kernel
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.dim = 3;
  key.degree = 3;
  key.quadrature = fe::QuadratureKind::gll_k1;
  // 2D: the bilinear cells' mf from k = 3 (fp64) and k = 4 (fp32), pa below and on curved cells
  key.dim = 2;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  EXPECT_EQ(operators::resolve_geometry_form(key, mapped), GeometryForm::pa);
  key.degree = 2;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.precision = P::fp32;
  key.degree = 3;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.degree = 4;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::mf);
  key.precision = P::fp64;
  key.degree = 3;
  key.dim = 3;
  key.disc = fe::Disc::dg;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.disc = fe::Disc::cg;
  // explicit forms stay
  key.geometry_form = GeometryForm::pa;
  EXPECT_EQ(operators::resolve_geometry_form(key, cart), GeometryForm::pa);
  key.geometry_form = GeometryForm::mf;
  EXPECT_EQ(operators::resolve_geometry_form(key, mapped), GeometryForm::mf);
}

TEST(StoredGeometryVariant, TensorCoresWhereMeasuredFaster) {
  using operators::GeometryForm;
  using operators::Variant;
  using P = precision::Precision;
  operators::DeviceKernelKey key;
  key.dim = 3;
  key.cartesian = false;
  key.general_field = true;
  key.geometry_form = GeometryForm::pa;
  key.precision = P::fp64;
  const auto bp5 = fe::QuadratureKind::gll_k1, bp3 = fe::QuadratureKind::gauss_k2;
  for (int k = 1; k <= 8; ++k) {
    key.degree = k;
    key.quadrature = bp5;
    EXPECT_EQ(operators::fastest_stored_geometry_variant(key), k == 6 || k == 7 ? Variant::tensor_core : Variant::cuda_core)
        << "bp5 k=" << k;
    key.quadrature = bp3;
    EXPECT_EQ(operators::fastest_stored_geometry_variant(key), Variant::cuda_core) << "bp3 k=" << k;
  }
  // fp32 stored data: the tensor cores at BP3 k = 7 only; 2D: at BP3 k = 7 with fp64 data only
  for (int k = 1; k <= 8; ++k) {
    for (auto quad : {bp5, bp3}) {
      auto o = key;
      o.degree = k;
      o.quadrature = quad;
      o.geometry_storage = operators::GeometryStorage::fp32;
      EXPECT_EQ(operators::fastest_stored_geometry_variant(o),
                quad == bp3 && k == 7 ? Variant::tensor_core : Variant::cuda_core)
          << "fp32 data k=" << k;
      o.geometry_storage = operators::GeometryStorage::fp64;
      o.dim = 2;
      EXPECT_EQ(operators::fastest_stored_geometry_variant(o),
                quad == bp3 && k == 7 ? Variant::tensor_core : Variant::cuda_core)
          << "2D k=" << k;
      o.geometry_storage = operators::GeometryStorage::fp32;
      EXPECT_EQ(operators::fastest_stored_geometry_variant(o), Variant::cuda_core) << "2D fp32 data k=" << k;
    }
  }
  // no tensor-core kernel measured faster: fp32, matrix-free or automatic forms, 2D BP5, fp32
  // stored data at BP5, dg, Cartesian keys
  key.degree = 7;
  key.quadrature = bp5;
  auto other = key;
  other.precision = P::fp32;
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
  other = key;
  other.geometry_form = GeometryForm::mf;
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
  other.geometry_form = GeometryForm::automatic;  // may resolve to the vertices' matrix-free form
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
  other = key;
  other.dim = 2;
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
  other = key;
  other.geometry_storage = operators::GeometryStorage::fp32;
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
  other = key;
  other.disc = fe::Disc::dg;
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
  other = key;
  other.general_field = false;
  EXPECT_EQ(operators::fastest_stored_geometry_variant(other), Variant::cuda_core);
}

// A full-multigrid start below fp64 (MixedFullMultigrid): fp64 x, b below the finest level and r on
// every level, a residual and a correction in float on every level; with an fp64 V-cycle nothing.
TEST(DeviceMemoryEstimate, FullMultigridStart) {
  const double n = 1e8, ls = 8.0 / 7.0;
  const auto cart = mesh::GeometryKind::cartesian;
  for (auto solver : {OuterSolver::cg, OuterSolver::fmg}) {
    auto s = settings(solver, precision::Precision::fp32);
    const auto zero = estimate_device_multigrid_memory(3, n, cg_config(3), cart, s);
    s.start = StartKind::fmg;
    const auto fmg = estimate_device_multigrid_memory(3, n, cg_config(3), cart, s);
    if (solver == OuterSolver::fmg) {
      EXPECT_DOUBLE_EQ(fmg.levels, zero.levels);  // OuterSolver::fmg starts from FMG either way
      continue;
    }
    EXPECT_NEAR(fmg.levels - zero.levels, 8.0 * n * (2.0 * (ls - 1.0) + ls) + 4.0 * n * 2.0 * ls, 1.0);
    EXPECT_DOUBLE_EQ(fmg.outer, zero.outer);
    auto d = settings(solver, precision::Precision::fp64);
    const auto d_zero = estimate_device_multigrid_memory(3, n, cg_config(3), cart, d);
    d.start = StartKind::fmg;
    EXPECT_DOUBLE_EQ(estimate_device_multigrid_memory(3, n, cg_config(3), cart, d).total(), d_zero.total());
    const std::string msg = device_memory_refusal(fmg, n, 1e9, "H200", s);
    EXPECT_NE(msg.find("--mg-start zero"), std::string::npos) << msg;
  }
}

TEST(DeviceMemoryEstimate, RefusalNamesPartsAndRemedy) {
  const auto s = settings(OuterSolver::fgmres, precision::Precision::fp64);
  const auto e = estimate_device_multigrid_memory(3, 5e8, cg_config(4), mesh::GeometryKind::cartesian, s);
  const std::string msg = device_memory_refusal(e, 5e8, 139e9, "NVIDIA H200", s);
  EXPECT_NE(msg.find("--cells/--refine"), std::string::npos) << msg;
  EXPECT_NE(msg.find("outer solver"), std::string::npos) << msg;
  EXPECT_NE(msg.find("V-cycle levels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--restart"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NVIDIA H200"), std::string::npos) << msg;
  const auto c = settings(OuterSolver::cg, precision::Precision::fp64);
  const std::string msg2 = device_memory_refusal(
      estimate_device_multigrid_memory(3, 2e9, cg_config(4), mesh::GeometryKind::cartesian, c), 2e9, 139e9, "H200", c);
  EXPECT_NE(msg2.find("--mg-precision fp32"), std::string::npos) << msg2;
}

}  // namespace

namespace {
using namespace tcfem;

// The geometry fields of a key: a cg Cartesian box with Neumann parts and a constant coefficient
// is general (the Kronecker kernels constrain every boundary node) and read from the box's 1D
// tables (box_tables: no stored data, pa under auto, fp64 "storage", the cuda cores); with a
// coefficient, a map, dg or every face Dirichlet it is not.
TEST(DeviceKernelKey, BoxWithNeumannPartsReadsTheBoxTables) {
  using operators::GeometryForm;
  mesh::Point<3> lo{0.5, -1.0, 0.0}, hi{2.0, 0.5, 3.0};
  const mesh::BoxMesh<3> box({4, 3, 3}, mesh::Domain<3>::box(lo, hi));
  const mesh::BoxMesh<3> mapped({4, 3, 3}, mesh::Domain<3>::box(lo, hi, [](const mesh::Point<3>& X) {
                                   return mesh::Point<3>{X[0] + 0.1 * X[1] * X[1], X[1], X[2]};
                                 }));
  auto neumann = fe::all_dirichlet<3>();
  neumann[1] = false;  // xmax
  auto key_of = [](const mesh::BoxMesh<3>& m, fe::Disc disc, const fe::DirichletFaces<3>& faces,
                   const operators::OperatorConfig& cfg) {
    const fe::DofLayout<3> dofs(m, disc, cfg.degree, faces);
    operators::DeviceKernelKey key;
    key.degree = cfg.degree;
    key.disc = disc;
    key.quadrature = fe::QuadratureKind::gll_k1;
    key.variant = operators::Variant::cuda_core;
    operators::set_geometry(key, m, dofs, cfg);
    return key;
  };
  operators::OperatorConfig cfg;
  cfg.degree = 6;
  cfg.geometry_form = GeometryForm::automatic;
  cfg.geometry_storage = operators::GeometryStorage::fp32;
  const auto key = key_of(box, fe::Disc::cg, neumann, cfg);
  EXPECT_FALSE(key.cartesian);
  EXPECT_TRUE(key.general_field);
  EXPECT_TRUE(key.box_tables);
  EXPECT_EQ(key.geometry_storage, operators::GeometryStorage::fp64);
  EXPECT_EQ(operators::resolve_geometry_form(key, mesh::GeometryKind::cartesian), GeometryForm::pa);
  EXPECT_EQ(operators::fastest_stored_geometry_variant(key), operators::Variant::cuda_core);  // BP5 k = 6
  auto mf = key;
  mf.geometry_form = GeometryForm::mf;
  EXPECT_EQ(operators::resolve_geometry_form(mf, mesh::GeometryKind::cartesian), GeometryForm::mf);
  // every face Dirichlet: the Kronecker path
  const auto dirichlet = key_of(box, fe::Disc::cg, fe::all_dirichlet<3>(), cfg);
  EXPECT_TRUE(dirichlet.cartesian);
  EXPECT_FALSE(dirichlet.box_tables);
  // a coefficient, a map, dg: stored data as on general geometry
  auto with_coefficient = cfg;
  with_coefficient.coefficient = [](const double* x) { return 1.0 + x[0]; };
  for (const auto& other : {key_of(box, fe::Disc::cg, neumann, with_coefficient), key_of(mapped, fe::Disc::cg, neumann, cfg),
                            key_of(box, fe::Disc::dg, neumann, cfg)}) {
    EXPECT_TRUE(other.general_field) << other.to_string();
    EXPECT_FALSE(other.box_tables) << other.to_string();
    EXPECT_EQ(other.geometry_storage, operators::GeometryStorage::fp32) << other.to_string();
  }
}

}  // namespace
