#pragma once
// The tensor-core kernel family behind the registry (operators/device/variants.h): what the registry knows
// about each compiled kernel, the lookup of kernels by run-time (dim, degree, precision, shape),
// and a builder that takes the FP64 instruction shape explicitly (tests run the sm_80 shape on an
// sm_90 device with it). Plain C++: the kernels live in operators/tensor_core/laplace_kernels.cuh and are
// instantiated in tensor_core_cg_*.cu.
#include <cstdint>
#include <memory>
#include <string>

#include "arch/capability.h"
#include "operators/device/device_operator.h"
#include "operators/tensor_core/dg_faces.h"
#include "operators/tensor_core/layouts.h"
#include "precision/precision.h"

namespace tcfem::operators::tensor_core {

/// Run-time data of a cg kernel launch (passed by value to the kernel).
template <typename Storage>
struct CgKernelParams {
  const double* matrices = nullptr;  ///< [1 + dim][n][n]: M, then w_d L for d = 0 .. dim-1 (row-major)
  int n_cells[3] = {1, 1, 1};
  std::int64_t total_cells = 0;
  std::int64_t n_batches = 0;
  std::int64_t lattice[3] = {1, 1, 1};  ///< cg nodes per direction
  Storage scale = 1;                    ///< sigma = G prod_d h_d
};

/// One compiled cg kernel: its layout, resources and launcher. `launch` is null where the build has
/// no kernel for the request.
template <typename Storage>
struct CgKernelEntry {
  CgLayout layout{};
  int smem_bytes = 0;
  int mma_per_product = 1;  ///< tensor-core products per tile product (3 for the split precisions)
  const void* kernel = nullptr;
  void (*launch)(int grid, const CgKernelParams<Storage>& params, const Storage* src, Storage* dst) = nullptr;
};

/// FP64 kernels: shape m16n8k16 (sm_90: the m16n8k4 / m16n8k8 atoms) or m8n8k4 (sm_80 DMMA).
CgKernelEntry<double> cg_kernel_fp64(int dim, int degree, arch::Fp64Shape shape);
/// Float-storage kernels: tf32x3, fp16, fp16ec, bf16, bf16x3.
CgKernelEntry<float> cg_kernel_tf32x3(int dim, int degree);
CgKernelEntry<float> cg_kernel_fp16(int dim, int degree, bool error_correction);
CgKernelEntry<float> cg_kernel_bf16(int dim, int degree, bool three_products);

/// The self part of the SIPG (dg) Laplacian (the same kernel body, CgConfig<.., dg = true>):
/// matrices M, S_d / scale; dst += scale * sum_d (x) M (x) S_d u on the cell-wise dg numbering.
CgKernelEntry<double> dg_kernel_fp64(int dim, int degree, arch::Fp64Shape shape);
CgKernelEntry<float> dg_kernel_tf32x3(int dim, int degree);
CgKernelEntry<float> dg_kernel_fp16(int dim, int degree, bool error_correction);
CgKernelEntry<float> dg_kernel_bf16(int dim, int degree, bool three_products);

/// The face-term pass of the SIPG Laplacian (operators/tensor_core/dg_faces.h) of (dim, degree): dst =
/// face terms; `launch` null outside dim 2-3, degree 1-8. n_blocks: cells / `cells` rounded up.
template <typename Number>
struct DgFaceEntry {
  int cells = 1;       ///< cells per block
  int smem_bytes = 0;  ///< dynamic shared memory per block
  const void* kernel = nullptr;
  void (*launch)(int grid, std::int64_t n_blocks, const DgFaceParams<Number>& params, const Number* src,
                 Number* dst) = nullptr;
};
DgFaceEntry<double> dg_face_entry_fp64(int dim, int degree);
DgFaceEntry<float> dg_face_entry_fp32(int dim, int degree);

/// The operator of `key` with the FP64 shape given (ignored for the float precisions); nullptr where
/// the family has no kernel for the key.
template <int dim>
std::unique_ptr<DeviceOperator> make_tensor_core_operator_for_shape(const mesh::BoxMesh<dim>& mesh,
                                                                    const fe::DofLayout<dim>& dofs,
                                                                    const DeviceKernelKey& key, arch::Fp64Shape shape);

/// Any 2D or 3D geometry with stored geometry (partial assembly), cg, fp64, BP3 and BP5, k = 1..8
/// (operators/tensor_core/geometry_fp64.cu; sm_90 FP64 shapes).
bool geometry_supported(const DeviceKernelKey& key);
/// The operator of a geometry_supported key; nullptr otherwise.
template <int dim>
std::unique_ptr<DeviceOperator> make_geometry_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                       const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                       const Coefficient& coefficient,
                                                       const jit::DeviceSource& coefficient_source);

/// Any 2D or 3D geometry with the geometry recomputed from the node field (matrix-free), cg, fp64,
/// BP3 and BP5, k = 1..8 (operators/tensor_core/geometry_mf_fp64.cu; sm_90 FP64 shapes; 3D BP3
/// at k = 8 on cells with a displacement does not fit into a block and is refused).
bool node_geometry_supported(const DeviceKernelKey& key);
/// The operator of a node_geometry_supported key; nullptr otherwise.
template <int dim>
std::unique_ptr<DeviceOperator> make_node_geometry_operator(const mesh::BoxMesh<dim>& mesh,
                                                            const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                            const DeviceTuning& tuning, const Coefficient& coefficient,
                                                            const jit::DeviceSource& coefficient_source);

}  // namespace tcfem::operators::tensor_core
