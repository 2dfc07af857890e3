// Lane maps of the mma atoms (CPU only): every matrix element is held exactly once, the inverse
// maps invert, the maps agree with the PTX ISA formulas (transcribed literally below), fragments
// pack as the ISA says, and the host warp emulator reproduces a naive GEMM.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "arch/capability.h"
#include "arch/lane_maps.h"
#include "arch/warp_mma_emulator.h"

namespace {

using namespace tcfem::arch;

template <class Map>
class LaneMapTest : public ::testing::Test {};

using AllLaneMaps =
    ::testing::Types<LaneMap_M8N8K4_F64, LaneMap_M16N8K4_F64, LaneMap_M16N8K8_F64, LaneMap_M16N8K16_F64,
                     LaneMap_M16N8K8_TF32, LaneMap_M16N8K16_F16, LaneMap_M16N8K16_BF16, LaneMap_M16N8K8_F32>;
struct LaneMapNames {
  template <class Map>
  static std::string GetName(int index) {
    static const char* const names[] = {"M8N8K4_F64",   "M16N8K4_F64",  "M16N8K8_F64",   "M16N8K16_F64",
                                        "M16N8K8_TF32", "M16N8K16_F16", "M16N8K16_BF16", "M16N8K8_F32"};
    return names[index];
  }
};
TYPED_TEST_SUITE(LaneMapTest, AllLaneMaps, LaneMapNames);

enum class Operand { a, b, c };

template <class Map>
struct OperandMap {
  Operand operand;
  int rows() const { return operand == Operand::a ? Map::M : operand == Operand::b ? Map::K : Map::M; }
  int cols() const { return operand == Operand::a ? Map::K : Map::N; }
  int elements() const {
    return operand == Operand::a   ? Map::a_elements
           : operand == Operand::b ? Map::b_elements
                                   : Map::c_elements;
  }
  int row(int lane, int i) const {
    return operand == Operand::a   ? Map::a_row(lane, i)
           : operand == Operand::b ? Map::b_row(lane, i)
                                   : Map::c_row(lane, i);
  }
  int col(int lane, int i) const {
    return operand == Operand::a   ? Map::a_col(lane, i)
           : operand == Operand::b ? Map::b_col(lane, i)
                                   : Map::c_col(lane, i);
  }
  int lane_of(int r, int c) const {
    return operand == Operand::a   ? Map::a_lane(r, c)
           : operand == Operand::b ? Map::b_lane(r, c)
                                   : Map::c_lane(r, c);
  }
  int element_of(int r, int c) const {
    return operand == Operand::a   ? Map::a_element(r, c)
           : operand == Operand::b ? Map::b_element(r, c)
                                   : Map::c_element(r, c);
  }
};

TYPED_TEST(LaneMapTest, SizesAreConsistent) {
  using Map = TypeParam;
  EXPECT_EQ(Map::a_elements * warp_size, Map::M * Map::K);
  EXPECT_EQ(Map::b_elements * warp_size, Map::K * Map::N);
  EXPECT_EQ(Map::c_elements * warp_size, Map::M * Map::N);
  EXPECT_EQ(Map::a_registers * Map::RegistersA::elements_per_register, Map::a_elements);
  EXPECT_EQ(Map::b_registers * Map::RegistersB::elements_per_register, Map::b_elements);
  EXPECT_EQ(Map::c_registers * Map::RegistersC::elements_per_register, Map::c_elements);
}

TYPED_TEST(LaneMapTest, EveryElementHeldExactlyOnceAndInversesMatch) {
  using Map = TypeParam;
  for (const Operand operand : {Operand::a, Operand::b, Operand::c}) {
    const OperandMap<Map> map{operand};
    SCOPED_TRACE(operand == Operand::a ? "A" : operand == Operand::b ? "B" : "C");
    std::vector<int> hits(map.rows() * map.cols(), 0);
    for (int lane = 0; lane < warp_size; ++lane)
      for (int i = 0; i < map.elements(); ++i) {
        const int r = map.row(lane, i), c = map.col(lane, i);
        ASSERT_GE(r, 0);
        ASSERT_LT(r, map.rows());
        ASSERT_GE(c, 0);
        ASSERT_LT(c, map.cols());
        ++hits[r * map.cols() + c];
        EXPECT_EQ(map.lane_of(r, c), lane) << "row " << r << " col " << c;
        EXPECT_EQ(map.element_of(r, c), i) << "row " << r << " col " << c;
      }
    for (int idx = 0; idx < map.rows() * map.cols(); ++idx)
      EXPECT_EQ(hits[idx], 1) << "row " << idx / map.cols() << " col " << idx % map.cols();
  }
}

// The CUDA-core twin relies on it: for a fixed C element and k, every lane reads the same A and B
// fragment element.
TYPED_TEST(LaneMapTest, SourceElementsOfTheSimtTwinAreLaneUniform) {
  using Map = TypeParam;
  for (int i = 0; i < Map::c_elements; ++i)
    for (int k = 0; k < Map::K; ++k)
      for (int lane = 0; lane < warp_size; ++lane) {
        EXPECT_EQ(Map::a_element(Map::c_row(lane, i), k), Map::a_element(Map::c_row(0, i), k));
        EXPECT_EQ(Map::b_element(k, Map::c_col(lane, i)), Map::b_element(k, Map::c_col(0, i)));
      }
}

TYPED_TEST(LaneMapTest, IndexFunctionsAreConstexpr) {
  using Map = TypeParam;
  constexpr int r = Map::a_row(31, Map::a_elements - 1);
  constexpr int c = Map::c_col(31, Map::c_elements - 1);
  static_assert(r >= 0 && r < Map::M && c >= 0 && c < Map::N);
  SUCCEED();
}

// ---- the PTX ISA formulas, written as the ISA writes them ----------------------------------------
struct IsaEntry {
  int row, col;
};
constexpr int gid(int lane) { return lane >> 2; }
constexpr int tig(int lane) { return lane % 4; }

// 9.7.x "Matrix Fragments for mma.m8n8k4 with .f64 floating point type"
IsaEntry isa_m8n8k4_f64_a(int lane, int) { return {lane >> 2, lane % 4}; }
IsaEntry isa_m8n8k4_f64_b(int lane, int) { return {lane % 4, lane >> 2}; }
IsaEntry isa_m8n8k4_f64_c(int lane, int i) { return {gid(lane), (tig(lane) * 2) + (i & 0x1)}; }
// "Matrix Fragments for mma.m16n8k4" (.f64 and .tf32 alike)
IsaEntry isa_m16n8k4_a(int lane, int i) { return {i == 0 ? gid(lane) : gid(lane) + 8, tig(lane)}; }
IsaEntry isa_m16n8k4_b(int lane, int) { return {tig(lane), gid(lane)}; }
// accumulators of every m16n8k* shape
IsaEntry isa_m16n8_c(int lane, int i) {
  return {i < 2 ? gid(lane) : gid(lane) + 8, (tig(lane) * 2) + (i & 0x1)};
}
// "Matrix Fragments for mma.m16n8k8", .tf32 and .f64
IsaEntry isa_m16n8k8_a(int lane, int i) {
  return {(i == 0 || i == 2) ? gid(lane) : gid(lane) + 8, (i == 0 || i == 1) ? tig(lane) : tig(lane) + 4};
}
IsaEntry isa_m16n8k8_b(int lane, int i) { return {i == 0 ? tig(lane) : tig(lane) + 4, gid(lane)}; }
// "Matrix Fragments for mma.m16n8k16 with floating point type", .f64
IsaEntry isa_m16n8k16_f64_a(int lane, int i) {
  return {i % 2 == 0 ? gid(lane) : gid(lane) + 8, i % 2 == 0 ? (i * 2) + tig(lane) : (i * 2) - 2 + tig(lane)};
}
IsaEntry isa_m16n8k16_f64_b(int lane, int i) { return {tig(lane) + (i * 4), gid(lane)}; }
// "Matrix Fragments for mma.m16n8k16 with floating point type", .f16 / .bf16
IsaEntry isa_m16n8k16_f16_a(int lane, int i) {
  return {((0 <= i && i < 2) || (4 <= i && i < 6)) ? gid(lane) : gid(lane) + 8,
          i < 4 ? (tig(lane) * 2) + (i & 0x1) : (tig(lane) * 2) + (i & 0x1) + 8};
}
IsaEntry isa_m16n8k16_f16_b(int lane, int i) {
  return {i < 2 ? (tig(lane) * 2) + (i & 0x1) : (tig(lane) * 2) + (i & 0x1) + 8, gid(lane)};
}

template <class Map, class IsaA, class IsaB, class IsaC>
void expect_isa_maps(IsaA isa_a, IsaB isa_b, IsaC isa_c) {
  for (int lane = 0; lane < warp_size; ++lane) {
    for (int i = 0; i < Map::a_elements; ++i) {
      EXPECT_EQ(Map::a_row(lane, i), isa_a(lane, i).row) << "A lane " << lane << " a" << i;
      EXPECT_EQ(Map::a_col(lane, i), isa_a(lane, i).col) << "A lane " << lane << " a" << i;
    }
    for (int i = 0; i < Map::b_elements; ++i) {
      EXPECT_EQ(Map::b_row(lane, i), isa_b(lane, i).row) << "B lane " << lane << " b" << i;
      EXPECT_EQ(Map::b_col(lane, i), isa_b(lane, i).col) << "B lane " << lane << " b" << i;
    }
    for (int i = 0; i < Map::c_elements; ++i) {
      EXPECT_EQ(Map::c_row(lane, i), isa_c(lane, i).row) << "C lane " << lane << " c" << i;
      EXPECT_EQ(Map::c_col(lane, i), isa_c(lane, i).col) << "C lane " << lane << " c" << i;
    }
  }
}

TEST(LaneMapIsa, MatchesPtxFormulas) {
  expect_isa_maps<LaneMap_M8N8K4_F64>(isa_m8n8k4_f64_a, isa_m8n8k4_f64_b, isa_m8n8k4_f64_c);
  expect_isa_maps<LaneMap_M16N8K4_F64>(isa_m16n8k4_a, isa_m16n8k4_b, isa_m16n8_c);
  expect_isa_maps<LaneMap_M16N8K8_F64>(isa_m16n8k8_a, isa_m16n8k8_b, isa_m16n8_c);
  expect_isa_maps<LaneMap_M16N8K8_TF32>(isa_m16n8k8_a, isa_m16n8k8_b, isa_m16n8_c);
  expect_isa_maps<LaneMap_M16N8K16_F64>(isa_m16n8k16_f64_a, isa_m16n8k16_f64_b, isa_m16n8_c);
  expect_isa_maps<LaneMap_M16N8K16_F16>(isa_m16n8k16_f16_a, isa_m16n8k16_f16_b, isa_m16n8_c);
  expect_isa_maps<LaneMap_M16N8K16_BF16>(isa_m16n8k16_f16_a, isa_m16n8k16_f16_b, isa_m16n8_c);
}

// Individual entries read off the ISA fragment figures (T<lane>: a<i> at row r, column c).
TEST(LaneMapIsa, SpotChecks) {
  // m8n8k4 .f64: T0 a0 (0,0); T7 a0 (1,3); T30 b0 (2,7); T13 c1 (3,3)
  EXPECT_EQ(LaneMap_M8N8K4_F64::a_row(7, 0), 1);
  EXPECT_EQ(LaneMap_M8N8K4_F64::a_col(7, 0), 3);
  EXPECT_EQ(LaneMap_M8N8K4_F64::b_row(30, 0), 2);
  EXPECT_EQ(LaneMap_M8N8K4_F64::b_col(30, 0), 7);
  EXPECT_EQ(LaneMap_M8N8K4_F64::c_row(13, 1), 3);
  EXPECT_EQ(LaneMap_M8N8K4_F64::c_col(13, 1), 3);
  // m16n8k4 .f64: T9 a1 (10,1); T31 c3 (15,7)
  EXPECT_EQ(LaneMap_M16N8K4_F64::a_row(9, 1), 10);
  EXPECT_EQ(LaneMap_M16N8K4_F64::a_col(9, 1), 1);
  EXPECT_EQ(LaneMap_M16N8K4_F64::c_row(31, 3), 15);
  EXPECT_EQ(LaneMap_M16N8K4_F64::c_col(31, 3), 7);
  // m16n8k8 .tf32/.f64: T6 a2 (1,6); T6 a3 (9,6); T11 b1 (7,2)
  EXPECT_EQ(LaneMap_M16N8K8_TF32::a_row(6, 2), 1);
  EXPECT_EQ(LaneMap_M16N8K8_TF32::a_col(6, 2), 6);
  EXPECT_EQ(LaneMap_M16N8K8_F64::a_row(6, 3), 9);
  EXPECT_EQ(LaneMap_M16N8K8_F64::a_col(6, 3), 6);
  EXPECT_EQ(LaneMap_M16N8K8_F64::b_row(11, 1), 7);
  EXPECT_EQ(LaneMap_M16N8K8_F64::b_col(11, 1), 2);
  // m16n8k16 .f64: T13 a5 (11,9); T13 a6 (3,13); T22 b3 (14,5)
  EXPECT_EQ(LaneMap_M16N8K16_F64::a_row(13, 5), 11);
  EXPECT_EQ(LaneMap_M16N8K16_F64::a_col(13, 5), 9);
  EXPECT_EQ(LaneMap_M16N8K16_F64::a_row(13, 6), 3);
  EXPECT_EQ(LaneMap_M16N8K16_F64::a_col(13, 6), 13);
  EXPECT_EQ(LaneMap_M16N8K16_F64::b_row(22, 3), 14);
  EXPECT_EQ(LaneMap_M16N8K16_F64::b_col(22, 3), 5);
  // m16n8k16 .f16: T0 {a0,a1} (0,0),(0,1); T0 {a2,a3} (8,0),(8,1); T0 {a4..a7} (0,8),(0,9),(8,8),(8,9);
  // T31 a7 (15,15); T5 b2 (10,1)
  const std::array<IsaEntry, 8> lane0 = {{{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}}};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(LaneMap_M16N8K16_F16::a_row(0, i), lane0[i].row) << "a" << i;
    EXPECT_EQ(LaneMap_M16N8K16_F16::a_col(0, i), lane0[i].col) << "a" << i;
  }
  EXPECT_EQ(LaneMap_M16N8K16_BF16::a_row(31, 7), 15);
  EXPECT_EQ(LaneMap_M16N8K16_BF16::a_col(31, 7), 15);
  EXPECT_EQ(LaneMap_M16N8K16_F16::b_row(5, 2), 10);
  EXPECT_EQ(LaneMap_M16N8K16_F16::b_col(5, 2), 1);
}

// "Elements (low to high)": element 2j in the low half of register j.
TEST(LaneMapRegisters, PackedSixteenBitElementsLowHalfFirst) {
  LaneMap_M16N8K16_F16::FragA a{};
  LaneMap_M16N8K16_F16::set_a(a, 0, 1.0f);
  LaneMap_M16N8K16_F16::set_a(a, 1, -2.0f);
  LaneMap_M16N8K16_F16::set_a(a, 6, 0.5f);
  EXPECT_EQ(a.reg[0], 0xc0003c00u);  // fp16: 1.0 = 0x3c00, -2.0 = 0xc000
  EXPECT_EQ(a.reg[3], 0x00003800u);  // 0.5 = 0x3800
  EXPECT_EQ(LaneMap_M16N8K16_F16::get_a(a, 1), -2.0f);
  LaneMap_M16N8K16_BF16::FragB b{};
  LaneMap_M16N8K16_BF16::set_b(b, 3, 1.0f);
  EXPECT_EQ(b.reg[1], 0x3f800000u);  // bf16 1.0 = 0x3f80 in the high half
  LaneMap_M16N8K8_TF32::FragA t{};
  LaneMap_M16N8K8_TF32::set_a(t, 2, 1.0f + 0x1p-11f);  // a tie: rounds away from zero
  EXPECT_EQ(t.reg[2], 0x3f802000u);
}

// ---- host warp emulator vs naive GEMM -----------------------------------------------------------
template <class Map>
void check_emulator_against_naive_gemm(std::mt19937_64& rng) {
  using ValueA = typename Map::ValueA;
  using ValueB = typename Map::ValueB;
  using ValueC = typename Map::ValueC;
  constexpr int M = Map::M, N = Map::N, K = Map::K;
  const int lda = K + 3, ldb = N + 1, ldc = N + 2;  // padded leading dimensions
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<ValueA> a(M * lda);
  std::vector<ValueB> b(K * ldb);
  std::vector<ValueC> c(M * ldc), d(M * ldc, ValueC(NAN));
  for (auto& x : a) x = static_cast<ValueA>(uniform(rng));
  for (auto& x : b) x = static_cast<ValueB>(uniform(rng));
  for (auto& x : c) x = static_cast<ValueC>(uniform(rng));

  WarpFragmentsA<Map> fa{};
  WarpFragmentsB<Map> fb{};
  WarpFragmentsC<Map> fc{};
  for (int lane = 0; lane < warp_size; ++lane) {
    Map::load_a(fa[lane], a.data(), lda, lane);
    Map::load_b(fb[lane], b.data(), ldb, lane);
    Map::load_c(fc[lane], c.data(), ldc, lane);
  }
  const WarpFragmentsC<Map> fd = emulate_warp_mma<Map>(fa, fb, fc);
  for (int lane = 0; lane < warp_size; ++lane) Map::store_c(fd[lane], d.data(), ldc, lane);

  // Reference in long double on the inputs rounded to the instruction's format.
  typename Map::FragA probe_a{};
  typename Map::FragB probe_b{};
  const auto round_a = [&](ValueA x) {
    Map::set_a(probe_a, 0, x);
    return static_cast<long double>(Map::get_a(probe_a, 0));
  };
  const auto round_b = [&](ValueB x) {
    Map::set_b(probe_b, 0, x);
    return static_cast<long double>(Map::get_b(probe_b, 0));
  };
  const long double unit = std::is_same_v<ValueC, double> ? 0x1p-52L : 0x1p-23L;
  for (int row = 0; row < M; ++row)
    for (int col = 0; col < N; ++col) {
      long double exact = c[row * ldc + col], magnitude = std::fabs(exact);
      for (int k = 0; k < K; ++k) {
        const long double p = round_a(a[row * lda + k]) * round_b(b[k * ldb + col]);
        exact += p;
        magnitude += std::fabs(p);
      }
      const long double got = d[row * ldc + col];
      ASSERT_TRUE(std::isfinite(static_cast<double>(got))) << "row " << row << " col " << col;
      EXPECT_LE(std::fabs(got - exact), (K + 1) * unit * magnitude) << "row " << row << " col " << col;
    }
}

TYPED_TEST(LaneMapTest, EmulatorReproducesNaiveGemm) {
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int repetition = 0; repetition < 8; ++repetition) check_emulator_against_naive_gemm<TypeParam>(rng);
}

// A wrong map must not pass: a transposed A map changes the product.
TEST(LaneMapEmulator, DetectsAWrongLoad) {
  using Map = LaneMap_M16N8K8_F64;
  std::array<double, 16 * 8> a{}, b{};
  for (int i = 0; i < 16 * 8; ++i) a[i] = i + 1, b[i] = (i % 7) - 3;
  WarpFragmentsA<Map> fa{};
  WarpFragmentsB<Map> fb{};
  WarpFragmentsC<Map> fc{};
  for (int lane = 0; lane < warp_size; ++lane) {
    Map::load_a(fa[lane], a.data(), 8, lane);
    Map::load_b(fb[lane], b.data(), 8, lane);
    Map::fill_c(fc[lane], 0.0);
  }
  std::swap(fa[0].reg[0], fa[1].reg[0]);  // A(0,0) <-> A(0,1)
  const auto fd = emulate_warp_mma<Map>(fa, fb, fc);
  double d00 = 0;
  for (int lane = 0; lane < warp_size; ++lane)
    for (int i = 0; i < Map::c_elements; ++i)
      if (Map::c_row(lane, i) == 0 && Map::c_col(lane, i) == 0) d00 = Map::get_c(fd[lane], i);
  double expected = 0;
  for (int k = 0; k < 8; ++k) expected += a[k] * b[k * 8];
  EXPECT_NE(d00, expected);
}

// ---- capability query ---------------------------------------------------------------------------
TEST(Capability, SelectsFp64Atom) {
  EXPECT_EQ(select_fp64_atom(9, 0), Fp64Shape::m16n8k16);
  EXPECT_EQ(select_fp64_atom(8, 0), Fp64Shape::m8n8k4);
  EXPECT_EQ(select_fp64_atom(8, 6), Fp64Shape::m8n8k4);
  EXPECT_EQ(select_fp64_atom(8, 9), Fp64Shape::m8n8k4);
  EXPECT_EQ(select_fp64_atom(7, 0), Fp64Shape::simt);
  EXPECT_EQ(select_fp64_atom(7, 5), Fp64Shape::simt);
  EXPECT_EQ(select_fp64_atom(10, 0), Fp64Shape::simt);
  EXPECT_TRUE(has_fp32_tensor_cores(8, 0));
  EXPECT_FALSE(has_fp32_tensor_cores(7, 5));
  EXPECT_EQ(to_string(Fp64Shape::m16n8k16), "m16n8k16");
  EXPECT_EQ(to_string(Fp64Shape::m8n8k4), "m8n8k4");
  EXPECT_EQ(to_string(Fp64Shape::simt), "simt");
}

}  // namespace
