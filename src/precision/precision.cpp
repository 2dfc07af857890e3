#include "precision/precision.h"

#include "core/error.h"

namespace tcfem::precision {

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::fp64:
      return "fp64";
    case Precision::fp32:
      return "fp32";
    case Precision::tf32x3:
      return "tf32x3";
    case Precision::fp16:
      return "fp16";
    case Precision::fp16ec:
      return "fp16ec";
    case Precision::bf16:
      return "bf16";
    case Precision::bf16x3:
      return "bf16x3";
  }
  return "unknown";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (const Precision precision : all_precisions)
    if (to_string(precision) == name) return precision;
  return std::nullopt;
}

std::string allowed_precision_names() {
  std::string names;
  for (const Precision precision : all_precisions) {
    if (!names.empty()) names += ", ";
    names += to_string(precision);
  }
  return names;
}

Precision from_string(std::string_view name) {
  if (const auto precision = parse_precision(name)) return *precision;
  throw InputError("unknown precision '" + std::string(name) + "' (allowed: " + allowed_precision_names() +
                   ")");
}

}  // namespace tcfem::precision
