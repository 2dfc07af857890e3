// The device memory estimate of the multigrid solve (host code: also built without CUDA, so that
// the estimate and its refusal message are tested in CI).
#include <cmath>
#include <cstdio>

#include "core/memory.h"
#include "multigrid/device/multigrid_solve.h"
#include "multigrid/host/patch_smoother.h"

namespace tcfem::multigrid {

DeviceMemoryEstimate estimate_device_multigrid_memory(int dim, double fine_dofs, const operators::OperatorConfig& config,
                                                      mesh::GeometryKind geometry, const MultigridSolveSettings& settings,
                                                      bool neumann_parts) {
  // a cg box with Neumann parts: the Kronecker kernels constrain every boundary node, so every
  // level runs the general-geometry kernels (and the patches the global residual): with a
  // coefficient (or the matrix-free form) as on general geometry; with a constant one from the
  // box's 1D tables, which store nothing, but each operator's diagonal forms the stored data for
  // the time of its call
  const bool box_neumann = neumann_parts && config.disc == fe::Disc::cg && geometry == mesh::GeometryKind::cartesian;
  const bool box_tables = box_neumann && !config.coefficient && config.geometry_form != operators::GeometryForm::mf;
  if (box_neumann && !box_tables) geometry = mesh::GeometryKind::deformed;
  DeviceMemoryEstimate e;
  const double n = fine_dofs;
  const double level_sum = dim == 3 ? 8.0 / 7.0 : 4.0 / 3.0;  // all levels over the finest
  const bool in_double = settings.precision == precision::Precision::fp64;
  const double s = in_double ? 8.0 : 4.0;
  // outer solver, fp64: b, x; FGMRES(m): V (m+1), Z (m), r, w, z_j, v_j; CG: r, z, p, Ap;
  // GMRES (left): those of FGMRES and r, P r, t, the correction d; V-cycle iteration: r, z
  double outer_vectors = 2.0;
  switch (settings.solver) {
    case OuterSolver::fgmres: outer_vectors += 2.0 * settings.fgmres.restart + 1.0 + 4.0; break;
    case OuterSolver::gmres: outer_vectors += 2.0 * settings.fgmres.restart + 1.0 + 4.0 + 4.0; break;
    case OuterSolver::cg: outer_vectors += 4.0; break;
    case OuterSolver::mg:
    case OuterSolver::fmg: outer_vectors += 2.0; break;
  }
  e.outer = outer_vectors * 8.0 * n + (in_double ? 0.0 : 2.0 * 4.0 * n);  // + b and x in the V-cycle's type
  // per level: the cycle's x, b, r (only r on the finest level: x and b are the caller's), the
  // transfer's two pass buffers (one level vector together), and the smoother's work vectors
  double smoother_vectors = 0.0;
  const bool cartesian = geometry == mesh::GeometryKind::cartesian;
  switch (settings.multigrid.smoother.kind) {
    case SmootherKind::chebyshev: smoother_vectors = 4.0; break;
    case SmootherKind::patch_additive: smoother_vectors = 1.0; break;
    case SmootherKind::patch: {
      if (uses_patch_surrogates(geometry, bool(config.coefficient))) {
        // the level residual, the surrogates' dim weights per patch and, with the surrogate
        // residuals (no Neumann parts, not the global variant), the step's correction
        const bool global = neumann_parts || settings.multigrid.smoother.patch_variant == PatchVariant::global;
        smoother_vectors = (global ? 1.0 : 2.0) + dim / std::pow(double(config.degree), dim);
        if (!global && settings.multigrid.smoother.patch_variant == PatchVariant::separate)
          smoother_vectors += std::pow((2.0 * config.degree - 1.0) / (2.0 * config.degree), dim);
      }
      else if (!cartesian || box_neumann || settings.multigrid.smoother.patch_variant == PatchVariant::global)
        smoother_vectors = 1.0;  // the global residual
      else if (settings.multigrid.smoother.patch_variant == PatchVariant::separate)
        smoother_vectors = std::pow((2.0 * config.degree - 1.0) / (2.0 * config.degree), dim);  // one color's patches
      break;
    }
  }
  e.levels = s * n * (level_sum * (3.0 + 1.0 + smoother_vectors) - 2.0);
  // the finest level's fp64 post-smoothing: its smoother's work vectors (its operator is the outer one)
  if (!in_double && settings.multigrid.finest_post_fp64) e.levels += 8.0 * n * smoother_vectors;
  const double pa_bytes_per_dof = dim == 3 ? operators::MatrixFreeOperator<3, double>::estimated_bytes_per_dof(config, geometry)
                                           : operators::MatrixFreeOperator<2, double>::estimated_bytes_per_dof(config, geometry);
  // the matrix-free form (cg BP3 and BP5 on general geometry): the displacement (dim values per
  // node), the coefficient at the nodes (BP5) or at the (k + 2)^dim points of each cell (BP3), the
  // vertices (dim doubles per k^dim nodes); its diagonal, where the smoother asks for one, forms
  // the stored data of a level for the time of the call. Cells of geometry order 2 keep the
  // displacement on the Q2 lattice only, but form the Q_k one at setup.
  const bool bp3 = config.quadrature == fe::QuadratureKind::gauss_k2;
  const bool mf = config.geometry_form == operators::GeometryForm::mf && config.disc == fe::Disc::cg &&
                  (config.quadrature == fe::QuadratureKind::gll_k1 || bp3) &&
                  (geometry != mesh::GeometryKind::cartesian || bool(config.coefficient));
  const double k = config.degree;
  const double coefficient_values = !config.coefficient ? 0.0 : bp3 ? std::pow((k + 2) / k, dim) : 1.0;
  const double op_bytes_per_dof =
      mf ? (dim + coefficient_values) * 8.0 + 8.0 * dim / std::pow(k, dim) : pa_bytes_per_dof;
  // the fp64 operators with their stored geometry in fp32 (cuda-core cg): half the stored bytes
  const bool stored_fp32 = config.geometry_storage == operators::GeometryStorage::fp32 && !mf &&
                           config.disc == fe::Disc::cg && !box_tables;
  const double fp64_op_bytes_per_dof = stored_fp32 ? op_bytes_per_dof / 2.0 : op_bytes_per_dof;
  e.operators = in_double ? level_sum * n * fp64_op_bytes_per_dof
                          : level_sum * n * op_bytes_per_dof * s / 8.0 + fp64_op_bytes_per_dof * n;
  if (!in_double && starts_with_fmg(settings)) {
    // MixedFullMultigrid: fp64 operators of the coarser levels (the finest one is the outer
    // operator), fp64 transfers (work buffers: one level vector each), fp64 x, b below the finest
    // and r on every level, and a residual and a correction in the V-cycle's type on every level
    e.operators += (level_sum - 1.0) * n * fp64_op_bytes_per_dof;
    e.levels += 8.0 * n * (2.0 * (level_sum - 1.0) + level_sum) + s * n * 2.0 * level_sum;
  }
  e.fixed = 320e6;  // dense coarse factor, tables, cuBLAS/cuSOLVER workspaces and the CUDA runtime
  if (mf && settings.multigrid.smoother.kind == SmootherKind::chebyshev) e.fixed += n * pa_bytes_per_dof;
  // fp32 stored geometry: each fp64 operator forms its fp64 data for the time of its setup (and of
  // its diagonal) before rounding it
  if (stored_fp32 && pa_bytes_per_dof > 0) e.fixed += n * pa_bytes_per_dof;
  // the box's 1D tables: the diagonal's transient stored data of the finest level
  if (box_tables)
    e.fixed += n * (dim == 3 ? operators::MatrixFreeOperator<3, double>::estimated_bytes_per_dof(
                                   config, mesh::GeometryKind::deformed)
                             : operators::MatrixFreeOperator<2, double>::estimated_bytes_per_dof(
                                   config, mesh::GeometryKind::deformed));
  return e;
}

double estimate_device_multigrid_bytes(int dim, double fine_dofs, const operators::OperatorConfig& config,
                                       mesh::GeometryKind geometry, const MultigridSolveSettings& settings,
                                       bool neumann_parts) {
  return estimate_device_multigrid_memory(dim, fine_dofs, config, geometry, settings, neumann_parts).total();
}

std::string device_memory_refusal(const DeviceMemoryEstimate& need, double fine_dofs, double free_bytes,
                                  const std::string& device_name, const MultigridSolveSettings& settings) {
  char dofs[64];
  std::snprintf(dofs, sizeof dofs, "%.3g", fine_dofs);
  std::string msg = "--cells/--refine: the multigrid solve of " + std::string(dofs) + " DoFs needs an estimated " +
                    format_bytes(need.total()) + " of device memory (outer solver " + format_bytes(need.outer) +
                    ", V-cycle levels " + format_bytes(need.levels) + ", operators " + format_bytes(need.operators) +
                    "), but only " + format_bytes(free_bytes) + " is free on " + device_name + " (90% usable)";
  if ((settings.solver == OuterSolver::fgmres || settings.solver == OuterSolver::gmres) && need.outer >= need.levels)
    msg += "; FGMRES keeps 2m+1 basis vectors: a smaller --restart m (m >= iterations needed) or --solver cg "
           "needs less";
  else if (settings.precision != precision::Precision::fp64 && starts_with_fmg(settings))
    msg += "; the full-multigrid start below fp64 keeps fp64 copies of the levels: --mg-start zero, or an fp64 "
           "V-cycle (--mg-precision fp64), needs less";
  else if (settings.precision == precision::Precision::fp64)
    msg += "; --mg-precision fp32 halves the V-cycle's vectors";
  return msg;
}

}  // namespace tcfem::multigrid
