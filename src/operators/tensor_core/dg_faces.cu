// The face-term pass of the tensor-core SIPG (dg) Laplacian (operators/tensor_core/dg_faces.h) on CUDA cores,
// blocks of dg_face_threads threads, grid-stride loops, DgFaceShape::cells() consecutive cells per
// block, P and Q in shared memory, neighbour lines read from global memory. Instantiated for dim
// 2-3, degree 1-8, fp64 and fp32 storage.
#include <utility>

#include "operators/tensor_core/dg_faces.h"
#include "operators/tensor_core/laplace.h"

namespace tcfem::operators::tensor_core {
namespace {

template <int dim, int n, typename Number>
__global__ void __launch_bounds__(dg_face_threads)
    dg_face_kernel(const DgFaceParams<Number> prm, std::int64_t n_blocks, const Number* __restrict__ src,
                   Number* __restrict__ dst) {
  constexpr DgFaceShape F{dim, n};
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Number* P = reinterpret_cast<Number*>(smem_raw);
  Number* Q = P + F.cells() * F.plane_words();
  Number* tables = Q + F.cells() * F.plane_words();
  dg_face_tables<dim, n>(prm, static_cast<int>(threadIdx.x), dg_face_threads, tables);
  __syncthreads();
  for (std::int64_t block = blockIdx.x; block < n_blocks; block += gridDim.x) {
    dg_face_block<dim, n>(prm, tables, block * F.cells(), static_cast<int>(threadIdx.x), dg_face_threads, src, dst, P,
                          Q, [] { __syncthreads(); });
    __syncthreads();  // P and Q are reused by the next block of cells
  }
}

template <int dim, int n, typename Number>
void launch_dg_face(int grid, std::int64_t n_blocks, const DgFaceParams<Number>& prm, const Number* src, Number* dst) {
  constexpr DgFaceShape F{dim, n};
  dg_face_kernel<dim, n, Number><<<grid, dg_face_threads, F.smem_words() * sizeof(Number)>>>(prm, n_blocks, src, dst);
}

template <int dim, int n, typename Number>
DgFaceEntry<Number> face_entry_of() {
  constexpr DgFaceShape F{dim, n};
  return {F.cells(), F.smem_words() * int(sizeof(Number)),
          reinterpret_cast<const void*>(&dg_face_kernel<dim, n, Number>), &launch_dg_face<dim, n, Number>};
}

template <int dim, typename Number, int... K>
DgFaceEntry<Number> face_entry_for_degree(int degree, std::integer_sequence<int, K...>) {
  DgFaceEntry<Number> entry{};
  ((degree == K + 1 ? (void)(entry = face_entry_of<dim, K + 2, Number>()) : (void)0), ...);
  return entry;
}

template <typename Number>
DgFaceEntry<Number> face_entry(int dim, int degree) {
  using seq = std::make_integer_sequence<int, 8>;
  if (dim == 2) return face_entry_for_degree<2, Number>(degree, seq{});
  if (dim == 3) return face_entry_for_degree<3, Number>(degree, seq{});
  return {};
}

}  // namespace

DgFaceEntry<double> dg_face_entry_fp64(int dim, int degree) {
  return face_entry<double>(dim, degree);
}
DgFaceEntry<float> dg_face_entry_fp32(int dim, int degree) {
  return face_entry<float>(dim, degree);
}

}  // namespace tcfem::operators::tensor_core
