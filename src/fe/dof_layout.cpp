#include "fe/dof_layout.h"

#include "core/parallel.h"
#include "fe/dof_exchange.h"

namespace tcfem::fe {

const char* to_string(Disc d) { return d == Disc::cg ? "cg" : "dg"; }

template <int dim>
DofLayout<dim>::DofLayout(const mesh::BoxMesh<dim>& mesh, Disc disc, int degree, const DirichletFaces<dim>& dirichlet)
    : mesh_(&mesh), disc_(disc), degree_(degree), dirichlet_(dirichlet) {
  if (degree < 1 || degree > 8) throw InputError("degree must be in 1..8");
  dofs_per_cell_ = 1;
  for (int d = 0; d < dim; ++d) dofs_per_cell_ *= degree + 1;
  const auto& part = mesh.partition();
  if (disc == Disc::cg) {
    n_dofs_global_ = 1;
    n_local_ = 1;
    for (int d = 0; d < dim; ++d) {
      n_dofs_global_ *= static_cast<std::size_t>(part.global_cells[d]) * degree + 1;
      lattice_begin_[d] = static_cast<long>(part.ghosted.begin[d]) * degree;
      lattice_extent_[d] = static_cast<long>(part.ghosted.extent(d)) * degree + 1;
      n_local_ *= static_cast<std::size_t>(lattice_extent_[d]);
    }
  } else {
    n_dofs_global_ = mesh.n_global_cells() * dofs_per_cell_;
    n_local_ = part.ghosted.n_cells() * dofs_per_cell_;
  }
  if (part.is_distributed()) {
    exchange_ = make_dof_exchange<dim>(part, disc, degree);
    TCFEM_ASSERT(exchange_->n_local() == n_local_, "ghost exchange and DoF layout disagree on the local size");
  }
}

template <int dim>
bool DofLayout<dim>::line_constrained(std::size_t l) const {
  const auto& part = mesh_->partition();
  for (int d = 1; d < dim; ++d) {
    const long p = lattice_begin_[d] + static_cast<long>(l % lattice_extent_[d]);
    l /= lattice_extent_[d];
    if ((p == 0 && dirichlet_[2 * d]) || (p == static_cast<long>(part.global_cells[d]) * degree_ && dirichlet_[2 * d + 1]))
      return true;
  }
  return false;
}

template <int dim>
const std::vector<char>& DofLayout<dim>::boundary_mask() const {
  std::call_once(mask_->once, [this] {
    if (disc_ != Disc::cg) return;
    auto& mask = mask_->mask;
    mask.resize(n_local_);
    // by lattice lines along x: a line lies on the boundary when one of its other coordinates does,
    // otherwise only its end nodes on the x faces of the box can
    const std::size_t line = static_cast<std::size_t>(lattice_extent_[0]);
    const long last_x = static_cast<long>(mesh_->partition().global_cells[0]) * degree_;
    parallel_chunks(0, n_local_ / line, [&](std::size_t l0, std::size_t l1, int) {
      for (std::size_t l = l0; l < l1; ++l) {
        const bool on_boundary = line_constrained(l);
        char* m = mask.data() + l * line;
        for (std::size_t i = 0; i < line; ++i) {
          const long p = lattice_begin_[0] + static_cast<long>(i);
          m[i] = (on_boundary || (p == 0 && dirichlet_[0]) || (p == last_x && dirichlet_[1])) ? 1 : 0;
        }
      }
    }, host_threads(), 256);
  });
  return mask_->mask;
}

template <int dim>
std::vector<index_t> DofLayout<dim>::constrained_indices() const {
  if (disc_ != Disc::cg) return {};
  const std::size_t line = static_cast<std::size_t>(lattice_extent_[0]);
  const long last_x = static_cast<long>(mesh_->partition().global_cells[0]) * degree_;
  // a line off the other directions' Dirichlet planes: only its end nodes on Dirichlet x faces
  auto on_x_face = [&](std::size_t i) {
    const long p = lattice_begin_[0] + static_cast<long>(i);
    return (p == 0 && dirichlet_[0]) || (p == last_x && dirichlet_[1]);
  };
  const bool first = on_x_face(0), last = line > 1 && on_x_face(line - 1);
  const std::size_t lines = n_local_ / line;
  auto count = [&](std::size_t l) { return line_constrained(l) ? line : std::size_t(first) + std::size_t(last); };
  // two passes over the same chunks of lines: the counts, then the indices in ascending order
  const int threads = host_threads();
  constexpr std::size_t grain = 1 << 12;
  std::vector<std::size_t> offset(std::size_t(threads) + 1, 0);
  parallel_chunks(0, lines, [&](std::size_t b, std::size_t e, int t) {
    std::size_t n = 0;
    for (std::size_t l = b; l < e; ++l) n += count(l);
    offset[std::size_t(t) + 1] = n;
  }, threads, grain);
  for (int t = 0; t < threads; ++t) offset[std::size_t(t) + 1] += offset[std::size_t(t)];
  std::vector<index_t> out(offset.back());
  parallel_chunks(0, lines, [&](std::size_t b, std::size_t e, int t) {
    index_t* o = out.data() + offset[std::size_t(t)];
    for (std::size_t l = b; l < e; ++l) {
      const index_t base = static_cast<index_t>(l * line);
      if (line_constrained(l)) {
        for (std::size_t i = 0; i < line; ++i) *o++ = base + static_cast<index_t>(i);
        continue;
      }
      if (first) *o++ = base;
      if (last) *o++ = base + static_cast<index_t>(line - 1);
    }
  }, threads, grain);
  return out;
}

template <int dim>
index_t DofLayout<dim>::lattice_index(const std::array<long, dim>& p) const {
  index_t idx = 0;
  for (int d = dim - 1; d >= 0; --d) idx = idx * lattice_extent_[d] + (p[d] - lattice_begin_[d]);
  return idx;
}

template <int dim>
std::vector<std::int64_t> DofLayout<dim>::global_indices() const {
  std::vector<std::int64_t> out(n_local_);
  const auto& part = mesh_->partition();
  if (disc_ == Disc::cg) {
    std::array<long, dim> global_extent;
    for (int d = 0; d < dim; ++d) global_extent[d] = static_cast<long>(part.global_cells[d]) * degree_ + 1;
    for (std::size_t i = 0; i < n_local_; ++i) {
      std::size_t rest = i;
      std::int64_t g = 0, stride = 1;
      for (int d = 0; d < dim; ++d) {
        const long p = lattice_begin_[d] + static_cast<long>(rest % lattice_extent_[d]);
        rest /= lattice_extent_[d];
        g += stride * p;
        stride *= global_extent[d];
      }
      out[i] = g;
    }
    return out;
  }
  const auto& box = part.ghosted;
  for (std::size_t cell = 0; cell < box.n_cells(); ++cell) {
    std::size_t rest = cell;
    std::int64_t g = 0, stride = 1;
    for (int d = 0; d < dim; ++d) {
      g += stride * (box.begin[d] + static_cast<std::int64_t>(rest % box.extent(d)));
      rest /= box.extent(d);
      stride *= part.global_cells[d];
    }
    for (int j = 0; j < dofs_per_cell_; ++j) out[cell * dofs_per_cell_ + j] = g * dofs_per_cell_ + j;
  }
  return out;
}

template <int dim>
void DofLayout<dim>::cell_dof_indices(const std::array<int, dim>& c, index_t* indices) const {
  const int n = degree_ + 1;
  if (disc_ == Disc::dg) {
    const auto& g = mesh_->partition().ghosted;
    index_t cell = 0;
    for (int d = dim - 1; d >= 0; --d) cell = cell * g.extent(d) + (c[d] - g.begin[d]);
    for (int i = 0; i < dofs_per_cell_; ++i) indices[i] = cell * dofs_per_cell_ + i;
    return;
  }
  // cg: lattice points c*k + local node
  std::array<long, dim> base;
  for (int d = 0; d < dim; ++d) base[d] = static_cast<long>(c[d]) * degree_ - lattice_begin_[d];
  if constexpr (dim == 2) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        indices[i + n * j] = (base[0] + i) + lattice_extent_[0] * (base[1] + j);
  } else {
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          indices[i + n * (j + n * k)] =
              (base[0] + i) + lattice_extent_[0] * ((base[1] + j) + lattice_extent_[1] * (base[2] + k));
  }
}

template class DofLayout<2>;
template class DofLayout<3>;

}  // namespace tcfem::fe
