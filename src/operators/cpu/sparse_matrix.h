#pragma once
// Assembled sparse matrices (CSR, double) of the operators of tcfem: an independent reference for
// the matrix-free operators, built by plain quadrature loops with full evaluation of the
// tensor-product basis at every point (no sum factorization, no shared geometry code).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/vector.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"

namespace tcfem::operators {

/// Compressed sparse row matrix of doubles with sorted column indices per row.
class SparseMatrix {
 public:
  using col_t = std::uint32_t;
  /// Assembly refuses matrices with more (estimated) nonzeros than this.
  static constexpr std::size_t max_nnz = 50'000'000;

  SparseMatrix() = default;
  /// Takes a complete CSR structure; checks its consistency (sizes, sorted unique columns).
  SparseMatrix(std::size_t n_rows, std::size_t n_cols, std::vector<std::size_t> row_ptr,
               std::vector<col_t> cols, std::vector<double> values);

  std::size_t n_rows() const { return n_rows_; }
  std::size_t n_cols() const { return n_cols_; }
  std::size_t nnz() const { return cols_.size(); }

  /// dst = A src (dst is overwritten; resized if its size differs from n_rows()).
  void vmult(Vector<double>& dst, const Vector<double>& src) const;
  /// The diagonal entries (0 where the diagonal is not in the pattern).
  Vector<double> diagonal() const;
  /// Entry (i, j); 0 outside the pattern.
  double el(std::size_t i, std::size_t j) const;
  /// Whether (i, j) is part of the sparsity pattern.
  bool in_pattern(std::size_t i, std::size_t j) const;
  /// Index into values() of entry (i, j), or -1 outside the pattern.
  std::ptrdiff_t position(std::size_t i, std::size_t j) const;

  const std::vector<std::size_t>& row_ptr() const { return row_ptr_; }
  const std::vector<col_t>& cols() const { return cols_; }
  const std::vector<double>& values() const { return values_; }
  std::vector<double>& values() { return values_; }
  std::size_t memory_bytes() const {
    return row_ptr_.size() * sizeof(std::size_t) + cols_.size() * sizeof(col_t) + values_.size() * sizeof(double);
  }

 private:
  std::size_t n_rows_ = 0, n_cols_ = 0;
  std::vector<std::size_t> row_ptr_{0};
  std::vector<col_t> cols_;
  std::vector<double> values_;
};

/// Nonzeros of the structural pattern assemble_operator would build, counted on the global mesh
/// (dense element and face-coupling blocks; cg constraints not subtracted).
template <int dim>
std::size_t estimated_nnz(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, Form form);

/// The matrix of MatrixFreeOperator<dim, double>(mesh, dofs, config, form) on the locally stored
/// DoFs, assembled from element (and, for dg Laplace, face) matrices over the owned cells.
/// Quadrature (cells and faces alike, tensor rule of the 1D rule below):
///   - Cartesian mesh and config.cartesian_fast_path (the operator integrates exactly): Gauss with
///     k+1 points, exact for all integrands on affine Cartesian cells (degree <= 2k per direction);
///   - otherwise: fe::make_quadrature(config.quadrature, k), as the operator's general path.
/// cg Laplace: rows and columns of boundary DoFs replaced by the identity. Throws InputError when
/// the configuration does not match `dofs`, when estimated_nnz exceeds SparseMatrix::max_nnz, or
/// when a cell is inverted.
template <int dim>
SparseMatrix assemble_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                               const OperatorConfig& config, Form form);

}  // namespace tcfem::operators
