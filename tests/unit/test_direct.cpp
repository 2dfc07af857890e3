// The prehandled hierarchical-basis direct solver (src/direct): meshes and their counts (seed 003,
// table 2), node classes (table 3), condition numbers (tables 2 and 4), the direct solution against
// CG on the nodal system, and the FP32/FP16 solve phases against FP64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/vector.h"
#include "direct/condition.h"
#include "direct/dense.h"
#include "direct/direct_solver.h"
#include "direct/solve_phase.h"
#include "solvers/cg.h"

namespace {
using namespace tcfem;
using namespace tcfem::direct;

double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0.0, n = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return std::sqrt(d / n);
}

std::vector<double> flatten(const BlockVectors<double>& v) {
  std::vector<double> out(v.c);
  out.insert(out.end(), v.e.begin(), v.e.end());
  for (const auto& blk : v.i) out.insert(out.end(), blk.begin(), blk.end());
  return out;
}

std::vector<double> dense_of(const CsrMatrix& a) {
  std::vector<double> d(static_cast<std::size_t>(a.n_rows * a.n_cols), 0.0);
  for (std::int64_t i = 0; i < a.n_rows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d[i + a.cols[p] * a.n_rows] = a.values[p];
  return d;
}

// ---- sparse and dense building blocks

TEST(DirectSparse, ProductAndTransposeMatchDenseLoops) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Triplet> ta, tb;
  for (int k = 0; k < 60; ++k) ta.push_back({int(rng() % 9), int(rng() % 7), u(rng)});
  for (int k = 0; k < 50; ++k) tb.push_back({int(rng() % 7), int(rng() % 11), u(rng)});
  const CsrMatrix a = csr_from_triplets(9, 7, ta), b = csr_from_triplets(7, 11, tb);
  const auto da = dense_of(a), db = dense_of(b), dc = dense_of(multiply(a, b)), dt = dense_of(transpose(a));
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 11; ++j) {
      double s = 0;
      for (int k = 0; k < 7; ++k) s += da[i + k * 9] * db[k + j * 7];
      EXPECT_NEAR(dc[i + j * 9], s, 1e-14);
    }
  for (int i = 0; i < 9; ++i)
    for (int j = 0; j < 7; ++j) EXPECT_EQ(dt[j + i * 7], da[i + j * 9]);
}

TEST(DirectDense, CholeskyInverseAndEigenvalues) {
  const int n = 5;
  std::vector<double> a(n * n, 0.0);
  for (int i = 0; i < n; ++i) {
    a[i + i * n] = 2.0;
    if (i + 1 < n) a[i + 1 + i * n] = a[i + (i + 1) * n] = -1.0;
  }
  auto inv = a;
  cholesky_factor(n, inv.data(), n, "test");
  cholesky_inverse(n, inv.data(), n, "test");
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += a[i + k * n] * inv[k + j * n];
      EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-13);
    }
  // eigenvalues of the 1D Laplacian: 2 - 2 cos(k pi / (n + 1))
  const auto c = condition_dense(n, a.data(), n);
  const double pi = std::acos(-1.0);
  EXPECT_NEAR(c.lambda_min, 2 - 2 * std::cos(pi / (n + 1)), 1e-13);
  EXPECT_NEAR(c.lambda_max, 2 - 2 * std::cos(n * pi / (n + 1)), 1e-13);
  const auto l = condition_lanczos(n, [&](const double* x, double* y) { symmetric_multiply(n, a.data(), n, x, y); });
  EXPECT_NEAR(l.kappa, c.kappa, 1e-10 * c.kappa);
}

// ---- meshes (seed 003, table 2)

TEST(DirectMesh, FlowAroundASquareMatchesTable2Counts) {
  const std::int64_t n[] = {7, 42, 196, 840, 3472, 14112, 56896, 228480, 915712};
  const Mesh2D coarse = make_coarse_mesh(MeshKind::flow_square);
  EXPECT_EQ(coarse.n_cells(), 28);
  EXPECT_EQ(coarse.n_interior_vertices(), 7);
  for (int l = 0; l <= 8; ++l) {
    const auto c = counts_at_level(coarse, l);
    EXPECT_EQ(c.n_interior_vertices, n[l]) << "level " << l;
    EXPECT_EQ(c.n_cells, 28 * (std::int64_t(1) << (2 * l))) << "level " << l;
  }
  // the refined meshes agree with the counts; NNZ(A_FEM)/N as in table 2
  const double nnz_per_n[] = {1.00, 4.43, 5.53, 5.89, 6.03};
  Mesh2D m = coarse;
  for (int l = 0; l <= 4; ++l) {
    if (l > 0) m = refine(m);
    const auto c = counts_at_level(coarse, l);
    EXPECT_EQ(m.n_vertices(), c.n_vertices);
    EXPECT_EQ(m.n_interior_vertices(), c.n_interior_vertices);
    EXPECT_EQ(build_edges(m).size(), c.n_edges);
    const auto a = assemble_stiffness(m, make_dof_map(m));
    EXPECT_NEAR(double(a.nnz()) / double(c.n_interior_vertices), nnz_per_n[l], 0.005) << "level " << l;
  }
}

TEST(DirectMesh, ConditionNumberOfTheStiffnessMatrixMatchesTable2AndGrowsLikeHMinus2) {
  const double kappa[] = {1.88, 10.01, 54.51, 257.68};
  Mesh2D m = make_coarse_mesh(MeshKind::flow_square);
  double previous = 0.0;
  for (int l = 0; l <= 3; ++l) {
    if (l > 0) m = refine(m);
    const auto a = assemble_stiffness(m, make_dof_map(m));
    const auto d = dense_of(a);
    const auto c = condition_dense(a.n_rows, d.data(), a.n_rows);
    EXPECT_NEAR(c.kappa, kappa[l], 0.006) << "level " << l;
    if (l >= 2) {
      EXPECT_NEAR(c.kappa / previous, 4.5, 1.0);  // h^-2: a factor 4 per level (5.4, 4.7 here)
    }
    previous = c.kappa;
  }
}

TEST(DirectMesh, SquaresAreOneClassAndTheFlowMeshHasThree) {
  EXPECT_EQ(count_macro_classes(make_coarse_mesh(MeshKind::square_q1)), 1);
  EXPECT_EQ(count_macro_classes(make_coarse_mesh(MeshKind::square_p1)), 1);
  EXPECT_EQ(count_macro_classes(make_coarse_mesh(MeshKind::flow_square)), 3);
}

// ---- node classes (seed 003, table 3) and the choice of L0

TEST(DirectPlan, NodeClassCountsMatchTable3) {
  struct Row {
    int level, coarse_level;
    std::int64_t c, e, i;
  };
  const Row rows[] = {{6, 0, 7, 2205, 54684},    {6, 1, 42, 4774, 52080},    {6, 2, 196, 9660, 47040},
                      {6, 3, 840, 18424, 37632}, {6, 4, 3472, 31920, 21504}, {7, 2, 196, 19964, 208320},
                      {8, 0, 7, 8925, 906780},   {8, 2, 196, 40572, 874944}, {8, 4, 3472, 159600, 752640}};
  for (const auto& r : rows) {
    const auto p = plan_direct(MeshKind::flow_square, r.level, r.coarse_level);
    EXPECT_EQ(p.n_coarse, r.c) << r.level << "/" << r.coarse_level;
    EXPECT_EQ(p.n_edge, r.e) << r.level << "/" << r.coarse_level;
    EXPECT_EQ(p.n_interior, r.i) << r.level << "/" << r.coarse_level;
    EXPECT_EQ(p.n_coarse + p.n_edge + p.n_interior, p.n_dofs);
  }
  // table 3: the fewest FLOPs at L0 = 1 (L = 6) and L0 = 2 (L = 7, 8)
  EXPECT_EQ(optimal_coarse_level(MeshKind::flow_square, 6), 1);
  EXPECT_EQ(optimal_coarse_level(MeshKind::flow_square, 7), 2);
  EXPECT_EQ(optimal_coarse_level(MeshKind::flow_square, 8), 2);
}

TEST(DirectPlan, ClassificationAgreesWithThePlan) {
  SetupOptions off;
  off.condition = ConditionMethod::off;
  for (auto kind : {MeshKind::square_q1, MeshKind::square_p1, MeshKind::flow_square})
    for (int l0 = 0; l0 <= 3; ++l0) {
      const DirectSolver s(kind, 3, l0, off);
      const auto p = plan_direct(kind, 3, l0);
      EXPECT_EQ(s.system().n_coarse, p.n_coarse);
      EXPECT_EQ(s.system().n_edge, p.n_edge);
      EXPECT_EQ(s.system().n_interior, p.n_interior);
      EXPECT_EQ(s.system().n_classes(), p.n_classes);
    }
}

// ---- the direct solution

struct Case {
  MeshKind kind;
  int level, coarse_level;
};

class DirectSolve : public ::testing::TestWithParam<Case> {};

TEST_P(DirectSolve, Fp64EqualsCgOnTheNodalSystemAndTheBlockStructureHolds) {
  const auto [kind, level, coarse_level] = GetParam();
  SetupOptions off;
  off.condition = ConditionMethod::off;
  const DirectSolver s(kind, level, coarse_level, off);
  // eq. 3: the C-I and I_i-I_j blocks vanish, similar cells have equal blocks
  EXPECT_LE(s.diagnostics().max_ignored_coupling, 1e-12);
  EXPECT_LE(s.diagnostics().max_class_deviation, 1e-12);

  const auto b = assemble_load(s.hierarchy().fine, s.dofs(), ExactSolution{kind, 1});
  const auto bh = s.prehandle(b, 1);
  auto phase = make_cpu_solve_phase(s.system(), Precision::fp64);
  phase->load(bh);
  phase->run();
  const auto xh = phase->result();
  // the prehandled system itself: A^ x^ = b^
  BlockVectors<double> r;
  s.system().apply_prehandled(xh, r);
  EXPECT_LE(relative_difference(flatten(r), flatten(bh)), 1e-12);

  const auto x = s.recover(xh);
  Vector<double> xcg(b.size()), bv(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) bv[i] = b[i];
  solvers::SolverControl control;
  control.tolerance = 1e-14;
  control.max_iterations = 100000;
  const auto result = solvers::solve_cg(s.stiffness(), xcg, bv,
                                        solvers::JacobiPreconditioner<double>(s.stiffness().diagonal()), control);
  EXPECT_TRUE(result.converged);
  std::vector<double> xc(xcg.data(), xcg.data() + xcg.size());
  EXPECT_LE(relative_difference(x, xc), 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Meshes, DirectSolve,
                         ::testing::Values(Case{MeshKind::flow_square, 4, 1}, Case{MeshKind::flow_square, 3, 0},
                                           Case{MeshKind::flow_square, 3, 3}, Case{MeshKind::square_q1, 5, 2},
                                           Case{MeshKind::square_q1, 4, 0}, Case{MeshKind::square_p1, 4, 1},
                                           Case{MeshKind::square_p1, 4, 4}));

TEST(DirectSolve, ManyRightHandSidesEqualOneAtATime) {
  SetupOptions off;
  off.condition = ConditionMethod::off;
  const DirectSolver s(MeshKind::flow_square, 4, 2, off);
  const std::int64_t n = s.n_dofs(), nrhs = 5;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> b(static_cast<std::size_t>(n * nrhs));
  for (auto& v : b) v = u(rng);
  for (auto p : {Precision::fp64, Precision::fp32, Precision::tf32, Precision::tf32x3, Precision::fp16}) {
    auto phase = make_cpu_solve_phase(s.system(), p);
    phase->load(s.prehandle(b, nrhs));
    phase->run();
    const auto all = s.recover(phase->result());
    for (std::int64_t r = 0; r < nrhs; r += 2) {
      std::vector<double> one(b.begin() + r * n, b.begin() + (r + 1) * n);
      phase->load(s.prehandle(one, 1));
      phase->run();
      const auto x = s.recover(phase->result());
      std::vector<double> col(all.begin() + r * n, all.begin() + (r + 1) * n);
      // FP64, FP32: round-off of a different summation order; TF32, FP16: it can flip the rounding
      // of intermediate vectors to the narrow format
      const double tol = p == Precision::fp64                               ? 1e-14
                         : p == Precision::fp32 || p == Precision::tf32x3 ? 1e-6
                                                                           : 1e-4;
      EXPECT_LE(relative_difference(col, x), tol) << to_string(p);
    }
  }
}

// ---- precisions (seed 003, fig. 10)

TEST(DirectPrecision, Fp32MatchesFp64AndFp16AndTf32StayBelow1e3) {
  SetupOptions off;
  off.condition = ConditionMethod::off;
  const DirectSolver s(MeshKind::flow_square, 5, 1, off);
  for (int freq : {1, 10}) {
    const ExactSolution u{MeshKind::flow_square, freq};
    const auto b = assemble_load(s.hierarchy().fine, s.dofs(), u);
    const auto exact = interpolate(s.hierarchy().fine, s.dofs(), u);
    const auto bh = s.prehandle(b, 1);
    double err[5];
    std::vector<double> x64;
    int k = 0;
    for (auto p : {Precision::fp64, Precision::fp32, Precision::fp16, Precision::tf32, Precision::tf32x3}) {
      auto phase = make_cpu_solve_phase(s.system(), p);
      phase->load(bh);
      phase->run();
      const auto x = s.recover(phase->result());
      if (p == Precision::fp64) x64 = x;
      err[k++] = relative_difference(x, exact);
      if (p == Precision::fp32 || p == Precision::tf32x3) {
        EXPECT_LE(relative_difference(x, x64), 1e-5) << to_string(p);
      }
      if (p == Precision::fp16 || p == Precision::tf32) {
        EXPECT_LE(relative_difference(x, x64), 1e-2);
      }
    }
    EXPECT_NEAR(err[1], err[0], 1e-3 * err[0]) << "n = " << freq;  // identical in a plot
    EXPECT_NEAR(err[4], err[0], 1e-3 * err[0]) << "n = " << freq;  // 3xTF32: FP32 accuracy
    if (err[0] < 1e-3) {
      EXPECT_LT(err[2], 1e-3) << "n = " << freq;
    }
    EXPECT_LT(err[2], std::max(1e-3, 1.2 * err[0])) << "n = " << freq;
    EXPECT_LT(err[3], std::max(1e-3, 1.2 * err[0])) << "n = " << freq;  // TF32: FP16's mantissa
  }
}

// ---- condition numbers of the prehandled blocks (seed 003, table 4)

TEST(DirectConditions, InteriorBlocksMatchTable4AndStaySmall) {
  // kappa(C_k) depends on L - L0 only: table 4's rows for L - L0 = 2..5 (isosceles right, scalene,
  // isosceles obtuse)
  const double table4[4][3] = {{2.09, 2.40, 2.51}, {6.58, 8.67, 9.44}, {13.57, 18.04, 23.21}, {23.81, 33.02, 45.94}};
  double kappa_a_previous = 0.0;
  for (int d = 2; d <= 5; ++d) {
    SetupOptions o;
    o.condition = ConditionMethod::automatic;
    const DirectSolver s(MeshKind::flow_square, d, 0, o);
    const auto& c = s.conditions();
    ASSERT_EQ(c.classes.size(), 3u);
    std::vector<double> got = {c.classes[0].kappa, c.classes[1].kappa, c.classes[2].kappa};
    std::sort(got.begin(), got.end());
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(got[k], table4[d - 2][k], 0.006) << "L - L0 = " << d;
    EXPECT_LT(c.pi.kappa, 100.0);
    EXPECT_LT(c.prehandled.kappa, 200.0);
    // meanwhile kappa(A_FEM) grows like h^-2
    if (d > 2) {
      EXPECT_NEAR(c.a_fem.kappa / kappa_a_previous, 4.4, 0.5) << "L = " << d;  // h^-2: 4.7, 4.3, 4.1
    }
    kappa_a_previous = c.a_fem.kappa;
  }
}

}  // namespace
