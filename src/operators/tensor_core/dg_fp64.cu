// Instantiations of the self-part kernels of the tensor-core SIPG (dg) Laplacian in FP64: the sm_90
// atoms (m16n8k4 where it pads less, m16n8k8 otherwise; see fp64_sm90_shape) and the sm_80 atom
// m8n8k4.
#include <type_traits>

#include "operators/tensor_core/cg_entries.cuh"

namespace tcfem::operators::tensor_core {
namespace {
struct Fp64Sm90 {
  template <int n>
  using type = precision::Fp64Policy<
      std::conditional_t<fp64_sm90_shape(n).k == 4, arch::Sm90_M16N8K4_F64, arch::Sm90_M16N8K8_F64>>;
};
struct Fp64Sm80 {
  template <int n>
  using type = precision::Fp64Policy<arch::Sm80_M8N8K4_F64>;
};
}  // namespace

CgKernelEntry<double> dg_kernel_fp64(int dim, int degree, arch::Fp64Shape shape) {
  switch (shape) {
    case arch::Fp64Shape::m16n8k16: return cg_entry_for<Fp64Sm90, true>(dim, degree);
    case arch::Fp64Shape::m8n8k4: return cg_entry_for<Fp64Sm80, true>(dim, degree);
    case arch::Fp64Shape::simt: break;
  }
  return {};
}

}  // namespace tcfem::operators::tensor_core
