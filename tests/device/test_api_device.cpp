// The public API on the GPU (label gpu): the same problems solved with Backend::cuda and
// Backend::cpu agree (a curved domain, a variable coefficient, cg and dg with Neumann parts, cg
// with Dirichlet data). Prints "no CUDA device: GPU tests skip" and passes where no GPU is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numbers>

#include <tcfem/tcfem.h>

namespace {

using P = tcfem::Point<2>;
bool have_device = true;

tcfem::Problem<2> annulus(bool neumann) {
  const auto g = tcfem::Geometry<2>::box({1.0, 0.0}, {2.0, 1.0}, {8, 8}).mapped([](const P& X) {
    const double t = std::numbers::pi / 2 * X[1];
    return P{X[0] * std::cos(t), X[0] * std::sin(t)};
  });
  tcfem::Problem<2> p(g);
  auto u = [](const P& x) { return std::exp(x[0]) * std::sin(x[1]); };
  p.coefficient = [](const P& x) { return 1.0 + x[0] * x[0] + x[1] * x[1]; };
  p.rhs = [](const P& x) { return -2.0 * std::exp(x[0]) * (x[0] * std::sin(x[1]) + x[1] * std::cos(x[1])); };
  p.dirichlet = {{"xmin", u}, {"ymin", u}, {"ymax", u}};
  if (neumann)
    p.neumann = {{"xmax", [](const P& x) {
                    return (1.0 + x[0] * x[0] + x[1] * x[1]) * std::exp(x[0]) *
                           (x[0] * std::sin(x[1]) + x[1] * std::cos(x[1])) / 2.0;
                  }}};
  else
    p.dirichlet["xmax"] = u;
  p.exact = u;
  return p;
}

void compare(tcfem::Discretization disc, bool neumann) {
  if (!have_device) GTEST_SKIP() << "no CUDA device";
  tcfem::SolverSettings s;
  s.degree = 3;
  s.discretization = disc;
  s.tolerance = 1e-10;
  s.backend = tcfem::Backend::cpu;
  const auto cpu = tcfem::solve(annulus(neumann), s);
  s.backend = tcfem::Backend::cuda;
  const auto gpu = tcfem::solve(annulus(neumann), s);
  EXPECT_EQ(gpu.backend, "cuda");
  EXPECT_TRUE(cpu.converged && gpu.converged);
  EXPECT_NEAR(*gpu.l2_error, *cpu.l2_error, 1e-6 * *cpu.l2_error);
  double diff = 0.0;
  for (std::size_t i = 0; i < cpu.cell_node_values.size(); ++i)
    diff = std::max(diff, std::abs(gpu.cell_node_values[i] - cpu.cell_node_values[i]));
  EXPECT_LT(diff, 1e-8);
  std::printf("  %s: cpu %d its, cuda %d its, L2 %.6e / %.6e, max difference %.2e\n",
              disc == tcfem::Discretization::cg ? "cg" : "dg", cpu.iterations, gpu.iterations, *cpu.l2_error,
              *gpu.l2_error, diff);
}

TEST(ApiDevice, DgWithNeumannPartsAgreesWithCpu) { compare(tcfem::Discretization::dg, true); }
TEST(ApiDevice, CgWithDirichletDataAgreesWithCpu) { compare(tcfem::Discretization::cg, false); }
TEST(ApiDevice, CgWithNeumannPartsAgreesWithCpu) { compare(tcfem::Discretization::cg, true); }

TEST(ApiDevice, CgWithNeumannPartsConvergesAtTheOptimalRates) {
  // the curved annulus sector with a variable coefficient and Dirichlet and Neumann parts, solved on
  // the GPU on three meshes: L2 rate k+1, H1-seminorm rate k
  if (!have_device) GTEST_SKIP() << "no CUDA device";
  tcfem::SolverSettings s;
  s.degree = 2;
  s.tolerance = 1e-12;
  s.backend = tcfem::Backend::cuda;
  double l2[3], h1[3];
  for (int r = 0; r < 3; ++r) {
    auto p = annulus(true);
    p.geometry = p.geometry.refined(r);
    const auto res = tcfem::solve(p, s);
    ASSERT_TRUE(res.converged);
    EXPECT_EQ(res.backend, "cuda");
    l2[r] = *res.l2_error;
    h1[r] = *res.h1_seminorm_error;
  }
  for (int r = 1; r < 3; ++r) {
    const double rl2 = std::log2(l2[r - 1] / l2[r]), rh1 = std::log2(h1[r - 1] / h1[r]);
    std::printf("  cg Neumann k=2 refinement %d: L2 %.3e (rate %.2f), H1 %.3e (rate %.2f)\n", r, l2[r], rl2, h1[r], rh1);
    EXPECT_GT(rl2, 2.7);
    EXPECT_GT(rh1, 1.8);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    tcfem::SolverSettings s;
    s.degree = 1;
    s.backend = tcfem::Backend::cuda;
    tcfem::solve(annulus(false), s);
  } catch (const tcfem::InputError& e) {
    std::printf("no CUDA device: GPU tests skip (%s)\n", e.what());
    have_device = false;
  }
  return RUN_ALL_TESTS();
}
