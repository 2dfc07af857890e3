#pragma once
// The vertex-patch Schwarz smoothers of patch_smoother.h on the GPU (seed 004, Section 3): the
// multiplicative smoother with the fused kernel (gather, localized residual, fast-diagonalization
// solve and update per patch in one kernel), the separate variant (residuals of a color into a
// buffer, then the solves), the global variant (the residual of the level operator per color, then
// the solves; always used on deformed meshes), the surrogate residuals (the separable surrogates of
// curved cells and variable coefficients with fused or separate: the level residual once per step,
// the fused or separate kernels on the step's correction), and the additive smoother. Same results as
// VertexPatchSmoother<dim, Number> for the same settings. Kernels: multigrid/patch_kernels/kernels.cuh,
// layouts and work counts: multigrid/patch_kernels/layouts.h, documentation: docs/patch_smoother_kernels.md.
// No CUDA headers here; builds without CUDA throw InputError from the constructor.
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device_exchange.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/multigrid_config.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
class DevicePatchSmoother {
 public:
  /// level_vmult(dst, src): dst = A src on device vectors of this level (used by the global and the
  /// additive variants); settings.kind is patch or patch_additive. With Neumann faces the vertices
  /// on them get patches too (multigrid/patch_kernels/boundary.h; on Cartesian cells without
  /// surrogates with localized residuals, as the interior patches); on a spread level those of
  /// the Neumann faces the ghosted box reaches (its faces inside the box are Dirichlet faces of its
  /// own mesh: no patches there). `cell_metric` ([cell * dim + d],
  /// the level operator's cell metric): the separable surrogates of VertexPatchSmoother (the
  /// surrogate residuals with fused and separate and all faces Dirichlet, else the global
  /// residual); empty: the exact patches of the parameter grid. Throws InputError if unsupported.
  ///
  /// A level spread over ranks (`spread`): `mesh` and `dofs` are this rank's ghosted box (two cells
  /// wide, fe::ghosted_box_dirichlet) as a mesh of its own, level_vmult the distributed apply. The
  /// patches of every interior vertex of the box run, so each owned node gets the corrections of
  /// every patch holding it (those of vertices owned by other ranks computed again here, from the
  /// same values); before each color the ghosts of x (of the residual in the global and additive
  /// variants, of b once per step) are updated; the colors follow the parity of the global vertex
  /// coordinates, so every rank sweeps them in the same order. Owned entries of x equal those of
  /// one process running the whole level; ghost entries are left stale.
  struct Spread {
    DeviceGhostExchange* ghosts = nullptr;  ///< the ghosts of one cell layer
    std::array<int, dim> origin{};          ///< global index of the box's first cell
  };
  /// `device_cell_metric` (null: none): the same cell metric in device memory, n_cells * dim
  /// doubles, from which the surrogates' weights are computed on the device (`cell_metric` may then
  /// be empty; with Neumann faces the boundary patches need it on the host).
  DevicePatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                      const fe::Quadrature1D& quadrature, const SmootherSettings& settings,
                      std::function<void(Number* dst, const Number* src)> level_vmult,
                      const std::vector<double>& cell_metric = {}, const Spread& spread = {},
                      const double* device_cell_metric = nullptr);
  ~DevicePatchSmoother();
  /// One smoothing step x <- S(x, b) on device vectors (default stream, asynchronous).
  /// b_ghosts_fresh: a spread level's b has its ghost values from this smoother's previous step
  /// (b unchanged since), so they are not exchanged again. x_zero: x is zero on entry, so the
  /// residual of the multiplicative smoother's first color is b: it takes the solve kernel on b,
  /// and the surrogate residuals sweep x itself with b (no level-operator apply, no correction);
  /// ignored on a level spread over ranks.
  void smooth(Number* x, const Number* b, SweepOrder order, bool b_ghosts_fresh = false, bool x_zero = false) const;
  std::size_t size() const;
  std::string description() const;

  /// Work of one smoothing step (all colors; level_vmult of the global / additive variants and the
  /// O(n^(dim-1)) patches of the vertices on Neumann faces not included): floating-point operations (of the dense products, the work model), shared-memory bytes of the patch arrays (see
  /// multigrid/patch_kernels/layouts.h) and global-memory bytes without cache reuse.
  double flops_per_step() const;
  /// FLOP the kernels perform (fewer than flops_per_step with the even-odd products).
  double flops_performed_per_step() const;
  /// Whether the kernels use the even-odd products (settings.kernels.contraction; automatic:
  /// even-odd where the patch matrices have the symmetry; see multigrid/patch_kernels/block.h).
  bool even_odd() const;
  /// The contraction the kernels use: "dense", "even-odd" or "tensor-core".
  std::string contraction() const;
  /// Registers, block size, shared memory and resident blocks per SM of the kernels of a step.
  std::string kernel_info() const;
  double shared_bytes_per_step() const;
  double global_bytes_per_step() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tcfem::multigrid
