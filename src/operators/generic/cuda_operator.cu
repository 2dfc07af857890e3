#include <algorithm>

#include "core/device.h"
#include "operators/generic/cuda_operator.h"
#include "operators/device/device_geometry.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"

namespace tcfem::operators {
namespace {

constexpr int block_size = 128;

template <typename Number>
__global__ void cell_kernel(OperatorView<Number> v, std::int64_t n_cells, const Number* src, Number* dst) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Number* smem = reinterpret_cast<Number*>(smem_raw);
  const ThreadGroup g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  for (std::int64_t cell = blockIdx.x; cell < n_cells; cell += gridDim.x)
    generic::cell_apply(g, v, cell, src, dst, smem);
}

template <typename Number>
__global__ void face_kernel(OperatorView<Number> v, int d, std::int64_t n_faces, const Number* src, Number* dst) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Number* smem = reinterpret_cast<Number*>(smem_raw);
  const ThreadGroup g{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  for (std::int64_t f = blockIdx.x; f < n_faces; f += gridDim.x) generic::face_apply(g, v, d, f, src, dst, smem);
}

/// cg: dst_b = src_b on the constrained nodes (the Dirichlet faces of the lattice).
template <typename Number>
__global__ void boundary_copy_kernel(OperatorView<Number> v, std::int64_t n, const Number* src, Number* dst) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r = i;
    bool boundary = false;
    for (int d = 0; d < v.dim; ++d) {
      const std::int64_t p = r % v.lattice[d];
      r /= v.lattice[d];
      boundary |= fe::on_dirichlet_face(p, v.lattice[d], d, v.dirichlet);
    }
    if (boundary) dst[i] = src[i];
  }
}

}  // namespace

template <int dim, typename Number>
CudaOperator<dim, Number>::CudaOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                        const OperatorConfig& config, Form form) {
  const DeviceInfo info = require_device("--backend cuda");
  const auto tables = make_operator_tables<dim, Number>(mesh, dofs, config, form, false);
  view_ = tables.base;
  n_local_ = dofs.n_local();
  n_cells_ = static_cast<std::int64_t>(mesh.n_owned_cells());
  auto upload = [&](const std::vector<Number>& host) -> const Number* {
    if (host.empty()) return nullptr;
    buffers_.emplace_back(host);
    bytes_ += host.size() * sizeof(Number);
    return buffers_.back().data();
  };
  buffers_.reserve(32);
  view_.mass_1d = upload(tables.mass_1d);
  view_.stiff_1d = upload(tables.stiff_1d);
  view_.dg_self = upload(tables.dg_self);
  view_.dg_left = upload(tables.dg_left);
  view_.dg_right = upload(tables.dg_right);
  view_.B = upload(tables.B);
  view_.Dq = upload(tables.Dq);
  view_.end_val = upload(tables.end_val);
  view_.end_der = upload(tables.end_der);
  for (int f = 0; f < 2 * dim; ++f) grid_dirichlet_ |= dofs.dirichlet_faces()[f] ? (1 << f) : 0;
  if (!view_.cartesian) {
    // the geometry data on the device: the map and the coefficient compiled (or on the host threads)
    auto allocate = [&](std::size_t n) -> Number* {
      buffers_.emplace_back(n);
      bytes_ += n * sizeof(Number);
      return buffers_.back().data();
    };
    const auto quad = fe::make_quadrature(config.quadrature, config.degree);
    const int nqc = generic::ipow(view_.nq, dim), nf = generic::ipow(view_.nq, dim - 1);
    setup::PointFunctionSet functions(dim);
    const auto map = setup::map_functions<dim>(mesh, functions);
    std::array<setup::PointFunction, 3> map3;
    for (int d = 0; d < dim; ++d) map3[d] = map[d];
    setup::PointFunction coefficient;
    if (config.coefficient && form == Form::laplace)
      coefficient = functions.add(config.coefficient_source, config.coefficient, "coefficient");
    functions.compile();
    Number* coef = allocate(std::size_t(n_cells_) * n_sym<dim> * nqc);
    Number* jxw = allocate(std::size_t(n_cells_) * nqc);
    DeviceBuffer<double> volume(n_cells_);
    device_cell_geometry<dim, Number>(mesh, dofs, quad, coefficient, map3, coef, jxw, volume.data());
    view_.cell_coef = coef;
    view_.cell_jxw = jxw;
    if (view_.dg && form == Form::laplace)
      for (int d = 0; d < dim; ++d) {
        std::int64_t n_faces = 1;
        for (int e = 0; e < dim; ++e) n_faces *= mesh.n_cells()[e] + (e == d ? 1 : 0);
        n_faces_[d] = n_faces;
        Number* fj = allocate(std::size_t(n_faces) * nf);
        Number* am = allocate(std::size_t(n_faces) * dim * nf);
        Number* ap = allocate(std::size_t(n_faces) * dim * nf);
        Number* pen = allocate(std::size_t(n_faces));
        device_face_geometry<dim, Number>(mesh, dofs, quad, coefficient, map3, double(config.degree) * (config.degree + 1),
                                          d, volume.data(), fj, am, ap, pen);
        view_.face_jxw[d] = fj;
        view_.face_am[d] = am;
        view_.face_ap[d] = ap;
        view_.face_pen[d] = pen;
      }
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // volume goes out of scope
    Db_ = fe::basis_derivatives(fe::LagrangeBasis1D::gauss_lobatto(config.degree), quad.points).data;
  }
  smem_bytes_ = generic::scratch_size(view_) * static_cast<int>(sizeof(Number));
  if (static_cast<std::size_t>(smem_bytes_) > info.shared_memory_per_block_optin)
    throw InputError("--degree: the generic CUDA kernel needs " + std::to_string(smem_bytes_) +
                     " bytes of shared memory per block, the device offers " +
                     std::to_string(info.shared_memory_per_block_optin));
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(cell_kernel<Number>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_));
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(face_kernel<Number>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_));
  int blocks_per_sm = 0;
  TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, cell_kernel<Number>, block_size,
                                                                 smem_bytes_));
  grid_ = std::max(1, info.sm_count * std::max(1, blocks_per_sm));
}

template <int dim, typename Number>
void CudaOperator<dim, Number>::vmult(Number* dst, const Number* src) const {
  launch(view_, dst, src);
}

template <int dim, typename Number>
void CudaOperator<dim, Number>::vmult_unconstrained(Number* dst, const Number* src) const {
  OperatorView<Number> v = view_;
  v.dirichlet = 0;
  launch(v, dst, src);
}

template <int dim, typename Number>
void CudaOperator<dim, Number>::launch(const OperatorView<Number>& view, Number* dst, const Number* src) const {
  const bool dg_cartesian = view.dg && view.cartesian && !view.mass;
  if (!dg_cartesian) TCFEM_CUDA_CHECK(cudaMemsetAsync(dst, 0, n_local_ * sizeof(Number)));
  const int grid = static_cast<int>(std::min<std::int64_t>(grid_, std::max<std::int64_t>(1, n_cells_)));
  cell_kernel<Number><<<grid, block_size, smem_bytes_>>>(view, n_cells_, src, dst);
  TCFEM_CUDA_CHECK_LAUNCH();
  if (view.dg && !view.cartesian && !view.mass)
    for (int d = 0; d < dim; ++d) {
      const int fgrid = static_cast<int>(std::min<std::int64_t>(grid_, std::max<std::int64_t>(1, n_faces_[d])));
      face_kernel<Number><<<fgrid, block_size, smem_bytes_>>>(view, d, n_faces_[d], src, dst);
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  if (!view.dg && !view.mass && view.dirichlet != 0) {
    const int bgrid = static_cast<int>(std::min<std::size_t>((n_local_ + 255) / 256, 65535));
    boundary_copy_kernel<Number><<<bgrid, 256>>>(view, static_cast<std::int64_t>(n_local_), src, dst);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
}

template <int dim, typename Number>
void CudaOperator<dim, Number>::compute_diagonal(Number* diag) const {
  if (!has_diagonal()) throw Error("CudaOperator::compute_diagonal: the Laplacian on general geometry only");
  setup::Grid g;
  g.dim = dim;
  g.k = view_.nb - 1;
  g.nb = view_.nb;
  g.nq = view_.nq;
  g.dg = view_.dg;
  for (int d = 0; d < dim; ++d) {
    g.n_cells[d] = view_.n_cells[d];
    g.lattice[d] = view_.lattice[d];
  }
  for (int f = 0; f < 2 * dim; ++f) g.dirichlet[f] = (grid_dirichlet_ >> f) & 1;
  device_general_diagonal<Number>(view_, g, Db_, diag);
}

template class CudaOperator<2, double>;
template class CudaOperator<3, double>;
template class CudaOperator<2, float>;
template class CudaOperator<3, float>;

}  // namespace tcfem::operators
