// The cuda-core kernels on the CPU: (1) every warp-wide shared-memory access of each kernel's
// layout enumerated and checked for bank conflicts; (2) the block programs run by the host
// emulator (the same phase functions the kernels call) against the CPU operator on small meshes
// with anisotropic cell counts, several tiles, partial tiles, single-cell directions and several
// worker counts (segments of one or more layers, split inside tiles and across tiles).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "operators/cuda_core/emulator.h"
#include "operators/cuda_core/layouts.h"
#include "operators/cuda_core/setup.h"
#include "operators/cpu/laplace_operator.h"

namespace {
using namespace tcfem;
using namespace tcfem::operators::cuda_core;

struct Conflicts {
  int degree[3] = {1, 1, 1};  // worst conflict degree per phase (column, x, y)
  long accesses = 0;
};

int phase_index(char ph) { return ph == 'Z' ? 0 : ph == 'X' ? 1 : 2; }

Conflicts cg3_conflicts(int k, int bytes) {
  Conflicts c;
  const auto L = cg3_layout(k, bytes);
  for (int np : {1, k})
    for_each_cg3_access(L, np, [&](char ph, const std::array<long, warp_lanes>& a) {
      const auto cost = access_cost(a, bytes);
      c.degree[phase_index(ph)] = std::max(c.degree[phase_index(ph)], cost.degree);
      ++c.accesses;
    });
  return c;
}

Conflicts cg2_conflicts(int k, int bytes) {
  Conflicts c;
  const auto L = cg2_layout(k, bytes);
  for (int np : {1, k})
    for_each_cg2_access(L, np, [&](char ph, const std::array<long, warp_lanes>& a) {
      const auto cost = access_cost(a, bytes);
      c.degree[phase_index(ph)] = std::max(c.degree[phase_index(ph)], cost.degree);
      ++c.accesses;
    });
  return c;
}

TEST(CudaCoreLayouts, BankModel) {
  std::array<long, warp_lanes> a{};
  for (int l = 0; l < warp_lanes; ++l) a[l] = l;
  EXPECT_EQ(access_cost(a, 8).wavefronts, 2);  // 256 bytes: two half-warps
  EXPECT_EQ(access_cost(a, 4).wavefronts, 1);
  for (int l = 0; l < warp_lanes; ++l) a[l] = 16 * l;  // doubles: one bank pair
  EXPECT_EQ(access_cost(a, 8).degree, 16);
  for (int l = 0; l < warp_lanes; ++l) a[l] = 7;  // broadcast
  EXPECT_EQ(access_cost(a, 8).degree, 1);
  for (int l = 0; l < warp_lanes; ++l) a[l] = l < 16 ? l : l + 16;  // halves independent
  EXPECT_EQ(access_cost(a, 8).degree, 1);
  for (int l = 0; l < warp_lanes; ++l) a[l] = 2 * l;  // floats: 2-way
  EXPECT_EQ(access_cost(a, 4).degree, 2);
}

TEST(CudaCoreLayouts, Cg3ConflictFree) {
  for (int k = 1; k <= 8; ++k)
    for (int bytes : {8, 4}) {
      const auto L = cg3_layout(k, bytes);
      EXPECT_EQ(L.N, L.T * k + 1);
      EXPECT_GE(L.group, L.T);
      EXPECT_LE(L.threads, 1024);
      const auto c = cg3_conflicts(k, bytes);
      EXPECT_GT(c.accesses, 0);
      for (int ph = 0; ph < 3; ++ph)
        EXPECT_EQ(c.degree[ph], 1) << "3D cg k=" << k << " bytes=" << bytes << " phase " << "ZXY"[ph];
    }
}

TEST(CudaCoreLayouts, Cg2ConflictFree) {
  for (int k = 1; k <= 8; ++k)
    for (int bytes : {8, 4}) {
      const auto L = cg2_layout(k, bytes);
      EXPECT_LE(L.N, warp_lanes);
      EXPECT_GE(L.group, L.T);
      const auto c = cg2_conflicts(k, bytes);
      for (int ph = 0; ph < 2; ++ph)
        EXPECT_EQ(c.degree[ph], 1) << "2D cg k=" << k << " bytes=" << bytes << " phase " << "ZX"[ph];
    }
}

TEST(CudaCoreLayouts, DgConflictFree) {
  for (int k = 1; k <= 8; ++k)
    for (int bytes : {8, 4}) {
      const auto L3 = dg3_layout(k, bytes);
      EXPECT_EQ(L3.NS, L3.T * (k + 1));
      EXPECT_GE(L3.threads, 4 * L3.NS);
      int worst[3] = {1, 1, 1};
      for_each_dg3_access(L3, [&](char ph, const std::array<long, warp_lanes>& a) {
        worst[phase_index(ph)] = std::max(worst[phase_index(ph)], access_cost(a, bytes).degree);
      });
      EXPECT_EQ(worst[0], dg3_column_conflicts(k, bytes)) << "3D dg k=" << k << " bytes=" << bytes << " column phase";
      for (int ph = 1; ph < 3; ++ph)
        EXPECT_EQ(worst[ph], 1) << "3D dg k=" << k << " bytes=" << bytes << " phase " << "ZXY"[ph];
      const auto L2 = dg2_layout(k, bytes);
      EXPECT_LE(L2.NS, warp_lanes);
      int worst2[2] = {1, 1};
      for_each_dg2_access(L2, [&](char ph, const std::array<long, warp_lanes>& a) {
        worst2[phase_index(ph)] = std::max(worst2[phase_index(ph)], access_cost(a, bytes).degree);
      });
      for (int ph = 0; ph < 2; ++ph)
        EXPECT_EQ(worst2[ph], 1) << "2D dg k=" << k << " bytes=" << bytes << " phase " << "ZX"[ph];
    }
}

/// Every node of a tile is written exactly once per line phase (the line items cover the tile).
TEST(CudaCoreLayouts, Cg3LineItemsCoverTile) {
  for (int k = 1; k <= 8; ++k)
    for (int bytes : {8, 4}) {
      const auto L = cg3_layout(k, bytes);
      for (int np : {1, k}) {
        std::vector<int> hits(L.N * L.N * np, 0);
        for (int u = 0; u < line_units(L, np); ++u)
          for (int l = 0; l < warp_lanes; ++l) {
            const auto it = line_item(L, u, l, np);
            if (!it.valid) continue;
            for (int i = 0; i < k + (it.seg == L.T - 1 ? 1 : 0); ++i)
              ++hits[(it.plane * L.N + it.line) * L.N + it.seg * k + i];
          }
        for (int h : hits) ASSERT_EQ(h, 1) << "k=" << k;
      }
      int columns = 0;
      for (int t = 0; t < L.threads; ++t) columns += column_of(L, t).valid;
      EXPECT_EQ(columns, L.N * L.N);
    }
}

// ---- the host emulation against the CPU operator ----------------------------------------------------

template <typename Number>
double rel_error(const Vector<double>& ref, const std::vector<Number>& out) {
  double d = 0, r = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(double(out[i]))) return std::numeric_limits<double>::infinity();
    d += (ref[i] - out[i]) * (ref[i] - out[i]);
    r += ref[i] * ref[i];
  }
  return std::sqrt(d / r);
}

/// A Cartesian mesh with `nc` cells, a random input (rounded to Number) and its image under the
/// CPU operator, the reference of the emulated kernels.
template <int dim, typename Number>
struct CpuReference {
  mesh::BoxMesh<dim> mesh;
  fe::DofLayout<dim> dofs;
  std::vector<Number> x;
  Vector<double> ref;
  CpuReference(const std::array<int, dim>& nc, fe::Disc disc, int k, std::uint64_t seed)
      : mesh(nc, mesh::GeometryKind::cartesian), dofs(mesh, disc, k) {
    operators::OperatorConfig cfg;
    cfg.disc = disc;
    cfg.degree = k;
    operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    const std::size_t n = dofs.n_local();
    Vector<double> xd(n);
    x.resize(n);
    ref = Vector<double>(n);
    for (std::size_t i = 0; i < n; ++i) xd[i] = x[i] = static_cast<Number>(dist(rng));
    A.vmult(ref, xd);
  }
};

template <int dim, int k, typename Number>
double emulated_cg_error(const std::array<int, dim>& nc, int chunk, std::uint64_t seed) {
  const CpuReference<dim, Number> c(nc, fe::Disc::cg, k, seed);
  std::vector<Number> out(c.x.size(), std::numeric_limits<Number>::quiet_NaN());
  const auto p = make_cg_params<dim, k, Number>(c.mesh, chunk);
  if constexpr (dim == 3)
    emulate_cg3<k, Number>(p, c.x.data(), out.data());
  else
    emulate_cg2<k, Number>(p, c.x.data(), out.data());
  return rel_error(c.ref, out);
}

// Work items of 1, 2 and all layers.
template <int k>
void check_cg_emulation() {
  std::random_device rd;
  constexpr int T3 = Cg3Program<k, double>::L.T;
  for (int chunk : {1, 2, 9}) {
    EXPECT_LT((emulated_cg_error<3, k, double>({T3 + 1, T3 + 2, 3}, chunk, rd())), 1e-12) << "3D k=" << k;
    EXPECT_LT((emulated_cg_error<3, k, double>({1, T3 + 1, 2}, chunk, rd())), 1e-12) << "3D k=" << k;
  }
  EXPECT_LT((emulated_cg_error<3, k, double>({2, 1, 1}, 4, rd())), 1e-12) << "3D k=" << k;
  EXPECT_LT((emulated_cg_error<3, k, float>({Cg3Program<k, float>::L.T + 1, 2, 3}, 4, rd())), 1e-5) << "3D fp32 k=" << k;
  constexpr int T2 = Cg2Program<k, double>::L.T;
  for (int chunk : {1, 2, 9}) {
    EXPECT_LT((emulated_cg_error<2, k, double>({T2 + 2, 5}, chunk, rd())), 1e-12) << "2D k=" << k;
    EXPECT_LT((emulated_cg_error<2, k, double>({1, 3}, chunk, rd())), 1e-12) << "2D k=" << k;
  }
  EXPECT_LT((emulated_cg_error<2, k, double>({3, 1}, 1, rd())), 1e-12) << "2D k=" << k;
  EXPECT_LT((emulated_cg_error<2, k, float>({2 * T2 + 1, 4}, 3, rd())), 1e-5) << "2D fp32 k=" << k;
}

template <int dim, int k, typename Number>
double emulated_dg_error(const std::array<int, dim>& nc, int chunk, std::uint64_t seed) {
  const CpuReference<dim, Number> c(nc, fe::Disc::dg, k, seed);
  std::vector<Number> out(c.x.size(), std::numeric_limits<Number>::quiet_NaN());
  const auto p = make_dg_params<dim, k, Number>(c.mesh, chunk);
  if constexpr (dim == 3)
    emulate_dg3<k, Number>(p, c.x.data(), out.data());
  else
    emulate_dg2<k, Number>(p, c.x.data(), out.data());
  return rel_error(c.ref, out);
}

template <int k>
void check_dg_emulation() {
  std::random_device rd;
  constexpr int T3 = Dg3Program<k, double>::L.T;
  for (int chunk : {1, 2, 9}) {
    EXPECT_LT((emulated_dg_error<3, k, double>({T3 + 1, T3 + 2, 3}, chunk, rd())), 1e-12) << "3D dg k=" << k;
    EXPECT_LT((emulated_dg_error<3, k, double>({1, T3 + 1, 2}, chunk, rd())), 1e-12) << "3D dg k=" << k;
  }
  EXPECT_LT((emulated_dg_error<3, k, double>({2, 1, 1}, 4, rd())), 1e-12) << "3D dg k=" << k;
  EXPECT_LT((emulated_dg_error<3, k, float>({Dg3Program<k, float>::L.T + 1, 2, 3}, 4, rd())), 1e-5) << "3D dg fp32 k=" << k;
  constexpr int T2 = Dg2Program<k, double>::L.T;
  for (int chunk : {1, 2, 9}) {
    EXPECT_LT((emulated_dg_error<2, k, double>({T2 + 2, 5}, chunk, rd())), 1e-12) << "2D dg k=" << k;
    EXPECT_LT((emulated_dg_error<2, k, double>({1, 3}, chunk, rd())), 1e-12) << "2D dg k=" << k;
  }
  EXPECT_LT((emulated_dg_error<2, k, double>({3, 1}, 1, rd())), 1e-12) << "2D dg k=" << k;
  EXPECT_LT((emulated_dg_error<2, k, float>({2 * T2 + 1, 4}, 3, rd())), 1e-5) << "2D dg fp32 k=" << k;
}

TEST(CudaCoreEmulation, CartesianDgMatchesCpu) {
  check_dg_emulation<1>();
  check_dg_emulation<2>();
  check_dg_emulation<3>();
  check_dg_emulation<4>();
  check_dg_emulation<5>();
  check_dg_emulation<6>();
  check_dg_emulation<7>();
  check_dg_emulation<8>();
}

TEST(CudaCoreEmulation, CartesianCgMatchesCpu) {
  check_cg_emulation<1>();
  check_cg_emulation<2>();
  check_cg_emulation<3>();
  check_cg_emulation<4>();
  check_cg_emulation<5>();
  check_cg_emulation<6>();
  check_cg_emulation<7>();
  check_cg_emulation<8>();
}

/// The apply split around the cells [lo, hi) (split_regions), each region a launch of its own
/// with items of `chunk` layers, added into one zeroed output, against the CPU operator.
template <int dim, int k>
double emulated_split_error(fe::Disc disc, const std::array<int, dim>& nc, int chunk, const int lo[3], const int hi[3],
                            std::size_t expected_regions, std::uint64_t seed) {
  const CpuReference<dim, double> c(nc, disc, k, seed);
  const auto& mesh = c.mesh;
  const auto& xs = c.x;
  std::vector<double> out(xs.size(), 0.0);
  int cells[3] = {1, 1, 1};
  for (int d = 0; d < dim; ++d) cells[d] = nc[d];
  auto run = [&](const auto& whole, int T, auto&& emulate) {
    const auto r = split_regions(whole, T, dim, cells, lo, hi);
    EXPECT_FALSE(r.interior.empty());
    EXPECT_EQ(r.rest.size(), expected_regions);
    // every (tile, layer) unit in exactly one region
    std::vector<int> covered(std::size_t(whole.n_tiles() * whole.layers), 0);
    std::vector<WorkRegion> all{r.interior};
    all.insert(all.end(), r.rest.begin(), r.rest.end());
    for (const auto& g : all)
      for (int z = g.layer0; z < g.layer1; ++z)
        for (int ty = g.tile0[1]; ty < g.tile1[1]; ++ty)
          for (int tx = g.tile0[0]; tx < g.tile1[0]; ++tx)
            ++covered[std::size_t((std::int64_t(z) * whole.tiles[1] + ty) * whole.tiles[0] + tx)];
    for (int c : covered) EXPECT_EQ(c, 1);
    for (const auto& g : all) {
      auto p = whole;
      p.region = g;
      emulate(p);
    }
  };
  if (disc == fe::Disc::cg) {
    const auto whole = make_cg_params<dim, k, double>(mesh, chunk);
    if constexpr (dim == 3)
      run(whole, Cg3Program<k, double>::L.T, [&](const auto& p) { emulate_cg3<k, double>(p, xs.data(), out.data(), false); });
    else
      run(whole, Cg2Program<k, double>::L.T, [&](const auto& p) { emulate_cg2<k, double>(p, xs.data(), out.data(), false); });
  } else {
    const auto whole = make_dg_params<dim, k, double>(mesh, chunk);
    if constexpr (dim == 3)
      run(whole, Dg3Program<k, double>::L.T, [&](const auto& p) { emulate_dg3<k, double>(p, xs.data(), out.data()); });
    else
      run(whole, Dg2Program<k, double>::L.T, [&](const auto& p) { emulate_dg2<k, double>(p, xs.data(), out.data()); });
  }
  return rel_error(c.ref, out);
}

template <int k>
void check_split_emulation() {
  std::random_device rd;
  for (const auto disc : {fe::Disc::cg, fe::Disc::dg}) {
    const std::string what = std::string(fe::to_string(disc)) + " k=" + std::to_string(k);
    // 3D: a cut on every side (tiles are at most 16 cells wide), and in z only
    const int lo3[3] = {1, 2, 1}, hi3[3] = {34, 33, 4};
    EXPECT_LT((emulated_split_error<3, k>(disc, {35, 34, 5}, 2, lo3, hi3, 6, rd())), 1e-12) << what;
    const int loz[3] = {0, 0, 2}, hiz[3] = {3, 2, 3};
    EXPECT_LT((emulated_split_error<3, k>(disc, {3, 2, 4}, 1, loz, hiz, 2, rd())), 1e-12) << what << " z";
    // 2D: tiles are at most 32 cells wide
    const int lo2[3] = {1, 1, 0}, hi2[3] = {69, 5, 1};
    EXPECT_LT((emulated_split_error<2, k>(disc, {70, 6}, 2, lo2, hi2, 4, rd())), 1e-12) << what << " 2D";
  }
}

TEST(CudaCoreEmulation, SplitApplyMatchesCpu) {
  check_split_emulation<1>();
  check_split_emulation<2>();
  check_split_emulation<4>();
  check_split_emulation<7>();
}

TEST(CudaCoreEmulation, SplitRegionsOfAnEmptyInterior) {
  TileWork w;
  w.tiles[0] = 3;
  w.tiles[1] = 2;
  w.layers = 5;
  w.region = w.whole_region();
  const int cells[3] = {24, 16, 5}, lo[3] = {1, 1, 1}, hi[3] = {7, 15, 4};  // no whole tile of 8 cells in x
  const auto r = split_regions(w, 8, 3, cells, lo, hi);
  EXPECT_TRUE(r.interior.empty());
  ASSERT_EQ(r.rest.size(), 1u);
  EXPECT_EQ(r.rest[0].n_tiles(), 6);
  EXPECT_EQ(r.rest[0].n_layers(), 5);
}

}  // namespace
