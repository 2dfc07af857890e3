#pragma once
// Cells of geometry order 2 for the matrix-free (geometry from nodes) kernels, on the host and the
// device. The node field x = I_1 x + d of a mesh (operators/geometry_data.h, NodeGeometry) stores
// the displacement d from the multilinear interpolant at every node of the Q_k lattice. Where every
// cell's d is a Q2 polynomial (a mesh of order-2 hexahedra or quadrilaterals, or a map quadratic in
// each coordinate), d is given by its values on the Q2 lattice ((2 n_cells + 1) per direction: the
// vertices, the edge and face midpoints and the cell centres), and a kernel reads 27 (2D: 9) values
// per cell instead of (k + 1)^dim. These functions derive those values from the Q_k field and measure how
// far the Q_k field is from their Q2 interpolant (zero up to rounding for such a mesh).
#include <cmath>
#include <cstdint>

#include "core/hd.h"

namespace tcfem::operators {

/// The quadratic Lagrange basis on {0, 1/2, 1} at t in [0, 1].
TCFEM_HD inline double quadratic_basis(int i, double t) {
  return i == 0 ? 2 * (t - 0.5) * (t - 1) : i == 1 ? 4 * t * (1 - t) : 2 * t * (t - 0.5);
}

/// The sizes of the Q_k field of the node lattice (k: degree; n_cells per direction; 2D: n_cells[2]
/// = 0, one node and one Q2 node along z).
struct NodeLattice {
  int k = 1;
  int n_cells[3] = {1, 1, 1};
  TCFEM_HD std::int64_t extent(int d) const { return std::int64_t(n_cells[d]) * k + 1; }
  TCFEM_HD std::int64_t extent2(int d) const { return 2 * std::int64_t(n_cells[d]) + 1; }
  TCFEM_HD std::int64_t nodes() const { return extent(0) * extent(1) * extent(2); }
  TCFEM_HD std::int64_t nodes2() const { return extent2(0) * extent2(1) * extent2(2); }
};

/// Component `comp` of the Q_k displacement disp[comp * L.nodes() + node] at Q2-lattice node
/// `node2`, in the cell that owns it (the lowest index along each direction, as the Q_k field's);
/// mid[j] = l_j(1/2), the Q_k Gauss-Lobatto basis at the midpoint (j = 0..k).
template <typename Number>
TCFEM_HD double q2_value(const Number* disp, const NodeLattice& L, const double* mid, int comp, std::int64_t node2) {
  int c[3], i[3];
  std::int64_t r = node2;
  for (int d = 0; d < 3; ++d) {
    const std::int64_t p = r % L.extent2(d);
    r /= L.extent2(d);
    c[d] = L.n_cells[d] == 0 ? 0 : int(p / 2 < L.n_cells[d] - 1 ? p / 2 : L.n_cells[d] - 1);
    i[d] = int(p - 2 * std::int64_t(c[d]));
  }
  int lo[3], hi[3];
  for (int d = 0; d < 3; ++d) {
    lo[d] = i[d] == 2 ? L.k : 0;
    hi[d] = i[d] == 0 ? 0 : L.k;
  }
  const std::int64_t n_nodes = L.nodes();
  double sum = 0;
  for (int jz = lo[2]; jz <= hi[2]; ++jz) {
    const double wz = i[2] == 1 ? mid[jz] : 1.0;
    for (int jy = lo[1]; jy <= hi[1]; ++jy) {
      const double wy = wz * (i[1] == 1 ? mid[jy] : 1.0);
      const std::int64_t row = ((std::int64_t(c[2]) * L.k + jz) * L.extent(1) + std::int64_t(c[1]) * L.k + jy) *
                               L.extent(0);
      for (int jx = lo[0]; jx <= hi[0]; ++jx)
        sum += wy * (i[0] == 1 ? mid[jx] : 1.0) *
               double(disp[comp * n_nodes + row + std::int64_t(c[0]) * L.k + jx]);
    }
  }
  return sum;
}

/// |d - I_2 d| of component `comp` at Q_k node `node`: the Q_k displacement against the Q2
/// interpolant of disp2[comp * L.nodes2() + node2] in the node's owning cell; gll: the Q_k nodes on
/// [0, 1].
template <typename Number>
TCFEM_HD double q2_defect(const Number* disp, const Number* disp2, const NodeLattice& L, const double* gll, int comp,
                          std::int64_t node) {
  int c[3];
  double phi[3][3];
  std::int64_t r = node;
  for (int d = 0; d < 3; ++d) {
    const std::int64_t p = r % L.extent(d);
    r /= L.extent(d);
    c[d] = L.n_cells[d] == 0 ? 0 : int(p / L.k < L.n_cells[d] - 1 ? p / L.k : L.n_cells[d] - 1);
    const double t = gll[int(p - std::int64_t(c[d]) * L.k)];
    for (int i = 0; i < 3; ++i) phi[d][i] = quadratic_basis(i, t);
  }
  const std::int64_t n2 = L.nodes2();
  const int nl = L.n_cells[2] == 0 ? 1 : 3;  // 2D: the one z node (phi[2] = (1, 0, 0) there)
  double sum = 0;
  for (int l = 0; l < nl; ++l)
    for (int j = 0; j < 3; ++j) {
      const std::int64_t row =
          ((2 * std::int64_t(c[2]) + l) * L.extent2(1) + 2 * std::int64_t(c[1]) + j) * L.extent2(0) + 2 * std::int64_t(c[0]);
      for (int i = 0; i < 3; ++i) sum += phi[2][l] * phi[1][j] * phi[0][i] * double(disp2[comp * n2 + row + i]);
    }
  return std::fabs(double(disp[comp * L.nodes() + node]) - sum);
}

/// The largest defect (q2_defect) below which a Q_k field is taken as Q2: the rounding of d =
/// x - I_1 x (of the order of the coordinates' magnitude `scale` times the unit roundoff, however
/// small d is) and of the Number-typed values (relative to the largest |d|, max_disp) through the
/// two interpolations, with a wide margin; a smooth map that is not Q2 differs from its Q2
/// interpolant by O(h^3) per cell, far above it on any mesh one device holds.
template <typename Number>
constexpr double q2_tolerance(double max_disp, double scale) {
  return (sizeof(Number) == sizeof(double) ? 1e-11 : 1e-6) * max_disp + 1e-12 * scale;
}

}  // namespace tcfem::operators
