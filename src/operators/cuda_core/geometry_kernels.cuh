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
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "operators/cuda_core/geometry_lines_setup.h"
#include "operators/cuda_core/geometry_setup.h"
#include "operators/device/device_geometry.h"
#include "operators/device/ghosted_apply.h"
#include "operators/device/variants.h"

namespace tcfem::operators::cuda_core {

template <int dim, int k, int q, bool colloc, typename Number, int min_blocks, bool stored, bool dg = false,
          typename Stored = Number, bool nodes = false, bool bilinear = false>
__global__ void __launch_bounds__(GeomProgram<dim, k, q, colloc, Number>::L.threads, min_blocks)
    geom_kernel(const __grid_constant__ GeomParams<dim, k, q, Number> p, const Number* __restrict__ src,
                Number* __restrict__ dst) {
  using Prog = GeomProgram<dim, k, q, colloc, Number, stored, dg, Stored, nodes, bilinear>;
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
  if (t.geometry_prefetch < -1 || t.geometry_prefetch > 1)
    throw InputError("tuning geometry_prefetch: -1 (off), 0 (default) or 1 (on) (got " +
                     std::to_string(t.geometry_prefetch) + ")");
  return t;
}

/// The mesh's map and the coefficient (none when empty) as device point functions, compiled
/// together; they live as long as this object (not copied or moved: the functions point into it).
template <int dim>
struct GeometryFunctions {
  setup::PointFunctionSet set{dim};
  std::array<setup::PointFunction, 3> map;
  setup::PointFunction a;
  GeometryFunctions(const mesh::BoxMesh<dim>& mesh, const Coefficient& coefficient, const jit::DeviceSource& source) {
    const auto m = setup::map_functions<dim>(mesh, set);
    for (int d = 0; d < dim; ++d) map[d] = m[d];
    if (coefficient) a = set.add(source, coefficient, "coefficient");
    set.compile();
  }
  GeometryFunctions(const GeometryFunctions&) = delete;
  GeometryFunctions& operator=(const GeometryFunctions&) = delete;
};

/// What the general-geometry operators (points and lines programs) share: the geometry on the
/// device (the deformed box's 1D tables, or the stored cell data of any geometry), one kernel of
/// `Params` launched after a memset of dst, the shared-memory attributes and occupancy check of
/// that kernel, the work model, and for stored geometry the diagonal.
template <int dim, typename Params, typename Number>
class GeometryOperatorBase : public DeviceOperatorBase {
 public:
  using Kernel = void (*)(Params, const Number*, Number*);

  void vmult(void* dst, const void* src) const override { launch(params_, dst, src); }
  bool vmult_unconstrained(void* dst, const void* src) const override {
    Params p = params_;
    p.dirichlet = 0;
    launch(p, dst, src);
    return true;
  }
  std::size_t value_size() const override { return sizeof(Number); }
  std::size_t device_bytes() const override { return table_bytes_; }
  KernelChoices choices() const override {
    KernelChoices c{{"program", program_},
                    {"geometry", geometry_name_ ? geometry_name_ : coef_ ? "stored" : "1D tables"},
                    {"min_blocks_per_sm", std::to_string(min_blocks_)},
                    {"cells_per_block", std::to_string(cells_per_block_)},
                    {"threads", std::to_string(threads_)},
                    {"shared_bytes", std::to_string(smem_)}};
    if (prefetch_) c.push_back({"prefetch", prefetch_});
    if (!regions_.empty()) c.push_back({"split_launches", std::to_string(regions_.size())});
    return c;
  }
  /// The apply split around `interior` (cells of the mesh, a rank's ghosted box): the interior
  /// cells in one launch, the cells around them in at most 2 dim more (each cell once, the shared
  /// nodes added with the kernel's atomics, the constrained ones stored). False, with whole applies
  /// kept, where `interior` holds no cell.
  bool split_apply(const CellRange& interior) override {
    regions_.clear();
    int n[3] = {1, 1, 1}, lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    std::int64_t inner = 1;
    for (int d = 0; d < dim; ++d) {
      n[d] = params_.n_cells[d];
      lo[d] = std::clamp(interior.lo[d], 0, n[d]);
      hi[d] = std::clamp(interior.hi[d], 0, n[d]);
      inner *= std::max(0, hi[d] - lo[d]);
    }
    if (inner == 0) return false;
    CellRange in;
    for (int d = 0; d < dim; ++d) {
      in.lo[d] = lo[d];
      in.hi[d] = hi[d];
    }
    regions_.push_back(region(in));
    for (const auto& r : cells_around(dim, n, in)) regions_.push_back(region(r));
    return true;
  }
  bool is_split() const override { return !regions_.empty(); }
  void vmult_interior(void* dst, const void* src) const override {
    if (regions_.empty()) DeviceOperator::vmult_interior(dst, src);
    TCFEM_CUDA_CHECK(cudaMemsetAsync(dst, 0, n_local_ * sizeof(Number)));
    launch_region(regions_.front(), dst, src);
  }
  void vmult_rest(void* dst, const void* src) const override {
    if (regions_.empty()) DeviceOperator::vmult_rest(dst, src);
    for (std::size_t i = 1; i < regions_.size(); ++i) launch_region(regions_[i], dst, src);
  }
  /// Stored geometry: the diagonal from the stored cell data (the generic operator's algorithm).
  /// The operators that keep no stored data in Number (geometry from nodes, or stored in fp32)
  /// form it for the time of the call (from their copy of the mesh).
  bool diagonal(void* diag) const override {
    if (coef_) {
      device_general_diagonal<Number>(view_, grid_, Db_, static_cast<Number*>(diag));
      return true;
    }
    if (!recompute_) return false;
    auto* self = const_cast<GeometryOperatorBase*>(this);
    const fe::DofLayout<dim> dofs(recompute_->mesh, fe::Disc::cg, this->key_.degree, recompute_->dirichlet);
    self->compute_stored(recompute_->mesh, dofs, this->key_.quadrature, recompute_->coefficient, recompute_->source);
    device_general_diagonal<Number>(view_, grid_, Db_, static_cast<Number*>(diag));
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    self->release_stored();
    return true;
  }
  std::vector<double> cell_metric() const override {
    if (!metric_.empty()) return metric_;
    if (!coef_) return {};
    return device_cell_metric<Number>(view_);
  }
  bool cell_metric_to(double* metric) const override {
    if (!metric_.empty()) {
      TCFEM_CUDA_CHECK(cudaMemcpy(metric, metric_.data(), metric_.size() * sizeof(double), cudaMemcpyHostToDevice));
      return true;
    }
    if (!coef_) return false;
    device_cell_metric_to<Number>(view_, metric);
    return true;
  }

 protected:
  GeometryOperatorBase(const DeviceKernelKey& key, std::size_t n_local) : DeviceOperatorBase(key, n_local) {}

  void launch(const Params& p, void* dst, const void* src) const {
    auto* d = static_cast<Number*>(dst);
    TCFEM_CUDA_CHECK(cudaMemsetAsync(d, 0, n_local_ * sizeof(Number)));
    kernel_<<<static_cast<unsigned>(blocks_), threads_, smem_>>>(p, static_cast<const Number*>(src), d);
    TCFEM_CUDA_CHECK_LAUNCH();
  }

  /// A launch over the cells of one region of a split apply (no zeroing).
  struct Region {
    Params params;
    std::int64_t blocks = 0;
  };
  Region region(const CellRange& r) const {
    Region g;
    g.params = params_;
    std::int64_t cells = 1;
    for (int d = 0; d < dim; ++d) {
      g.params.region_lo[d] = r.lo[d];
      g.params.region_n[d] = r.hi[d] - r.lo[d];
      cells *= r.hi[d] - r.lo[d];
    }
    g.params.total_cells = cells;
    g.blocks = (cells + cells_per_block_ - 1) / cells_per_block_;
    return g;
  }
  void launch_region(const Region& g, void* dst, const void* src) const {
    if (g.blocks == 0) return;
    kernel_<<<static_cast<unsigned>(g.blocks), threads_, smem_>>>(g.params, static_cast<const Number*>(src),
                                                                    static_cast<Number*>(dst));
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  std::vector<Region> regions_;  ///< split apply: the interior, then the regions around it

  /// Stored geometry: computes coef[cell][sym][point] = a w |det J| J^{-1} J^{-T} of every owned
  /// cell on the device (operators/device/device_geometry.h: the mesh's map, compiled or on the host
  /// threads, and the coefficient, checked positive at every point) and the tables of the
  /// diagonal; returns the device array.
  const Number* compute_stored(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                               fe::QuadratureKind kind, const Coefficient& coefficient,
                               const jit::DeviceSource& coefficient_source) {
    const GeometryFunctions<dim> f(mesh, coefficient, coefficient_source);
    return compute_stored(mesh, dofs, kind, f, nullptr);
  }

  /// compute_stored with the map and coefficient functions `f`; `volume` (null: not computed):
  /// the cells' volumes (double, device), which the dg face data need.
  const Number* compute_stored(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                               fe::QuadratureKind kind, const GeometryFunctions<dim>& f, double* volume) {
    const int k = dofs.degree();
    const auto quad = fe::make_quadrature(kind, k);
    const int nq = quad.size();
    std::int64_t points = 1;
    for (int d = 0; d < dim; ++d) points *= nq;
    const std::size_t n_cells = mesh.n_owned_cells();
    coef_ = std::make_unique<DeviceBuffer<Number>>(n_cells * n_sym<dim> * std::size_t(points));
    device_cell_geometry<dim, Number>(mesh, dofs, quad, f.a, f.map, coef_->data(), nullptr, volume);
    table_bytes_ += coef_->size() * sizeof(Number);
    // the diagonal's view: sizes, B on the device, the stored data
    const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
    const auto B = fe::basis_values(basis, quad.points).data;
    b_table_ = std::make_unique<DeviceBuffer<Number>>(std::vector<Number>(B.begin(), B.end()));
    Db_ = fe::basis_derivatives(basis, quad.points).data;
    grid_ = setup::make_grid(mesh, dofs, nq);
    view_.dim = dim;
    view_.nb = k + 1;
    view_.nq = nq;
    view_.dg = false;
    view_.mass = false;
    view_.cartesian = false;
    for (int d = 0; d < dim; ++d) {
      view_.n_cells[d] = mesh.n_cells()[d];
      view_.lattice[d] = std::int64_t(mesh.n_cells()[d]) * k + 1;
    }
    view_.dirichlet = fe::dirichlet_bits(dofs.dirichlet_faces());
    view_.B = b_table_->data();
    view_.cell_coef = coef_->data();
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the point functions go out of scope
    return coef_->data();
  }

  /// Stored geometry rounded to fp32 (an fp64 operator of GeometryStorage::fp32): compute_stored
  /// in fp64, the cell metric from it, the rounded copy, the fp64 data freed (the diagonal forms it
  /// again for the time of its call). Returns the device array.
  const float* compute_stored_fp32(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                   fe::QuadratureKind kind, const Coefficient& coefficient,
                                   const jit::DeviceSource& coefficient_source) {
    static_assert(std::is_same_v<Number, double>, "fp32 stored geometry: of the fp64 operators");
    compute_stored(mesh, dofs, kind, coefficient, coefficient_source);
    metric_ = device_cell_metric<Number>(view_);
    coef_fp32_ = std::make_unique<DeviceBuffer<float>>(coef_->size());
    device_round_to_float(coef_->data(), coef_fp32_->data(), coef_->size());
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
    table_bytes_ += coef_fp32_->size() * sizeof(float);
    release_stored();
    keep_for_diagonal(mesh, dofs, coefficient, coefficient_source);
    geometry_name_ = "stored fp32";
    return coef_fp32_->data();
  }

  /// What the diagonal of an operator without stored data in Number needs to form it (cg).
  void keep_for_diagonal(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                         const Coefficient& coefficient, const jit::DeviceSource& coefficient_source) {
    recompute_ = std::make_unique<Recompute>(Recompute{mesh, dofs.dirichlet_faces(), coefficient, coefficient_source});
  }

  /// A box_tables key (a Cartesian box with Neumann parts and a constant coefficient) served from
  /// the box's 1D tables: its diagonal formed from stored data for the time of its call, and the
  /// cell metric of the box (MatrixFreeOperator::cell_metric's Cartesian path).
  void box_tables_setup(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs) {
    keep_for_diagonal(mesh, dofs, {}, {});
    const auto h = mesh.cell_size();
    double volume = 1.0;
    for (int d = 0; d < dim; ++d) volume *= h[d];
    metric_.assign(std::size_t(mesh.n_owned_cells()) * dim, 0.0);
    for (std::size_t i = 0; i < metric_.size(); ++i) metric_[i] = volume / (h[i % dim] * h[i % dim]);
    geometry_name_ = "box tables";
  }

  /// Frees the stored cell data of compute_stored (the diagonal's tables stay).
  void release_stored() {
    if (!coef_) return;
    table_bytes_ -= coef_->size() * sizeof(Number);
    coef_.reset();
    view_.cell_coef = nullptr;
  }

  /// Geometry from nodes: the node field and the coefficient at the nodes on the device
  /// (device_node_geometry: the mesh's map and the coefficient, compiled or on the host threads).
  /// Also computes metric_ (device_cell_metric_of: the checks of the map and the coefficient at
  /// every point of `kind`, without storing the cell data). Points that are not the nodes (any
  /// kind but gll_k1): the coefficient at the points (a_points) instead of the nodes.
  DeviceNodeGeometry<Number> compute_nodes(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                           fe::QuadratureKind kind, const Coefficient& coefficient,
                                           const jit::DeviceSource& coefficient_source) {
    const GeometryFunctions<dim> f(mesh, coefficient, coefficient_source);
    const auto quad = fe::make_quadrature(kind, dofs.degree());
    const bool at_points = kind != fe::QuadratureKind::gll_k1 && !f.a.empty();
    std::unique_ptr<DeviceBuffer<Number>> a_points;
    std::size_t points = mesh.n_owned_cells();
    for (int d = 0; d < dim; ++d) points *= std::size_t(quad.size());
    if (at_points) a_points = std::make_unique<DeviceBuffer<Number>>(points);
    metric_ = device_cell_metric_of<dim>(mesh, dofs, quad, f.a, f.map, a_points ? a_points->data() : nullptr);
    auto g = device_node_geometry<Number, dim>(mesh, dofs, at_points ? setup::PointFunction{} : f.a, f.map);
    g.a_points = std::move(a_points);
    table_bytes_ += g.bytes();
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the point functions go out of scope
    return g;
  }

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
    table_bytes_ += setup.table_bytes();  // after the node field of compute_nodes, where there is one
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
  /// atomics resolve in L2; the 1D tables (a few KB) or the stored cell data read once
  double dram_model() const { return 3.0 * double(n_local_) * sizeof(Number) + double(table_bytes_); }

  std::array<std::unique_ptr<DeviceBuffer<Number>>, dim> s_, ds_;
  std::unique_ptr<DeviceBuffer<Number>> coef_, b_table_;  ///< stored geometry and the diagonal's B
  std::unique_ptr<DeviceBuffer<float>> coef_fp32_;         ///< stored geometry rounded to fp32
  struct Recompute {
    mesh::BoxMesh<dim> mesh;
    fe::DirichletFaces<dim> dirichlet;
    Coefficient coefficient;
    jit::DeviceSource source;
  };
  std::unique_ptr<Recompute> recompute_;  ///< see keep_for_diagonal
  std::vector<double> Db_;
  std::vector<double> metric_;           ///< the cell metric, where computed at setup
  const char* geometry_name_ = nullptr;  ///< the "geometry" choice, where not stored or 1D tables
  const char* prefetch_ = nullptr;       ///< the "prefetch" choice (on, off), where the program has one
  setup::Grid grid_{};
  OperatorView<Number> view_{};
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

/// cg Laplacian on general 2D geometry by the points program: memset of dst + one kernel. Geometry
/// from the 1D tables of the deformed (or Cartesian) box, or with `stored` from the stored cell
/// data of any geometry (a mapped box, a mesh's node field, a variable coefficient), of type
/// Stored (float for an fp64 operator: GeometryStorage::fp32), or with `nodes` (BP5, BP3) recomputed
/// from the node field (matrix-free; bilinear cells from their vertices alone). The matrix-free
/// operator checks the geometry and the coefficient and computes the cell metric at setup without
/// storing cell data; its diagonal forms the stored data for the time of the call.
template <int dim, int k, int q, bool colloc, typename Number, bool stored, typename Stored = Number,
          bool nodes = false>
class CgGeometryOperator final : public GeometryOperatorBase<dim, GeomParams<dim, k, q, Number>, Number> {
  using Base = GeometryOperatorBase<dim, GeomParams<dim, k, q, Number>, Number>;

 public:
  using Kernel = typename Base::Kernel;

  CgGeometryOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                     const DeviceTuning& tuning, const Coefficient& coefficient,
                     const jit::DeviceSource& coefficient_source)
      : Base(key, dofs.n_local()) {
    (void)require_device("--variant cuda-core");
    if constexpr (nodes) node_ = this->compute_nodes(mesh, dofs, key.quadrature, coefficient, coefficient_source);
    const bool bilinear = nodes && !node_.disp && !node_.disp2;
    const GeomLayout L = nodes && bilinear ? GeomProgram<dim, k, q, colloc, Number, stored, false, Stored, nodes, nodes>::L
                                           : GeomProgram<dim, k, q, colloc, Number, stored, false, Stored, nodes>::L;
    const auto setup = make_geom_setup<dim, k, q, Number>(mesh, key.quadrature, stored || nodes, L.buffers);
    const auto [s, ds] = this->upload_tables(setup);
    auto& p = this->params_;
    p = setup.params(s, ds);
    p.dirichlet = fe::dirichlet_bits(dofs.dirichlet_faces());
    if constexpr (stored) {
      if constexpr (std::is_same_v<Stored, Number>)
        p.coef = this->compute_stored(mesh, dofs, key.quadrature, coefficient, coefficient_source);
      else
        p.coef_fp32 = this->compute_stored_fp32(mesh, dofs, key.quadrature, coefficient, coefficient_source);
    } else if constexpr (nodes) {
      set_node_field(p, node_);
      this->geometry_name_ = p.disp2 ? "quadratic nodes" : p.disp ? "nodes" : "bilinear vertices";
      this->keep_for_diagonal(mesh, dofs, coefficient, coefficient_source);
    } else {
      if (key.general_field) this->box_tables_setup(mesh, dofs);
    }
    const DeviceTuning t = checked_geometry_tuning(tuning);
    p.cells = t.geometry_cells_per_block > 0 ? std::min(t.geometry_cells_per_block, L.cells) : L.cells;
    p.cell_stride = geom_best_cell_stride(L, int(sizeof(Number)));
    const GeomLayout launch = geom_tuned_layout(L, p.cells, p.cell_stride);
    this->threads_ = launch.threads;
    this->blocks_ = geom_blocks<dim, k, q, colloc, Number>(p);
    this->smem_ = launch.smem_elements() * int(sizeof(Number));
    this->min_blocks_ = 1;
    this->kernel_ = bilinear ? geom_kernel<dim, k, q, colloc, Number, 1, stored, false, Stored, nodes, nodes>
                             : geom_kernel<dim, k, q, colloc, Number, 1, stored, false, Stored, nodes>;
    this->program_ = "points";
    this->cells_per_block_ = p.cells;
    this->prepare_launch("general-geometry kernel");
    const auto w = bilinear ? geom_cell_work<dim, k, q, colloc, stored, nodes, nodes>()
                            : geom_cell_work<dim, k, q, colloc, stored, nodes>();
    const double cells = double(p.total_cells);
    this->flops_ = w.flops * cells;
    this->shared_ = (w.shared_values * cells + double(this->blocks_) * L.table_elements() * 2.0) * sizeof(Number);
    this->dram_ = this->dram_model();
  }

 private:
  DeviceNodeGeometry<Number> node_;
};

/// The lines program (3D): the phases of GeomLinesProgram with a barrier between each two
/// (operators/cuda_core/geometry_lines.h).
template <int k, int q, bool colloc, typename Number, int min_blocks, bool stored, bool nodes = false,
          bool trilinear = false, bool dg = false, typename Stored = Number>
__global__ void __launch_bounds__(geom_lines_layout(q).threads, min_blocks)
    geom_lines_kernel(const __grid_constant__ GeomLinesParams<k, q, Number> p, const Number* __restrict__ src,
                      Number* __restrict__ dst) {
  using Prog = GeomLinesProgram<k, q, colloc, Number, stored, nodes, trilinear, dg, Stored>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Number* sm = reinterpret_cast<Number*>(smem_raw);
  typename Prog::Thread th;
  Prog::init(p, blockIdx.x, threadIdx.x, th);
  if constexpr (stored)
    if (p.prefetch) Prog::prefetch_stored(p, th);
  Prog::load(p, sm, th, src, dst);
  if constexpr (nodes) Prog::load_nodes(p, sm, th);
  __syncthreads();
  if constexpr (Prog::displacement) {
    if (p.disp2) {
      Prog::quadratic_nodes(p, sm, th);
      __syncthreads();
    }
  }
  if constexpr (!colloc) {
    Prog::interp_x(p, sm, th);
    Prog::template node_interp<0>(p, sm, th);
    __syncthreads();
    Prog::interp_y(p, sm, th);
    Prog::template node_interp<1>(p, sm, th);
    __syncthreads();
    Prog::interp_z(p, sm, th);
    Prog::template node_interp<2>(p, sm, th);
    __syncthreads();
  }
  Prog::lines(p, sm, th, p.Dx, p.Dy, 0, 1, 0, 2);
  if constexpr (Prog::displacement) {
    Prog::node_lines(p, sm, th);
    __syncthreads();
    Prog::node_y_lines(p, sm, th);
  }
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
/// Geometry from the deformed box's 1D tables, with `stored` from the stored cell data, or with
/// `nodes` (BP5) recomputed from the node field (matrix-free). The matrix-free operator checks
/// the geometry and the coefficient and computes the cell metric at setup without storing cell
/// data; its diagonal forms the stored data for the time of the call (from a copy of the mesh).
/// Stored: the type of the stored data (float for an fp64 operator: GeometryStorage::fp32; its
/// diagonal forms the fp64 data for the time of the call as well).
template <int k, int q, bool colloc, typename Number, bool stored, bool nodes = false, typename Stored = Number>
class CgGeometryLinesOperator final : public GeometryOperatorBase<3, GeomLinesParams<k, q, Number>, Number> {
  using Base = GeometryOperatorBase<3, GeomLinesParams<k, q, Number>, Number>;

 public:
  using Kernel = typename Base::Kernel;
  /// register-capped variants exist for BP5 and BP3 with the 1D tables and with stored geometry,
  /// and for geometry from nodes at BP5
  static constexpr bool capped_variants = colloc || q == k + 2;
  /// The register cap per (quadrature, degree) where it was measured faster on the H200 (3D fp64,
  /// 3e7 DoFs, docs/notebook/performance_history.md): BP5 four blocks per SM for k <= 6, BP3 four for k = 2, 3, 5 and
  /// three for k = 8; elsewhere (and for float) the compiler's choice. Stored geometry: the cap
  /// measured fastest together with the cells per block (stored_cap).
  static constexpr int default_min_blocks() {
    if constexpr (stored && capped_variants) return stored_cap().min_blocks;
    if constexpr (!capped_variants || nodes || stored || !std::is_same_v<Number, double>) return 1;
    if constexpr (colloc) return k <= 6 ? 4 : 1;
    if constexpr (k == 2 || k == 3 || k == 5) return 4;
    if constexpr (k == 8) return 3;
    return 1;
  }
  /// Cells per block where the tuning names none: with stored geometry the count measured fastest
  /// per (quadrature, degree, precision) on the H200 (the quarter annulus at 3e7 DoFs, counts 1,
  /// 2, 3, 4, 6, 8 and the layout's; docs/performance.md, "Curved geometry on FP64 tensor cores");
  /// 0 (the layout's count: about 256 threads) where that was fastest or within 3%, and for the
  /// other forms. Fewer cells than the layout's let more blocks be resident where the registers
  /// limit them (132-148 registers per thread at k >= 6: one block of 256 threads per SM). fp64
  /// with the stored data in fp32: the same sweep of its own (docs/performance.md, "Stored
  /// geometry in fp32 for the fp64 operators").
  static constexpr int default_cells() {
    if constexpr (!stored) return 0;
    constexpr bool fp64 = std::is_same_v<Number, double>;
    //                                k = 1  2  3  4  5  6  7  8
    constexpr int bp5_fp64[8] = {0, 3, 2, 1, 0, 1, 1, 1};
    constexpr int bp5_fp32[8] = {0, 0, 4, 6, 3, 0, 1, 1};
    constexpr int bp5_s32[8] = {0, 3, 2, 6, 0, 1, 1, 1};
    constexpr int bp3_fp64[8] = {0, 2, 1, 3, 1, 1, 1, 1};
    constexpr int bp3_fp32[8] = {0, 4, 6, 3, 0, 1, 1, 1};
    constexpr int bp3_s32[8] = {0, 2, 6, 3, 1, 1, 1, 1};
    if constexpr (!std::is_same_v<Stored, Number>) return colloc ? bp5_s32[k - 1] : bp3_s32[k - 1];
    if constexpr (colloc) return fp64 ? bp5_fp64[k - 1] : bp5_fp32[k - 1];
    else return fp64 ? bp3_fp64[k - 1] : bp3_fp32[k - 1];
  }
  /// Stored geometry: the register cap (resident blocks per SM the compiler must allow: 1, 3, 4)
  /// and the cells per block (0: default_cells) measured fastest together on the H200 (the
  /// quarter annulus at 3e7 DoFs, caps 1, 3, 4 with the default count and with 1, 2, 4 cells, one
  /// lease; docs/performance.md, "Register caps for the stored-geometry kernel"): the uncapped
  /// default where it was within 2% of the fastest, else the fastest cap with the default count
  /// where that was within 2%, else the fastest pair. k = 1: not measured, uncapped.
  struct StoredCap {
    int min_blocks = 1;
    int cells = 0;
  };
  static constexpr StoredCap stored_cap() {
    constexpr bool fp64 = std::is_same_v<Number, double>;
    //                                      k = 1  2  3  4  5  6  7  8
    constexpr int bp5_fp64[8] = {1, 1, 4, 4, 4, 4, 3, 3}, bp5_fp64_c[8] = {};
    constexpr int bp5_fp32[8] = {1, 1, 1, 1, 1, 4, 4, 4}, bp5_fp32_c[8] = {0, 0, 0, 0, 0, 0, 0, 4};
    constexpr int bp5_s32[8] = {1, 1, 1, 4, 4, 4, 3, 3}, bp5_s32_c[8] = {};
    constexpr int bp3_fp64[8] = {1, 4, 4, 4, 4, 3, 3, 3}, bp3_fp64_c[8] = {0, 0, 0, 4, 0, 0, 0, 2};
    constexpr int bp3_fp32[8] = {1, 1, 1, 1, 4, 4, 4, 4}, bp3_fp32_c[8] = {0, 0, 0, 0, 0, 0, 4, 2};
    constexpr int bp3_s32[8] = {1, 4, 4, 4, 4, 3, 3, 3}, bp3_s32_c[8] = {0, 0, 1, 0, 0, 0, 0, 0};
    constexpr int i = k - 1;
    if constexpr (!stored || !capped_variants) return {};
    else if constexpr (!std::is_same_v<Stored, Number>)
      return colloc ? StoredCap{bp5_s32[i], bp5_s32_c[i]} : StoredCap{bp3_s32[i], bp3_s32_c[i]};
    else if constexpr (colloc)
      return fp64 ? StoredCap{bp5_fp64[i], bp5_fp64_c[i]} : StoredCap{bp5_fp32[i], bp5_fp32_c[i]};
    else
      return fp64 ? StoredCap{bp3_fp64[i], bp3_fp64_c[i]} : StoredCap{bp3_fp32[i], bp3_fp32_c[i]};
  }
  /// Cells per block of this operator where the tuning names none: stored_cap's count, else
  /// default_cells.
  static constexpr int default_launch_cells() {
    constexpr int c = stored_cap().cells;
    return c > 0 ? c : default_cells();
  }
  /// Stored geometry: whether a block requests its cells' stored data into L2 before the gather,
  /// where the tuning does not say: where it was measured at least 3% faster on the H200 (the
  /// quarter annulus at 3e7 DoFs, both settings in one lease; docs/performance.md, "The stored
  /// data requested into L2"): fp64 BP5 k = 4 and BP3 k = 1, 2, 4; it was slower or within 3%
  /// elsewhere (fp32: up to 15% slower). fp64 with the stored data in fp32: on at k = 8 (BP5 and
  /// BP3, 3-5% faster), off elsewhere (docs/performance.md, "Stored geometry in fp32 for the fp64
  /// operators").
  static constexpr bool default_prefetch() {
    if constexpr (stored && !std::is_same_v<Stored, Number>) return k == 8;
    if constexpr (!stored || !std::is_same_v<Number, double>) return false;
    if constexpr (colloc) return k == 4;
    else return k == 1 || k == 2 || k == 4;
  }
  static Kernel pick_kernel(int min_blocks, bool trilinear) {
    if constexpr (nodes && !colloc) {
      // geometry from nodes at BP3 points: the compiler's register choice only
      (void)min_blocks;
      if (trilinear) return geom_lines_kernel<k, q, colloc, Number, 1, false, true, true>;
      return geom_lines_kernel<k, q, colloc, Number, 1, false, true>;
    } else if constexpr (nodes) {
      if (trilinear) {
        if (min_blocks == 3) return geom_lines_kernel<k, q, colloc, Number, 3, false, true, true>;
        if (min_blocks == 4) return geom_lines_kernel<k, q, colloc, Number, 4, false, true, true>;
        return geom_lines_kernel<k, q, colloc, Number, 1, false, true, true>;
      }
    }
    if constexpr (capped_variants) {
      if (min_blocks == 3) return geom_lines_kernel<k, q, colloc, Number, 3, stored, nodes, false, false, Stored>;
      if (min_blocks == 4) return geom_lines_kernel<k, q, colloc, Number, 4, stored, nodes, false, false, Stored>;
    }
    return geom_lines_kernel<k, q, colloc, Number, 1, stored, nodes, false, false, Stored>;
  }

  CgGeometryLinesOperator(const mesh::BoxMesh<3>& mesh, const fe::DofLayout<3>& dofs, const DeviceKernelKey& key,
                          const DeviceTuning& tuning, const Coefficient& coefficient,
                          const jit::DeviceSource& coefficient_source)
      : Base(key, dofs.n_local()) {
    (void)require_device("--variant cuda-core");
    const DeviceTuning t = checked_geometry_tuning(tuning);
    const int requested_cells = t.geometry_cells_per_block > 0 ? t.geometry_cells_per_block : default_launch_cells();
    this->min_blocks_ =
        capped_variants && t.geometry_min_blocks_per_sm > 0 ? t.geometry_min_blocks_per_sm : default_min_blocks();
    // geometry from nodes: the node field first (trilinear cells take the program without the
    // displacement)
    if constexpr (nodes) node_ = this->compute_nodes(mesh, dofs, key.quadrature, coefficient, coefficient_source);
    const bool trilinear = nodes && !node_.disp && !node_.disp2;
    // trilinear cells in fp64: three blocks per SM, measured faster at every degree (docs/performance.md);
    // at BP3 points the compiler's choice (the one kernel built)
    if (trilinear && std::is_same_v<Number, double> && t.geometry_min_blocks_per_sm == 0) this->min_blocks_ = 3;
    if (nodes && !colloc) this->min_blocks_ = 1;
    this->kernel_ = pick_kernel(this->min_blocks_, trilinear);
    // resident blocks per SM the registers allow: the padding search may use the shared memory of
    // the blocks that could not be resident anyway
    int by_registers = 0;
    const int launch_threads = geom_lines_cells(q, requested_cells) * q * q;
    TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&by_registers, this->kernel_, launch_threads, 0));
    const auto setup = make_geom_lines_setup<k, q, Number>(mesh, key.quadrature, requested_cells, true, by_registers,
                                                           stored, nodes, trilinear);
    const auto [s, ds] = this->upload_tables(setup);
    auto& p = this->params_;
    p = setup.params(s, ds);
    p.dirichlet = fe::dirichlet_bits(dofs.dirichlet_faces());
    if constexpr (stored) {
      if constexpr (std::is_same_v<Stored, Number>)
        p.coef = this->compute_stored(mesh, dofs, key.quadrature, coefficient, coefficient_source);
      else
        p.coef_fp32 = this->compute_stored_fp32(mesh, dofs, key.quadrature, coefficient, coefficient_source);
      p.prefetch = t.geometry_prefetch != 0 ? t.geometry_prefetch > 0 : default_prefetch();
      this->prefetch_ = p.prefetch ? "on" : "off";
    } else if constexpr (!nodes) {
      if (key.general_field) this->box_tables_setup(mesh, dofs);
    }
    if constexpr (nodes) {
      set_node_field(p, node_);
      this->geometry_name_ = p.disp2 ? "quadratic nodes" : p.disp ? "nodes" : "trilinear vertices";
      this->keep_for_diagonal(mesh, dofs, coefficient, coefficient_source);
    }
    const GeomLinesLayout& L = p.layout;
    this->threads_ = L.threads;
    this->blocks_ = (p.total_cells + L.cells - 1) / L.cells;
    this->smem_ = L.smem_elements() * int(sizeof(Number));
    this->program_ = "lines";
    this->cells_per_block_ = L.cells;
    this->prepare_launch("general-geometry lines kernel");
    const auto w = geom_lines_cell_work(k, q, colloc, stored, nodes, trilinear, nodes && node_.disp2);
    const double cells = double(p.total_cells);
    this->flops_ = w.flops * cells;
    this->shared_ = w.shared_values * cells * sizeof(Number);
    this->dram_ = this->dram_model();
  }

 private:
  DeviceNodeGeometry<Number> node_;
};

template <int dim>
using GeomFactory = std::unique_ptr<DeviceOperator> (*)(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                        const DeviceKernelKey&, const DeviceTuning&,
                                                        const Coefficient&, const jit::DeviceSource&);

template <int dim, int k, fe::QuadratureKind kind, typename Number, bool stored, bool nodes = false,
          typename Stored = Number>
std::unique_ptr<DeviceOperator> build_geom(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                           const DeviceKernelKey& key, const DeviceTuning& tuning,
                                           const Coefficient& coefficient, const jit::DeviceSource& source) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == fe::QuadratureKind::gll_k1;
  if constexpr (dim == 3)
    return std::make_unique<CgGeometryLinesOperator<k, q, colloc, Number, stored, nodes, Stored>>(
        mesh, dofs, key, tuning, coefficient, source);
  else
    return std::make_unique<CgGeometryOperator<dim, k, q, colloc, Number, stored, Stored, nodes>>(
        mesh, dofs, key, tuning, coefficient, source);
}

/// The factories of one degree k: column[form][quadrature kind], form 0 the 1D tables (every
/// kind), 1 stored geometry (BP3: Gauss k+2, BP5: Gauss-Lobatto k+1), 2 geometry from nodes (BP3
/// and BP5); null where no kernel exists. Defined in operators/cuda_core/geometry_degree.cuh and
/// instantiated there one degree and number type per compilation unit (generated from
/// geometry_degree.cu.in): each unit is a module of its own, which the driver loads (and
/// decompresses) when one of its kernels is first used, so a run loads the kernels of its degrees
/// only.
template <int dim>
using GeomColumn = std::array<std::array<GeomFactory<dim>, 3>, 3>;
template <int dim, typename Number, int k>
GeomColumn<dim> geom_column();
/// The fp64 operators of degree k with their stored geometry rounded to fp32: [0] BP5 (Gauss-Lobatto
/// k+1), [1] BP3 (Gauss k+2); as geom_column.
template <int dim>
using GeomStored32Column = std::array<GeomFactory<dim>, 2>;
template <int dim, int k>
GeomStored32Column<dim> geom_stored32_column();

/// table[form][quadrature kind][degree - 1] of geom_column's entries.
template <int dim>
struct GeomTable {
  std::array<std::array<std::array<GeomFactory<dim>, 8>, 3>, 3> f{};
};

template <int dim, typename Number, int... K>
GeomTable<dim> make_geom_table(std::integer_sequence<int, K...>) {
  const std::array<GeomColumn<dim>, sizeof...(K)> columns{geom_column<dim, Number, K + 1>()...};
  GeomTable<dim> t;
  for (std::size_t k = 0; k < columns.size(); ++k)
    for (int form = 0; form < 3; ++form)
      for (int kind = 0; kind < 3; ++kind) t.f[form][kind][k] = columns[k][form][kind];
  return t;
}

/// The operator for a supported key (see cuda_core_supports) of precision Number: stored geometry
/// for key.general_field, else the deformed box's 1D tables; nullptr where no kernel exists.
template <int dim, typename Number>
std::unique_ptr<DeviceOperator> make_geom_operator_typed(const mesh::BoxMesh<dim>& mesh,
                                                         const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                         const DeviceTuning& tuning, const Coefficient& coefficient,
                                                         const jit::DeviceSource& coefficient_source) {
  static const GeomTable<dim> table = make_geom_table<dim, Number>(std::make_integer_sequence<int, 8>{});
  const int form = key.geometry_form == GeometryForm::mf && key.general_field ? 2
                   : !key.general_field || key.box_tables                   ? 0
                                                                            : 1;
  const auto f = table.f[form][int(key.quadrature)][key.degree - 1];
  return f ? f(mesh, dofs, key, tuning, coefficient, coefficient_source) : nullptr;
}

/// The fp64 operator with its stored geometry rounded to fp32 (GeometryStorage::fp32) for a
/// supported key (general_field, pa, BP3 or BP5); nullptr where no kernel exists.
template <int dim, int... K>
std::unique_ptr<DeviceOperator> make_geom_stored_fp32_operator(const mesh::BoxMesh<dim>& mesh,
                                                               const fe::DofLayout<dim>& dofs,
                                                               const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                               const Coefficient& coefficient,
                                                               const jit::DeviceSource& coefficient_source,
                                                               std::integer_sequence<int, K...>) {
  using fe::QuadratureKind;
  static const std::array<GeomStored32Column<dim>, sizeof...(K)> table{geom_stored32_column<dim, K + 1>()...};
  if (!key.general_field || key.geometry_form == GeometryForm::mf || key.degree < 1 || key.degree > 8) return nullptr;
  const int row = key.quadrature == QuadratureKind::gll_k1 ? 0 : key.quadrature == QuadratureKind::gauss_k2 ? 1 : -1;
  if (row < 0) return nullptr;
  return table[key.degree - 1][row](mesh, dofs, key, tuning, coefficient, coefficient_source);
}

}  // namespace tcfem::operators::cuda_core
