#include "direct/sparse.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace tcfem::direct {

double CsrMatrix::el(std::int64_t i, std::int64_t j) const {
  const auto begin = cols.begin() + row_ptr[i], end = cols.begin() + row_ptr[i + 1];
  const auto it = std::lower_bound(begin, end, static_cast<std::int32_t>(j));
  return (it != end && *it == j) ? values[static_cast<std::size_t>(it - cols.begin())] : 0.0;
}

void CsrMatrix::multiply(const double* x, double* y) const {
  for (std::int64_t i = 0; i < n_rows; ++i) {
    double s = 0.0;
    for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) s += values[p] * x[cols[p]];
    y[i] = s;
  }
}

void CsrMatrix::vmult(Vector<double>& dst, const Vector<double>& src) const {
  TCFEM_ASSERT(static_cast<std::int64_t>(src.size()) == n_cols, "CsrMatrix::vmult: size mismatch");
  if (static_cast<std::int64_t>(dst.size()) != n_rows) dst.resize(static_cast<std::size_t>(n_rows));
  multiply(src.data(), dst.data());
}

Vector<double> CsrMatrix::diagonal() const {
  Vector<double> d(static_cast<std::size_t>(std::min(n_rows, n_cols)));
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(d.size()); ++i) d[i] = el(i, i);
  return d;
}

CsrMatrix csr_from_triplets(std::int64_t n_rows, std::int64_t n_cols, std::vector<Triplet> triplets) {
  TCFEM_ASSERT(n_cols <= std::numeric_limits<std::int32_t>::max(), "csr_from_triplets: too many columns");
  std::sort(triplets.begin(), triplets.end(),
            [](const Triplet& a, const Triplet& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
  CsrMatrix m;
  m.n_rows = n_rows;
  m.n_cols = n_cols;
  m.row_ptr.assign(static_cast<std::size_t>(n_rows + 1), 0);
  for (std::size_t t = 0; t < triplets.size();) {
    const auto& first = triplets[t];
    TCFEM_ASSERT(first.row >= 0 && first.row < n_rows && first.col >= 0 && first.col < n_cols,
                 "csr_from_triplets: index out of range");
    double v = 0.0;
    std::size_t u = t;
    for (; u < triplets.size() && triplets[u].row == first.row && triplets[u].col == first.col; ++u)
      v += triplets[u].value;
    m.cols.push_back(first.col);
    m.values.push_back(v);
    ++m.row_ptr[first.row + 1];
    t = u;
  }
  for (std::int64_t i = 0; i < n_rows; ++i) m.row_ptr[i + 1] += m.row_ptr[i];
  return m;
}

CsrMatrix multiply(const CsrMatrix& a, const CsrMatrix& b) {
  TCFEM_ASSERT(a.n_cols == b.n_rows, "sparse multiply: inner dimensions differ");
  CsrMatrix c;
  c.n_rows = a.n_rows;
  c.n_cols = b.n_cols;
  c.row_ptr.assign(static_cast<std::size_t>(a.n_rows + 1), 0);
  std::vector<double> acc(static_cast<std::size_t>(b.n_cols), 0.0);
  std::vector<std::int64_t> marker(static_cast<std::size_t>(b.n_cols), -1);
  std::vector<std::int32_t> row_cols;
  for (std::int64_t i = 0; i < a.n_rows; ++i) {
    row_cols.clear();
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int64_t k = a.cols[p];
      const double av = a.values[p];
      for (std::int64_t q = b.row_ptr[k]; q < b.row_ptr[k + 1]; ++q) {
        const std::int32_t j = b.cols[q];
        if (marker[j] != i) {
          marker[j] = i;
          acc[j] = 0.0;
          row_cols.push_back(j);
        }
        acc[j] += av * b.values[q];
      }
    }
    std::sort(row_cols.begin(), row_cols.end());
    for (const auto j : row_cols) {
      c.cols.push_back(j);
      c.values.push_back(acc[j]);
    }
    c.row_ptr[i + 1] = static_cast<std::int64_t>(c.cols.size());
  }
  return c;
}

CsrMatrix transpose(const CsrMatrix& a) {
  CsrMatrix t;
  t.n_rows = a.n_cols;
  t.n_cols = a.n_rows;
  t.row_ptr.assign(static_cast<std::size_t>(a.n_cols + 1), 0);
  for (const auto j : a.cols) ++t.row_ptr[j + 1];
  for (std::int64_t j = 0; j < a.n_cols; ++j) t.row_ptr[j + 1] += t.row_ptr[j];
  t.cols.resize(a.cols.size());
  t.values.resize(a.values.size());
  std::vector<std::int64_t> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (std::int64_t i = 0; i < a.n_rows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const auto q = next[a.cols[p]]++;
      t.cols[q] = static_cast<std::int32_t>(i);
      t.values[q] = a.values[p];
    }
  return t;
}

std::int64_t drop_below(CsrMatrix& a, double tol) {
  std::int64_t out = 0, removed = 0;
  std::int64_t start = 0;
  for (std::int64_t i = 0; i < a.n_rows; ++i) {
    const std::int64_t end = a.row_ptr[i + 1];
    for (std::int64_t p = start; p < end; ++p) {
      if (std::abs(a.values[p]) > tol) {
        a.cols[out] = a.cols[p];
        a.values[out] = a.values[p];
        ++out;
      } else {
        ++removed;
      }
    }
    start = end;
    a.row_ptr[i + 1] = out;
  }
  a.cols.resize(static_cast<std::size_t>(out));
  a.values.resize(static_cast<std::size_t>(out));
  return removed;
}

double max_abs(const CsrMatrix& a) {
  double m = 0.0;
  for (const double v : a.values) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace tcfem::direct
