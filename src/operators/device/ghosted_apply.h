#pragma once
// The apply of an operator on a rank's ghosted box: the ghost values it reads come from their
// owners first. Where the operator's apply is split (DeviceOperator::split_apply), the exchange
// runs beside the interior cells: pack, interior cells, messages, unpack, the other cells.
// Usable without CUDA headers.
#include <algorithm>
#include <vector>

#include "core/device_exchange.h"
#include "mesh/box_mesh.h"
#include "operators/device/device_operator.h"

namespace tcfem::operators {

/// dst = A src (device vectors of the operator's storage type); `ghosts` null: a serial operator.
/// src's ghost entries are overwritten with their owners' values (src keeps its value).
inline void ghosted_vmult(const DeviceOperator& op, DeviceGhostExchange* ghosts, void* dst, void* src) {
  if (!ghosts) {
    op.vmult(dst, src);
    return;
  }
  const bool fp32 = op.value_size() == sizeof(float);
  auto begin = [&] {
    if (fp32)
      ghosts->begin_update(static_cast<float*>(src));
    else
      ghosts->begin_update(static_cast<double*>(src));
  };
  auto end = [&] {
    if (fp32)
      ghosts->end_update(static_cast<float*>(src));
    else
      ghosts->end_update(static_cast<double*>(src));
  };
  begin();
  if (!op.is_split()) {
    end();
    op.vmult(dst, src);
    return;
  }
  op.vmult_interior(dst, src);
  end();
  op.vmult_rest(dst, src);
}

/// The cells of a rank's ghosted box (as a mesh of its own: ghosted-box coordinates) whose apply
/// reads no ghost value an exchange of one cell layer writes: the owned box less one cell layer on
/// every side with a neighbour (the ghost nodes on the cut and the ghost cells' DoFs are read only
/// by the cells touching the cut).
template <int dim>
CellRange interior_cells(const mesh::Partition<dim>& part) {
  CellRange r;
  for (int d = 0; d < dim; ++d) {
    const int g0 = part.ghosted.begin[d];
    r.lo[d] = part.owned.begin[d] - g0 + (part.owned.begin[d] > g0 ? 1 : 0);
    r.hi[d] = part.owned.end[d] - g0 - (part.ghosted.end[d] > part.owned.end[d] ? 1 : 0);
  }
  return r;
}

/// The cells of a box of `n` cells per direction outside `inner` (clipped to the box) as at most
/// 2 dim disjoint boxes: for each direction from the last to the first, the slab below and the slab
/// above `inner` in that direction, within `inner`'s extent in the directions already taken. Empty
/// boxes are left out; an empty `inner` gives the whole box.
inline std::vector<CellRange> cells_around(int dim, const int* n, const CellRange& inner) {
  CellRange in;
  bool empty = false;
  for (int d = 0; d < dim; ++d) {
    in.lo[d] = std::clamp(inner.lo[d], 0, n[d]);
    in.hi[d] = std::clamp(inner.hi[d], 0, n[d]);
    empty = empty || in.hi[d] <= in.lo[d];
  }
  CellRange cur;
  for (int d = 0; d < dim; ++d) {
    cur.lo[d] = 0;
    cur.hi[d] = n[d];
  }
  if (empty) return {cur};
  std::vector<CellRange> out;
  for (int d = dim - 1; d >= 0; --d) {
    if (in.lo[d] > cur.lo[d]) {
      CellRange below = cur;
      below.hi[d] = in.lo[d];
      out.push_back(below);
    }
    if (in.hi[d] < cur.hi[d]) {
      CellRange above = cur;
      above.lo[d] = in.hi[d];
      out.push_back(above);
    }
    cur.lo[d] = in.lo[d];
    cur.hi[d] = in.hi[d];
  }
  return out;
}

}  // namespace tcfem::operators
