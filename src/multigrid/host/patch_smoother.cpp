#include "multigrid/host/patch_smoother.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "fe/dof_exchange.h"
#include "fe/lagrange.h"
#include "solvers/blas_lapack.h"
#include "multigrid/host/patch_sweeps.h"
#include "tensor/contract.h"

namespace tcfem::multigrid {

namespace {
constexpr int ipow(int n, int p) { return p == 0 ? 1 : n * ipow(n, p - 1); }

std::vector<double> inner_block(const std::vector<double>& full, int n_full) {
  const int n = n_full - 2;
  std::vector<double> m(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) m[i * n + j] = full[(i + 1) * n_full + (j + 1)];
  return m;
}
}  // namespace

std::vector<double> PatchMatrices1D::inner_mass() const { return inner_block(mass, n_full); }
std::vector<double> PatchMatrices1D::inner_stiffness() const { return inner_block(stiffness, n_full); }

PatchMatrices1D patch_matrices_1d(int degree, double h, const fe::Quadrature1D& quadrature, int cells) {
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(degree);
  const auto m = fe::mass_matrix(basis, quadrature);
  const auto l = fe::stiffness_matrix(basis, quadrature);
  const int k = degree, nf = 2 * k + 1;
  PatchMatrices1D p;
  p.n_full = nf;
  p.n_inner = nf - 2;
  p.mass.assign(nf * nf, 0.0);
  p.stiffness.assign(nf * nf, 0.0);
  for (int cell = 0; cell < 2; ++cell) {
    if (!((cells >> cell) & 1)) continue;
    for (int i = 0; i <= k; ++i)
      for (int j = 0; j <= k; ++j) {
        const int r = cell * k + i, c = cell * k + j;
        p.mass[r * nf + c] += h * m(i, j);
        p.stiffness[r * nf + c] += l(i, j) / h;
      }
  }
  return p;
}

// ---- fast diagonalization -------------------------------------------------------------------

namespace {
template <int dim>
std::array<std::vector<PatchPair1D>, dim> cg_inner_pairs(int degree, const std::array<double, dim>& h,
                                                         const fe::Quadrature1D& quadrature) {
  std::array<std::vector<PatchPair1D>, dim> pairs;
  const int n = 2 * degree - 1;
  for (int d = 0; d < dim; ++d)
    for (const PatchSide side : {PatchSide::interior, PatchSide::low, PatchSide::high}) {
      // the cells of the side: both, the one above the vertex (low) or below it (high)
      const int cells = side == PatchSide::interior ? 3 : side == PatchSide::low ? 2 : 1;
      const auto p = patch_matrices_1d(degree, h[d], quadrature, cells);
      PatchPair1D pair{p.inner_mass(), p.inner_stiffness(), {}};
      if (side != PatchSide::interior) {
        const auto range = patch_side_range(side, degree);
        pair.active.assign(n, 0);
        for (int i = range[0]; i < range[1]; ++i) pair.active[i] = 1;
      }
      pairs[d].push_back(std::move(pair));
    }
  return pairs;
}
}  // namespace

template <int dim, typename Number>
PatchFastDiagonalization<dim, Number>::PatchFastDiagonalization(int degree, const std::array<double, dim>& h,
                                                                const fe::Quadrature1D& quadrature) {
  setup(cg_inner_pairs<dim>(degree, h, quadrature));
}

template <int dim, typename Number>
PatchFastDiagonalization<dim, Number>::PatchFastDiagonalization(
    const std::array<std::vector<PatchPair1D>, dim>& pairs) {
  setup(pairs);
}

template <int dim, typename Number>
void PatchFastDiagonalization<dim, Number>::setup(const std::array<std::vector<PatchPair1D>, dim>& pairs) {
  TCFEM_ASSERT(!pairs[0].empty() && !pairs[0][0].mass.empty(), "fast diagonalization without 1D matrices");
  n_ = static_cast<int>(std::lround(std::sqrt(double(pairs[0][0].mass.size()))));
  const int n = n_;
  for (int d = 0; d < dim; ++d) {
    TCFEM_ASSERT(!pairs[d].empty(), "fast diagonalization: a direction without 1D matrices");
    lambda_[d].resize(pairs[d].size());
    vectors_[d].resize(pairs[d].size());
    for (std::size_t v = 0; v < pairs[d].size(); ++v) {
      const auto& p = pairs[d][v];
      TCFEM_ASSERT(p.mass.size() == std::size_t(n * n) && p.stiffness.size() == std::size_t(n * n),
                   "fast diagonalization: 1D matrices of different sizes");
      auto& vec = vectors_[d][v];
      vec.assign(n * n, Number(0));
      if (p.active.empty()) {
        std::vector<double> colmajor;
        solvers::blas::generalized_eigenproblem(n, p.stiffness, p.mass, lambda_[d][v], colmajor);
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) vec[i * n + j] = static_cast<Number>(colmajor[i + n * j]);
      } else {
        // the eigenproblem of the active rows and columns; the others decoupled (unit vectors,
        // eigenvalue 1) after them
        TCFEM_ASSERT(p.active.size() == std::size_t(n), "fast diagonalization: active mask of another size");
        std::vector<int> on, off;
        for (int i = 0; i < n; ++i) (p.active[i] ? on : off).push_back(i);
        const int m = static_cast<int>(on.size());
        TCFEM_ASSERT(m > 0, "fast diagonalization: a 1D patch without unknowns");
        std::vector<double> ms(m * m), ls(m * m), values, colmajor;
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < m; ++j) {
            ms[i * m + j] = p.mass[on[i] * n + on[j]];
            ls[i * m + j] = p.stiffness[on[i] * n + on[j]];
          }
        solvers::blas::generalized_eigenproblem(m, ls, ms, values, colmajor);
        auto& lambda = lambda_[d][v];
        lambda.assign(n, 1.0);
        for (int j = 0; j < m; ++j) {
          lambda[j] = values[j];
          for (int i = 0; i < m; ++i) vec[on[i] * n + j] = static_cast<Number>(colmajor[i + m * j]);
        }
        for (std::size_t j = 0; j < off.size(); ++j) vec[off[j] * n + m + int(j)] = Number(1);
      }
    }
  }
  // 1 / (lambda_0 + ... + lambda_{dim-1}) for every combination of variants
  std::size_t n_combinations = 1;
  for (int d = 0; d < dim; ++d) n_combinations *= lambda_[d].size();
  const int total = ipow(n, dim);
  inverse_diagonal_.resize(n_combinations);
  for (std::size_t c = 0; c < n_combinations; ++c) {
    Variants variant;
    std::size_t rc = c;
    for (int d = 0; d < dim; ++d) {
      variant[d] = static_cast<int>(rc % lambda_[d].size());
      rc /= lambda_[d].size();
    }
    auto& inv = inverse_diagonal_[c];
    inv.resize(total);
    for (int i = 0; i < total; ++i) {
      int r = i;
      double s = 0.0;
      for (int d = 0; d < dim; ++d) {
        s += lambda_[d][variant[d]][r % n];
        r /= n;
      }
      inv[i] = static_cast<Number>(1.0 / s);
    }
  }
}

template <int dim, typename Number>
std::size_t PatchFastDiagonalization<dim, Number>::combination(const Variants& variant) const {
  std::size_t c = 0;
  for (int d = dim - 1; d >= 0; --d) {
    TCFEM_ASSERT(variant[d] >= 0 && std::size_t(variant[d]) < lambda_[d].size(), "patch variant out of range");
    c = c * lambda_[d].size() + static_cast<std::size_t>(variant[d]);
  }
  return c;
}

template <int dim, typename Number>
void PatchFastDiagonalization<dim, Number>::apply_inverse(Number* x, Number* tmp, const Variants& variant) const {
  using tensor::apply_1d;
  const int n = n_, total = ipow(n, dim);
  const auto sizes = tensor::cube_sizes<dim>(n);
  const Number* inverse_diagonal = inverse_diagonal_[combination(variant)].data();
  Number* in = x;
  Number* out = tmp;
  for (int d = 0; d < dim; ++d) {  // V^T
    apply_1d<true, false>(vectors_[d][variant[d]].data(), n, n, d, sizes, in, out);
    std::swap(in, out);
  }
  for (int i = 0; i < total; ++i) in[i] *= inverse_diagonal[i];
  for (int d = 0; d < dim; ++d) {  // V
    apply_1d<false, false>(vectors_[d][variant[d]].data(), n, n, d, sizes, in, out);
    std::swap(in, out);
  }
  if (in != x) std::copy(in, in + total, x);
}

template <int dim, typename Number>
void PatchFastDiagonalization<dim, Number>::apply_inverse_weighted(Number* x, Number* tmp,
                                                                   const std::array<double, dim>& g,
                                                                   const Variants& variant) const {
  using tensor::apply_1d;
  (void)combination(variant);  // checks the variants
  const int n = n_, total = ipow(n, dim);
  const auto sizes = tensor::cube_sizes<dim>(n);
  Number* in = x;
  Number* out = tmp;
  for (int d = 0; d < dim; ++d) {  // V^T
    apply_1d<true, false>(vectors_[d][variant[d]].data(), n, n, d, sizes, in, out);
    std::swap(in, out);
  }
  for (int i = 0; i < total; ++i) {
    int r = i;
    double s = 0.0;
    for (int d = 0; d < dim; ++d) {
      s += g[d] * lambda_[d][variant[d]][r % n];
      r /= n;
    }
    in[i] = static_cast<Number>(in[i] / s);
  }
  for (int d = 0; d < dim; ++d) {  // V
    apply_1d<false, false>(vectors_[d][variant[d]].data(), n, n, d, sizes, in, out);
    std::swap(in, out);
  }
  if (in != x) std::copy(in, in + total, x);
}

// ---- the smoother ---------------------------------------------------------------------------

namespace {
template <int dim>
std::array<double, dim> parameter_cell_size(const mesh::BoxMesh<dim>& mesh) {
  std::array<double, dim> h;
  const auto hs = mesh.cell_size();
  for (int d = 0; d < dim; ++d) h[d] = hs[d];
  return h;
}
/// The 1D cell size of the local solvers: the parameter grid's, or unit cells for the surrogate
/// (whose cell metric carries the sizes).
template <int dim>
std::array<double, dim> local_cell_size(const mesh::BoxMesh<dim>& mesh, bool surrogate) {
  if (!surrogate) return parameter_cell_size(mesh);
  std::array<double, dim> h;
  h.fill(1.0);
  return h;
}
}  // namespace

namespace {
/// The cell metric of a mesh's owned cells ([cell * dim + d]) extended to its ghosted box, the ghost
/// cells' entries from their owners (through the ghost exchange of Q1 dg cell vectors, whose 2^dim
/// entries per cell carry the dim values).
template <int dim>
std::vector<double> ghosted_cell_metric(const mesh::BoxMesh<dim>& mesh, const std::vector<double>& owned) {
  const auto& part = mesh.partition();
  constexpr int per_cell = 1 << dim;
  const auto exchange = fe::make_dof_exchange<dim>(part, fe::Disc::dg, 1);
  std::vector<double> cells(part.ghosted.n_cells() * per_cell, 0.0);
  auto ghosted_number = [&](const std::array<int, dim>& c) { return part.ghosted.number(c); };
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const std::size_t g = ghosted_number(mesh.cell_index(cell));
    for (int d = 0; d < dim; ++d) cells[g * per_cell + d] = owned[cell * dim + d];
  }
  exchange->update_ghosts(cells.data());
  std::vector<double> out(part.ghosted.n_cells() * dim);
  for (std::size_t c = 0; c < part.ghosted.n_cells(); ++c)
    for (int d = 0; d < dim; ++d) out[c * dim + d] = cells[c * per_cell + d];
  return out;
}
}  // namespace

template <int dim, typename Number>
VertexPatchSmoother<dim, Number>::VertexPatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                      const fe::Quadrature1D& quadrature, bool additive,
                                                      PatchVariant variant, double relaxation,
                                                      const LevelOperator<Vector<Number>>& op,
                                                      std::vector<double> cell_metric)
    : mesh_(&mesh),
      dofs_(&dofs),
      op_(&op),
      cell_metric_(std::move(cell_metric)),
      additive_(additive),
      variant_(variant),
      relaxation_(relaxation),
      k_(dofs.degree()),
      n_full_(2 * dofs.degree() + 1),
      n_inner_(2 * dofs.degree() - 1),
      solver_(dofs.degree(), local_cell_size(mesh, !cell_metric_.empty()), quadrature) {
  if (dofs.disc() != fe::Disc::cg)
    throw InputError("--smoother patch: VertexPatchSmoother is the smoother of --disc cg; dg layouts take "
                     "DgVertexPatchSmoother (multigrid/host/dg_patch_smoother.h)");
  if (!cell_metric_.empty() && cell_metric_.size() != mesh.n_owned_cells() * dim)
    throw Error("VertexPatchSmoother: the cell metric has " + std::to_string(cell_metric_.size()) +
                " entries, the mesh " + std::to_string(mesh.n_owned_cells()) + " cells");
  const auto& part = mesh.partition();
  if (!cell_metric_.empty() && part.is_distributed()) cell_metric_ = ghosted_cell_metric(mesh, cell_metric_);
  range_ = patch_vertex_range<dim>(dofs.dirichlet_faces());
  // curved cells without surrogates: the residual of the level operator (on Cartesian cells the
  // boundary patches localize theirs too); surrogates: fused / separate take the surrogate
  // residuals, except with patches on Neumann faces
  if (cell_metric_.empty() ? mesh.geometry() != mesh::GeometryKind::cartesian : range_.boundary())
    variant_ = PatchVariant::global;
  surrogate_residuals_ = !cell_metric_.empty() && !additive_ && variant_ != PatchVariant::global;
  const auto& ext = dofs.lattice_extent();
  long s = 1;
  for (int d = 0; d < dim; ++d) {
    stride_[d] = s;
    s *= ext[d];
  }
  // patches of the vertices this process owns (the vertex v: the owner of cell v; on a high face the
  // owner of the cell below), by color: the interior vertices and those on Neumann faces
  colors_ = owned_patch_vertices<dim>(
      part, 1 << dim,
      [](const Patch& v) {
        int color = 0;
        for (int d = 0; d < dim; ++d) color |= (v[d] & 1) << d;
        return color;
      },
      range_.low, range_.high);
  const auto& mask = dofs.boundary_mask();
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) constrained_.push_back(static_cast<index_t>(i));
  // rectangular 1D matrices (inner rows, all columns) of the localized residual, per side (the
  // patch's cells along d: both, the one above the vertex or the one below it)
  const auto h = local_cell_size(mesh, !cell_metric_.empty());  // surrogates: unit cells, weighted
  for (int d = 0; d < dim; ++d)
    for (const PatchSide side : {PatchSide::interior, PatchSide::low, PatchSide::high}) {
      const int cells = side == PatchSide::interior ? 3 : side == PatchSide::low ? 2 : 1;
      const auto p = patch_matrices_1d(k_, h[d], quadrature, cells);
      auto& mass = mass_rect_[d][int(side)];
      auto& stiff = stiff_rect_[d][int(side)];
      mass.resize(n_inner_ * n_full_);
      stiff.resize(n_inner_ * n_full_);
      for (int i = 0; i < n_inner_; ++i)
        for (int j = 0; j < n_full_; ++j) {
          mass[i * n_full_ + j] = static_cast<Number>(p.mass[(i + 1) * n_full_ + j]);
          stiff[i * n_full_ + j] = static_cast<Number>(p.stiffness[(i + 1) * n_full_ + j]);
        }
    }
  const int nf = ipow(n_full_, dim);
  for (auto* b : {&u_, &r_, &t0_, &t1_, &t2_, &t3_}) b->resize(nf);
  if (variant_ == PatchVariant::global || additive_ || surrogate_residuals_) residual_.resize(dofs.n_local());
  if (surrogate_residuals_) step_correction_.resize(dofs.n_local());
  if (additive_ || part.is_distributed()) correction_.resize(dofs.n_local());
}

template <int dim, typename Number>
std::size_t VertexPatchSmoother<dim, Number>::n_patches() const {
  std::size_t n = 0;
  for (const auto& c : colors_) n += c.size();
  return n;
}

template <int dim, typename Number>
index_t VertexPatchSmoother<dim, Number>::first_node(const Patch& v) const {
  std::array<long, dim> p;
  for (int d = 0; d < dim; ++d) p[d] = static_cast<long>(v[d] - 1) * k_;
  return dofs_->lattice_index(p);
}

template <int dim, typename Number>
bool VertexPatchSmoother<dim, Number>::boundary_patch(const Patch& v) const {
  const auto& cells = mesh_->partition().global_cells;
  for (int d = 0; d < dim; ++d)
    if (v[d] == 0 || v[d] == cells[d]) return true;
  return false;
}

namespace {
/// f(padded) for every unknown of a patch with the inner-node ranges `range` (of 0 .. n - 2 per
/// direction), lexicographic with direction 0 fastest; padded: its index in the n^dim layout.
template <int dim, class F>
void for_each_unknown(const std::array<int, 2> (&range)[dim], int n, F&& f) {
  std::array<int, dim> j;
  for (int d = 0; d < dim; ++d) j[d] = range[d][0];
  while (true) {
    int padded = 0;
    for (int d = dim - 1; d >= 0; --d) padded = padded * n + j[d];
    f(padded);
    int d = 0;
    while (d < dim && ++j[d] == range[d][1]) {
      j[d] = range[d][0];
      ++d;
    }
    if (d == dim) return;
  }
}

/// The lattice indices of the nodes (v_d - 1) k + j_d, j_d in [lo_d, hi_d), lexicographic.
template <int dim>
void box_node_indices(const fe::DofLayout<dim>& dofs, const std::array<int, dim>& v, int k,
                      const std::array<int, dim>& lo, const std::array<int, dim>& hi, std::vector<index_t>& idx) {
  std::size_t total = 1;
  for (int d = 0; d < dim; ++d) total *= std::size_t(hi[d] - lo[d]);
  idx.resize(total);
  for (std::size_t i = 0; i < total; ++i) {
    std::size_t r = i;
    std::array<long, dim> p;
    for (int d = 0; d < dim; ++d) {
      const int n = hi[d] - lo[d];
      p[d] = static_cast<long>(v[d] - 1) * k + lo[d] + static_cast<long>(r % n);
      r /= n;
    }
    idx[i] = dofs.lattice_index(p);
  }
}
}  // namespace

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::patch_dof_indices(const Patch& v, std::vector<index_t>& idx) const {
  if (boundary_patch(v)) {  // the nodes inside the box
    const auto side = sides(v);
    std::array<int, dim> lo, hi;
    for (int d = 0; d < dim; ++d) {
      lo[d] = side[d] == int(PatchSide::low) ? k_ : 0;
      hi[d] = side[d] == int(PatchSide::high) ? k_ + 1 : n_full_;
    }
    box_node_indices<dim>(*dofs_, v, k_, lo, hi, idx);
    return;
  }
  const int n = n_full_;
  idx.resize(ipow(n, dim));
  const index_t base = first_node(v);
  for (int i = 0; i < ipow(n, dim); ++i) {
    int r = i;
    index_t g = base;
    for (int d = 0; d < dim; ++d) {
      g += (r % n) * stride_[d];
      r /= n;
    }
    idx[i] = g;
  }
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::inner_dof_indices(const Patch& v, std::vector<index_t>& idx) const {
  if (boundary_patch(v)) {  // the unknowns: the inner nodes 1 + [first, last) of each side
    const auto side = sides(v);
    std::array<int, dim> lo, hi;
    for (int d = 0; d < dim; ++d) {
      const auto range = patch_side_range(PatchSide(side[d]), k_);
      lo[d] = 1 + range[0];
      hi[d] = 1 + range[1];
    }
    box_node_indices<dim>(*dofs_, v, k_, lo, hi, idx);
    return;
  }
  const int n = n_inner_;
  idx.resize(ipow(n, dim));
  index_t base = first_node(v);
  for (int d = 0; d < dim; ++d) base += stride_[d];
  for (int i = 0; i < ipow(n, dim); ++i) {
    int r = i;
    index_t g = base;
    for (int d = 0; d < dim; ++d) {
      g += (r % n) * stride_[d];
      r /= n;
    }
    idx[i] = g;
  }
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::gather_full(const Patch& v, const Vector<Number>& u, Number* out) const {
  const int n = n_full_;
  const index_t base = first_node(v);
  const auto& mask = dofs_->boundary_mask();
  bool touches_boundary = false;
  for (int d = 0; d < dim; ++d) touches_boundary |= (v[d] == 1) || (v[d] == mesh_->n_cells()[d] - 1);
  const Number* src = u.data();
  if constexpr (dim == 2) {
    for (int j = 0; j < n; ++j) {
      const index_t row = base + j * stride_[1];
      for (int i = 0; i < n; ++i) out[i + n * j] = src[row + i];
      if (touches_boundary)
        for (int i = 0; i < n; ++i)
          if (mask[row + i]) out[i + n * j] = Number(0);
    }
  } else {
    for (int l = 0; l < n; ++l)
      for (int j = 0; j < n; ++j) {
        const index_t row = base + j * stride_[1] + l * stride_[2];
        Number* o = out + n * (j + n * l);
        for (int i = 0; i < n; ++i) o[i] = src[row + i];
        if (touches_boundary)
          for (int i = 0; i < n; ++i)
            if (mask[row + i]) o[i] = Number(0);
      }
  }
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::gather_full_boundary(const Patch& v, const Vector<Number>& u,
                                                            Number* out) const {
  // the node box of the two-cell patch, the nodes outside the mesh and the constrained ones as 0
  const int n = n_full_;
  const auto& mask = dofs_->boundary_mask();
  const auto& cells = mesh_->partition().global_cells;
  for (int i = 0; i < ipow(n, dim); ++i) {
    int r = i;
    bool inside = true;
    std::array<long, dim> p;
    for (int d = 0; d < dim; ++d) {
      p[d] = static_cast<long>(v[d] - 1) * k_ + r % n;
      r /= n;
      inside &= p[d] >= 0 && p[d] <= static_cast<long>(cells[d]) * k_;
    }
    if (!inside) {
      out[i] = Number(0);
      continue;
    }
    const index_t g = dofs_->lattice_index(p);
    out[i] = mask[g] ? Number(0) : u[g];
  }
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::gather_inner(const Patch& v, const Vector<Number>& u, Number* out) const {
  if (boundary_patch(v)) {
    inner_dof_indices(v, idx_);
    for (std::size_t i = 0; i < idx_.size(); ++i) out[i] = u[idx_[i]];
    return;
  }
  const int n = n_inner_;
  index_t base = first_node(v);
  for (int d = 0; d < dim; ++d) base += stride_[d];
  const Number* src = u.data();
  if constexpr (dim == 2) {
    for (int j = 0; j < n; ++j) std::copy(src + base + j * stride_[1], src + base + j * stride_[1] + n, out + n * j);
  } else {
    for (int l = 0; l < n; ++l)
      for (int j = 0; j < n; ++j) {
        const index_t row = base + j * stride_[1] + l * stride_[2];
        std::copy(src + row, src + row + n, out + n * (j + n * l));
      }
  }
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::add_inner(const Patch& v, Number scale, const Number* in,
                                                 Vector<Number>& u) const {
  if (boundary_patch(v)) {
    inner_dof_indices(v, idx_);
    for (std::size_t i = 0; i < idx_.size(); ++i) u[idx_[i]] += scale * in[i];
    return;
  }
  const int n = n_inner_;
  index_t base = first_node(v);
  for (int d = 0; d < dim; ++d) base += stride_[d];
  Number* dst = u.data();
  if constexpr (dim == 2) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) dst[base + j * stride_[1] + i] += scale * in[i + n * j];
  } else {
    for (int l = 0; l < n; ++l)
      for (int j = 0; j < n; ++j) {
        const index_t row = base + j * stride_[1] + l * stride_[2];
        const Number* src = in + n * (j + n * l);
        for (int i = 0; i < n; ++i) dst[row + i] += scale * src[i];
      }
  }
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::local_residual(const Patch& v, const Vector<Number>& u,
                                                      const Vector<Number>& b, Number* r) const {
  using tensor::apply_1d;
  const bool boundary = boundary_patch(v);
  std::array<int, dim> side{};  // PatchSide::interior along every direction of an interior patch
  if (boundary) side = sides(v);
  const auto M = [&](int d) { return mass_rect_[d][side[d]].data(); };
  const auto L = [&](int d) { return stiff_rect_[d][side[d]].data(); };
  const int nf = n_full_, ni = n_inner_, n_out = ipow(ni, dim);
  Number* uf = u_.data();
  if (boundary)
    gather_full_boundary(v, u, uf);
  else
    gather_full(v, u, uf);
  // the surrogate's weights g_d of the terms with L_d (1 on Cartesian patches)
  std::array<Number, dim> g;
  g.fill(Number(1));
  if (surrogate_residuals_) {
    const auto m = patch_metric(v);
    for (int d = 0; d < dim; ++d) g[d] = static_cast<Number>(m[d]);
  }
  const auto scale = [](Number* a, std::size_t n, Number s) {
    if (s != Number(1))
      for (std::size_t i = 0; i < n; ++i) a[i] *= s;
  };
  Number* au = t3_.data();  // A_{I,F} u_F
  if constexpr (dim == 2) {
    // A = g_0 L_0 (x) M_1 + g_1 M_0 (x) L_1 (direction 0 fastest)
    std::array<int, 3> s{nf, nf, 1};
    apply_1d<false, false>(M(1), ni, nf, 1, s, uf, t0_.data());  // M_1 u
    apply_1d<false, false>(L(1), ni, nf, 1, s, uf, t1_.data());  // L_1 u
    scale(t0_.data(), std::size_t(ni) * nf, g[0]);
    scale(t1_.data(), std::size_t(ni) * nf, g[1]);
    s[1] = ni;
    apply_1d<false, false>(L(0), ni, nf, 0, s, t0_.data(), au);
    apply_1d<false, true>(M(0), ni, nf, 0, s, t1_.data(), au);
  } else {
    std::array<int, 3> s{nf, nf, nf};
    apply_1d<false, false>(M(2), ni, nf, 2, s, uf, t0_.data());  // zM
    apply_1d<false, false>(L(2), ni, nf, 2, s, uf, t1_.data());  // zL
    scale(t1_.data(), std::size_t(ni) * nf * nf, g[2] / g[1]);
    s[2] = ni;
    Number* t = t2_.data();
    Number* sm = uf;  // u_F is no longer needed
    apply_1d<false, false>(M(1), ni, nf, 1, s, t0_.data(), t);   // M_1 M_2 u
    apply_1d<false, false>(L(1), ni, nf, 1, s, t0_.data(), sm);  // L_1 M_2 u
    apply_1d<false, true>(M(1), ni, nf, 1, s, t1_.data(), sm);   // + (g_2 / g_1) M_1 L_2 u
    scale(t, std::size_t(ni) * ni * nf, g[0]);
    scale(sm, std::size_t(ni) * ni * nf, g[1]);
    s[1] = ni;
    apply_1d<false, false>(L(0), ni, nf, 0, s, t, au);
    apply_1d<false, true>(M(0), ni, nf, 0, s, sm, au);
  }
  if (!boundary) {
    gather_inner(v, b, r);
    for (int i = 0; i < n_out; ++i) r[i] -= au[i];
    return;
  }
  // the unknowns' rows of the padded (2k-1)^dim product, in inner_dof_indices' order
  inner_dof_indices(v, idx_);
  std::array<int, 2> range[dim];
  for (int d = 0; d < dim; ++d) range[d] = patch_side_range(PatchSide(side[d]), k_);
  std::size_t i = 0;
  for_each_unknown<dim>(range, ni, [&](int padded) {
    r[i] = b[idx_[i]] - au[padded];
    ++i;
  });
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::local_solve(const Patch& v, Number* r) const {
  const bool boundary = boundary_patch(v);
  typename PatchFastDiagonalization<dim, Number>::Variants variant{};
  Number* x = r;
  std::array<int, 2> range[dim];
  if (boundary) {
    // the unknowns into the (2k-1)^dim layout of the interior patches, zeros elsewhere
    const auto side = sides(v);
    for (int d = 0; d < dim; ++d) {
      variant[d] = side[d];
      range[d] = patch_side_range(PatchSide(side[d]), k_);
    }
    x = t1_.data();
    std::fill(x, x + ipow(n_inner_, dim), Number(0));
    std::size_t i = 0;
    for_each_unknown<dim>(range, n_inner_, [&](int padded) { x[padded] = r[i++]; });
  }
  if (cell_metric_.empty())
    solver_.apply_inverse(x, t0_.data(), variant);
  else
    solver_.apply_inverse_weighted(x, t0_.data(), patch_metric(v), variant);
  if (boundary) {
    std::size_t i = 0;
    for_each_unknown<dim>(range, n_inner_, [&](int padded) { r[i++] = x[padded]; });
  }
}

template <int dim, typename Number>
std::array<double, dim> VertexPatchSmoother<dim, Number>::patch_metric(const Patch& v) const {
  if (cell_metric_.empty()) return {};
  return patch_mean_metric<dim>(mesh_->partition().ghosted, cell_metric_, v);
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::set_constrained(Vector<Number>& x, const Vector<Number>& b) const {
  for (const index_t i : constrained_) x[i] = b[i];
}

template <int dim, typename Number>
auto VertexPatchSmoother<dim, Number>::sweep_ops() const {
  struct Ops {
    const VertexPatchSmoother* s;
    void residual(const Patch& v, const Vector<Number>& x, const Vector<Number>& b, Number* r) const {
      s->local_residual(v, x, b, r);
    }
    void solve(const Patch& v, Number* r) const { s->local_solve(v, r); }
    void gather(const Patch& v, const Vector<Number>& u, Number* r) const { s->gather_inner(v, u, r); }
    void add(const Patch& v, Number a, const Number* r, Vector<Number>& u) const { s->add_inner(v, a, r, u); }
  };
  return Ops{this};
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::smooth(Vector<Number>& x, const Vector<Number>& b, SweepOrder order) const {
  TCFEM_ASSERT(x.size() == dofs_->n_local() && b.size() == dofs_->n_local(), "smoother vector sizes");
  const GhostLayout* ghosts = dofs_->ghost_layout().get();
  // the localized residuals read b at the patches' nodes of other ranks
  if (ghosts && !additive_ && variant_ != PatchVariant::global && !surrogate_residuals_)
    ghosts->update_ghosts(const_cast<Number*>(b.data()));
  const PatchSweepWork<Number> work{residual_, correction_, r_, buffer_, ghosts};
  const Number omega = static_cast<Number>(relaxation_);
  const std::size_t patch_size = std::size_t(ipow(n_inner_, dim));
  if (surrogate_residuals_) {
    // y = B (b - A x) by the sweep of the surrogates on y from 0 with the right-hand side r, then x += y
    op_->vmult(residual_, x);
    VectorOps<Vector<Number>>::residual_from_product(residual_, b);
    if (ghosts) ghosts->update_ghosts(residual_.data());
    step_correction_.fill(Number(0));
    schwarz_step(false, variant_, colors_, patch_size, omega, *op_, step_correction_, residual_, order, work,
                 sweep_ops());
    x.add(Number(1), step_correction_);
  } else {
    schwarz_step(additive_, variant_, colors_, patch_size, omega, *op_, x, b, order, work, sweep_ops());
  }
  set_constrained(x, b);
}

template <int dim, typename Number>
void VertexPatchSmoother<dim, Number>::smooth_from_zero(Vector<Number>& x, const Vector<Number>& b,
                                                        SweepOrder order) const {
  if (!surrogate_residuals_) {
    smooth(x, b, order);
    return;
  }
  // r = b - A 0 = b, and the correction is x itself
  const GhostLayout* ghosts = dofs_->ghost_layout().get();
  if (ghosts) ghosts->update_ghosts(const_cast<Number*>(b.data()));
  const PatchSweepWork<Number> work{residual_, correction_, r_, buffer_, ghosts};
  schwarz_step(false, variant_, colors_, std::size_t(ipow(n_inner_, dim)), static_cast<Number>(relaxation_), *op_, x,
               b, order, work, sweep_ops());
  set_constrained(x, b);
}

template class PatchFastDiagonalization<2, double>;
template class PatchFastDiagonalization<3, double>;
template class PatchFastDiagonalization<2, float>;
template class PatchFastDiagonalization<3, float>;
template class VertexPatchSmoother<2, double>;
template class VertexPatchSmoother<3, double>;
template class VertexPatchSmoother<2, float>;
template class VertexPatchSmoother<3, float>;

}  // namespace tcfem::multigrid
