// Instantiations of the self-part kernels of the tensor-core SIPG (dg) Laplacian with float storage
// and FP16 products (m16n8k16): plain (one rounding) and with error correction.
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

CgKernelEntry<float> dg_kernel_fp16(int dim, int degree, bool error_correction) {
  return error_correction ? cg_entry_for<Fp16ec, true>(dim, degree) : cg_entry_for<Fp16, true>(dim, degree);
}

}  // namespace tcfem::operators::tensor_core
