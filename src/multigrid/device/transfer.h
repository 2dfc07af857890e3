#pragma once
// Grid transfer of the device backend: the same prolongation (polynomial interpolation of the
// coarse Q_k function at the fine nodes, multigrid/host/transfer.h) and its exact transpose as the
// restriction, written as a Kronecker product of global 1D operators and applied one direction
// at a time.
//
// The cg interpolant of a continuous piecewise Q_k function is the tensor product of 1D
// interpolations along the lattice lines, so P = P_{dim-1} x ... x P_0 with P_d the 1D global
// matrix: fine lattice node p lies in coarse cell c = min(p / 2k, N_c - 1) at local fine index
// j = p - 2k c and takes sum_i P(j, i) coarse[c k + i] (P the (2k+1) x (k+1) matrix of
// prolongation_matrix_1d; a node on a cell end is taken once, from one cell, with its unit row).
// The Dirichlet masks are products of 1D masks as well (a node is free iff it lies on no Dirichlet
// end in every direction; a Neumann end is free), so the constrained transfer Z_f P Z_c has the 1D factors z_f P_d z_c and
// the restriction is exactly its transpose, with the 1D factors transposed. dg: fine 1D index
// m = (2c + s)(k+1) + l takes row s k + l of P on coarse cell c; the DoFs are stored cell by cell,
// which the kernels' index map knows.
//
// Each 1D factor is a sparse matrix with at most `width` entries per row (ELLPACK layout: k+1
// for the prolongation, up to 4k for the cg restriction), applied by one kernel per direction:
// one thread per output entry, a gather of `width` inputs along the direction. dim passes per
// transfer; the intermediate arrays live in two work buffers of the transfer. Cost per transfer:
// about (2 + 2/2 + 2/4) fine-vector reads and writes in 3D, far below one operator apply.
#include <array>
#include <vector>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "multigrid/device/vector.h"
#include "multigrid/interfaces.h"
#include "multigrid/transfer_1d.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
class DeviceTransfer final : public Transfer<DeviceVector<Number>> {
 public:
  DeviceTransfer(const mesh::BoxMesh<dim>& coarse_mesh, const fe::DofLayout<dim>& coarse_dofs,
                 const mesh::BoxMesh<dim>& fine_mesh, const fe::DofLayout<dim>& fine_dofs);

  void prolongate(DeviceVector<Number>& fine, const DeviceVector<Number>& coarse) const override;
  void restrict_to_coarse(DeviceVector<Number>& coarse, const DeviceVector<Number>& fine) const override;

  /// Device memory held (matrices and work buffers).
  std::size_t device_bytes() const;

 private:
  struct DeviceEll {
    int width = 0;
    DeviceBuffer<int> col;
    DeviceBuffer<Number> weight;
  };
  /// dim passes from `in` (extents from_ext) to `out` (extents to_ext) through the work buffers.
  void apply(const std::array<DeviceEll, dim>& m, const std::array<std::int64_t, 3>& from_ext,
             const std::array<std::int64_t, 3>& to_ext, const Number* in, Number* out) const;

  fe::Disc disc_;
  int n_1d_;                              // k + 1
  std::size_t n_coarse_, n_fine_;
  std::array<std::int64_t, 3> coarse_ext_{1, 1, 1}, fine_ext_{1, 1, 1};  // 1D extents per direction
  std::array<DeviceEll, dim> prolongation_, restriction_;
  mutable DeviceBuffer<Number> work_a_, work_b_;
};

}  // namespace tcfem::multigrid
