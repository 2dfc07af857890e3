#include "multigrid/device/transfer.h"

#include <algorithm>

#include "core/error.h"

namespace tcfem::multigrid {
namespace {

constexpr int block = 256;

/// One directional pass: out[t] = sum_j w(row(t), j) in[input(t, j)] (one thread per output
/// entry, grid-stride; no two threads write the same entry, reads only: no races).
template <typename Number>
__global__ void transfer_pass_kernel(PassShape s, const int* __restrict__ col, const Number* __restrict__ weight,
                                     int width, const Number* __restrict__ in, Number* __restrict__ out) {
  const std::int64_t n = s.n_out();
  for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < n;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const PassOffset o = pass_offset(s, t);
    const std::int64_t r = pass_row(s, t);
    Number v = Number(0);
    for (int j = 0; j < width; ++j)
      v += weight[r * width + j] * in[pass_input(s, o, col[r * width + j])];
    out[t] = v;
  }
}

/// The cg pass (lexicographic lattices, x fastest): the same sums as transfer_pass_kernel, with the
/// output's (x, y) from one 32-bit division and z from the grid's second dimension.
struct CgPass {
  int e0 = 1, e1 = 1, e2 = 1;       // output extents
  std::int64_t in1 = 1, in2 = 1;    // input strides of y and z
  int dir = 0;
};

template <typename Number>
__global__ void cg_pass_kernel(CgPass s, const int* __restrict__ col, const Number* __restrict__ weight, int width,
                               const Number* __restrict__ in, Number* __restrict__ out) {
  const int nxy = s.e0 * s.e1;
  const std::int64_t step = s.dir == 0 ? 1 : (s.dir == 1 ? s.in1 : s.in2);
  for (int z = blockIdx.y; z < s.e2; z += gridDim.y) {
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < nxy; t += gridDim.x * blockDim.x) {
      const int y = t / s.e0, x = t - y * s.e0;
      const int r = s.dir == 0 ? x : (s.dir == 1 ? y : z);
      const std::int64_t base =
          (s.dir == 0 ? 0 : x) + (s.dir == 1 ? 0 : std::int64_t(y) * s.in1) + (s.dir == 2 ? 0 : std::int64_t(z) * s.in2);
      Number v = Number(0);
      for (int j = 0; j < width; ++j) v += weight[r * width + j] * in[base + col[r * width + j] * step];
      out[std::int64_t(z) * nxy + t] = v;
    }
  }
}

}  // namespace

template <int dim, typename Number>
DeviceTransfer<dim, Number>::DeviceTransfer(const mesh::BoxMesh<dim>& coarse_mesh,
                                            const fe::DofLayout<dim>& coarse_dofs,
                                            const mesh::BoxMesh<dim>& fine_mesh, const fe::DofLayout<dim>& fine_dofs)
    : disc_(coarse_dofs.disc()), n_1d_(coarse_dofs.degree() + 1), n_coarse_(coarse_dofs.n_local()),
      n_fine_(fine_dofs.n_local()) {
  if (coarse_dofs.disc() != fine_dofs.disc() || coarse_dofs.degree() != fine_dofs.degree() ||
      coarse_dofs.dirichlet_faces() != fine_dofs.dirichlet_faces())
    throw InputError("transfer between levels of different spaces");
  if (coarse_dofs.n_local() != coarse_dofs.n_dofs() || fine_dofs.n_local() != fine_dofs.n_dofs())
    throw InputError("the device transfer runs on meshes owned by one process");
  const int k = coarse_dofs.degree();
  for (int d = 0; d < dim; ++d) {
    if (fine_mesh.n_cells()[d] != 2 * coarse_mesh.n_cells()[d])
      throw InputError("transfer needs the fine mesh to be the uniform refinement of the coarse one");
    const auto& faces = coarse_dofs.dirichlet_faces();
    const Ell1d p = prolongation_1d(disc_, k, coarse_mesh.n_cells()[d], faces[2 * d], faces[2 * d + 1]);
    const Ell1d r = transpose(p);
    coarse_ext_[d] = p.cols;
    fine_ext_[d] = p.rows;
    auto upload = [](const Ell1d& m, DeviceEll& out) {
      out.width = m.width;
      out.col = DeviceBuffer<int>(m.col);
      std::vector<Number> w(m.weight.begin(), m.weight.end());
      out.weight = DeviceBuffer<Number>(w);
    };
    upload(p, prolongation_[d]);
    upload(r, restriction_[d]);
  }
  // work buffers: the largest intermediate array of either direction of transfer
  std::size_t a = 0, b = 0;
  for (const bool to_fine : {true, false}) {
    auto ext = to_fine ? coarse_ext_ : fine_ext_;
    for (int d = 0; d + 1 < dim; ++d) {
      ext[d] = to_fine ? fine_ext_[d] : coarse_ext_[d];
      const std::size_t size = std::size_t(ext[0] * ext[1] * ext[2]);
      (d % 2 == 0 ? a : b) = std::max(d % 2 == 0 ? a : b, size);
    }
  }
  work_a_.allocate(a);
  work_b_.allocate(b);
}

template <int dim, typename Number>
void DeviceTransfer<dim, Number>::apply(const std::array<DeviceEll, dim>& m,
                                        const std::array<std::int64_t, 3>& from_ext,
                                        const std::array<std::int64_t, 3>& to_ext, const Number* in,
                                        Number* out) const {
  PassShape s;
  s.dim = dim;
  s.dg = disc_ == fe::Disc::dg;
  s.n_1d = n_1d_;
  std::array<std::int64_t, 3> ext = from_ext;
  const Number* src = in;
  for (int d = 0; d < dim; ++d) {
    s.set(d, ext, to_ext[d]);
    ext[d] = to_ext[d];
    Number* dst = d == dim - 1 ? out : (d % 2 == 0 ? work_a_.data() : work_b_.data());
    const std::int64_t n = s.n_out();
    if (!s.dg && s.out_ext[0] * s.out_ext[1] < (std::int64_t(1) << 30)) {
      CgPass c;
      c.e0 = int(s.out_ext[0]);
      c.e1 = int(s.out_ext[1]);
      c.e2 = int(s.out_ext[2]);
      c.in1 = s.in_ext[0];
      c.in2 = s.in_ext[0] * s.in_ext[1];
      c.dir = d;
      const std::int64_t nxy = s.out_ext[0] * s.out_ext[1];
      const dim3 grid(unsigned(std::min<std::int64_t>((nxy + block - 1) / block, 65535)),
                      unsigned(std::min<std::int64_t>(s.out_ext[2], 65535)));
      cg_pass_kernel<Number><<<grid, block>>>(c, m[d].col.data(), m[d].weight.data(), m[d].width, src, dst);
    } else {
      const int grid =
          static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>((n + block - 1) / block, 65535)));
      transfer_pass_kernel<Number><<<grid, block>>>(s, m[d].col.data(), m[d].weight.data(), m[d].width, src, dst);
    }
    TCFEM_CUDA_CHECK_LAUNCH();
    src = dst;
  }
}

template <int dim, typename Number>
void DeviceTransfer<dim, Number>::prolongate(DeviceVector<Number>& fine, const DeviceVector<Number>& coarse) const {
  TCFEM_ASSERT(fine.size() == n_fine_ && coarse.size() == n_coarse_, "transfer vector sizes");
  apply(prolongation_, coarse_ext_, fine_ext_, coarse.data(), fine.data());
}

template <int dim, typename Number>
void DeviceTransfer<dim, Number>::restrict_to_coarse(DeviceVector<Number>& coarse,
                                                     const DeviceVector<Number>& fine) const {
  TCFEM_ASSERT(fine.size() == n_fine_ && coarse.size() == n_coarse_, "transfer vector sizes");
  apply(restriction_, fine_ext_, coarse_ext_, fine.data(), coarse.data());
}

template <int dim, typename Number>
std::size_t DeviceTransfer<dim, Number>::device_bytes() const {
  std::size_t bytes = (work_a_.size() + work_b_.size()) * sizeof(Number);
  for (int d = 0; d < dim; ++d)
    for (const DeviceEll* m : {&prolongation_[d], &restriction_[d]})
      bytes += m->col.size() * sizeof(int) + m->weight.size() * sizeof(Number);
  return bytes;
}

template class DeviceTransfer<2, double>;
template class DeviceTransfer<3, double>;
template class DeviceTransfer<2, float>;
template class DeviceTransfer<3, float>;

}  // namespace tcfem::multigrid
