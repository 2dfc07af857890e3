#include "operators/cpu/sparse_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "fe/lagrange.h"
#include "fe/quadrature.h"
#include "mesh/geometry_field.h"

namespace tcfem::operators {

// ---- SparseMatrix -------------------------------------------------------------------------

SparseMatrix::SparseMatrix(std::size_t n_rows, std::size_t n_cols, std::vector<std::size_t> row_ptr,
                           std::vector<col_t> cols, std::vector<double> values)
    : n_rows_(n_rows), n_cols_(n_cols), row_ptr_(std::move(row_ptr)), cols_(std::move(cols)),
      values_(std::move(values)) {
  TCFEM_ASSERT(row_ptr_.size() == n_rows_ + 1, "CSR row pointer has the wrong length");
  TCFEM_ASSERT(row_ptr_.front() == 0 && row_ptr_.back() == cols_.size(), "CSR row pointer inconsistent");
  TCFEM_ASSERT(values_.size() == cols_.size(), "CSR values and columns differ in length");
  for (std::size_t r = 0; r < n_rows_; ++r) {
    TCFEM_ASSERT(row_ptr_[r] <= row_ptr_[r + 1], "CSR row pointer not monotone");
    for (std::size_t p = row_ptr_[r]; p < row_ptr_[r + 1]; ++p) {
      TCFEM_ASSERT(cols_[p] < n_cols_, "CSR column index out of range");
      TCFEM_ASSERT(p == row_ptr_[r] || cols_[p - 1] < cols_[p], "CSR columns not sorted and unique");
    }
  }
}

void SparseMatrix::vmult(Vector<double>& dst, const Vector<double>& src) const {
  TCFEM_ASSERT(src.size() == n_cols_, "vmult: source vector size does not match the matrix");
  TCFEM_ASSERT(src.data() != dst.data() || n_rows_ == 0, "vmult needs distinct vectors");
  if (dst.size() != n_rows_) dst.resize(n_rows_);
  const double* x = src.data();
  for (std::size_t r = 0; r < n_rows_; ++r) {
    double s = 0.0;
    for (std::size_t p = row_ptr_[r]; p < row_ptr_[r + 1]; ++p) s += values_[p] * x[cols_[p]];
    dst[r] = s;
  }
}

std::ptrdiff_t SparseMatrix::position(std::size_t i, std::size_t j) const {
  if (i >= n_rows_ || j >= n_cols_) return -1;
  const auto b = cols_.begin() + static_cast<std::ptrdiff_t>(row_ptr_[i]);
  const auto e = cols_.begin() + static_cast<std::ptrdiff_t>(row_ptr_[i + 1]);
  const auto it = std::lower_bound(b, e, static_cast<col_t>(j));
  if (it == e || *it != j) return -1;
  return it - cols_.begin();
}

bool SparseMatrix::in_pattern(std::size_t i, std::size_t j) const { return position(i, j) >= 0; }

double SparseMatrix::el(std::size_t i, std::size_t j) const {
  const auto p = position(i, j);
  return p < 0 ? 0.0 : values_[static_cast<std::size_t>(p)];
}

Vector<double> SparseMatrix::diagonal() const {
  Vector<double> d(n_rows_);
  for (std::size_t r = 0; r < n_rows_; ++r) d[r] = el(r, r);
  return d;
}

// ---- assembly -----------------------------------------------------------------------------

namespace {

int ipow(int n, int p) {
  int r = 1;
  for (int i = 0; i < p; ++i) r *= n;
  return r;
}

/// Basis values val[p*n + i] and reference gradients grad[(p*n + i)*dim + e] of the tensor-product
/// Lagrange basis at the given reference points, each evaluated in full:
/// phi_i(xi) = prod_d phi_{i_d}(xi_d), d/dxi_e phi_i = phi'_{i_e}(xi_e) prod_{d != e} phi_{i_d}(xi_d).
template <int dim>
struct Tabulation {
  int n = 0, n_points = 0;
  std::vector<double> weights;  // tensor-product weight of each point
  std::vector<double> val, grad;
};

/// Tabulation at the tensor points of `quad` (first direction fastest); if face_dir >= 0, at the
/// points of the face xi_{face_dir} = side, tensor over the other directions (the weights too).
template <int dim>
Tabulation<dim> tabulate(const fe::LagrangeBasis1D& basis, const fe::Quadrature1D& quad, int face_dir, int side) {
  const int n1 = basis.size(), nq1 = quad.size();
  Tabulation<dim> t;
  t.n = ipow(n1, dim);
  const int free_dirs = face_dir >= 0 ? dim - 1 : dim;
  t.n_points = ipow(nq1, free_dirs);
  t.weights.resize(t.n_points);
  t.val.resize(static_cast<std::size_t>(t.n_points) * t.n);
  t.grad.resize(static_cast<std::size_t>(t.n_points) * t.n * dim);
  std::vector<double> v1(dim * n1), d1(dim * n1);
  for (int p = 0; p < t.n_points; ++p) {
    std::array<double, dim> xi;
    double w = 1.0;
    int r = p;
    for (int d = 0; d < dim; ++d) {
      if (d == face_dir) {
        xi[d] = side;
        continue;
      }
      xi[d] = quad.points[r % nq1];
      w *= quad.weights[r % nq1];
      r /= nq1;
    }
    t.weights[p] = w;
    for (int d = 0; d < dim; ++d)
      for (int a = 0; a < n1; ++a) {
        v1[d * n1 + a] = basis.value(a, xi[d]);
        d1[d * n1 + a] = basis.derivative(a, xi[d]);
      }
    for (int i = 0; i < t.n; ++i) {
      int ii[dim];
      int s = i;
      for (int d = 0; d < dim; ++d) {
        ii[d] = s % n1;
        s /= n1;
      }
      double v = 1.0;
      for (int d = 0; d < dim; ++d) v *= v1[d * n1 + ii[d]];
      t.val[static_cast<std::size_t>(p) * t.n + i] = v;
      for (int e = 0; e < dim; ++e) {
        double g = d1[e * n1 + ii[e]];
        for (int d = 0; d < dim; ++d)
          if (d != e) g *= v1[d * n1 + ii[d]];
        t.grad[(static_cast<std::size_t>(p) * t.n + i) * dim + e] = g;
      }
    }
  }
  return t;
}

/// Jacobian of the isoparametric map at point p: J[c][e] = sum_i x_c,i d phi_i / d xi_e.
template <int dim>
struct PointMap {
  double J[dim][dim];
  double inv[dim][dim];
  double det;
};

/// Gauss-Jordan inversion with partial pivoting; returns the determinant (0 if singular).
template <int dim>
double gauss_jordan_inverse(const double (&A)[dim][dim], double (&inv)[dim][dim]) {
  double a[dim][2 * dim];
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j < 2 * dim; ++j) a[i][j] = j < dim ? A[i][j] : (j - dim == i ? 1.0 : 0.0);
  double det = 1.0;
  for (int col = 0; col < dim; ++col) {
    int piv = col;
    for (int r = col + 1; r < dim; ++r)
      if (std::abs(a[r][col]) > std::abs(a[piv][col])) piv = r;
    if (a[piv][col] == 0.0) return 0.0;
    if (piv != col) {
      for (int j = 0; j < 2 * dim; ++j) std::swap(a[piv][j], a[col][j]);
      det = -det;
    }
    const double p = a[col][col];
    det *= p;
    for (int j = 0; j < 2 * dim; ++j) a[col][j] /= p;
    for (int r = 0; r < dim; ++r) {
      if (r == col) continue;
      const double f = a[r][col];
      if (f == 0.0) continue;
      for (int j = 0; j < 2 * dim; ++j) a[r][j] -= f * a[col][j];
    }
  }
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j < dim; ++j) inv[i][j] = a[i][dim + j];
  return det;
}

template <int dim>
PointMap<dim> map_at(const Tabulation<dim>& t, int p, const double* nodes) {
  PointMap<dim> m;
  const int n = t.n;
  for (int c = 0; c < dim; ++c)
    for (int e = 0; e < dim; ++e) {
      double s = 0.0;
      for (int i = 0; i < n; ++i) s += nodes[c * n + i] * t.grad[(static_cast<std::size_t>(p) * n + i) * dim + e];
      m.J[c][e] = s;
    }
  m.det = gauss_jordan_inverse<dim>(m.J, m.inv);
  return m;
}

/// The mapped position of point p.
template <int dim>
std::array<double, dim> point_at(const Tabulation<dim>& t, int p, const double* nodes) {
  std::array<double, dim> x;
  const int n = t.n;
  for (int c = 0; c < dim; ++c) {
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += nodes[c * n + i] * t.val[static_cast<std::size_t>(p) * n + i];
    x[c] = s;
  }
  return x;
}

/// Physical gradient J^{-T} grad_xi phi_i at point p.
template <int dim>
void physical_gradient(const Tabulation<dim>& t, int p, int i, const PointMap<dim>& m, double* g) {
  const double* gr = &t.grad[(static_cast<std::size_t>(p) * t.n + i) * dim];
  for (int c = 0; c < dim; ++c) {
    double s = 0.0;
    for (int e = 0; e < dim; ++e) s += m.inv[e][c] * gr[e];
    g[c] = s;
  }
}

template <int dim>
std::string cell_name(const std::array<int, dim>& c) {
  std::string s = "(";
  for (int d = 0; d < dim; ++d) s += (d ? "," : "") + std::to_string(c[d]);
  return s + ")";
}

/// Rows [i0, i1) (even bounds) of the dense product A = X Y^T, for the column blocks of 8 from
/// `jb0(i)` on (A is zero-filled before). Register- and cache-blocked; an x86-64-v3 (AVX2, FMA)
/// clone is taken where the CPU has it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void gemm_xyt_rows(int i0, int i1, int ldy, int m, const double* X, const double* Yt, double* A, bool upper) {
  // four doubles per vector (GCC vector extension: AVX registers in the x86-64-v3 clone, pairs of
  // SSE2 registers otherwise); unaligned loads and stores through memcpy
  using v4 = double __attribute__((vector_size(32)));
  constexpr std::size_t VB = sizeof(v4);
  constexpr int KC = 128;
  for (int k0 = 0; k0 < m; k0 += KC) {
    const int kc = std::min(KC, m - k0);
    for (int i = i0; i < i1; i += 2) {
      // upper: the blocks holding columns j >= i only (the rest is mirrored by the caller)
      for (int jb = upper ? i / 8 * 8 : 0; jb < ldy; jb += 8) {
        const double* x0 = X + static_cast<std::size_t>(i) * m + k0;
        const double* x1 = x0 + m;
        double* a0p = A + static_cast<std::size_t>(i) * ldy + jb;
        double* a1p = a0p + ldy;
        v4 a00, a01, a10, a11, y0, y1;
        std::memcpy(&a00, a0p, VB);
        std::memcpy(&a01, a0p + 4, VB);
        std::memcpy(&a10, a1p, VB);
        std::memcpy(&a11, a1p + 4, VB);
        const double* y = Yt + static_cast<std::size_t>(k0) * ldy + jb;
        for (int k = 0; k < kc; ++k, y += ldy) {
          std::memcpy(&y0, y, VB);
          std::memcpy(&y1, y + 4, VB);
          const double u0 = x0[k], u1 = x1[k];
          a00 += u0 * y0;
          a01 += u0 * y1;
          a10 += u1 * y0;
          a11 += u1 * y1;
        }
        std::memcpy(a0p, &a00, VB);
        std::memcpy(a0p + 4, &a01, VB);
        std::memcpy(a1p, &a10, VB);
        std::memcpy(a1p + 4, &a11, VB);
      }
    }
  }
}

/// Dense product A = X Y^T of X (rows x m, row-major) and Y given transposed, Yt (m x ldy,
/// row-major); rows must be even and ldy a multiple of 8 (callers pad with zeros). A is
/// rows x ldy, row-major. `symmetric` (Y = X D with D diagonal, so A = A^T): the entries with
/// j >= i are computed and mirrored, the first n rows and columns. Large products (element
/// matrices of high degrees) split their rows over the host threads.
void gemm_xyt(int rows, int ldy, int m, const double* X, const double* Yt, double* A, bool symmetric = false,
              int n = 0, int threads = host_threads()) {
  std::fill(A, A + static_cast<std::size_t>(rows) * ldy, 0.0);
  const std::size_t pair_flops = 4 * static_cast<std::size_t>(ldy) * static_cast<std::size_t>(m);
  const std::size_t grain = std::max<std::size_t>(1, std::size_t(4000000) / std::max<std::size_t>(1, pair_flops));
  parallel_chunks(0, static_cast<std::size_t>(rows / 2), [&](std::size_t b, std::size_t e, int) {
    gemm_xyt_rows(static_cast<int>(2 * b), static_cast<int>(2 * e), ldy, m, X, Yt, A, symmetric);
  }, threads, grain);
  if (symmetric)
    for (int i = 1; i < n; ++i)
      for (int j = 0; j < i; ++j) A[static_cast<std::size_t>(i) * ldy + j] = A[static_cast<std::size_t>(j) * ldy + i];
}

int round_up(int n, int m) { return (n + m - 1) / m * m; }

/// Element-matrix workspace: X (rows x m), Yt (m x ldy), A (rows x ldy), zero padded.
struct Workspace {
  int nl = 0, rows = 0, ldy = 0, m = 0;
  std::vector<double> X, Yt, A;
  void setup(int n_local, int m_) {
    nl = n_local;
    rows = round_up(n_local, 2);
    ldy = round_up(n_local, 8);
    m = m_;
    X.assign(static_cast<std::size_t>(rows) * m, 0.0);
    Yt.assign(static_cast<std::size_t>(m) * ldy, 0.0);
    A.assign(static_cast<std::size_t>(rows) * ldy, 0.0);
  }
  double& x(int i, int k) { return X[static_cast<std::size_t>(i) * m + k]; }
  double& yt(int k, int j) { return Yt[static_cast<std::size_t>(k) * ldy + j]; }
  void multiply() { gemm_xyt(rows, ldy, m, X.data(), Yt.data(), A.data()); }
  /// Yt = D X^T with D diagonal: A is symmetric (its n_local x n_local block); `threads` for the rows.
  void multiply_symmetric(int threads) { gemm_xyt(rows, ldy, m, X.data(), Yt.data(), A.data(), true, nl, threads); }
  double a(int i, int j) const { return A[static_cast<std::size_t>(i) * ldy + j]; }
};

/// CSR arrays under construction.
struct Csr {
  std::size_t n = 0;
  std::vector<std::size_t> row_ptr;
  std::vector<SparseMatrix::col_t> cols;
  std::vector<double> values;
  std::size_t find(index_t r, index_t c) const {
    const auto b = cols.begin() + static_cast<std::ptrdiff_t>(row_ptr[r]);
    const auto e = cols.begin() + static_cast<std::ptrdiff_t>(row_ptr[r + 1]);
    const auto it = std::lower_bound(b, e, static_cast<SparseMatrix::col_t>(c));
    TCFEM_ASSERT(it != e && *it == static_cast<SparseMatrix::col_t>(c), "assembly entry outside the sparsity pattern");
    return static_cast<std::size_t>(it - cols.begin());
  }
};

}  // namespace

template <int dim>
std::size_t estimated_nnz(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, Form form) {
  const long double k = dofs.degree();
  const long double n = std::pow(k + 1, dim);
  const auto& N = mesh.n_cells();
  long double est;
  if (dofs.disc() == fe::Disc::cg) {
    // the cg pattern is the tensor product of the 1D patterns: N blocks of (k+1)^2, vertices shared
    est = 1.0L;
    for (int d = 0; d < dim; ++d) est *= N[d] * (k + 1) * (k + 1) - (N[d] - 1);
  } else {
    long double cells = 1.0L;
    for (int d = 0; d < dim; ++d) cells *= N[d];
    est = cells * n * n;
    if (form == Form::laplace)
      for (int d = 0; d < dim; ++d) est += 2.0L * n * n * cells / N[d] * (N[d] - 1);  // interior faces
  }
  if (est >= static_cast<long double>(std::numeric_limits<std::size_t>::max()))
    return std::numeric_limits<std::size_t>::max();
  return static_cast<std::size_t>(est);
}

template <int dim>
SparseMatrix assemble_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                               const OperatorConfig& config, Form form) {
  if (config.degree != dofs.degree() || config.disc != dofs.disc())
    throw InputError("operator configuration does not match the DoF layout");
  const std::size_t est = estimated_nnz<dim>(mesh, dofs, form);
  if (est > SparseMatrix::max_nnz)
    throw InputError("assembled matrix would have about " + std::to_string(est) +
                     " nonzeros, more than the limit of " + std::to_string(SparseMatrix::max_nnz));
  const std::size_t n_rows = dofs.n_local();
  if (n_rows >= std::numeric_limits<SparseMatrix::col_t>::max())
    throw InputError("too many DoFs for an assembled matrix");

  const int k = config.degree;
  const int n = dofs.dofs_per_cell();
  const bool dg = config.disc == fe::Disc::dg;
  const bool laplace = form == Form::laplace;
  const bool constrain = !dg && laplace;
  const bool faces = dg && laplace;
  const auto& bmask = dofs.boundary_mask();
  auto constrained = [&](index_t i) { return constrain && bmask[static_cast<std::size_t>(i)]; };
  const auto& N = mesh.n_cells();
  const auto& owned = mesh.partition().owned;
  const auto& ghosted = mesh.partition().ghosted;
  auto ghost_id = [&](const std::array<int, dim>& c) { return ghosted.number(c); };
  auto ghost_cell = [&](std::size_t id) { return ghosted.cell(id); };

  // Faces treated, as the operator does: positions in the owned box (one more along d).
  struct Face {
    int d;
    std::array<int, dim> pos;
    bool has_minus, has_plus;
  };
  std::vector<Face> face_list;
  if (faces)
    for (int d = 0; d < dim; ++d) {
      std::array<int, dim> ext;
      std::size_t nf = 1;
      for (int e = 0; e < dim; ++e) {
        ext[e] = owned.extent(e) + (e == d ? 1 : 0);
        nf *= static_cast<std::size_t>(ext[e]);
      }
      for (std::size_t f = 0; f < nf; ++f) {
        Face face;
        face.d = d;
        std::size_t r = f;
        for (int e = 0; e < dim; ++e) {
          face.pos[e] = owned.begin[e] + static_cast<int>(r % static_cast<std::size_t>(ext[e]));
          r /= static_cast<std::size_t>(ext[e]);
        }
        face.has_minus = face.pos[d] > 0;
        face.has_plus = face.pos[d] < N[d];
        // Neumann faces of the box have no face terms
        if (!face.has_plus && !dofs.dirichlet_faces()[2 * d + 1]) continue;
        if (!face.has_minus && !dofs.dirichlet_faces()[2 * d]) continue;
        face_list.push_back(face);
      }
    }
  auto minus_cell = [](const Face& f) {
    auto c = f.pos;
    c[f.d] -= 1;
    return c;
  };

  // ---- sparsity pattern: cell graph (which cells' DoFs couple) and DoF -> cell incidence ----
  const std::size_t n_gcells = ghosted.n_cells();
  std::vector<std::vector<std::size_t>> graph(n_gcells);
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto id = ghost_id(mesh.cell_index(cell));
    graph[id].push_back(id);
  }
  for (const auto& f : face_list) {
    if (f.has_minus && f.has_plus) {
      const auto m = ghost_id(minus_cell(f)), p = ghost_id(f.pos);
      graph[m].push_back(m);
      graph[m].push_back(p);
      graph[p].push_back(p);
      graph[p].push_back(m);
    } else {
      const auto c = ghost_id(f.has_minus ? minus_cell(f) : f.pos);
      graph[c].push_back(c);
    }
  }
  for (auto& g : graph) {
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
  }
  std::vector<index_t> cell_dofs(n_gcells * n);
  for (std::size_t id = 0; id < n_gcells; ++id) dofs.cell_dof_indices(ghost_cell(id), &cell_dofs[id * n]);
  // incidence row -> source cells (cells with couplings)
  std::vector<std::size_t> inc_ptr(n_rows + 1, 0), inc;
  for (std::size_t id = 0; id < n_gcells; ++id)
    if (!graph[id].empty())
      for (int i = 0; i < n; ++i) ++inc_ptr[static_cast<std::size_t>(cell_dofs[id * n + i]) + 1];
  for (std::size_t r = 0; r < n_rows; ++r) inc_ptr[r + 1] += inc_ptr[r];
  inc.resize(inc_ptr[n_rows]);
  {
    std::vector<std::size_t> fill(inc_ptr.begin(), inc_ptr.end() - 1);
    for (std::size_t id = 0; id < n_gcells; ++id)
      if (!graph[id].empty())
        for (int i = 0; i < n; ++i) inc[fill[static_cast<std::size_t>(cell_dofs[id * n + i])]++] = id;
  }
  Csr csr;
  csr.n = n_rows;
  csr.row_ptr.assign(n_rows + 1, 0);
  csr.cols.reserve(std::min(est, std::size_t(1) << 26));
  {
    std::vector<std::size_t> marker(n_rows, std::numeric_limits<std::size_t>::max());
    for (std::size_t r = 0; r < n_rows; ++r) {
      const std::size_t begin = csr.cols.size();
      if (constrained(static_cast<index_t>(r))) {
        csr.cols.push_back(static_cast<SparseMatrix::col_t>(r));
      } else {
        for (std::size_t p = inc_ptr[r]; p < inc_ptr[r + 1]; ++p)
          for (const std::size_t c2 : graph[inc[p]])
            for (int j = 0; j < n; ++j) {
              const index_t col = cell_dofs[c2 * n + j];
              if (constrained(col) || marker[static_cast<std::size_t>(col)] == r) continue;
              marker[static_cast<std::size_t>(col)] = r;
              csr.cols.push_back(static_cast<SparseMatrix::col_t>(col));
            }
      }
      std::sort(csr.cols.begin() + static_cast<std::ptrdiff_t>(begin), csr.cols.end());
      csr.row_ptr[r + 1] = csr.cols.size();
    }
  }
  csr.values.assign(csr.cols.size(), 0.0);
  graph.clear();
  inc.clear();

  // ---- quadrature and tabulations -------------------------------------------------------------
  // Exact integration where the operator integrates exactly (Cartesian fast path): Gauss k+1
  // integrates all cell and face integrands on affine Cartesian cells exactly (degree <= 2k per
  // direction). Otherwise the operator's general-path rule, for cells and faces alike.
  const bool exact = uses_cartesian_path(mesh, dofs, config);
  const fe::Quadrature1D quad = exact ? fe::gauss(k + 1) : fe::make_quadrature(config.quadrature, k);
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  const mesh::GeometryField<dim> geometry(mesh, k);
  const Tabulation<dim> cell_tab = tabulate<dim>(basis, quad, -1, 0);
  const int nq = cell_tab.n_points;

  // cell volumes (by the cell quadrature), for the penalty; computed on demand
  std::vector<double> volume(n_gcells, -1.0);
  std::vector<double> nodes(static_cast<std::size_t>(dim) * n), nodes2(static_cast<std::size_t>(dim) * n);
  auto cell_volume = [&](const std::array<int, dim>& c) {
    double& v = volume[ghost_id(c)];
    if (v < 0.0) {
      std::vector<double> nd(static_cast<std::size_t>(dim) * n);
      geometry.cell_nodes(c, nd.data());
      long double s = 0.0L;
      for (int q = 0; q < nq; ++q) s += map_at<dim>(cell_tab, q, nd.data()).det * cell_tab.weights[q];
      v = static_cast<double>(s);
    }
    return v;
  };

  auto scatter = [&](const Workspace& ws, const index_t* g) {
    for (int i = 0; i < ws.nl; ++i) {
      if (constrained(g[i])) continue;
      for (int j = 0; j < ws.nl; ++j) {
        if (constrained(g[j])) continue;
        csr.values[csr.find(g[i], g[j])] += ws.a(i, j);
      }
    }
  };

  // ---- cells ----------------------------------------------------------------------------------
  std::vector<index_t> gidx(2 * static_cast<std::size_t>(n));
  if (exact) {
    // Cartesian cells of one size: the element matrix is the same for every cell, a sum of
    // Kronecker products of the exact 1D matrices (as the Cartesian operator applies it):
    // laplace: sum_t (prod_{e != t} h_e / h_t) M (x) .. L_t .. (x) M; mass: (prod h_e) M (x) .. (x) M.
    const auto h = mesh.cell_size();
    const fe::Matrix1D M = fe::exact_mass_matrix(basis), L = fe::exact_stiffness_matrix(basis);
    const int nb = k + 1;
    std::vector<double> element(static_cast<std::size_t>(n) * n, 0.0);
    const int n_terms = laplace ? dim : 1;
    for (int t = 0; t < n_terms; ++t) {
      double scale = 1.0;
      for (int e = 0; e < dim; ++e) scale *= (!laplace || e != t) ? h[e] : 1.0 / h[e];
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          double v = scale;
          for (int e = 0, ri = i, rj = j; e < dim; ++e, ri /= nb, rj /= nb)
            v *= (!laplace || e != t) ? M(ri % nb, rj % nb) : L(ri % nb, rj % nb);
          element[static_cast<std::size_t>(i) * n + j] += v;
        }
    }
    double cell_vol = 1.0;
    for (int e = 0; e < dim; ++e) cell_vol *= h[e];
    for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
      const auto c = mesh.cell_index(cell);
      volume[ghost_id(c)] = cell_vol;
      dofs.cell_dof_indices(c, gidx.data());
      for (int i = 0; i < n; ++i) {
        if (constrained(gidx[i])) continue;
        for (int j = 0; j < n; ++j) {
          if (constrained(gidx[j])) continue;
          csr.values[csr.find(gidx[i], gidx[j])] += element[static_cast<std::size_t>(i) * n + j];
        }
      }
    }
  }
  // the element matrices of up to `batch` cells at a time, one workspace per cell, over the host
  // threads where an element matrix is large (high degrees: the dense coarse level), then
  // scattered in cell order
  const int m_cols = laplace ? nq * dim : nq;
  const bool large = 2.0 * double(n) * double(n) * double(m_cols) >= 2e6;
  const std::size_t n_cells = exact ? 0 : mesh.n_owned_cells();
  const int batch = large ? std::max(1, host_threads()) : 1;
  std::vector<Workspace> wss(n_cells > 0 ? std::size_t(batch) : 0);
  std::vector<std::vector<double>> cell_nodes(wss.size(), std::vector<double>(static_cast<std::size_t>(dim) * n));
  std::vector<index_t> batch_dofs(wss.size() * std::size_t(n));
  // each workspace zeroed (first touched) by the thread that fills it
  parallel_chunks(0, wss.size(), [&](std::size_t b, std::size_t e, int) {
    for (std::size_t w = b; w < e; ++w) wss[w].setup(n, m_cols);
  }, batch);
  const auto element = [&](std::size_t cell, Workspace& ws, double* nd, int gemm_threads) {
    const auto c = mesh.cell_index(cell);
    geometry.cell_nodes(c, nd);
    double g[dim];
    long double vol = 0.0L;
    for (int q = 0; q < nq; ++q) {
      const auto m = map_at<dim>(cell_tab, q, nd);
      if (!(m.det > 0.0))
        throw InputError("mesh cell " + cell_name<dim>(c) + " is inverted or degenerate (det J = " +
                         std::to_string(m.det) + ")");
      const double jxw = m.det * cell_tab.weights[q];
      vol += jxw;
      double a = 1.0;
      if (laplace && config.coefficient) {
        const auto xq = point_at<dim>(cell_tab, q, nd);
        a = checked_coefficient<dim>(config.coefficient, xq.data(), c, mesh.n_cells());
      }
      for (int i = 0; i < n; ++i) {
        if (laplace) {
          physical_gradient<dim>(cell_tab, q, i, m, g);
          for (int e = 0; e < dim; ++e) {
            ws.x(i, q * dim + e) = g[e];
            ws.yt(q * dim + e, i) = a * jxw * g[e];
          }
        } else {
          const double v = cell_tab.val[static_cast<std::size_t>(q) * n + i];
          ws.x(i, q) = v;
          ws.yt(q, i) = jxw * v;
        }
      }
    }
    volume[ghost_id(c)] = static_cast<double>(vol);
    ws.multiply_symmetric(gemm_threads);  // Yt = (a) JxW X^T
  };
  for (std::size_t c0 = 0; c0 < n_cells; c0 += std::size_t(batch)) {
    const std::size_t c1 = std::min(n_cells, c0 + std::size_t(batch));
    if (batch == 1) {
      element(c0, wss[0], cell_nodes[0].data(), host_threads());
    } else {
      parallel_chunks(c0, c1, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t cell = b; cell < e; ++cell) element(cell, wss[cell - c0], cell_nodes[cell - c0].data(), 1);
      }, batch);
    }
    if (batch == 1) {
      dofs.cell_dof_indices(mesh.cell_index(c0), gidx.data());
      scatter(wss[0], gidx.data());
      continue;
    }
    // the batch's element matrices added with the rows split over the threads: each row's sums
    // in cell order, as one thread adds them
    for (std::size_t cell = c0; cell < c1; ++cell)
      dofs.cell_dof_indices(mesh.cell_index(cell), &batch_dofs[(cell - c0) * std::size_t(n)]);
    parallel_chunks(0, n_rows, [&](std::size_t r0, std::size_t r1, int) {
      for (std::size_t cell = c0; cell < c1; ++cell) {
        const Workspace& ws = wss[cell - c0];
        const index_t* g = &batch_dofs[(cell - c0) * std::size_t(n)];
        for (int i = 0; i < ws.nl; ++i) {
          const auto row = static_cast<std::size_t>(g[i]);
          if (row < r0 || row >= r1 || constrained(g[i])) continue;
          for (int j = 0; j < ws.nl; ++j)
            if (!constrained(g[j])) csr.values[csr.find(g[i], g[j])] += ws.a(i, j);
        }
      }
    }, batch, 64);
  }

  // ---- faces (dg Laplace, SIPG) ---------------------------------------------------------------
  if (faces) {
    double g[dim];
    // face_tab[d][s]: basis on the face xi_d = s of the reference cell
    std::vector<std::array<Tabulation<dim>, 2>> face_tab(dim);
    for (int d = 0; d < dim; ++d)
      for (int s = 0; s < 2; ++s) face_tab[d][s] = tabulate<dim>(basis, quad, d, s);
    const int nf = face_tab[0][0].n_points;
    const double pf = double(k) * (k + 1);
    Workspace wi, wb;  // interior (2n local DoFs: minus cell, then plus cell) and boundary faces
    wi.setup(2 * n, 2 * nf);
    wb.setup(n, 2 * nf);
    std::vector<double> jxw(nf);
    for (const auto& f : face_list) {
      const int d = f.d;
      const bool interior = f.has_minus && f.has_plus;
      Workspace& w = interior ? wi : wb;
      // sides present: 0 = minus cell (its face xi_d = 1), 1 = plus cell (its face xi_d = 0)
      const int n_sides = interior ? 2 : 1;
      std::array<int, dim> cells[2];
      int ref_face[2];
      if (interior) {
        cells[0] = minus_cell(f);
        ref_face[0] = 1;
        cells[1] = f.pos;
        ref_face[1] = 0;
      } else {
        cells[0] = f.has_minus ? minus_cell(f) : f.pos;
        ref_face[0] = f.has_minus ? 1 : 0;
      }
      geometry.cell_nodes(cells[0], nodes.data());
      if (interior) geometry.cell_nodes(cells[1], nodes2.data());
      double* side_nodes[2] = {nodes.data(), nodes2.data()};
      long double area = 0.0L;
      double a_max = 0.0;
      for (int q = 0; q < nf; ++q) {
        // normal and surface element from side 0 (the minus cell, or the only cell)
        const auto m0 = map_at<dim>(face_tab[d][ref_face[0]], q, side_nodes[0]);
        double a = 1.0;
        if (config.coefficient) {
          const auto xq = point_at<dim>(face_tab[d][ref_face[0]], q, side_nodes[0]);
          a = checked_coefficient<dim>(config.coefficient, xq.data(), cells[0], mesh.n_cells());
        }
        a_max = std::max(a_max, a);
        double nrm[dim], len = 0.0;
        for (int c = 0; c < dim; ++c) {
          nrm[c] = m0.inv[d][c];  // (J^{-T} e_d)_c
          len += nrm[c] * nrm[c];
        }
        len = std::sqrt(len);
        // J^{-T} e_d points towards increasing xi_d: from minus to plus, or out of the cell at
        // xi_d = 1; at xi_d = 0 of a boundary cell the outward normal is the opposite
        const double orient = (ref_face[0] == 1 || interior) ? 1.0 : -1.0;
        for (int c = 0; c < dim; ++c) nrm[c] *= orient / len;
        jxw[q] = std::abs(m0.det) * len * face_tab[d][ref_face[0]].weights[q];
        area += jxw[q];
        const double avg = interior ? 0.5 : 1.0;
        for (int s = 0; s < n_sides; ++s) {
          const auto& tab = face_tab[d][ref_face[s]];
          const auto ms = s == 0 ? m0 : map_at<dim>(tab, q, side_nodes[s]);
          const double sgn = s == 0 ? 1.0 : -1.0;  // [v] = v- - v+
          for (int i = 0; i < n; ++i) {
            physical_gradient<dim>(tab, q, i, ms, g);
            double dn = 0.0;
            for (int c = 0; c < dim; ++c) dn += g[c] * nrm[c];
            w.x(s * n + i, q) = sgn * tab.val[static_cast<std::size_t>(q) * n + i];  // jump
            w.x(s * n + i, nf + q) = a * avg * dn;                                   // average flux
          }
        }
      }
      const double F = static_cast<double>(area);
      const double gamma = a_max * (interior ? pf * (F / cell_volume(cells[0]) + F / cell_volume(cells[1]))
                                             : 2.0 * pf * F / cell_volume(cells[0]));
      // A_ij = sum_q w_q (gamma [phi_j][phi_i] - {dn phi_j}[phi_i] - [phi_j]{dn phi_i})
      //      = sum_q jump_i * w(gamma jump_j - flux_j) + flux_i * (-w jump_j)
      for (int l = 0; l < w.nl; ++l)
        for (int q = 0; q < nf; ++q) {
          const double jump = w.x(l, q), flux = w.x(l, nf + q);
          w.yt(q, l) = jxw[q] * (gamma * jump - flux);
          w.yt(nf + q, l) = -jxw[q] * jump;
        }
      w.multiply();
      for (int s = 0; s < n_sides; ++s) dofs.cell_dof_indices(cells[s], gidx.data() + s * n);
      scatter(w, gidx.data());
    }
  }

  if (constrain)
    for (std::size_t r = 0; r < n_rows; ++r)
      if (bmask[r]) csr.values[csr.find(static_cast<index_t>(r), static_cast<index_t>(r))] = 1.0;

  return SparseMatrix(n_rows, n_rows, std::move(csr.row_ptr), std::move(csr.cols), std::move(csr.values));
}

template std::size_t estimated_nnz<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, Form);
template std::size_t estimated_nnz<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, Form);
template SparseMatrix assemble_operator<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                           const OperatorConfig&, Form);
template SparseMatrix assemble_operator<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                           const OperatorConfig&, Form);

}  // namespace tcfem::operators
