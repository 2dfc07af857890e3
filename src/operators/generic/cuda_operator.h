#pragma once
// Matrix-free operator on the GPU: the generic kernel bodies run one thread block per cell (and,
// for SIPG on general geometry, per face), tables and geometry in device memory. The geometry
// data of general meshes is computed on the device (operators/device/device_geometry.h).
#include <memory>

#include "core/device_buffer.h"
#include "operators/operator_tables.h"

namespace tcfem::operators {

template <int dim, typename Number>
class CudaOperator {
 public:
  CudaOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const OperatorConfig& config,
               Form form);
  /// dst = A src on device vectors of dofs.n_local() entries (asynchronous on the default stream).
  void vmult(Number* dst, const Number* src) const;
  /// dst = A_u src: the operator without constraints (DeviceOperator::vmult_unconstrained).
  void vmult_unconstrained(Number* dst, const Number* src) const;
  /// Whether compute_diagonal() exists for this operator (the Laplacian on general geometry).
  bool has_diagonal() const { return !view_.cartesian && !view_.mass; }
  /// diag = the operator's diagonal (device, n_local() entries; cg: 1 on constrained rows), as
  /// the CPU operator's compute_diagonal.
  void compute_diagonal(Number* diag) const;
  std::size_t n_local() const { return n_local_; }
  const OperatorView<Number>& device_view() const { return view_; }
  std::size_t device_bytes() const { return bytes_; }

 private:
  std::vector<DeviceBuffer<Number>> buffers_;
  std::vector<double> Db_;  // basis derivatives at the quadrature points (the diagonal's tables)
  void launch(const OperatorView<Number>& view, Number* dst, const Number* src) const;
  int grid_dirichlet_ = 0;  // bit f: face f is Dirichlet
  OperatorView<Number> view_;
  std::size_t n_local_ = 0, bytes_ = 0;
  std::int64_t n_cells_ = 0;
  std::int64_t n_faces_[3] = {0, 0, 0};
  int smem_bytes_ = 0, grid_ = 1;
};

}  // namespace tcfem::operators
