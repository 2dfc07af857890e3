#pragma once
// Lane maps of the warp-level `mma.sync` instructions: which element of A (M x K), B (K x N) and
// C/D (M x N) each lane of a warp holds in which fragment element. Transcribed from the PTX ISA,
// section "Warp-level matrix fragments for mma" (m8n8k4 .f64; m16n8k4, m16n8k8, m16n8k16 with
// .f64 / .tf32 / .f16 / .bf16). Plain C++ usable by g++ (no CUDA headers): CPU tests enumerate
// the maps and the host emulator (warp_mma_emulator.h) scatters and gathers with them.
//
// Terms (as in the ISA): group_id = lane / 4, thread_in_group = lane % 4. "Element i" is the PTX
// fragment element a_i / b_i / c_i. For 64- and 32-bit types element i is register i; for the packed
// 16-bit types element i lives in register i / 2, in the low half when i is even.
#include <cstdint>

#include "core/hd.h"
#include "arch/number_formats.h"

namespace tcfem::arch {

inline constexpr int warp_size = 32;

TCFEM_HD constexpr int group_id(int lane) { return lane >> 2; }
TCFEM_HD constexpr int thread_in_group(int lane) { return lane & 3; }

// ================================================================================================
// Index maps: (lane, element) -> (row, col) and the inverse (row, col) -> (lane, element).
// ================================================================================================

/// m8n8k4 with .f64 (sm_80): A 8x4, B 4x8, C 8x8; one element of A and B, two of C per lane.
struct LaneIndex_M8N8K4_F64 {
  static constexpr int M = 8, N = 8, K = 4;
  static constexpr int a_elements = 1, b_elements = 1, c_elements = 2;

  TCFEM_HD static constexpr int a_row(int lane, int) { return group_id(lane); }
  TCFEM_HD static constexpr int a_col(int lane, int) { return thread_in_group(lane); }
  TCFEM_HD static constexpr int b_row(int lane, int) { return thread_in_group(lane); }
  TCFEM_HD static constexpr int b_col(int lane, int) { return group_id(lane); }
  TCFEM_HD static constexpr int c_row(int lane, int) { return group_id(lane); }
  TCFEM_HD static constexpr int c_col(int lane, int i) { return 2 * thread_in_group(lane) + i; }

  TCFEM_HD static constexpr int a_lane(int row, int col) { return 4 * row + col; }
  TCFEM_HD static constexpr int a_element(int, int) { return 0; }
  TCFEM_HD static constexpr int b_lane(int row, int col) { return 4 * col + row; }
  TCFEM_HD static constexpr int b_element(int, int) { return 0; }
  TCFEM_HD static constexpr int c_lane(int row, int col) { return 4 * row + col / 2; }
  TCFEM_HD static constexpr int c_element(int, int col) { return col % 2; }
};

/// Accumulator map shared by all m16n8k* shapes (f64 and f32): c0,c1 in row group_id, c2,c3 in
/// row group_id + 8, columns 2 * thread_in_group + (i & 1).
struct AccumulatorIndex_M16N8 {
  static constexpr int M = 16, N = 8;
  static constexpr int c_elements = 4;

  TCFEM_HD static constexpr int c_row(int lane, int i) { return group_id(lane) + 8 * (i >> 1); }
  TCFEM_HD static constexpr int c_col(int lane, int i) {
    return 2 * thread_in_group(lane) + (i & 1);
  }
  TCFEM_HD static constexpr int c_lane(int row, int col) { return 4 * (row & 7) + col / 2; }
  TCFEM_HD static constexpr int c_element(int row, int col) { return 2 * (row >> 3) + (col & 1); }
};

/// m16n8k4 / m16n8k8 / m16n8k16 with one element per register (.f64 on sm_90, .tf32 on sm_80):
///   A: row = group_id + 8 (i & 1), col = thread_in_group + 4 (i >> 1)   (K / 2 elements)
///   B: row = thread_in_group + 4 i, col = group_id                      (K / 4 elements)
/// (the ISA writes the m16n8k16 .f64 A columns as "2 i + t" for even i and "2 i - 2 + t" for odd i,
/// which is the same formula.)
template <int K_>
struct LaneIndex_M16N8_OneElementPerRegister : AccumulatorIndex_M16N8 {
  static_assert(K_ == 4 || K_ == 8 || K_ == 16, "m16n8k4, m16n8k8 and m16n8k16 only");
  static constexpr int K = K_;
  static constexpr int a_elements = K / 2, b_elements = K / 4;

  TCFEM_HD static constexpr int a_row(int lane, int i) { return group_id(lane) + 8 * (i & 1); }
  TCFEM_HD static constexpr int a_col(int lane, int i) {
    return thread_in_group(lane) + 4 * (i >> 1);
  }
  TCFEM_HD static constexpr int b_row(int lane, int i) { return thread_in_group(lane) + 4 * i; }
  TCFEM_HD static constexpr int b_col(int lane, int) { return group_id(lane); }

  TCFEM_HD static constexpr int a_lane(int row, int col) { return 4 * (row & 7) + (col & 3); }
  TCFEM_HD static constexpr int a_element(int row, int col) { return (row >> 3) + 2 * (col >> 2); }
  TCFEM_HD static constexpr int b_lane(int row, int col) { return 4 * col + (row & 3); }
  TCFEM_HD static constexpr int b_element(int row, int) { return row >> 2; }
};

/// m16n8k16 with packed 16-bit types (.f16 / .bf16), two elements per 32-bit register:
///   A: row = group_id + 8 ((i >> 1) & 1), col = 2 thread_in_group + (i & 1) + 8 (i >> 2)
///   B: row = 2 thread_in_group + (i & 1) + 8 (i >> 1), col = group_id
struct LaneIndex_M16N8K16_Packed16 : AccumulatorIndex_M16N8 {
  static constexpr int K = 16;
  static constexpr int a_elements = 8, b_elements = 4;

  TCFEM_HD static constexpr int a_row(int lane, int i) {
    return group_id(lane) + 8 * ((i >> 1) & 1);
  }
  TCFEM_HD static constexpr int a_col(int lane, int i) {
    return 2 * thread_in_group(lane) + (i & 1) + 8 * (i >> 2);
  }
  TCFEM_HD static constexpr int b_row(int lane, int i) {
    return 2 * thread_in_group(lane) + (i & 1) + 8 * (i >> 1);
  }
  TCFEM_HD static constexpr int b_col(int lane, int) { return group_id(lane); }

  TCFEM_HD static constexpr int a_lane(int row, int col) { return 4 * (row & 7) + ((col & 7) >> 1); }
  TCFEM_HD static constexpr int a_element(int row, int col) {
    return (col & 1) + 2 * (row >> 3) + 4 * (col >> 3);
  }
  TCFEM_HD static constexpr int b_lane(int row, int col) { return 4 * col + ((row & 7) >> 1); }
  TCFEM_HD static constexpr int b_element(int row, int) { return (row & 1) + 2 * (row >> 3); }
};

// ================================================================================================
// Register formats: how fragment elements are stored in registers and converted from values.
// get: exact value of element i; set: round a value to the format and store it; set_exact: store a
// value already representable in the format (skips the rounding where that saves work).
// ================================================================================================

/// One value per register, stored as is (f64, f32 accumulators, f32 CUDA-core fragments).
template <typename Number>
struct PlainRegisters {
  using Register = Number;
  using Value = Number;
  static constexpr int elements_per_register = 1;
  TCFEM_HD static Value get(const Register* reg, int i) { return reg[i]; }
  TCFEM_HD static void set(Register* reg, int i, Value v) { reg[i] = v; }
  TCFEM_HD static void set_exact(Register* reg, int i, Value v) { reg[i] = v; }
};

/// TF32 in a 32-bit register (the FP32 pattern with the low 13 bits cleared).
struct Tf32Registers {
  using Register = std::uint32_t;
  using Value = float;
  static constexpr int elements_per_register = 1;
  TCFEM_HD static Value get(const Register* reg, int i) { return float_from_bits(reg[i]); }
  TCFEM_HD static void set(Register* reg, int i, Value v) { reg[i] = Tf32Format::encode(v); }
  TCFEM_HD static void set_exact(Register* reg, int i, Value v) { reg[i] = float_bits(v); }
};

/// Two 16-bit values (FP16 or BF16) per 32-bit register, element 2j in the low half of register j.
template <class Format>
struct Packed16Registers {
  using Register = std::uint32_t;
  using Value = float;
  static constexpr int elements_per_register = 2;
  TCFEM_HD static Value get(const Register* reg, int i) {
    return Format::decode(static_cast<typename Format::Bits>((reg[i >> 1] >> (16 * (i & 1))) & 0xffffu));
  }
  TCFEM_HD static void set_bits(Register* reg, int i, std::uint16_t bits) {
    const int shift = 16 * (i & 1);
    reg[i >> 1] = (reg[i >> 1] & ~(0xffffu << shift)) | (std::uint32_t(bits) << shift);
  }
  TCFEM_HD static void set(Register* reg, int i, Value v) { set_bits(reg, i, Format::encode(v)); }
  TCFEM_HD static void set_exact(Register* reg, int i, Value v) { set(reg, i, v); }
};

/// The registers one lane holds for one operand.
template <typename Register, int n_registers>
struct Fragment {
  Register reg[n_registers];
};

// ================================================================================================
// LaneMap: index map + register formats, fragment types, element access, shared-memory load/store.
// Every tensor-core atom and its CUDA-core twin derive from one of these.
// ================================================================================================
template <class Index, class ARegisters, class BRegisters, class CRegisters>
struct LaneMap : Index {
  using RegistersA = ARegisters;
  using RegistersB = BRegisters;
  using RegistersC = CRegisters;
  using ValueA = typename RegistersA::Value;  // what A elements are built from (double or float)
  using ValueB = typename RegistersB::Value;
  using ValueC = typename RegistersC::Value;  // accumulator type
  static constexpr int a_registers = Index::a_elements / RegistersA::elements_per_register;
  static constexpr int b_registers = Index::b_elements / RegistersB::elements_per_register;
  static constexpr int c_registers = Index::c_elements / RegistersC::elements_per_register;
  using FragA = Fragment<typename RegistersA::Register, a_registers>;
  using FragB = Fragment<typename RegistersB::Register, b_registers>;
  using FragC = Fragment<typename RegistersC::Register, c_registers>;

  TCFEM_HD static ValueA get_a(const FragA& f, int i) { return RegistersA::get(f.reg, i); }
  TCFEM_HD static ValueB get_b(const FragB& f, int i) { return RegistersB::get(f.reg, i); }
  TCFEM_HD static ValueC get_c(const FragC& f, int i) { return RegistersC::get(f.reg, i); }
  TCFEM_HD static void set_a(FragA& f, int i, ValueA v) { RegistersA::set(f.reg, i, v); }
  TCFEM_HD static void set_b(FragB& f, int i, ValueB v) { RegistersB::set(f.reg, i, v); }
  TCFEM_HD static void set_c(FragC& f, int i, ValueC v) { RegistersC::set(f.reg, i, v); }
  TCFEM_HD static void set_a_exact(FragA& f, int i, ValueA v) { RegistersA::set_exact(f.reg, i, v); }
  TCFEM_HD static void set_b_exact(FragB& f, int i, ValueB v) { RegistersB::set_exact(f.reg, i, v); }

  TCFEM_HD static void fill_c(FragC& f, ValueC v) {
    for (int i = 0; i < Index::c_elements; ++i) set_c(f, i, v);
  }

  /// This lane's part of A from a row-major M x K matrix with leading dimension lda (rounded to
  /// the input format).
  TCFEM_HD static void load_a(FragA& f, const ValueA* a, int lda, int lane) {
    for (int i = 0; i < Index::a_elements; ++i)
      set_a(f, i, a[LaneMap::a_row(lane, i) * lda + LaneMap::a_col(lane, i)]);
  }
  /// This lane's part of B from a row-major K x N matrix with leading dimension ldb.
  TCFEM_HD static void load_b(FragB& f, const ValueB* b, int ldb, int lane) {
    for (int i = 0; i < Index::b_elements; ++i)
      set_b(f, i, b[LaneMap::b_row(lane, i) * ldb + LaneMap::b_col(lane, i)]);
  }
  /// This lane's part of C from a row-major M x N matrix with leading dimension ldc.
  TCFEM_HD static void load_c(FragC& f, const ValueC* c, int ldc, int lane) {
    for (int i = 0; i < Index::c_elements; ++i)
      set_c(f, i, c[LaneMap::c_row(lane, i) * ldc + LaneMap::c_col(lane, i)]);
  }
  /// Writes this lane's part of C/D into a row-major M x N matrix with leading dimension ldc.
  TCFEM_HD static void store_c(const FragC& f, ValueC* c, int ldc, int lane) {
    for (int i = 0; i < Index::c_elements; ++i)
      c[LaneMap::c_row(lane, i) * ldc + LaneMap::c_col(lane, i)] = get_c(f, i);
  }
};

// ---- the lane maps of the instructions tcfem uses ---------------------------------------------
using LaneMap_M8N8K4_F64 =
    LaneMap<LaneIndex_M8N8K4_F64, PlainRegisters<double>, PlainRegisters<double>, PlainRegisters<double>>;
using LaneMap_M16N8K4_F64 = LaneMap<LaneIndex_M16N8_OneElementPerRegister<4>, PlainRegisters<double>,
                                    PlainRegisters<double>, PlainRegisters<double>>;
using LaneMap_M16N8K8_F64 = LaneMap<LaneIndex_M16N8_OneElementPerRegister<8>, PlainRegisters<double>,
                                    PlainRegisters<double>, PlainRegisters<double>>;
using LaneMap_M16N8K16_F64 = LaneMap<LaneIndex_M16N8_OneElementPerRegister<16>, PlainRegisters<double>,
                                     PlainRegisters<double>, PlainRegisters<double>>;
using LaneMap_M16N8K8_TF32 =
    LaneMap<LaneIndex_M16N8_OneElementPerRegister<8>, Tf32Registers, Tf32Registers, PlainRegisters<float>>;
using LaneMap_M16N8K16_F16 = LaneMap<LaneIndex_M16N8K16_Packed16, Packed16Registers<Fp16Format>,
                                     Packed16Registers<Fp16Format>, PlainRegisters<float>>;
using LaneMap_M16N8K16_BF16 = LaneMap<LaneIndex_M16N8K16_Packed16, Packed16Registers<Bf16Format>,
                                      Packed16Registers<Bf16Format>, PlainRegisters<float>>;
/// FP32 operands in the m16n8k8 TF32 layout. No tensor-core instruction takes FP32 inputs: this is
/// the map of the CUDA-core FP32 path, layout-compatible with the TF32 atom.
using LaneMap_M16N8K8_F32 = LaneMap<LaneIndex_M16N8_OneElementPerRegister<8>, PlainRegisters<float>,
                                    PlainRegisters<float>, PlainRegisters<float>>;

}  // namespace tcfem::arch
