// The tensor-core kernel family (registered in operators/device/registry.cu): the Cartesian cg and SIPG (dg)
// Laplacians, dim 2 and 3, degree 1..8, in fp64 (sm_90 m16n8k4/k8 atoms, or sm_80 m8n8k4, chosen
// at run time with arch::select_fp64_atom) and with float storage in tf32x3, fp16, fp16ec, bf16 and
// bf16x3. Run-time keys map to compiled kernels through the tables of tensor_core_{cg,dg}_*.cu.
// dg: a face-term pass on CUDA cores (dst = face terms, operators/tensor_core/dg_faces.h) and the tensor-core
// kernel of the self part (dst += ...).
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "core/device.h"
#include "core/device_buffer.h"
#include "fe/lagrange.h"
#include "operators/device/variants.h"
#include "operators/operator_tables.h"
#include "operators/tensor_core/laplace.h"
#include "operators/tensor_core/laplace_kernels.cuh"

namespace tcfem::operators {
namespace tensor_core {
namespace {

using precision::Precision;

bool precision_supported(Precision p) {
  return p == Precision::fp64 || p == Precision::tf32x3 || p == Precision::fp16 || p == Precision::fp16ec ||
         p == Precision::bf16 || p == Precision::bf16x3;
}

/// Work of one batch of C cells as the kernel executes it (padding included).
struct BatchWork {
  double flops = 0.0;         ///< tensor-core flops (every product of the split precisions)
  double shared_bytes = 0.0;  ///< shared-memory traffic counted per warp-wide access (32 lanes x word)
};

BatchWork batch_work(const CgLayout& L, int mma_per_product) {
  BatchWork w;
  const double word = L.atom.word_bytes, warp_access = warp_lanes * word;
  const double mma_flops = 2.0 * L.atom.m * atom_n * L.atom.k * mma_per_product;
  for (int p = 0; p < L.dim; ++p) {
    w.flops += double(L.tiles()) * mma_blocks(L, p) * mma_flops;
    // shared-memory instructions per tile: A elements whose columns are not all padding, C elements
    // likewise (the kernel issues no access for those)
    const PhaseKind kind = phase_kind(L.dim, p);
    int accesses = 0;
    for (int kc = 0; kc < k_chunks(L, p); ++kc)
      for (int e = 0; e < a_elements_per_lane(L.atom); ++e)
        accesses += kc * L.atom.k + a_element_jbase(L.atom, e) < k_total(kind, L.n) ? 1 : 0;
    for (int nt = 0; nt < n_tiles(L, p); ++nt)
      for (int e = 0; e < c_elements_per_lane(L.atom); ++e)
        accesses += nt * atom_n + c_element_ibase(e) < n_total(kind, L.n) ? 1 : 0;
    w.shared_bytes += double(L.tiles()) * accesses * warp_access;
  }
  // gather stores and scatter loads: n accesses per warp and plane iteration
  const double node_accesses = std::ceil(double(L.plane_items()) / warp_lanes) * L.n;
  w.shared_bytes += 2.0 * node_accesses * warp_access;
  return w;
}

/// The launch of a tensor-core cell kernel over `total_cells` cells: checks the 32-bit cell numbering
/// and the shared memory, opts the kernel in to its shared memory, and returns the grid (one wave of
/// resident blocks, at most one block per batch) and the number of batches.
template <typename Storage>
std::pair<int, std::int64_t> prepare_cell_kernel(const CgKernelEntry<Storage>& entry, std::int64_t total_cells,
                                                 const DeviceInfo& info) {
  if (total_cells >= (std::int64_t(1) << 31))
    throw InputError("--variant tensor-core: the kernels number cells in 32 bits; the mesh has " +
                     std::to_string(total_cells) + " cells");
  const CgLayout& L = entry.layout;
  const std::int64_t n_batches = (total_cells + L.cells - 1) / L.cells;
  if (static_cast<std::size_t>(entry.smem_bytes) > info.shared_memory_per_block_optin)
    throw InputError("--degree: the tensor-core kernel needs " + std::to_string(entry.smem_bytes) +
                     " bytes of shared memory per block, the device offers " +
                     std::to_string(info.shared_memory_per_block_optin));
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(entry.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, entry.smem_bytes));
  int blocks_per_sm = 0;
  TCFEM_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, entry.kernel, L.threads(), entry.smem_bytes));
  const int grid = static_cast<int>(
      std::min<std::int64_t>(n_batches, std::int64_t(std::max(1, blocks_per_sm)) * info.sm_count));
  return {std::max(grid, 1), n_batches};
}

/// What the cg and dg operators of the family share: the key, the cell kernel and its parameters,
/// the launch grid, the checks of the mesh and DoF layout, and the work models.
template <int dim, typename Storage>
class TensorCoreCellOperator : public DeviceOperatorBase {
 public:
  TensorCoreCellOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                         const CgKernelEntry<Storage>& entry, fe::Disc disc)
      : DeviceOperatorBase(key, dofs.n_local()), entry_(entry), info_(require_device("--variant tensor-core")) {
    const auto& part = mesh.partition();
    for (int d = 0; d < dim; ++d)
      if (part.owned.begin[d] != 0 || part.owned.end[d] != part.global_cells[d])
        throw InputError("--variant tensor-core: the kernels support a single process owning the whole mesh");
    if (dofs.disc() != disc || dofs.degree() != key.degree)
      throw InputError("--variant tensor-core: the DoF layout does not match the kernel key");
  }
  std::size_t value_size() const override { return sizeof(Storage); }
  std::size_t device_bytes() const override { return matrices_.size() * sizeof(double); }

 protected:
  CgKernelEntry<Storage> entry_;
  DeviceInfo info_;
  DeviceBuffer<double> matrices_;
  CgKernelParams<Storage> params_;
  int grid_ = 1;
};

template <int dim, typename Storage>
class TensorCoreCgOperator final : public TensorCoreCellOperator<dim, Storage> {
  using Base = TensorCoreCellOperator<dim, Storage>;
  using Base::entry_, Base::info_, Base::matrices_, Base::params_, Base::n_local_, Base::grid_, Base::flops_,
      Base::dram_, Base::shared_;

 public:
  TensorCoreCgOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                       const CgKernelEntry<Storage>& entry)
      : Base(mesh, dofs, key, entry, fe::Disc::cg) {
    const DeviceInfo& info = info_;
    const int k = key.degree, n = k + 1;
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    const auto mass = fe::exact_mass_matrix(basis);
    const auto stiffness = fe::exact_stiffness_matrix(basis);
    const auto h = mesh.cell_size();
    double g_max = 0.0, h_prod = 1.0;
    for (int d = 0; d < dim; ++d) {
      g_max = std::max(g_max, 1.0 / (h[d] * h[d]));
      h_prod *= h[d];
    }
    std::vector<double> matrices(mass.data);
    for (int d = 0; d < dim; ++d) {
      const double w = 1.0 / (h[d] * h[d]) / g_max;
      for (int i = 0; i < n * n; ++i) matrices.push_back(w * stiffness.data[i]);
    }
    matrices_ = DeviceBuffer<double>(matrices);
    params_.matrices = matrices_.data();
    params_.scale = static_cast<Storage>(h_prod * g_max);
    params_.total_cells = 1;
    for (int d = 0; d < dim; ++d) {
      params_.n_cells[d] = mesh.n_cells()[d];
      params_.lattice[d] = std::int64_t(mesh.n_cells()[d]) * k + 1;
      params_.total_cells *= mesh.n_cells()[d];
    }
    const CgLayout& L = entry_.layout;
    std::tie(grid_, params_.n_batches) = prepare_cell_kernel(entry_, params_.total_cells, info);

    const BatchWork w = batch_work(L, entry_.mma_per_product);
    const double batches = double(params_.n_batches);
    flops_ = w.flops * batches;
    shared_ = w.shared_bytes * batches;
    dram_ = 2.0 * double(n_local_) * sizeof(Storage) + double(matrices.size() * sizeof(double));
  }

  void vmult(void* dst_raw, const void* src_raw) const override {
    auto* dst = static_cast<Storage*>(dst_raw);
    const auto* src = static_cast<const Storage*>(src_raw);
    TCFEM_CUDA_CHECK(cudaMemsetAsync(dst, 0, n_local_ * sizeof(Storage)));
    entry_.launch(grid_, params_, src, dst);
    TCFEM_CUDA_CHECK_LAUNCH();
    const std::int64_t lz = dim == 3 ? params_.lattice[2] : 1;
    const std::int64_t boundary = std::int64_t(n_local_) - (params_.lattice[0] - 2) * (params_.lattice[1] - 2) *
                                                                (dim == 3 ? (lz - 2) : 1);
    const int threads = 256;
    const int blocks = static_cast<int>(std::clamp<std::int64_t>((boundary + threads - 1) / threads, 1, 4096));
    cg_boundary_copy_kernel<dim, Storage>
        <<<blocks, threads>>>(params_.lattice[0], params_.lattice[1], lz, src, dst);
    TCFEM_CUDA_CHECK_LAUNCH();
  }

};

/// The Cartesian SIPG Laplacian: the face-term pass, then the tensor-core self part.
template <int dim, typename Storage>
class TensorCoreDgOperator final : public TensorCoreCellOperator<dim, Storage> {
  using Base = TensorCoreCellOperator<dim, Storage>;
  using Base::entry_, Base::info_, Base::matrices_, Base::params_, Base::n_local_, Base::grid_, Base::flops_,
      Base::dram_, Base::shared_;

 public:
  TensorCoreDgOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                       const CgKernelEntry<Storage>& entry, const DgFaceEntry<Storage>& faces)
      : Base(mesh, dofs, key, entry, fe::Disc::dg), faces_(faces) {
    const DeviceInfo& info = info_;
    const int k = key.degree, n = k + 1;
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    const auto mass = fe::exact_mass_matrix(basis);
    const auto h = mesh.cell_size();
    // S_d = s_d * interior self block, s_d = prod_{e != d} h_e; the kernel's B holds S_d / sigma
    // (entries O(1) for the 16-bit formats) and scales the result by sigma
    std::vector<double> self[3];
    double sigma = 0.0;
    for (int d = 0; d < dim; ++d) {
      double s = 1.0;
      for (int e = 0; e < dim; ++e)
        if (e != d) s *= h[e];
      const auto blocks = sipg_line_blocks(basis, h[d]);
      self[d] = blocks.self[0];
      for (double& v : self[d]) {
        v *= s;
        sigma = std::max(sigma, std::abs(v));
      }
      const double gamma = 2.0 * k * (k + 1) / h[d];  // as in sipg_line_blocks
      face_params_.a[d] = static_cast<Storage>(s * gamma);
      face_params_.b[d] = static_cast<Storage>(s * 0.5 / h[d]);
    }
    std::vector<double> matrices(mass.data);
    for (int d = 0; d < dim; ++d)
      for (int i = 0; i < n * n; ++i) matrices.push_back(self[d][i] / sigma);
    matrices_ = DeviceBuffer<double>(matrices);
    params_.matrices = matrices_.data();
    params_.scale = static_cast<Storage>(sigma);
    for (int i = 0; i < n * n; ++i) face_params_.mass[i] = static_cast<Storage>(mass.data[i]);
    for (int i = 0; i < n; ++i) {
      face_params_.d0[i] = static_cast<Storage>(basis.derivative(i, 0.0));
      face_params_.d1[i] = static_cast<Storage>(basis.derivative(i, 1.0));
    }
    params_.total_cells = 1;
    for (int d = 0; d < dim; ++d) {
      params_.n_cells[d] = mesh.n_cells()[d];
      face_params_.n_cells[d] = mesh.n_cells()[d];
      params_.total_cells *= mesh.n_cells()[d];
    }
    face_params_.total_cells = params_.total_cells;
    const CgLayout& L = entry_.layout;
    std::tie(grid_, params_.n_batches) = prepare_cell_kernel(entry_, params_.total_cells, info);
    face_blocks_ = (params_.total_cells + faces_.cells - 1) / faces_.cells;
    if (static_cast<std::size_t>(faces_.smem_bytes) > info.shared_memory_per_block_optin)
      throw InputError("--degree: the face-term pass needs " + std::to_string(faces_.smem_bytes) +
                       " bytes of shared memory per block, the device offers " +
                       std::to_string(info.shared_memory_per_block_optin));
    TCFEM_CUDA_CHECK(
        cudaFuncSetAttribute(faces_.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, faces_.smem_bytes));
    int face_per_sm = 0;
    TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&face_per_sm, faces_.kernel, dg_face_threads,
                                                                   faces_.smem_bytes));
    face_grid_ = static_cast<int>(
        std::max<std::int64_t>(1, std::min<std::int64_t>(face_blocks_, std::int64_t(std::max(1, face_per_sm)) * info.sm_count)));

    const BatchWork w = batch_work(L, entry_.mma_per_product);
    const double batches = double(params_.n_batches), cells = double(params_.total_cells);
    const double fp = dim == 3 ? n * n : n, word = sizeof(Storage);
    flops_ = w.flops * batches + dg_face_flops_per_cell(dim, n) * cells;
    // face pass: P written, the mass steps read n words per output and write one, the result reads
    // about 2 dim words per DoF
    const double face_words = 4 * dim * fp * (1 + (dim - 1) * (n + 1)) + 2.0 * dim * fp * n;
    shared_ = w.shared_bytes * batches + face_words * word * cells;
    // src read by both passes, dst written by the face pass, read and written by the self part
    dram_ = 5.0 * double(n_local_) * word + double(matrices.size() * sizeof(double));
  }

  void vmult(void* dst_raw, const void* src_raw) const override {
    auto* dst = static_cast<Storage*>(dst_raw);
    const auto* src = static_cast<const Storage*>(src_raw);
    faces_.launch(face_grid_, face_blocks_, face_params_, src, dst);
    TCFEM_CUDA_CHECK_LAUNCH();
    entry_.launch(grid_, params_, src, dst);
    TCFEM_CUDA_CHECK_LAUNCH();
  }

 private:
  DgFaceEntry<Storage> faces_;
  DgFaceParams<Storage> face_params_;
  int face_grid_ = 1;
  std::int64_t face_blocks_ = 1;
};

CgKernelEntry<float> float_dg_entry(int dim, int degree, Precision p) {
  switch (p) {
    case Precision::tf32x3: return dg_kernel_tf32x3(dim, degree);
    case Precision::fp16: return dg_kernel_fp16(dim, degree, false);
    case Precision::fp16ec: return dg_kernel_fp16(dim, degree, true);
    case Precision::bf16: return dg_kernel_bf16(dim, degree, false);
    case Precision::bf16x3: return dg_kernel_bf16(dim, degree, true);
    default: return {};
  }
}

CgKernelEntry<float> float_entry(int dim, int degree, Precision p) {
  switch (p) {
    case Precision::tf32x3: return cg_kernel_tf32x3(dim, degree);
    case Precision::fp16: return cg_kernel_fp16(dim, degree, false);
    case Precision::fp16ec: return cg_kernel_fp16(dim, degree, true);
    case Precision::bf16: return cg_kernel_bf16(dim, degree, false);
    case Precision::bf16x3: return cg_kernel_bf16(dim, degree, true);
    default: return {};
  }
}

}  // namespace

template <int dim>
std::unique_ptr<DeviceOperator> make_tensor_core_operator_for_shape(const mesh::BoxMesh<dim>& mesh,
                                                                    const fe::DofLayout<dim>& dofs,
                                                                    const DeviceKernelKey& key, arch::Fp64Shape shape) {
  if (!tensor_core_supports(key) || key.dim != dim || mesh.geometry() != mesh::GeometryKind::cartesian) return nullptr;
  if (key.disc == fe::Disc::dg) {
    if (key.precision == Precision::fp64) {
      const auto entry = dg_kernel_fp64(dim, key.degree, shape);
      const auto faces = dg_face_entry_fp64(dim, key.degree);
      if (!entry.launch || !faces.launch) return nullptr;
      return std::make_unique<TensorCoreDgOperator<dim, double>>(mesh, dofs, key, entry, faces);
    }
    const auto entry = float_dg_entry(dim, key.degree, key.precision);
    const auto faces = dg_face_entry_fp32(dim, key.degree);
    if (!entry.launch || !faces.launch) return nullptr;
    return std::make_unique<TensorCoreDgOperator<dim, float>>(mesh, dofs, key, entry, faces);
  }
  if (key.precision == Precision::fp64) {
    const auto entry = cg_kernel_fp64(dim, key.degree, shape);
    if (!entry.launch) return nullptr;
    return std::make_unique<TensorCoreCgOperator<dim, double>>(mesh, dofs, key, entry);
  }
  const auto entry = float_entry(dim, key.degree, key.precision);
  if (!entry.launch) return nullptr;
  return std::make_unique<TensorCoreCgOperator<dim, float>>(mesh, dofs, key, entry);
}

template std::unique_ptr<DeviceOperator> make_tensor_core_operator_for_shape<2>(const mesh::BoxMesh<2>&,
                                                                                const fe::DofLayout<2>&,
                                                                                const DeviceKernelKey&, arch::Fp64Shape);
template std::unique_ptr<DeviceOperator> make_tensor_core_operator_for_shape<3>(const mesh::BoxMesh<3>&,
                                                                                const fe::DofLayout<3>&,
                                                                                const DeviceKernelKey&, arch::Fp64Shape);

}  // namespace tensor_core

bool tensor_core_supports(const DeviceKernelKey& key) {
  if (key.variant == Variant::tensor_core &&
      (tensor_core::geometry_supported(key) || tensor_core::node_geometry_supported(key)))
    return true;
  return key.variant == Variant::tensor_core && key.geometry_form != GeometryForm::mf && (key.dim == 2 || key.dim == 3) &&
         key.degree >= 1 &&
         key.degree <= 8 && (key.disc == fe::Disc::cg || key.disc == fe::Disc::dg) && key.cartesian && key.form == Form::laplace &&
         tensor_core::precision_supported(key.precision);
}

std::string describe_tensor_core() {
  return "tensor-core: dim 2-3, degree 1-8, cg/dg, cartesian, laplace, fp64/tf32x3/fp16/fp16ec/bf16/bf16x3 "
         "(fp64: m16n8k4/k8 on sm_90, m8n8k4 on sm_80); cg any 2D/3D map, mesh or coefficient with stored geometry "
         "(pa) or from the node field (mf): bp3/bp5, fp64 (sm_90)";
}

template <int dim>
std::unique_ptr<DeviceOperator> make_tensor_core_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                          const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                          const Coefficient& coefficient,
                                                          const jit::DeviceSource& coefficient_source) {
  if (!tensor_core_supports(key)) return nullptr;
  const DeviceInfo info = require_device("--variant tensor-core");
  const arch::Fp64Shape shape = arch::select_fp64_atom(info.sm_major, info.sm_minor);
  if (key.precision == precision::Precision::fp64 && shape == arch::Fp64Shape::simt)
    throw InputError("--variant tensor-core: the device (sm_" + std::to_string(info.sm_major) +
                     std::to_string(info.sm_minor) + ") has no FP64 tensor cores");
  if (key.precision != precision::Precision::fp64 && !arch::has_fp32_tensor_cores(info.sm_major, info.sm_minor))
    throw InputError("--variant tensor-core: the device (sm_" + std::to_string(info.sm_major) +
                     std::to_string(info.sm_minor) + ") has no FP16/BF16/TF32 tensor cores");
  if (tensor_core::geometry_supported(key) || tensor_core::node_geometry_supported(key)) {
    if (shape != arch::Fp64Shape::m16n8k16)
      throw InputError("--variant tensor-core: the general-geometry kernels need the sm_90 FP64 shapes (the device is sm_" +
                       std::to_string(info.sm_major) + std::to_string(info.sm_minor) + ")");
    if (tensor_core::node_geometry_supported(key))
      return tensor_core::make_node_geometry_operator<dim>(mesh, dofs, key, tuning, coefficient, coefficient_source);
    return tensor_core::make_geometry_operator<dim>(mesh, dofs, key, tuning, coefficient, coefficient_source);
  }
  return tensor_core::make_tensor_core_operator_for_shape<dim>(mesh, dofs, key, shape);
}

template std::unique_ptr<DeviceOperator> make_tensor_core_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                      const DeviceKernelKey&, const DeviceTuning&,
                                                                      const Coefficient&, const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_tensor_core_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                      const DeviceKernelKey&, const DeviceTuning&,
                                                                      const Coefficient&, const jit::DeviceSource&);

}  // namespace tcfem::operators
