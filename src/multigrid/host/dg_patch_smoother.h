#pragma once
// Vertex-patch Schwarz smoothers for the SIPG discretization (discontinuous Q_k; Witte, Arndt,
// Kanschat 2021, "Fast tensor product Schwarz smoothers for high-order discontinuous Galerkin
// methods"; seed 000, Section 7).
//
// Patches: the 2^dim cells around each interior vertex v of the level mesh (cells v-1 and v along
// every direction). The patch space is spanned by ALL DoFs of those cells ((2(k+1))^dim values;
// dg has no constrained DoFs), ordered lexicographically over the patch: along direction d the
// index is o_d (k+1) + l_d for the cell v_d - 1 + o_d (o_d = 0, 1) and its local node l_d.
//
// Local matrix A_j = R_j A R_j^T (the rows and columns of the patch DoFs of the SIPG matrix). On a
// Cartesian mesh the SIPG operator couples the cells of a face normal to d only along d, so
//   A_j = sum_d M_{dim-1} (x) ... (x) L_d (x) ... (x) M_0
// with 1D matrices of the two cells along d: M_d = blockdiag(h_d M, h_d M) and L_d the 1D SIPG
// matrix of the two cells: their stiffness, the full interior face between them and, at each
// outer end, either the inside-inside part of the interior face to the neighbour outside the
// patch or, where the patch touches the domain boundary, the Dirichlet boundary face (the blocks
// of operators::sipg_line_blocks, which the Cartesian operator applies; penalty k(k+1)(1/h- + 1/h+)
// on interior faces, 2k(k+1)/h on the boundary). Each direction has up to four variants of L_d
// (no boundary end, the lower end, the upper end, both ends on the boundary). The mass terms are
// integrated with the level operator's 1D rule, so that the Kronecker form is the operator's patch
// matrix on Cartesian cells also for Gauss-Lobatto quadrature (the Dirichlet and face terms are
// point values and exact). Local solver: fast diagonalization (PatchFastDiagonalization, one
// LAPACK dsygv per direction and variant at setup).
//
// Localized residual r_j = b_j - (A x)|_patch (PatchVariant::fused): per patch from the patch
// cells and their face neighbours outside the patch, without a global operator apply:
//   (A x)|_patch = A_j x_j + sum_d M (x) .. (x) C_d (x) .. (x) M x_{out,d},
// where x_{out,d} holds, at the patch positions o_d = 0 and o_d = 1 along d, the values of the
// cells before (v_d - 2) and after (v_d + 1) the patch along d (zero where the patch ends at the
// boundary), and C_d = blockdiag(C_-, C_+) the 1D couplings of a patch cell to those neighbours.
// Diagonal neighbours do not couple (faces normal to d couple only along d).
// PatchVariant::separate computes the local residuals of all patches of a color into a buffer,
// then solves (two passes, as for cg); PatchVariant::global takes the residual of the whole level
// operator once per color. Curved (deformed) meshes always use PatchVariant::global, and the local
// solver is the inverse of the closest Cartesian patch: the patch of the undeformed parameter grid
// with the same cells (h = 1 / n_cells per direction) and the same quadrature.
//
// Colors: patches whose vertices differ by 2 along one direction (and at most 1 along the others)
// have cells that share a face, so an update of one changes the other's residual; the 2^dim parity
// colors of the cg smoother do not separate them. The colors here are the vertex coordinates
// modulo 3 in each direction (3^dim colors): two patches of a color are at least 3 apart along some
// direction, so they share no cell and no face, and a color sweep equals the sequential sweep over
// its patches in any order.
// Multiplicative smoother: colors forward in pre-smoothing; post-smoothing per SweepOrder (forward
// by default, backward for the symmetric V-cycle under CG). No damping (relaxation 1).
// Additive smoother: x += omega sum_j R_j^T A_j^{-1} R_j (b - A x). Every cell lies in up to 2^dim
// patches, as every cg node in up to 2^dim patch interiors, but patches two apart share a face and
// are not A-orthogonal: the sum of the corrections has eigenvalues up to about 3 * 2^(dim-1)
// (measured; more on deformed meshes, where the local solvers are the Cartesian-patch inverses),
// and the cg damping 1.6 / 2^dim diverges; the default is dg_additive_default_relaxation
// (multigrid_config.h).
#include <array>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/interfaces.h"
#include "multigrid/multigrid_config.h"
#include "multigrid/host/patch_smoother.h"

namespace tcfem::multigrid {

/// The 1D matrices of a dg vertex patch along one direction: two cells of size h, 2(k+1) DoFs
/// (the k+1 Gauss-Lobatto nodes of each cell), row-major 2(k+1) x 2(k+1).
struct DgPatchMatrices1D {
  int n_cell = 0;  ///< DoFs of one cell along the line: k+1
  std::vector<double> mass;       ///< blockdiag(h M, h M), M integrated with the given rule
  std::vector<double> stiffness;  ///< the 1D SIPG matrix of the two cells (variant's ends)
  /// blockdiag(C_-, C_+): rows of the lower (upper) patch cell, columns of the cell before (after)
  /// the patch along the line; a block is zero where that end is on the domain boundary.
  std::vector<double> coupling;
};
/// `variant`: bit 0 set when the lower end of the patch lies on the domain boundary, bit 1 the upper.
DgPatchMatrices1D dg_patch_matrices_1d(int degree, double h, const fe::Quadrature1D& quadrature, int variant);

template <int dim, typename Number>
class DgVertexPatchSmoother final : public Smoother<Vector<Number>> {
 public:
  using Patch = std::array<int, dim>;  ///< the patch's vertex (global vertex coordinates)

  /// `quadrature`: the 1D rule of the level operator's cell integrals (Gauss k+1 on the Kronecker
  /// path; k+2 Gauss or k+1 Gauss-Lobatto on the general path), with which the mass matrices are
  /// integrated. `op` is the level operator (PatchVariant::global and the additive smoother).
  /// Throws InputError for cg layouts and for a mesh split over several processes.
  DgVertexPatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                        const fe::Quadrature1D& quadrature, bool additive, PatchVariant variant, double relaxation,
                        const LevelOperator<Vector<Number>>& op);

  void smooth(Vector<Number>& x, const Vector<Number>& b, SweepOrder order) const override;

  bool additive() const { return additive_; }
  PatchVariant variant() const { return variant_; }
  double relaxation() const { return relaxation_; }
  /// Patches by color (3^dim colors; color sum_d (v_d mod 3) 3^d).
  const std::vector<std::vector<Patch>>& colors() const { return colors_; }
  std::size_t n_patches() const;
  /// DoFs of a patch: (2(k+1))^dim.
  int patch_size() const { return patch_size_; }
  /// Per direction: bit 0 set when the patch's lower cell touches the domain boundary, bit 1 the upper.
  std::array<int, dim> boundary_variant(const Patch& v) const;
  /// Local indices of the patch DoFs in patch-lexicographic order.
  void patch_dof_indices(const Patch& v, std::vector<index_t>& idx) const;
  /// r = A_j^{-1} r for a patch vector of patch_size() entries.
  void local_solve(const Patch& v, Number* r) const;
  /// r = b_j - (A u)|_patch, computed from the patch cells and their face neighbours (Cartesian).
  void local_residual(const Patch& v, const Vector<Number>& u, const Vector<Number>& b, Number* r) const;

 private:
  index_t cell_offset(const std::array<int, dim>& c) const;  // local index of the cell's first DoF
  void gather(const Patch& v, const Vector<Number>& u, Number* out) const;
  void gather_outer(const Patch& v, int d, const Vector<Number>& u, Number* out) const;
  void add_patch(const Patch& v, Number scale, const Number* in, Vector<Number>& u) const;
  auto sweep_ops() const;  // the patch operations of the sweeps of patch_sweeps.h

  const fe::DofLayout<dim>* dofs_;
  const LevelOperator<Vector<Number>>* op_;
  bool additive_;
  PatchVariant variant_;
  double relaxation_;
  int k_, n_cell_, n_, patch_size_, cell_size_;
  std::array<int, dim> n_cells_{};             // of the whole mesh
  std::array<int, dim> first_cell_{};          // of the stored (ghosted) box: cells are numbered in it
  std::array<index_t, dim> cell_stride_{};
  std::vector<std::vector<Patch>> colors_;
  // per direction: the index of each boundary variant (0..3) among the solver's variants, -1 if unused
  std::array<std::array<int, 4>, dim> solver_variant_{};
  PatchFastDiagonalization<dim, Number> solver_;
  std::array<std::vector<Number>, dim> cell_mass_;                // [d]: h_d M, n_cell x n_cell
  std::array<std::array<std::vector<Number>, 4>, dim> stiffness_;  // [d][variant]: n x n
  std::array<std::array<std::vector<Number>, 4>, dim> coupling_;   // [d][variant]: n x n
  mutable std::vector<Number> u_, w_, t0_, t1_, t2_, r_, buffer_;
  mutable Vector<Number> residual_, correction_;
};

}  // namespace tcfem::multigrid
