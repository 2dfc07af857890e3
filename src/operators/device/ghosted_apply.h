#pragma once
// The apply of an operator on a rank's ghosted box: the ghost values it reads come from their
// owners first. Where the operator's apply is split (DeviceOperator::split_apply), the exchange
// runs beside the interior cells: pack, interior cells, messages, unpack, the other cells.
// Usable without CUDA headers.
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

}  // namespace tcfem::operators
