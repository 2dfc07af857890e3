#pragma once
// __global__ kernel of the general-geometry cuda-core cg Laplacian and its operator: the phases of
// GeomProgram (operators/cuda_core/geometry.h) with a barrier between each two, one block per `p.cells`
// cells; instantiated per precision in operators/cuda_core/geometry_fp64.cu / _fp32.cu.
//
// Programs: 3D the lines program (one thread per 1D line in the x/y contractions and
// interpolations, operators/cuda_core/geometry_lines.h), 2D the points program (one thread per
// point, operators/cuda_core/geometry.h). The cell stride in shared memory is the one with the
// fewest bank-model wavefronts. Tuning (operators/tuning.h, docs/user_guide.md):
//   geometry_min_blocks_per_sm  resident blocks the compiler must allow per SM (__launch_bounds__
//                               minimum: 1 = no register cap, 3 ~ 80, 4 = 64 registers per
//                               thread); 3D BP5/BP3 only; default per degree (default_min_blocks)
//   geometry_cells_per_block    cells per block (1..the layout's count, default the layout's)
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "operators/cuda_core/geometry_lines_setup.h"
#include "operators/cuda_core/geometry_setup.h"
#include "operators/device/variants.h"

namespace tcfem::operators::cuda_core {

template <int dim, int k, int q, bool colloc, typename Number, int min_blocks>
__global__ void __launch_bounds__(GeomProgram<dim, k, q, colloc, Number>::L.threads, min_blocks)
    geom_kernel(const __grid_constant__ GeomParams<dim, k, q, Number> p, const Number* __restrict__ src,
                Number* __restrict__ dst) {
  using Prog = GeomProgram<dim, k, q, colloc, Number>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const auto t = Prog::arrays(reinterpret_cast<Number*>(smem_raw), p);
  typename Prog::Thread th;
  Prog::init(p, blockIdx.x, threadIdx.x, th);
  Prog::load_tables(p, t, threadIdx.x, blockDim.x);
  Prog::load(p, t, th, src, dst);
  __syncthreads();
  if constexpr (dim == 3) {
    if constexpr (!colloc) {
      Prog::interp_x(t, th);
      __syncthreads();
      Prog::interp_yz(p, t, th);
      __syncthreads();
    }
    Prog::grad_flux3(p, t, th);
    __syncthreads();
    Prog::grad_t3(p, t, th, dst);
    if constexpr (!colloc) {
      __syncthreads();
      Prog::integrate_y(t, th);
      __syncthreads();
      Prog::integrate_x3(p, t, th, dst);
    }
  } else {
    if constexpr (colloc) {
      Prog::grad_flux2(p, t, th, 0, 1);
      __syncthreads();
      Prog::grad_t2(p, t, th, 1, dst);
    } else {
      Prog::interp2(p, t, th);
      __syncthreads();
      Prog::grad_flux2(p, t, th, 1, 2);
      __syncthreads();
      Prog::grad_t2(p, t, th, 2, dst);
      __syncthreads();
      Prog::integrate_x2(p, t, th, dst);
    }
  }
}

/// The tuning of the general-geometry kernels, checked; zero fields take the defaults.
inline DeviceTuning checked_geometry_tuning(const DeviceTuning& t) {
  const int m = t.geometry_min_blocks_per_sm;
  if (m != 0 && m != 1 && m != 3 && m != 4)
    throw InputError("tuning geometry_min_blocks_per_sm: 1, 3 or 4 (got " + std::to_string(m) + ")");
  if (t.geometry_cells_per_block < 0 || t.geometry_cells_per_block > 1024)
    throw InputError("tuning geometry_cells_per_block: 1..1024 (got " + std::to_string(t.geometry_cells_per_block) +
                     ")");
  return t;
}

/// What the general-geometry operators (points and lines programs) share: the 1D geometry tables
/// on the device, one kernel of `Params` launched after a memset of dst, the shared-memory
/// attributes and occupancy check of that kernel, and the work model.
template <int dim, typename Params, typename Number>
class GeometryOperatorBase : public DeviceOperatorBase {
 public:
  using Kernel = void (*)(Params, const Number*, Number*);

  void vmult(void* dst, const void* src) const override {
    auto* d = static_cast<Number*>(dst);
    TCFEM_CUDA_CHECK(cudaMemsetAsync(d, 0, n_local_ * sizeof(Number)));
    kernel_<<<static_cast<unsigned>(blocks_), threads_, smem_>>>(params_, static_cast<const Number*>(src), d);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  std::size_t value_size() const override { return sizeof(Number); }
  std::size_t device_bytes() const override { return table_bytes_; }
  KernelChoices choices() const override {
    return {{"program", program_},
            {"min_blocks_per_sm", std::to_string(min_blocks_)},
            {"cells_per_block", std::to_string(cells_per_block_)},
            {"threads", std::to_string(threads_)},
            {"shared_bytes", std::to_string(smem_)}};
  }

 protected:
  GeometryOperatorBase(const DeviceKernelKey& key, std::size_t n_local) : DeviceOperatorBase(key, n_local) {}

  /// Copies the 1D tables s_d, ds_d of a setup to the device; their device pointers.
  template <class Setup>
  std::pair<std::array<const Number*, dim>, std::array<const Number*, dim>> upload_tables(const Setup& setup) {
    std::array<const Number*, dim> s, ds;
    for (int d = 0; d < dim; ++d) {
      s_[d] = std::make_unique<DeviceBuffer<Number>>(setup.s[d]);
      ds_[d] = std::make_unique<DeviceBuffer<Number>>(setup.ds[d]);
      s[d] = s_[d]->data();
      ds[d] = ds_[d]->data();
    }
    table_bytes_ = setup.table_bytes();
    return {s, ds};
  }

  /// Checks the grid size, sets the shared-memory attributes of kernel_ and checks that a block of
  /// threads_ threads and smem_ bytes fits on an SM (`what` names the kernel in the error).
  void prepare_launch(const std::string& what) {
    if (blocks_ > std::int64_t(0x7fffffff)) throw InputError("cuda-core: the mesh has too many cells for one launch");
    if (smem_ > 48 * 1024)
      TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_));
    TCFEM_CUDA_CHECK(
        cudaFuncSetAttribute(kernel_, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    int per_sm = 0;
    TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, threads_, smem_));
    if (per_sm < 1)
      throw InputError("cuda-core: the " + what + " does not fit on the device (" + std::to_string(smem_) +
                       " bytes of shared memory, " + std::to_string(threads_) + " threads)");
  }

  /// src read and dst written once, dst zeroed (memset); the gathers of shared nodes and the
  /// atomics resolve in L2; the 1D tables are a few KB
  double dram_model() const { return 3.0 * double(n_local_) * sizeof(Number) + double(table_bytes_); }

  std::array<std::unique_ptr<DeviceBuffer<Number>>, dim> s_, ds_;
  Params params_{};
  std::int64_t blocks_ = 0;
  Kernel kernel_ = nullptr;  ///< the launched instantiation (register cap of min_blocks_)
  int min_blocks_ = 1;
  int cells_per_block_ = 1;
  const char* program_ = "";
  int threads_ = 0;
  int smem_ = 0;
  std::size_t table_bytes_ = 0;
};

/// cg Laplacian on general 2D geometry (deformed or Cartesian box) by the points program, geometry
/// from 1D tables: memset of dst + one kernel.
template <int dim, int k, int q, bool colloc, typename Number>
class CgGeometryOperator final : public GeometryOperatorBase<dim, GeomParams<dim, k, q, Number>, Number> {
  using Base = GeometryOperatorBase<dim, GeomParams<dim, k, q, Number>, Number>;

 public:
  using Prog = GeomProgram<dim, k, q, colloc, Number>;
  static constexpr GeomLayout L = Prog::L;
  using Kernel = typename Base::Kernel;

  CgGeometryOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                     const DeviceTuning& tuning)
      : Base(key, dofs.n_local()) {
    (void)require_device("--variant cuda-core");
    const auto setup = make_geom_setup<dim, k, q, Number>(mesh, key.quadrature);
    const auto [s, ds] = this->upload_tables(setup);
    auto& p = this->params_;
    p = setup.params(s, ds);
    const DeviceTuning t = checked_geometry_tuning(tuning);
    p.cells = t.geometry_cells_per_block > 0 ? std::min(t.geometry_cells_per_block, L.cells) : L.cells;
    p.cell_stride = geom_best_cell_stride(L, int(sizeof(Number)));
    const GeomLayout launch = geom_tuned_layout(L, p.cells, p.cell_stride);
    this->threads_ = launch.threads;
    this->blocks_ = geom_blocks<dim, k, q, colloc, Number>(p);
    this->smem_ = launch.smem_elements() * int(sizeof(Number));
    this->min_blocks_ = 1;
    this->kernel_ = geom_kernel<dim, k, q, colloc, Number, 1>;
    this->program_ = "points";
    this->cells_per_block_ = p.cells;
    this->prepare_launch("general-geometry kernel");
    constexpr auto w = geom_cell_work<dim, k, q, colloc>();
    const double cells = double(p.total_cells);
    this->flops_ = w.flops * cells;
    this->shared_ = (w.shared_values * cells + double(this->blocks_) * L.table_elements() * 2.0) * sizeof(Number);
    this->dram_ = this->dram_model();
  }
};

/// The lines program (3D): the phases of GeomLinesProgram with a barrier between each two
/// (operators/cuda_core/geometry_lines.h).
template <int k, int q, bool colloc, typename Number, int min_blocks>
__global__ void __launch_bounds__(geom_lines_layout(q).threads, min_blocks)
    geom_lines_kernel(const __grid_constant__ GeomLinesParams<k, q, Number> p, const Number* __restrict__ src,
                      Number* __restrict__ dst) {
  using Prog = GeomLinesProgram<k, q, colloc, Number>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Number* sm = reinterpret_cast<Number*>(smem_raw);
  typename Prog::Thread th;
  Prog::init(p, blockIdx.x, threadIdx.x, th);
  Prog::load(p, sm, th, src, dst);
  __syncthreads();
  if constexpr (!colloc) {
    Prog::interp_x(p, sm, th);
    __syncthreads();
    Prog::interp_y(p, sm, th);
    __syncthreads();
    Prog::interp_z(p, sm, th);
    __syncthreads();
  }
  Prog::lines(p, sm, th, p.Dx, p.Dy, 0, 1, 0, 2);
  __syncthreads();
  Prog::column_flux(p, sm, th);
  __syncthreads();
  Prog::lines(p, sm, th, p.DxT, p.DyT, 1, 0, 2, 3);
  __syncthreads();
  if constexpr (colloc) {
    Prog::scatter(p, sm, th, dst);
  } else {
    Prog::integrate_z(p, sm, th);
    __syncthreads();
    Prog::integrate_y(p, sm, th);
    __syncthreads();
    Prog::integrate_x(p, sm, th, dst);
  }
}

/// cg Laplacian on the general 3D geometry by the lines program: memset of dst + one kernel.
template <int k, int q, bool colloc, typename Number>
class CgGeometryLinesOperator final : public GeometryOperatorBase<3, GeomLinesParams<k, q, Number>, Number> {
  using Base = GeometryOperatorBase<3, GeomLinesParams<k, q, Number>, Number>;

 public:
  using Kernel = typename Base::Kernel;
  /// register-capped variants exist for BP5 and BP3
  static constexpr bool capped_variants = colloc || q == k + 2;
  /// The register cap per (quadrature, degree) where it was measured faster on the H200 (3D fp64,
  /// 3e7 DoFs, docs/notebook/performance_history.md): BP5 four blocks per SM for k <= 6, BP3 four for k = 2, 3, 5 and
  /// three for k = 8; elsewhere (and for float) the compiler's choice.
  static constexpr int default_min_blocks() {
    if constexpr (!capped_variants || !std::is_same_v<Number, double>) return 1;
    if constexpr (colloc) return k <= 6 ? 4 : 1;
    if constexpr (k == 2 || k == 3 || k == 5) return 4;
    if constexpr (k == 8) return 3;
    return 1;
  }
  static Kernel pick_kernel(int min_blocks) {
    if constexpr (capped_variants) {
      if (min_blocks == 3) return geom_lines_kernel<k, q, colloc, Number, 3>;
      if (min_blocks == 4) return geom_lines_kernel<k, q, colloc, Number, 4>;
    }
    return geom_lines_kernel<k, q, colloc, Number, 1>;
  }

  CgGeometryLinesOperator(const mesh::BoxMesh<3>& mesh, const fe::DofLayout<3>& dofs, const DeviceKernelKey& key,
                          const DeviceTuning& tuning)
      : Base(key, dofs.n_local()) {
    (void)require_device("--variant cuda-core");
    const DeviceTuning t = checked_geometry_tuning(tuning);
    const int requested_cells = t.geometry_cells_per_block;
    this->min_blocks_ =
        capped_variants && t.geometry_min_blocks_per_sm > 0 ? t.geometry_min_blocks_per_sm : default_min_blocks();
    this->kernel_ = pick_kernel(this->min_blocks_);
    // resident blocks per SM the registers allow: the padding search may use the shared memory of
    // the blocks that could not be resident anyway
    int by_registers = 0;
    const int launch_threads = geom_lines_cells(q, requested_cells) * q * q;
    TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&by_registers, this->kernel_, launch_threads, 0));
    const auto setup =
        make_geom_lines_setup<k, q, Number>(mesh, key.quadrature, requested_cells, true, by_registers);
    const auto [s, ds] = this->upload_tables(setup);
    auto& p = this->params_;
    p = setup.params(s, ds);
    const GeomLinesLayout& L = p.layout;
    this->threads_ = L.threads;
    this->blocks_ = (p.total_cells + L.cells - 1) / L.cells;
    this->smem_ = L.smem_elements() * int(sizeof(Number));
    this->program_ = "lines";
    this->cells_per_block_ = L.cells;
    this->prepare_launch("general-geometry lines kernel");
    constexpr auto w = geom_lines_cell_work(k, q, colloc);
    const double cells = double(p.total_cells);
    this->flops_ = w.flops * cells;
    this->shared_ = w.shared_values * cells * sizeof(Number);
    this->dram_ = this->dram_model();
  }
};

template <int dim>
using GeomFactory = std::unique_ptr<DeviceOperator> (*)(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                        const DeviceKernelKey&, const DeviceTuning&);

template <int dim, int k, fe::QuadratureKind kind, typename Number>
std::unique_ptr<DeviceOperator> build_geom(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                           const DeviceKernelKey& key, const DeviceTuning& tuning) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == fe::QuadratureKind::gll_k1;
  if constexpr (dim == 3)
    return std::make_unique<CgGeometryLinesOperator<k, q, colloc, Number>>(mesh, dofs, key, tuning);
  else
    return std::make_unique<CgGeometryOperator<dim, k, q, colloc, Number>>(mesh, dofs, key, tuning);
}

/// table[quadrature kind][degree - 1]
template <int dim>
struct GeomTable {
  std::array<std::array<GeomFactory<dim>, 8>, 3> f{};
};

template <int dim, typename Number, int... K>
GeomTable<dim> make_geom_table(std::integer_sequence<int, K...>) {
  using fe::QuadratureKind;
  GeomTable<dim> t;
  ((t.f[int(QuadratureKind::gauss_k2)][K] = &build_geom<dim, K + 1, QuadratureKind::gauss_k2, Number>), ...);
  ((t.f[int(QuadratureKind::gll_k1)][K] = &build_geom<dim, K + 1, QuadratureKind::gll_k1, Number>), ...);
  ((t.f[int(QuadratureKind::gauss_k1)][K] = &build_geom<dim, K + 1, QuadratureKind::gauss_k1, Number>), ...);
  return t;
}

/// The operator for a supported key (see cuda_core_supports) of precision Number.
template <int dim, typename Number>
std::unique_ptr<DeviceOperator> make_geom_operator_typed(const mesh::BoxMesh<dim>& mesh,
                                                         const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                         const DeviceTuning& tuning) {
  static const GeomTable<dim> table = make_geom_table<dim, Number>(std::make_integer_sequence<int, 8>{});
  const auto f = table.f[int(key.quadrature)][key.degree - 1];
  return f ? f(mesh, dofs, key, tuning) : nullptr;
}

}  // namespace tcfem::operators::cuda_core
