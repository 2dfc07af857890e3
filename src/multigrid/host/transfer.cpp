#include "multigrid/host/transfer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "fe/lagrange.h"
#include "tensor/contract.h"

namespace tcfem::multigrid {

namespace {
constexpr int ipow(int n, int p) { return p == 0 ? 1 : n * ipow(n, p - 1); }
}  // namespace

std::vector<double> prolongation_matrix_1d(int degree) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(degree);
  const int k = degree, nf = 2 * k + 1, nc = k + 1;
  std::vector<double> p(nf * nc);
  for (int j = 0; j < nf; ++j) {
    const double y = j <= k ? 0.5 * basis.nodes()[j] : 0.5 * (1.0 + basis.nodes()[j - k]);
    for (int i = 0; i < nc; ++i) p[j * nc + i] = basis.value(i, y);
    // fine nodes that are coarse nodes (the cell ends; the midpoint for even k): exact unit rows
    for (int i = 0; i < nc; ++i)
      if (std::abs(y - basis.nodes()[i]) < 1e-14)
        for (int l = 0; l < nc; ++l) p[j * nc + l] = l == i ? 1.0 : 0.0;
  }
  return p;
}

template <int dim, typename Number>
MatrixFreeTransfer<dim, Number>::MatrixFreeTransfer(const mesh::BoxMesh<dim>& coarse_mesh,
                                                    const fe::DofLayout<dim>& coarse_dofs,
                                                    const mesh::BoxMesh<dim>& fine_mesh,
                                                    const fe::DofLayout<dim>& fine_dofs)
    : coarse_mesh_(&coarse_mesh), coarse_dofs_(&coarse_dofs), fine_dofs_(&fine_dofs), k_(coarse_dofs.degree()) {
  if (coarse_dofs.disc() != fine_dofs.disc() || coarse_dofs.degree() != fine_dofs.degree())
    throw InputError("transfer between levels of different spaces");
  for (int d = 0; d < dim; ++d)
    if (fine_mesh.n_cells()[d] != 2 * coarse_mesh.n_cells()[d])
      throw InputError("transfer needs the fine mesh to be the uniform refinement of the coarse one");
  const auto p = prolongation_matrix_1d(k_);
  p_.assign(p.begin(), p.end());
  const int nf = ipow(2 * k_ + 1, dim);
  a_.resize(nf);
  b_.resize(nf);
  idx_c_.resize(ipow(k_ + 1, dim));
  idx_f_.resize(nf);
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::fine_patch_indices(const std::array<int, dim>& c, index_t* idx) const {
  const int n = 2 * k_ + 1;
  std::array<long, dim> p0;
  for (int d = 0; d < dim; ++d) p0[d] = 2L * c[d] * k_;
  const index_t base = fine_dofs_->lattice_index(p0);
  const auto& ext = fine_dofs_->lattice_extent();
  if constexpr (dim == 2) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) idx[i + n * j] = base + i + ext[0] * j;
  } else {
    for (int l = 0; l < n; ++l)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) idx[i + n * (j + n * l)] = base + i + ext[0] * (j + ext[1] * l);
  }
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::prolongate(Vector<Number>& fine, const Vector<Number>& coarse) const {
  TCFEM_ASSERT(fine.size() == fine_dofs_->n_local() && coarse.size() == coarse_dofs_->n_local(),
               "transfer vector sizes");
  if (coarse_dofs_->disc() == fe::Disc::cg)
    prolongate_cg(fine, coarse);
  else
    prolongate_dg(fine, coarse);
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::restrict_to_coarse(Vector<Number>& coarse, const Vector<Number>& fine) const {
  TCFEM_ASSERT(fine.size() == fine_dofs_->n_local() && coarse.size() == coarse_dofs_->n_local(),
               "transfer vector sizes");
  if (coarse_dofs_->disc() == fe::Disc::cg)
    restrict_cg(coarse, fine);
  else
    restrict_dg(coarse, fine);
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::prolongate_cg(Vector<Number>& fine, const Vector<Number>& coarse) const {
  using tensor::apply_1d;
  const int nc = k_ + 1, nf = 2 * k_ + 1, n_coarse = ipow(nc, dim), n_fine = ipow(nf, dim);
  const auto& cmask = coarse_dofs_->boundary_mask();
  const auto& fmask = fine_dofs_->boundary_mask();
  // distributed: the coarse cells' nodes owned by other ranks
  if (const auto& ghosts = coarse_dofs_->ghost_layout()) ghosts->update_ghosts(const_cast<Number*>(coarse.data()));
  for (std::size_t cell = 0; cell < coarse_mesh_->n_owned_cells(); ++cell) {
    const auto c = coarse_mesh_->cell_index(cell);
    coarse_dofs_->cell_dof_indices(c, idx_c_.data());
    for (int i = 0; i < n_coarse; ++i) a_[i] = cmask[idx_c_[i]] ? Number(0) : coarse[idx_c_[i]];
    std::array<int, 3> sizes = tensor::cube_sizes<dim>(nc);
    Number* in = a_.data();
    Number* out = b_.data();
    for (int d = 0; d < dim; ++d) {
      apply_1d<false, false>(p_.data(), nf, nc, d, sizes, in, out);
      sizes[d] = nf;
      std::swap(in, out);
    }
    fine_patch_indices(c, idx_f_.data());
    for (int i = 0; i < n_fine; ++i) fine[idx_f_[i]] = fmask[idx_f_[i]] ? Number(0) : in[i];
  }
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::restrict_cg(Vector<Number>& coarse, const Vector<Number>& fine) const {
  using tensor::apply_1d;
  const int nc = k_ + 1, nf = 2 * k_ + 1, n_coarse = ipow(nc, dim);
  const auto& cmask = coarse_dofs_->boundary_mask();
  const auto& fmask = fine_dofs_->boundary_mask();
  coarse.fill(Number(0));
  if (const auto& ghosts = fine_dofs_->ghost_layout()) ghosts->update_ghosts(const_cast<Number*>(fine.data()));
  const auto& n_cells = coarse_mesh_->n_cells();
  for (std::size_t cell = 0; cell < coarse_mesh_->n_owned_cells(); ++cell) {
    const auto c = coarse_mesh_->cell_index(cell);
    fine_patch_indices(c, idx_f_.data());
    // weights 1/2 at cell ends shared with a neighbour, per direction
    std::array<std::array<Number, 2>, dim> w_end;
    for (int d = 0; d < dim; ++d) {
      w_end[d][0] = c[d] > 0 ? Number(0.5) : Number(1);
      w_end[d][1] = c[d] < n_cells[d] - 1 ? Number(0.5) : Number(1);
    }
    const int n_fine = ipow(nf, dim);
    for (int i = 0; i < n_fine; ++i) {
      const index_t g = idx_f_[i];
      Number w = fmask[g] ? Number(0) : Number(1);
      int r = i;
      for (int d = 0; d < dim; ++d) {
        const int j = r % nf;
        r /= nf;
        if (j == 0) w *= w_end[d][0];
        if (j == nf - 1) w *= w_end[d][1];
      }
      a_[i] = w * fine[g];
    }
    std::array<int, 3> sizes = tensor::cube_sizes<dim>(nf);
    Number* in = a_.data();
    Number* out = b_.data();
    for (int d = 0; d < dim; ++d) {
      apply_1d<true, false>(p_.data(), nf, nc, d, sizes, in, out);
      sizes[d] = nc;
      std::swap(in, out);
    }
    coarse_dofs_->cell_dof_indices(c, idx_c_.data());
    for (int i = 0; i < n_coarse; ++i) coarse[idx_c_[i]] += in[i];
  }
  // distributed: the sums of this rank's cells at nodes owned by other ranks go to their owners
  if (const auto& ghosts = coarse_dofs_->ghost_layout()) ghosts->add_ghosts_to_owners(coarse.data());
  for (std::size_t i = 0; i < coarse.size(); ++i)
    if (cmask[i]) coarse[i] = Number(0);
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::prolongate_dg(Vector<Number>& fine, const Vector<Number>& coarse) const {
  using tensor::apply_1d;
  const int nc = k_ + 1, n = ipow(nc, dim);
  const auto sizes = tensor::cube_sizes<dim>(nc);
  for (std::size_t cell = 0; cell < coarse_mesh_->n_owned_cells(); ++cell) {
    const auto c = coarse_mesh_->cell_index(cell);
    coarse_dofs_->cell_dof_indices(c, idx_c_.data());
    for (int child = 0; child < (1 << dim); ++child) {
      std::array<int, dim> cf;
      const Number* in = coarse.data() + idx_c_[0];  // dg cells are contiguous
      Number* bufs[2] = {a_.data(), b_.data()};
      for (int d = 0; d < dim; ++d) {
        const int s = (child >> d) & 1;
        cf[d] = 2 * c[d] + s;
        apply_1d<false, false>(p_.data() + s * k_ * nc, nc, nc, d, sizes, in, bufs[d % 2]);
        in = bufs[d % 2];
      }
      fine_dofs_->cell_dof_indices(cf, idx_f_.data());
      std::copy(in, in + n, fine.data() + idx_f_[0]);
    }
  }
}

template <int dim, typename Number>
void MatrixFreeTransfer<dim, Number>::restrict_dg(Vector<Number>& coarse, const Vector<Number>& fine) const {
  using tensor::apply_1d;
  const int nc = k_ + 1, n = ipow(nc, dim);
  const auto sizes = tensor::cube_sizes<dim>(nc);
  for (std::size_t cell = 0; cell < coarse_mesh_->n_owned_cells(); ++cell) {
    const auto c = coarse_mesh_->cell_index(cell);
    coarse_dofs_->cell_dof_indices(c, idx_c_.data());
    Number* dst = coarse.data() + idx_c_[0];
    std::fill(dst, dst + n, Number(0));
    for (int child = 0; child < (1 << dim); ++child) {
      std::array<int, dim> cf;
      for (int d = 0; d < dim; ++d) cf[d] = 2 * c[d] + ((child >> d) & 1);
      fine_dofs_->cell_dof_indices(cf, idx_f_.data());
      const Number* in = fine.data() + idx_f_[0];
      Number* bufs[2] = {a_.data(), b_.data()};
      for (int d = 0; d < dim; ++d) {
        const int s = (child >> d) & 1;
        apply_1d<true, false>(p_.data() + s * k_ * nc, nc, nc, d, sizes, in, bufs[d % 2]);
        in = bufs[d % 2];
      }
      for (int i = 0; i < n; ++i) dst[i] += in[i];
    }
  }
}

template <int dim>
GatherPlan make_gather_plan(const fe::DofLayout<dim>& fine_dofs, std::size_t gathered_size) {
  GatherPlan plan;
  const Communicator& comm = fine_dofs.communicator();
  const bool root = comm.rank() == 0;
  const auto global = fine_dofs.global_indices();
  if (const auto& ghosts = fine_dofs.ghost_layout()) {
    const auto& runs = ghosts->plan();
    for (const auto start : runs.run_starts)
      for (std::size_t i = 0; i < runs.run_length; ++i) plan.owned.push_back(start + std::int64_t(i));
  } else {
    plan.owned.resize(fine_dofs.n_local());
    for (std::size_t i = 0; i < plan.owned.size(); ++i) plan.owned[i] = std::int64_t(i);
  }
  std::vector<std::int64_t> owned_global(plan.owned.size());
  for (std::size_t i = 0; i < plan.owned.size(); ++i) owned_global[i] = global[std::size_t(plan.owned[i])];
  // rank 0 learns every rank's index lists once
  const int n_ranks = comm.size();
  const auto n_owned = comm.all_gather(double(plan.owned.size()));
  const auto n_stored = comm.all_gather(double(global.size()));
  std::vector<Communicator::Message> receives, sends;
  if (root) {
    plan.owned_global.resize(std::size_t(n_ranks));
    plan.stored_global.resize(std::size_t(n_ranks));
    plan.owned_global[0] = owned_global;
    plan.stored_global[0] = global;
    for (int r = 1; r < n_ranks; ++r) {
      plan.owned_global[r].resize(std::size_t(n_owned[r]));
      plan.stored_global[r].resize(std::size_t(n_stored[r]));
      receives.push_back({r, plan.owned_global[r].data(), plan.owned_global[r].size() * sizeof(std::int64_t)});
      receives.push_back({r, plan.stored_global[r].data(), plan.stored_global[r].size() * sizeof(std::int64_t)});
    }
  } else {
    sends.push_back({0, owned_global.data(), owned_global.size() * sizeof(std::int64_t)});
    sends.push_back({0, const_cast<std::int64_t*>(global.data()), global.size() * sizeof(std::int64_t)});
  }
  comm.exchange(receives, sends, 301);
  if (root) {
    std::size_t total = 0;
    for (int r = 0; r < n_ranks; ++r) total += std::size_t(n_owned[r]);
    if (total != gathered_size)
      throw Error("gather onto rank 0: the ranks own " + std::to_string(total) + " entries of a level of " +
                  std::to_string(gathered_size));
  }
  return plan;
}

template <int dim, typename Number>
GatherTransfer<dim, Number>::GatherTransfer(const fe::DofLayout<dim>& fine_dofs, const mesh::BoxMesh<dim>* coarse_mesh,
                                            const fe::DofLayout<dim>* coarse_dofs,
                                            const mesh::BoxMesh<dim>* gathered_mesh,
                                            const fe::DofLayout<dim>* gathered_dofs)
    : fine_dofs_(&fine_dofs), comm_(fine_dofs.communicator()) {
  const bool root = comm_.rank() == 0;
  TCFEM_ASSERT(!root || (coarse_mesh && coarse_dofs && gathered_mesh && gathered_dofs),
               "GatherTransfer: rank 0 needs the gathered level and the one below it");
  auto plan = make_gather_plan(fine_dofs, root ? gathered_dofs->n_local() : 0);
  owned_ = std::move(plan.owned);
  owned_global_ = std::move(plan.owned_global);
  stored_global_ = std::move(plan.stored_global);
  if (root) {
    serial_ = std::make_unique<MatrixFreeTransfer<dim, Number>>(*coarse_mesh, *coarse_dofs, *gathered_mesh,
                                                                *gathered_dofs);
    gathered_.resize(gathered_dofs->n_local());
    buffers_.resize(std::size_t(comm_.size()));
    for (int r = 1; r < comm_.size(); ++r)
      buffers_[r].resize(std::max(owned_global_[r].size(), stored_global_[r].size()));
  }
  own_.resize(std::max(owned_.size(), fine_dofs.n_local()));
}

template <int dim, typename Number>
void GatherTransfer<dim, Number>::restrict_to_coarse(Vector<Number>& coarse, const Vector<Number>& fine) const {
  TCFEM_ASSERT(fine.size() == fine_dofs_->n_local(), "transfer vector sizes");
  std::vector<Communicator::Message> receives, sends;
  if (comm_.rank() == 0) {
    for (std::size_t i = 0; i < owned_.size(); ++i) gathered_[std::size_t(owned_global_[0][i])] = fine[owned_[i]];
    for (int r = 1; r < comm_.size(); ++r)
      receives.push_back({r, buffers_[r].data(), owned_global_[r].size() * sizeof(Number)});
  } else {
    for (std::size_t i = 0; i < owned_.size(); ++i) own_[i] = fine[owned_[i]];
    sends.push_back({0, own_.data(), owned_.size() * sizeof(Number)});
  }
  comm_.exchange(receives, sends, 302);
  if (comm_.rank() != 0) return;
  for (int r = 1; r < comm_.size(); ++r)
    for (std::size_t i = 0; i < owned_global_[r].size(); ++i)
      gathered_[std::size_t(owned_global_[r][i])] = buffers_[r][i];
  serial_->restrict_to_coarse(coarse, gathered_);
}

template <int dim, typename Number>
void GatherTransfer<dim, Number>::prolongate(Vector<Number>& fine, const Vector<Number>& coarse) const {
  TCFEM_ASSERT(fine.size() == fine_dofs_->n_local(), "transfer vector sizes");
  std::vector<Communicator::Message> receives, sends;
  if (comm_.rank() == 0) {
    serial_->prolongate(gathered_, coarse);
    for (int r = 1; r < comm_.size(); ++r) {
      const auto& idx = stored_global_[r];
      for (std::size_t i = 0; i < idx.size(); ++i) buffers_[r][i] = gathered_[std::size_t(idx[i])];
      sends.push_back({r, buffers_[r].data(), idx.size() * sizeof(Number)});
    }
  } else {
    receives.push_back({0, own_.data(), fine.size() * sizeof(Number)});
  }
  comm_.exchange(receives, sends, 303);
  if (comm_.rank() == 0) {
    const auto& idx = stored_global_[0];
    for (std::size_t i = 0; i < idx.size(); ++i) fine[i] = gathered_[std::size_t(idx[i])];
  } else {
    std::copy(own_.begin(), own_.begin() + std::ptrdiff_t(fine.size()), fine.data());
  }
}

template class MatrixFreeTransfer<2, double>;
template class MatrixFreeTransfer<3, double>;
template class MatrixFreeTransfer<2, float>;
template class MatrixFreeTransfer<3, float>;
template GatherPlan make_gather_plan<2>(const fe::DofLayout<2>&, std::size_t);
template GatherPlan make_gather_plan<3>(const fe::DofLayout<3>&, std::size_t);
template class GatherTransfer<2, double>;
template class GatherTransfer<3, double>;
template class GatherTransfer<2, float>;
template class GatherTransfer<3, float>;

}  // namespace tcfem::multigrid
