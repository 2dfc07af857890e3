// The device setup (label gpu): expressions compiled with NVRTC against muparser, and the
// right-hand side and the errors computed on the device against the CPU code (problem files with
// maps, variable coefficients and mixed data, cg and dg, 2D and 3D; the built-in problem on the
// deformed box; C++ callables evaluated on the host threads), on fresh random data, poisoned
// outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "core/jit.h"
#include "operators/device/device_operator.h"
#include "operators/device/device_points.h"
#include "problem/boundary_value_problem.h"
#include "problem/device_problem.h"
#include "problem/expression.h"
#include "problem/poisson.h"
#include "problem/problem_file.h"

namespace {
using namespace tcfem;

bool have_device() { return query_device(0).available; }

TEST(DeviceExpressions, CompiledExpressionsMatchMuparser) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const std::vector<std::string> corpus = {
      "x*y + z^2", "-x^2 + 3", "2*x + 1", "x^3 - y^4 / (1 + z)", "sin(pi*x)*cos(y) + tan(z)",
      "asin(x) + acos(y) + atan(z) + atan2(y, x)", "sinh(x) - cosh(y) * tanh(z)",
      "asinh(x) + acosh(1 + y) + atanh(z/2)", "exp(x) + log(y) + ln(z) + log2(x) + log10(y)",
      "sqrt(x*y) + abs(y - z) + sign(x - 0.5) + rint(10*z)", "pow(x, y) + pow(2, z) + e^x - _pi + _e",
      "min(x, y) + max(x, y, z) + sum(x, y, z, 1) + avg(x, y)", "x < 0.5 ? x*y : (y > 0.3 ? y : z)",
      "(x <= y) + (x >= z) + (x == y) + (x != z) + (x < y && y < z) + (x > y || z > y)"};
  jit::PointFunctions functions;
  std::vector<problem::Expression> exprs;
  for (const auto& t : corpus) {
    exprs.emplace_back("k", t, 3);
    functions.add(exprs.back().source(problem::ExpressionDialect::cuda), 3);
  }
  functions.compile(problem::Expression::device_prelude());
  const std::size_t n = 4096;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> coordinate(0.1, 0.9);
  std::vector<double> p(3 * n);
  for (auto& v : p) v = coordinate(rng);
  DeviceBuffer<double> d_p(p), d_out(3 * n);
  for (std::size_t f = 0; f < corpus.size(); ++f) {
    std::vector<double> poison(3 * n, std::numeric_limits<double>::quiet_NaN());
    d_out.copy_from_host(poison.data(), poison.size());
    ASSERT_EQ(functions.evaluate(int(f), d_p.data(), n, n, d_out.data()), -1) << corpus[f];
    std::vector<double> out(n);
    d_out.copy_to_host(out.data(), n);
    double worst = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double x[3] = {p[i], p[n + i], p[2 * n + i]};
      const double ref = exprs[f](x);
      worst = std::max(worst, std::abs(out[i] - ref) / std::max(1.0, std::abs(ref)));
    }
    EXPECT_LT(worst, 1e-14) << corpus[f];
    // gradients by differences, against the host's
    ASSERT_EQ(functions.gradient(int(f), d_p.data(), n, n, d_out.data()), -1) << corpus[f];
    d_out.copy_to_host(poison.data(), 3 * n);
    worst = 0.0;
    for (std::size_t i = 0; i < n; i += 7) {
      const double x[3] = {p[i], p[n + i], p[2 * n + i]};
      const auto g = problem::numerical_gradient(exprs[f], x);
      for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(poison[d * n + i] - g[d]) / std::max(1.0, std::abs(g[d])));
    }
    EXPECT_LT(worst, 1e-9) << corpus[f];
  }
  // a non-finite value is reported with its index
  problem::Expression bad("k", "log(x - 0.5)", 3);
  jit::PointFunctions m2;
  m2.add(bad.source(problem::ExpressionDialect::cuda), 3);
  m2.compile(problem::Expression::device_prelude());
  const std::int64_t i = m2.evaluate(0, d_p.data(), n, n, d_out.data());
  ASSERT_GE(i, 0);
  EXPECT_LE(p[i], 0.5);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("tcfem_device_" + name + ".json");
  std::ofstream(path) << text;
  return path.string();
}

/// b and the errors of the device setup against assemble_system and compute_errors: the cg
/// Dirichlet lift on the device through the unconstrained apply of every fp64 operator family
/// the key has (the Kronecker kernels through their generic twin), the Neumann terms and the
/// volume term on the device, the dg Nitsche terms of the host's boundary cells.
template <int dim>
void compare(const problem::ProblemDefinition<dim>* prob, const mesh::BoxMesh<dim>& mesh, fe::Disc disc, int k,
             fe::QuadratureKind quadrature = fe::QuadratureKind::gauss_k2) {
  fe::DofLayout<dim> dofs(mesh, disc, k, prob ? prob->dirichlet_faces : fe::all_dirichlet<dim>());
  operators::OperatorConfig cfg;
  cfg.degree = k;
  cfg.disc = disc;
  cfg.quadrature = quadrature;
  if (prob) {
    cfg.coefficient = prob->coefficient;
    cfg.coefficient_source = prob->coefficient_source;
  }
  Vector<double> b_ref, lift;
  if (prob) {
    auto sys = problem::assemble_system<dim>(mesh, dofs, cfg, *prob);
    b_ref = std::move(sys.rhs);
    lift = std::move(sys.lift);
  } else {
    b_ref = problem::assemble_rhs<dim>(mesh, dofs);
  }
  problem::DeviceProblem<dim> dp(mesh, dofs, prob);
  const std::size_t n = dofs.n_local();
  EXPECT_EQ(dp.has_lift(), prob && disc == fe::Disc::cg);
  const auto rule = prob ? problem::data_rule<dim>(mesh, dofs, cfg) : fe::gauss(k + 2);
  problem::BoundaryTerms terms;
  if (prob) terms = problem::assemble_boundary_terms<dim>(mesh, dofs, cfg, *prob);
  for (std::size_t j = 0; j < terms.cells.size(); ++j) {  // dg cells on Dirichlet faces only
    const auto c = mesh.cell_index(terms.cells[j]);
    bool dirichlet = false;
    for (int f = 0; f < 2 * dim; ++f)
      dirichlet |= dofs.dirichlet_faces()[f] && c[f / 2] == (f % 2 ? mesh.n_cells()[f / 2] - 1 : 0);
    ASSERT_TRUE(disc == fe::Disc::dg && dirichlet) << "a cell among the host's boundary cells that has no Nitsche term";
  }
  if (disc == fe::Disc::cg) EXPECT_TRUE(terms.cells.empty() && terms.rhs.empty());
  operators::DeviceKernelKey key;
  key.dim = dim;
  key.degree = k;
  key.disc = disc;
  key.quadrature = quadrature;
  operators::set_geometry(key, mesh, dofs, cfg);
  for (const auto variant : {operators::Variant::generic, operators::Variant::cuda_core}) {
    key.variant = variant;
    if (!operators::device_kernel_supported(key)) continue;
    const auto A = operators::make_device_operator<dim>(mesh, dofs, key, {}, cfg.coefficient, cfg.coefficient_source);
    // poisoned where the lift overwrites b, zero where the terms are added to it
    std::vector<double> poison(n, dp.has_lift() ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    DeviceBuffer<double> d_b(poison);
    dp.set_rhs_lift(d_b.data(), *A, cfg);
    dp.add_rhs_volume(d_b.data(), rule);
    dp.add_rhs_neumann(d_b.data(), rule);
    problem::add_cell_vectors<dim>(mesh, dofs, terms.cells, terms.rhs, d_b.data());
    problem::zero_constrained<dim>(mesh, dofs, d_b.data());
    std::vector<double> b(n);
    d_b.copy_to_host(b.data(), n);
    double scale = 0.0, diff = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      scale = std::max(scale, std::abs(b_ref[i]));
      diff = std::max(diff, std::abs(b[i] - b_ref[i]));
      if (!(diff == diff)) diff = std::numeric_limits<double>::infinity();
    }
    EXPECT_LT(diff, 1e-12 * scale) << "right-hand side, " << key.to_string();
    std::printf("  dim %d %s Q%d %s: b max difference %.2e (of %.2e)\n", dim, disc == fe::Disc::cg ? "cg" : "dg", k,
                key.to_string().c_str(), diff, scale);
  }
  // errors of a random vector (plus the lift, cg), poisoned constrained entries overwritten by the lift
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Vector<double> u(n);
  for (std::size_t i = 0; i < n; ++i) u[i] = value(rng);
  std::vector<double> u_dev(u.data(), u.data() + n);
  if (lift.size() == n) {
    const auto& mask = dofs.boundary_mask();
    for (std::size_t i = 0; i < n; ++i)
      if (mask[i]) {
        u[i] = lift[i];
        u_dev[i] = std::numeric_limits<double>::quiet_NaN();
      }
  }
  DeviceBuffer<double> d_u(u_dev);
  dp.set_lift(d_u.data());
  if (!dp.has_exact()) return;
  const auto ref = prob ? problem::compute_errors<dim>(mesh, dofs, u, prob->exact, prob->exact_gradient)
                        : problem::compute_errors<dim>(mesh, dofs, u);
  const auto got = dp.errors(d_u.data());
  EXPECT_NEAR(got.l2, ref.l2, 1e-11 * ref.l2);
  EXPECT_NEAR(got.h1_semi, ref.h1_semi, 1e-9 * ref.h1_semi);
  std::printf("  dim %d %s Q%d: L2 %.9e / %.9e, H1 %.9e / %.9e (%s)\n", dim, disc == fe::Disc::cg ? "cg" : "dg", k,
              got.l2, ref.l2, got.h1_semi, ref.h1_semi, dp.evaluation().c_str());
}

const char* annulus3 = R"json({"dim": 3, "degree": 3,
 "geometry": {"box": [[0, 1], [0, 1], [0, 1]], "cells": [3, 4, 2],
              "map": ["(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)", "z"]},
 "coefficient": "1 + 9*(x*x + y*y - 1)/3",
 "rhs": "-(6*(x*exp(x)*sin(y) + y*exp(x)*cos(y)) + 2*(1 + 9*(x*x + y*y - 1)/3))",
 "dirichlet": {"xmin": "exp(x)*sin(y) + z*z", "ymin": "exp(x)*sin(y) + z*z", "zmin": "exp(x)*sin(y) + z*z"},
 "neumann": {"xmax": "sin(x*y) + 1", "ymax": "x - z", "zmax": "2*z"},
 "exact": "exp(x)*sin(y) + z*z"})json";

const char* annulus2 = R"json({"dim": 2, "degree": 4,
 "geometry": {"box": [[0, 1], [0, 1]], "cells": [5, 3], "map": ["(1+x)*cos(pi/2*y)", "(1+x)*sin(pi/2*y)"]},
 "coefficient": "2", "rhs": "x*y + 1",
 "dirichlet": {"xmin": "x", "ymin": "y*y"}, "neumann": {"xmax": "x + y", "ymax": "1"},
 "exact": "x*y + sin(x)", "exact_gradient": ["y + cos(x)", "x"]})json";

TEST(DeviceProblem, MappedAnnulusWithMixedDataAgreesWithCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  const auto file = problem::read_problem_file(write_temp("annulus3", annulus3));
  const auto prob = problem::make_problem<3>(file);
  const mesh::BoxMesh<3> mesh(prob.cells, prob.domain);
  compare<3>(&prob, mesh, fe::Disc::cg, 3);
  compare<3>(&prob, mesh, fe::Disc::cg, 4, fe::QuadratureKind::gll_k1);
  compare<3>(&prob, mesh, fe::Disc::dg, 2);
  const auto file2 = problem::read_problem_file(write_temp("annulus2", annulus2));
  const auto prob2 = problem::make_problem<2>(file2);
  const mesh::BoxMesh<2> mesh2(prob2.cells, prob2.domain);
  compare<2>(&prob2, mesh2, fe::Disc::cg, 4);
  compare<2>(&prob2, mesh2, fe::Disc::dg, 5);
}

// A Cartesian box with Dirichlet data on every face and a constant coefficient: the Kronecker
// kernels, whose lift runs through the generic twin, and a box with Neumann parts.
const char* box3 = R"json({"dim": 3, "degree": 3,
 "geometry": {"box": [[0, 1], [0, 2], [0, 1]], "cells": [3, 4, 2]},
 "coefficient": "2", "rhs": "-4",
 "dirichlet": {"xmin": "U", "xmax": "U", "ymin": "U", "ymax": "U", "zmin": "U", "zmax": "U"},
 "exact": "U"})json";

const char* box3_mixed = R"json({"dim": 3, "degree": 2,
 "geometry": {"box": [[0, 1], [0, 2], [0, 1]], "cells": [3, 4, 2]},
 "coefficient": "1", "rhs": "-2",
 "dirichlet": {"xmin": "U", "ymin": "U", "ymax": "U", "zmin": "U", "zmax": "U"},
 "neumann": {"xmax": "exp(x)*sin(y)"},
 "exact": "U"})json";

TEST(DeviceProblem, DirichletLiftOnTheBoxAgreesWithCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::string text = box3;
  for (std::size_t at; (at = text.find("\"U\"")) != std::string::npos;) text.replace(at, 3, "\"exp(x)*sin(y) + z*z\"");
  const auto prob = problem::make_problem<3>(problem::read_problem_file(write_temp("box3", text)));
  const mesh::BoxMesh<3> mesh(prob.cells, prob.domain);
  compare<3>(&prob, mesh, fe::Disc::cg, 3);
  compare<3>(&prob, mesh, fe::Disc::cg, 5);
  std::string mixed = box3_mixed;
  for (std::size_t at; (at = mixed.find("\"U\"")) != std::string::npos;) mixed.replace(at, 3, "\"exp(x)*sin(y) + z*z\"");
  const auto prob2 = problem::make_problem<3>(problem::read_problem_file(write_temp("box3m", mixed)));
  const mesh::BoxMesh<3> mesh2(prob2.cells, prob2.domain);
  compare<3>(&prob2, mesh2, fe::Disc::cg, 2);
}

TEST(DeviceProblem, BuiltInProblemAgreesWithCpu) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (auto geometry : {mesh::GeometryKind::cartesian, mesh::GeometryKind::deformed}) {
    const mesh::BoxMesh<3> mesh({4, 3, 5}, geometry);
    compare<3>(nullptr, mesh, fe::Disc::cg, 4);
    const mesh::BoxMesh<2> mesh2({6, 7}, geometry);
    compare<2>(nullptr, mesh2, fe::Disc::dg, 3);
  }
  // the highest degree (the error kernel's shared memory beyond 48 KB)
  const mesh::BoxMesh<3> mesh8({2, 3, 2}, mesh::GeometryKind::deformed);
  compare<3>(nullptr, mesh8, fe::Disc::cg, 8);
  compare<3>(nullptr, mesh8, fe::Disc::dg, 8);
}

TEST(DeviceProblem, CallablesAreEvaluatedOnTheHost) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  // the problem of the file with its functions as callables (no expressions to compile)
  const auto file = problem::read_problem_file(write_temp("annulus2c", annulus2));
  auto prob = problem::make_problem<2>(file);
  prob.expressions.clear();
  const mesh::BoxMesh<2> mesh(prob.cells, prob.domain);
  compare<2>(&prob, mesh, fe::Disc::cg, 3);
}

TEST(DeviceProblem, NonFiniteDataAndInvertedCellsAreRefused) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::string text2 = annulus3;
  text2.replace(text2.find("\"rhs\": \"-("), 10, "\"rhs\": \"log(z - 0.5) + -(");
  const auto prob2 = problem::make_problem<3>(problem::read_problem_file(write_temp("bad_rhs2", text2)));
  const mesh::BoxMesh<3> mesh2(prob2.cells, prob2.domain);
  fe::DofLayout<3> dofs2(mesh2, fe::Disc::cg, 2, prob2.dirichlet_faces);
  const problem::DeviceProblem<3> dp2(mesh2, dofs2, &prob2);
  DeviceBuffer<double> b2(dofs2.n_local());
  try {
    dp2.add_rhs_volume(b2.data(), fe::gauss(4));
    ADD_FAILURE() << "no InputError for log of a negative number";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rhs: the value is"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at the point"), std::string::npos) << e.what();
  }
  std::string text3 = annulus3;
  text3.replace(text3.find("\"(1+x)*cos(pi/2*y)\""), 19, "\"(1-2*x)*cos(pi/2*y)\"");
  text3.replace(text3.find("\"(1+x)*sin(pi/2*y)\""), 19, "\"(1-2*x)*sin(pi/2*y)\"");
  const auto prob3 = problem::make_problem<3>(problem::read_problem_file(write_temp("bad_map", text3)));
  const mesh::BoxMesh<3> mesh3(prob3.cells, prob3.domain);
  fe::DofLayout<3> dofs3(mesh3, fe::Disc::cg, 2, prob3.dirichlet_faces);
  const problem::DeviceProblem<3> dp3(mesh3, dofs3, &prob3);
  DeviceBuffer<double> b3(dofs3.n_local());
  try {
    dp3.add_rhs_volume(b3.data(), fe::gauss(4));
    ADD_FAILURE() << "no InputError for an inverted map";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is inverted or degenerate"), std::string::npos) << e.what();
  }
}

// A pass over chunks with its checks deferred (operators::setup::for_each_chunk): every chunk runs
// once with its slot, the slots are read once, and the first chunk whose slot was flagged runs
// again with the checks that throw.
TEST(DeviceSetupChecks, AFailedCheckIsReportedFromTheFirstChunkThatFailed) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  using operators::setup::for_each_chunk;
  const std::int64_t n = 47, cap = 10;  // chunks at 0, 10, 20, 30, 40 (7 cells)
  for (const std::vector<std::int64_t>& flagged : {std::vector<std::int64_t>{}, {20, 40}, {40}}) {
    std::vector<std::pair<std::int64_t, bool>> calls;
    auto body = [&](std::int64_t first, std::int64_t m, unsigned long long* slot) {
      calls.push_back({first, slot != nullptr});
      EXPECT_EQ(m, std::min(cap, n - first));
      if (!slot) throw InputError("cell " + std::to_string(first) + " failed");
      for (const auto f : flagged)
        if (f == first) TCFEM_CUDA_CHECK(cudaMemset(slot, 0, sizeof(unsigned long long)));
    };
    try {
      for_each_chunk(n, cap, body);
      EXPECT_TRUE(flagged.empty()) << "no InputError with a flagged chunk";
    } catch (const InputError& e) {
      ASSERT_FALSE(flagged.empty()) << e.what();
      EXPECT_EQ(std::string(e.what()), "cell " + std::to_string(flagged[0]) + " failed");
    }
    // every chunk once with its slot, then the first flagged one with the checks that throw
    ASSERT_EQ(calls.size(), 5u + (flagged.empty() ? 0u : 1u));
    for (std::size_t c = 0; c < 5; ++c) EXPECT_EQ(calls[c], std::make_pair(std::int64_t(c) * cap, true));
    if (!flagged.empty()) EXPECT_EQ(calls[5], std::make_pair(flagged[0], false));
  }
  // a check that fails deferred and passes when repeated is an internal error, not an input error
  bool internal = false;
  try {
    for_each_chunk(n, cap, [&](std::int64_t first, std::int64_t, unsigned long long* slot) {
      if (slot && first == 30) TCFEM_CUDA_CHECK(cudaMemset(slot, 0, sizeof(unsigned long long)));
    });
  } catch (const InputError&) {
    ADD_FAILURE() << "an InputError for a check that passed when repeated";
  } catch (const Error&) {
    internal = true;
  }
  EXPECT_TRUE(internal);
}

// The quadrature points of a mapped mesh in small chunks with the deferred checks: the same
// points as the checked pass, and an inverted region beyond the first chunks named as the
// checked pass names it (the first inverted cell).
TEST(DeviceSetupChecks, CellPointsInChunksNameTheFirstInvertedCell) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (const bool inverted : {false, true}) {
    std::string text = annulus3;
    const auto replace = [&text](const std::string& from, const std::string& to) {
      const auto at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    };
    // z (1.5 - z) inverts the cells above z = 0.75: the first of them in the last layers
    replace("\"cells\": [3, 4, 2]", "\"cells\": [3, 4, 8]");
    if (inverted) replace("\"z\"]", "\"z*(1.5-z)\"]");
    const auto prob = problem::make_problem<3>(problem::read_problem_file(write_temp("chunks", text)));
    const mesh::BoxMesh<3> mesh(prob.cells, prob.domain);
    const fe::DofLayout<3> dofs(mesh, fe::Disc::cg, 2, prob.dirichlet_faces);
    const auto quad = fe::gauss(4);
    const auto grid = operators::setup::make_grid(mesh, dofs, quad.size());
    operators::setup::PointFunctionSet set(3);
    const auto map = operators::setup::map_functions<3>(mesh, set);
    set.compile();
    const std::int64_t n_cells = std::int64_t(mesh.n_owned_cells()), cap = 7, nqc = 64;
    std::string checked_message, deferred_message;
    std::vector<double> checked_jxw(n_cells * nqc, std::nan("")), deferred_jxw(n_cells * nqc, std::nan(""));
    {
      operators::setup::CellPoints points(grid, quad, map, false, cap, true);
      try {
        for (std::int64_t first = 0; first < n_cells; first += cap) {
          const std::int64_t m = std::min(cap, n_cells - first);
          points.compute(mesh, first, m);
          TCFEM_CUDA_CHECK(cudaMemcpy(checked_jxw.data() + first * nqc, points.jxw(), m * nqc * sizeof(double),
                                      cudaMemcpyDeviceToHost));
        }
      } catch (const InputError& e) {
        checked_message = e.what();
      }
    }
    {
      operators::setup::CellPoints points(grid, quad, map, false, cap, true);
      try {
        operators::setup::for_each_chunk(n_cells, cap, [&](std::int64_t first, std::int64_t m,
                                                           unsigned long long* slot) {
          points.compute(mesh, first, m, slot);
          TCFEM_CUDA_CHECK(cudaMemcpy(deferred_jxw.data() + first * nqc, points.jxw(), m * nqc * sizeof(double),
                                      cudaMemcpyDeviceToHost));
        });
      } catch (const InputError& e) {
        deferred_message = e.what();
      }
    }
    EXPECT_EQ(deferred_message, checked_message);
    if (inverted) {
      EXPECT_NE(checked_message.find("is inverted or degenerate"), std::string::npos) << checked_message;
      EXPECT_NE(checked_message.find("(0,0,6)"), std::string::npos) << checked_message;  // z in [0.75, 0.875]
    } else {
      EXPECT_TRUE(checked_message.empty()) << checked_message;
      for (std::size_t i = 0; i < checked_jxw.size(); ++i) ASSERT_EQ(deferred_jxw[i], checked_jxw[i]) << i;
    }
  }
}

}  // namespace
