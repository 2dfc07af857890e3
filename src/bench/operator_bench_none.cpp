// Builds without the CUDA backend: the device measurement is an input error.
#include "bench/operator_bench.h"
#include "core/error.h"

namespace tcfem::bench {

BenchResult run_cuda_bench(const BenchCase&) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

}  // namespace tcfem::bench
