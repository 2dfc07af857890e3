// Precision policies on the CPU: names, the narrow-format roundings against their definitions
// (TF32: round to nearest, ties away, as cvt.rna.tf32.f32; FP16 / BF16: round to nearest even),
// the hi/lo split identities, and the accuracy of the policies' dot products.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "arch/number_formats.h"
#include "core/error.h"
#include "precision/policy_dot.h"
#include "precision/precision.h"
#include "precision/split_arithmetic.h"

namespace {

using namespace tcfem::precision;
using tcfem::arch::float_bits;
using tcfem::arch::float_from_bits;

// ---- names ---------------------------------------------------------------------------------------
TEST(PrecisionNames, RoundTrip) {
  for (const Precision p : all_precisions) {
    EXPECT_EQ(from_string(to_string(p)), p);
    EXPECT_EQ(parse_precision(to_string(p)), p);
  }
  EXPECT_EQ(to_string(Precision::fp16ec), "fp16ec");
  EXPECT_EQ(to_string(Precision::bf16x3), "bf16x3");
  EXPECT_EQ(allowed_precision_names(), "fp64, fp32, tf32x3, fp16, fp16ec, bf16, bf16x3");
}

TEST(PrecisionNames, UnknownNameIsAnInputError) {
  EXPECT_FALSE(parse_precision("fp128").has_value());
  EXPECT_FALSE(parse_precision("FP64").has_value());
  EXPECT_FALSE(parse_precision("").has_value());
  try {
    from_string("fp8");
    FAIL() << "no exception";
  } catch (const tcfem::InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'fp8'"), std::string::npos) << message;
    EXPECT_NE(message.find("fp16ec"), std::string::npos) << message;
  }
}

// ---- reference roundings, from the definitions (double arithmetic, independent of the library) ---
// x rounded to `significand_bits` significant bits, exponents clamped below at `min_exponent`
// (gradual underflow), to nearest with ties away from zero or to even; infinite at 2^max_exponent+1
// or beyond `max_finite`.
double reference_round(double x, int significand_bits, int min_exponent, double max_finite, bool ties_away) {
  if (!std::isfinite(x) || x == 0) return x;
  const int exponent = std::max(std::ilogb(x), min_exponent);
  const double ulp = std::ldexp(1.0, exponent - (significand_bits - 1));
  const double q = x / ulp;  // exact: scaling by a power of two
  const double rounded = (ties_away ? std::round(q) : std::nearbyint(q)) * ulp;
  if (std::fabs(rounded) > max_finite) return std::copysign(INFINITY, x);
  return rounded;
}
const double tf32_max = std::ldexp(2.0 - std::ldexp(1.0, -10), 127);
const double bf16_max = std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
double reference_tf32(float x) { return reference_round(x, 11, -126, tf32_max, true); }
double reference_fp16(float x) { return reference_round(x, 11, -14, 65504.0, false); }
double reference_bf16(float x) { return reference_round(x, 8, -126, bf16_max, false); }

double fp16_round(float x) { return tcfem::arch::Fp16Format::round(x); }
double bf16_round(float x) { return tcfem::arch::Bf16Format::round(x); }

std::vector<float> random_finite_floats(std::mt19937_64& rng, int count) {
  std::vector<float> values;
  std::uniform_int_distribution<std::uint32_t> bits;
  while (static_cast<int>(values.size()) < count) {
    const float x = float_from_bits(bits(rng));
    if (std::isfinite(x)) values.push_back(x);
  }
  return values;
}

std::uint64_t fresh_seed() { return std::random_device{}(); }

// ---- TF32 ----------------------------------------------------------------------------------------
TEST(Tf32Rounding, EdgeCases) {
  using tcfem::arch::round_to_tf32;
  const float tie_up = 1.0f + 0x1p-11f;  // exactly between 1 and 1 + 2^-10
  EXPECT_EQ(round_to_tf32(tie_up), 1.0f + 0x1p-10f) << "ties go away from zero";
  EXPECT_EQ(round_to_tf32(-tie_up), -(1.0f + 0x1p-10f));
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f - 0x1p-23f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f + 0x1p-23f), 1.0f + 0x1p-10f);
  EXPECT_EQ(round_to_tf32(1.0f + 3 * 0x1p-11f), 1.0f + 0x1p-9f);  // odd tie: also away
  EXPECT_EQ(round_to_tf32(1.0f), 1.0f);
  EXPECT_EQ(round_to_tf32(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(round_to_tf32(-0.0f)));
  // Large exponents: the largest TF32 stays, FLT_MAX and the tie below 2^128 overflow.
  EXPECT_EQ(round_to_tf32(static_cast<float>(tf32_max)), static_cast<float>(tf32_max));
  EXPECT_EQ(round_to_tf32(FLT_MAX), INFINITY);
  EXPECT_EQ(round_to_tf32(-FLT_MAX), -INFINITY);
  EXPECT_EQ(round_to_tf32(std::ldexp(2.0f - 0x1p-11f, 127)), INFINITY);
  EXPECT_EQ(round_to_tf32(std::ldexp(2.0f - 0x1p-11f - 0x1p-23f, 127)), static_cast<float>(tf32_max));
  // Subnormals: TF32 ulp 2^-136 there.
  EXPECT_EQ(round_to_tf32(0x1p-149f), 0.0f);
  EXPECT_EQ(round_to_tf32(0x1p-137f), 0x1p-136f);  // tie: away
  EXPECT_EQ(round_to_tf32(FLT_MIN), FLT_MIN);
  // Inf and NaN pass through.
  EXPECT_EQ(round_to_tf32(INFINITY), INFINITY);
  EXPECT_EQ(round_to_tf32(-INFINITY), -INFINITY);
  EXPECT_TRUE(std::isnan(round_to_tf32(NAN)));
  EXPECT_EQ(float_bits(round_to_tf32(float_from_bits(0x7fc00000u))), 0x7fc00000u);
  EXPECT_EQ(float_bits(round_to_tf32(float_from_bits(0xffc01234u))), 0xffc00000u);  // payload truncated
  EXPECT_TRUE(std::isnan(round_to_tf32(float_from_bits(0x7fa00000u))));
}

TEST(Tf32Rounding, MatchesDefinitionOnRandomBitPatterns) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const float x : random_finite_floats(rng, 1 << 20)) {
    const double expected = reference_tf32(x);
    const float got = tcfem::arch::round_to_tf32(x);
    ASSERT_EQ(static_cast<double>(got), expected) << "x = " << x << " bits " << std::hex << float_bits(x);
    ASSERT_EQ(float_bits(got) & 0x1fffu, 0u);
  }
}

// ---- FP16 and BF16 -------------------------------------------------------------------------------
TEST(Fp16Rounding, EdgeCases) {
  EXPECT_EQ(fp16_round(65504.0f), 65504.0);
  EXPECT_EQ(fp16_round(65519.99f), 65504.0);
  EXPECT_EQ(fp16_round(65520.0f), INFINITY);  // tie to even overflows
  EXPECT_EQ(fp16_round(-1e6f), -INFINITY);
  EXPECT_EQ(fp16_round(1.0f + 0x1p-11f), 1.0);  // tie to even
  EXPECT_EQ(fp16_round(1.0f + 3 * 0x1p-11f), 1.0 + 0x1p-9);
  EXPECT_EQ(fp16_round(0x1p-24f), 0x1p-24);  // smallest subnormal
  EXPECT_EQ(fp16_round(0x1p-25f), 0.0);      // tie to even: zero
  EXPECT_EQ(fp16_round(0x1.8p-25f), 0x1p-24);
  EXPECT_EQ(fp16_round(0x1.8p-24f), 0x1p-23);    // tie between 1 and 2 subnormal ulps: even
  EXPECT_EQ(fp16_round(0x1p-14f), 0x1p-14);      // smallest normal
  EXPECT_EQ(fp16_round(0x1.ffcp-15f), 0x1p-14);  // rounds up from the subnormals into the normals
  EXPECT_EQ(tcfem::arch::float_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(tcfem::arch::float_to_fp16_bits(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(fp16_round(NAN)));
  EXPECT_EQ(fp16_round(INFINITY), INFINITY);
}

TEST(Fp16Rounding, EveryFp16ValueRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    const float x = tcfem::arch::fp16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(x)) {
      EXPECT_TRUE((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0);
      continue;
    }
    ASSERT_EQ(tcfem::arch::float_to_fp16_bits(x), h) << std::hex << h;
  }
}

TEST(Fp16Rounding, MatchesDefinitionOnRandomValues) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-28, 17);  // subnormals to overflow
  for (int n = 0; n < (1 << 20); ++n) {
    const float x = std::ldexp(mantissa(rng), exponent(rng));
    ASSERT_EQ(fp16_round(x), reference_fp16(x)) << "x = " << x;
  }
  // Exact ties: odd multiples of half an FP16 ulp.
  for (int n = 0; n < 4096; ++n) {
    const float x = std::ldexp(static_cast<float>(2 * (n + 1024) + 1), -12 + (n % 20) - 10);
    ASSERT_EQ(fp16_round(x), reference_fp16(x)) << "x = " << x;
  }
}

TEST(Bf16Rounding, EdgeCasesAndRandomValues) {
  EXPECT_EQ(bf16_round(1.0f + 0x1p-8f), 1.0);  // tie to even
  EXPECT_EQ(bf16_round(1.0f + 3 * 0x1p-8f), 1.0 + 0x1p-6);
  EXPECT_EQ(bf16_round(FLT_MAX), INFINITY);
  EXPECT_EQ(bf16_round(static_cast<float>(bf16_max)), bf16_max);
  EXPECT_EQ(tcfem::arch::float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_TRUE(std::isnan(bf16_round(NAN)));
  EXPECT_TRUE(std::isnan(bf16_round(float_from_bits(0x7f800001u))));  // stays NaN (quieted)
  EXPECT_EQ(bf16_round(-INFINITY), -INFINITY);
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const float x : random_finite_floats(rng, 1 << 20))
    ASSERT_EQ(bf16_round(x), reference_bf16(x)) << "x = " << x << " bits " << std::hex << float_bits(x);
}

// ---- split identities ----------------------------------------------------------------------------
// Relative reconstruction error max |x - (hi + lo / scale)| / |x| over random x with exponents in
// [min_exponent, max_exponent]; parts must be representable in the input format.
template <Precision p>
double max_split_error(std::mt19937_64& rng, int min_exponent, int max_exponent, double max_magnitude) {
  using Arith = Arithmetic<p>;
  using Format = typename Arith::InputFormat;
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(min_exponent, max_exponent);
  std::bernoulli_distribution negative(0.5);
  double worst = 0;
  for (int n = 0; n < (1 << 18); ++n) {
    float x = std::ldexp(mantissa(rng), exponent(rng));
    if (x > max_magnitude) continue;
    if (negative(rng)) x = -x;
    const SplitValue s = Arith::split(x);
    EXPECT_EQ(Format::round(s.hi), s.hi);
    EXPECT_EQ(Format::round(s.lo), s.lo);
    const double reconstructed = double(s.hi) + double(s.lo) / Arith::residual_scale;
    worst = std::max(worst, std::fabs(double(x) - reconstructed) / std::fabs(double(x)));
  }
  return worst;
}

TEST(SplitIdentity, Tf32x3ReconstructsToTwoToMinus22) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const double worst = max_split_error<Precision::tf32x3>(rng, -100, 100, FLT_MAX);
  EXPECT_LE(worst, 0x1p-22);
  EXPECT_GT(worst, 0x1p-26) << "the split should not be exact: lo is rounded too";
}

TEST(SplitIdentity, Fp16ecReconstructsToTwoToMinus22InTheNormalRange) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const double worst = max_split_error<Precision::fp16ec>(rng, -14, 15, 65504.0);
  EXPECT_LE(worst, 0x1p-22);
  EXPECT_GT(worst, 0x1p-26);
  // Without the 2^11 scaling the residual would fall into FP16's subnormals for small x.
  const float x = 0x1.234568p-10f;
  const SplitValue s = Arithmetic<Precision::fp16ec>::split(x);
  EXPECT_LE(std::fabs(double(x) - (double(s.hi) + double(s.lo) / 2048.0)), 0x1p-22 * std::fabs(x));
  const double unscaled_lo = fp16_round(x - s.hi);
  EXPECT_GT(std::fabs(double(x) - (double(s.hi) + unscaled_lo)), 0x1p-22 * std::fabs(x));
}

TEST(SplitIdentity, Bf16x3ReconstructsToTwoToMinus16) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const double worst = max_split_error<Precision::bf16x3>(rng, -100, 100, FLT_MAX);
  EXPECT_LE(worst, 0x1p-16);
  EXPECT_GT(worst, 0x1p-20);
}

TEST(SplitIdentity, ExactValuesHaveZeroResidual) {
  EXPECT_EQ(Arithmetic<Precision::tf32x3>::split(1.5f).lo, 0.0f);
  EXPECT_EQ(Arithmetic<Precision::fp16ec>::split(-0.375f).lo, 0.0f);
  EXPECT_EQ(Arithmetic<Precision::bf16x3>::split(3.0f).lo, 0.0f);
  const SplitValue s = Arithmetic<Precision::bf16x3>::split(1.0f + 0x1p-12f);
  EXPECT_EQ(s.hi, 1.0f);
  EXPECT_EQ(s.lo, 0x1p-12f);
}

// ---- policy dot products -------------------------------------------------------------------------
// Relative 2-norm error of a batch of dot products of random vectors (entries uniform in [-1, 1])
// against the exact dot products of the stored values.
template <Precision p>
double dot_batch_error(std::mt19937_64& rng, std::size_t n, int batch) {
  using Storage = typename Arithmetic<p>::Storage;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<Storage> a(n), b(n);
  long double error_squared = 0, exact_squared = 0;
  for (int j = 0; j < batch; ++j) {
    for (std::size_t i = 0; i < n; ++i)
      a[i] = static_cast<Storage>(uniform(rng)), b[i] = static_cast<Storage>(uniform(rng));
    long double exact = 0;
    for (std::size_t i = 0; i < n; ++i) exact += static_cast<long double>(a[i]) * b[i];
    const double got = static_cast<double>(policy_dot<p>(a.data(), b.data(), n));
    EXPECT_TRUE(std::isfinite(got));
    error_squared += (got - exact) * (got - exact);
    exact_squared += exact * exact;
  }
  return static_cast<double>(std::sqrt(error_squared / exact_squared));
}

const std::size_t dot_lengths[] = {1, 2, 3, 7, 16, 64, 100, 1000, 4096};

template <Precision p>
void expect_dot_accuracy(double lower, double upper) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const std::size_t n : dot_lengths) {
    const double error = dot_batch_error<p>(rng, n, 256);
    EXPECT_LE(error, upper) << to_string(p) << " n = " << n;
    EXPECT_GE(error, lower) << to_string(p) << " n = " << n;
  }
}

TEST(PolicyDot, Fp64) { expect_dot_accuracy<Precision::fp64>(0.0, 1e-14); }
TEST(PolicyDot, Fp32) { expect_dot_accuracy<Precision::fp32>(0.0, 1e-5); }
TEST(PolicyDot, Tf32x3) { expect_dot_accuracy<Precision::tf32x3>(0.0, 1e-5); }
TEST(PolicyDot, Fp16ec) { expect_dot_accuracy<Precision::fp16ec>(0.0, 1e-5); }
TEST(PolicyDot, Bf16x3) { expect_dot_accuracy<Precision::bf16x3>(0.0, 1e-5); }
// Plain 16-bit inputs: visibly worse than the corrected ones, still usable.
TEST(PolicyDot, Fp16) { expect_dot_accuracy<Precision::fp16>(1e-4, 1e-1); }
TEST(PolicyDot, Bf16) { expect_dot_accuracy<Precision::bf16>(1e-4, 1e-1); }

TEST(PolicyDot, CorrectionGainsAtLeastTenfold) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  EXPECT_LT(10 * dot_batch_error<Precision::fp16ec>(rng, 256, 256),
            dot_batch_error<Precision::fp16>(rng, 256, 256));
  EXPECT_LT(10 * dot_batch_error<Precision::bf16x3>(rng, 256, 256),
            dot_batch_error<Precision::bf16>(rng, 256, 256));
  EXPECT_LT(10 * dot_batch_error<Precision::tf32x3>(rng, 256, 256),
            dot_batch_error<Precision::fp16>(rng, 256, 256));
}

TEST(PolicyDot, RuntimeDispatchMatchesTemplates) {
  const std::vector<double> a = {0.1, -0.7, 0.33333, 1e-3, 0.9};
  const std::vector<double> b = {-0.25, 0.5, 0.123456789, -0.8, 0.7};
  const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
  EXPECT_EQ(policy_dot(Precision::fp64, a.data(), b.data(), a.size()),
            policy_dot<Precision::fp64>(a.data(), b.data(), a.size()));
  EXPECT_EQ(policy_dot(Precision::fp16ec, a.data(), b.data(), a.size()),
            policy_dot<Precision::fp16ec>(af.data(), bf.data(), af.size()));
  EXPECT_EQ(policy_dot(Precision::bf16, a.data(), b.data(), a.size()),
            policy_dot<Precision::bf16>(af.data(), bf.data(), af.size()));
  EXPECT_EQ(policy_dot(Precision::tf32x3, a.data(), b.data(), 0), 0.0);
}

}  // namespace
