#pragma once
// The 1D factors of the grid transfer in Kronecker form (used by the device transfer,
// multigrid/device/transfer.h, whose header explains the factorization), and the index map of
// one directional pass, written once for the device kernel and the host reference.
#include <array>
#include <cstdint>
#include <vector>

#include "core/hd.h"
#include "fe/dof_layout.h"

namespace tcfem::multigrid {

/// A 1D sparse matrix in ELLPACK layout: row r holds (col[r * width + t], weight[r * width + t])
/// for t < width; padding has weight 0 and column 0.
struct Ell1d {
  int rows = 0, cols = 0, width = 0;
  std::vector<int> col;
  std::vector<double> weight;
};

/// The 1D prolongation factor between a level of `coarse_cells` cells along one direction and its
/// refinement: cg with the Dirichlet masks of both levels folded in (at a Dirichlet end, given by
/// `lower_dirichlet` / `upper_dirichlet`: a zero row at the fine end node and zero weights of the
/// coarse end node), dg without masks.
Ell1d prolongation_1d(fe::Disc disc, int degree, int coarse_cells, bool lower_dirichlet = true,
                      bool upper_dirichlet = true);
/// The transpose, without stored zeros.
Ell1d transpose(const Ell1d& m);

/// One directional pass over an array of 1D extents `in_ext` (per direction; unused directions
/// 1): out has extents out_ext (equal to in_ext but in direction `dir`, where they are the rows
/// of the factor). cg arrays are lexicographic lattices (x fastest); dg arrays are stored cell by
/// cell (cells lexicographic, then the n_1d^dim nodes of a cell lexicographic), the 1D index of a
/// node being cell * n_1d + local.
struct PassShape {
  int dim = 3;
  int dir = 0;
  bool dg = false;
  int n_1d = 2;
  std::int64_t in_ext[3] = {1, 1, 1}, out_ext[3] = {1, 1, 1};  // plain arrays: usable in kernels
  TCFEM_HD std::int64_t n_out() const { return out_ext[0] * out_ext[1] * out_ext[2]; }
  /// Input extents `from`; output extents equal except `rows` in direction `d`.
  void set(int d, const std::array<std::int64_t, 3>& from, std::int64_t rows) {
    dir = d;
    for (int e = 0; e < 3; ++e) in_ext[e] = out_ext[e] = from[e];
    out_ext[d] = rows;
  }
};

/// Offset of the input entry with the 1D indices of output entry `t` (in out's storage order),
/// but with index 0 in direction `dir`; `stride` receives how the input offset grows per unit of
/// the 1D index in `dir` (cg: a plain stride; dg: returned as cell and node strides).
struct PassOffset {
  std::int64_t base;       ///< input offset with the dir-index 0
  std::int64_t cell_step;  ///< dg: input offset per cell along dir; cg: offset per node along dir
  std::int64_t node_step;  ///< dg: input offset per node along dir inside a cell; cg: unused
};

TCFEM_HD inline PassOffset pass_offset(const PassShape& s, std::int64_t t) {
  std::int64_t a[3] = {0, 0, 0};  // 1D indices of the output entry
  if (!s.dg) {
    for (int d = 0; d < s.dim; ++d) {
      a[d] = t % s.out_ext[d];
      t /= s.out_ext[d];
    }
    std::int64_t off = 0, stride = 1, step = 0;
    for (int d = 0; d < s.dim; ++d) {
      if (d == s.dir)
        step = stride;
      else
        off += a[d] * stride;
      stride *= s.in_ext[d];
    }
    return {off, step, 0};
  }
  std::int64_t n_cell = 1;
  for (int d = 0; d < s.dim; ++d) n_cell *= s.n_1d;
  std::int64_t cell = t / n_cell, local = t % n_cell;
  for (int d = 0; d < s.dim; ++d) {
    const std::int64_t cells_d = s.out_ext[d] / s.n_1d;
    a[d] = (cell % cells_d) * s.n_1d + local % s.n_1d;
    cell /= cells_d;
    local /= s.n_1d;
  }
  std::int64_t cell_off = 0, cell_stride = 1, node_off = 0, node_stride = 1, cell_step = 0, node_step = 0;
  for (int d = 0; d < s.dim; ++d) {
    if (d == s.dir) {
      cell_step = cell_stride;
      node_step = node_stride;
    } else {
      cell_off += (a[d] / s.n_1d) * cell_stride;
      node_off += (a[d] % s.n_1d) * node_stride;
    }
    cell_stride *= s.in_ext[d] / s.n_1d;
    node_stride *= s.n_1d;
  }
  return {cell_off * n_cell + node_off, cell_step * n_cell, node_step};
}

/// The 1D index of output entry `t` in direction `dir` (the row of the factor it takes).
TCFEM_HD inline std::int64_t pass_row(const PassShape& s, std::int64_t t) {
  if (!s.dg) {
    for (int d = 0; d < s.dir; ++d) t /= s.out_ext[d];
    return t % s.out_ext[s.dir];
  }
  std::int64_t n_cell = 1;
  for (int d = 0; d < s.dim; ++d) n_cell *= s.n_1d;
  std::int64_t cell = t / n_cell, local = t % n_cell;
  for (int d = 0; d < s.dir; ++d) {
    cell /= s.out_ext[d] / s.n_1d;
    local /= s.n_1d;
  }
  return (cell % (s.out_ext[s.dir] / s.n_1d)) * s.n_1d + local % s.n_1d;
}

/// Input offset of 1D index `col` along dir, given the pass offset.
TCFEM_HD inline std::int64_t pass_input(const PassShape& s, const PassOffset& o, std::int64_t col) {
  return s.dg ? o.base + (col / s.n_1d) * o.cell_step + (col % s.n_1d) * o.node_step : o.base + col * o.cell_step;
}

/// out[t] = sum_j m(row(t), j) in[input(t, j)]: the host reference of the device pass.
template <typename Number>
void apply_pass_host(const PassShape& s, const Ell1d& m, const Number* in, Number* out) {
  for (std::int64_t t = 0; t < s.n_out(); ++t) {
    const PassOffset o = pass_offset(s, t);
    const std::int64_t r = pass_row(s, t);
    Number v = Number(0);
    for (int j = 0; j < m.width; ++j)
      v += static_cast<Number>(m.weight[r * m.width + j]) * in[pass_input(s, o, m.col[r * m.width + j])];
    out[t] = v;
  }
}

}  // namespace tcfem::multigrid
