// Instantiations of the tensor-core cg kernels with float storage and FP16 products (m16n8k16):
// plain (one rounding) and with error correction (Cui et al., Alg. 1).
#include "operators/tensor_core/cg_entries.cuh"

namespace tcfem::operators::tensor_core {
namespace {
struct Fp16 {
  template <int n>
  using type = precision::Fp16Policy<>;
};
struct Fp16ec {
  template <int n>
  using type = precision::Fp16ecPolicy<>;
};
}  // namespace

CgKernelEntry<float> cg_kernel_fp16(int dim, int degree, bool error_correction) {
  return error_correction ? cg_entry_for<Fp16ec>(dim, degree) : cg_entry_for<Fp16>(dim, degree);
}

}  // namespace tcfem::operators::tensor_core
