#pragma once
// Host reference of each policy's arithmetic: a dot product with the policy's rounding / splitting
// and accumulation (FP32 for every precision except fp64): the same roundings, splits, products and
// correction as the device tile product (policies.cuh), term by term (the device sums a tile's k
// terms per product before the next product, so the last bits may differ). For accuracy tests and
// CPU reference paths. Plain C++.
#include <cmath>
#include <cstddef>
#include <vector>

#include "precision/split_arithmetic.h"

namespace tcfem::precision {

/// sum_i a_i b_i computed as the policy computes it.
template <Precision precision>
typename Arithmetic<precision>::Accumulate policy_dot(const typename Arithmetic<precision>::Storage* a,
                                                      const typename Arithmetic<precision>::Storage* b,
                                                      std::size_t n) {
  using Arith = Arithmetic<precision>;
  using Accumulate = typename Arith::Accumulate;
  Accumulate sum = 0;
  if constexpr (Arith::split_kind == SplitKind::none) {
    // Products of rounded inputs are exact in the accumulator type: one rounding per term.
    for (std::size_t i = 0; i < n; ++i) sum = std::fma(Arith::round(a[i]), Arith::round(b[i]), sum);
    return sum;
  } else if constexpr (Arith::split_kind == SplitKind::three_products) {
    for (std::size_t i = 0; i < n; ++i) {
      const SplitValue x = Arith::split(a[i]);
      const SplitValue y = Arith::split(b[i]);
      sum = std::fma(x.lo, y.hi, sum);  // small terms first, as the device tile product
      sum = std::fma(x.hi, y.lo, sum);
      sum = std::fma(x.hi, y.hi, sum);
    }
    return sum;
  } else {
    Accumulate correction = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const SplitValue x = Arith::split(a[i]);
      const SplitValue y = Arith::split(b[i]);
      sum = std::fma(x.hi, y.hi, sum);
      correction = std::fma(x.lo, y.hi, correction);
      correction = std::fma(x.hi, y.lo, correction);
    }
    return std::fma(correction, Arith::correction_factor, sum);
  }
}

/// Run-time dispatch: inputs given in double are first stored in the policy's storage type.
inline double policy_dot(Precision precision, const double* a, const double* b, std::size_t n) {
  const auto run = [&]<Precision p>() -> double {
    using Storage = typename Arithmetic<p>::Storage;
    std::vector<Storage> a_stored(a, a + n), b_stored(b, b + n);
    return static_cast<double>(policy_dot<p>(a_stored.data(), b_stored.data(), n));
  };
  switch (precision) {
    case Precision::fp64:
      return run.template operator()<Precision::fp64>();
    case Precision::fp32:
      return run.template operator()<Precision::fp32>();
    case Precision::tf32x3:
      return run.template operator()<Precision::tf32x3>();
    case Precision::fp16:
      return run.template operator()<Precision::fp16>();
    case Precision::fp16ec:
      return run.template operator()<Precision::fp16ec>();
    case Precision::bf16:
      return run.template operator()<Precision::bf16>();
    case Precision::bf16x3:
      return run.template operator()<Precision::bf16x3>();
  }
  return NAN;
}

}  // namespace tcfem::precision
