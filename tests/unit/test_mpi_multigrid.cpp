// Geometric multigrid across MPI ranks on the CPU (ctest label mpi, run on 1, 2 and 3 ranks):
// partitions aligned to a coarse level and their coarsening, the transfers between distributed
// levels and onto rank 0 (GatherTransfer), and one V-cycle with Chebyshev and cg and dg
// vertex-patch smoothers, against the same objects built on one rank (every rank builds the whole hierarchy
// too). Fresh random inputs, poisoned ghosts and outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "mpi_test_support.h"
#include "multigrid/host/multigrid.h"
#include "multigrid/host/transfer.h"
#include "multigrid/level_hierarchy.h"

namespace tcfem {
namespace {

using test::annulus;
using test::shared_seed;
using test::world;

TEST(MultigridPartition, AlignedSubBoxesCoarsen) {
  const auto comm = world();
  const std::array<int, 3> cells{16, 8, 12};
  if (comm.size() > 4 * 2 * 3) GTEST_SKIP() << "more ranks than blocks";
  const auto part = mesh::Partition<3>::distributed(cells, comm, 1, 4);
  for (const auto& box : part.rank_owned)
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(box.begin[d] % 4, 0);
      EXPECT_EQ(box.end[d] % 4, 0);
    }
  ASSERT_TRUE(part.coarsenable());
  const auto twice = part.coarsened().coarsened();
  const auto direct = mesh::Partition<3>::distributed({4, 2, 3}, comm);
  EXPECT_EQ(twice.global_cells, direct.global_cells);
  EXPECT_EQ(twice.process_grid, direct.process_grid);
  ASSERT_EQ(twice.rank_owned.size(), direct.rank_owned.size());
  for (std::size_t r = 0; r < direct.rank_owned.size(); ++r) {
    EXPECT_EQ(twice.rank_owned[r].begin, direct.rank_owned[r].begin);
    EXPECT_EQ(twice.rank_owned[r].end, direct.rank_owned[r].end);
  }
  EXPECT_EQ(twice.ghosted.begin, direct.ghosted.begin);
  EXPECT_EQ(twice.ghosted.end, direct.ghosted.end);
  EXPECT_THROW(mesh::Partition<3>::distributed({16, 8, 10}, comm, 1, 4), InputError);
  if (comm.size() > 1) {
    EXPECT_FALSE(mesh::Partition<3>::distributed({7, 7, 7}, comm).coarsenable());
  }
}

TEST(MultigridPartition, AlignmentKeepsLevelsAndBalance) {
  using H3 = multigrid::LevelHierarchy<3>;
  // 64^3 on 3 ranks: blocks of 8 split 3/3/2 (24 cells against 21.3 of an even split)
  EXPECT_EQ(H3::partition_alignment({64, 64, 64}, 3), 8);
  EXPECT_EQ(H3::partition_alignment({16, 16, 16}, 2), 4);
  EXPECT_EQ(multigrid::LevelHierarchy<2>::partition_alignment({12, 12}, 4), 2);
  EXPECT_EQ(H3::partition_alignment({10, 10, 10}, 3), 1);  // two levels: only the finest is spread
  // the hierarchy keeps the levels down to two cells per rank and direction
  const auto comm = world();
  const std::array<int, 3> cells{16, 16, 16};
  const int a = H3::partition_alignment(cells, comm.size());
  const mesh::BoxMesh<3> mesh(cells, mesh::GeometryKind::cartesian, mesh::Partition<3>::distributed(cells, comm, 1, a));
  const H3 h(mesh, fe::all_dirichlet<3>(), fe::Disc::cg, 2);
  ASSERT_EQ(h.n_levels(), 5);
  if (comm.size() == 1) {
    EXPECT_FALSE(h.distributed());
    EXPECT_EQ(h.gathered_level(), 0);
    return;
  }
  EXPECT_TRUE(h.distributed());
  // 2 and 4 ranks: sub-boxes of 16 x 16 x 8 or 16 x 8 x 8 cells halve twice; 3 ranks: 16 x 16 x 6
  // (blocks of 2, split 3/3/2) halve once
  if (comm.size() <= 4) {
    EXPECT_EQ(h.gathered_level(), comm.size() == 3 ? 3 : 2);
  }
  for (int l = 0; l < h.n_levels(); ++l) EXPECT_EQ(h.stored(l), l >= h.gathered_level() || comm.rank() == 0);
  for (const auto& box : h.mesh(h.gathered_level()).partition().rank_owned)
    for (int d = 0; d < 3; ++d) EXPECT_GE(box.extent(d), H3::min_cells_per_rank);
  if (comm.rank() == 0) {
    EXPECT_EQ(h.gathered_dofs().n_dofs(), h.dofs(h.gathered_level()).n_dofs());
  }
  // a fine mesh that does not coarsen
  const mesh::BoxMesh<3> odd({5, 4, 4}, mesh::GeometryKind::cartesian,
                             mesh::Partition<3>::distributed({5, 4, 4}, comm));
  EXPECT_THROW(H3(odd, fe::all_dirichlet<3>(), fe::Disc::cg, 2), InputError);
}

/// 1 where this rank owns the local entry.
template <int dim>
std::vector<char> owned_mask(const fe::DofLayout<dim>& dofs) {
  Vector<double> ones(dofs.n_local(), 1.0);
  if (dofs.ghost_layout()) dofs.ghost_layout()->zero_ghosts(ones.data());
  std::vector<char> m(ones.size());
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = ones[i] != 0.0;
  return m;
}

template <int dim>
struct Case {
  fe::Disc disc;
  int degree;
  std::array<int, dim> cells;
  mesh::GeometryKind geometry;
};

/// Every level's transfer against one rank's: prolongation's owned entries (at the gathered level
/// every stored entry: rank 0 sends the ghosts too) and restriction's owned entries (at the gathered
/// level rank 0's whole vector).
template <int dim>
void check_transfers(const Case<dim>& c) {
  const auto comm = world();
  const unsigned seed = shared_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", rank " + std::to_string(comm.rank()));
  const mesh::BoxMesh<dim> whole(c.cells, c.geometry);
  const multigrid::LevelHierarchy<dim> h1(whole, fe::all_dirichlet<dim>(), c.disc, c.degree);
  const int a = multigrid::LevelHierarchy<dim>::partition_alignment(c.cells, comm.size());
  const mesh::BoxMesh<dim> mesh(c.cells, c.geometry, mesh::Partition<dim>::distributed(c.cells, comm, 1, a));
  const multigrid::LevelHierarchy<dim> h(mesh, fe::all_dirichlet<dim>(), c.disc, c.degree);
  ASSERT_EQ(h.n_levels(), h1.n_levels());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int first = comm.size() == 1 ? 1 : h.gathered_level();
  for (int l = first; l < h.n_levels(); ++l) {
    SCOPED_TRACE("level " + std::to_string(l));
    const multigrid::MatrixFreeTransfer<dim, double> t1(h1.mesh(l - 1), h1.dofs(l - 1), h1.mesh(l), h1.dofs(l));
    Vector<double> c1(h1.dofs(l - 1).n_local()), f1(h1.dofs(l).n_local()), p1(f1.size()), r1(c1.size());
    for (std::size_t i = 0; i < c1.size(); ++i) c1[i] = dist(gen);
    for (std::size_t i = 0; i < f1.size(); ++i) f1[i] = dist(gen);
    t1.prolongate(p1, c1);
    t1.restrict_to_coarse(r1, f1);
    const bool gathered = h.distributed() && l == h.gathered_level();
    const bool has_coarse = h.stored(l - 1);  // at the gathered level: rank 0 alone
    std::unique_ptr<multigrid::Transfer<Vector<double>>> t;
    if (gathered)
      t = std::make_unique<multigrid::GatherTransfer<dim, double>>(
          h.dofs(l), has_coarse ? &h.mesh(l - 1) : nullptr, has_coarse ? &h.dofs(l - 1) : nullptr,
          has_coarse ? &h.gathered_mesh() : nullptr, has_coarse ? &h.gathered_dofs() : nullptr);
    else
      t = std::make_unique<multigrid::MatrixFreeTransfer<dim, double>>(h.mesh(l - 1), h.dofs(l - 1), h.mesh(l),
                                                                      h.dofs(l));
    const auto fine_global = h.dofs(l).global_indices();
    const auto fine_owned = owned_mask(h.dofs(l));
    Vector<double> cv(has_coarse ? h.dofs(l - 1).n_local() : 0), fv(h.dofs(l).n_local()), pv(fv.size(), nan),
        rv(cv.size(), nan);
    if (has_coarse) {
      const auto coarse_global = h.dofs(l - 1).global_indices();
      const auto coarse_owned = owned_mask(h.dofs(l - 1));
      // the coarse input's ghosts are poisoned: the transfer must fetch them from their owners
      for (std::size_t i = 0; i < cv.size(); ++i) cv[i] = coarse_owned[i] ? c1[std::size_t(coarse_global[i])] : nan;
    }
    for (std::size_t i = 0; i < fv.size(); ++i) fv[i] = fine_owned[i] ? f1[std::size_t(fine_global[i])] : nan;
    t->prolongate(pv, cv);
    t->restrict_to_coarse(rv, fv);
    for (std::size_t i = 0; i < pv.size(); ++i)
      if (gathered || fine_owned[i]) {
        ASSERT_NEAR(pv[i], p1[std::size_t(fine_global[i])], 1e-13) << "fine entry " << i;
      }
    if (has_coarse) {
      const auto coarse_global = h.dofs(l - 1).global_indices();
      const auto coarse_owned = owned_mask(h.dofs(l - 1));
      for (std::size_t i = 0; i < rv.size(); ++i)
        if (coarse_owned[i]) {
          ASSERT_NEAR(rv[i], r1[std::size_t(coarse_global[i])], 1e-12) << "coarse entry " << i;
        }
    }
  }
}

TEST(DistributedTransfer, Cg3D) { check_transfers<3>({fe::Disc::cg, 2, {8, 4, 12}, mesh::GeometryKind::cartesian}); }
TEST(DistributedTransfer, CgDeformed2D) {
  check_transfers<2>({fe::Disc::cg, 3, {12, 8}, mesh::GeometryKind::deformed});
}
TEST(DistributedTransfer, Dg3D) { check_transfers<3>({fe::Disc::dg, 2, {4, 8, 8}, mesh::GeometryKind::cartesian}); }
TEST(DistributedTransfer, Dg2D) { check_transfers<2>({fe::Disc::dg, 1, {16, 6}, mesh::GeometryKind::cartesian}); }

/// One V-cycle (the coarse solve on rank 0) against one rank's: the same Chebyshev eigenvalue
/// estimates, the same result to rounding. Patch smoothers: every rank smooths the patches of its
/// vertices, with the surrogates' cell metrics of ghost cells from their owners on curved cells.
template <int dim, typename Number>
void check_vcycle(fe::Disc disc, int degree, const std::array<int, dim>& cells, const mesh::Domain<dim>& domain,
                  multigrid::SmootherKind smoother, bool coefficient, double tolerance,
                  multigrid::PatchVariant variant = multigrid::PatchVariant::fused) {
  const auto comm = world();
  const unsigned seed = shared_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", rank " + std::to_string(comm.rank()));
  const auto cfg = test::config(disc, degree, coefficient);
  multigrid::MultigridSettings settings;
  settings.smoother.kind = smoother;
  settings.smoother.patch_variant = variant;
  const mesh::BoxMesh<dim> whole(cells, domain);
  const multigrid::LevelHierarchy<dim> h1(whole, fe::all_dirichlet<dim>(), disc, degree);
  const multigrid::Multigrid<dim, Number> mg1(h1, cfg, settings);
  const int a = multigrid::LevelHierarchy<dim>::partition_alignment(cells, comm.size());
  const mesh::BoxMesh<dim> mesh(cells, domain, mesh::Partition<dim>::distributed(cells, comm, 1, a));
  const multigrid::LevelHierarchy<dim> h(mesh, fe::all_dirichlet<dim>(), disc, degree);
  const multigrid::Multigrid<dim, Number> mg(h, cfg, settings);
  for (int l = std::max(1, h.gathered_level()); l < h.n_levels(); ++l) {
    EXPECT_NEAR(mg.level_info()[l].lambda_max, mg1.level_info()[l].lambda_max,
                (std::is_same_v<Number, float> ? 1e-5 : 1e-10) * mg1.level_info()[l].lambda_max)
        << "level " << l;
    EXPECT_EQ(mg.level_info()[l].n_patches, mg1.level_info()[l].n_patches) << "level " << l;
  }
  const int f = h.finest();
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<Number> b1(h1.dofs(f).n_local()), x1(b1.size());
  for (std::size_t i = 0; i < b1.size(); ++i) b1[i] = Number(dist(gen));
  mg1.vcycle(x1, b1);
  const auto global = h.dofs(f).global_indices();
  const auto owned = owned_mask(h.dofs(f));
  Vector<Number> b(h.dofs(f).n_local()), x(b.size());
  // the ghosts of b poisoned: the levels must fetch what they read from the owners
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = owned[i] ? b1[std::size_t(global[i])] : std::numeric_limits<Number>::quiet_NaN();
  mg.vcycle(x, b);
  double scale = 0.0;
  for (std::size_t i = 0; i < x1.size(); ++i) scale = std::max(scale, double(std::abs(x1[i])));
  ASSERT_GT(scale, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (owned[i]) {
      ASSERT_NEAR(double(x[i]), double(x1[std::size_t(global[i])]), tolerance * scale) << "entry " << i;
    }
  }
}

using multigrid::PatchVariant;
using multigrid::SmootherKind;

TEST(DistributedMultigrid, ChebyshevCg3D) {
  check_vcycle<3, double>(fe::Disc::cg, 2, {8, 8, 12}, mesh::Domain<3>::unit(mesh::GeometryKind::cartesian),
                          SmootherKind::chebyshev, false, 1e-11);
}
TEST(DistributedMultigrid, ChebyshevDgDeformed2D) {
  check_vcycle<2, double>(fe::Disc::dg, 3, {12, 8}, mesh::Domain<2>::unit(mesh::GeometryKind::deformed),
                          SmootherKind::chebyshev, false, 1e-11);
}
TEST(DistributedMultigrid, ChebyshevCgFp32_2D) {
  check_vcycle<2, float>(fe::Disc::cg, 4, {8, 16}, mesh::Domain<2>::unit(mesh::GeometryKind::cartesian),
                         SmootherKind::chebyshev, false, 1e-4);
}
TEST(DistributedMultigrid, PatchCg3D) {
  check_vcycle<3, double>(fe::Disc::cg, 3, {8, 8, 12}, mesh::Domain<3>::unit(mesh::GeometryKind::cartesian),
                          SmootherKind::patch, false, 1e-11);
}
TEST(DistributedMultigrid, PatchSeparateCg2D) {
  check_vcycle<2, double>(fe::Disc::cg, 2, {12, 16}, mesh::Domain<2>::unit(mesh::GeometryKind::cartesian),
                          SmootherKind::patch, false, 1e-11, PatchVariant::separate);
}
TEST(DistributedMultigrid, PatchSurrogatesAnnulusCoefficient3D) {
  // fused: the surrogate residuals (one level residual per step); global: one per color
  check_vcycle<3, double>(fe::Disc::cg, 2, {8, 8, 4}, annulus<3>(), SmootherKind::patch, true, 1e-11);
  check_vcycle<3, double>(fe::Disc::cg, 2, {8, 8, 4}, annulus<3>(), SmootherKind::patch, true, 1e-11,
                          PatchVariant::global);
}
TEST(DistributedMultigrid, PatchSurrogateResidualsSeparateAnnulus2D) {
  check_vcycle<2, double>(fe::Disc::cg, 3, {12, 8}, annulus<2>(), SmootherKind::patch, true, 1e-11,
                          PatchVariant::separate);
}
TEST(DistributedMultigrid, PatchAdditiveDeformedFp32_2D) {
  check_vcycle<2, float>(fe::Disc::cg, 3, {16, 8}, mesh::Domain<2>::unit(mesh::GeometryKind::deformed),
                         SmootherKind::patch_additive, false, 1e-4);
}
TEST(DistributedMultigrid, PatchDg2D) {
  check_vcycle<2, double>(fe::Disc::dg, 2, {8, 12}, mesh::Domain<2>::unit(mesh::GeometryKind::cartesian),
                          SmootherKind::patch, false, 1e-11);
}
TEST(DistributedMultigrid, PatchAdditiveDgDeformed3D) {
  check_vcycle<3, double>(fe::Disc::dg, 1, {8, 8, 8}, mesh::Domain<3>::unit(mesh::GeometryKind::deformed),
                          SmootherKind::patch_additive, false, 1e-11);
}

}  // namespace
}  // namespace tcfem
