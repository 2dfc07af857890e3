#pragma once
// The narrow input formats of the tensor-core instructions (TF32, FP16, BF16): conversion from and to
// FP32, bit-exact on host and device. The device uses the conversion instructions (cvt); the host
// reproduces their results with integer arithmetic on the FP32 bit pattern, so that CPU tests and
// CPU reference paths round exactly like the GPU. Plain C++ (no CUDA headers needed).
#include <cstdint>
#include <cstring>

#include "core/hd.h"

namespace tcfem::arch {

/// Bit pattern of an FP32 value.
TCFEM_HD inline std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

/// FP32 value of a bit pattern.
TCFEM_HD inline float float_from_bits(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

/// Host emulation of `cvt.rna.tf32.f32`: round to 10 fraction bits, to nearest, ties away from zero,
/// kept as an FP32 bit pattern with the low 13 bits cleared. Finite values: add half an ulp to the
/// magnitude bits and truncate (a carry into the exponent is the correct rounding; values within half
/// a TF32 ulp of 2^128 become infinity). Inf and NaN are only truncated, as the hardware does (see
/// the SASS of cvt.rna.tf32.f32: an |x| < inf test guards the addition): quiet NaNs stay NaN.
TCFEM_HD inline std::uint32_t tf32_bits_rna_host(std::uint32_t bits) {
  if ((bits & 0x7fffffffu) < 0x7f800000u) bits += 0x1000u;
  return bits & 0xffffe000u;
}

/// x rounded to TF32 (round to nearest, ties away from zero), as an FP32 value.
TCFEM_HD inline float round_to_tf32(float x) {
#if defined(__CUDA_ARCH__)
  std::uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
#else
  return float_from_bits(tf32_bits_rna_host(float_bits(x)));
#endif
}

/// Host emulation of `cvt.rn.f16.f32`: IEEE binary16, round to nearest, ties to even, with
/// subnormals and overflow to infinity. NaN becomes the canonical FP16 NaN 0x7fff (sign kept).
TCFEM_HD inline std::uint16_t fp16_bits_rn_host(float x) {
  const std::uint32_t bits = float_bits(x);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7fffu);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (magnitude < 0x38800000u) {  // below 2^-14: an FP16 subnormal (or zero)
    if (magnitude <= 0x33000000u) return static_cast<std::uint16_t>(sign);  // <= 2^-25: zero
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // value / 2^-24 = significand / 2^shift
    std::uint32_t quotient = significand >> shift;
    const std::uint32_t remainder = significand & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (quotient & 1u))) ++quotient;
    return static_cast<std::uint16_t>(sign | quotient);  // a carry gives the smallest normal: right
  }
  std::uint32_t result = ((magnitude >> 23) - 112u) << 10 | ((magnitude >> 13) & 0x3ffu);
  const std::uint32_t remainder = magnitude & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

/// FP16 bit pattern to FP32 (exact).
TCFEM_HD inline float fp16_bits_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  float x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
  return x;
#else
  const std::uint32_t sign = (std::uint32_t(h) & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t fraction = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: fraction * 2^-24, exact in FP32
    const float magnitude = static_cast<float>(fraction) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1fu) return float_from_bits(sign | 0x7f800000u | (fraction << 13));
  return float_from_bits(sign | ((exponent + 112u) << 23) | (fraction << 13));
#endif
}

/// x rounded to FP16 (round to nearest even) as a bit pattern.
TCFEM_HD inline std::uint16_t float_to_fp16_bits(float x) {
#if defined(__CUDA_ARCH__)
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#else
  return fp16_bits_rn_host(x);
#endif
}

/// Host emulation of `cvt.rn.bf16.f32`: keep the upper 16 bits, round to nearest even (overflow to
/// infinity). NaN becomes a quiet NaN with the upper payload bits kept.
TCFEM_HD inline std::uint16_t bf16_bits_rn_host(float x) {
  const std::uint32_t bits = float_bits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/// x rounded to BF16 (round to nearest even) as a bit pattern.
TCFEM_HD inline std::uint16_t float_to_bf16_bits(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
#else
  return bf16_bits_rn_host(x);
#endif
}

/// BF16 bit pattern to FP32 (exact: the upper half of the FP32 pattern).
TCFEM_HD inline float bf16_bits_to_float(std::uint16_t h) {
  return float_from_bits(std::uint32_t(h) << 16);
}

// ---- format tags: one interface for the three narrow formats -----------------------------------
// Bits: the stored pattern; encode: round FP32 to the format; decode: exact value as FP32;
// round: encode then decode.

/// TF32: 1 sign, 8 exponent, 10 fraction bits, stored in a 32-bit register (low 13 bits zero).
struct Tf32Format {
  using Bits = std::uint32_t;
  static constexpr int significand_bits = 11;
  TCFEM_HD static Bits encode(float x) { return float_bits(round_to_tf32(x)); }
  TCFEM_HD static float decode(Bits bits) { return float_from_bits(bits); }
  TCFEM_HD static float round(float x) { return round_to_tf32(x); }
};

/// FP16 (IEEE binary16): 1 sign, 5 exponent, 10 fraction bits.
struct Fp16Format {
  using Bits = std::uint16_t;
  static constexpr int significand_bits = 11;
  TCFEM_HD static Bits encode(float x) { return float_to_fp16_bits(x); }
  TCFEM_HD static float decode(Bits bits) { return fp16_bits_to_float(bits); }
  TCFEM_HD static float round(float x) { return decode(encode(x)); }
};

/// BF16: 1 sign, 8 exponent, 7 fraction bits.
struct Bf16Format {
  using Bits = std::uint16_t;
  static constexpr int significand_bits = 8;
  TCFEM_HD static Bits encode(float x) { return float_to_bf16_bits(x); }
  TCFEM_HD static float decode(Bits bits) { return bf16_bits_to_float(bits); }
  TCFEM_HD static float round(float x) { return decode(encode(x)); }
};

}  // namespace tcfem::arch
