// The shared-memory layouts and index maps of the tensor-core cg kernels (CPU only):
//  - every warp-wide shared-memory access the kernels make (gather stores, the A loads and C stores
//    of every phase, tile, K chunk and N tile, scatter loads, cell-info loads) is free of bank
//    conflicts: 32 banks of 4 bytes; 4-byte words per warp, 8-byte words per half-warp;
//  - the layout is injective, the phases cover every row once, work in place without touching
//    another tile's lines, and write every output;
//  - a host emulation of the whole kernel (same index maps, lane maps, roundings and splits, the
//    warp mma emulator) matches the CPU operator for every configuration the kernels compile.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "arch/lane_maps.h"
#include "arch/warp_mma_emulator.h"
#include "fe/lagrange.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/operator_tables.h"
#include "operators/tensor_core/dg_faces.h"
#include "operators/tensor_core/layouts.h"
#include "precision/split_arithmetic.h"

namespace {

using namespace tcfem;
using namespace tcfem::operators::tensor_core;
using precision::Precision;

// ---- the configurations the kernels compile ------------------------------------------------------

enum class Family { fp64_sm90, fp64_sm80, tf32, half };

AtomShape shape_of(Family f, int n) {
  switch (f) {
    case Family::fp64_sm90: return fp64_sm90_shape(n);
    case Family::fp64_sm80: return fp64_sm80_shape();
    case Family::tf32: return tf32_shape();
    case Family::half: return half_shape();
  }
  return {};
}
const char* name_of(Family f) {
  switch (f) {
    case Family::fp64_sm90: return "fp64-sm90";
    case Family::fp64_sm80: return "fp64-sm80";
    case Family::tf32: return "tf32";
    case Family::half: return "fp16/bf16";
  }
  return "?";
}

struct Config {
  Family family;
  int dim, n;
  CgLayout layout;
  std::string name() const {
    return std::string(name_of(family)) + " dim " + std::to_string(dim) + " n " + std::to_string(n);
  }
};

std::vector<Config> all_configs() {
  std::vector<Config> configs;
  for (Family f : {Family::fp64_sm90, Family::fp64_sm80, Family::tf32, Family::half})
    for (int dim : {2, 3})
      for (int n = 2; n <= max_n; ++n) configs.push_back({f, dim, n, make_cg_layout(dim, n, shape_of(f, n))});
  return configs;
}

// ---- lane maps by shape ---------------------------------------------------------------------------

/// Calls f(Map{}) with the lane map of the instruction shape.
template <class F>
void with_lane_map(const AtomShape& s, F&& f) {
  if (s.word_bytes == 8 && s.m == 8) return f(arch::LaneMap_M8N8K4_F64{});
  if (s.word_bytes == 8 && s.k == 4) return f(arch::LaneMap_M16N8K4_F64{});
  if (s.word_bytes == 8 && s.k == 8) return f(arch::LaneMap_M16N8K8_F64{});
  if (s.word_bytes == 4 && s.k == 8) return f(arch::LaneMap_M16N8K8_TF32{});
  if (s.word_bytes == 4 && s.k == 16 && s.packed16) return f(arch::LaneMap_M16N8K16_F16{});
  ADD_FAILURE() << "no lane map for the shape";
}

// ---- bank conflicts -------------------------------------------------------------------------------

/// One warp-wide access: the word address of each lane (-1: lane inactive).
using WarpAccess = std::array<long, warp_lanes>;

/// Whether two active lanes of one wavefront group (the warp for 4-byte words, each half-warp for
/// 8-byte words) touch different words of one bank (bank pair for 8-byte words).
bool has_conflict(const WarpAccess& access, int word_bytes) {
  const int group = word_bytes == 8 ? 16 : 32;
  const int banks = word_bytes == 8 ? 16 : 32;  // banks in units of words
  for (int g0 = 0; g0 < warp_lanes; g0 += group) {
    std::map<long, long> word_of_bank;
    for (int lane = g0; lane < g0 + group; ++lane) {
      const long a = access[lane];
      if (a < 0) continue;
      const auto [it, inserted] = word_of_bank.emplace(a % banks, a);
      if (!inserted && it->second != a) return true;
    }
  }
  return false;
}

/// All warp-wide accesses of one batch, labelled, in the order the kernel makes them.
struct LabelledAccess {
  std::string what;
  WarpAccess lanes;
  int word_bytes;
};

template <class Map>
std::vector<LabelledAccess> enumerate_accesses(const CgLayout& L, Map) {
  std::vector<LabelledAccess> out;
  const int w = L.atom.word_bytes;
  const int threads = L.threads();
  // gather stores (slot 1) and scatter loads (slot 0) at every position o of the outermost
  // direction, and the cell-info loads (8-byte bases, 4-byte flags)
  for (int warp = 0; warp < L.warps; ++warp)
    for (int s = 0; s < L.plane_iterations(); ++s)
      for (int o = 0; o < L.n; ++o) {
        WarpAccess gather, scatter, base, flags;
        gather.fill(-1);
        scatter.fill(-1);
        base.fill(-1);
        flags.fill(-1);
        for (int lane = 0; lane < warp_lanes; ++lane) {
          const NodeRef ref = plane_node_ref(L, s * threads + warp * warp_lanes + lane);
          if (!ref.valid) continue;
          gather[lane] = ref.offset + L.tensor_stride + o * L.outer_stride();
          scatter[lane] = ref.offset + o * L.outer_stride();
          base[lane] = ref.cell;
          flags[lane] = ref.cell;
        }
        const std::string where =
            " warp " + std::to_string(warp) + " iteration " + std::to_string(s) + " position " + std::to_string(o);
        out.push_back({"gather store" + where, gather, w});
        out.push_back({"scatter load" + where, scatter, w});
        if (o == 0) {
          out.push_back({"cell base load" + where, base, 8});
          out.push_back({"cell flags load" + where, flags, 4});
        }
      }
  // the phases
  for (int p = 0; p < L.dim; ++p) {
    const int d = phase_direction(L.dim, p);
    const PhaseKind kind = phase_kind(L.dim, p);
    for (int tile = 0; tile < L.tiles(); ++tile) {
      const std::string where = " phase " + std::to_string(p) + " tile " + std::to_string(tile);
      for (int kc = 0; kc < k_chunks(L, p); ++kc)
        for (int e = 0; e < Map::a_elements; ++e) {
          WarpAccess a;
          a.fill(-1);
          for (int lane = 0; lane < warp_lanes; ++lane) {
            const RowRef row = row_ref(L, d, tile * Map::M + Map::a_row(lane, e));
            const int j = kc * L.atom.k + kperm(L.atom.packed16, Map::a_col(lane, e));
            if (row.valid && j < k_total(kind, L.n)) a[lane] = row.base + in_offset(L, p, j);
          }
          out.push_back({"A load" + where + " chunk " + std::to_string(kc) + " element " + std::to_string(e), a, w});
        }
      for (int nt = 0; nt < n_tiles(L, p); ++nt)
        for (int e = 0; e < Map::c_elements; ++e) {
          WarpAccess c;
          c.fill(-1);
          for (int lane = 0; lane < warp_lanes; ++lane) {
            const RowRef row = row_ref(L, d, tile * Map::M + Map::c_row(lane, e));
            const int i = nt * atom_n + nperm(Map::c_col(lane, e));
            if (row.valid && i < n_total(kind, L.n)) c[lane] = row.base + out_offset(L, p, i);
          }
          out.push_back({"C store" + where + " tile " + std::to_string(nt) + " element " + std::to_string(e), c, w});
        }
    }
  }
  return out;
}

TEST(TensorCoreLayouts, EveryConfigurationHasALayout) {
  for (const auto& c : all_configs()) {
    const CgLayout& L = c.layout;
    EXPECT_GT(L.cell_stride, 0) << c.name();
    EXPECT_EQ(L.cell_stride % 8, 4) << c.name();
    EXPECT_EQ(L.cells % (L.atom.word_bytes == 8 ? 4 : 8), 0) << c.name();
    EXPECT_TRUE(t_parts_distinct(L)) << c.name();
    EXPECT_GE(L.tensor_stride, L.n * L.stride[L.dim - 1]) << c.name();
    EXPECT_GE(L.cell_stride, 2 * L.tensor_stride) << c.name();
    // shared memory of one block below the 227 KB a block may opt into on sm_90, below 164 KB (sm_80)
    EXPECT_LE(L.smem_words() * L.atom.word_bytes + 3 * L.cells * 12, 160 * 1024) << c.name();
  }
}

TEST(TensorCoreLayouts, NoBankConflicts) {
  for (const auto& c : all_configs())
    with_lane_map(c.layout.atom, [&](auto map) {
      int checked = 0;
      for (const auto& access : enumerate_accesses(c.layout, map)) {
        ++checked;
        EXPECT_FALSE(has_conflict(access.lanes, access.word_bytes)) << c.name() << ": " << access.what;
      }
      EXPECT_GT(checked, 0);
    });
}

TEST(TensorCoreLayouts, ConflictCheckerFindsConflicts) {
  WarpAccess a;
  for (int lane = 0; lane < warp_lanes; ++lane) a[lane] = lane;
  EXPECT_FALSE(has_conflict(a, 4));
  EXPECT_FALSE(has_conflict(a, 8));  // 16 consecutive 8-byte words per half-warp
  a[1] = 32;                         // bank 0 again, another word
  EXPECT_TRUE(has_conflict(a, 4));
  for (int lane = 0; lane < warp_lanes; ++lane) a[lane] = 2 * lane;
  EXPECT_TRUE(has_conflict(a, 8));   // stride 2 in 8-byte words: two-way
  for (int lane = 0; lane < warp_lanes; ++lane) a[lane] = 7;
  EXPECT_FALSE(has_conflict(a, 8));  // broadcast
}

TEST(TensorCoreLayouts, LayoutIsInjectiveAndPhasesWorkInPlace) {
  for (const auto& c : all_configs())
    with_lane_map(c.layout.atom, [&](auto map) {
      using Map = decltype(map);
      const CgLayout& L = c.layout;
      const int n = L.n, per_cell = L.nodes_per_cell();
      // injective, in bounds
      std::set<long> addresses;
      for (int cell = 0; cell < L.cells; ++cell)
        for (int slot = 0; slot < 2; ++slot)
          for (int node = 0; node < per_cell; ++node) {
            long a = cell * L.cell_stride + slot * L.tensor_stride;
            int rest = node;
            for (int e = 0; e < L.dim; ++e) {
              a += (rest % n) * L.stride[e];
              rest /= n;
            }
            EXPECT_LT(a, L.smem_words()) << c.name();
            EXPECT_TRUE(addresses.insert(a).second) << c.name() << ": address " << a << " twice";
          }
      // gather items cover every node of every cell once
      std::set<long> gathered;
      for (int item = 0; item < L.plane_iterations() * L.threads(); ++item) {
        const NodeRef ref = plane_node_ref(L, item);
        if (!ref.valid) continue;
        EXPECT_EQ(ref.local[L.dim - 1], 0) << c.name();
        for (int o = 0; o < n; ++o) EXPECT_TRUE(gathered.insert(ref.offset + o * L.outer_stride()).second) << c.name();
      }
      EXPECT_EQ(gathered.size(), std::size_t(L.cells * per_cell)) << c.name();
      // phases: rows covered once; a tile writes only what it alone reads; every output written
      for (int p = 0; p < L.dim; ++p) {
        const int d = phase_direction(L.dim, p);
        const PhaseKind kind = phase_kind(L.dim, p);
        std::set<std::pair<int, int>> rows;
        std::map<long, int> reader;  // address -> tile
        std::set<long> written;
        for (int tile = 0; tile < L.tiles(); ++tile)
          for (int r = 0; r < Map::M; ++r) {
            const RowRef row = row_ref(L, d, tile * Map::M + r);
            if (!row.valid) continue;
            EXPECT_TRUE(rows.insert({row.cell, row.line}).second) << c.name();
            for (int j = 0; j < k_total(kind, n); ++j) {
              const auto [it, inserted] = reader.emplace(row.base + in_offset(L, p, j), tile);
              EXPECT_TRUE(inserted || it->second == tile) << c.name();
            }
          }
        for (int tile = 0; tile < L.tiles(); ++tile)
          for (int r = 0; r < Map::M; ++r) {
            const RowRef row = row_ref(L, d, tile * Map::M + r);
            if (!row.valid) continue;
            for (int i = 0; i < n_total(kind, n); ++i) {
              const long a = row.base + out_offset(L, p, i);
              const auto it = reader.find(a);
              EXPECT_TRUE(it == reader.end() || it->second == tile) << c.name() << " phase " << p;
              EXPECT_TRUE(written.insert(a).second) << c.name();
            }
          }
        EXPECT_EQ(rows.size(), std::size_t(L.rows())) << c.name();
        const int slots_out = kind == PhaseKind::last ? 1 : 2;
        EXPECT_EQ(written.size(), std::size_t(L.cells * per_cell * slots_out)) << c.name() << " phase " << p;
      }
    });
}

TEST(TensorCoreLayouts, AffineAddressingOfTheKernels) {
  // the kernels address lane (g, t)'s element e at row pointer + t * stride + in_offset(jbase) +
  // in_adjust(jbase, t), with jbase the logical column of lane 0: check against in_offset(j)
  for (const auto& c : all_configs())
    with_lane_map(c.layout.atom, [&](auto map) {
      using Map = decltype(map);
      const CgLayout& L = c.layout;
      for (int p = 0; p < L.dim; ++p) {
        const int S = L.stride[phase_direction(L.dim, p)];
        const PhaseKind kind = phase_kind(L.dim, p);
        for (int lane = 0; lane < warp_lanes; ++lane) {
          const int t = lane % 4;
          for (int kc = 0; kc < k_chunks(L, p); ++kc)
            for (int e = 0; e < Map::a_elements; ++e) {
              const int jbase = kc * L.atom.k + kperm(L.atom.packed16, Map::a_col(0, e));
              const int j = kc * L.atom.k + kperm(L.atom.packed16, Map::a_col(lane, e));
              ASSERT_EQ(j, jbase + t) << c.name();
              EXPECT_EQ(kperm(L.atom.packed16, Map::a_col(0, e)), a_element_jbase(L.atom, e)) << c.name();
              EXPECT_EQ(Map::a_row(0, e) >> 3, a_element_half(L.atom, e)) << c.name();
              EXPECT_EQ(Map::a_elements, a_elements_per_lane(L.atom)) << c.name();
              EXPECT_EQ(Map::a_row(lane, e) >> 3, Map::a_row(0, e) >> 3) << c.name();
              if (j < k_total(kind, L.n)) {
                EXPECT_EQ(in_offset(L, p, jbase) + t * S + in_adjust(L, p, jbase, t), in_offset(L, p, j)) << c.name();
              }
            }
          for (int nt = 0; nt < n_tiles(L, p); ++nt)
            for (int e = 0; e < Map::c_elements; ++e) {
              const int ibase = nt * atom_n + nperm(Map::c_col(0, e));
              const int i = nt * atom_n + nperm(Map::c_col(lane, e));
              ASSERT_EQ(i, ibase + t) << c.name();
              EXPECT_EQ(nperm(Map::c_col(0, e)), c_element_ibase(e)) << c.name();
              EXPECT_EQ(Map::c_elements, c_elements_per_lane(L.atom)) << c.name();
              EXPECT_EQ(Map::c_row(lane, e) >> 3, Map::c_row(0, e) >> 3) << c.name();
              if (i < n_total(kind, L.n)) {
                EXPECT_EQ(out_offset(L, p, ibase) + t * S + out_adjust(L, p, ibase, t), out_offset(L, p, i))
                    << c.name();
              }
            }
        }
      }
    });
}

TEST(TensorCoreLayouts, SplitRowMapMatchesRowMap) {
  for (const auto& c : all_configs())
    for (int d = 0; d < c.dim; ++d)
      for (int r8 = 0; r8 < c.layout.tiles() * c.layout.atom.m; r8 += 8)
        for (int g = 0; g < 8; ++g) {
          const RowRef a = row_ref(c.layout, d, r8 + g), b = row_ref_split(c.layout, d, r8, g);
          EXPECT_EQ(a.valid, b.valid) << c.name();
          if (!a.valid) continue;
          EXPECT_EQ(a.cell, b.cell) << c.name();
          EXPECT_EQ(a.line, b.line) << c.name();
          EXPECT_EQ(a.base, b.base) << c.name();
        }
}

TEST(TensorCoreLayouts, PermutationsAndBlocks) {
  for (bool packed : {false, true}) {
    std::set<int> image;
    for (int col = 0; col < 16; ++col) image.insert(kperm(packed, col));
    EXPECT_EQ(image.size(), 16u);
    EXPECT_EQ(*image.rbegin(), 15);
  }
  for (int col = 0; col < 16; ++col) EXPECT_EQ(nperm(col) & 3, (col & 7) >> 1);  // t part = lane % 4
  // the middle phase of n = 8 with K chunks of 8 skips the (b, c) block
  const CgLayout L = make_cg_layout(3, 8, fp64_sm90_shape(8));
  EXPECT_EQ(mma_blocks(L, 0), 2);
  EXPECT_EQ(mma_blocks(L, 1), 3);
  EXPECT_EQ(mma_blocks(L, 2), 2);
}

// ---- host emulation of the kernel -----------------------------------------------------------------

/// The tile product of TilePolicy (policies.cuh) on the host: same set/split/resolve, with the warp
/// mma emulator for the instruction.
template <class Map, Precision P>
struct HostPolicy {
  using Arith = precision::Arithmetic<P>;
  using Storage = typename Arith::Storage;
  using ValueC = typename Map::ValueC;
  static constexpr precision::SplitKind split = Arith::split_kind;
  static constexpr int parts_in = split == precision::SplitKind::none ? 1 : 2;
  static constexpr int parts_acc = split == precision::SplitKind::error_correction ? 2 : 1;
  struct A {
    typename Map::FragA p[parts_in];
  };
  struct B {
    typename Map::FragB p[parts_in];
  };
  struct Acc {
    typename Map::FragC p[parts_acc];
  };
  static void set_a(A& a, int i, Storage x) {
    if constexpr (split == precision::SplitKind::none) {
      Map::set_a(a.p[0], i, Arith::round(x));
    } else {
      const auto s = Arith::split(x);
      Map::set_a_exact(a.p[0], i, s.hi);
      Map::set_a_exact(a.p[1], i, s.lo);
    }
  }
  static void set_b(B& b, int i, Storage x) {
    if constexpr (split == precision::SplitKind::none) {
      Map::set_b(b.p[0], i, Arith::round(x));
    } else {
      const auto s = Arith::split(x);
      Map::set_b_exact(b.p[0], i, s.hi);
      Map::set_b_exact(b.p[1], i, s.lo);
    }
  }
  using Warp = std::array<Acc, warp_lanes>;
  static void product(Warp& acc, int ap, int bp, int cp, const std::array<A, warp_lanes>& a,
                      const std::array<B, warp_lanes>& b) {
    arch::WarpFragmentsA<Map> fa;
    arch::WarpFragmentsB<Map> fb;
    arch::WarpFragmentsC<Map> fc;
    for (int lane = 0; lane < warp_lanes; ++lane) {
      fa[lane] = a[lane].p[ap];
      fb[lane] = b[lane].p[bp];
      fc[lane] = acc[lane].p[cp];
    }
    const auto d = arch::emulate_warp_mma<Map>(fa, fb, fc);
    for (int lane = 0; lane < warp_lanes; ++lane) acc[lane].p[cp] = d[lane];
  }
  static void mma(Warp& acc, const std::array<A, warp_lanes>& a, const std::array<B, warp_lanes>& b) {
    if constexpr (split == precision::SplitKind::none) {
      product(acc, 0, 0, 0, a, b);
    } else if constexpr (split == precision::SplitKind::three_products) {
      product(acc, 1, 0, 0, a, b);
      product(acc, 0, 1, 0, a, b);
      product(acc, 0, 0, 0, a, b);
    } else {
      product(acc, 0, 0, 0, a, b);
      product(acc, 1, 0, 1, a, b);
      product(acc, 0, 1, 1, a, b);
    }
  }
  static ValueC resolve(const Acc& acc, int i) {
    if constexpr (split == precision::SplitKind::error_correction)
      return std::fma(Map::get_c(acc.p[1], i), Arith::correction_factor, Map::get_c(acc.p[0], i));
    else
      return Map::get_c(acc.p[0], i);
  }
};

/// The face-term pass of the dg operator on the host (the item functions of operators/tensor_core/dg_faces.h
/// in loops, one block of cells after the other), with the parameters the operator sets up; also
/// returns the scale sigma and the matrices S_d / sigma of the self part.
template <int dim, typename Storage>
std::vector<Storage> emulate_dg_faces(const std::array<int, dim>& n_cells, int k, const std::vector<Storage>& src,
                                      double& sigma, std::array<std::vector<double>, dim>& self) {
  const int n = k + 1;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto mass = fe::exact_mass_matrix(basis);
  DgFaceParams<Storage> prm;
  sigma = 0;
  long total_cells = 1;
  for (int d = 0; d < dim; ++d) total_cells *= n_cells[d];
  for (int d = 0; d < dim; ++d) {
    const double h = 1.0 / n_cells[d];
    double s = 1.0;
    for (int e = 0; e < dim; ++e)
      if (e != d) s /= n_cells[e];
    self[d] = operators::sipg_line_blocks(basis, h).self[0];
    for (double& v : self[d]) {
      v *= s;
      sigma = std::max(sigma, std::abs(v));
    }
    prm.a[d] = static_cast<Storage>(s * 2.0 * k * (k + 1) / h);
    prm.b[d] = static_cast<Storage>(s * 0.5 / h);
    prm.n_cells[d] = n_cells[d];
  }
  for (auto& m : self)
    for (double& v : m) v /= sigma;
  prm.total_cells = total_cells;
  for (int i = 0; i < n * n; ++i) prm.mass[i] = static_cast<Storage>(mass.data[i]);
  for (int i = 0; i < n; ++i) {
    prm.d0[i] = static_cast<Storage>(basis.derivative(i, 0.0));
    prm.d1[i] = static_cast<Storage>(basis.derivative(i, 1.0));
  }
  const Storage nan = std::numeric_limits<Storage>::quiet_NaN();
  std::vector<Storage> dst(src.size(), nan);
  auto run = [&]<int nn>(std::integral_constant<int, nn>) {
    constexpr DgFaceShape F{dim, nn};
    std::vector<Storage> P(F.cells() * F.plane_words()), Q(P.size()), tables(F.table_words());
    dg_face_tables<dim, nn>(prm, 0, 1, tables.data());
    for (long first = 0; first < total_cells; first += F.cells()) {
      std::fill(P.begin(), P.end(), nan);
      std::fill(Q.begin(), Q.end(), nan);
      dg_face_block<dim, nn>(prm, tables.data(), first, 0, 1, src.data(), dst.data(), P.data(), Q.data(), [] {});
    }
  };
  [&]<int... K>(std::integer_sequence<int, K...>) {
    ((n == K + 2 ? run(std::integral_constant<int, K + 2>{}) : void()), ...);
  }(std::make_integer_sequence<int, 8>{});
  return dst;
}

/// dst = A src as the kernel computes it (host emulation; cg: memset, cell kernel, boundary copy;
/// dg: face-term pass, self-part kernel).
template <int dim, class Map, Precision P>
std::vector<typename precision::Arithmetic<P>::Storage> emulate_apply(
    const std::array<int, dim>& n_cells, int k, const CgLayout& L,
    const std::vector<typename precision::Arithmetic<P>::Storage>& src, bool dg = false) {
  using Policy = HostPolicy<Map, P>;
  using Storage = typename Policy::Storage;
  const int n = k + 1;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto mass = fe::exact_mass_matrix(basis);
  const auto stiffness = fe::exact_stiffness_matrix(basis);
  std::array<double, dim> h;
  double g_max = 0, h_prod = 1;
  std::array<long, 3> lattice = {1, 1, 1};
  long total_cells = 1;
  for (int d = 0; d < dim; ++d) {
    h[d] = 1.0 / n_cells[d];
    g_max = std::max(g_max, 1.0 / (h[d] * h[d]));
    h_prod *= h[d];
    lattice[d] = long(n_cells[d]) * k + 1;
    total_cells *= n_cells[d];
  }
  double sigma = 0;
  std::array<std::vector<double>, dim> self;
  std::vector<Storage> dst(src.size(), Storage(0));
  if (dg) dst = emulate_dg_faces<dim, Storage>(n_cells, k, src, sigma, self);
  const Storage scale = static_cast<Storage>(dg ? sigma : h_prod * g_max);
  auto matrix = [&](int p, Matrix1D which, int row, int col) -> double {
    if (which == Matrix1D::mass) return mass.data[row * n + col];
    if (which == Matrix1D::laplace) {
      const int d = phase_direction(dim, p);
      if (dg) return self[d][row * n + col];
      return 1.0 / (h[d] * h[d]) / g_max * stiffness.data[row * n + col];
    }
    return 0.0;
  };
  // B operands per phase, chunk, tile, lane
  std::vector<std::vector<std::vector<std::array<typename Policy::B, warp_lanes>>>> B(dim);
  for (int p = 0; p < dim; ++p) {
    B[p].assign(k_chunks(L, p), std::vector<std::array<typename Policy::B, warp_lanes>>(n_tiles(L, p)));
    for (int kc = 0; kc < k_chunks(L, p); ++kc)
      for (int nt = 0; nt < n_tiles(L, p); ++nt)
        for (int lane = 0; lane < warp_lanes; ++lane)
          for (int e = 0; e < Map::b_elements; ++e) {
            const int j = kc * L.atom.k + kperm(L.atom.packed16, Map::b_row(lane, e));
            const int i = nt * atom_n + nperm(Map::b_col(lane, e));
            const BEntry be = b_entry(phase_kind(dim, p), n, j, i);
            Policy::set_b(B[p][kc][nt][lane], e, static_cast<Storage>(matrix(p, be.matrix, be.row, be.col)));
          }
  }
  const long n_batches = (total_cells + L.cells - 1) / L.cells;
  std::vector<Storage> smem(L.smem_words());
  std::vector<long> cell_base(L.cells);
  std::vector<int> cell_flags(L.cells);
  for (long batch = 0; batch < n_batches; ++batch) {
    std::fill(smem.begin(), smem.end(), std::numeric_limits<Storage>::quiet_NaN());
    for (int c = 0; c < L.cells; ++c) {
      const long cell = batch * L.cells + c;
      if (cell >= total_cells) {
        cell_flags[c] = -1;
        continue;
      }
      long rest = cell, base = 0, stride = 1;
      int flags = 0;
      for (int e = 0; e < dim; ++e) {
        const int ce = int(rest % n_cells[e]);
        rest /= n_cells[e];
        base += long(ce) * k * stride;
        stride *= lattice[e];
        flags |= (ce == 0 ? 1 : 0) << (2 * e);
        flags |= (ce == n_cells[e] - 1 ? 1 : 0) << (2 * e + 1);
      }
      cell_base[c] = dg ? cell * L.nodes_per_cell() : base;
      cell_flags[c] = dg ? 0 : flags;
    }
    auto boundary = [&](int flags, const int* local) {
      bool b = false;
      for (int e = 0; e < dim; ++e)
        b |= (((flags >> (2 * e)) & 1) && local[e] == 0) || (((flags >> (2 * e + 1)) & 1) && local[e] == n - 1);
      return b;
    };
    auto global = [&](int c, const int* local) {
      if (dg) return cell_base[c] + local[0] + (dim == 3 ? (local[1] + n * local[2]) * n : local[1] * n);
      long idx = cell_base[c] + local[0];
      if (dim >= 2) idx += long(local[1]) * lattice[0];
      if (dim >= 3) idx += long(local[2]) * lattice[0] * lattice[1];
      return idx;
    };
    for (int item = 0; item < L.plane_iterations() * L.threads(); ++item) {
      const NodeRef plane_ref = plane_node_ref(L, item);
      if (!plane_ref.valid) continue;
      for (int o = 0; o < n; ++o) {
        NodeRef ref = plane_ref;
        ref.local[dim - 1] = o;
        Storage v = 0;
        if (cell_flags[ref.cell] >= 0 && (dg || !boundary(cell_flags[ref.cell], ref.local)))
          v = src[global(ref.cell, ref.local)];
        smem[ref.offset + L.tensor_stride + o * L.outer_stride()] = v;
      }
    }
    for (int p = 0; p < dim; ++p) {
      const int d = phase_direction(dim, p);
      const PhaseKind kind = phase_kind(dim, p);
      for (int tile = 0; tile < L.tiles(); ++tile) {
        std::vector<typename Policy::Warp> accs(n_tiles(L, p));
        for (auto& w : accs)
          for (auto& a : w)
            for (auto& part : a.p) Map::fill_c(part, 0);
        for (int kc = 0; kc < k_chunks(L, p); ++kc) {
          std::array<typename Policy::A, warp_lanes> a{};
          for (int lane = 0; lane < warp_lanes; ++lane)
            for (int e = 0; e < Map::a_elements; ++e) {
              // as the kernel addresses: row pointer + t * stride + compile-time offset + adjustment
              const RowRef row = row_ref_split(L, d, tile * Map::M + 8 * (Map::a_row(0, e) >> 3), lane / 4);
              const int t = lane % 4, S = L.stride[d];
              const int jbase = kc * L.atom.k + kperm(L.atom.packed16, Map::a_col(0, e));
              const long address = row.base + t * S + in_offset(L, p, jbase) + in_adjust(L, p, jbase, t);
              const Storage x = (row.valid && jbase + t < k_total(kind, n)) ? smem.at(address) : Storage(0);
              Policy::set_a(a[lane], e, x);
            }
          for (int nt = 0; nt < n_tiles(L, p); ++nt)
            if (block_nonzero(L, p, kc, nt)) Policy::mma(accs[nt], a, B[p][kc][nt]);
        }
        for (int nt = 0; nt < n_tiles(L, p); ++nt)
          for (int lane = 0; lane < warp_lanes; ++lane)
            for (int e = 0; e < Map::c_elements; ++e) {
              const RowRef row = row_ref_split(L, d, tile * Map::M + 8 * (Map::c_row(0, e) >> 3), lane / 4);
              const int t = lane % 4, S = L.stride[d];
              const int ibase = nt * atom_n + nperm(Map::c_col(0, e));
              const long address = row.base + t * S + out_offset(L, p, ibase) + out_adjust(L, p, ibase, t);
              if (row.valid && ibase + t < n_total(kind, n))
                smem.at(address) = static_cast<Storage>(Policy::resolve(accs[nt][lane], e));
            }
      }
    }
    for (int item = 0; item < L.plane_iterations() * L.threads(); ++item) {
      const NodeRef plane_ref = plane_node_ref(L, item);
      if (!plane_ref.valid) continue;
      for (int o = 0; o < n; ++o) {
        NodeRef ref = plane_ref;
        ref.local[dim - 1] = o;
        if (cell_flags[ref.cell] < 0 || (!dg && boundary(cell_flags[ref.cell], ref.local))) continue;
        dst[global(ref.cell, ref.local)] += scale * smem[ref.offset + o * L.outer_stride()];
      }
    }
  }
  if (dg) return dst;
  // boundary rows: identity
  for (std::size_t i = 0; i < dst.size(); ++i) {
    long r = long(i);
    bool b = false;
    for (int d = 0; d < dim; ++d) {
      const long pd = r % lattice[d];
      r /= lattice[d];
      b |= pd == 0 || pd == lattice[d] - 1;
    }
    if (b) dst[i] = src[i];
  }
  return dst;
}

template <int dim, class Map, Precision P>
double emulated_error(const std::array<int, dim>& n_cells, int k, Family family, std::uint64_t seed, bool dg = false) {
  using Storage = typename precision::Arithmetic<P>::Storage;
  mesh::BoxMesh<dim> mesh(n_cells, mesh::GeometryKind::cartesian);
  const fe::Disc disc = dg ? fe::Disc::dg : fe::Disc::cg;
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::OperatorConfig cfg;
  cfg.degree = k;
  cfg.disc = disc;
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<Storage> x(dofs.n_local());
  Vector<double> xd(dofs.n_local()), ref(dofs.n_local());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<Storage>(dist(rng));
    xd[i] = x[i];
  }
  A.vmult(ref, xd);
  const CgLayout L = make_cg_layout(dim, k + 1, shape_of(family, k + 1));
  const auto y = emulate_apply<dim, Map, P>(n_cells, k, L, x, dg);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(double(y[i]))) return std::numeric_limits<double>::infinity();
    diff += (ref[i] - y[i]) * (ref[i] - y[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

/// Fixed seeds: the emulation checks the maps, splits and roundings deterministically (the device
/// tests draw fresh inputs). bf16x3 sits at a few 1e-6 (operands kept to ~2^-17 by two bf16 parts).
template <class Map, Precision P>
void check_emulation(Family family, double tolerance, std::vector<int> degrees, bool dg = false) {
  std::mt19937_64 rd(20261121);
  for (int k : degrees) {
    const std::string what = std::string(dg ? "dg " : "cg ") + std::string(precision::to_string(P)) + " " + name_of(family) +
                             " k=" + std::to_string(k);
    EXPECT_LT((emulated_error<3, Map, P>({3, 2, 4}, k, family, rd(), dg)), tolerance) << what << " 3D 3x2x4";
    EXPECT_LT((emulated_error<3, Map, P>({1, 2, 1}, k, family, rd(), dg)), tolerance) << what << " 3D 1x2x1";
    EXPECT_LT((emulated_error<2, Map, P>({5, 3}, k, family, rd(), dg)), tolerance) << what << " 2D 5x3";
    EXPECT_LT((emulated_error<2, Map, P>({1, 4}, k, family, rd(), dg)), tolerance) << what << " 2D 1x4";
  }
}

TEST(TensorCoreEmulation, Fp64Sm90MatchesCpuOperator) {
  check_emulation<arch::LaneMap_M16N8K4_F64, Precision::fp64>(Family::fp64_sm90, 1e-12, {1, 2, 3, 8});
  check_emulation<arch::LaneMap_M16N8K8_F64, Precision::fp64>(Family::fp64_sm90, 1e-12, {4, 5, 6, 7});
}
TEST(TensorCoreEmulation, Fp64Sm80MatchesCpuOperator) {
  check_emulation<arch::LaneMap_M8N8K4_F64, Precision::fp64>(Family::fp64_sm80, 1e-12, {1, 2, 3, 4, 5, 6, 7, 8});
}
TEST(TensorCoreEmulation, SplitPrecisionsMatchCpuOperator) {
  check_emulation<arch::LaneMap_M16N8K8_TF32, Precision::tf32x3>(Family::tf32, 1e-5, {1, 2, 3, 4, 5, 6, 7, 8});
  check_emulation<arch::LaneMap_M16N8K16_F16, Precision::fp16ec>(Family::half, 1e-5, {1, 2, 3, 4, 5, 6, 7, 8});
  check_emulation<arch::LaneMap_M16N8K16_BF16, Precision::bf16x3>(Family::half, 1e-5, {1, 2, 3, 4, 5, 6, 7, 8});
}
TEST(TensorCoreEmulation, HalfPrecisionsWithinTheirTolerance) {
  check_emulation<arch::LaneMap_M16N8K16_F16, Precision::fp16>(Family::half, 1e-2, {1, 3, 5, 8});
  check_emulation<arch::LaneMap_M16N8K16_BF16, Precision::bf16>(Family::half, 1e-2, {1, 3, 5, 8});
}

// ---- the SIPG (dg) member: face-term pass + self-part kernel ------------------------------------

/// Wavefronts of one warp-wide access: the most distinct words that share a bank, over the
/// wavefront groups (the warp for 4-byte words, each half-warp for 8-byte words); 1 = conflict-free.
int wavefronts(const WarpAccess& access, int word_bytes) {
  const int group = word_bytes == 8 ? 16 : 32, banks = word_bytes == 8 ? 16 : 32;
  int worst = 0;
  for (int g0 = 0; g0 < warp_lanes; g0 += group) {
    std::map<long, std::set<long>> words_of_bank;
    for (int lane = g0; lane < g0 + group; ++lane)
      if (access[lane] >= 0) words_of_bank[access[lane] % banks].insert(access[lane]);
    for (const auto& [bank, words] : words_of_bank) worst = std::max(worst, int(words.size()));
  }
  return worst;
}

/// Every warp-wide shared-memory access of the face-term pass of (dim, n): step 1 stores, the mass
/// steps' loads and stores, the result loads; f(label, access).
template <class F>
void face_pass_accesses(int dim, int n, F&& f) {
  const DgFaceShape S{dim, n};
  const int fp = S.face_points(), rs = S.lines(), threads = dg_face_threads;
  auto for_warps = [&](int count, auto&& lane_address, const std::string& what) {
    for (int first = 0; first < count; first += warp_lanes) {
      WarpAccess a;
      a.fill(-1);
      for (int lane = 0; lane < warp_lanes; ++lane)
        if (first + lane < count) a[lane] = lane_address(first + lane);
      f(what + " items " + std::to_string(first), a);
    }
    (void)threads;
  };
  for (int r = 0; r < 4; ++r) for_warps(rs, [&](int item) -> long { return long(r) * rs + item; }, "values store");
  for (int s = 0; s < dim - 1; ++s) {
    const int step = s == 0 ? 1 : n;
    for (int i = 0; i < n; ++i)
      for_warps(4 * rs, [&](int item) -> long {
        const int t = item % fp, plane = item / fp, p = (t / step) % n;
        return long(plane) * fp + (t - p * step) + i * step;
      }, "mass load");
    for (int i = 0; i < n; ++i)
      for_warps(4 * rs, [&](int item) -> long {
        const int t = item % fp, p = (t / step) % n;
        return long(S.tables_offset()) + p * S.mass_stride() + i;
      }, "mass table load");
    for_warps(4 * rs, [&](int item) -> long { return item; }, "mass store");
  }
  for (int d = 0; d < dim; ++d)
    for (int r = 0; r < 4; ++r)
      for_warps(S.cells() * S.dofs(), [&](int item) -> long {
        const int local = item % S.dofs(), cell = item / S.dofs();
        const int x[3] = {local % n, (local / n) % n, dim == 3 ? local / (n * n) : 0};
        if ((r == 0 && x[d] != 0) || (r == 2 && x[d] != n - 1)) return -1;
        int t = 0, scale = 1;
        for (int e = 0; e < dim; ++e)
          if (e != d) {
            t += x[e] * scale;
            scale *= n;
          }
        return long(r) * rs + (cell * dim + d) * fp + t;
      }, "result load");
  for (int table : {S.d0_offset(), S.d1_offset()})
    for_warps(S.cells() * S.dofs(), [&](int item) -> long {
      const int local = item % S.dofs();
      const int x[3] = {local % n, (local / n) % n, dim == 3 ? local / (n * n) : 0};
      return long(S.tables_offset()) + table + x[0];  // direction x: x_d differs between lanes
    }, "derivative table load");
}

TEST(TensorCoreDgLayouts, FacePassSharedMemoryAccesses) {
  // stores conflict-free; loads at most 2 wavefronts per access (a 16-lane group spans two lines of
  // the mass steps)
  for (int dim : {2, 3})
    for (int n = 2; n <= max_n; ++n)
      for (int word : {8, 4}) {
        std::map<std::string, int> worst;  // per kind of access
        face_pass_accesses(dim, n, [&](const std::string& what, const WarpAccess& a) {
          const std::string kind = what.substr(0, what.find(" items"));
          worst[kind] = std::max(worst[kind], wavefronts(a, word));
        });
        const std::string where =
            "dim " + std::to_string(dim) + " n " + std::to_string(n) + " word " + std::to_string(word);
        for (const auto& [kind, w] : worst) {
          if (kind.find("store") != std::string::npos)
            EXPECT_EQ(w, 1) << where << ": " << kind;
          else
            EXPECT_LE(w, 2) << where << ": " << kind;
        }
      }
  // every face pass fits the 48 KB of shared memory a block gets without opting in
  for (int dim : {2, 3})
    for (int n = 2; n <= max_n; ++n) EXPECT_LE((DgFaceShape{dim, n}.smem_words() * 8), 48 * 1024) << dim << " " << n;
}

TEST(TensorCoreDgEmulation, Fp64Sm90MatchesCpuOperator) {
  check_emulation<arch::LaneMap_M16N8K4_F64, Precision::fp64>(Family::fp64_sm90, 1e-12, {1, 2, 3, 8}, true);
  check_emulation<arch::LaneMap_M16N8K8_F64, Precision::fp64>(Family::fp64_sm90, 1e-12, {4, 5, 6, 7}, true);
}
TEST(TensorCoreDgEmulation, Fp64Sm80MatchesCpuOperator) {
  check_emulation<arch::LaneMap_M8N8K4_F64, Precision::fp64>(Family::fp64_sm80, 1e-12, {1, 2, 3, 4, 5, 6, 7, 8}, true);
}
TEST(TensorCoreDgEmulation, SplitPrecisionsMatchCpuOperator) {
  check_emulation<arch::LaneMap_M16N8K8_TF32, Precision::tf32x3>(Family::tf32, 1e-5, {1, 2, 3, 4, 5, 6, 7, 8}, true);
  check_emulation<arch::LaneMap_M16N8K16_F16, Precision::fp16ec>(Family::half, 1e-5, {1, 2, 3, 4, 5, 6, 7, 8}, true);
  check_emulation<arch::LaneMap_M16N8K16_BF16, Precision::bf16x3>(Family::half, 1e-5, {1, 2, 3, 4, 5, 6, 7, 8}, true);
}
TEST(TensorCoreDgEmulation, HalfPrecisionsWithinTheirTolerance) {
  check_emulation<arch::LaneMap_M16N8K16_F16, Precision::fp16>(Family::half, 1e-2, {1, 3, 5, 8}, true);
  check_emulation<arch::LaneMap_M16N8K16_BF16, Precision::bf16>(Family::half, 1e-2, {1, 3, 5, 8}, true);
}

}  // namespace
