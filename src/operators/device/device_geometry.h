#pragma once
// The quadrature data of the general-geometry operators (operators/geometry_data.h) computed on the
// device: the map at the cells' Gauss-Lobatto nodes (compiled through NVRTC, or the host callable),
// Jacobians, the coefficient at the points (compiled, or the host callable), checked as the host
// does (det J > 0, a > 0 and finite), in chunks of cells and faces. And the diagonal of the
// general-geometry operators from their stored data (the CPU's MatrixFreeOperator::compute_diagonal).
// Includes CUDA headers: for .cu files only.
#include "operators/device/device_points.h"
#include "operators/generic/kernels.h"

namespace tcfem::operators {

/// The cell data of every owned cell into device arrays: coef[cell][sym][q] (a w |det J| J^{-1}
/// J^{-T}), jxw[cell][q], and volume[cell] (double); jxw and volume may be null (not computed).
/// `coefficient` empty: a = 1.
template <int dim, typename Number>
void device_cell_geometry(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                          const fe::Quadrature1D& quad, const setup::PointFunction& coefficient,
                          const std::array<setup::PointFunction, 3>& map, Number* coef, Number* jxw, double* volume);

/// The cell metric (device_cell_metric) of the general Laplacian with the coefficient on `mesh`,
/// computed from the map chunk by chunk without storing the cell data (double), with the checks of
/// device_cell_geometry (det J > 0 and a positive and finite at every point), copied to the host.
/// a_points (device, null: not kept; with a coefficient): the coefficient at the points,
/// a_points[cell * nq^dim + point] (points lexicographic, x fastest), rounded to Number.
template <int dim, typename Number = double>
std::vector<double> device_cell_metric_of(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                          const fe::Quadrature1D& quad, const setup::PointFunction& coefficient,
                                          const std::array<setup::PointFunction, 3>& map,
                                          Number* a_points = nullptr);

/// The node field of a mesh (2D, 3D) for the matrix-free kernels (operators/geometry_data.h,
/// NodeGeometry), computed on the device: the map at the vertices and at every node of the Q_k
/// lattice (compiled, or on the host threads), the displacement from the cells' trilinear
/// interpolant (freed when every |d| is below 1e-13 times the vertices' extent: multilinear
/// cells), and the coefficient at the nodes (checked positive and finite; none when empty). Cells
/// of geometry order 2 below k (k >= 3, as compute_node_geometry finds them): the displacement
/// on the Q2 lattice in disp2, and disp freed. a_points: the coefficient at the quadrature points
/// where they are not the nodes (set by the caller, from device_cell_metric_of; a_nodes then empty).
template <typename Number>
struct DeviceNodeGeometry {
  std::unique_ptr<DeviceBuffer<double>> vertices;
  std::unique_ptr<DeviceBuffer<Number>> disp, disp2, a_nodes, a_points;
  std::int64_t n_vertices = 0, n_nodes = 0, n_nodes2 = 0;
  double max_disp = 0, extent = 0;
  std::size_t bytes() const {
    auto size = [](const auto& b) { return b ? b->size() * sizeof(*b->data()) : std::size_t(0); };
    return size(vertices) + size(disp) + size(disp2) + size(a_nodes) + size(a_points);
  }
};
/// Points the node-field members of kernel parameters `p` at g's arrays: vertices, disp, disp2,
/// a_nodes, a_points (null where g has none) and their sizes.
template <class Params, typename Number>
void set_node_field(Params& p, const DeviceNodeGeometry<Number>& g) {
  p.vertices = g.vertices->data();
  p.n_vertices = g.n_vertices;
  p.disp = g.disp ? g.disp->data() : nullptr;
  p.n_nodes = g.n_nodes;
  p.disp2 = g.disp2 ? g.disp2->data() : nullptr;
  p.n_nodes2 = g.n_nodes2;
  p.a_nodes = g.a_nodes ? g.a_nodes->data() : nullptr;
  p.a_points = g.a_points ? g.a_points->data() : nullptr;
}
template <typename Number, int dim>
DeviceNodeGeometry<Number> device_node_geometry(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                const setup::PointFunction& coefficient,
                                                const std::array<setup::PointFunction, 3>& map);

/// The face data of direction d (faces numbered as compute_face_geometry does): jxw[face][q],
/// a_minus / a_plus[face][e][q], penalty[face], with the cell volumes of device_cell_geometry.
template <int dim, typename Number>
void device_face_geometry(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                          const fe::Quadrature1D& quad, const setup::PointFunction& coefficient,
                          const std::array<setup::PointFunction, 3>& map, double penalty_factor, int d,
                          const double* volume, Number* jxw, Number* a_minus, Number* a_plus, Number* penalty);

/// diag = the diagonal of the general-geometry operator of `view` (device arrays; cg: constrained
/// rows 1, as the CPU operator's). `Db`: the basis derivatives at the quadrature points (nq x nb).
template <typename Number>
void device_general_diagonal(const OperatorView<Number>& view, const setup::Grid& grid, const std::vector<double>& Db,
                             Number* diag);

/// The cell metric of the stored cell data of `view` (MatrixFreeOperator::cell_metric): for every
/// cell and direction d the sum over the points of coef[cell][sym(d, d)][q], as [cell * dim + d],
/// copied to the host (the weights of the separable patch surrogates).
template <typename Number>
std::vector<double> device_cell_metric(const OperatorView<Number>& view);
/// The same into `metric` (device, [cell * dim + d]; asynchronous).
template <typename Number>
void device_cell_metric_to(const OperatorView<Number>& view, double* metric);

/// dst[i] = src[i] rounded to fp32 (to nearest), i < n (device arrays; asynchronous).
void device_round_to_float(const double* src, float* dst, std::size_t n);

}  // namespace tcfem::operators
