#pragma once
// Kernel choices of the device operator families that depend on the degree or the device. Each
// field's zero means "the measured default" of the kernel family for the (dim, degree, precision)
// at hand; a nonzero value overrides it for every operator built with it. The command line reads
// them from `--tuning FILE.json` (docs/user_guide.md, "Tuning"); every operator reports what it
// resolved them to (DeviceOperator::choices), and the JSON reports record both.
#include <string>
#include <utility>
#include <vector>

namespace tcfem::operators {

/// How the general-geometry (general_field) kernels get the geometry at the quadrature points.
enum class GeometryForm {
  pa,  ///< partial assembly: a w |det J| J^{-1} J^{-T} stored per point (computed at setup)
  mf,  ///< matrix-free: J recomputed per apply from the node field (the cells' vertices and the
       ///< displacement from the trilinear cells, none for trilinear cells), a at the nodes
  automatic,  ///< the form measured faster for the key (operators::resolve_geometry_form)
};
inline const char* to_string(GeometryForm f) {
  return f == GeometryForm::mf ? "mf" : f == GeometryForm::automatic ? "auto" : "pa";
}

/// The precision of the stored (pa) geometry of the fp64 general-geometry kernels.
enum class GeometryStorage {
  fp64,  ///< the operator's own precision (fp64 operators store fp64, fp32 operators fp32)
  fp32,  ///< fp32 for the fp64 operators too: half the bytes of the stored data, the arithmetic
         ///< in fp64; the operator is that of the stored data rounded to fp32 (relative 6e-8 per
         ///< value), so its bilinear form lies within 1 -+ 6e-8 times the exact one's for cells whose
         ///< stored 2x2 or 3x3 blocks are well conditioned
};
inline const char* to_string(GeometryStorage s) { return s == GeometryStorage::fp32 ? "fp32" : "fp64"; }

struct DeviceTuning {
  /// cuda-core Cartesian kernels: work items per resident worker of the queue (0: 8) and the
  /// number of waves of resident blocks launched (0: 1).
  double cuda_core_items_per_worker = 0;
  double cuda_core_waves = 0;
  /// cuda-core general-geometry kernels (3D BP5 and BP3): resident blocks per SM the compiler must
  /// allow, i.e. the register cap (0: measured per degree; else 1, 3 or 4).
  int geometry_min_blocks_per_sm = 0;
  /// cuda-core general-geometry kernels: cells per thread block (0: the layout's count).
  int geometry_cells_per_block = 0;
  /// cuda-core general-geometry kernels with stored geometry (3D): each block requests its cells'
  /// stored data into L2 before the gather, so the flux finds it there (0: the measured default;
  /// 1: on; -1: off).
  int geometry_prefetch = 0;
};

/// Kernel choices as an operator resolved them: (name, value) pairs, for reports.
using KernelChoices = std::vector<std::pair<std::string, std::string>>;

/// " [name=value ...]", or "" without choices: appended to a kernel's name in reports.
inline std::string describe(const KernelChoices& choices) {
  if (choices.empty()) return "";
  std::string out = " [";
  for (std::size_t i = 0; i < choices.size(); ++i)
    out += (i ? " " : "") + choices[i].first + "=" + choices[i].second;
  return out + "]";
}

}  // namespace tcfem::operators
