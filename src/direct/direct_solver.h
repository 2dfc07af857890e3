#pragma once
// The prehandled hierarchical-basis direct Poisson solver of seed 003 (Ruda, Turek, Ribbrock,
// Zajac 2022). Setup, in FP64:
//   1. the nodal system A x = b on the fine mesh (P1 or Q1, homogeneous Dirichlet data);
//   2. the hierarchical basis from the macro level L0 up: S = S_j ... S_1 (S_l interpolates the new
//      vertices of refinement l from their parents), A~ = S^T A S and b~ = S^T b computed explicitly;
//   3. prehandling by the partial Cholesky factor L of blockdiag(A~^0, diag(A~) elsewhere) (eq. 2):
//      A^ = L^{-1} A~ L^{-T}, which in the node order C, E, I has the block form (eq. 3)
//          [ I    B   0 ]
//          [ B^T  E   D ]
//          [ 0    D^T C ],  C = blockdiag(C_i) with one distinct C_i per class of similar macro cells;
//   4. Pi = E - D C^{-1} D^T - B^T B and the explicit inverses Pi^{-1} and C_k^{-1} (one per class).
// Solve phase (steps (4)-(6), see solve_phase.h): dense products with Pi^{-1} and the C_k^{-1}
// (across all cells of a class at once) and sparse products with B, D, in FP64, FP32 or FP16.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "direct/condition.h"
#include "direct/hierarchy.h"
#include "direct/poisson2d.h"
#include "direct/sparse.h"

namespace tcfem::direct {

/// Many vectors of the prehandled system in block form, column-major with one column per
/// right-hand side: c (|C| x nrhs), e (|E| x nrhs), i[k] (|I_k| x nrhs) for class k, where the I
/// nodes of class k are numbered cell by cell, so i[k] is also the nodes_per_cell x
/// (cells_k * nrhs) matrix that one GEMM with C_k^{-1} multiplies.
template <typename Number>
struct BlockVectors {
  std::int64_t nrhs = 0;
  std::vector<Number> c, e;
  std::vector<std::vector<Number>> i;
};

/// The prehandled system as the solve phase needs it.
struct PrehandledSystem {
  std::int64_t n_coarse = 0, n_edge = 0, n_interior = 0;
  std::int64_t nodes_per_cell = 0;
  std::vector<std::int64_t> class_cells;           ///< cells per class
  std::vector<std::vector<double>> class_matrix;   ///< C_k, nodes_per_cell^2, column-major (full)
  std::vector<std::vector<double>> class_inverse;  ///< C_k^{-1}, likewise
  std::vector<double> pi_inverse;                  ///< Pi^{-1}, n_edge^2, column-major (full)
  CsrMatrix b, bt;                                 ///< B (|C| x |E|) and B^T
  std::vector<CsrMatrix> d, dt;                    ///< per class: D_k (|E| x |I_k|) and D_k^T
  CsrMatrix e_block;                               ///< E (|E| x |E|), for the condition number of A^

  std::int64_t n_classes() const { return static_cast<std::int64_t>(class_cells.size()); }
  std::int64_t class_size(std::size_t k) const { return class_cells[k] * nodes_per_cell; }
  std::int64_t n() const { return n_coarse + n_edge + n_interior; }
  std::int64_t nnz_d() const;
  /// Floating-point operations of steps (4)-(6) for one right-hand side (2 per multiply-add):
  /// 4 sum_k n_k^2 cells_k + 2 |E|^2 + 4 nnz(B) + 4 nnz(D).
  double flops_per_rhs() const;
  /// y = A^ x (all blocks), FP64, for Lanczos.
  void apply_prehandled(const BlockVectors<double>& x, BlockVectors<double>& y) const;
  BlockVectors<double> make_vectors(std::int64_t nrhs) const;
};

struct SetupOptions {
  ConditionMethod condition = ConditionMethod::automatic;
  /// Called after each setup stage with its name and seconds (progress lines of long setups).
  std::function<void(const std::string&, double)> progress;
  std::int64_t dense_limit = 2000;  ///< automatic: dense eigenvalues up to this size, Lanczos above
  int lanczos_steps = 3000;
  /// Explicit inverse of the SPD matrix Pi in place (n, column-major data with its lower triangle
  /// set, leading dimension, name for messages); empty: LAPACK dpotrf + dpotri on the host.
  std::function<void(std::int64_t, double*, std::int64_t, const char*)> spd_inverse;
  /// Names where spd_inverse runs, for the progress line (e.g. "cuSOLVER").
  std::string spd_inverse_name;
};

struct SetupTimings {
  double mesh = 0, assembly = 0, hierarchical = 0, blocks = 0, schur = 0, inverses = 0, conditions = 0, total = 0;
};

struct Conditions {
  ConditionEstimate a_fem, prehandled, pi;
  std::vector<ConditionEstimate> classes;  ///< kappa(C_k)
  bool computed = false;
};

/// Checks of the block structure made during setup.
struct SetupDiagnostics {
  double max_ignored_coupling = 0.0;  ///< max |entry| of A^ in the blocks eq. 3 says are zero
  double max_class_deviation = 0.0;   ///< max |C_i - C_k| over the cells of each class
  std::int64_t nnz_a_fem = 0, nnz_hierarchical = 0, dropped_entries = 0;
};

/// Sizes of the direct solver for (kind, L, L0), from the coarse mesh alone (no allocation).
struct DirectPlan {
  MeshKind kind = MeshKind::square_q1;
  int level = 0, coarse_level = 0;
  std::int64_t n_vertices = 0, n_cells = 0, n_dofs = 0;
  std::int64_t n_coarse = 0, n_edge = 0, n_interior = 0;
  std::int64_t macro_cells = 0, nodes_per_cell = 0, n_classes = 0;
  /// Dense FLOPs per right-hand side: steps (4)-(6) without the sparse products, plus the
  /// triangular solves with the coarse Cholesky factor L_C in the transforms (2 |C|^2).
  double dense_flops_per_rhs() const;
  /// Peak host memory of setup and a CPU solve with nrhs right-hand sides (an estimate).
  double host_bytes(std::int64_t nrhs) const;
};
DirectPlan plan_direct(MeshKind kind, int level, int coarse_level);
/// The coarse level with the fewest dense FLOPs per right-hand side (seed 003, table 3).
int optimal_coarse_level(MeshKind kind, int level);

class DirectSolver {
 public:
  DirectSolver(MeshKind kind, int level, int coarse_level, const SetupOptions& options = {});

  const MeshHierarchy& hierarchy() const { return hierarchy_; }
  const DofMap& dofs() const { return dofs_; }
  const CsrMatrix& stiffness() const { return stiffness_; }
  const NodeClasses& nodes() const { return nodes_; }
  const PrehandledSystem& system() const { return system_; }
  const SetupTimings& timings() const { return timings_; }
  const Conditions& conditions() const { return conditions_; }
  const SetupDiagnostics& diagnostics() const { return diagnostics_; }
  std::int64_t n_dofs() const { return dofs_.n_dofs(); }

  /// b^ = L^{-1} S^T b for nodal load vectors b (n_dofs x nrhs, column-major).
  BlockVectors<double> prehandle(const std::vector<double>& b, std::int64_t nrhs) const;
  /// x = S L^{-T} x^ (n_dofs x nrhs, column-major).
  std::vector<double> recover(const BlockVectors<double>& x) const;

 private:
  struct HbLevel {
    std::vector<std::int32_t> dofs;                    ///< dofs new at this level
    std::vector<std::array<std::int32_t, 4>> parents;  ///< their interior parents (-1: none)
    std::vector<double> weight;                        ///< 1/2 (edge midpoint) or 1/4 (Q1 centre)
  };
  void build_hierarchical_levels();
  CsrMatrix hierarchical_matrix();
  void build_blocks(CsrMatrix&& a_tilde, const SetupOptions& options);
  void compute_conditions(const SetupOptions& options, const std::vector<double>& pi_lower);

  MeshHierarchy hierarchy_;
  DofMap dofs_;
  CsrMatrix stiffness_;
  NodeClasses nodes_;
  std::vector<HbLevel> levels_;
  std::vector<double> coarse_factor_;       ///< L_C (|C| x |C|), Cholesky factor of A~^0
  std::vector<double> scale_;               ///< per dof: 1/sqrt(A~_ii) (E and I), 1 (C)
  std::vector<std::int32_t> class_of_dof_;  ///< per dof: class of an I node, else -1
  PrehandledSystem system_;
  SetupTimings timings_;
  Conditions conditions_;
  SetupDiagnostics diagnostics_;
};

}  // namespace tcfem::direct
