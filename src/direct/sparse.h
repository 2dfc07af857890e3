#pragma once
// Compressed sparse row matrices of the direct solver (double values, sorted columns per row) and
// the few sparse operations the hierarchical-basis transform needs: products, transposes,
// dropping of round-off entries.
#include <cstdint>
#include <vector>

#include "core/vector.h"

namespace tcfem::direct {

struct CsrMatrix {
  std::int64_t n_rows = 0, n_cols = 0;
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int32_t> cols;
  std::vector<double> values;

  std::int64_t nnz() const { return static_cast<std::int64_t>(cols.size()); }
  /// Entry (i, j), 0 outside the pattern (binary search in row i).
  double el(std::int64_t i, std::int64_t j) const;
  /// dst = A src (for the CG reference solver).
  void vmult(Vector<double>& dst, const Vector<double>& src) const;
  /// y = A x on raw arrays.
  void multiply(const double* x, double* y) const;
  Vector<double> diagonal() const;
  std::int64_t memory_bytes() const {
    return static_cast<std::int64_t>(row_ptr.size() * 8 + cols.size() * 4 + values.size() * 8);
  }
};

/// Builds a CSR matrix from (row, col, value) triplets; duplicates are summed.
struct Triplet {
  std::int32_t row, col;
  double value;
};
CsrMatrix csr_from_triplets(std::int64_t n_rows, std::int64_t n_cols, std::vector<Triplet> triplets);

/// A B (Gustavson's algorithm with a dense accumulator row).
CsrMatrix multiply(const CsrMatrix& a, const CsrMatrix& b);
/// A^T.
CsrMatrix transpose(const CsrMatrix& a);
/// Removes entries with |a_ij| <= tol (in place); returns the number removed.
std::int64_t drop_below(CsrMatrix& a, double tol);
/// max |a_ij|.
double max_abs(const CsrMatrix& a);

}  // namespace tcfem::direct
