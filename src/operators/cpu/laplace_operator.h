#pragma once
// Matrix-free Laplace operator (continuous Q_k or SIPG discontinuous Q_k) on the CPU, by sum
// factorization. Two paths:
//   cartesian: exact 1D mass/stiffness matrices, A_K = sum_d (x)_{e != d} h_e M (x) L_d / h_d, and
//              for dg the 1D SIPG line matrices of each direction (the Cartesian SIPG operator is
//              a sum of Kronecker products, since faces normal to d couple only along d);
//   general:   quadrature-point data (partial assembly): C = a w |det J| J^{-1} J^{-T} per cell
//              point, face normals, surface weights and penalties per face point; the path of
//              curved meshes, variable coefficients a(x) and dg with Neumann faces.
// cg: DoFs on Dirichlet faces are constrained: their rows and columns are replaced by the identity
// (dst_b = src_b). dg: Dirichlet data imposed weakly (SIPG); Neumann faces have no face terms.
// Penalty: interior faces gamma = k(k+1) (|F|/|K-| + |F|/|K+|) (= k(k+1)(1/h- + 1/h+) on
// Cartesian cells); boundary faces gamma = 2 k(k+1) |F|/|K| (the interior formula with the
// cell mirrored).
#include <memory>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "mesh/geometry_field.h"
#include "operators/geometry_data.h"
#include "operators/tuning.h"
#include "tensor/evaluator.h"

namespace tcfem::operators {

enum class Path { cartesian, general };
const char* to_string(Path p);

struct OperatorConfig {
  fe::Disc disc = fe::Disc::cg;
  int degree = 2;
  /// Quadrature of the general-geometry path (the Cartesian path integrates exactly).
  fe::QuadratureKind quadrature = fe::QuadratureKind::gauss_k2;
  /// Use the Kronecker fast path when the mesh is Cartesian.
  bool cartesian_fast_path = true;
  /// Kernel choices of the device operators built for this configuration (operators/tuning.h).
  DeviceTuning device_tuning;
  /// The geometry form of the device's general-geometry kernels (pa: stored quadrature data; mf:
  /// recomputed from the nodes where a kernel exists, multigrid levels fall back to pa elsewhere;
  /// automatic: operators::resolve_geometry_form).
  GeometryForm geometry_form = GeometryForm::pa;
  /// The precision of the device's stored geometry (GeometryStorage::fp32: the fp64 cuda-core
  /// operators read it rounded to fp32; the CPU operators and the other device families store it
  /// in their own precision).
  GeometryStorage geometry_storage = GeometryStorage::fp64;
  /// The coefficient a(x) of -div(a grad u); empty: a = 1. Every multigrid level evaluates it at
  /// its own quadrature points.
  Coefficient coefficient;
  /// The coefficient as CUDA C++ (a problem file's expression): the device operators evaluate it
  /// compiled; empty: they evaluate `coefficient` on the host threads.
  jit::DeviceSource coefficient_source;
};

/// Whether an operator of this configuration takes the Kronecker fast path: a Cartesian mesh, the
/// fast path allowed, a constant coefficient, and for dg Dirichlet data on every face.
template <int dim>
bool uses_cartesian_path(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const OperatorConfig& config) {
  return mesh.geometry() == mesh::GeometryKind::cartesian && config.cartesian_fast_path && !config.coefficient &&
         (config.disc == fe::Disc::cg || dofs.all_faces_dirichlet());
}

/// Which terms an operator applies: the Laplacian or the mass matrix.
enum class Form { laplace, mass };

template <int dim, typename Number>
class MatrixFreeOperator {
 public:
  MatrixFreeOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                     const OperatorConfig& config, Form form);
  ~MatrixFreeOperator();

  /// dst = A src (on a distributed mesh: src's ghost values are updated first; dst's owned
  /// entries are A src, its ghost entries zero except constrained cg ones)
  void vmult(Vector<Number>& dst, const Vector<Number>& src) const;
  /// The diagonal of A (1 on constrained cg DoFs).
  void compute_diagonal(Vector<Number>& diag) const;
  /// The cell metric of the Laplace form: for every owned cell and direction d, the integral over
  /// the unit reference cell of the d-th diagonal entry of a |det J| J^{-1} J^{-T} (the sum over
  /// the quadrature points of the stored C_dd; a prod_e h_e / h_d^2 on the Cartesian path), as
  /// [cell * dim + d]: the weights of the separable patch surrogates (multigrid/host/patch_smoother.h).
  std::vector<double> cell_metric() const;

  Path path() const { return path_; }
  Form form() const { return form_; }
  const OperatorConfig& config() const { return config_; }
  std::size_t n_dofs() const { return dofs_->n_dofs(); }
  const mesh::BoxMesh<dim>& mesh() const { return *mesh_; }
  const fe::DofLayout<dim>& dofs() const { return *dofs_; }
  std::size_t memory_bytes() const;
  /// Bytes per DoF the operator stores beyond vectors, estimated before construction.
  static double estimated_bytes_per_dof(const OperatorConfig& config, mesh::GeometryKind g);

 private:
  void apply_cartesian_cell(const Number* u, Number* v, const std::array<int, dim>& c) const;
  void apply_general_cell(const Number* u, Number* v, std::size_t cell) const;
  void apply_dg_cartesian(Vector<Number>& dst, const Vector<Number>& src) const;
  void apply_faces_general(Vector<Number>& dst, const Vector<Number>& src) const;
  void diagonal_cartesian_cell(Number* diag, const std::array<int, dim>& c) const;
  void diagonal_general_cell(Number* diag, std::size_t cell) const;
  void diagonal_faces_general(Vector<Number>& diag) const;
  /// After a loop over this rank's cells on a distributed mesh: cg ghost contributions added to
  /// their owners, dg ghost entries zeroed.
  void finish_cell_sums(Number* v) const;

  const mesh::BoxMesh<dim>* mesh_;
  const fe::DofLayout<dim>* dofs_;
  OperatorConfig config_;
  Form form_;
  Path path_;
  int n_b_;
  // cartesian path: exact reference 1D matrices and, for dg, 1D SIPG blocks per direction
  std::vector<Number> mass_1d_, stiff_1d_;
  std::array<std::array<std::vector<Number>, 4>, dim> dg_self_;  // [d][left bdry + 2*right bdry]
  std::array<std::vector<Number>, dim> dg_left_, dg_right_;      // coupling to the c-1 / c+1 cell
  // general path
  std::unique_ptr<mesh::GeometryField<dim>> geometry_;
  std::unique_ptr<tensor::Evaluator<dim, Number>> eval_;
  CellGeometry<dim, Number> cell_geo_;
  FaceGeometry<dim, Number> face_geo_;
  mutable std::vector<Number> s0_, s1_, s2_, s3_, s4_, s5_;
  mutable std::vector<index_t> idx0_, idx1_;
};

template <int dim, typename Number>
using LaplaceOperator = MatrixFreeOperator<dim, Number>;

}  // namespace tcfem::operators
