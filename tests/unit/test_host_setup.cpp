// The host-side setup of large solves: cell nodes computed per cell equal the stored geometry
// field bit for bit, the boundary mask by lattice lines equals the per-node definition, and the
// parallel right-hand side and error loops give the sequential results for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstdlib>
#include <string>

#include "core/parallel.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"
#include "mesh/geometry_field.h"
#include "operators/geometry_data.h"
#include "problem/poisson.h"
#include "tensor/evaluator.h"

namespace {
using namespace tcfem;

/// Sets the host thread count (set_host_threads) for the lifetime of the object.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : old_(host_threads()) { set_host_threads(n); }
  ~ThreadCount() { set_host_threads(old_); }

 private:
  int old_;
};

template <int dim>
void check_mapped_nodes(mesh::GeometryKind g, int k, int n) {
  std::array<int, dim> nc;
  for (int d = 0; d < dim; ++d) nc[d] = n + d;
  mesh::BoxMesh<dim> mesh(nc, g);
  mesh::GeometryField<dim> stored(mesh, k);
  mesh::MappedCellNodes<dim> mapped(mesh, k);
  ASSERT_EQ(stored.nodes_per_cell(), mapped.nodes_per_cell());
  std::vector<double> a(dim * stored.nodes_per_cell()), b(a.size());
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto c = mesh.cell_index(cell);
    stored.cell_nodes(c, a.data());
    b.assign(b.size(), std::nan(""));
    mapped.cell_nodes(c, b.data());
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(a[i], b[i]) << "dim " << dim << " k " << k << " cell " << cell << " entry " << i;
  }
}

TEST(HostSetup, MappedCellNodesEqualGeometryField) {
  for (auto g : {mesh::GeometryKind::cartesian, mesh::GeometryKind::deformed})
    for (int k = 1; k <= 8; ++k) {
      check_mapped_nodes<2>(g, k, 5);
      check_mapped_nodes<3>(g, k, 3);
    }
}

/// The mask and the constrained index list against the definition node by node, for the Dirichlet
/// faces given by the bits of `faces` (bit f: face f = 2 d + side).
template <int dim>
void check_boundary_mask(int k, const std::array<int, dim>& nc, unsigned faces) {
  mesh::BoxMesh<dim> mesh(nc, mesh::GeometryKind::cartesian);
  fe::DirichletFaces<dim> dirichlet;
  for (int f = 0; f < 2 * dim; ++f) dirichlet[f] = (faces >> f) & 1u;
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k, dirichlet);
  const auto indices = dofs.constrained_indices();
  const auto& mask = dofs.boundary_mask();
  ASSERT_EQ(mask.size(), dofs.n_local());
  std::vector<index_t> expected;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    std::size_t r = i;
    bool boundary = false;
    for (int d = 0; d < dim; ++d) {
      const long p = static_cast<long>(r % dofs.lattice_extent()[d]);
      r /= dofs.lattice_extent()[d];
      boundary |= (p == 0 && dirichlet[2 * d]) || (p == static_cast<long>(nc[d]) * k && dirichlet[2 * d + 1]);
    }
    ASSERT_EQ(mask[i] != 0, boundary) << "dim " << dim << " node " << i << " faces " << faces;
    if (boundary) expected.push_back(static_cast<index_t>(i));
  }
  ASSERT_EQ(indices, expected) << "dim " << dim << " faces " << faces;
}

TEST(HostSetup, BoundaryMaskByLinesEqualsNodeDefinition) {
  for (int threads : {1, 3}) {
    ThreadCount tc(threads);
    for (int k : {1, 2, 5})
      for (unsigned faces : {0x3Fu, 0x0u, 0x1u, 0x2u, 0x15u, 0x2Au, 0x24u}) {
        check_boundary_mask<2>(k, {7, 4}, faces & 0xFu);
        check_boundary_mask<3>(k, {3, 5, 2}, faces);
        check_boundary_mask<3>(k, {1, 1, 1}, faces);
        // 16,641 lattice lines: several chunks of lines in the threaded list
        if (k == 2) check_boundary_mask<3>(k, {16, 64, 64}, faces);
      }
  }
}

/// The right-hand side as assembled before the parallel loop: stored geometry field, one cell
/// after the other.
template <int dim>
Vector<double> sequential_rhs(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs) {
  const int k = dofs.degree();
  const auto quad = fe::gauss(k + 2);
  tensor::Evaluator<dim, double> ev(fe::LagrangeBasis1D::gauss_lobatto(k), quad);
  mesh::GeometryField<dim> geometry(mesh, k);
  const int nq = ev.points_per_cell(), n = dofs.dofs_per_cell();
  std::vector<double> nodes(dim * n), x(dim * nq), J(dim * dim * nq), w(nq), fq(nq), local(n);
  std::vector<index_t> idx(n);
  for (int q = 0; q < nq; ++q) {
    int r = q;
    w[q] = 1.0;
    for (int d = 0; d < dim; ++d) {
      w[q] *= quad.weights[r % quad.size()];
      r /= quad.size();
    }
  }
  Vector<double> b(dofs.n_local());
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto c = mesh.cell_index(cell);
    geometry.cell_nodes(c, nodes.data());
    operators::cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
    for (int q = 0; q < nq; ++q) {
      mesh::Point<dim> xq;
      std::array<std::array<double, dim>, dim> Jq, inv;
      for (int d = 0; d < dim; ++d) xq[d] = x[d * nq + q];
      for (int a = 0; a < dim; ++a)
        for (int c2 = 0; c2 < dim; ++c2) Jq[a][c2] = J[(a * dim + c2) * nq + q];
      fq[q] = problem::right_hand_side<dim>(xq) * operators::invert<dim>(Jq, inv) * w[q];
    }
    ev.integrate_values(fq.data(), local.data());
    dofs.cell_dof_indices(c, idx.data());
    for (int i = 0; i < n; ++i) b[idx[i]] += local[i];
  }
  if (dofs.disc() == fe::Disc::cg)
    for (std::size_t i = 0; i < b.size(); ++i)
      if (dofs.boundary_mask()[i]) b[i] = 0.0;
  return b;
}

TEST(HostSetup, ParallelRhsAndErrorsEqualSequential) {
  // 3D meshes above one batch of cells, so that several batches and threads run
  for (auto disc : {fe::Disc::cg, fe::Disc::dg})
    for (auto g : {mesh::GeometryKind::cartesian, mesh::GeometryKind::deformed}) {
      mesh::BoxMesh<3> mesh({20, 17, 16}, g);
      fe::DofLayout<3> dofs(mesh, disc, 2);
      const auto reference = sequential_rhs<3>(mesh, dofs);
      Vector<double> u(dofs.n_local());
      for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::sin(0.37 * double(i));
      problem::Errors e1;
      for (int threads : {1, 2, 5}) {
        ThreadCount tc(threads);
        const auto b = problem::assemble_rhs<3>(mesh, dofs);
        ASSERT_EQ(b.size(), reference.size());
        // deformed cells: the same arithmetic (bit for bit); Cartesian cells: x = (c + xi) h and
        // J = diag(h) directly instead of interpolated from the nodes (rounding differences only)
        const double scale = *std::max_element(reference.data(), reference.data() + reference.size());
        for (std::size_t i = 0; i < b.size(); ++i) {
          if (g == mesh::GeometryKind::deformed)
            ASSERT_EQ(b[i], reference[i]) << "threads " << threads << " entry " << i;
          else
            ASSERT_NEAR(b[i], reference[i], 1e-13 * scale) << "threads " << threads << " entry " << i;
        }
        if (threads > 1) {
          const auto b1 = [&] {
            ThreadCount one(1);
            return problem::assemble_rhs<3>(mesh, dofs);
          }();
          for (std::size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], b1[i]) << "threads " << threads << " entry " << i;
        }
        const auto e = problem::compute_errors<3>(mesh, dofs, u);
        if (threads == 1) e1 = e;
        EXPECT_NEAR(e.l2, e1.l2, 1e-14 * e1.l2) << "threads " << threads;
        EXPECT_NEAR(e.h1_semi, e1.h1_semi, 1e-14 * e1.h1_semi) << "threads " << threads;
        EXPECT_TRUE(std::isfinite(e.l2) && e.l2 > 0.0);
      }
    }
}

TEST(HostSetup, ParallelChunksCoverTheRangeOnce) {
  for (int threads : {1, 2, 7}) {
    std::vector<int> hits(1000, 0);
    std::vector<int> order;
    parallel_chunks(
        10, 1000,
        [&](std::size_t b, std::size_t e, int) {
          for (std::size_t i = b; i < e; ++i) ++hits[i];
        },
        threads);
    for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], i < 10 ? 0 : 1);
  }
  EXPECT_THROW(parallel_chunks(0, 100, [](std::size_t, std::size_t, int t) {
                 if (t == 1) throw std::runtime_error("chunk 1");
               }, 4),
               std::runtime_error);
}

}  // namespace
