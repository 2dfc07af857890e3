#pragma once
// The smoother variants the device patch-smoother tests run, and their comparison measure
// (tests/device/test_device_patch_smoother.cu, test_device_dg_patch_smoother.cu).
#include <cmath>
#include <limits>
#include <vector>

#include "multigrid/multigrid_config.h"

namespace tcfem::patch_smoother_tests {

/// fused: with relaxation 1 the kernel writes x_I = A_II^{-1} (b_I - A_IB x_B); fused_relaxed:
/// relaxation 0.8 (the correction added to the old x_I)
enum class Case { fused, separate, global, additive, fused_relaxed };

inline const char* to_string(Case c) {
  switch (c) {
    case Case::fused: return "fused";
    case Case::separate: return "separate";
    case Case::global: return "global";
    case Case::fused_relaxed: return "fused (w 0.8)";
    default: return "additive";
  }
}

inline multigrid::SmootherSettings settings_of(Case c) {
  multigrid::SmootherSettings s;
  s.kind = c == Case::additive ? multigrid::SmootherKind::patch_additive : multigrid::SmootherKind::patch;
  s.patch_variant = c == Case::separate ? multigrid::PatchVariant::separate
                    : c == Case::global ? multigrid::PatchVariant::global
                                        : multigrid::PatchVariant::fused;
  if (c == Case::fused_relaxed) s.relaxation = 0.8;
  return s;
}

/// ||a - ref|| / ||ref|| in the 2-norm; infinity if a has a non-finite entry.
inline double rel_diff(const std::vector<double>& a, const std::vector<double>& ref) {
  double d = 0.0, s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    d += (a[i] - ref[i]) * (a[i] - ref[i]);
    s += ref[i] * ref[i];
  }
  return std::sqrt(d / s);
}

}  // namespace tcfem::patch_smoother_tests
