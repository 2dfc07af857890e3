#pragma once
// Scalar arithmetic of each precision policy: the storage type, the rounding to the instruction's
// input format, and the hi/lo split with its correction. Written once, __host__ __device__: the
// device tile products (policies.cuh) and the host reference dot products (policy_dot.h) both call
// these functions, and the rounding is bit-identical on both sides (arch/number_formats.h).
// Plain C++ (usable by g++).
//
//   none              x -> round(x); one product
//   three_products    x = hi + lo, hi = round(x), lo = round(x - hi);
//                     a b ~ a_lo b_hi + a_hi b_lo + a_hi b_hi  (a_lo b_lo dropped; QUDA's 3xBF16)
//   error_correction  hi = round(x), lo = round((x - hi) 2^s);
//                     a b ~ a_hi b_hi + (a_lo b_hi + a_hi b_lo) / 2^s  (Cui et al., Alg. 1, s = 11)
#include "core/hd.h"
#include "arch/number_formats.h"
#include "precision/precision.h"

namespace tcfem::precision {

enum class SplitKind { none, three_products, error_correction };

/// A value split into two parts exactly representable in the input format.
struct SplitValue {
  float hi;
  float lo;
};

/// Single rounding to `Format` (fp16, bf16): one product, FP32 accumulation.
template <class Format>
struct RoundedArithmetic {
  using Storage = float;
  using Accumulate = float;
  using InputFormat = Format;
  static constexpr SplitKind split_kind = SplitKind::none;
  static constexpr int products = 1;
  TCFEM_HD static float round(float x) { return Format::round(x); }
};

/// No rounding (fp64, fp32): the inputs enter the product as stored.
template <typename Number>
struct NativeArithmetic {
  using Storage = Number;
  using Accumulate = Number;
  static constexpr SplitKind split_kind = SplitKind::none;
  static constexpr int products = 1;
  TCFEM_HD static Number round(Number x) { return x; }
};

/// hi = round(x), lo = round(x - hi) (x - hi is exact in FP32); three products.
template <class Format>
struct ThreeProductArithmetic {
  using Storage = float;
  using Accumulate = float;
  using InputFormat = Format;
  static constexpr SplitKind split_kind = SplitKind::three_products;
  static constexpr int products = 3;
  static constexpr float residual_scale = 1.0f;
  static constexpr float correction_factor = 1.0f;
  TCFEM_HD static SplitValue split(float x) {
    const float hi = Format::round(x);
    return {hi, Format::round(x - hi)};
  }
};

/// hi = round(x), lo = round((x - hi) 2^log2_scale): the residual is lifted into the format's
/// normal range; the correction products are scaled back by 2^-log2_scale.
template <class Format, int log2_scale>
struct ErrorCorrectionArithmetic {
  using Storage = float;
  using Accumulate = float;
  using InputFormat = Format;
  static constexpr SplitKind split_kind = SplitKind::error_correction;
  static constexpr int products = 3;
  static constexpr float residual_scale = float(1u << log2_scale);
  static constexpr float correction_factor = 1.0f / residual_scale;
  TCFEM_HD static SplitValue split(float x) {
    const float hi = Format::round(x);
    return {hi, Format::round((x - hi) * residual_scale)};
  }
};

template <Precision precision>
struct Arithmetic;

template <>
struct Arithmetic<Precision::fp64> : NativeArithmetic<double> {
  static constexpr Precision precision = Precision::fp64;
};
template <>
struct Arithmetic<Precision::fp32> : NativeArithmetic<float> {
  static constexpr Precision precision = Precision::fp32;
};
template <>
struct Arithmetic<Precision::tf32x3> : ThreeProductArithmetic<arch::Tf32Format> {
  static constexpr Precision precision = Precision::tf32x3;
};
template <>
struct Arithmetic<Precision::fp16> : RoundedArithmetic<arch::Fp16Format> {
  static constexpr Precision precision = Precision::fp16;
};
/// FP16 residuals scaled by 2^11: FP16 keeps 11 significant bits, so the residual of an FP32 value
/// is below 2^-11 of it and the scaled residual has the value's magnitude (Cui et al., Alg. 1).
template <>
struct Arithmetic<Precision::fp16ec> : ErrorCorrectionArithmetic<arch::Fp16Format, 11> {
  static constexpr Precision precision = Precision::fp16ec;
};
template <>
struct Arithmetic<Precision::bf16> : RoundedArithmetic<arch::Bf16Format> {
  static constexpr Precision precision = Precision::bf16;
};
template <>
struct Arithmetic<Precision::bf16x3> : ThreeProductArithmetic<arch::Bf16Format> {
  static constexpr Precision precision = Precision::bf16x3;
};

}  // namespace tcfem::precision
