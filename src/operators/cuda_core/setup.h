#pragma once
// Host-side parameters of the cuda-core kernels: even-odd 1D matrices, tile and chunk counts, DG
// face constants. Shared by the device operator (operators/cuda_core/laplace.cu) and the CPU tests of the
// host emulation (operators/cuda_core/emulator.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "fe/lagrange.h"
#include "mesh/box_mesh.h"
#include "operators/cuda_core/blocks.h"
#include "operators/cuda_core/dg_blocks.h"
#include "operators/operator_tables.h"

namespace tcfem::operators::cuda_core {

/// Even-odd form of the symmetric, centrosymmetric n x n row-major matrix `a` times `scale`.
template <int n, typename Number>
EvenOdd<n, Number> make_even_odd(const std::vector<double>& a, double scale) {
  TCFEM_ASSERT(a.size() == std::size_t(n * n), "even-odd: matrix size");
  constexpr int m = n / 2, ne = n - m;
  EvenOdd<n, Number> A{};
  for (int i = 0; i < ne; ++i)
    for (int j = 0; j < ne; ++j) {
      const double v = (j < m) ? 0.5 * (a[i * n + j] + a[i * n + n - 1 - j]) : a[i * n + j];
      A.e[i * ne + j] = static_cast<Number>(scale * v);
    }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) A.o[i * m + j] = static_cast<Number>(scale * 0.5 * (a[i * n + j] - a[i * n + n - 1 - j]));
  return A;
}

/// Whether `a` is symmetric and centrosymmetric to rounding.
inline bool is_even_odd_symmetric(const std::vector<double>& a, int n) {
  double scale = 0.0;
  for (double v : a) scale = std::max(scale, std::abs(v));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (std::abs(a[i * n + j] - a[j * n + i]) > 1e-13 * scale ||
          std::abs(a[i * n + j] - a[(n - 1 - i) * n + (n - 1 - j)]) > 1e-13 * scale)
        return false;
  return true;
}

/// The kernels need one process owning the whole box.
template <int dim>
void require_serial_mesh(const mesh::BoxMesh<dim>& mesh) {
  const auto& part = mesh.partition();
  for (int d = 0; d < dim; ++d)
    if (part.owned.begin[d] != 0 || part.owned.end[d] != part.global_cells[d] || part.ghosted.begin[d] != 0 ||
        part.ghosted.end[d] != part.global_cells[d])
      throw InputError("the cuda-core kernels support a single process owning the whole mesh");
}

/// Layers per work item: about `items_per_worker` items for each of `workers` workers (short items
/// balance the workers, long ones cost fewer prologues).
inline int choose_chunk(std::int64_t tiles, int layers, std::int64_t workers, double items_per_worker) {
  const double per_item = double(tiles) * layers / std::max(1.0, items_per_worker * double(workers));
  return std::clamp(int(per_item), 1, std::max(1, layers));
}

/// The work regions of an apply split around a box of cells (DeviceOperator::split_apply).
struct SplitRegions {
  WorkRegion interior;            ///< the tiles and layers wholly inside the box (empty: none)
  std::vector<WorkRegion> rest;   ///< every other tile and layer, each in one region
};

/// The split of the tile grid of `w` (tiles of T cells along x, and y in 3D; layers along the last
/// direction; `cells` per direction) around the cells [lo[d], hi[d]): the interior region holds
/// the tiles wholly inside the box (a partial last tile counts where the box reaches the grid's
/// end) and its layers; the rest, at most 6 regions in 3D and 2 in 2D, the layers below and above
/// it, then (3D) the tile rows before and after it, then the tiles left and right of it. An empty
/// interior leaves one rest region, the whole grid.
inline SplitRegions split_regions(const TileWork& w, int T, int dim, const int cells[3], const int lo[3],
                                  const int hi[3]) {
  SplitRegions r;
  const WorkRegion whole = w.whole_region();
  WorkRegion in = whole;
  for (int d = 0; d + 1 < dim; ++d) {
    in.tile0[d] = (std::max(lo[d], 0) + T - 1) / T;
    in.tile1[d] = hi[d] >= cells[d] ? w.tiles[d] : std::max(hi[d], 0) / T;
  }
  const int s = dim - 1;  // the streaming direction
  in.layer0 = std::clamp(lo[s], 0, w.layers);
  in.layer1 = std::clamp(hi[s], 0, w.layers);
  if (in.empty()) {
    r.interior = WorkRegion{{0, 0}, {0, 0}, 0, 0};
    r.rest.push_back(whole);
    return r;
  }
  r.interior = in;
  auto add = [&](WorkRegion g) {
    if (!g.empty()) r.rest.push_back(g);
  };
  WorkRegion g = whole;
  g.layer1 = in.layer0;  // below
  add(g);
  g = whole;
  g.layer0 = in.layer1;  // above
  add(g);
  g = whole;
  g.layer0 = in.layer0;
  g.layer1 = in.layer1;
  WorkRegion rows = g;
  rows.tile1[1] = in.tile0[1];  // the tile rows before (3D)
  add(rows);
  rows = g;
  rows.tile0[1] = in.tile1[1];  // and after
  add(rows);
  g.tile0[1] = in.tile0[1];
  g.tile1[1] = in.tile1[1];
  WorkRegion side = g;
  side.tile1[0] = in.tile0[0];  // left
  add(side);
  side = g;
  side.tile0[0] = in.tile1[0];  // right
  add(side);
  return r;
}

/// Parameters of the Cartesian cg kernel with work items of `chunk` layers (the queue pointer is
/// the operator's).
template <int dim, int k, typename Number>
CgParams<dim, k, Number> make_cg_params(const mesh::BoxMesh<dim>& mesh, int chunk) {
  require_serial_mesh(mesh);
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto mass = fe::exact_mass_matrix(basis).data;
  const auto stiff = fe::exact_stiffness_matrix(basis).data;
  TCFEM_ASSERT(is_even_odd_symmetric(mass, k + 1) && is_even_odd_symmetric(stiff, k + 1),
               "1D matrices are not centrosymmetric");
  const auto h = mesh.cell_size();
  const auto nc = mesh.n_cells();
  CgParams<dim, k, Number> p;
  p.mass = make_even_odd<k + 1, Number>(mass, 1.0);
  for (int d = 0; d < dim; ++d) {
    double c = 1.0;
    for (int e = 0; e < dim; ++e) c *= e == d ? 1.0 / h[e] : h[e];
    p.stiff[d] = make_even_odd<k + 1, Number>(stiff, c);
  }
  for (int d = 0; d < dim; ++d) p.lattice[d] = nc[d] * k + 1;
  p.plane = dim == 3 ? std::int64_t(p.lattice[0]) * p.lattice[1] : p.lattice[0];
  if constexpr (dim == 3) {
    constexpr int T = Cg3Program<k, Number>::L.T;
    p.tiles[0] = (nc[0] + T - 1) / T;
    p.tiles[1] = (nc[1] + T - 1) / T;
    p.layers = nc[2];
  } else {
    constexpr int T = Cg2Program<k, Number>::L.T;
    p.tiles[0] = (nc[0] + T - 1) / T;
    p.tiles[1] = 1;
    p.layers = nc[1];
  }
  p.chunk = std::clamp(chunk, 1, p.layers);
  p.region = p.whole_region();
  return p;
}

/// Parameters of the Cartesian SIPG kernel with work items of `chunk` layers.
template <int dim, int k, typename Number>
DgParams<dim, k, Number> make_dg_params(const mesh::BoxMesh<dim>& mesh, int chunk) {
  require_serial_mesh(mesh);
  constexpr int n = k + 1;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const auto mass = fe::exact_mass_matrix(basis).data;
  const auto h = mesh.cell_size();
  const auto nc = mesh.n_cells();
  DgParams<dim, k, Number> p;
  p.mass = make_even_odd<n, Number>(mass, 1.0);
  for (int i = 0; i < n * n; ++i) p.mass_full[i] = static_cast<Number>(mass[i]);
  for (int i = 0; i < n; ++i) {
    p.d0[i] = static_cast<Number>(basis.derivative(i, 0.0));
    p.d1[i] = static_cast<Number>(basis.derivative(i, 1.0));
  }
  for (int d = 0; d < dim; ++d) {
    double s = 1.0;
    for (int e = 0; e < dim; ++e)
      if (e != d) s *= h[e];
    const auto blocks = sipg_line_blocks(basis, h[d]);
    TCFEM_ASSERT(is_even_odd_symmetric(blocks.self[0], n), "SIPG self block is not centrosymmetric");
    p.self[d] = make_even_odd<n, Number>(blocks.self[0], s);
    const double gamma = 2.0 * k * (k + 1) / h[d];  // as in sipg_line_blocks
    p.a[d] = static_cast<Number>(s * gamma);
    p.b[d] = static_cast<Number>(s * 0.5 / h[d]);
  }
  for (int d = 0; d < dim; ++d) p.cells[d] = nc[d];
  if constexpr (dim == 3) {
    constexpr int T = Dg3Program<k, Number>::L.T;
    p.tiles[0] = (nc[0] + T - 1) / T;
    p.tiles[1] = (nc[1] + T - 1) / T;
    p.layers = nc[2];
  } else {
    constexpr int T = Dg2Program<k, Number>::L.T;
    p.tiles[0] = (nc[0] + T - 1) / T;
    p.tiles[1] = 1;
    p.layers = nc[1];
  }
  p.chunk = std::clamp(chunk, 1, p.layers);
  p.region = p.whole_region();
  return p;
}

}  // namespace tcfem::operators::cuda_core
