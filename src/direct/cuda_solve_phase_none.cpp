// The CUDA solve phase of builds without the CUDA backend.
#include "core/error.h"
#include "direct/solve_phase.h"

namespace tcfem::direct {

std::unique_ptr<SolvePhase> make_cuda_solve_phase(const PrehandledSystem&, Precision) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

}  // namespace tcfem::direct
