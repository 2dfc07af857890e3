// The Kronecker form of the grid transfer (multigrid/transfer_1d.h, the device transfer's
// algorithm and index maps run on the host) against MatrixFreeTransfer on random vectors: cg and
// dg, 2D and 3D, non-cubic boxes, degrees 1..6.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "multigrid/host/transfer.h"
#include "multigrid/transfer_1d.h"

namespace {
using namespace tcfem;
using namespace tcfem::multigrid;

/// dim passes of the 1D factors from `in` (extents from) to `out` (extents to), as the device does.
template <int dim>
std::vector<double> kronecker_apply(fe::Disc disc, int k, const std::array<Ell1d, dim>& m,
                                    std::array<std::int64_t, 3> from, const std::array<std::int64_t, 3>& to,
                                    const std::vector<double>& in) {
  PassShape s;
  s.dim = dim;
  s.dg = disc == fe::Disc::dg;
  s.n_1d = k + 1;
  std::vector<double> src = in, dst;
  for (int d = 0; d < dim; ++d) {
    s.set(d, from, to[d]);
    from[d] = to[d];
    dst.assign(std::size_t(s.n_out()), std::nan(""));
    apply_pass_host(s, m[d], src.data(), dst.data());
    src.swap(dst);
  }
  return src;
}

double rel_diff(const std::vector<double>& a, const Vector<double>& ref) {
  double d = 0, n = 0;
  if (a.size() != ref.size()) return 1e300;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return 1e300;
    d += (a[i] - ref[i]) * (a[i] - ref[i]);
    n += ref[i] * ref[i];
  }
  return std::sqrt(d / std::max(n, 1e-300));
}

template <int dim>
void check(fe::Disc disc, int k, std::array<int, dim> coarse_cells, std::uint64_t seed,
           const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>()) {
  std::array<int, dim> fine_cells;
  for (int d = 0; d < dim; ++d) fine_cells[d] = 2 * coarse_cells[d];
  mesh::BoxMesh<dim> cm(coarse_cells, mesh::GeometryKind::cartesian), fm(fine_cells, mesh::GeometryKind::cartesian);
  fe::DofLayout<dim> cd(cm, disc, k, dirichlet), fd(fm, disc, k, dirichlet);
  MatrixFreeTransfer<dim, double> cpu(cm, cd, fm, fd);
  std::array<Ell1d, dim> p, r;
  std::array<std::int64_t, 3> ce{1, 1, 1}, fe_{1, 1, 1};
  for (int d = 0; d < dim; ++d) {
    p[d] = prolongation_1d(disc, k, coarse_cells[d], dirichlet[2 * d], dirichlet[2 * d + 1]);
    r[d] = transpose(p[d]);
    ce[d] = p[d].cols;
    fe_[d] = p[d].rows;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  Vector<double> c(cd.n_local()), f(fd.n_local()), c_ref(cd.n_local()), f_ref(fd.n_local());
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = dist(rng);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = dist(rng);
  cpu.prolongate(f_ref, c);
  cpu.restrict_to_coarse(c_ref, f);
  const auto f_kron = kronecker_apply<dim>(disc, k, p, ce, fe_, std::vector<double>(c.data(), c.data() + c.size()));
  const auto c_kron = kronecker_apply<dim>(disc, k, r, fe_, ce, std::vector<double>(f.data(), f.data() + f.size()));
  const std::string what = std::string(fe::to_string(disc)) + " dim " + std::to_string(dim) + " k " + std::to_string(k);
  EXPECT_LT(rel_diff(f_kron, f_ref), 1e-13) << "prolongation " << what;
  EXPECT_LT(rel_diff(c_kron, c_ref), 1e-13) << "restriction " << what;
}

TEST(TransferKronecker, MatchesMatrixFreeTransfer) {
  std::uint64_t seed = 7;
  for (int k = 1; k <= 6; ++k)
    for (auto disc : {fe::Disc::cg, fe::Disc::dg}) {
      check<2>(disc, k, {3, 2}, ++seed);
      check<2>(disc, k, {1, 1}, ++seed);
      check<3>(disc, k, {2, 1, 3}, ++seed);
    }
}

TEST(TransferKronecker, NeumannFacesMatchMatrixFreeTransfer) {
  // cg nodes on Neumann faces are free: their rows and columns stay in the 1D factors
  std::uint64_t seed = 70;
  for (int k = 1; k <= 6; ++k) {
    check<2>(fe::Disc::cg, k, {3, 2}, ++seed, {false, true, true, false});
    check<2>(fe::Disc::cg, k, {1, 2}, ++seed, {false, false, false, true});
    check<3>(fe::Disc::cg, k, {2, 1, 3}, ++seed, {true, false, false, true, false, true});
    check<3>(fe::Disc::cg, k, {2, 2, 1}, ++seed, {false, false, true, false, false, false});
  }
}

TEST(TransferKronecker, TransposeIsExact) {
  const auto p = prolongation_1d(fe::Disc::cg, 3, 4);
  const auto r = transpose(p);
  EXPECT_EQ(r.rows, p.cols);
  EXPECT_EQ(r.cols, p.rows);
  // every nonzero of p appears in r at the transposed place with the same value
  for (int i = 0; i < p.rows; ++i)
    for (int t = 0; t < p.width; ++t) {
      const double w = p.weight[i * p.width + t];
      if (w == 0.0) continue;
      const int j = p.col[i * p.width + t];
      double found = 0.0;
      for (int s = 0; s < r.width; ++s)
        if (r.col[j * r.width + s] == i) found += r.weight[j * r.width + s];
      EXPECT_EQ(found, w);
    }
}

}  // namespace
