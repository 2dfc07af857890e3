// The cuda-core kernel family (registered in operators/device/registry.cu): degree-templated sum
// factorization on CUDA cores for the Cartesian Laplacian,
//   cg: tile-streaming kernels (operators/cuda_core/blocks.h), 3D and 2D, fp64 and fp32, degrees 1..8;
//   dg: cell-centric SIPG kernels (operators/cuda_core/dg_blocks.h), 3D and 2D, fp64 and fp32, degrees 1..8.
// Runtime (dim, degree, disc, precision) is mapped to a compiled specialization through a table
// built from the degree list; everything else is answered with nullptr (the registry reports it).
//
// Work distribution: one wave of resident blocks takes work items (chunks of cell layers of one
// tile) from a queue counter. Tuning (operators/tuning.h): about `cuda_core_items_per_worker`
// items per worker (default 8) and `cuda_core_waves` waves of resident blocks (default 1). cg
// zeroes dst with a memset before the kernel adds the shared nodes with atomics.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>

#include "core/device.h"
#include "core/device_buffer.h"
#include "operators/cuda_core/kernels.cuh"
#include "operators/cuda_core/setup.h"
#include "operators/device/variants.h"

namespace tcfem::operators {
namespace {

using namespace cuda_core;

/// The resolved work-distribution choices of a tuning.
struct WorkSplit {
  double items_per_worker = 8.0, waves = 1.0;
};
WorkSplit work_split(const DeviceTuning& t) {
  WorkSplit w;
  if (t.cuda_core_items_per_worker > 0) w.items_per_worker = t.cuda_core_items_per_worker;
  if (t.cuda_core_waves > 0) w.waves = t.cuda_core_waves;
  return w;
}

/// Grid and item size: `resident` workers per wave, `warps_per_block` workers per block.
struct Launch {
  int blocks = 1, chunk = 1;
};
Launch plan_launch(std::int64_t tiles, int layers, std::int64_t resident, int warps_per_block, const WorkSplit& split) {
  Launch l;
  const std::int64_t workers = std::max<std::int64_t>(1, std::int64_t(split.waves * double(resident)));
  l.chunk = choose_chunk(tiles, layers, workers, split.items_per_worker);
  const std::int64_t items = count_items(tiles, layers, l.chunk);
  l.blocks = int(std::max<std::int64_t>(1, (std::min(workers, items) + warps_per_block - 1) / warps_per_block));
  return l;
}

/// The resolved work split of an operator, for reports.
KernelChoices split_choices(const WorkSplit& split, int chunk, std::int64_t blocks) {
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  return {{"items_per_worker", num(split.items_per_worker)},
          {"waves", num(split.waves)},
          {"layers_per_item", std::to_string(chunk)},
          {"blocks", std::to_string(blocks)}};
}

/// The launches of an apply split for the overlap with a ghost exchange: [0] the interior region,
/// then the regions around it (split_regions), each with its own work items and queue counter.
template <class Params>
struct SplitLaunches {
  struct One {
    Params params;
    std::int64_t blocks = 1;
  };
  std::vector<One> launches;
  mutable DeviceBuffer<unsigned> queues;

  /// False (and nothing planned) where no tile and layer lies inside `interior`.
  bool plan(const Params& whole, const CellRange& interior, int T, int dim, const int cells[3], std::int64_t resident,
            int warps_per_block, const WorkSplit& split) {
    launches.clear();
    const auto r = split_regions(whole, T, dim, cells, interior.lo, interior.hi);
    if (r.interior.empty()) return false;
    std::vector<WorkRegion> all{r.interior};
    all.insert(all.end(), r.rest.begin(), r.rest.end());
    queues = DeviceBuffer<unsigned>(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto l = plan_launch(all[i].n_tiles(), all[i].n_layers(), resident, warps_per_block, split);
      One o{whole, l.blocks};
      o.params.region = all[i];
      o.params.chunk = l.chunk;
      o.params.queue = queues.data() + i;
      launches.push_back(o);
    }
    return true;
  }
  bool planned() const { return !launches.empty(); }
  /// The interior launch (the queue counters of every launch reset first).
  template <class Launch>
  void interior(Launch&& launch) const {
    TCFEM_CUDA_CHECK(cudaMemsetAsync(queues.data(), 0, launches.size() * sizeof(unsigned)));
    launch(launches[0].params, launches[0].blocks);
  }
  template <class Launch>
  void rest(Launch&& launch) const {
    for (std::size_t i = 1; i < launches.size(); ++i) launch(launches[i].params, launches[i].blocks);
  }
};

// ---- work models -------------------------------------------------------------------------------

/// Work of one apply as the kernel performs it (active lanes; phantom cells of partial tiles included).
struct Work {
  double flops = 0, shared_values = 0;
};

/// FLOPs of an even-odd product and join (the split counted separately).
constexpr double product_flops(int n) {
  const int m = n / 2, ne = n - m;
  return 2.0 * (ne * ne + m * m);
}
constexpr double split_flops(int n) { return 2.0 * (n / 2); }
constexpr double join_flops(int n) { return 2.0 * (n / 2); }

template <int dim, int k, typename Number>
Work cg_work(const CgParams<dim, k, Number>& p) {
  constexpr int n = k + 1;
  const double x_item = split_flops(n) + 2 * (product_flops(n) + join_flops(n)) + 2;
  const double y_item = 2 * split_flops(n) + 3 * product_flops(n) + 2 * join_flops(n) + 2;
  const double column = 2 * split_flops(n) + 2 * product_flops(n) + join_flops(n) + 1;
  Work w;
  const double segments = double(p.n_items());
  const double layers = double(p.n_tiles()) * p.layers;  // (tile, layer) units
  const double planes = layers * k + segments;            // k per layer + one per item prologue
  if constexpr (dim == 3) {
    constexpr auto L = Cg3Program<k, Number>::L;
    const double items_per_plane = double(L.T) * L.N;  // per line phase
    const double columns = double(L.N) * L.N;
    w.flops = planes * items_per_plane * (x_item + y_item) + layers * columns * column;
    // shared values: x reads n, writes 2k (+2 on the last segment); y reads 2n, writes 2k (+2);
    // column phase reads 2k, puts k; each prologue puts 1 and reads 2
    const double line_io = items_per_plane * (3.0 * n + 4.0 * k) + 4.0 * L.N;
    w.shared_values = planes * line_io + layers * columns * 3.0 * k + segments * columns * 3.0;
  } else {
    constexpr auto L = Cg2Program<k, Number>::L;
    const double items_per_plane = L.T;
    const double columns = L.N;
    w.flops = planes * items_per_plane * x_item + layers * columns * column;
    const double line_io = items_per_plane * (n + 2.0 * k) + 2.0;
    w.shared_values = planes * line_io + layers * columns * 3.0 * k + segments * columns * 3.0;
  }
  return w;
}

// ---- operators ---------------------------------------------------------------------------------

template <typename Kernel>
int resident_blocks(Kernel kernel, int threads, int smem_bytes, const DeviceInfo& info) {
  if (smem_bytes > 48 * 1024)
    TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  // shared memory over L1: the occupancy computed here is what the launch gets
  TCFEM_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  int per_sm = 0;
  TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem_bytes));
  if (per_sm < 1)
    throw InputError("cuda-core: the kernel does not fit on the device (" + std::to_string(smem_bytes) +
                     " bytes of shared memory, " + std::to_string(threads) + " threads)");
  return per_sm * info.sm_count;
}

/// Cartesian cg Laplacian: memset + one tile-streaming kernel.
template <int dim, int k, typename Number>
class CgCartesianOperator final : public DeviceOperatorBase {
 public:
  CgCartesianOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                      const DeviceTuning& tuning)
      : DeviceOperatorBase(key, dofs.n_local()), split_(work_split(tuning)) {
    const DeviceInfo info = require_device("--variant cuda-core");
    if constexpr (dim == 3) {
      using Prog = Cg3Program<k, Number>;
      threads_ = Prog::L.threads;
      smem_ = Prog::smem_elements() * int(sizeof(Number));
      const int resident = resident_blocks(cg3_kernel<k, Number>, threads_, smem_, info);
      auto p = make_cg_params<3, k, Number>(mesh, 1);
      const auto launch = plan_launch(p.n_tiles(), p.layers, resident, 1, split_);
      p = make_cg_params<3, k, Number>(mesh, launch.chunk);
      params_ = p;
      blocks_ = launch.blocks;
      chunk_ = launch.chunk;
      workers_ = resident;
      tile_ = Prog::L.T;
    } else {
      using Prog = Cg2Program<k, Number>;
      threads_ = Prog::L.warps * warp_lanes;
      smem_ = Prog::smem_elements() * int(sizeof(Number));
      const int resident = resident_blocks(cg2_kernel<k, Number>, threads_, smem_, info);
      auto p = make_cg_params<2, k, Number>(mesh, 1);
      const auto launch = plan_launch(p.n_tiles(), p.layers, std::int64_t(resident) * Prog::L.warps, Prog::L.warps, split_);
      p = make_cg_params<2, k, Number>(mesh, launch.chunk);
      params_ = p;
      blocks_ = launch.blocks;
      chunk_ = launch.chunk;
      workers_ = std::int64_t(resident) * Prog::L.warps;
      warps_per_block_ = Prog::L.warps;
      tile_ = Prog::L.T;
    }
    for (int d = 0; d < dim; ++d) cells_[d] = mesh.n_cells()[d];
    params_.queue = queue_.data();
    const auto w = cg_work(params_);
    flops_ = w.flops;
    shared_ = w.shared_values * sizeof(Number);
    // src read once, dst zeroed (memset) and written once; the atomics resolve in L2
    dram_ = 3.0 * double(n_local_) * sizeof(Number);
  }
  void vmult(void* dst, const void* src) const override {
    auto* d = static_cast<Number*>(dst);
    TCFEM_CUDA_CHECK(cudaMemsetAsync(queue_.data(), 0, sizeof(unsigned)));
    TCFEM_CUDA_CHECK(cudaMemsetAsync(d, 0, n_local_ * sizeof(Number)));
    launch(params_, blocks_, static_cast<const Number*>(src), d);
  }
  bool split_apply(const CellRange& interior) override {
    return parts_.plan(params_, interior, tile_, dim, cells_, workers_, warps_per_block_, split_);
  }
  bool is_split() const override { return parts_.planned(); }
  void vmult_interior(void* dst, const void* src) const override {
    if (!parts_.planned()) DeviceOperator::vmult_interior(dst, src);
    auto* d = static_cast<Number*>(dst);
    TCFEM_CUDA_CHECK(cudaMemsetAsync(d, 0, n_local_ * sizeof(Number)));
    parts_.interior([&](const auto& p, std::int64_t blocks) { launch(p, blocks, static_cast<const Number*>(src), d); });
  }
  void vmult_rest(void* dst, const void* src) const override {
    if (!parts_.planned()) DeviceOperator::vmult_rest(dst, src);
    parts_.rest([&](const auto& p, std::int64_t blocks) {
      launch(p, blocks, static_cast<const Number*>(src), static_cast<Number*>(dst));
    });
  }
  std::size_t value_size() const override { return sizeof(Number); }
  std::size_t device_bytes() const override { return 0; }
  KernelChoices choices() const override {
    auto c = split_choices(split_, chunk_, blocks_);
    if (parts_.planned()) c.push_back({"split_launches", std::to_string(parts_.launches.size())});
    return c;
  }

 private:
  void launch(const CgParams<dim, k, Number>& p, std::int64_t blocks, const Number* s, Number* d) const {
    if constexpr (dim == 3)
      cg3_kernel<k, Number><<<static_cast<unsigned>(blocks), threads_, smem_>>>(p, s, d);
    else
      cg2_kernel<k, Number><<<static_cast<unsigned>(blocks), threads_, smem_>>>(p, s, d);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  mutable DeviceBuffer<unsigned> queue_{1};  // work-item counter, reset before each launch
  CgParams<dim, k, Number> params_{};
  WorkSplit split_;
  SplitLaunches<CgParams<dim, k, Number>> parts_;
  std::int64_t blocks_ = 0, workers_ = 1;
  int threads_ = 32, smem_ = 0, chunk_ = 1, tile_ = 1, warps_per_block_ = 1;
  int cells_[3] = {1, 1, 1};
};

template <int dim, int k, typename Number>
Work dg_work(const DgParams<dim, k, Number>& p) {
  constexpr int n = k + 1;
  const double product = product_flops(n) + join_flops(n);  // one even-odd product and its join
  const double face = 4.0 * n;                              // value/derivative at both ends
  const double line = product + 4.0 * n + 8.0;              // S u + the two rank-2 face updates
  Work w;
  const double layers = double(p.layers);
  if constexpr (dim == 3) {
    constexpr auto L = Dg3Program<k, Number>::L;
    const double tiles = double(p.n_tiles());
    const double columns = double(L.NS) * L.NS;
    const double column = split_flops(n) + 2 * face + product + line;
    const double halo = n * face + 2 * (split_flops(n) + product);
    const double x_main = face + 2 * split_flops(n) + 2 * product + line + n;
    const double x_row = face + split_flops(n) + product;
    const double y_item = face + 2 * split_flops(n) + product + line + n;
    const double x_items = double(L.T) * L.NS * n, x_rows = double(L.T) * 4 * n, y_items = double(L.T) * L.NS * n;
    w.flops = tiles * layers * (columns * column + 4.0 * L.NS * halo + x_items * x_main + x_rows * x_row + y_items * y_item);
    // shared values: column 2n writes; halo 2n writes; x 2n reads + 2n writes (+2 face slots at the
    // tile edges); y 2n reads (+2 at the edges)
    w.shared_values = tiles * layers *
                      (columns * 2 * n + 4.0 * L.NS * 2 * n + x_items * 4 * n + x_rows * 2 * n + 4.0 * L.NS * n +
                       y_items * 2 * n + 4.0 * L.NS * n);
  } else {
    constexpr auto L = Dg2Program<k, Number>::L;
    const double tiles = double(p.tiles[0]);
    const double column = split_flops(n) + 2 * face + product + line;
    const double halo = face;
    const double x_item = face + 2 * split_flops(n) + product + line + n;
    const double x_items = double(L.T) * n;
    w.flops = tiles * layers * (L.NS * column + 2.0 * n * halo + x_items * x_item + 2.0 * n * 4.0 * n);
    w.shared_values = tiles * layers * (L.NS * 2.0 * n + 2.0 * n * 2 + x_items * 2 * n + 2.0 * n * 2 * n);
  }
  return w;
}

/// Cartesian SIPG Laplacian: one cell-centric streaming kernel, each cell writes its own DoFs.
template <int dim, int k, typename Number>
class DgCartesianOperator final : public DeviceOperatorBase {
 public:
  DgCartesianOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                      const DeviceTuning& tuning)
      : DeviceOperatorBase(key, dofs.n_local()), split_(work_split(tuning)) {
    const DeviceInfo info = require_device("--variant cuda-core");
    if constexpr (dim == 3) {
      using Prog = Dg3Program<k, Number>;
      threads_ = Prog::L.threads;
      smem_ = Prog::smem_elements() * int(sizeof(Number));
      const int resident = resident_blocks(dg3_kernel<k, Number>, threads_, smem_, info);
      auto p = make_dg_params<3, k, Number>(mesh, 1);
      const auto launch = plan_launch(p.n_tiles(), p.layers, resident, 1, split_);
      p = make_dg_params<3, k, Number>(mesh, launch.chunk);
      params_ = p;
      blocks_ = launch.blocks;
      chunk_ = launch.chunk;
      halo_reads_ = 4.0 / Prog::L.T;  // face data of the cells around a tile, per cell of the tile
      workers_ = resident;
      tile_ = Prog::L.T;
    } else {
      using Prog = Dg2Program<k, Number>;
      threads_ = Prog::L.warps * warp_lanes;
      smem_ = Prog::smem_elements() * int(sizeof(Number));
      const int resident = resident_blocks(dg2_kernel<k, Number>, threads_, smem_, info);
      auto p = make_dg_params<2, k, Number>(mesh, 1);
      const auto launch = plan_launch(p.n_tiles(), p.layers, std::int64_t(resident) * Prog::L.warps, Prog::L.warps, split_);
      p = make_dg_params<2, k, Number>(mesh, launch.chunk);
      params_ = p;
      blocks_ = launch.blocks;
      chunk_ = launch.chunk;
      halo_reads_ = 2.0 / Prog::L.T / (k + 1);
      workers_ = std::int64_t(resident) * Prog::L.warps;
      warps_per_block_ = Prog::L.warps;
      tile_ = Prog::L.T;
    }
    for (int d = 0; d < dim; ++d) cells_[d] = mesh.n_cells()[d];
    params_.queue = queue_.data();
    const auto w = dg_work(params_);
    flops_ = w.flops;
    shared_ = w.shared_values * sizeof(Number);
    // src read once and dst written once (the halo reads, halo_reads_ of the vector, hit L2)
    dram_ = 2.0 * double(n_local_) * sizeof(Number);
  }
  void vmult(void* dst, const void* src) const override {
    TCFEM_CUDA_CHECK(cudaMemsetAsync(queue_.data(), 0, sizeof(unsigned)));
    launch(params_, blocks_, static_cast<const Number*>(src), static_cast<Number*>(dst));
  }
  bool split_apply(const CellRange& interior) override {
    return parts_.plan(params_, interior, tile_, dim, cells_, workers_, warps_per_block_, split_);
  }
  bool is_split() const override { return parts_.planned(); }
  // each cell writes its own DoFs: the parts write disjoint entries (no zeroing)
  void vmult_interior(void* dst, const void* src) const override {
    if (!parts_.planned()) DeviceOperator::vmult_interior(dst, src);
    parts_.interior([&](const auto& p, std::int64_t blocks) {
      launch(p, blocks, static_cast<const Number*>(src), static_cast<Number*>(dst));
    });
  }
  void vmult_rest(void* dst, const void* src) const override {
    if (!parts_.planned()) DeviceOperator::vmult_rest(dst, src);
    parts_.rest([&](const auto& p, std::int64_t blocks) {
      launch(p, blocks, static_cast<const Number*>(src), static_cast<Number*>(dst));
    });
  }
  std::size_t value_size() const override { return sizeof(Number); }
  std::size_t device_bytes() const override { return 0; }
  KernelChoices choices() const override {
    auto c = split_choices(split_, chunk_, blocks_);
    if (parts_.planned()) c.push_back({"split_launches", std::to_string(parts_.launches.size())});
    return c;
  }

 private:
  void launch(const DgParams<dim, k, Number>& p, std::int64_t blocks, const Number* s, Number* d) const {
    if constexpr (dim == 3)
      dg3_kernel<k, Number><<<static_cast<unsigned>(blocks), threads_, smem_>>>(p, s, d);
    else
      dg2_kernel<k, Number><<<static_cast<unsigned>(blocks), threads_, smem_>>>(p, s, d);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
  mutable DeviceBuffer<unsigned> queue_{1};  // work-item counter, reset before each launch
  DgParams<dim, k, Number> params_{};
  WorkSplit split_;
  SplitLaunches<DgParams<dim, k, Number>> parts_;
  std::int64_t blocks_ = 0, workers_ = 1;
  int threads_ = 32, smem_ = 0, chunk_ = 1, tile_ = 1, warps_per_block_ = 1;
  int cells_[3] = {1, 1, 1};
  double halo_reads_ = 0;
};

// ---- dispatch table ----------------------------------------------------------------------------

template <int dim>
using Factory = std::unique_ptr<DeviceOperator> (*)(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                                    const DeviceKernelKey&, const DeviceTuning&);

template <int dim, int k, typename Number, fe::Disc disc>
std::unique_ptr<DeviceOperator> build(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                      const DeviceKernelKey& key, const DeviceTuning& tuning) {
  if constexpr (disc == fe::Disc::cg)
    return std::make_unique<CgCartesianOperator<dim, k, Number>>(mesh, dofs, key, tuning);
  else
    return std::make_unique<DgCartesianOperator<dim, k, Number>>(mesh, dofs, key, tuning);
}

inline constexpr int max_degree = 8;

/// table[disc][fp32][degree - 1]
template <int dim>
struct Table {
  std::array<std::array<std::array<Factory<dim>, max_degree>, 2>, 2> f{};
};

template <int dim, int... K>
Table<dim> make_table(std::integer_sequence<int, K...>) {
  Table<dim> t;
  ((t.f[0][0][K] = &build<dim, K + 1, double, fe::Disc::cg>), ...);
  ((t.f[0][1][K] = &build<dim, K + 1, float, fe::Disc::cg>), ...);
  ((t.f[1][0][K] = &build<dim, K + 1, double, fe::Disc::dg>), ...);
  ((t.f[1][1][K] = &build<dim, K + 1, float, fe::Disc::dg>), ...);
  return t;
}

template <int dim>
const Table<dim>& table() {
  static const Table<dim> t = make_table<dim>(std::make_integer_sequence<int, max_degree>{});
  return t;
}

}  // namespace

bool cuda_core_supports(const DeviceKernelKey& key) {
  using precision::Precision;
  // Cartesian: cg and dg; general geometry: cg, from the deformed box's 1D tables (any quadrature)
  // or, for general_field keys (any map or node field, variable coefficients), from stored cell
  // data (BP3 and BP5 quadrature)
  // matrix-free (geometry from the nodes): cg BP3 and BP5
  // dg (SIPG) on any geometry: stored cell and face data (general_field, BP3 and BP5)
  const bool stored_quadrature =
      key.quadrature == fe::QuadratureKind::gauss_k2 || key.quadrature == fe::QuadratureKind::gll_k1;
  const bool cg_ok = key.disc == fe::Disc::cg && (!key.general_field || stored_quadrature) &&
                     (key.geometry_form != GeometryForm::mf ||
                      (key.general_field && stored_quadrature));
  const bool dg_ok = key.disc == fe::Disc::dg && key.general_field && stored_quadrature &&
                     key.geometry_form != GeometryForm::mf && !fp32_stored_fp64(key);
  // fp32 stored geometry of fp64 operators: cg, stored geometry (pa, or auto, which then resolves to pa)
  const bool storage_ok = !fp32_stored_fp64(key) || (key.general_field && key.geometry_form != GeometryForm::mf);
  const bool general_ok = cg_ok || dg_ok;
  return key.variant == Variant::cuda_core && (key.dim == 2 || key.dim == 3) && key.degree >= 1 &&
         key.degree <= max_degree && (key.cartesian || general_ok) && storage_ok && key.form == Form::laplace &&
         (key.precision == Precision::fp64 || key.precision == Precision::fp32);
}

std::string describe_cuda_core() {
  return "cuda-core: dim 2-3, degree 1-8, cg/dg cartesian, cg general geometry (deformed box: bp3/bp5/gauss k+1; "
         "any map, mesh or coefficient with stored geometry (pa, in fp64 also stored in fp32): bp3/bp5, or geometry from "
         "the nodes (mf): bp3/bp5), "
         "dg general geometry (any map, mesh or coefficient, stored cell and face data (pa): bp3/bp5), laplace, "
         "fp64/fp32";
}

template <int dim>
std::unique_ptr<DeviceOperator> make_cuda_core_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                        const DeviceKernelKey& key, const DeviceTuning& tuning,
                                                        const Coefficient& coefficient,
                                                        const jit::DeviceSource& coefficient_source) {
  if (!cuda_core_supports(key) || key.dim != dim) return nullptr;
  if (dofs.degree() != key.degree || dofs.disc() != key.disc) return nullptr;
  if (!key.cartesian) {
    // one process owning the whole box (the kernels index the global lattice)
    if (mesh.partition().owned.n_cells() != mesh.n_global_cells() ||
        mesh.partition().ghosted.n_cells() != mesh.n_global_cells())
      return nullptr;
    if (!key.general_field) {
      // the geometry is rebuilt from 1D tables of the built-in map: Cartesian or deformed unit boxes only
      if (mesh.geometry() == mesh::GeometryKind::mapped || coefficient) return nullptr;
      for (int d = 0; d < dim; ++d)
        if (mesh.domain().lower[d] != 0.0 || mesh.domain().upper[d] != 1.0) return nullptr;
    }
    DeviceKernelKey resolved = key;  // the operator reports the form it runs
    resolved.geometry_form = resolve_geometry_form(key, mesh.geometry());
    if (key.disc == fe::Disc::dg) {
      if (key.precision == precision::Precision::fp64)
        return make_cuda_core_dg_geometry_operator<dim, double>(mesh, dofs, resolved, tuning, coefficient,
                                                                coefficient_source);
      return make_cuda_core_dg_geometry_operator<dim, float>(mesh, dofs, resolved, tuning, coefficient,
                                                             coefficient_source);
    }
    if (fp32_stored_fp64(resolved))
      return make_cuda_core_geometry_stored_fp32_operator<dim>(mesh, dofs, resolved, tuning, coefficient,
                                                               coefficient_source);
    if (key.precision == precision::Precision::fp64)
      return make_cuda_core_geometry_operator<dim, double>(mesh, dofs, resolved, tuning, coefficient, coefficient_source);
    return make_cuda_core_geometry_operator<dim, float>(mesh, dofs, resolved, tuning, coefficient, coefficient_source);
  }
  if (mesh.geometry() != mesh::GeometryKind::cartesian) return nullptr;
  const int disc = key.disc == fe::Disc::dg ? 1 : 0;
  const int fp32 = key.precision == precision::Precision::fp32 ? 1 : 0;
  const auto f = table<dim>().f[disc][fp32][key.degree - 1];
  return f ? f(mesh, dofs, key, tuning) : nullptr;
}

template std::unique_ptr<DeviceOperator> make_cuda_core_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                    const DeviceKernelKey&, const DeviceTuning&,
                                                                    const Coefficient&, const jit::DeviceSource&);
template std::unique_ptr<DeviceOperator> make_cuda_core_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                    const DeviceKernelKey&, const DeviceTuning&,
                                                                    const Coefficient&, const jit::DeviceSource&);

}  // namespace tcfem::operators
