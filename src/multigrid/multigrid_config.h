#pragma once
// Names and settings of the geometric multigrid solver: smoother kinds, patch-smoother variants,
// coarse solvers, and the counts of a V-cycle. Runtime enums are dispatched at one place each
// (make_smoother in multigrid.cpp, make_coarse_solver in coarse_solver.cpp).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tcfem::multigrid {

/// Level smoothers.
///   patch:          multiplicative vertex-patch Schwarz smoother (seed 004, Alg. 3), colors in
///                   sequence, exact local solves by fast diagonalization of the Cartesian patch;
///                   cg: VertexPatchSmoother (2^dim colors), dg: DgVertexPatchSmoother (3^dim colors)
///   patch_additive: the additive (Jacobi-type) vertex-patch smoother, damped
///   chebyshev:      Chebyshev polynomial of the point-Jacobi-preconditioned operator
enum class SmootherKind { patch, patch_additive, chebyshev };

/// How the multiplicative patch smoother computes local residuals (seed 004, Table 4).
///   fused:    one pass per color: gather, local residual, local solve, scatter per patch
///   separate: two passes per color: local residuals of all patches of the color into a buffer,
///             then all local solves (cg and dg alike)
///   global:   the residual of the whole level operator once per color (matrix-free apply), then
///             the local solves; always used on the built-in deformed box (no surrogates), where
///             the localized Kronecker residual is not the operator's
/// With the separable surrogates (curved cells, variable coefficients; multigrid/host/
/// patch_smoother.h) fused and separate take the surrogate residuals: the level operator's
/// residual once per step, the colors' residuals of the correction localized from the surrogates.
enum class PatchVariant { fused, separate, global };

/// Coarse-grid solvers: dense Cholesky of the assembled coarsest matrix (LAPACK dpotrf/dpotrs),
/// or Jacobi-preconditioned CG to a tight tolerance; automatic: Cholesky up to
/// max_dense_coarse_dofs DoFs (max_device_dense_coarse_dofs on the device), CG above.
enum class CoarseSolverKind { automatic, cholesky, cg };

/// The order in which a multiplicative smoother traverses its colors. Pre-smoothing runs forward;
/// post-smoothing forward as well (seed 004: a non-symmetric V-cycle, for FGMRES; it converges
/// faster, see docs/notebook/performance_history.md) or backward (the adjoint sweep: a symmetric V-cycle, for CG).
enum class SweepOrder { forward, backward };

/// Largest coarsest level the automatic choice solves by dense Cholesky (a 288 MB factor).
inline constexpr std::size_t max_dense_coarse_dofs = 6000;
/// The same on the device backend (an 8.2 GB fp64 matrix, which cuSOLVER factors and inverts in
/// about a second; an fp32 V-cycle keeps the inverse in fp32, 4.1 GB): on an H200 a coarsest
/// level of 11,025 DoFs took 2.4 ms per coarse solve by two triangular solves against 8.5 ms by
/// CG, and the 28,665-DoF coarsest level of a 4-GPU solve took 88 ms by CG in the whole solve
/// (docs/performance.md); a solve is one product with the inverse.
inline constexpr std::size_t max_device_dense_coarse_dofs = 32000;
/// Largest coarsest level an explicitly requested Cholesky solve factors (an 8.2 GB dense factor).
inline constexpr std::size_t max_cholesky_coarse_dofs = 32000;

/// Products of the line phases of the device vertex-patch kernels (docs/patch_smoother_kernels.md).
///   automatic: even_odd where the patch matrices have the symmetry (Cartesian patches), else dense
///   dense:     dense products of the 1D patch matrices
///   even_odd:  even and odd halves of each line (half the FMAs; needs the symmetry)
///   tensor_core: each line phase a batched GEMM on the mma atoms (FP64 DMMA, 3xTF32 for float)
enum class PatchContraction { automatic, dense, even_odd, tensor_core };

/// Kernel choices of the device patch smoothers (`--tuning FILE.json`, key "patch_smoother").
struct PatchKernelTuning {
  PatchContraction contraction = PatchContraction::automatic;
  /// cudaFuncAttributePreferredSharedMemoryCarveout of every launch: percent of the maximum shared
  /// memory (0..100), or -1 for the driver's choice.
  int carveout = 100;
};

struct SmootherSettings {
  SmootherKind kind = SmootherKind::patch;
  PatchVariant patch_variant = PatchVariant::fused;
  /// Relaxation of the patch corrections; empty: 1 for the multiplicative smoother (no damping,
  /// as in seed 004), additive_default_relaxation(dim) for the additive one (cg),
  /// dg_additive_default_relaxation(dim, cartesian) for dg.
  std::optional<double> relaxation;
  /// Chebyshev smoother: polynomial degree of one smoothing step and the ratio between the upper
  /// and lower end of the smoothed eigenvalue range (upper = 1.2 lambda_max of D^{-1} A, estimated
  /// by Lanczos through eigenvalue_cg_steps CG steps).
  int chebyshev_degree = 3;
  double chebyshev_range = 20.0;
  int eigenvalue_cg_steps = 12;
  /// Device patch-kernel choices (ignored by the CPU smoothers).
  PatchKernelTuning kernels;
};

struct MultigridSettings {
  SmootherSettings smoother;
  int pre_smooth = 1;
  int post_smooth = 1;
  SweepOrder post_smooth_order = SweepOrder::forward;
  CoarseSolverKind coarse = CoarseSolverKind::automatic;
  double coarse_cg_tolerance = 1e-12;
  /// V-cycles below fp64: run the post-smoothing steps of the finest level in fp64, on the fp64
  /// right-hand side and the V-cycle's result converted to fp64, instead of in the V-cycle's
  /// precision. The local residuals of those steps then carry no rounding of the low precision:
  /// in a low-precision post-smoothing step, where x is the nearly converged (smooth, large)
  /// correction, that rounding is eps_low |A| |x| per entry, a residual of relative size about
  /// eps_low * cond(A) that grows 4x per refinement and slows the outer iteration on fine meshes
  /// (docs/notebook/performance_history.md, "Mixed precision on fine meshes"). Pre-smoothing starts from x = 0
  /// and the coarse levels have smaller condition numbers, so they stay in the low precision.
  bool finest_post_fp64 = false;
  /// V-cycles below fp64: build what MixedFullMultigrid (multigrid/full_multigrid.h) needs, fp64
  /// operators and transfers on every level and its vectors, for a full-multigrid start whose
  /// residuals are formed in fp64.
  bool fmg_fp64_residuals = false;
};

/// Damping of the additive vertex-patch smoother: each cg DoF lies in the interior of at most
/// 2^dim patches, so the sum of the patch corrections has eigenvalues up to 2^dim and the damped
/// iteration is stable for omega < 2 / 2^dim; 0.8 of that limit (1.6 / 2^dim: 0.4 in 2D, 0.2 in
/// 3D) gave the fewest iterations in the measurements of docs/notebook/performance_history.md.
double additive_default_relaxation(int dim);

/// Damping of the additive dg vertex-patch smoother (DgVertexPatchSmoother): a dg patch holds all
/// DoFs of its 2^dim cells, and patches two vertices apart share a face, so they are not
/// A-orthogonal and the sum of the patch corrections has larger eigenvalues than for cg: on
/// Cartesian meshes lambda_max(sum_j R_j^T A_j^{-1} R_j A) (power iteration) is 5.6-5.96 in 2D
/// (k = 1, 2, 4, 6 on 16^2 to 64^2 cells) and 11.0-11.8 in 3D (k = 1, 2, 4, 5 on 6^3 to 12^3
/// cells), growing with k but below 3 * 2^(dim-1), where the cg default 1.6 / 2^dim diverges;
/// 0.8 of the limit 2 / (3 * 2^(dim-1)) is 1.6 / (3 * 2^(dim-1)) (0.267 in 2D, 0.133 in 3D). On the
/// deformed box the local solvers are the inverses of the Cartesian patches, not of the patch
/// matrices, and lambda_max grows to 8.3-9.0 in 2D (k = 2, 4, 6) and 13.5-16.5 in 3D (k = 2, 3, 5):
/// 0.18 in 2D, 0.1 in 3D (omega lambda_max <= 1.65).
double dg_additive_default_relaxation(int dim, bool cartesian);

const char* to_string(SmootherKind k);
const char* to_string(PatchVariant v);
const char* to_string(CoarseSolverKind k);
std::optional<SmootherKind> parse_smoother_kind(std::string_view name);
std::optional<PatchVariant> parse_patch_variant(std::string_view name);
std::optional<CoarseSolverKind> parse_coarse_solver_kind(std::string_view name);

}  // namespace tcfem::multigrid
