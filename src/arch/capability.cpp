#include "arch/capability.h"

namespace tcfem::arch {

Fp64Shape select_fp64_atom(int sm_major, int /*sm_minor*/) {
  if (sm_major == 9) return Fp64Shape::m16n8k16;
  if (sm_major == 8) return Fp64Shape::m8n8k4;
  return Fp64Shape::simt;
}

bool has_fp32_tensor_cores(int sm_major, int /*sm_minor*/) { return sm_major >= 8; }

std::string_view to_string(Fp64Shape shape) {
  switch (shape) {
    case Fp64Shape::simt:
      return "simt";
    case Fp64Shape::m8n8k4:
      return "m8n8k4";
    case Fp64Shape::m16n8k16:
      return "m16n8k16";
  }
  return "unknown";
}

}  // namespace tcfem::arch
