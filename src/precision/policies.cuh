#pragma once
// Precision policies for warp-level tile products. A kernel writes its contraction once against
//
//   typename Policy::OperandA a;  Policy::load_a(a, a_ptr, lda, lane);   // round or split here
//   typename Policy::OperandB b;  Policy::load_b(b, b_ptr, ldb, lane);
//   typename Policy::Accumulator acc;  Policy::clear(acc);
//   Policy::mma(acc, a, b);                                                // 1 or 3 mma
//   Policy::store(acc, d_ptr, ldd, lane);                                  // applies the correction
//
// and picks the precision and instruction by template parameter:
//   PolicyFor<Precision::fp16ec>                        FP16 tensor cores with error correction
//   PolicyFor<Precision::fp64, arch::Fp64Shape::m8n8k4>  A100-style DMMA
//   Fp64Policy<arch::Simt_M16N8K16_F64>                  the sm_90 layout on CUDA cores
// Operands are built once and may be reused (e.g. a 1D shape-function matrix kept in registers).
// The split arithmetic is the one of split_arithmetic.h, shared with the host reference.
#include <cmath>
#include <type_traits>

#include "arch/capability.h"
#include "arch/mma_atoms.cuh"
#include "precision/split_arithmetic.h"

namespace tcfem::precision {

/// Tile product of one mma atom under the scalar arithmetic `Arith`.
template <class Arith, class MmaAtom>
struct TilePolicy {
  using Arithmetic = Arith;
  using Atom = MmaAtom;
  using Storage = typename Arith::Storage;
  using ValueC = typename Atom::ValueC;
  using FragA = typename Atom::FragA;
  using FragB = typename Atom::FragB;
  using FragC = typename Atom::FragC;
  static constexpr Precision precision = Arith::precision;
  static constexpr SplitKind split_kind = Arith::split_kind;
  static constexpr int M = Atom::M, N = Atom::N, K = Atom::K;
  static constexpr int a_elements = Atom::a_elements, b_elements = Atom::b_elements;
  static constexpr int operand_parts = split_kind == SplitKind::none ? 1 : 2;
  static constexpr int accumulator_parts = split_kind == SplitKind::error_correction ? 2 : 1;
  static constexpr int mma_per_product = Arith::products;
  static_assert(std::is_same_v<Storage, typename Atom::ValueA> &&
                    std::is_same_v<Storage, typename Atom::ValueB>,
                "the atom must take the policy's storage type");

  /// parts[0]: the rounded value or hi; parts[1]: lo (split policies only).
  struct OperandA {
    FragA parts[operand_parts];
  };
  struct OperandB {
    FragB parts[operand_parts];
  };
  /// parts[0]: the products; parts[1]: the unscaled correction products (error correction only).
  struct Accumulator {
    FragC parts[accumulator_parts];
  };

  /// Element i of this lane's A operand from the stored value x.
  TCFEM_HD static void set_a(OperandA& a, int i, Storage x) {
    if constexpr (split_kind == SplitKind::none) {
      Atom::set_a(a.parts[0], i, Arith::round(x));
    } else {
      const SplitValue s = Arith::split(x);
      Atom::set_a_exact(a.parts[0], i, s.hi);
      Atom::set_a_exact(a.parts[1], i, s.lo);
    }
  }
  TCFEM_HD static void set_b(OperandB& b, int i, Storage x) {
    if constexpr (split_kind == SplitKind::none) {
      Atom::set_b(b.parts[0], i, Arith::round(x));
    } else {
      const SplitValue s = Arith::split(x);
      Atom::set_b_exact(b.parts[0], i, s.hi);
      Atom::set_b_exact(b.parts[1], i, s.lo);
    }
  }
  /// This lane's values in the atom's element order (a_row / a_col of the lane map).
  TCFEM_HD static void make_a(OperandA& a, const Storage (&values)[a_elements]) {
    for (int i = 0; i < a_elements; ++i) set_a(a, i, values[i]);
  }
  TCFEM_HD static void make_b(OperandB& b, const Storage (&values)[b_elements]) {
    for (int i = 0; i < b_elements; ++i) set_b(b, i, values[i]);
  }
  /// This lane's part of a row-major M x K tile (leading dimension lda).
  TCFEM_HD static void load_a(OperandA& a, const Storage* tile, int lda, int lane) {
    for (int i = 0; i < a_elements; ++i) set_a(a, i, tile[Atom::a_row(lane, i) * lda + Atom::a_col(lane, i)]);
  }
  /// This lane's part of a row-major K x N tile (leading dimension ldb).
  TCFEM_HD static void load_b(OperandB& b, const Storage* tile, int ldb, int lane) {
    for (int i = 0; i < b_elements; ++i) set_b(b, i, tile[Atom::b_row(lane, i) * ldb + Atom::b_col(lane, i)]);
  }

  TCFEM_HD static void clear(Accumulator& acc) {
    for (int p = 0; p < accumulator_parts; ++p) Atom::fill_c(acc.parts[p], ValueC(0));
  }
  /// Starts from an existing C tile (the correction part starts at zero).
  TCFEM_HD static void load_accumulator(Accumulator& acc, const ValueC* tile, int ldc, int lane) {
    clear(acc);
    Atom::load_c(acc.parts[0], tile, ldc, lane);
  }

  /// acc += A B with the policy's products. All 32 lanes of the warp must call it.
  static __device__ void mma(Accumulator& acc, const OperandA& a, const OperandB& b) {
    if constexpr (split_kind == SplitKind::none) {
      Atom::mma(acc.parts[0], a.parts[0], b.parts[0], acc.parts[0]);
    } else if constexpr (split_kind == SplitKind::three_products) {
      Atom::mma(acc.parts[0], a.parts[1], b.parts[0], acc.parts[0]);  // small terms first
      Atom::mma(acc.parts[0], a.parts[0], b.parts[1], acc.parts[0]);
      Atom::mma(acc.parts[0], a.parts[0], b.parts[0], acc.parts[0]);
    } else {
      Atom::mma(acc.parts[0], a.parts[0], b.parts[0], acc.parts[0]);
      Atom::mma(acc.parts[1], a.parts[1], b.parts[0], acc.parts[1]);
      Atom::mma(acc.parts[1], a.parts[0], b.parts[1], acc.parts[1]);
    }
  }
  /// Convenience: acc += A B from this lane's stored values (rounds / splits, then mma).
  static __device__ void mma(Accumulator& acc, const Storage (&a_values)[a_elements],
                             const Storage (&b_values)[b_elements]) {
    OperandA a;
    OperandB b;
    make_a(a, a_values);
    make_b(b, b_values);
    mma(acc, a, b);
  }

  /// The accumulated tile: parts[0] (+ parts[1] / 2^s for error correction).
  TCFEM_HD static FragC resolve(const Accumulator& acc) {
    if constexpr (split_kind == SplitKind::error_correction) {
      FragC d;
      for (int i = 0; i < Atom::c_elements; ++i)
        Atom::set_c(
            d, i, fmaf(Atom::get_c(acc.parts[1], i), Arith::correction_factor, Atom::get_c(acc.parts[0], i)));
      return d;
    } else {
      return acc.parts[0];
    }
  }
  /// Writes this lane's part of the resolved tile into a row-major M x N matrix.
  TCFEM_HD static void store(const Accumulator& acc, ValueC* tile, int ldc, int lane) {
    Atom::store_c(resolve(acc), tile, ldc, lane);
  }
};

/// acc += A B for A (M x k_extent, leading dimension lda) and B (k_extent x N, ldb), row-major,
/// k_extent a multiple of Policy::K; one warp, all lanes.
template <class Policy>
__device__ void warp_tile_gemm(typename Policy::Accumulator& acc, const typename Policy::Storage* a, int lda,
                               const typename Policy::Storage* b, int ldb, int k_extent, int lane) {
  for (int k = 0; k < k_extent; k += Policy::K) {
    typename Policy::OperandA a_operand;
    typename Policy::OperandB b_operand;
    Policy::load_a(a_operand, a + k, lda, lane);
    Policy::load_b(b_operand, b + k * ldb, ldb, lane);
    Policy::mma(acc, a_operand, b_operand);
  }
}

// ---- which atom each precision uses ------------------------------------------------------------
// `target` is the device's FP64 path as select_fp64_atom reports it (m16n8k16: sm_90, m8n8k4: sm_80
// family, simt: no tensor cores). FP64 takes the matching DMMA shape; the FP32-storage precisions use
// the same instruction on sm_80 and sm_90 and the CUDA-core twin on simt.
template <Precision precision, arch::Fp64Shape target>
struct AtomFor;

template <arch::Fp64Shape target>
struct AtomFor<Precision::fp64, target> {
  using type = std::conditional_t<
      target == arch::Fp64Shape::m16n8k16, arch::Sm90_M16N8K16_F64,
      std::conditional_t<target == arch::Fp64Shape::m8n8k4, arch::Sm80_M8N8K4_F64, arch::Simt_M8N8K4_F64>>;
};
template <arch::Fp64Shape target>
struct AtomFor<Precision::fp32, target> {
  using type = arch::Simt_M16N8K8_F32;
};
template <arch::Fp64Shape target>
struct AtomFor<Precision::tf32x3, target> {
  using type =
      std::conditional_t<target == arch::Fp64Shape::simt, arch::Simt_M16N8K8_TF32, arch::Sm80_M16N8K8_TF32>;
};
template <arch::Fp64Shape target>
struct AtomFor<Precision::fp16, target> {
  using type =
      std::conditional_t<target == arch::Fp64Shape::simt, arch::Simt_M16N8K16_F16, arch::Sm80_M16N8K16_F16>;
};
template <arch::Fp64Shape target>
struct AtomFor<Precision::fp16ec, target> : AtomFor<Precision::fp16, target> {};
template <arch::Fp64Shape target>
struct AtomFor<Precision::bf16, target> {
  using type =
      std::conditional_t<target == arch::Fp64Shape::simt, arch::Simt_M16N8K16_BF16, arch::Sm80_M16N8K16_BF16>;
};
template <arch::Fp64Shape target>
struct AtomFor<Precision::bf16x3, target> : AtomFor<Precision::bf16, target> {};

/// The policy of `precision` on a device of class `target` (sm_90 by default).
template <Precision precision, arch::Fp64Shape target = arch::Fp64Shape::m16n8k16>
using PolicyFor = TilePolicy<Arithmetic<precision>, typename AtomFor<precision, target>::type>;

// Named policies; the atom can be replaced by a layout-compatible one (e.g. its SIMT twin).
template <class Atom = arch::Sm90_M16N8K16_F64>
using Fp64Policy = TilePolicy<Arithmetic<Precision::fp64>, Atom>;
template <class Atom = arch::Simt_M16N8K8_F32>
using Fp32Policy = TilePolicy<Arithmetic<Precision::fp32>, Atom>;
template <class Atom = arch::Sm80_M16N8K8_TF32>
using Tf32x3Policy = TilePolicy<Arithmetic<Precision::tf32x3>, Atom>;
template <class Atom = arch::Sm80_M16N8K16_F16>
using Fp16Policy = TilePolicy<Arithmetic<Precision::fp16>, Atom>;
template <class Atom = arch::Sm80_M16N8K16_F16>
using Fp16ecPolicy = TilePolicy<Arithmetic<Precision::fp16ec>, Atom>;
template <class Atom = arch::Sm80_M16N8K16_BF16>
using Bf16Policy = TilePolicy<Arithmetic<Precision::bf16>, Atom>;
template <class Atom = arch::Sm80_M16N8K16_BF16>
using Bf16x3Policy = TilePolicy<Arithmetic<Precision::bf16x3>, Atom>;

}  // namespace tcfem::precision
