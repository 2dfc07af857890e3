// The CUDA solve phase and dense setup of builds without the CUDA backend.
#include "core/error.h"
#include "direct/cuda_dense.h"
#include "direct/solve_phase.h"

namespace tcfem::direct {

std::unique_ptr<SolvePhase> make_cuda_solve_phase(const PrehandledSystem&, Precision) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

void cuda_spd_inverse(std::int64_t, double*, std::int64_t, const char*) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

void cuda_cholesky_factor_in_place(std::int64_t, double*, const char*) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend");
}
void cuda_cholesky_inverse_in_place(std::int64_t, double*, const char*) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend");
}
double cuda_spd_inverse_bytes(std::int64_t n) { return 8.0 * double(n) * double(n); }

}  // namespace tcfem::direct
