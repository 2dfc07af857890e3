#pragma once
// Instantiation helpers of the tensor-core kernels: the registry entry of one kernel and the
// table that maps a run-time degree (1..8) to the compiled kernel. Included by tensor_core_cg_*.cu
// and tensor_core_dg_*.cu, one file per precision family and discretization, so that the
// instantiations compile in parallel.
#include <utility>

#include "operators/tensor_core/laplace.h"
#include "operators/tensor_core/laplace_kernels.cuh"

namespace tcfem::operators::tensor_core {

template <class Config>
void launch_cg_kernel(int grid, const CgKernelParams<typename Config::Storage>& params,
                      const typename Config::Storage* src, typename Config::Storage* dst) {
  cg_laplace_kernel<Config><<<grid, Config::layout.threads(), Config::smem_bytes>>>(params, src, dst);
}

template <class Config>
CgKernelEntry<typename Config::Storage> cg_entry() {
  CgKernelEntry<typename Config::Storage> entry;
  entry.layout = Config::layout;
  entry.smem_bytes = Config::smem_bytes;
  entry.mma_per_product = Config::Policy::mma_per_product;
  entry.kernel = reinterpret_cast<const void*>(&cg_laplace_kernel<Config>);
  entry.launch = &launch_cg_kernel<Config>;
  return entry;
}

/// PolicyOf::type<n>: the policy of the kernel with n nodes per direction.
template <int dim, class PolicyOf, bool dg, int... K>
auto cg_entry_for_degree(int degree, std::integer_sequence<int, K...>) {
  using Storage = typename PolicyOf::template type<2>::Storage;
  CgKernelEntry<Storage> entry{};
  ((degree == K + 1 ? (void)(entry = cg_entry<CgConfig<dim, K + 2, typename PolicyOf::template type<K + 2>, dg>>())
                    : (void)0),
   ...);
  return entry;
}

/// The kernel of (dim, degree) for the policy family PolicyOf (empty entry outside dim 2-3, degree
/// 1-8); dg: the self part of the SIPG operator (CgConfig).
template <class PolicyOf, bool dg = false>
auto cg_entry_for(int dim, int degree) {
  using seq = std::make_integer_sequence<int, 8>;
  if (dim == 2) return cg_entry_for_degree<2, PolicyOf, dg>(degree, seq{});
  if (dim == 3) return cg_entry_for_degree<3, PolicyOf, dg>(degree, seq{});
  return decltype(cg_entry_for_degree<2, PolicyOf, dg>(degree, seq{})){};
}

}  // namespace tcfem::operators::tensor_core
