#pragma once
// Grid transfers of the device backend between levels spread over ranks. A distributed level runs
// on each rank's ghosted box (two cells wide) as a mesh of its own (mesh::ghosted_box_mesh); its
// device vectors hold the owned entries and the ghost copies, and every rank computes its owned
// entries alone.
//
// DeviceBoxTransfer: between two distributed levels. The coarse owned box grown by one cell
// (clipped to the grid) refines into exactly the fine ghosted box, so the transfer of one process
// (DeviceTransfer) runs between those two boxes, each a mesh of its own whose inner faces are
// constrained. Prolongation: the coarse ghosts of one cell layer are updated, the grown box is
// copied out of the coarse vector and prolongated onto the whole fine box; fine owned nodes get
// their values from coarse cells of the grown box only, and none from a node on its inner faces
// (the coarse basis function of such a node vanishes on the owned cells' fine nodes). Restriction:
// every fine ghost is updated (the coarse owned nodes gather the fine nodes of the adjacent coarse
// cells, up to two fine cells outside the owned box), the grown box restricted and copied into
// the coarse vector. dg: children lie in their parent, so no exchange is needed.
//
// DeviceGatherTransfer: between the gathered level (the coarsest distributed one) and the level
// below it, stored on rank 0: the owned entries travel to rank 0 (NCCL messages queued on the
// default stream where the run's exchange is NCCL's, else through the host: the levels here are
// small), which restricts with the transfer of one process; prolongation runs on rank 0 and sends
// every rank its stored entries.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/device_exchange.h"
#include "core/nccl_comm.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "multigrid/device/transfer.h"
#include "multigrid/device/vector.h"
#include "multigrid/interfaces.h"

namespace tcfem::multigrid {

template <int dim, typename Number>
class DeviceBoxTransfer final : public Transfer<DeviceVector<Number>> {
 public:
  /// `coarse_mesh`, `coarse_dofs`: the coarse level as distributed (its partition the halved fine
  /// one); `fine_box_*`: the fine level's ghosted box as a mesh of its own. `coarse_near` updates
  /// the coarse ghosts of one cell layer, `fine_all` every fine ghost (both null for dg).
  DeviceBoxTransfer(const mesh::BoxMesh<dim>& coarse_mesh, const fe::DofLayout<dim>& coarse_dofs,
                    const mesh::BoxMesh<dim>& fine_box_mesh, const fe::DofLayout<dim>& fine_box_dofs,
                    DeviceGhostExchange* coarse_near, DeviceGhostExchange* fine_all);
  ~DeviceBoxTransfer() override;

  void prolongate(DeviceVector<Number>& fine, const DeviceVector<Number>& coarse) const override;
  void restrict_to_coarse(DeviceVector<Number>& coarse, const DeviceVector<Number>& fine) const override;
  std::size_t device_bytes() const;

 private:
  std::unique_ptr<mesh::BoxMesh<dim>> grown_mesh_;
  std::unique_ptr<fe::DofLayout<dim>> grown_dofs_;
  std::unique_ptr<DeviceTransfer<dim, Number>> serial_;
  DeviceBuffer<std::int64_t> map_;  // grown-box entry -> coarse local entry
  DeviceGhostExchange* coarse_near_;
  DeviceGhostExchange* fine_all_;
  mutable DeviceVector<Number> grown_;
};

template <int dim, typename Number>
class DeviceGatherTransfer final : public Transfer<DeviceVector<Number>> {
 public:
  /// `fine_dofs`: the gathered level as distributed; on rank 0 also the level below it
  /// (`coarse_*`) and the gathered level as a mesh of one process (`gathered_*`); the other ranks
  /// pass null for those and have coarse vectors of size 0. `nccl`: the messages as NCCL's,
  /// stream-ordered (null: MPI through pinned host buffers). Collective.
  DeviceGatherTransfer(const fe::DofLayout<dim>& fine_dofs, const mesh::BoxMesh<dim>* coarse_mesh,
                       const fe::DofLayout<dim>* coarse_dofs, const mesh::BoxMesh<dim>* gathered_mesh,
                       const fe::DofLayout<dim>* gathered_dofs, std::shared_ptr<NcclComm> nccl = nullptr);
  ~DeviceGatherTransfer() override;

  void prolongate(DeviceVector<Number>& fine, const DeviceVector<Number>& coarse) const override;
  void restrict_to_coarse(DeviceVector<Number>& coarse, const DeviceVector<Number>& fine) const override;
  std::size_t device_bytes() const;

 private:
  Communicator comm_;
  std::shared_ptr<NcclComm> nccl_;
  std::size_t n_local_;
  DeviceBuffer<std::int64_t> owned_;                     // this rank's owned local entries
  // rank 0, per rank: the gathered level's entries of its owned and of its stored entries
  std::vector<DeviceBuffer<std::int64_t>> owned_global_, stored_global_;
  std::vector<std::size_t> offset_;                        // rank 0: each rank's part of staged_
  std::unique_ptr<DeviceTransfer<dim, Number>> serial_;  // rank 0
  mutable DeviceVector<Number> gathered_;                // rank 0: the gathered level's vector
  mutable DeviceBuffer<Number> packed_;                  // this rank's owned entries
  mutable DeviceBuffer<Number> staged_;                  // rank 0: the other ranks' messages on the device
  mutable PinnedBuffer<Number> host_;                    // the messages on the host (rank 0: all)
};

}  // namespace tcfem::multigrid
