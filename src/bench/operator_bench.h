#pragma once
// One operator-apply measurement of `tcfem bench`: builds the mesh, DoFs and operator of a case,
// applies it `warmup` times, then `repetitions` times, each apply timed on its own (CUDA events on
// the device, std::chrono on the CPU), and checks one more apply against the fp64 reference
// operator (the generic fp64 device kernel, or the CPU fp64 operator). Plain C++: the device part
// lives in operator_bench.cu, with a stub in builds without CUDA.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/communicator.h"
#include "core/device_exchange.h"
#include "fe/dof_layout.h"
#include "mesh/structured_block.h"
#include "operators/device/device_operator.h"
#include "precision/precision.h"

namespace tcfem::bench {

enum class Backend { cpu, cuda };
std::string_view to_string(Backend backend);

/// A mesh file's structured block the bench runs on (`--geometry mesh`), its cells refined
/// uniformly (each split into m^dim) until a case reaches its target DoFs.
struct BenchBlock {
  std::string file;
  std::shared_ptr<const mesh::StructuredBlock<2>> block2;  ///< dim 2
  std::shared_ptr<const mesh::StructuredBlock<3>> block3;  ///< dim 3
  std::vector<int> cells() const;
};

/// The maps of the bench's general geometry (bench_mesh in bench/bench_common.h).
enum class BenchMap { annulus, trilinear, quadratic };

/// One measurement. The mesh is the unit box (key.cartesian), its deformed image, a mapped box
/// (key.general_field: the quarter annulus, the trilinear or quadratic map, or a mesh file's block); the
/// operator is always the Laplacian.
struct BenchCase {
  Backend backend = Backend::cpu;
  operators::DeviceKernelKey key;
  operators::DeviceTuning tuning;  ///< kernel choices (operators/tuning.h; zero fields: the defaults)
  double target_dofs = 1e5;  ///< cells per direction are chosen so that n_dofs >= target_dofs
  int warmup = 3;
  int repetitions = 20;
  bool check = true;  ///< compare one apply with the fp64 reference (skipped where the case is the reference)
  std::uint64_t seed = 1;
  /// key.general_field: the map of bench_mesh (the quarter annulus, or a map with cells of geometry order 1 or 2)
  BenchMap map = BenchMap::annulus;
  /// key.general_field: a mesh file's block instead of a map (null: a map)
  std::shared_ptr<const BenchBlock> block;
  /// The ranks the box is cut over (mesh::Partition::distributed: one sub-box per rank, each rank's
  /// operator on its ghosted sub-box, the ghost exchange in every apply); serial: one process.
  /// Collective over comm: every rank runs the case.
  Communicator comm;
  /// --backend cuda on several ranks: the exchange's path and whether it runs beside the interior cells.
  ExchangeOptions exchange;
};

/// The problem size of a case: the smallest box of n^dim cells with at least the target DoFs, or
/// the smallest uniform refinement m of a mesh file's block (its cells times m per direction).
struct BenchSize {
  int cells_per_direction = 1;  ///< n; a block: its refinement m
  std::vector<int> cells;       ///< cells per direction
  double n_cells = 0.0;
  double n_dofs = 0.0;
};
BenchSize size_for_target(int dim, int degree, fe::Disc disc, double target_dofs);
/// The size of case c: size_for_target, or the block's refinement.
BenchSize size_for_case(const BenchCase& c);

/// The process grid of a case on c.comm's ranks (InputError where a rank would own no cell).
std::vector<int> process_grid_for_case(const BenchCase& c);

/// Memory a case needs (per rank on several ranks), estimated before anything is allocated.
struct MemoryEstimate {
  double host_bytes = 0.0;
  double device_bytes = 0.0;  ///< 0 on the CPU backend
};
MemoryEstimate estimate_memory(const BenchCase& c);

/// Whether the case is compared with the fp64 reference (every case but the reference itself).
bool needs_check(const BenchCase& c);

/// The CPU backend runs MatrixFreeOperator: the generic variant in fp64 and fp32.
bool cpu_supported(const operators::DeviceKernelKey& key);

/// Largest relative 2-norm difference to the fp64 reference a precision may show
/// (fp64 1e-12; fp32, tf32x3, fp16ec, bf16x3 1e-5; fp16, bf16 1e-2).
double check_tolerance(precision::Precision precision);
/// The tolerance of a key: its precision's, and 1e-6 for an fp64 key with fp32 stored geometry
/// (the rounding of the stored data, 6e-8 relative per value).
double check_tolerance(const operators::DeviceKernelKey& key);
/// The tolerance of an fp64 key whose geometry is recomputed from the nodes (mf) against the
/// reference's stored geometry: check_tolerance(key), or more on fine meshes, where both operators
/// differ by the rounding of the node coordinates (eps |x|) differentiated over a cell (k^2 / h):
/// eps k^2 n X / L with n the most cells along a direction, X the coordinates' largest magnitude
/// and L their largest extent (sampled at the box's corners).
template <int dim>
double node_geometry_tolerance(const operators::DeviceKernelKey& key, const mesh::BoxMesh<dim>& mesh);
/// The kernel one apply of case `c` is compared with: the generic fp64 kernel of the same key (its
/// general-geometry data is computed on the device, so the check takes seconds at any size).
operators::DeviceKernelKey check_reference_key(const BenchCase& c);

/// What one measurement gives.
struct BenchResult {
  int cells_per_direction = 0;  ///< a block: its refinement
  std::vector<int> cells;       ///< cells per direction
  std::size_t n_cells = 0;
  std::size_t n_dofs = 0;  ///< all DoFs of the space, boundary included
  double median_seconds = 0.0, min_seconds = 0.0, max_seconds = 0.0;
  double dram_bytes_per_apply = 0.0;  ///< src read + dst written once + stored operator data
  std::optional<double> flops_per_apply;         ///< unknown for the CPU operator
  std::optional<double> shared_bytes_per_apply;  ///< unknown for the CPU operator
  std::size_t operator_bytes = 0;
  bool checked = false;
  /// Relative 2-norm difference ||y - y_ref|| / ||y_ref||; empty when not checked or not finite.
  std::optional<double> check_rel_diff;
  bool check_passed = true;
  operators::KernelChoices choices;  ///< the kernel choices the operator resolved
  /// ||A x|| over the owned entries of every rank, x_i = random_value(seed, global index of i): the
  /// same on any number of ranks up to rounding.
  std::optional<double> output_norm;
  /// Several ranks: each apply's time is the slowest rank's (the medians and extremes above are of
  /// those), the check's norms are summed over the ranks' owned entries.
  struct Distributed {
    int ranks = 1;
    std::vector<int> process_grid;
    std::vector<double> rank_median_seconds;  ///< each rank's own median, in rank order
    std::vector<std::size_t> rank_local_dofs;  ///< entries each rank stores (owned and ghost)
    std::string exchange;  ///< the exchange path and where it runs
    bool overlapped = false;  ///< the exchange beside the interior cells (cuda)
    int max_neighbours = 0;   ///< the most ranks one rank exchanges with
    double max_bytes_sent = 0.0;  ///< the most bytes one rank sends per apply's exchange
  };
  std::optional<Distributed> distributed;
};

/// The measurement on the CPU (MatrixFreeOperator<dim, double or float>).
BenchResult run_cpu_bench(const BenchCase& c);
/// The measurement on CUDA device 0 (make_device_operator); InputError in builds without CUDA.
BenchResult run_cuda_bench(const BenchCase& c);

}  // namespace tcfem::bench
