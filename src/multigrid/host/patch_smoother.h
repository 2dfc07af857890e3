#pragma once
// Vertex-patch Schwarz smoothers for continuous Q_k (seed 004, Section 2.2 and Algorithm 3).
//
// Patches: the 2^dim cells around each interior vertex v of the level mesh. The patch space is
// spanned by the basis functions of the nodes strictly inside the patch ((2k-1)^dim nodes: the
// usual vertex-patch space of Kanschat et al.); none of them lies on the domain boundary. The
// patch matrix A_j (rows and columns of those nodes) on a Cartesian mesh is
//   A_j = sum_d M_{dim-1} (x) ... (x) L_d (x) ... (x) M_0,
// with the 1D mass M_d (h_d) and stiffness L_d (1/h_d) of the two cells along d restricted to the
// 2k-1 inner nodes (integrated with the level operator's 1D rule, so that the Kronecker form is the
// operator's patch matrix on Cartesian cells, also for Gauss-Lobatto quadrature), and is inverted by fast diagonalization (Lynch, Rice, Thomas): the 1D
// generalized eigenproblems L_d v = lambda M_d v (LAPACK dsygv, once per level) give
// V_d^T M_d V_d = I and V_d^T L_d V_d = Lambda_d, so
//   A_j^{-1} = (V (x) ... (x) V) (sum_d I (x) .. Lambda_d .. (x) I)^{-1} (V (x) ... (x) V)^T.
// The localized residual r_j = b_j - A_{j,F} u_F needs only the (2k+1)^dim nodes of the patch
// (interior and boundary): the rectangular 1D matrices (rows of the inner nodes, columns of all
// nodes) in the same Kronecker sum (seed 004, Eq. 8).
//
// Multiplicative smoother: the patches are split into 2^dim colors by the parity of the vertex
// coordinates; patches of one color are more than one patch apart, so no patch's update changes
// another's residual, and the colors are processed in sequence (forward in pre-smoothing,
// backward in post-smoothing: the V-cycle is then symmetric). No damping (relaxation 1).
// Additive smoother: x += omega sum_j R_j^T A_j^{-1} R_j (b - A x).
//
// Curved meshes and variable coefficients (the separable surrogate): the patch matrix of the level
// operator is A_j = int_patch grad phi^T G grad phi with G = a |det J| J^{-1} J^{-T} in the unit
// reference coordinates of each cell. The local solver inverts the axis-aligned, cell-averaged
// approximation: G replaced by diag(g_0, .., g_{dim-1}), g_d the mean over the patch's 2^dim cells
// of the cell integrals of G_dd (the cell metric, from the level operator's quadrature data), i.e.
//   A_j ~ sum_d g_d M_{dim-1} (x) .. (x) L_d (x) .. (x) M_0
// with the unit-cell 1D mass and stiffness: fast diagonalization with one set of eigenvectors and a
// per-patch eigenvalue sum. On a Cartesian mesh with a constant coefficient g_d = a prod_e h_e / h_d^2
// and the surrogate is the exact patch matrix. Two residuals (PatchKernelTuning aside, the choice of
// PatchVariant):
// - PatchVariant::global: the true level operator's residual before every color (2^dim applies of
//   the level operator per step);
// - fused / separate (surrogate residuals): the level operator's residual r = b - A x once per step,
//   then the multiplicative sweep over the colors on the correction y (y = 0 at first) with each
//   patch's residual localized from the patch's own surrogate, r_I - (sum_d g_d M .. L_d .. M)_{I,F}
//   y_F, and x += y at the end. The step is x += B (b - A x) with B the multiplicative Schwarz
//   iteration of the surrogates: a fixed linear smoother with one level-operator apply per step,
//   exact where the surrogates are (Cartesian cells, constant coefficient). Patches on Neumann faces
//   keep the global variant.
// Without a cell metric (the built-in deformed box) the local solver is the patch of the undeformed
// parameter grid (h = 1 / n_cells per direction), with the global residual.
// Dirichlet constraints: constrained nodes enter local residuals as zeros (their columns are zero
// in the constrained operator); after a step they hold b (their rows are the identity).
//
// Neumann parts (boundary patches): a vertex on a Neumann face of the box and on no Dirichlet face
// also gets a patch, of the cells of the mesh around it (2^(dim-1) on a face, fewer at edges and
// corners). Along a direction d where v lies on the box's low (high) face the patch has the one cell
// above (below) v, and its unknowns there are the k nodes from v up to (down to) the cell's other
// vertex, excluded: the Neumann face's nodes are unknowns. Every unknown then lies in a patch. The
// 1D matrices of such a direction are the one cell's, embedded in the 2k-1 inner nodes of the
// two-cell patch with the missing nodes decoupled (PatchPair1D::active), so that the fast
// diagonalization and the coloring by vertex parity stay those of the interior patches. On
// Cartesian cells without surrogates boundary patches localize their residual as the interior
// ones do (the rows of their unknowns, the 1D matrices of their cells along each direction: the
// Neumann face's nodes see no cell beyond it); otherwise they take the level operator's
// (PatchVariant::global). Their surrogate weights are the means over their existing cells.
//
// Distributed levels: a rank smooths the patches of the vertices it owns (the vertex v belongs to
// the owner of cell v, as its lattice node does); their cells below v may be ghost cells. The
// localized residuals read the ghost values of x and b (updated before each color), the global
// residual's ghosts are updated from their owners, and the corrections at nodes of other ranks are
// added to their owners (patches of one color share no inner node, on any rank). The surrogates'
// cell metrics of the ghost cells come from their owners once at setup. Every rank then computes
// what one process would, up to the order of the operator's sums.
#include <array>
#include <vector>

#include "core/error.h"
#include "core/vector.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/interfaces.h"
#include "multigrid/multigrid_config.h"
#include "multigrid/patch_vertices.h"

namespace tcfem::multigrid {

/// The 1D matrices of a vertex patch along one direction: two cells of size h, 2k+1 nodes, each
/// cell's mass and stiffness integrated with `quadrature` on [0,1]. `cells`: bit 0 the cell below
/// the vertex, bit 1 the cell above (a boundary patch has one of them).
struct PatchMatrices1D {
  int n_full = 0, n_inner = 0;
  std::vector<double> mass, stiffness;  ///< n_full x n_full, row-major
  /// n_inner x n_inner: the rows and columns of the inner nodes 1..2k-1
  std::vector<double> inner_mass() const;
  std::vector<double> inner_stiffness() const;
};
PatchMatrices1D patch_matrices_1d(int degree, double h, const fe::Quadrature1D& quadrature, int cells = 3);

/// Where a vertex patch lies along one direction: around an interior vertex (two cells), or at a
/// vertex on the box's low or high face (one cell; a Neumann face). Also the index of the 1D
/// variant of PatchFastDiagonalization's cg patches.
enum class PatchSide : int { interior = 0, low = 1, high = 2 };
/// The inner nodes [first, last) (of 0 .. 2k-2) a patch has along a direction of side `s`.
inline std::array<int, 2> patch_side_range(PatchSide s, int degree) {
  switch (s) {
    case PatchSide::low: return {degree - 1, 2 * degree - 1};
    case PatchSide::high: return {0, degree};
    case PatchSide::interior: break;
  }
  return {0, 2 * degree - 1};
}

/// A pair of symmetric n x n 1D matrices (row-major) of one direction of a patch: mass M_d and
/// stiffness L_d of A = sum_d M_{dim-1} (x) .. (x) L_d (x) .. (x) M_0. `active` (empty: all n): the
/// rows and columns that exist; the others are decoupled (their eigenvectors are the unit vectors,
/// eigenvalue 1, and the active eigenvectors vanish on them), so a vector that is zero there stays
/// zero under the inverse.
struct PatchPair1D {
  std::vector<double> mass, stiffness;
  std::vector<char> active;
};

/// Fast diagonalization of a patch matrix that is a Kronecker sum
///   A = sum_d M_{dim-1} (x) ... (x) L_d (x) ... (x) M_0
/// of n x n 1D matrices: the 1D generalized eigenproblems L_d v = lambda M_d v (LAPACK dsygv, once
/// at setup) give V_d^T M_d V_d = I, V_d^T L_d V_d = Lambda_d and
///   A^{-1} = (V_{dim-1} (x) .. (x) V_0) (sum_d I (x) .. Lambda_d .. (x) I)^{-1} (V_{dim-1} (x) .. (x) V_0)^T.
/// A direction may hold several variants of its 1D pair (the dg patches, whose 1D SIPG matrix
/// depends on whether an end of the patch lies on the domain boundary); a patch picks one variant
/// per direction, and the inverse eigenvalue sums of every combination are stored.
template <int dim, typename Number>
class PatchFastDiagonalization {
 public:
  using Variants = std::array<int, dim>;
  /// The cg vertex patch: the inner (2k-1)^dim nodes, 1D matrices of patch_matrices_1d; three
  /// variants per direction, indexed by PatchSide (two cells; one cell above or below the vertex).
  PatchFastDiagonalization(int degree, const std::array<double, dim>& h, const fe::Quadrature1D& quadrature);
  /// pairs[d][v]: the 1D matrices of variant v along direction d, all n x n with one n.
  explicit PatchFastDiagonalization(const std::array<std::vector<PatchPair1D>, dim>& pairs);
  /// x = A^{-1} x in place for the variant 0 of every direction; x has n^dim entries,
  /// lexicographic; tmp as many.
  void apply_inverse(Number* x, Number* tmp) const { apply_inverse(x, tmp, Variants{}); }
  /// x = A^{-1} x in place with variant[d] along direction d.
  void apply_inverse(Number* x, Number* tmp, const Variants& variant) const;
  /// x = (sum_d g_d M_{dim-1} (x) .. (x) L_d (x) .. (x) M_0)^{-1} x in place (variant 0 of every
  /// direction): the inverse of the Kronecker sum with direction d weighted by g_d > 0, from the
  /// same eigenvectors (the inverse diagonal 1 / sum_d g_d lambda_d computed on the fly).
  void apply_inverse_weighted(Number* x, Number* tmp, const std::array<double, dim>& g) const {
    apply_inverse_weighted(x, tmp, g, Variants{});
  }
  /// The same with variant[d] along direction d.
  void apply_inverse_weighted(Number* x, Number* tmp, const std::array<double, dim>& g,
                              const Variants& variant) const;
  /// Size n of the 1D matrices (2k-1 for the cg patch).
  int n_inner() const { return n_; }
  int n_variants(int d) const { return static_cast<int>(lambda_[d].size()); }
  const std::vector<double>& eigenvalues(int d, int variant = 0) const { return lambda_[d][variant]; }
  /// Row-major n x n; column j is the eigenvector of eigenvalue j (M-orthonormal).
  const std::vector<Number>& eigenvectors(int d, int variant = 0) const { return vectors_[d][variant]; }
  /// 1 / (lambda_0 + ... + lambda_{dim-1}) as a lexicographic tensor of n^dim entries.
  const std::vector<Number>& inverse_diagonal(const Variants& variant = Variants{}) const {
    return inverse_diagonal_[combination(variant)];
  }

 private:
  void setup(const std::array<std::vector<PatchPair1D>, dim>& pairs);
  std::size_t combination(const Variants& variant) const;

  int n_ = 0;
  std::array<std::vector<std::vector<double>>, dim> lambda_;   // [d][variant]
  std::array<std::vector<std::vector<Number>>, dim> vectors_;  // [d][variant], row-major n x n
  std::vector<std::vector<Number>> inverse_diagonal_;          // [combination], tensor of n^dim
};

/// Whether the cg vertex-patch smoothers of a level take the separable surrogates (above): on
/// mapped meshes and with a variable coefficient; the built-in deformed box keeps the patches of
/// its parameter grid.
inline bool uses_patch_surrogates(mesh::GeometryKind geometry, bool variable_coefficient) {
  return geometry == mesh::GeometryKind::mapped || variable_coefficient;
}

/// The weights g_d of the separable surrogate of the patch around vertex v: the mean of
/// `cell_metric` ([cell * dim + d], cells numbered lexicographically in the box `cells`: a mesh's
/// ghosted box, MatrixFreeOperator::cell_metric on one process) over the patch's cells: the 2^dim
/// around an interior vertex, those inside `cells` for a vertex on the boundary (boundary patches;
/// the box must hold every cell of the patch that exists).
template <int dim>
std::array<double, dim> patch_mean_metric(const mesh::CellBox<dim>& cells, const std::vector<double>& cell_metric,
                                          const std::array<int, dim>& v) {
  std::array<double, dim> g{};
  const auto number = [&cells](const int* c) -> long long {
    std::array<int, dim> a;
    for (int d = 0; d < dim; ++d) a[d] = c[d];
    return cells.contains(a) ? static_cast<long long>(cells.number(a)) : -1;
  };
  const int n = patch_metric_mean<dim>(v.data(), number, cell_metric.data(), g.data());
  TCFEM_ASSERT(n > 0, "a vertex patch without cells");
  return g;
}

/// The sides of the patch around vertex v (global vertex coordinates) in a mesh of `cells` cells
/// per direction: low at v_d = 0, high at v_d = cells_d.
template <int dim>
std::array<int, dim> patch_sides(const std::array<int, dim>& v, const std::array<int, dim>& cells) {
  std::array<int, dim> s;
  for (int d = 0; d < dim; ++d)
    s[d] = int(v[d] == 0 ? PatchSide::low : v[d] == cells[d] ? PatchSide::high : PatchSide::interior);
  return s;
}

/// Which vertices of the box carry cg vertex patches: along direction d the interior ones and,
/// where the low / high face is a Neumann face, those on it (a vertex on a Dirichlet face has none).
template <int dim>
struct PatchVertexRange {
  std::array<bool, dim> low{}, high{};
  bool boundary() const {
    for (int d = 0; d < dim; ++d)
      if (low[d] || high[d]) return true;
    return false;
  }
};
template <int dim>
PatchVertexRange<dim> patch_vertex_range(const fe::DirichletFaces<dim>& dirichlet) {
  PatchVertexRange<dim> r;
  for (int d = 0; d < dim; ++d) {
    r.low[d] = !dirichlet[2 * d];
    r.high[d] = !dirichlet[2 * d + 1];
  }
  return r;
}

template <int dim, typename Number>
class VertexPatchSmoother final : public Smoother<Vector<Number>> {
 public:
  using Patch = std::array<int, dim>;  ///< the patch's vertex (global vertex coordinates)

  /// `quadrature`: the 1D rule of the level operator's cell integrals (Gauss k+1, exact, for the
  /// Kronecker path; k+2 Gauss or k+1 Gauss-Lobatto for the general path), with which the 1D
  /// patch matrices are integrated. `op` is the level operator (used by PatchVariant::global and
  /// the additive smoother). Throws InputError for dg layouts (their smoother is
  /// DgVertexPatchSmoother, multigrid/host/dg_patch_smoother.h). `cell_metric` (owned cells,
  /// [cell * dim + d], the level operator's MatrixFreeOperator::cell_metric): the local solvers
  /// are the separable surrogates of the patches (see above) and the residual is the operator's
  /// (PatchVariant::global); empty: the exact Cartesian patches of the parameter grid.
  VertexPatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                      const fe::Quadrature1D& quadrature, bool additive, PatchVariant variant, double relaxation,
                      const LevelOperator<Vector<Number>>& op, std::vector<double> cell_metric = {});

  void smooth(Vector<Number>& x, const Vector<Number>& b, SweepOrder order) const override;
  /// With the surrogate residuals: the sweep on x itself with b (the step's residual is b).
  void smooth_from_zero(Vector<Number>& x, const Vector<Number>& b, SweepOrder order) const override;

  bool additive() const { return additive_; }
  PatchVariant variant() const { return variant_; }
  double relaxation() const { return relaxation_; }
  /// Patches by color (2^dim colors, vertex parity; color c has bit d set for odd v_d).
  const std::vector<std::vector<Patch>>& colors() const { return colors_; }
  std::size_t n_patches() const;
  /// Local indices of the patch's unknowns (the (2k-1)^dim inner nodes of an interior patch, fewer
  /// on a boundary patch) / of all its nodes ((2k+1)^dim inside the box), lexicographic.
  void inner_dof_indices(const Patch& v, std::vector<index_t>& idx) const;
  void patch_dof_indices(const Patch& v, std::vector<index_t>& idx) const;
  /// Whether the patch of v lies on a Neumann face (fewer cells than 2^dim).
  bool boundary_patch(const Patch& v) const;
  /// r = A_j^{-1} r for a patch vector of the patch's unknowns (inner_dof_indices' order; the
  /// surrogate's inverse with a cell metric).
  void local_solve(const Patch& v, Number* r) const;
  /// Whether the local solvers are the separable surrogates of a cell metric.
  bool surrogate() const { return !cell_metric_.empty(); }
  /// The weights g_d of the patch's surrogate: the mean cell metric of its 2^dim cells.
  std::array<double, dim> patch_metric(const Patch& v) const;
  /// r_I = b_I - A_{I,F} u_F of one patch from the global vectors (constrained u entries as 0; a
  /// boundary patch's rows of its unknowns, in inner_dof_indices' order, from its cells' 1D
  /// matrices; with surrogate residuals A_{I,F} is the patch's surrogate).
  void local_residual(const Patch& v, const Vector<Number>& u, const Vector<Number>& b, Number* r) const;
  /// Whether a step takes the surrogate residuals (see above): one level-operator residual per step.
  bool surrogate_residuals() const { return surrogate_residuals_; }

 private:
  index_t first_node(const Patch& v) const;  // lattice index of the patch's lowest node
  void gather_full(const Patch& v, const Vector<Number>& u, Number* out) const;
  void gather_full_boundary(const Patch& v, const Vector<Number>& u, Number* out) const;
  void gather_inner(const Patch& v, const Vector<Number>& u, Number* out) const;
  void add_inner(const Patch& v, Number scale, const Number* in, Vector<Number>& u) const;
  void set_constrained(Vector<Number>& x, const Vector<Number>& b) const;
  std::array<int, dim> sides(const Patch& v) const { return patch_sides<dim>(v, mesh_->partition().global_cells); }
  auto sweep_ops() const;  // the patch operations of the sweeps of patch_sweeps.h

  const mesh::BoxMesh<dim>* mesh_;
  const fe::DofLayout<dim>* dofs_;
  const LevelOperator<Vector<Number>>* op_;
  std::vector<double> cell_metric_;  // by the cells of the ghosted box (patch_mean_metric)
  PatchVertexRange<dim> range_;      // the vertices with patches (Neumann faces: boundary patches)
  bool additive_;
  PatchVariant variant_;
  bool surrogate_residuals_ = false;
  double relaxation_;
  int k_, n_full_, n_inner_;
  std::array<long, dim> stride_{};
  std::vector<std::vector<Patch>> colors_;
  std::vector<index_t> constrained_;
  PatchFastDiagonalization<dim, Number> solver_;
  std::array<std::array<std::vector<Number>, 3>, dim> mass_rect_, stiff_rect_;  // [d][PatchSide], n_inner x n_full
  mutable std::vector<Number> u_, r_, t0_, t1_, t2_, t3_, buffer_;
  mutable std::vector<index_t> idx_;  // a boundary patch's unknowns
  mutable Vector<Number> residual_, correction_, step_correction_;
};

}  // namespace tcfem::multigrid
