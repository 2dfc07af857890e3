// The distributed layer on the CPU, run on 1, 2 and 3 MPI ranks (ctest label mpi): the process
// grid, the ghost exchange (forward and reverse), distributed dot products, and the operator, its
// diagonal and CG on sub-boxes against the same objects built on one rank (every rank builds the
// whole box too and compares its owned entries). Fresh random inputs: the seed of rank 0 is
// broadcast, so that every rank draws the same global vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "core/communicator.h"
#include "mpi_test_support.h"
#include "fe/dof_exchange.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"
#include "solvers/cg.h"

namespace tcfem {
namespace {

using test::annulus;
using test::shared_seed;
using test::world;


TEST(ProcessGrid, MinimizesTheInterfaceAndFitsTheCells) {
  EXPECT_EQ((mesh::choose_process_grid<3>({8, 8, 8}, 2)), (std::array<int, 3>{1, 1, 2}));
  EXPECT_EQ((mesh::choose_process_grid<3>({8, 8, 8}, 8)), (std::array<int, 3>{2, 2, 2}));
  EXPECT_EQ((mesh::choose_process_grid<2>({4, 4}, 4)), (std::array<int, 2>{2, 2}));
  // a long box is cut across its long direction
  EXPECT_EQ((mesh::choose_process_grid<3>({40, 4, 4}, 4)), (std::array<int, 3>{4, 1, 1}));
  // a direction with fewer cells than ranks is not split that far
  EXPECT_EQ((mesh::choose_process_grid<3>({1, 6, 2}, 6)), (std::array<int, 3>{1, 3, 2}));
  EXPECT_THROW(mesh::choose_process_grid<3>({1, 1, 1}, 2), InputError);
  EXPECT_THROW(mesh::choose_process_grid<2>({2, 2}, 5), InputError);
  for (int n : {1, 5, 7, 16})
    for (int parts = 1; parts <= n; ++parts) {
      int covered = 0;
      for (int i = 0; i < parts; ++i) {
        const auto r = mesh::split_range(n, parts, i);
        EXPECT_EQ(r[0], covered);
        EXPECT_GE(r[1] - r[0], n / parts);
        EXPECT_LE(r[1] - r[0], n / parts + 1);
        covered = r[1];
      }
      EXPECT_EQ(covered, n);
    }
}

TEST(Partition, EveryCellOwnedOnce) {
  const auto comm = world();
  const std::array<int, 3> cells{5, 3, 4};
  if (comm.size() > 60) GTEST_SKIP() << "more ranks than cells";
  const auto part = mesh::Partition<3>::distributed(cells, comm);
  ASSERT_EQ(int(part.rank_owned.size()), comm.size());
  std::vector<int> owner(60, -1);
  for (int r = 0; r < comm.size(); ++r) {
    const auto& b = part.rank_owned[std::size_t(r)];
    for (int z = b.begin[2]; z < b.end[2]; ++z)
      for (int y = b.begin[1]; y < b.end[1]; ++y)
        for (int x = b.begin[0]; x < b.end[0]; ++x) {
          auto& o = owner[std::size_t(x + 5 * (y + 3 * z))];
          EXPECT_EQ(o, -1) << "cell owned twice";
          o = r;
        }
  }
  for (const int o : owner) EXPECT_GE(o, 0) << "cell not owned";
}

template <int dim>
void check_exchange(fe::Disc disc, int k, const std::array<int, dim>& cells) {
  const auto comm = world();
  const mesh::BoxMesh<dim> mesh(cells, mesh::GeometryKind::cartesian, mesh::Partition<dim>::distributed(cells, comm));
  const fe::DofLayout<dim> dofs(mesh, disc, k);
  auto v = fe::make_vector<double>(dofs);
  const auto global = dofs.global_indices();
  const auto& layout = dofs.ghost_layout();
  std::vector<char> owned(v.size(), 1);
  if (layout) {
    // owned entries: those a zero_ghosts leaves alone
    Vector<double> ones(v.size(), 1.0);
    layout->zero_ghosts(ones.data());
    for (std::size_t i = 0; i < v.size(); ++i) owned[i] = ones[i] != 0.0;
  }
  // forward: every ghost gets its owner's value
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = owned[i] ? 1.0 + double(global[i]) : std::nan("");
  v.update_ghost_values();
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], 1.0 + double(global[i])) << "entry " << i << " (global " << global[i] << ") on rank " << comm.rank();
  // owned entries over all ranks: every global DoF exactly once
  double n_owned = 0.0;
  for (const char o : owned) n_owned += o;
  EXPECT_EQ(comm.sum(n_owned), double(dofs.n_dofs()));
  // reverse: each rank adds 1 at every stored entry; an owner then holds the number of ranks storing it
  Vector<double> count = fe::make_vector<double>(dofs);
  count.fill(1.0);
  count.compress();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!owned[i]) {
      EXPECT_EQ(count[i], 0.0) << "ghost not zeroed";
      continue;
    }
    int ranks = 0;
    for (int r = 0; r < comm.size(); ++r) {
      const auto& b = mesh.partition().rank_owned[std::size_t(r)];
      // the global unit of entry i inside rank r's stored box
      bool inside = true;
      std::size_t g = std::size_t(disc == fe::Disc::cg ? global[i] : global[i] / dofs.dofs_per_cell());
      for (int d = 0; d < dim; ++d) {
        const long extent = disc == fe::Disc::cg ? long(cells[d]) * k + 1 : cells[d];
        const long p = long(g % std::size_t(extent));
        g /= std::size_t(extent);
        const long lo = std::max(0, b.begin[d] - 1), hi = std::min(cells[d], b.end[d] + 1);
        inside = inside && (disc == fe::Disc::cg ? (p >= lo * k && p <= hi * k) : (p >= lo && p < hi));
      }
      ranks += inside;
    }
    EXPECT_EQ(count[i], double(ranks)) << "entry " << i << " on rank " << comm.rank();
  }
}

/// A ghost layer of two cells exchanged one cell deep: the ghosts of the owned cells grown by one
/// cell get their owners' values, the outer ones keep theirs.
TEST(GhostExchange, OneOfTwoLayers) {
  const auto comm = world();
  const std::array<int, 3> cells{3, 4, 7};
  const int k = 2;
  const auto part = mesh::Partition<3>::distributed(cells, comm, 2);
  const mesh::BoxMesh<3> mesh(cells, mesh::GeometryKind::cartesian, part);
  const fe::DofLayout<3> dofs(mesh, fe::Disc::cg, k);
  const auto inner = fe::make_dof_exchange<3>(part, fe::Disc::cg, k, 1);
  const auto global = dofs.global_indices();
  Vector<double> owned_marks(dofs.n_local(), 1.0);
  inner->zero_ghosts(owned_marks.data());
  std::vector<double> v(dofs.n_local());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = owned_marks[i] != 0.0 ? 1.0 + double(global[i]) : -1.0;
  inner->update_ghosts(v.data());
  const auto& ext = dofs.lattice_extent();
  for (std::size_t i = 0; i < v.size(); ++i) {
    // the node's distance in cells from the owned box
    std::size_t rest = i;
    bool near = true;
    for (int d = 0; d < 3; ++d) {
      const long p = long(part.ghosted.begin[d]) * k + long(rest % std::size_t(ext[d]));
      rest /= std::size_t(ext[d]);
      near = near && p >= long(part.owned.begin[d] - 1) * k && p <= long(part.owned.end[d] + 1) * k;
    }
    if (owned_marks[i] != 0.0 || near) {
      ASSERT_EQ(v[i], 1.0 + double(global[i])) << "entry " << i << " on rank " << comm.rank();
    } else {
      ASSERT_EQ(v[i], -1.0) << "outer ghost " << i << " written on rank " << comm.rank();
    }
  }
}

TEST(GhostExchange, ForwardAndReverseCg3D) { check_exchange<3>(fe::Disc::cg, 3, {4, 3, 5}); }
TEST(GhostExchange, ForwardAndReverseCg2D) { check_exchange<2>(fe::Disc::cg, 2, {3, 5}); }
TEST(GhostExchange, ForwardAndReverseDg3D) { check_exchange<3>(fe::Disc::dg, 2, {3, 4, 3}); }
TEST(GhostExchange, ForwardAndReverseDg2D) { check_exchange<2>(fe::Disc::dg, 1, {5, 3}); }

/// The operator, its diagonal and dot products on the sub-boxes against one rank's on the whole box.
template <int dim>
void check_operator(fe::Disc disc, int k, const std::array<int, dim>& cells, mesh::Domain<dim> domain,
                    bool coefficient, fe::DirichletFaces<dim> dirichlet) {
  const auto comm = world();
  const unsigned seed = shared_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", rank " + std::to_string(comm.rank()));
  const auto cfg = test::config(disc, k, coefficient);
  const mesh::BoxMesh<dim> whole(cells, domain);
  const fe::DofLayout<dim> whole_dofs(whole, disc, k, dirichlet);
  const operators::MatrixFreeOperator<dim, double> A1(whole, whole_dofs, cfg, operators::Form::laplace);
  const mesh::BoxMesh<dim> mesh(cells, domain, mesh::Partition<dim>::distributed(cells, comm));
  const fe::DofLayout<dim> dofs(mesh, disc, k, dirichlet);
  const operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  ASSERT_EQ(A.path(), A1.path());
  const auto global = dofs.global_indices();
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<double> u1(whole_dofs.n_local()), w1(whole_dofs.n_local());
  for (std::size_t i = 0; i < u1.size(); ++i) u1[i] = dist(gen);
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = dist(gen);
  auto u = fe::make_vector<double>(dofs), w = fe::make_vector<double>(dofs), v = fe::make_vector<double>(dofs);
  Vector<double> ones(u.size(), 1.0);
  if (dofs.ghost_layout()) dofs.ghost_layout()->zero_ghosts(ones.data());
  for (std::size_t i = 0; i < u.size(); ++i) {
    u[i] = ones[i] != 0.0 ? u1[std::size_t(global[i])] : std::nan("");  // ghosts: filled by the apply
    w[i] = w1[std::size_t(global[i])];
  }
  v.fill(std::nan(""));
  Vector<double> v1(u1.size());
  A1.vmult(v1, u1);
  A.vmult(v, u);
  double scale = 0.0;
  for (std::size_t i = 0; i < v1.size(); ++i) scale = std::max(scale, std::abs(v1[i]));
  for (std::size_t i = 0; i < v.size(); ++i)
    if (ones[i] != 0.0) {
      ASSERT_NEAR(v[i], v1[std::size_t(global[i])], 1e-13 * scale) << "owned entry " << i;
    }
  // dot products over the owned entries of every rank
  EXPECT_NEAR(v.dot(w), v1.dot(w1), 1e-12 * std::abs(v1.dot(w1)) + 1e-14 * scale);
  EXPECT_NEAR(w.norm(), w1.norm(), 1e-13 * w1.norm());
  // the diagonal, every stored entry (ghosts are the owners' values)
  Vector<double> d1, d;
  A1.compute_diagonal(d1);
  A.compute_diagonal(d);
  for (std::size_t i = 0; i < d.size(); ++i) ASSERT_NEAR(d[i], d1[std::size_t(global[i])], 1e-13 * scale);
  // CG with Jacobi from zero: the same iterations, the same solution to rounding
  Vector<double> x1(u1.size());
  auto x = fe::make_vector<double>(dofs);
  solvers::SolverControl control;
  control.tolerance = 1e-10;
  control.max_iterations = 2000;
  const solvers::JacobiPreconditioner<double> P1(d1), P(d);
  Vector<double> b1(u1.size());
  A1.vmult(b1, u1);  // a consistent right-hand side: A u1 (constrained rows: u1's entries)
  const auto r1 = solvers::solve_cg(A1, x1, b1, P1, control);
  auto b = fe::make_vector<double>(dofs);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = b1[std::size_t(global[i])];
  const auto r = solvers::solve_cg(A, x, b, P, control);
  EXPECT_TRUE(r.converged && r1.converged);
  // the interface sums and the dot products add in another order than on one rank: a long
  // Jacobi-preconditioned CG (SIPG on curved cells: about 180 iterations) amplifies that rounding
  EXPECT_NEAR(r.iterations, r1.iterations, r1.iterations / 50);
  x.update_ghost_values();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], x1[std::size_t(global[i])], 1e-8);
}

TEST(DistributedOperator, CgCartesian3D) {
  check_operator<3>(fe::Disc::cg, 3, {4, 3, 5}, mesh::Domain<3>::unit(mesh::GeometryKind::cartesian), false,
                    fe::all_dirichlet<3>());
}
TEST(DistributedOperator, CgMappedCoefficientNeumann3D) {
  check_operator<3>(fe::Disc::cg, 2, {3, 4, 3}, annulus<3>(), true, {true, false, true, true, false, true});
}
TEST(DistributedOperator, CgDeformed2D) {
  check_operator<2>(fe::Disc::cg, 4, {3, 5}, mesh::Domain<2>::unit(mesh::GeometryKind::deformed), false,
                    fe::all_dirichlet<2>());
}
TEST(DistributedOperator, DgCartesian3D) {
  check_operator<3>(fe::Disc::dg, 2, {3, 4, 3}, mesh::Domain<3>::unit(mesh::GeometryKind::cartesian), false,
                    fe::all_dirichlet<3>());
}
TEST(DistributedOperator, DgMappedCoefficientNeumann2D) {
  check_operator<2>(fe::Disc::dg, 3, {5, 3}, annulus<2>(), true, {true, false, false, true});
}

TEST(Collective, AnErrorOfOneRankReachesEveryRank) {
  const auto comm = world();
  const int failing = comm.size() - 1;
  try {
    collective(comm, [&] {
      if (comm.rank() == failing) throw InputError("bad cell");
    });
    FAIL() << "no error";
  } catch (const CollectiveInputError& e) {
    EXPECT_TRUE(comm.distributed());
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(failing) + ": bad cell");
  } catch (const InputError& e) {
    EXPECT_FALSE(comm.distributed()) << "serial collective: the error itself";
    EXPECT_EQ(std::string(e.what()), "bad cell");
  }
  // nothing thrown on any rank: nothing thrown
  EXPECT_NO_THROW(collective(comm, [] {}));
}

}  // namespace
}  // namespace tcfem

int main(int argc, char** argv) {
  tcfem::MpiSession mpi(argc, argv, tcfem::mpi_available());
  ::testing::InitGoogleTest(&argc, argv);
  return tcfem::test::run_all_tests_on_every_rank(tcfem::Communicator::world());
}
