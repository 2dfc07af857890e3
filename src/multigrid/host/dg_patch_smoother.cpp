#include "multigrid/host/dg_patch_smoother.h"

#include <algorithm>

#include "core/error.h"
#include "fe/lagrange.h"
#include "operators/operator_tables.h"
#include "multigrid/host/patch_sweeps.h"
#include "tensor/contract.h"

namespace tcfem::multigrid {

namespace {
constexpr int ipow(int n, int p) { return p == 0 ? 1 : n * ipow(n, p - 1); }

/// Copies block (r0, c0) of size nb x nb into the row-major n x n matrix `dst`.
void put_block(std::vector<double>& dst, int n, int r0, int c0, const std::vector<double>& block, int nb) {
  for (int i = 0; i < nb; ++i)
    for (int j = 0; j < nb; ++j) dst[(r0 + i) * n + c0 + j] = block[i * nb + j];
}

template <typename Number>
std::vector<Number> to_number(const std::vector<double>& v) {
  return std::vector<Number>(v.begin(), v.end());
}

/// Boundary variant of a patch with vertex coordinate v along a direction of n cells.
int boundary_variant_1d(int v, int n) { return (v == 1 ? 1 : 0) | (v == n - 1 ? 2 : 0); }
}  // namespace

DgPatchMatrices1D dg_patch_matrices_1d(int degree, double h, const fe::Quadrature1D& quadrature, int variant) {
  TCFEM_ASSERT(variant >= 0 && variant < 4, "dg patch variant out of range");
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(degree);
  // the SIPG line blocks the Cartesian operator applies (one formula for operator and smoother)
  const auto blocks = operators::sipg_line_blocks(basis, h);
  const auto m = fe::mass_matrix(basis, quadrature);
  const int nb = degree + 1, n = 2 * nb;
  const bool lower_boundary = variant & 1, upper_boundary = variant & 2;
  DgPatchMatrices1D p;
  p.n_cell = nb;
  p.mass.assign(n * n, 0.0);
  p.stiffness.assign(n * n, 0.0);
  p.coupling.assign(n * n, 0.0);
  std::vector<double> hm(nb * nb);
  for (int i = 0; i < nb * nb; ++i) hm[i] = h * m.data[i];
  put_block(p.mass, n, 0, 0, hm, nb);
  put_block(p.mass, n, nb, nb, hm, nb);
  // lower cell: its lower face is the patch's lower end, its upper face the interior face inside
  // the patch (self variant bit 0 = left end on the boundary, bit 1 = right end)
  put_block(p.stiffness, n, 0, 0, blocks.self[lower_boundary ? 1 : 0], nb);
  put_block(p.stiffness, n, nb, nb, blocks.self[upper_boundary ? 2 : 0], nb);
  put_block(p.stiffness, n, 0, nb, blocks.right, nb);  // rows of the lower cell, columns of the upper
  put_block(p.stiffness, n, nb, 0, blocks.left, nb);
  if (!lower_boundary) put_block(p.coupling, n, 0, 0, blocks.left, nb);
  if (!upper_boundary) put_block(p.coupling, n, nb, nb, blocks.right, nb);
  return p;
}

namespace {
/// Per direction, the boundary variants that patches of the mesh have, numbered in order.
template <int dim>
std::array<std::array<int, 4>, dim> used_variants(const mesh::BoxMesh<dim>& mesh) {
  std::array<std::array<int, 4>, dim> index;
  for (int d = 0; d < dim; ++d) {
    const int n = mesh.n_cells()[d];
    std::array<bool, 4> used{};
    for (int v = 1; v < n; ++v) used[boundary_variant_1d(v, n)] = true;
    if (n < 2) used[0] = true;  // no patches; the solver still needs one variant
    int next = 0;
    for (int b = 0; b < 4; ++b) index[d][b] = used[b] ? next++ : -1;
  }
  return index;
}

template <int dim, typename Number>
PatchFastDiagonalization<dim, Number> make_solver(const mesh::BoxMesh<dim>& mesh, int degree,
                                                  const fe::Quadrature1D& quadrature,
                                                  const std::array<std::array<int, 4>, dim>& variants) {
  std::array<std::vector<PatchPair1D>, dim> pairs;
  const auto h = mesh.cell_size();  // the undeformed parameter grid: the closest Cartesian patch
  for (int d = 0; d < dim; ++d)
    for (int b = 0; b < 4; ++b)
      if (variants[d][b] >= 0) {
        auto p = dg_patch_matrices_1d(degree, h[d], quadrature, b);
        pairs[d].push_back({std::move(p.mass), std::move(p.stiffness), {}});
      }
  return PatchFastDiagonalization<dim, Number>(pairs);
}
}  // namespace

template <int dim, typename Number>
DgVertexPatchSmoother<dim, Number>::DgVertexPatchSmoother(const mesh::BoxMesh<dim>& mesh,
                                                          const fe::DofLayout<dim>& dofs,
                                                          const fe::Quadrature1D& quadrature, bool additive,
                                                          PatchVariant variant, double relaxation,
                                                          const LevelOperator<Vector<Number>>& op)
    : dofs_(&dofs),
      op_(&op),
      additive_(additive),
      variant_(variant),
      relaxation_(relaxation),
      k_(dofs.degree()),
      n_cell_(dofs.degree() + 1),
      n_(2 * (dofs.degree() + 1)),
      patch_size_(ipow(2 * (dofs.degree() + 1), dim)),
      cell_size_(dofs.dofs_per_cell()),
      solver_variant_(used_variants(mesh)),
      solver_(make_solver<dim, Number>(mesh, dofs.degree(), quadrature, solver_variant_)) {
  if (dofs.disc() != fe::Disc::dg)
    throw InputError("--smoother patch: DgVertexPatchSmoother is the smoother of --disc dg; cg layouts take "
                     "VertexPatchSmoother");
  const auto& part = mesh.partition();
  // distributed: the localized residual reads the face neighbours of a patch's ghost cells, beyond
  // the ghost layer; the residual of the level operator serves instead
  if (mesh.geometry() != mesh::GeometryKind::cartesian || part.is_distributed()) variant_ = PatchVariant::global;
  n_cells_ = mesh.n_cells();
  index_t s = 1;
  for (int d = 0; d < dim; ++d) {
    first_cell_[d] = part.ghosted.begin[d];
    cell_stride_[d] = s;
    s *= part.ghosted.extent(d);
  }
  // patches of the interior vertices this process owns (the vertex v: the owner of cell v), colored
  // by the vertex coordinates modulo 3
  colors_ = owned_patch_vertices<dim>(part, ipow(3, dim), [](const Patch& v) {
    int color = 0;
    for (int d = dim - 1; d >= 0; --d) color = 3 * color + v[d] % 3;
    return color;
  });
  // 1D matrices of the localized residual in the level's precision
  const auto h = mesh.cell_size();
  for (int d = 0; d < dim; ++d) {
    for (int b = 0; b < 4; ++b) {
      if (solver_variant_[d][b] < 0) continue;
      const auto p = dg_patch_matrices_1d(k_, h[d], quadrature, b);
      stiffness_[d][b] = to_number<Number>(p.stiffness);
      coupling_[d][b] = to_number<Number>(p.coupling);
      if (cell_mass_[d].empty()) {
        cell_mass_[d].resize(n_cell_ * n_cell_);
        for (int i = 0; i < n_cell_; ++i)
          for (int j = 0; j < n_cell_; ++j) cell_mass_[d][i * n_cell_ + j] = static_cast<Number>(p.mass[i * n_ + j]);
      }
    }
  }
  for (auto* b : {&u_, &w_, &t0_, &t1_, &t2_, &r_}) b->resize(patch_size_);
  if (variant_ == PatchVariant::global || additive_) residual_.resize(dofs.n_local());
  if (additive_ || part.is_distributed()) correction_.resize(dofs.n_local());
}

template <int dim, typename Number>
std::size_t DgVertexPatchSmoother<dim, Number>::n_patches() const {
  std::size_t n = 0;
  for (const auto& c : colors_) n += c.size();
  return n;
}

template <int dim, typename Number>
std::array<int, dim> DgVertexPatchSmoother<dim, Number>::boundary_variant(const Patch& v) const {
  std::array<int, dim> b;
  for (int d = 0; d < dim; ++d) b[d] = boundary_variant_1d(v[d], n_cells_[d]);
  return b;
}

template <int dim, typename Number>
index_t DgVertexPatchSmoother<dim, Number>::cell_offset(const std::array<int, dim>& c) const {
  index_t cell = 0;
  for (int d = 0; d < dim; ++d) cell += (c[d] - first_cell_[d]) * cell_stride_[d];
  return cell * cell_size_;
}

namespace {
/// Offset of the first entry of patch cell `o` (bit d: upper cell along d) in a patch tensor of
/// n = 2 n_cell entries per direction.
template <int dim>
int patch_cell_base(int o, int n_cell, int n) {
  int base = 0, stride = 1;
  for (int d = 0; d < dim; ++d) {
    if (o & (1 << d)) base += n_cell * stride;
    stride *= n;
  }
  return base;
}

/// Visits the lines along direction 0 of one cell inside a patch tensor: f(cell_offset, patch_offset)
/// for the n_cell contiguous values of each line.
template <int dim, class F>
void for_each_cell_line(int n_cell, int n, int patch_base, F&& f) {
  if constexpr (dim == 2) {
    for (int j = 0; j < n_cell; ++j) f(n_cell * j, patch_base + n * j);
  } else {
    for (int l = 0; l < n_cell; ++l)
      for (int j = 0; j < n_cell; ++j) f(n_cell * (j + n_cell * l), patch_base + n * (j + n * l));
  }
}
}  // namespace

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::patch_dof_indices(const Patch& v, std::vector<index_t>& idx) const {
  idx.resize(patch_size_);
  for (int o = 0; o < (1 << dim); ++o) {
    std::array<int, dim> c;
    for (int d = 0; d < dim; ++d) c[d] = v[d] - 1 + ((o >> d) & 1);
    const index_t first = cell_offset(c);
    for_each_cell_line<dim>(n_cell_, n_, patch_cell_base<dim>(o, n_cell_, n_), [&](int ci, int pi) {
      for (int i = 0; i < n_cell_; ++i) idx[pi + i] = first + ci + i;
    });
  }
}

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::gather(const Patch& v, const Vector<Number>& u, Number* out) const {
  for (int o = 0; o < (1 << dim); ++o) {
    std::array<int, dim> c;
    for (int d = 0; d < dim; ++d) c[d] = v[d] - 1 + ((o >> d) & 1);
    const Number* src = u.data() + cell_offset(c);
    for_each_cell_line<dim>(n_cell_, n_, patch_cell_base<dim>(o, n_cell_, n_),
                            [&](int ci, int pi) { std::copy(src + ci, src + ci + n_cell_, out + pi); });
  }
}

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::gather_outer(const Patch& v, int d, const Vector<Number>& u,
                                                      Number* out) const {
  // position o of the patch tensor receives the face neighbour along d of patch cell o outside the
  // patch: the cell before the patch for o_d = 0, after it for o_d = 1
  for (int o = 0; o < (1 << dim); ++o) {
    std::array<int, dim> c;
    for (int e = 0; e < dim; ++e) c[e] = v[e] - 1 + ((o >> e) & 1);
    c[d] += ((o >> d) & 1) ? 1 : -1;
    const int base = patch_cell_base<dim>(o, n_cell_, n_);
    if (c[d] < 0 || c[d] >= n_cells_[d]) {
      for_each_cell_line<dim>(n_cell_, n_, base,
                              [&](int, int pi) { std::fill(out + pi, out + pi + n_cell_, Number(0)); });
      continue;
    }
    const Number* src = u.data() + cell_offset(c);
    for_each_cell_line<dim>(n_cell_, n_, base,
                            [&](int ci, int pi) { std::copy(src + ci, src + ci + n_cell_, out + pi); });
  }
}

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::add_patch(const Patch& v, Number scale, const Number* in,
                                                   Vector<Number>& u) const {
  for (int o = 0; o < (1 << dim); ++o) {
    std::array<int, dim> c;
    for (int d = 0; d < dim; ++d) c[d] = v[d] - 1 + ((o >> d) & 1);
    Number* dst = u.data() + cell_offset(c);
    for_each_cell_line<dim>(n_cell_, n_, patch_cell_base<dim>(o, n_cell_, n_), [&](int ci, int pi) {
      for (int i = 0; i < n_cell_; ++i) dst[ci + i] += scale * in[pi + i];
    });
  }
}

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::local_residual(const Patch& v, const Vector<Number>& u,
                                                        const Vector<Number>& b, Number* r) const {
  using tensor::apply_1d;
  const int n = n_, nc = n_cell_;
  const auto bv = boundary_variant(v);
  Number* up = u_.data();
  Number* w = w_.data();
  Number* t = t0_.data();
  Number* s = t1_.data();
  Number* au = t2_.data();
  gather(v, u, up);
  std::fill(au, au + patch_size_, Number(0));
  const auto sizes = tensor::cube_sizes<dim>(n);
  for (int d = 0; d < dim; ++d) {
    // t = L_d u_j + C_d u_out along d
    apply_1d<false, false>(stiffness_[d][bv[d]].data(), n, n, d, sizes, up, t);
    if (bv[d] != 3) {
      gather_outer(v, d, u, w);
      apply_1d<false, true>(coupling_[d][bv[d]].data(), n, n, d, sizes, w, t);
    }
    // the block-diagonal mass blockdiag(h M, h M) along every other direction e: the cell matrix
    // along the local index of a tensor viewed as (n^e, n_cell, 2 n^(dim-1-e))
    const Number* in = t;
    int remaining = dim - 1;
    for (int e = 0; e < dim; ++e) {
      if (e == d) continue;
      const std::array<int, 3> block{ipow(n, e), nc, 2 * ipow(n, dim - 1 - e)};
      if (--remaining == 0) {
        apply_1d<false, true>(cell_mass_[e].data(), nc, nc, 1, block, in, au);
      } else {
        apply_1d<false, false>(cell_mass_[e].data(), nc, nc, 1, block, in, s);
        in = s;
      }
    }
  }
  gather(v, b, r);
  for (int i = 0; i < patch_size_; ++i) r[i] -= au[i];
}

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::local_solve(const Patch& v, Number* r) const {
  const auto bv = boundary_variant(v);
  typename PatchFastDiagonalization<dim, Number>::Variants variant;
  for (int d = 0; d < dim; ++d) variant[d] = solver_variant_[d][bv[d]];
  solver_.apply_inverse(r, t0_.data(), variant);
}

template <int dim, typename Number>
auto DgVertexPatchSmoother<dim, Number>::sweep_ops() const {
  struct Ops {
    const DgVertexPatchSmoother* s;
    void residual(const Patch& v, const Vector<Number>& x, const Vector<Number>& b, Number* r) const {
      s->local_residual(v, x, b, r);
    }
    void solve([[maybe_unused]] const Patch& v, Number* r) const { s->local_solve(v, r); }
    void gather(const Patch& v, const Vector<Number>& u, Number* r) const { s->gather(v, u, r); }
    void add(const Patch& v, Number a, const Number* r, Vector<Number>& u) const { s->add_patch(v, a, r, u); }
  };
  return Ops{this};
}

template <int dim, typename Number>
void DgVertexPatchSmoother<dim, Number>::smooth(Vector<Number>& x, const Vector<Number>& b, SweepOrder order) const {
  TCFEM_ASSERT(x.size() == dofs_->n_local() && b.size() == dofs_->n_local(), "smoother vector sizes");
  // distributed (the global residual): the patches read the residual's ghosts and send their
  // corrections of ghost cells to the owners
  const PatchSweepWork<Number> work{residual_, correction_, r_, buffer_, dofs_->ghost_layout().get()};
  const Number omega = static_cast<Number>(relaxation_);
  schwarz_step(additive_, variant_, colors_, std::size_t(patch_size_), omega, *op_, x, b, order, work, sweep_ops());
}

template class DgVertexPatchSmoother<2, double>;
template class DgVertexPatchSmoother<3, double>;
template class DgVertexPatchSmoother<2, float>;
template class DgVertexPatchSmoother<3, float>;

}  // namespace tcfem::multigrid
