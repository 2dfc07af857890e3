#include "multigrid/transfer_1d.h"

#include <algorithm>

#include "core/error.h"
#include "multigrid/host/transfer.h"

namespace tcfem::multigrid {

Ell1d prolongation_1d(fe::Disc disc, int degree, int coarse_cells, bool lower_dirichlet, bool upper_dirichlet) {
  TCFEM_ASSERT(degree >= 1 && coarse_cells >= 1, "1D prolongation sizes");
  const auto p = prolongation_matrix_1d(degree);  // (2k+1) x (k+1)
  const int k = degree, nc = k + 1;
  Ell1d m;
  m.width = nc;
  if (disc == fe::Disc::cg) {
    m.rows = 2 * coarse_cells * k + 1;
    m.cols = coarse_cells * k + 1;
  } else {
    m.rows = 2 * coarse_cells * nc;
    m.cols = coarse_cells * nc;
  }
  m.col.assign(std::size_t(m.rows) * m.width, 0);
  m.weight.assign(std::size_t(m.rows) * m.width, 0.0);
  for (int r = 0; r < m.rows; ++r) {
    int c, j;  // coarse cell and row of P
    if (disc == fe::Disc::cg) {
      c = std::min(r / (2 * k), coarse_cells - 1);
      j = r - 2 * k * c;
    } else {
      const int fine_cell = r / nc, l = r % nc;
      c = fine_cell / 2;
      j = (fine_cell % 2) * k + l;
    }
    const bool fine_boundary =
        disc == fe::Disc::cg && ((r == 0 && lower_dirichlet) || (r == m.rows - 1 && upper_dirichlet));
    for (int i = 0; i < nc; ++i) {
      const int col = disc == fe::Disc::cg ? c * k + i : c * nc + i;
      const bool coarse_boundary =
          disc == fe::Disc::cg && ((col == 0 && lower_dirichlet) || (col == m.cols - 1 && upper_dirichlet));
      m.col[std::size_t(r) * m.width + i] = col;
      m.weight[std::size_t(r) * m.width + i] = fine_boundary || coarse_boundary ? 0.0 : p[j * nc + i];
    }
  }
  return m;
}

Ell1d transpose(const Ell1d& m) {
  std::vector<std::vector<std::pair<int, double>>> rows(m.cols);
  for (int r = 0; r < m.rows; ++r)
    for (int t = 0; t < m.width; ++t) {
      const double w = m.weight[std::size_t(r) * m.width + t];
      if (w != 0.0) rows[m.col[std::size_t(r) * m.width + t]].push_back({r, w});
    }
  Ell1d out;
  out.rows = m.cols;
  out.cols = m.rows;
  out.width = 1;
  for (const auto& r : rows) out.width = std::max<int>(out.width, int(r.size()));
  out.col.assign(std::size_t(out.rows) * out.width, 0);
  out.weight.assign(std::size_t(out.rows) * out.width, 0.0);
  for (int r = 0; r < out.rows; ++r)
    for (std::size_t t = 0; t < rows[r].size(); ++t) {
      out.col[std::size_t(r) * out.width + t] = rows[r][t].first;
      out.weight[std::size_t(r) * out.width + t] = rows[r][t].second;
    }
  return out;
}

}  // namespace tcfem::multigrid
