#pragma once
// The arithmetic precisions of tcfem's kernels, by name. Each one has a policy (split_arithmetic.h
// on the host and device, policies.cuh for the warp-level tile product).
//
//   fp64    FP64 inputs and accumulation (FP64 tensor cores or CUDA cores)
//   fp32    FP32 inputs and accumulation on CUDA cores
//   tf32x3  FP32 inputs split into TF32 hi + lo, three tensor-core products (lo*lo dropped)
//   fp16    FP32 inputs rounded to FP16, one tensor-core product, FP32 accumulation
//   fp16ec  FP16 with error correction (Cui et al., Algorithm 1): residual scaled by 2^11
//   bf16    FP32 inputs rounded to BF16, one product, FP32 accumulation
//   bf16x3  FP32 inputs split into BF16 hi + lo, three products (lo*lo dropped)
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace tcfem::precision {

enum class Precision { fp64, fp32, tf32x3, fp16, fp16ec, bf16, bf16x3 };

inline constexpr std::array<Precision, 7> all_precisions = {
    Precision::fp64,   Precision::fp32, Precision::tf32x3, Precision::fp16,
    Precision::fp16ec, Precision::bf16, Precision::bf16x3};

/// "fp64", "fp32", "tf32x3", "fp16", "fp16ec", "bf16", "bf16x3".
std::string_view to_string(Precision precision);

/// The precision named `name` (exact, lower case), or nothing.
std::optional<Precision> parse_precision(std::string_view name);

/// The precision named `name`; throws tcfem::InputError naming the allowed values otherwise.
Precision from_string(std::string_view name);

/// "fp64, fp32, tf32x3, fp16, fp16ec, bf16, bf16x3" (for help texts and error messages).
std::string allowed_precision_names();

/// Whether the inputs are stored as double (fp64) rather than float.
constexpr bool stores_double(Precision precision) { return precision == Precision::fp64; }

}  // namespace tcfem::precision
