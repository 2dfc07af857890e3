// The public API with an MPI communicator (SolverSettings::mpi_communicator), run on 1, 2 and 3
// ranks as a user's program would be: MPI initialized by the program, the communicator passed by
// its Fortran handle. Every rank also solves the same problem alone; the distributed solve must
// give the same iterations, residual and errors, and the ranks' cells together the same solution.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>

#include <tcfem/tcfem.h>

namespace {

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

double global_sum(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

/// `s.backend` cpu unless given; cuda: every rank alone on its host's first GPU, then together on
/// one GPU each.
template <int dim>
void expect_same_solution(const tcfem::Problem<dim>& problem, tcfem::SolverSettings s, double residual_tolerance,
                          double error_tolerance = 1e-9) {
  if (s.backend != tcfem::Backend::cuda) s.backend = tcfem::Backend::cpu;
  const auto alone = tcfem::solve(problem, s);
  s.mpi_communicator = MPI_Comm_c2f(MPI_COMM_WORLD);
  const auto together = tcfem::solve(problem, s);
  ASSERT_TRUE(alone.converged && together.converged);
  EXPECT_EQ(together.n_dofs, alone.n_dofs);
  EXPECT_EQ(together.backend, alone.backend);
  EXPECT_EQ(together.iterations, alone.iterations);
  EXPECT_NEAR(together.relative_residual, alone.relative_residual, residual_tolerance * alone.relative_residual);
  ASSERT_TRUE(together.l2_error && alone.l2_error);
  EXPECT_NEAR(*together.l2_error, *alone.l2_error, error_tolerance * *alone.l2_error);
  EXPECT_NEAR(*together.h1_seminorm_error, *alone.h1_seminorm_error, error_tolerance * *alone.h1_seminorm_error);
  // the ranks' cells: all cells once, the same node values
  EXPECT_EQ(global_sum(double(together.cell_node_values.size())), double(alone.cell_node_values.size()));
  double sq = 0.0, sq1 = 0.0, weighted = 0.0, weighted1 = 0.0;
  for (std::size_t i = 0; i < together.cell_node_values.size(); ++i) {
    const double v = together.cell_node_values[i];
    sq += v * v;
    weighted += v * (1.0 + together.cell_node_points[i][0] + 2.0 * together.cell_node_points[i][dim - 1]);
  }
  for (std::size_t i = 0; i < alone.cell_node_values.size(); ++i) {
    const double v = alone.cell_node_values[i];
    sq1 += v * v;
    weighted1 += v * (1.0 + alone.cell_node_points[i][0] + 2.0 * alone.cell_node_points[i][dim - 1]);
  }
  EXPECT_NEAR(global_sum(sq), sq1, error_tolerance * sq1);
  EXPECT_NEAR(global_sum(weighted), weighted1, error_tolerance * std::abs(weighted1));
  if (world_size() > 1) {
    EXPECT_THROW(together.write_vtu("never_written.vtu"), tcfem::InputError);
  }
}

TEST(MpiApi, MultigridOnABox3D) {
  using P = tcfem::Point<3>;
  tcfem::Problem<3> p(tcfem::Geometry<3>::box({0, 0, 0}, {1, 1, 2}, {8, 8, 12}));
  auto u = [](const P& x) { return std::sin(x[0]) * std::exp(x[1]) * (1 + x[2] * x[2]); };
  p.rhs = [](const P& x) { return -std::sin(x[0]) * std::exp(x[1]) * 2.0; };
  p.dirichlet = {{"xmin", u}, {"xmax", u}, {"ymin", u}, {"ymax", u}, {"zmin", u}, {"zmax", u}};
  p.exact = u;
  tcfem::SolverSettings s;
  s.degree = 2;
  s.tolerance = 1e-10;
  expect_same_solution(p, s, 1e-6);
}

TEST(MpiApi, MappedCoefficientNeumannFp32AndJacobi2D) {
  using P = tcfem::Point<2>;
  const auto annulus = tcfem::Geometry<2>::box({0, 0}, {1, 1}, {8, 8}).mapped([](const P& X) {
    return P{(1 + X[0]) * std::cos(M_PI / 2 * X[1]), (1 + X[0]) * std::sin(M_PI / 2 * X[1])};
  });
  tcfem::Problem<2> p(annulus);
  auto u = [](const P& x) { return std::exp(x[0]) * std::sin(x[1]); };
  p.coefficient = [](const P& x) { return 1.0 + x[0] * x[1]; };
  p.rhs = [](const P& x) { return -(x[1] * std::exp(x[0]) * std::sin(x[1]) + x[0] * std::exp(x[0]) * std::cos(x[1])); };
  p.dirichlet = {{"xmin", u}, {"ymax", u}};
  p.neumann = {{"xmax", [](const P& x) { return (1 + x[0] * x[1]) * std::exp(x[0]) * (x[0] * std::sin(x[1]) + x[1] * std::cos(x[1])) / std::hypot(x[0], x[1]); }},
               {"ymin", [](const P& x) { return -(1 + x[0] * x[1]) * std::exp(x[0]) * std::cos(x[1]); }}};
  p.exact = u;
  tcfem::SolverSettings s;
  s.degree = 3;
  s.tolerance = 1e-10;
  s.multigrid_precision = tcfem::Precision::fp32;
  expect_same_solution(p, s, 1e-3);  // the last residual of an fp32 V-cycle: its rounding, amplified
  s.preconditioner = tcfem::Preconditioner::jacobi;
  s.solver = tcfem::Solver::cg;
  s.multigrid_precision = tcfem::Precision::automatic;
  s.backend = tcfem::Backend::cpu;
  const auto alone = tcfem::solve(p, s);
  s.mpi_communicator = MPI_Comm_c2f(MPI_COMM_WORLD);
  const auto together = tcfem::solve(p, s);
  ASSERT_TRUE(alone.converged && together.converged);
  // Jacobi-CG's interface sums and dot products add in another order: one iteration of slack
  EXPECT_NEAR(together.iterations, alone.iterations, 1);
  EXPECT_NEAR(*together.l2_error, *alone.l2_error, 1e-7 * *alone.l2_error);
}

TEST(MpiApi, BadCommunicatorUseIsAnInputError) {
  tcfem::Problem<2> p(tcfem::Geometry<2>::box({0, 0}, {1, 1}, {4, 4}));
  p.dirichlet = {{"xmin", {}}, {"xmax", {}}, {"ymin", {}}, {"ymax", {}}};
  for (auto& [name, f] : p.dirichlet) f = [](const tcfem::Point<2>&) { return 0.0; };
  tcfem::SolverSettings s;
  s.degree = 1;
  s.mpi_communicator = MPI_Comm_c2f(MPI_COMM_NULL);
  EXPECT_THROW(tcfem::solve(p, s), tcfem::InputError);
  if (world_size() > 1) {
    s.mpi_communicator = MPI_Comm_c2f(MPI_COMM_WORLD);
    s.backend = tcfem::Backend::cuda;
    s.preconditioner = tcfem::Preconditioner::jacobi;
    s.solver = tcfem::Solver::cg;
    EXPECT_THROW(tcfem::solve(p, s), tcfem::InputError);  // several ranks on the GPU: multigrid only
  }
}

/// Several ranks on the GPUs (one each; skipped where a rank has none): FGMRES with an fp32 V-cycle
/// (Chebyshev) and the FMG start, as on one GPU.
TEST(MpiApi, MultigridOnTheGpus) {
  using P = tcfem::Point<3>;
  tcfem::Problem<3> p(tcfem::Geometry<3>::box({0, 0, 0}, {1, 1, 2}, {8, 8, 16}));
  auto u = [](const P& x) { return std::sin(x[0]) * std::exp(x[1]) * (1 + x[2] * x[2]); };
  p.rhs = [](const P& x) { return -std::sin(x[0]) * std::exp(x[1]) * 2.0; };
  p.dirichlet = {{"xmin", u}, {"xmax", u}, {"ymin", u}, {"ymax", u}, {"zmin", u}, {"zmax", u}};
  p.exact = u;
  tcfem::SolverSettings s;
  s.degree = 3;
  s.tolerance = 1e-10;
  s.backend = tcfem::Backend::cuda;
  s.smoother = tcfem::Smoother::chebyshev;
  try {
    tcfem::SolverSettings probe = s;
    probe.mpi_communicator = MPI_Comm_c2f(MPI_COMM_WORLD);
    probe.max_iterations = 1;
    tcfem::solve(p, probe);
  } catch (const tcfem::InputError& e) {
    GTEST_SKIP() << "a rank has no usable GPU: " << e.what();
  }
  expect_same_solution(p, s, 1e-3, 1e-6);  // the last residuals of an fp32 V-cycle: its rounding
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {  // one report: rank 0's (a failure on another rank still fails its exit code)
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
