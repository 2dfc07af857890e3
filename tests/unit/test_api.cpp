// The public API (include/tcfem/tcfem.h) through the shared library: a problem from callables and
// from a problem file give the same solution; bad input throws tcfem::InputError naming the item.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <tcfem/tcfem.h>

namespace {

using P = tcfem::Point<2>;

tcfem::Problem<2> square_problem(int cells) {
  tcfem::Problem<2> p(tcfem::Geometry<2>::box({0.0, -1.0}, {2.0, 1.0}, {cells, cells}));
  auto u = [](const P& x) { return std::sin(x[0]) * std::cosh(x[1]); };  // harmonic
  p.constant_coefficient = 2.0;
  p.dirichlet = {{"xmin", u}, {"xmax", u}, {"ymin", u}};
  p.neumann = {{"ymax", [](const P& x) { return 2.0 * std::sin(x[0]) * std::sinh(x[1]); }}};
  p.exact = u;
  return p;
}

void expect_input_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no InputError (expected one mentioning \"" << part << "\")";
  } catch (const tcfem::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Api, CallablesAndProblemFileAgree) {
  tcfem::SolverSettings s;
  s.degree = 3;
  s.backend = tcfem::Backend::cpu;
  s.tolerance = 1e-11;
  const auto r = tcfem::solve(square_problem(4), s);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_EQ(r.n_dofs, 13u * 13u);
  ASSERT_TRUE(r.l2_error.has_value());
  EXPECT_LT(*r.l2_error, 1e-4);
  EXPECT_EQ(r.cell_node_values.size(), 16u * 16u);
  const auto path = (std::filesystem::temp_directory_path() / "tcfem_test_api.json").string();
  std::ofstream(path) << R"json({"dim": 2, "degree": 3, "geometry": {"box": [[0, 2], [-1, 1]], "cells": [4, 4]},
    "coefficient": 2, "rhs": 0, "dirichlet": {"xmin": "sin(x)*cosh(y)", "xmax": "sin(x)*cosh(y)", "ymin": "sin(x)*cosh(y)"},
    "neumann": {"ymax": "2*sin(x)*sinh(y)"}, "exact": "sin(x)*cosh(y)"})json";
  int degree = 0;
  const auto p = tcfem::read_problem<2>(path, &degree);
  EXPECT_EQ(degree, 3);
  EXPECT_EQ(p.geometry.boundary_parts().size(), 4u);
  const auto q = tcfem::solve(p, s);
  EXPECT_NEAR(*q.l2_error, *r.l2_error, 1e-9 * *r.l2_error);
  for (std::size_t i = 0; i < r.cell_node_values.size(); ++i)
    ASSERT_NEAR(q.cell_node_values[i], r.cell_node_values[i], 1e-9) << i;
  // refined: the error falls at rate k + 1
  const auto f = tcfem::solve(square_problem(8), s);
  EXPECT_GT(std::log2(*r.l2_error / *f.l2_error), 3.6);
}

TEST(Api, BadInputThrowsInputError) {
  expect_input_error([] { tcfem::Geometry<2>::box({0, 0}, {1, 1}, {0, 2}); }, "cells[0]");
  expect_input_error([] { tcfem::Geometry<2>::box({1, 0}, {1, 1}, {2, 2}); }, "lower < upper");
  const auto g = tcfem::Geometry<2>::box({0, 0}, {1, 1}, {2, 2}).mapped([](const P& x) { return x; });
  expect_input_error([&] { g.mapped([](const P& x) { return x; }); }, "mapped already");
  tcfem::SolverSettings s;
  s.backend = tcfem::Backend::cpu;
  auto p = square_problem(2);
  p.neumann.clear();
  expect_input_error([&] { tcfem::solve(p, s); }, "ymax: the boundary part is missing");
  p = square_problem(2);
  p.dirichlet["top"] = p.exact;
  expect_input_error([&] { tcfem::solve(p, s); }, "dirichlet.top: unknown boundary part");
  p = square_problem(2);
  p.coefficient = [](const P& x) { return x[0] - 1.0; };
  expect_input_error([&] { tcfem::solve(p, s); }, "coefficient");
  p = square_problem(2);
  s.degree = 9;
  expect_input_error([&] { tcfem::solve(p, s); }, "degree");
  expect_input_error([] { tcfem::read_problem<2>("/nonexistent/p.json"); }, "cannot read");
}

}  // namespace
