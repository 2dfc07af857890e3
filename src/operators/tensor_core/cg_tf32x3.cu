// Instantiations of the tensor-core cg kernels with float storage and 3xTF32 products (m16n8k8).
#include "operators/tensor_core/cg_entries.cuh"

namespace tcfem::operators::tensor_core {
namespace {
struct Tf32x3 {
  template <int n>
  using type = precision::Tf32x3Policy<>;
};
}  // namespace

CgKernelEntry<float> cg_kernel_tf32x3(int dim, int degree) { return cg_entry_for<Tf32x3>(dim, degree); }

}  // namespace tcfem::operators::tensor_core
