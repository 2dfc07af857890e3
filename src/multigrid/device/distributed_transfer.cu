#include "multigrid/device/distributed_transfer.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "multigrid/host/transfer.h"

namespace tcfem::multigrid {
namespace {

constexpr int block = 256;
int grid_for(std::size_t n) {
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>((n + block - 1) / block, 65535)));
}

/// out[i] = v[idx[i]]
template <typename Number>
__global__ void gather_kernel(const Number* __restrict__ v, const std::int64_t* __restrict__ idx, std::int64_t n,
                              Number* __restrict__ out) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = v[idx[i]];
}

/// v[idx[i]] = in[i] (the indices are distinct)
template <typename Number>
__global__ void scatter_kernel(const Number* __restrict__ in, const std::int64_t* __restrict__ idx, std::int64_t n,
                               Number* __restrict__ v) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    v[idx[i]] = in[i];
}

template <typename Number>
void gather(const Number* v, const DeviceBuffer<std::int64_t>& idx, Number* out) {
  if (!idx.size()) return;
  gather_kernel<<<grid_for(idx.size()), block>>>(v, idx.data(), std::int64_t(idx.size()), out);
  TCFEM_CUDA_CHECK_LAUNCH();
}
template <typename Number>
void scatter(const Number* in, const DeviceBuffer<std::int64_t>& idx, Number* v) {
  if (!idx.size()) return;
  scatter_kernel<<<grid_for(idx.size()), block>>>(in, idx.data(), std::int64_t(idx.size()), v);
  TCFEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <int dim, typename Number>
DeviceBoxTransfer<dim, Number>::DeviceBoxTransfer(const mesh::BoxMesh<dim>& coarse_mesh,
                                                  const fe::DofLayout<dim>& coarse_dofs,
                                                  const mesh::BoxMesh<dim>& fine_box_mesh,
                                                  const fe::DofLayout<dim>& fine_box_dofs,
                                                  DeviceGhostExchange* coarse_near, DeviceGhostExchange* fine_all)
    : coarse_near_(coarse_near), fine_all_(fine_all) {
  const auto& part = coarse_mesh.partition();
  // the coarse owned box grown by one cell, first as a part of the coarse mesh (for the global
  // indices of its entries), then as a mesh of its own
  const auto grown_part = mesh::Partition<dim>::sub_box(part.global_cells, part.owned, 1);
  const mesh::BoxMesh<dim> grown_in_mesh(part.global_cells, coarse_mesh.domain(), grown_part);
  const fe::DofLayout<dim> grown_in_dofs(grown_in_mesh, coarse_dofs.disc(), coarse_dofs.degree(),
                                         coarse_dofs.dirichlet_faces());
  grown_mesh_ = std::make_unique<mesh::BoxMesh<dim>>(mesh::ghosted_box_mesh(grown_in_mesh));
  grown_dofs_ = std::make_unique<fe::DofLayout<dim>>(*grown_mesh_, coarse_dofs.disc(), coarse_dofs.degree(),
                                                     fe::ghosted_box_dirichlet(grown_part, coarse_dofs.dirichlet_faces()));
  TCFEM_ASSERT(grown_dofs_->n_local() == grown_in_dofs.n_local(), "the grown box's lattice differs");
  for (int d = 0; d < dim; ++d)
    TCFEM_ASSERT(fine_box_mesh.n_cells()[d] == 2 * grown_mesh_->n_cells()[d],
                 "the fine ghosted box is not the refinement of the coarse owned box grown by one cell");
  serial_ = std::make_unique<DeviceTransfer<dim, Number>>(*grown_mesh_, *grown_dofs_, fine_box_mesh, fine_box_dofs);
  // where each grown-box entry sits in the coarse vector (the grown box lies in the coarse
  // ghosted box; both number lexicographically: cg the lattice, dg the cells)
  const auto& grown = grown_part.ghosted;
  std::vector<std::int64_t> map(grown_in_dofs.n_local());
  if (coarse_dofs.disc() == fe::Disc::cg) {
    const long k = coarse_dofs.degree();
    const auto extent = grown_in_dofs.lattice_extent();
    parallel_chunks(0, map.size(), [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        std::array<long, dim> p;
        std::size_t r = i;
        for (int d = 0; d < dim; ++d) {
          p[d] = k * grown.begin[d] + long(r % std::size_t(extent[d]));
          r /= std::size_t(extent[d]);
        }
        map[i] = coarse_dofs.lattice_index(p);
      }
    }, host_threads(), 4096);
  } else {
    const std::size_t per_cell = std::size_t(coarse_dofs.dofs_per_cell());
    std::vector<index_t> idx(per_cell);
    for (std::size_t cell = 0; cell < grown.n_cells(); ++cell) {
      std::array<int, dim> c;
      std::size_t r = cell;
      for (int d = 0; d < dim; ++d) {
        c[d] = grown.begin[d] + int(r % std::size_t(grown.extent(d)));
        r /= std::size_t(grown.extent(d));
      }
      coarse_dofs.cell_dof_indices(c, idx.data());
      for (std::size_t i = 0; i < per_cell; ++i) map[cell * per_cell + i] = idx[i];
    }
  }
  map_ = DeviceBuffer<std::int64_t>(map);
  grown_.resize(map.size());
  device::set_zero(grown_);
}

template <int dim, typename Number>
DeviceBoxTransfer<dim, Number>::~DeviceBoxTransfer() = default;

template <int dim, typename Number>
void DeviceBoxTransfer<dim, Number>::prolongate(DeviceVector<Number>& fine, const DeviceVector<Number>& coarse) const {
  // the ghosts are copies of their owners' entries: updating them leaves the vector's value as it was
  if (coarse_near_) coarse_near_->update_ghosts(const_cast<Number*>(coarse.data()));
  gather(coarse.data(), map_, grown_.data());
  serial_->prolongate(fine, grown_);
}

template <int dim, typename Number>
void DeviceBoxTransfer<dim, Number>::restrict_to_coarse(DeviceVector<Number>& coarse,
                                                        const DeviceVector<Number>& fine) const {
  if (fine_all_) fine_all_->update_ghosts(const_cast<Number*>(fine.data()));
  serial_->restrict_to_coarse(grown_, fine);
  device::set_zero(coarse);
  scatter(grown_.data(), map_, coarse.data());
}

template <int dim, typename Number>
std::size_t DeviceBoxTransfer<dim, Number>::device_bytes() const {
  return serial_->device_bytes() + map_.size() * (sizeof(std::int64_t) + sizeof(Number));
}

template <int dim, typename Number>
DeviceGatherTransfer<dim, Number>::DeviceGatherTransfer(const fe::DofLayout<dim>& fine_dofs,
                                                        const mesh::BoxMesh<dim>* coarse_mesh,
                                                        const fe::DofLayout<dim>* coarse_dofs,
                                                        const mesh::BoxMesh<dim>* gathered_mesh,
                                                        const fe::DofLayout<dim>* gathered_dofs,
                                                        std::shared_ptr<NcclComm> nccl)
    : comm_(fine_dofs.communicator()), nccl_(std::move(nccl)), n_local_(fine_dofs.n_local()) {
  const bool root = comm_.rank() == 0;
  TCFEM_ASSERT(!root || (coarse_mesh && coarse_dofs && gathered_mesh && gathered_dofs),
               "DeviceGatherTransfer: rank 0 needs the gathered level and the one below it");
  const auto plan = make_gather_plan(fine_dofs, root ? gathered_dofs->n_local() : 0);
  owned_ = DeviceBuffer<std::int64_t>(plan.owned);
  packed_.allocate(plan.owned.size());
  if (root) {
    serial_ = std::make_unique<DeviceTransfer<dim, Number>>(*coarse_mesh, *coarse_dofs, *gathered_mesh,
                                                            *gathered_dofs);
    gathered_.resize(gathered_dofs->n_local());
    device::set_zero(gathered_);
    // the other ranks' messages, one after the other: owned entries in, stored entries out
    offset_.assign(std::size_t(comm_.size()) + 1, 0);
    for (int r = 0; r < comm_.size(); ++r) {
      owned_global_.emplace_back(plan.owned_global[r]);
      stored_global_.emplace_back(plan.stored_global[r]);
      const std::size_t n = r == 0 ? 0 : std::max(plan.owned_global[r].size(), plan.stored_global[r].size());
      offset_[std::size_t(r) + 1] = offset_[std::size_t(r)] + n;
    }
    staged_.allocate(offset_.back());
    if (!nccl_) host_.allocate(offset_.back());
  } else if (!nccl_) {
    host_.allocate(std::max(plan.owned.size(), n_local_));
  }
}

template <int dim, typename Number>
DeviceGatherTransfer<dim, Number>::~DeviceGatherTransfer() = default;

template <int dim, typename Number>
void DeviceGatherTransfer<dim, Number>::restrict_to_coarse(DeviceVector<Number>& coarse,
                                                           const DeviceVector<Number>& fine) const {
  TCFEM_ASSERT(fine.size() == n_local_, "transfer vector sizes");
  gather(fine.data(), owned_, packed_.data());
  constexpr bool fp32 = sizeof(Number) == 4;
  if (nccl_) {
    // stream-ordered: the messages after the gather, the scatters after the messages
    if (comm_.rank() != 0) {
      nccl_->exchange({}, {{0, packed_.data(), packed_.size()}}, fp32, 0);
      return;
    }
    scatter(packed_.data(), owned_global_[0], gathered_.data());
    std::vector<NcclComm::Message> receives;
    for (int r = 1; r < comm_.size(); ++r)
      receives.push_back({r, staged_.data() + offset_[r], owned_global_[r].size()});
    nccl_->exchange(receives, {}, fp32, 0);
    for (int r = 1; r < comm_.size(); ++r) scatter(staged_.data() + offset_[r], owned_global_[r], gathered_.data());
    serial_->restrict_to_coarse(coarse, gathered_);
    return;
  }
  std::vector<Communicator::Message> receives, sends;
  if (comm_.rank() != 0) {
    if (packed_.size()) packed_.copy_to_host(host_.data(), packed_.size());
    sends.push_back({0, host_.data(), packed_.size() * sizeof(Number)});
    comm_.exchange(receives, sends, 304);
    return;
  }
  // rank 0: its own entries on the device, the others' through the host
  scatter(packed_.data(), owned_global_[0], gathered_.data());
  for (int r = 1; r < comm_.size(); ++r)
    receives.push_back({r, host_.data() + offset_[r], owned_global_[r].size() * sizeof(Number)});
  comm_.exchange(receives, sends, 304);
  if (offset_.back()) staged_.copy_from_host(host_.data(), offset_.back());
  for (int r = 1; r < comm_.size(); ++r) scatter(staged_.data() + offset_[r], owned_global_[r], gathered_.data());
  serial_->restrict_to_coarse(coarse, gathered_);
}

template <int dim, typename Number>
void DeviceGatherTransfer<dim, Number>::prolongate(DeviceVector<Number>& fine, const DeviceVector<Number>& coarse) const {
  TCFEM_ASSERT(fine.size() == n_local_, "transfer vector sizes");
  constexpr bool fp32 = sizeof(Number) == 4;
  if (nccl_) {
    if (comm_.rank() != 0) {
      nccl_->exchange({{0, fine.data(), n_local_}}, {}, fp32, 0);
      return;
    }
    serial_->prolongate(gathered_, coarse);
    std::vector<NcclComm::Message> sends;
    for (int r = 1; r < comm_.size(); ++r) {
      gather(gathered_.data(), stored_global_[r], staged_.data() + offset_[r]);
      sends.push_back({r, staged_.data() + offset_[r], stored_global_[r].size()});
    }
    gather(gathered_.data(), stored_global_[0], fine.data());
    nccl_->exchange({}, sends, fp32, 0);
    return;
  }
  std::vector<Communicator::Message> receives, sends;
  if (comm_.rank() != 0) {
    receives.push_back({0, host_.data(), n_local_ * sizeof(Number)});
    comm_.exchange(receives, sends, 305);
    fine.copy_from_host(host_.data(), n_local_);
    return;
  }
  serial_->prolongate(gathered_, coarse);
  for (int r = 1; r < comm_.size(); ++r) {
    gather(gathered_.data(), stored_global_[r], staged_.data() + offset_[r]);
    sends.push_back({r, host_.data() + offset_[r], stored_global_[r].size() * sizeof(Number)});
  }
  if (offset_.back()) staged_.copy_to_host(host_.data(), offset_.back());
  gather(gathered_.data(), stored_global_[0], fine.data());
  comm_.exchange(receives, sends, 305);
}

template <int dim, typename Number>
std::size_t DeviceGatherTransfer<dim, Number>::device_bytes() const {
  std::size_t index = owned_.size();
  for (const auto& v : owned_global_) index += v.size();
  for (const auto& v : stored_global_) index += v.size();
  return (serial_ ? serial_->device_bytes() : 0) + gathered_.size() * sizeof(Number) +
         (packed_.size() + staged_.size()) * sizeof(Number) + index * sizeof(std::int64_t);
}

template class DeviceBoxTransfer<2, double>;
template class DeviceBoxTransfer<3, double>;
template class DeviceBoxTransfer<2, float>;
template class DeviceBoxTransfer<3, float>;
template class DeviceGatherTransfer<2, double>;
template class DeviceGatherTransfer<3, double>;
template class DeviceGatherTransfer<2, float>;
template class DeviceGatherTransfer<3, float>;

}  // namespace tcfem::multigrid
