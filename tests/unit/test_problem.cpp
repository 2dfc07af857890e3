// The user's problem: expressions, problem files, and the discretization of -div(a grad u) = f with
// Dirichlet and Neumann data on mapped boxes, checked by convergence rates (cg and dg, 2D and 3D),
// by the assembled reference matrix and by the multigrid solvers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "core/error.h"
#include "multigrid/host/multigrid_solve.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cpu/sparse_matrix.h"
#include "problem/boundary_value_problem.h"
#include "problem/expression.h"
#include "problem/problem_file.h"
#include "solvers/cg.h"
#include "mesh/structured_block.h"
#ifdef TCFEM_TEST_GMSH
#include "io/gmsh_reader.h"
#include "support/gmsh_meshes.h"
#endif

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

/// Expressions covering every function and operation of the language (valid on [0.1, 0.9]^3).
const std::vector<std::string>& language_corpus() {
  static const std::vector<std::string> c = {
      "x*y + z^2", "-x^2 + 3", "2*x + 1", "x^3 - y^4 / (1 + z)", "sin(pi*x)*cos(y) + tan(z)",
      "asin(x) + acos(y) + atan(z) + atan2(y, x)", "sinh(x) - cosh(y) * tanh(z)", "asinh(x) + acosh(1 + y) + atanh(z/2)",
      "exp(x) + log(y) + ln(z) + log2(x) + log10(y)", "sqrt(x*y) + abs(y - z) + sign(x - 0.5) + rint(10*z)",
      "pow(x, y) + pow(2, z) + e^x - _pi + _e", "min(x, y) + max(x, y, z) + sum(x, y, z, 1) + avg(x, y)",
      "x < 0.5 ? x*y : (y > 0.3 ? y : z)", "(x <= y) + (x >= z) + (x == y) + (x != z) + (x < y && y < z) + (x > y || z > y)",
      "+x - -y", "1e-3*x + 2.5e2*y*z", "2*pi*3", "(1+x)*cos(pi/2*y)", "1 + 9*(x*x + y*y - 1)/3"};
  return c;
}

TEST(Expression, DeviceSourceMatchesTheParsedExpression) {
  // the translation read back by muparser computes the same values, bit for bit
  std::mt19937 rng(20261124);
  std::uniform_real_distribution<double> coordinate(0.1, 0.9);
  for (const auto& text : language_corpus()) {
    const problem::Expression e("k", text, 3);
    const std::string back_text = e.source(problem::ExpressionDialect::muparser);
    const problem::Expression back("k", back_text, 3);
    for (int i = 0; i < 50; ++i) {
      const double x[3] = {coordinate(rng), coordinate(rng), coordinate(rng)};
      ASSERT_EQ(e(x), back(x)) << text << " -> " << back_text;
    }
    // the CUDA text uses the coordinates x[d], function calls and hexadecimal constants only
    const std::string cuda = e.source(problem::ExpressionDialect::cuda);
    EXPECT_EQ(cuda.find('^'), std::string::npos) << cuda;
    EXPECT_EQ(cuda.find('y'), std::string::npos) << cuda;
    EXPECT_EQ(cuda.find("_pi"), std::string::npos) << cuda;
  }
  EXPECT_EQ(problem::Expression("k", "x^2", 2).source(problem::ExpressionDialect::cuda), "(x[0] * x[0])");
  EXPECT_EQ(problem::Expression("k", "2*pi", 2).source(problem::ExpressionDialect::cuda), "(0x1.921fb54442d18p+2)");
  EXPECT_EQ(problem::Expression("k", "x^y", 2).source(problem::ExpressionDialect::cuda), "pow(x[0], x[1])");
  EXPECT_EQ(problem::Expression("k", "min(x, y, 1)", 2).source(problem::ExpressionDialect::cuda),
            "tcfem_min(tcfem_min(x[0], x[1]), (0x1p+0))");
  EXPECT_EQ(problem::Expression("k", "x < 1 ? y : 2", 2).source(problem::ExpressionDialect::cuda),
            "((((x[0] < (0x1p+0)) ? 1.0 : 0.0) != 0.0) ? x[1] : (0x1p+1))");
  expect_input_error([] { problem::Expression("rhs", "x, y", 2); }, "one expression expected");
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
#ifdef TCFEM_TEST_GMSH
  bad("mesh", R"({"dim": 2, "mesh": "/nonexistent/a.msh", "dirichlet": {}})", "/nonexistent/a.msh: cannot read the file");
#else
  bad("mesh", R"({"dim": 2, "mesh": "a.msh", "dirichlet": {}})", "built without Gmsh");
#endif
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
problem::Errors solve_problem(const problem::ProblemFile& file, fe::Disc disc, int k, bool multigrid = false) {
  const auto prob = problem::make_problem<dim>(file);
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

template <int dim>
problem::Errors solve_annulus(fe::Disc disc, int k, int n, bool multigrid = false) {
  return solve_problem<dim>(annulus_problem<dim>(k, n), disc, k, multigrid);
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

// ---- structured blocks from cell lists -------------------------------------------------------------

// An nx x ny grid of quadrilaterals of the affine image of [0, nx] x [0, ny], listed in random order,
// each cell in a random orientation (one of the 8 symmetries of the square), with node numbers
// shuffled and the boundary parts west, east, south, north.
mesh::HexMesh<2> scrambled_grid(int nx, int ny, unsigned seed) {
  std::mt19937 gen(seed);
  auto phi = [](double X, double Y) { return mesh::Point<2>{X + 0.3 * Y, 0.2 * X + Y}; };
  const int n_nodes = (nx + 1) * (ny + 1);
  std::vector<std::size_t> perm(n_nodes);
  for (int i = 0; i < n_nodes; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), gen);
  mesh::HexMesh<2> m;
  m.source = "grid";
  m.nodes.resize(n_nodes);
  auto node = [&](int i, int j) { return perm[j * (nx + 1) + i]; };
  for (int j = 0; j <= ny; ++j)
    for (int i = 0; i <= nx; ++i) m.nodes[node(i, j)] = phi(i, j);
  std::vector<int> order(nx * ny);
  for (int c = 0; c < nx * ny; ++c) order[c] = c;
  std::shuffle(order.begin(), order.end(), gen);
  for (int c : order) {
    const int i = c % nx, j = c / nx;
    const bool swap = gen() % 2, flip0 = gen() % 2, flip1 = gen() % 2;
    for (int t = 0; t < 4; ++t) {
      int a = t & 1, b = (t >> 1) & 1;  // the cell's reference corner
      if (swap) std::swap(a, b);
      if (flip0) a = 1 - a;
      if (flip1) b = 1 - b;
      m.cell_nodes.push_back(node(i + a, j + b));
    }
    m.cell_tags.push_back(100 + c);
  }
  for (int i = 0; i < nx; ++i) {
    m.boundary.push_back({"south", {node(i, 0), node(i + 1, 0)}});
    m.boundary.push_back({"north", {node(i + 1, ny), node(i, ny)}});
  }
  for (int j = 0; j < ny; ++j) {
    m.boundary.push_back({"west", {node(0, j), node(0, j + 1)}});
    m.boundary.push_back({"east", {node(nx, j + 1), node(nx, j)}});
  }
  return m;
}

TEST(StructuredBlock, RecognizesScrambledGridsInEveryOrientation) {
  for (unsigned seed = 1; seed <= 12; ++seed) {
    const auto m = scrambled_grid(3, 2, seed);
    const auto blk = mesh::StructuredBlock<2>::recognize(m);
    const auto n = blk.cells();
    ASSERT_TRUE((n == std::array<int, 2>{3, 2} || n == std::array<int, 2>{2, 3})) << n[0] << " x " << n[1];
    // the cell centres are those of the grid, and the map is positive and continuous
    std::vector<mesh::Point<2>> want, got;
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 3; ++i) want.push_back({i + 0.5 + 0.3 * (j + 0.5), 0.2 * (i + 0.5) + j + 0.5});
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) {
        got.push_back(blk.map({i + 0.5, j + 0.5}));
        const auto a = blk.map({i + 0.51, j + 0.5}), b = blk.map({i + 0.49, j + 0.5});
        const auto c = blk.map({i + 0.5, j + 0.51}), d = blk.map({i + 0.5, j + 0.49});
        EXPECT_GT((a[0] - b[0]) * (c[1] - d[1]) - (a[1] - b[1]) * (c[0] - d[0]), 0.0) << "seed " << seed;
      }
    for (const auto& w : want) {
      double best = 1e9;
      for (const auto& g : got) best = std::min(best, std::hypot(w[0] - g[0], w[1] - g[1]));
      EXPECT_LT(best, 1e-12) << "seed " << seed;
    }
    // every block face carries the name of the grid face it lies on
    for (int f = 0; f < 4; ++f) {
      mesh::Point<2> X{n[0] / 2.0, n[1] / 2.0};
      X[f / 2] = f % 2 ? n[f / 2] : 0.0;
      const auto x = blk.map(X);
      // back to the grid's parameters (phi is affine)
      const double det = 1.0 - 0.06, gx = (x[0] - 0.3 * x[1]) / det, gy = (x[1] - 0.2 * x[0]) / det;
      const std::string expect = std::abs(gx) < 1e-9 ? "west" : std::abs(gx - 3) < 1e-9 ? "east" : std::abs(gy) < 1e-9 ? "south" : "north";
      EXPECT_EQ(blk.face_parts()[f], expect) << "seed " << seed << " face " << f;
    }
  }
}

TEST(StructuredBlock, RefusesMeshesThatAreNotOneBlock) {
  // three quadrilaterals of a triangle meet at its centre: a node of valence 3
  mesh::HexMesh<2> m;
  m.source = "tri";
  m.nodes = {{0, 0}, {2, 0}, {1, 2}, {1, 0}, {1.5, 1}, {0.5, 1}, {1, 0.7}};  // A B C, mid AB BC CA, centre
  m.cell_nodes = {0, 3, 5, 6, 1, 4, 3, 6, 2, 5, 4, 6};
  m.cell_tags = {1, 2, 3};
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 3}, {3, 1}, {1, 4}, {4, 2}, {2, 5}, {5, 0}})
    m.boundary.push_back({"wall", {std::size_t(a), std::size_t(b)}});
  expect_input_error([&] { mesh::StructuredBlock<2>::recognize(m); }, "mesh tri: not one structured block");
  // two blocks that do not touch
  auto two = scrambled_grid(2, 2, 3);
  const auto other = scrambled_grid(1, 1, 4);
  const std::size_t off = two.nodes.size();
  two.nodes.insert(two.nodes.end(), other.nodes.begin(), other.nodes.end());
  for (auto n : other.cell_nodes) two.cell_nodes.push_back(n + off);
  two.cell_tags.push_back(999);
  expect_input_error([&] { mesh::StructuredBlock<2>::recognize(two); }, "more than one connected piece");
  // a block face split between two parts, and a face in no part
  auto split = scrambled_grid(2, 1, 5);
  for (auto& f : split.boundary)
    if (f.part == "south") {
      f.part = "south2";
      break;
    }
  expect_input_error([&] { mesh::StructuredBlock<2>::recognize(split); }, "is split between the physical groups");
  auto unnamed = scrambled_grid(2, 1, 6);
  std::erase_if(unnamed.boundary, [](const auto& f) { return f.part == "east"; });
  expect_input_error([&] { mesh::StructuredBlock<2>::recognize(unnamed); }, "is in no physical group");
}

#ifdef TCFEM_TEST_GMSH
// ---- Gmsh meshes ---------------------------------------------------------------------------------

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tcfem_test_" + name)).string();
}

TEST(GmshMesh, ReadsTheStructuredAnnulusInBothFormats) {
  for (int dim : {2, 3})
    for (int order : {1, 2})
      for (double version : {2.2, 4.1}) {
        const auto path = temp_file("annulus_read.msh");
        test_meshes::write_annulus_mesh(path, dim, 3, order, version);
        const std::string what = std::to_string(dim) + "D order " + std::to_string(order) + " msh " + std::to_string(version);
        auto check = [&](auto blk) {
          for (int d = 0; d < dim; ++d) EXPECT_EQ(blk.cells()[d], 3) << what;
          EXPECT_EQ(blk.order(), order);
          std::set<std::string> parts(blk.face_parts().begin(), blk.face_parts().end());
          const std::set<std::string> want = dim == 2 ? std::set<std::string>{"bottom", "inner", "left", "outer"}
                                                      : std::set<std::string>{"bottom", "inner", "left", "outer", "zlow", "ztop"};
          EXPECT_EQ(parts, want) << what;
          // the faces named inner and outer lie on r = 1 and r = 2 at the mesh's nodes
          for (int f = 0; f < 2 * dim; ++f) {
            const auto& name = blk.face_parts()[f];
            if (name != "inner" && name != "outer") continue;
            for (int a = 0; a <= 3 * order; ++a) {
              typename std::decay_t<decltype(blk.map({}))> X{};
              for (int d = 0; d < dim; ++d) X[d] = double(a) / order;
              X[f / 2] = f % 2 ? 3.0 : 0.0;
              const auto x = blk.map(X);
              EXPECT_NEAR(std::hypot(x[0], x[1]), name == "inner" ? 1.0 : 2.0, 1e-9) << what;
            }
          }
        };
        if (dim == 2) {
          const auto m = io::read_gmsh_mesh<2>(path);
          EXPECT_EQ(m.n_cells(), 9u);
          check(mesh::StructuredBlock<2>::recognize(m));
        } else {
          const auto m = io::read_gmsh_mesh<3>(path);
          EXPECT_EQ(m.n_cells(), 27u);
          check(mesh::StructuredBlock<3>::recognize(m));
        }
      }
}

// annulus_problem's data on a Gmsh mesh of the annulus: its parts are the physical groups
template <int dim>
problem::ProblemFile gmsh_annulus_problem(int k, int n, int order) {
  const std::string stem = "annulus_" + std::to_string(dim) + "d_" + std::to_string(n) + "_" + std::to_string(order);
  test_meshes::write_annulus_mesh(temp_file(stem + ".msh"), dim, n, order, 4.1);
  const auto box = annulus_problem<dim>(k, n);
  const std::map<std::string, std::string> names = {{"xmin", "inner"}, {"xmax", "outer"}, {"ymin", "bottom"},
                                                    {"ymax", "left"},  {"zmin", "zlow"},  {"zmax", "ztop"}};
  auto parts = [&](const std::map<std::string, std::string>& p) {
    std::string s;
    for (const auto& [face, text] : p) s += (s.empty() ? "" : ", ") + ("\"" + names.at(face) + "\": \"" + text + "\"");
    return "{" + s + "}";
  };
  const std::string json = "{\"dim\": " + std::to_string(dim) + ", \"degree\": " + std::to_string(k) +
                           ", \"mesh\": \"tcfem_test_" + stem + ".msh\", \"coefficient\": \"" + box.coefficient +
                           "\", \"rhs\": \"" + box.rhs + "\", \"dirichlet\": " + parts(box.dirichlet) +
                           ", \"neumann\": " + parts(box.neumann) + ", \"exact\": \"" + *box.exact + "\"}";
  return problem::read_problem_file(write_temp(stem, json));  // the mesh path is relative to the file's folder
}

struct GmshRateCase {
  int dim;
  fe::Disc disc;
  int k;
  int order;
  int n0;
};

class GmshAnnulusRates : public ::testing::TestWithParam<GmshRateCase> {};

TEST_P(GmshAnnulusRates, OptimalOrders) {
  const auto c = GetParam();
  auto errors = [&](int n) {
    return c.dim == 2 ? solve_problem<2>(gmsh_annulus_problem<2>(c.k, n, c.order), c.disc, c.k)
                      : solve_problem<3>(gmsh_annulus_problem<3>(c.k, n, c.order), c.disc, c.k);
  };
  const auto e0 = errors(c.n0), e1 = errors(2 * c.n0);
  const double r0 = std::log2(e0.l2 / e1.l2), r1 = std::log2(e0.h1_semi / e1.h1_semi);
  EXPECT_GT(r0, c.k + 1 - 0.3) << "L2 " << e0.l2 << " -> " << e1.l2;
  EXPECT_GT(r1, c.k - 0.3) << "H1 " << e0.h1_semi << " -> " << e1.h1_semi;
}

INSTANTIATE_TEST_SUITE_P(Problem, GmshAnnulusRates,
                         ::testing::Values(GmshRateCase{2, fe::Disc::cg, 1, 1, 8}, GmshRateCase{2, fe::Disc::cg, 2, 2, 4},
                                           GmshRateCase{2, fe::Disc::dg, 2, 2, 4}, GmshRateCase{3, fe::Disc::cg, 2, 2, 4},
                                           GmshRateCase{3, fe::Disc::dg, 1, 1, 2}));

TEST(GmshMesh, MultigridSolvesOnTheMesh) {
  const auto f = gmsh_annulus_problem<2>(2, 8, 2);
  const auto mg = solve_problem<2>(f, fe::Disc::cg, 2, true);
  const auto ref = solve_problem<2>(f, fe::Disc::cg, 2, false);
  EXPECT_NEAR(mg.l2, ref.l2, 1e-3 * ref.l2);
}

TEST(GmshMesh, BadMeshesGetTheirErrors) {
  auto read = [](int dim, const std::string& path) {
    if (dim == 2)
      mesh::StructuredBlock<2>::recognize(io::read_gmsh_mesh<2>(path));
    else
      mesh::StructuredBlock<3>::recognize(io::read_gmsh_mesh<3>(path));
  };
  for (int dim : {2, 3}) {
    const auto unstructured = temp_file("unstructured.msh"), simplex = temp_file("simplex.msh");
    test_meshes::write_unstructured_hex_mesh(unstructured, dim);
    expect_input_error([&] { read(dim, unstructured); }, "not one structured block");
    test_meshes::write_simplex_mesh(simplex, dim);
    expect_input_error([&] { read(dim, simplex); }, dim == 2 ? "triangles" : "tetrahedra");
  }
  const auto garbage = temp_file("garbage.msh");
  std::ofstream(garbage) << "$MeshFormat\nnot a mesh\n";
  expect_input_error([&] { read(2, garbage); }, "Gmsh cannot read it");
  expect_input_error([&] { read(2, "/nonexistent/m.msh"); }, "cannot read the file");
  const auto annulus2d = temp_file("annulus_2d_for_3d.msh");
  test_meshes::write_annulus_mesh(annulus2d, 2, 2, 1, 4.1);
  expect_input_error([&] { read(3, annulus2d); }, "no 3D cells");
  // the problem file names box faces instead of the mesh's parts, or forgets one
  auto f = gmsh_annulus_problem<2>(1, 2, 1);
  f.dirichlet["xmin"] = "0";
  expect_input_error([&] { problem::make_problem<2>(f); }, "dirichlet.xmin: unknown boundary part; the parts of the mesh");
  f.dirichlet.erase("xmin");
  f.dirichlet.erase("inner");
  expect_input_error([&] { problem::make_problem<2>(f); }, "inner: the boundary part is missing");
}
#endif

}  // namespace
