// Instantiations of the tensor-core cg kernels with float storage and BF16 products (m16n8k16):
// plain (one rounding) and split into three products (3xBF16).
#include "operators/tensor_core/cg_entries.cuh"

namespace tcfem::operators::tensor_core {
namespace {
struct Bf16 {
  template <int n>
  using type = precision::Bf16Policy<>;
};
struct Bf16x3 {
  template <int n>
  using type = precision::Bf16x3Policy<>;
};
}  // namespace

CgKernelEntry<float> cg_kernel_bf16(int dim, int degree, bool three_products) {
  return three_products ? cg_entry_for<Bf16x3>(dim, degree) : cg_entry_for<Bf16>(dim, degree);
}

}  // namespace tcfem::operators::tensor_core
