// The user's problem: expressions, problem files, and the discretization of -div(a grad u) = f with
// Dirichlet and Neumann data on mapped boxes, checked by convergence rates (cg and dg, 2D and 3D),
// by the assembled reference matrix and by the multigrid solvers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/error.h"
#include "multigrid/host/multigrid_solve.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cpu/sparse_matrix.h"
#include "problem/boundary_value_problem.h"
#include "problem/expression.h"
#include "problem/problem_file.h"
#include "solvers/cg.h"

namespace {
using namespace tcfem;

// ---- expressions ------------------------------------------------------------------------------

TEST(Expression, ValuesConstantsAndFunctions) {
  const double x[3] = {0.3, 0.5, 0.7};
  EXPECT_NEAR(problem::Expression("k", "x*y + z^2", 3)(x), 0.3 * 0.5 + 0.49, 1e-15);
  EXPECT_NEAR(problem::Expression("k", "sin(pi*x) + exp(y) + log(e)", 3)(x), std::sin(M_PI * 0.3) + std::exp(0.5) + 1.0,
              1e-14);
  EXPECT_NEAR(problem::Expression("k", "pow(x, 3) + atan2(y, x) + sqrt(abs(-4)) + min(x, y) + max(x, z)", 3)(x),
              0.027 + std::atan2(0.5, 0.3) + 2.0 + 0.3 + 0.7, 1e-14);
  EXPECT_NEAR(problem::Expression("k", "log10(100) + cosh(0) + tanh(0) + 1e-3", 2)(x), 3.001, 1e-14);
  EXPECT_TRUE(problem::Expression("k", "2*pi", 2).is_constant());
  EXPECT_FALSE(problem::Expression("k", "2*x", 2).is_constant());
}

void expect_input_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no InputError (expected one mentioning \"" << part << "\")";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Expression, BadInputNamesKeyAndPosition) {
  expect_input_error([] { problem::Expression("rhs", "sin(x", 2); }, "rhs");
  expect_input_error([] { problem::Expression("rhs", "2*x)", 2); }, "position 3");
  expect_input_error([] { problem::Expression("coefficient", "foo*x", 3); }, "foo");
  expect_input_error([] { problem::Expression("exact", "x + z", 2); }, "z is not a coordinate in 2D");
  expect_input_error([] { problem::Expression("rhs", "  ", 2); }, "empty");
  const problem::Expression e("dirichlet.xmin", "log(x)", 2);
  const double p[2] = {-1.0, 0.25};
  expect_input_error([&] { e(p); }, "dirichlet.xmin: the value is");
  expect_input_error([&] { e(p); }, "(-1, 0.25)");
}

TEST(Expression, ThreadSafeEvaluation) {
  const problem::Expression e("k", "sin(x) * exp(y)", 2);
  std::vector<double> out(4 * 1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        const double x[2] = {0.001 * i, 0.5 + t};
        out[t * 1000 + i] = e(x);
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(out[t * 1000 + i], std::sin(0.001 * i) * std::exp(0.5 + t));
}

TEST(Expression, NumericalGradient) {
  const problem::Expression e("k", "exp(x) * sin(y) + z^3", 3);
  const double x[3] = {0.4, 1.1, -0.7};
  const auto g = problem::numerical_gradient(e, x);
  EXPECT_NEAR(g[0], std::exp(0.4) * std::sin(1.1), 1e-11);
  EXPECT_NEAR(g[1], std::exp(0.4) * std::cos(1.1), 1e-11);
  EXPECT_NEAR(g[2], 3 * 0.49, 1e-11);
}

// ---- problem files ------------------------------------------------------------------------------

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("tcfem_test_" + name + ".json");
  std::ofstream(path) << text;
  return path.string();
}

const char* valid_2d = R"json({"dim": 2, "degree": 3,
  "geometry": {"box": [[0, 1], [0, 1]], "cells": [4, 2], "map": ["(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)"]},
  "coefficient": "1 + x*y", "rhs": "0",
  "dirichlet": {"xmin": "0", "ymax": "x"}, "neumann": {"xmax": "1", "ymin": 0}, "exact": "x"})json";

TEST(ProblemFile, ReadsTheKeys) {
  const auto f = problem::read_problem_file(write_temp("valid", valid_2d));
  EXPECT_EQ(f.dim, 2);
  EXPECT_EQ(*f.degree, 3);
  EXPECT_EQ(f.cells, (std::vector<int>{4, 2}));
  EXPECT_EQ(f.map.size(), 2u);
  EXPECT_EQ(f.neumann.at("ymin"), "0");
  const auto p = problem::make_problem<2>(f);
  EXPECT_TRUE(p.coefficient);
  EXPECT_TRUE(p.dirichlet_faces[0]);
  EXPECT_FALSE(p.dirichlet_faces[1]);
  EXPECT_FALSE(p.dirichlet_faces[2]);
  EXPECT_TRUE(p.dirichlet_faces[3]);
  EXPECT_EQ(p.domain.kind, mesh::GeometryKind::mapped);
  const auto y = p.domain.map({1.0, 1.0});
  EXPECT_NEAR(y[0], 0.0, 1e-15);
  EXPECT_NEAR(y[1], 2.0, 1e-15);
}

TEST(ProblemFile, BadInput) {
  auto bad = [](const std::string& name, const std::string& text, const std::string& part, int dim = 2) {
    const auto path = write_temp(name, text);
    expect_input_error(
        [&] {
          const auto f = problem::read_problem_file(path);
          if (dim == 2)
            problem::make_problem<2>(f);
          else
            problem::make_problem<3>(f);
        },
        part);
  };
  std::string v = valid_2d;
  auto replace = [&](const std::string& a, const std::string& b) {
    std::string s = v;
    s.replace(s.find(a), a.size(), b);
    return s;
  };
  bad("json", "{\"dim\": 2,", "malformed JSON");
  bad("unknown", replace("\"rhs\"", "\"source\""), "source: unknown key");
  bad("twice", replace("\"xmax\": \"1\"", "\"xmin\": \"1\""), "xmin: the boundary part is listed twice");
  bad("missing", replace("\"xmax\": \"1\", ", ""), "xmax: the boundary part is missing");
  bad("part", replace("\"xmax\"", "\"top\""), "neumann.top: unknown boundary part");
  bad("allneumann", replace("\"dirichlet\": {\"xmin\": \"0\", \"ymax\": \"x\"}, \"neumann\": {", "\"neumann\": {\"xmin\": \"0\", \"ymax\": \"x\", "), "make at least one part Dirichlet");
  bad("expr", replace("\"1 + x*y\"", "\"1 + x*\""), "coefficient");
  bad("name", replace("\"rhs\": \"0\"", "\"rhs\": \"q*x\""), "rhs: Unexpected token \"q\"");
  bad("coef", replace("\"1 + x*y\"", "\"-2\""), "coefficient: must be positive");
  bad("cells", replace("[4, 2]", "[4]"), "geometry.cells");
  bad("box", replace("[[0, 1], [0, 1]]", "[[1, 0], [0, 1]]"), "lower < upper");
  bad("mesh", R"({"dim": 2, "mesh": "a.msh", "dirichlet": {}})", "built without Gmsh");
  bad("dim", valid_2d, "the file is for dim 2", 3);
  expect_input_error([] { problem::read_problem_file("/nonexistent/p.json"); }, "cannot read");
}

// ---- discretization -----------------------------------------------------------------------------

// The quarter annulus 1 <= r <= 2 of the first quadrant (extruded in 3D), a = 1 + x y (1..5),
// u = exp(x) sin(y) (+ z^2 in 3D); Dirichlet on xmin (r = 1), ymax (x = 0) and zmin, Neumann on
// xmax (r = 2), ymin (y = 0) and zmax.
template <int dim>
problem::ProblemFile annulus_problem(int degree, int n) {
  problem::ProblemFile f;
  f.path = "annulus";
  f.dim = dim;
  f.degree = degree;
  f.box.assign(dim, {0.0, 1.0});
  f.cells.assign(dim, n);
  f.map = {"(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)"};
  f.coefficient = "1 + x*y";
  const std::string u = dim == 2 ? "exp(x)*sin(y)" : "exp(x)*sin(y) + z^2";
  f.rhs = dim == 2 ? "-(y*exp(x)*sin(y) + x*exp(x)*cos(y))" : "-(y*exp(x)*sin(y) + x*exp(x)*cos(y) + 2*(1+x*y))";
  f.dirichlet = {{"xmin", u}, {"ymax", u}};
  f.neumann = {{"xmax", "(1+x*y)*exp(x)*(x*sin(y) + y*cos(y))/2"}, {"ymin", "-(1+x*y)*exp(x)*cos(y)"}};
  if (dim == 3) {
    f.map.push_back("z");
    f.dirichlet["zmin"] = u;
    f.neumann["zmax"] = "2*(1+x*y)*z";
  }
  f.exact = u;
  return f;
}

template <int dim>
problem::Errors solve_annulus(fe::Disc disc, int k, int n, bool multigrid = false) {
  const auto prob = problem::make_problem<dim>(annulus_problem<dim>(k, n));
  mesh::BoxMesh<dim> mesh(prob.cells, prob.domain);
  fe::DofLayout<dim> dofs(mesh, disc, k, prob.dirichlet_faces);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  cfg.coefficient = prob.coefficient;
  operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  EXPECT_EQ(A.path(), operators::Path::general);
  auto sys = problem::assemble_system<dim>(mesh, dofs, cfg, prob);
  Vector<double> x(dofs.n_local());
  solvers::SolverControl control;
  control.tolerance = 1e-12;
  control.max_iterations = 20000;
  if (multigrid) {
    multigrid::MultigridSolveSettings s;
    s.solver = multigrid::OuterSolver::fgmres;
    s.start = multigrid::StartKind::fmg;
    s.multigrid.smoother.kind = multigrid::SmootherKind::chebyshev;
    const auto r = multigrid::solve_with_multigrid<dim>(mesh, cfg, A, sys.rhs, x, s, control);
    EXPECT_TRUE(r.result.converged);
    EXPECT_LE(r.result.iterations, 40);
  } else {
    Vector<double> diag;
    A.compute_diagonal(diag);
    solvers::JacobiPreconditioner<double> P(diag);
    EXPECT_TRUE(solvers::solve_cg(A, x, sys.rhs, P, control).converged);
  }
  if (disc == fe::Disc::cg)
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += sys.lift[i];
  return problem::compute_errors<dim>(mesh, dofs, x, prob.exact, prob.exact_gradient);
}

struct RateCase {
  int dim;
  fe::Disc disc;
  int k;
  int n0;
};

class AnnulusRates : public ::testing::TestWithParam<RateCase> {};

TEST_P(AnnulusRates, OptimalOrders) {
  const auto c = GetParam();
  const auto e0 = c.dim == 2 ? solve_annulus<2>(c.disc, c.k, c.n0) : solve_annulus<3>(c.disc, c.k, c.n0);
  const auto e1 = c.dim == 2 ? solve_annulus<2>(c.disc, c.k, 2 * c.n0) : solve_annulus<3>(c.disc, c.k, 2 * c.n0);
  const double r0 = std::log2(e0.l2 / e1.l2), r1 = std::log2(e0.h1_semi / e1.h1_semi);
  EXPECT_GT(r0, c.k + 1 - 0.3) << "L2 " << e0.l2 << " -> " << e1.l2;
  EXPECT_GT(r1, c.k - 0.3) << "H1 " << e0.h1_semi << " -> " << e1.h1_semi;
  EXPECT_LT(r0, c.k + 1 + 0.6);
}

INSTANTIATE_TEST_SUITE_P(Problem, AnnulusRates,
                         ::testing::Values(RateCase{2, fe::Disc::cg, 1, 8}, RateCase{2, fe::Disc::cg, 2, 4},
                                           RateCase{2, fe::Disc::cg, 4, 4}, RateCase{2, fe::Disc::dg, 2, 4},
                                           RateCase{2, fe::Disc::dg, 3, 4}, RateCase{3, fe::Disc::cg, 2, 4},
                                           RateCase{3, fe::Disc::dg, 2, 4}));

TEST(Problem, MultigridSolvesTheAnnulus) {
  const auto cg = solve_annulus<2>(fe::Disc::cg, 3, 8, true);
  const auto ref = solve_annulus<2>(fe::Disc::cg, 3, 8, false);
  EXPECT_NEAR(cg.l2, ref.l2, 1e-3 * ref.l2);
  const auto dg = solve_annulus<2>(fe::Disc::dg, 2, 8, true);
  const auto dref = solve_annulus<2>(fe::Disc::dg, 2, 8, false);
  EXPECT_NEAR(dg.l2, dref.l2, 1e-3 * dref.l2);
}

// The matrix-free operator with a variable coefficient and Neumann faces equals the assembled one.
template <int dim>
void compare_with_assembled(fe::Disc disc) {
  const auto prob = problem::make_problem<dim>(annulus_problem<dim>(2, 3));
  mesh::BoxMesh<dim> mesh(prob.cells, prob.domain);
  fe::DofLayout<dim> dofs(mesh, disc, 2, prob.dirichlet_faces);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = 2;
  cfg.coefficient = prob.coefficient;
  operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const auto M = operators::assemble_operator<dim>(mesh, dofs, cfg, operators::Form::laplace);
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<double> u(dofs.n_local()), y(dofs.n_local()), z(dofs.n_local());
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = dist(gen);
  A.vmult(y, u);
  M.vmult(z, u);
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    diff = std::max(diff, std::abs(y[i] - z[i]));
    norm = std::max(norm, std::abs(z[i]));
  }
  EXPECT_LT(diff, 1e-12 * norm);
  Vector<double> d;
  A.compute_diagonal(d);
  const auto dm = M.diagonal();
  for (std::size_t i = 0; i < d.size(); ++i) ASSERT_NEAR(d[i], dm[i], 1e-12 * norm) << i;
}

TEST(Problem, MatrixFreeEqualsAssembledCg2D) { compare_with_assembled<2>(fe::Disc::cg); }
TEST(Problem, MatrixFreeEqualsAssembledDg2D) { compare_with_assembled<2>(fe::Disc::dg); }
TEST(Problem, MatrixFreeEqualsAssembledDg3D) { compare_with_assembled<3>(fe::Disc::dg); }

TEST(Problem, NonPositiveCoefficientNamesThePoint) {
  auto f = annulus_problem<2>(2, 2);
  f.coefficient = "x - 0.5";
  const auto prob = problem::make_problem<2>(f);
  mesh::BoxMesh<2> mesh(prob.cells, prob.domain);
  fe::DofLayout<2> dofs(mesh, fe::Disc::cg, 2, prob.dirichlet_faces);
  operators::OperatorConfig cfg;
  cfg.degree = 2;
  cfg.coefficient = prob.coefficient;
  expect_input_error([&] { operators::LaplaceOperator<2, double> A(mesh, dofs, cfg, operators::Form::laplace); },
                     "coefficient: a = ");
}

TEST(Problem, InvertedMapNamesTheCell) {
  auto f = annulus_problem<2>(2, 2);
  f.map = {"y", "x"};  // a reflection: det J < 0
  const auto prob = problem::make_problem<2>(f);
  mesh::BoxMesh<2> mesh(prob.cells, prob.domain);
  fe::DofLayout<2> dofs(mesh, fe::Disc::cg, 2, prob.dirichlet_faces);
  operators::OperatorConfig cfg;
  cfg.degree = 2;
  expect_input_error([&] { operators::LaplaceOperator<2, double> A(mesh, dofs, cfg, operators::Form::laplace); },
                     "mesh cell (0,0) is inverted");
}

// Neumann faces leave their nodes free; a box that is not a cube, with bounds.
TEST(Problem, BoxBoundsAndNeumannMask) {
  mesh::BoxMesh<2> mesh({4, 2}, mesh::Domain<2>::box({-1.0, 2.0}, {3.0, 3.0}));
  EXPECT_DOUBLE_EQ(mesh.cell_size()[0], 1.0);
  EXPECT_DOUBLE_EQ(mesh.cell_size()[1], 0.5);
  fe::DirichletFaces<2> dir{true, false, false, true};
  fe::DofLayout<2> dofs(mesh, fe::Disc::cg, 1, dir);
  const auto& m = dofs.boundary_mask();
  // lattice 5 x 3: x = 0 column constrained, y = top row constrained, the rest free
  for (long j = 0; j < 3; ++j)
    for (long i = 0; i < 5; ++i) EXPECT_EQ(m[dofs.lattice_index({i, j})] != 0, i == 0 || j == 2) << i << " " << j;
}

}  // namespace
