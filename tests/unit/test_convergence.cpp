// Discretization error rates of the full solve: L2 rate k+1 and H1-seminorm rate k (within 0.2)
// on a refinement pair, for cg and dg, 2D and 3D, Cartesian and deformed meshes.
#include <gtest/gtest.h>

#include <cmath>

#include "operators/cpu/laplace_operator.h"
#include "problem/poisson.h"
#include "solvers/cg.h"

namespace {
using namespace tcfem;

template <int dim>
problem::Errors solve_errors(fe::Disc disc, mesh::GeometryKind g, int k, int n) {
  std::array<int, dim> nc;
  nc.fill(n);
  mesh::BoxMesh<dim> mesh(nc, g);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  Vector<double> diag;
  A.compute_diagonal(diag);
  solvers::JacobiPreconditioner<double> P(diag);
  const auto b = problem::assemble_rhs<dim>(mesh, dofs);
  Vector<double> x(dofs.n_local());
  solvers::SolverControl control;
  control.tolerance = 1e-13;
  control.max_iterations = 20000;
  const auto res = solvers::solve_cg(A, x, b, P, control);
  EXPECT_TRUE(res.converged) << "dim " << dim << " k " << k << " n " << n;
  return problem::compute_errors<dim>(mesh, dofs, x);
}

struct RateCase {
  int dim;
  fe::Disc disc;
  mesh::GeometryKind geometry;
  int degree;
  int n_coarse;
};

class ConvergenceRates : public ::testing::TestWithParam<RateCase> {};

TEST_P(ConvergenceRates, L2RateIsKPlusOneAndH1RateIsK) {
  const auto c = GetParam();
  problem::Errors e0, e1;
  if (c.dim == 2) {
    e0 = solve_errors<2>(c.disc, c.geometry, c.degree, c.n_coarse);
    e1 = solve_errors<2>(c.disc, c.geometry, c.degree, 2 * c.n_coarse);
  } else {
    e0 = solve_errors<3>(c.disc, c.geometry, c.degree, c.n_coarse);
    e1 = solve_errors<3>(c.disc, c.geometry, c.degree, 2 * c.n_coarse);
  }
  ASSERT_TRUE(std::isfinite(e0.l2) && std::isfinite(e1.l2));
  ASSERT_GT(e1.l2, 0.0);
  const double rate_l2 = std::log2(e0.l2 / e1.l2);
  const double rate_h1 = std::log2(e0.h1_semi / e1.h1_semi);
  EXPECT_NEAR(rate_l2, c.degree + 1, 0.2) << "L2 errors " << e0.l2 << " -> " << e1.l2;
  EXPECT_NEAR(rate_h1, c.degree, 0.2) << "H1 errors " << e0.h1_semi << " -> " << e1.h1_semi;
}

using fe::Disc;
using mesh::GeometryKind;
constexpr auto cart = GeometryKind::cartesian;
constexpr auto def = GeometryKind::deformed;

INSTANTIATE_TEST_SUITE_P(
    Poisson, ConvergenceRates,
    ::testing::Values(RateCase{2, Disc::cg, cart, 1, 16}, RateCase{2, Disc::cg, cart, 2, 8},
                      RateCase{2, Disc::cg, cart, 4, 4}, RateCase{2, Disc::cg, def, 3, 8},
                      RateCase{2, Disc::dg, cart, 1, 16}, RateCase{2, Disc::dg, cart, 3, 4},
                      RateCase{2, Disc::dg, def, 2, 8}, RateCase{3, Disc::cg, cart, 2, 4},
                      RateCase{3, Disc::cg, cart, 3, 4}, RateCase{3, Disc::cg, def, 2, 4},
                      RateCase{3, Disc::dg, cart, 2, 4}, RateCase{3, Disc::dg, def, 2, 4}),
    [](const ::testing::TestParamInfo<RateCase>& info) {
      const auto& c = info.param;
      return std::to_string(c.dim) + "d_" + fe::to_string(c.disc) + "_" + mesh::to_string(c.geometry) + "_k" +
             std::to_string(c.degree) + "_n" + std::to_string(c.n_coarse);
    });

}  // namespace
