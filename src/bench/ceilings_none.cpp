// Builds without the CUDA backend: no device ceilings to measure.
#include "bench/ceilings.h"
#include "core/error.h"

namespace tcfem::bench {

Ceilings measure_ceilings(const CeilingOptions&) {
  throw InputError("--ceilings: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

}  // namespace tcfem::bench
