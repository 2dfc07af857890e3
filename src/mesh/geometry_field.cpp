#include "mesh/geometry_field.h"

#include <algorithm>

#include "core/error.h"
#include "core/parallel.h"
#include "fe/quadrature.h"

namespace tcfem::mesh {

template <int dim>
GeometryField<dim>::GeometryField(const BoxMesh<dim>& mesh, int degree) : degree_(degree) {
  if (degree < 1 || degree > 8) throw InputError("geometry degree must be in 1..8");
  nodes_per_cell_ = 1;
  for (int d = 0; d < dim; ++d) nodes_per_cell_ *= degree + 1;
  const auto gll = fe::gauss_lobatto(degree + 1).points;
  const auto& g = mesh.partition().ghosted;
  std::size_t n_nodes = 1;
  for (int d = 0; d < dim; ++d) {
    begin_[d] = static_cast<long>(g.begin[d]) * degree;
    extent_[d] = static_cast<long>(g.extent(d)) * degree + 1;
    n_nodes *= static_cast<std::size_t>(extent_[d]);
  }
  coords_.resize(n_nodes * dim);
  const auto h = mesh.cell_size();
  parallel_chunks(0, n_nodes, [&](std::size_t first, std::size_t last, int) {
    for (std::size_t i = first; i < last; ++i) {
      std::size_t r = i;
      Point<dim> x;
      for (int d = 0; d < dim; ++d) {
        const long p = begin_[d] + static_cast<long>(r % extent_[d]);
        r /= extent_[d];
        const long cell = std::min<long>(p / degree, mesh.n_cells()[d] - 1);
        const int local = static_cast<int>(p - cell * degree);
        x[d] = mesh.origin()[d] + (cell + gll[local]) * h[d];
      }
      const auto y = mesh.map(x);
      for (int d = 0; d < dim; ++d) coords_[i * dim + d] = y[d];
    }
  }, host_threads(), 4096);
}

template <int dim>
void GeometryField<dim>::cell_nodes(const std::array<int, dim>& c, double* out) const {
  const int n = degree_ + 1;
  for (int i = 0; i < nodes_per_cell_; ++i) {
    int r = i;
    std::size_t idx = 0, stride = 1;
    for (int d = 0; d < dim; ++d) {
      const long p = static_cast<long>(c[d]) * degree_ + (r % n) - begin_[d];
      r /= n;
      TCFEM_ASSERT(p >= 0 && p < extent_[d], "cell outside the stored geometry");
      idx += static_cast<std::size_t>(p) * stride;
      stride *= static_cast<std::size_t>(extent_[d]);
    }
    for (int d = 0; d < dim; ++d) out[d * nodes_per_cell_ + i] = coords_[idx * dim + d];
  }
}

template <int dim>
MappedCellNodes<dim>::MappedCellNodes(const BoxMesh<dim>& mesh, int degree)
    : mesh_(&mesh), degree_(degree), h_(mesh.cell_size()) {
  if (degree < 1 || degree > 8) throw InputError("geometry degree must be in 1..8");
  nodes_per_cell_ = 1;
  for (int d = 0; d < dim; ++d) nodes_per_cell_ *= degree + 1;
  gll_ = fe::gauss_lobatto(degree + 1).points;
}

template <int dim>
void MappedCellNodes<dim>::node(const std::array<int, dim>& c, int i, double* out) const {
  // the arithmetic of the GeometryField constructor: a lattice node belongs to the cell on its right
  // (the last cell for the last node), so shared nodes get identical coordinates from every cell
  const int n = degree_ + 1;
  int r = i;
  Point<dim> x;
  for (int d = 0; d < dim; ++d) {
    const long p = static_cast<long>(c[d]) * degree_ + (r % n);
    r /= n;
    const long cell = std::min<long>(p / degree_, mesh_->n_cells()[d] - 1);
    const int local = static_cast<int>(p - cell * degree_);
    x[d] = mesh_->origin()[d] + (cell + gll_[local]) * h_[d];
  }
  const auto y = mesh_->map(x);
  for (int d = 0; d < dim; ++d) out[d * nodes_per_cell_] = y[d];
}

template <int dim>
void MappedCellNodes<dim>::cell_nodes(const std::array<int, dim>& c, double* out) const {
  for (int i = 0; i < nodes_per_cell_; ++i) node(c, i, out + i);
}

template <int dim>
void MappedCellNodes<dim>::face_nodes(const std::array<int, dim>& c, int direction, int side, double* out) const {
  const int n = degree_ + 1;
  int stride = 1;
  for (int d = 0; d < direction; ++d) stride *= n;
  for (int i = 0; i < nodes_per_cell_; ++i)
    if ((i / stride) % n == (side ? degree_ : 0)) node(c, i, out + i);
}

template class MappedCellNodes<2>;
template class MappedCellNodes<3>;
template class GeometryField<2>;
template class GeometryField<3>;

}  // namespace tcfem::mesh
