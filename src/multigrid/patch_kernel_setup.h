#pragma once
// Host setup of the vertex-patch smoother kernels, shared by DevicePatchSmoother and the CPU tests
// of the block program: the 1D matrices (the kernel parameter PatchMatrices) and the inverse
// eigenvalue sums, built exactly as VertexPatchSmoother builds them, and the launch parameters of
// the 2^dim colors.
#include <algorithm>
#include <array>
#include <vector>

#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/patch_block.h"
#include "multigrid/patch_smoother.h"

namespace tcfem::multigrid::patch_kernels {

/// Per direction d at d (2 ni nf + ni ni): M_d, L_d (inner rows, all columns; ni x nf) and the
/// eigenvectors V_d (ni x ni) of the patch of the level's cell sizes; `inverse_diagonal` gets
/// 1 / (lambda_0 + ...), lexicographic.
template <int dim, typename Number>
std::vector<Number> patch_kernel_matrices(const mesh::BoxMesh<dim>& mesh, int k, const fe::Quadrature1D& quadrature,
                                          std::vector<Number>& inverse_diagonal) {
  const int nf = 2 * k + 1, ni = 2 * k - 1, ms = 2 * ni * nf + ni * ni;
  std::array<double, dim> h;
  for (int d = 0; d < dim; ++d) h[d] = mesh.cell_size()[d];
  const PatchFastDiagonalization<dim, Number> fd(k, h, quadrature);
  std::vector<Number> mats(dim * ms);
  for (int d = 0; d < dim; ++d) {
    const auto p = patch_matrices_1d(k, h[d], quadrature);
    Number* m = mats.data() + d * ms;
    for (int i = 0; i < ni; ++i)
      for (int j = 0; j < nf; ++j) {
        m[i * nf + j] = static_cast<Number>(p.mass[(i + 1) * nf + j]);
        m[ni * nf + i * nf + j] = static_cast<Number>(p.stiffness[(i + 1) * nf + j]);
      }
    const auto& v = fd.eigenvectors(d);
    std::copy(v.begin(), v.end(), m + 2 * ni * nf);
  }
  inverse_diagonal = fd.inverse_diagonal();
  return mats;
}

/// Launch parameters of the colors c = 0 .. 2^dim - 1 (bit d of c: odd vertex coordinate along d,
/// as VertexPatchSmoother::colors()); vector and matrix pointers are left to the caller.
template <int dim, typename Number>
std::vector<PatchKernelParams<Number>> patch_kernel_colors(const mesh::BoxMesh<dim>& mesh,
                                                           const fe::DofLayout<dim>& dofs) {
  const auto& ext = dofs.lattice_extent();
  const auto& nc = mesh.n_cells();
  std::vector<PatchKernelParams<Number>> colors(1 << dim);
  for (int c = 0; c < (1 << dim); ++c) {
    auto& p = colors[c];
    long long s = 1;
    p.n_patches = 1;
    for (int d = 0; d < dim; ++d) {
      p.stride[d] = s;
      p.extent[d] = ext[d];
      s *= ext[d];
      p.parity[d] = (c >> d) & 1;
      p.count[d] = p.parity[d] ? nc[d] / 2 : (nc[d] - 1) / 2;  // odd / even v in [1, n_d - 1]
      p.n_patches *= p.count[d];
    }
  }
  return colors;
}

}  // namespace tcfem::multigrid::patch_kernels
