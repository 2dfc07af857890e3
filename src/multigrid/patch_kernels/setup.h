#pragma once
// Host setup of the vertex-patch smoother kernels, shared by DevicePatchSmoother and the CPU tests
// of the block program: the 1D matrices (the kernel parameter PatchMatrices) and the inverse
// eigenvalue sums, built exactly as VertexPatchSmoother builds them, and the launch parameters of
// the 2^dim colors.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "multigrid/patch_kernels/block.h"
#include "multigrid/patch_kernels/boundary.h"
#include "multigrid/host/patch_smoother.h"
#include "core/error.h"
#include "core/parallel.h"

namespace tcfem::multigrid::patch_kernels {

/// Per direction d at d (2 ni nf + ni ni): M_d, L_d (inner rows, all columns; ni x nf) and the
/// eigenvectors V_d (ni x ni) of the patch of the level's cell sizes; `inverse_diagonal` gets
/// 1 / (lambda_0 + ...), lexicographic. With `eigenvalues` (the separable surrogates): the patch of
/// unit cells, and `eigenvalues` gets lambda_d (dim x ni, the order of the eigenvectors).
template <int dim, typename Number>
std::vector<Number> patch_kernel_matrices(const mesh::BoxMesh<dim>& mesh, int k, const fe::Quadrature1D& quadrature,
                                          std::vector<Number>& inverse_diagonal,
                                          std::vector<Number>* eigenvalues = nullptr) {
  const int nf = 2 * k + 1, ni = 2 * k - 1, ms = 2 * ni * nf + ni * ni;
  std::array<double, dim> h;
  for (int d = 0; d < dim; ++d) h[d] = eigenvalues ? 1.0 : mesh.cell_size()[d];
  const PatchFastDiagonalization<dim, Number> fd(k, h, quadrature);
  if (eigenvalues) {
    eigenvalues->resize(dim * ni);
    for (int d = 0; d < dim; ++d)
      for (int i = 0; i < ni; ++i) (*eigenvalues)[d * ni + i] = static_cast<Number>(fd.eigenvalues(d)[i]);
  }
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

/// The matrices of patch_kernel_matrices in the form of Contraction::even_odd (multigrid/patch_kernels/block.h):
/// per direction M_d, L_d as P (P_ij = (A_ij + A_i,nf-1-j) / 2, j < k; column k: A_ik; rows 0 .. k-1)
/// followed by Q ((A_ij - A_i,nf-1-j) / 2, rows 0 .. k-2, columns 0 .. k-1), and V_d with its
/// symmetric eigenvectors first, then the antisymmetric ones, rows 0 .. k-1 only; the inverse
/// eigenvalue sums (and the eigenvalues, where given) permuted alike. Throws Error when a matrix is
/// not centrosymmetric or an eigenvector neither symmetric nor antisymmetric (to 1000 eps(Number),
/// relative).
template <int dim, typename Number>
std::vector<Number> patch_even_odd_matrices(int k, const std::vector<Number>& dense,
                                            std::vector<Number>& inverse_diagonal,
                                            std::vector<Number>* eigenvalues = nullptr) {
  const int nf = 2 * k + 1, ni = 2 * k - 1, ms = 2 * ni * nf + ni * ni;
  const int ho = ni / 2, hi = nf / 2, h = ni / 2;
  const double tol = 1000.0 * double(std::numeric_limits<Number>::epsilon());
  std::vector<Number> out(dense.size(), Number(0));
  std::array<std::vector<int>, dim> perm;
  for (int d = 0; d < dim; ++d) {
    const Number* m = dense.data() + d * ms;
    Number* o = out.data() + d * ms;
    for (int which = 0; which < 2; ++which) {  // M, L
      const Number* A = m + which * ni * nf;
      Number* P = o + which * ni * nf;
      Number* Q = P + (ho + 1) * (hi + 1);
      double scale = 0.0, asym = 0.0;
      for (int i = 0; i < ni; ++i)
        for (int j = 0; j < nf; ++j) {
          scale = std::max(scale, std::abs(double(A[i * nf + j])));
          asym = std::max(asym, std::abs(double(A[i * nf + j]) - double(A[(ni - 1 - i) * nf + nf - 1 - j])));
        }
      if (asym > tol * scale) throw Error("even-odd patch kernels: the 1D patch matrices are not centrosymmetric");
      for (int i = 0; i <= ho; ++i) {
        for (int j = 0; j < hi; ++j) P[i * (hi + 1) + j] = (A[i * nf + j] + A[i * nf + nf - 1 - j]) / Number(2);
        P[i * (hi + 1) + hi] = A[i * nf + hi];
      }
      for (int i = 0; i < ho; ++i)
        for (int j = 0; j < hi; ++j) Q[i * hi + j] = (A[i * nf + j] - A[i * nf + nf - 1 - j]) / Number(2);
    }
    const Number* V = m + 2 * ni * nf;
    std::vector<int> sym, anti;
    for (int c = 0; c < ni; ++c) {
      double scale = 0.0, ds = 0.0, da = 0.0;
      for (int i = 0; i < ni; ++i) {
        const double a = V[i * ni + c], b = V[(ni - 1 - i) * ni + c];
        scale = std::max(scale, std::abs(a));
        ds = std::max(ds, std::abs(a - b));
        da = std::max(da, std::abs(a + b));
      }
      if (ds <= tol * scale)
        sym.push_back(c);
      else if (da <= tol * scale)
        anti.push_back(c);
      else
        throw Error("even-odd patch kernels: an eigenvector is neither symmetric nor antisymmetric");
    }
    if (int(sym.size()) != h + 1) throw Error("even-odd patch kernels: unexpected eigenvector symmetry");
    perm[d] = sym;
    perm[d].insert(perm[d].end(), anti.begin(), anti.end());
    Number* W = o + 2 * ni * nf;
    for (int i = 0; i <= h; ++i)
      for (int c = 0; c < ni; ++c) W[i * ni + c] = V[i * ni + perm[d][c]];
  }
  const std::vector<Number> old = inverse_diagonal;
  int total = 1;
  for (int d = 0; d < dim; ++d) total *= ni;
  for (int n = 0; n < total; ++n) {
    int r = n, src = 0, s = 1;
    for (int d = 0; d < dim; ++d) {
      src += perm[d][r % ni] * s;
      r /= ni;
      s *= ni;
    }
    inverse_diagonal[n] = old[src];
  }
  if (eigenvalues) {
    const std::vector<Number> lambda = *eigenvalues;
    for (int d = 0; d < dim; ++d)
      for (int i = 0; i < ni; ++i) (*eigenvalues)[d * ni + i] = lambda[d * ni + perm[d][i]];
  }
  return out;
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
    p.dirichlet_planes = 0;
    for (int f = 0; f < 2 * dim; ++f)
      if (dofs.dirichlet_faces()[f]) p.dirichlet_planes |= 1 << f;
    // node offsets within a patch box are 32-bit in the kernels (multigrid/patch_kernels/block.h: box_offset)
    long long reach = 0;
    for (int d = 0; d < dim; ++d) reach += 2LL * dofs.degree() * p.stride[d];
    if (reach > 2147483647LL)
      throw InputError("--cells: the device patch smoother needs (2k + 1) lattice planes of the box to hold fewer than 2^31 nodes");
  }
  return colors;
}

/// The weights of the separable surrogates of one color's patches (PatchKernelParams::patch_weights):
/// for patch m0 + count[0] (m1 + count[1] m2), dim values g_d, the mean of `cell_metric` ([cell *
/// dim + d], MatrixFreeOperator::cell_metric) over the patch's 2^dim cells, as
/// VertexPatchSmoother::patch_metric computes them.
template <int dim, typename Number>
std::vector<Number> patch_kernel_weights(const mesh::BoxMesh<dim>& mesh, const PatchKernelParams<Number>& color,
                                         const std::vector<double>& cell_metric) {
  if (cell_metric.size() != mesh.n_owned_cells() * dim)
    throw Error("patch_kernel_weights: the cell metric does not match the mesh");
  std::vector<Number> w(std::size_t(color.n_patches) * dim);
  const auto& cells = mesh.partition().ghosted;
  parallel_chunks(0, std::size_t(color.n_patches), [&](std::size_t begin, std::size_t end, int) {
    for (std::size_t j = begin; j < end; ++j) {
      std::array<int, dim> v;
      color_patch_vertex<dim>(static_cast<long long>(j), color.count, color.parity, v.data());
      const auto g = patch_mean_metric<dim>(cells, cell_metric, v);
      for (int d = 0; d < dim; ++d) w[j * dim + d] = static_cast<Number>(g[d]);
    }
  }, host_threads(), 1 << 14);
  return w;
}

/// The patches of the vertices on Neumann faces (patch_kernels/boundary.h) of a level on one
/// process: their vertices and surrogate weights per color (bit d: odd v_d), and the 1D data of the
/// three variants per direction (unit cells with surrogates, else the level's cell sizes).
template <int dim, typename Number>
struct BoundaryPatchData {
  std::vector<Number> vectors, inverse_diagonal;  ///< BoundaryPatchParams' layouts
  /// without surrogates: the rectangular 1D matrices of the localized residual
  /// (BoundaryPatchParams::residual_matrices)
  std::vector<Number> residual_matrices;
  std::vector<double> eigenvalues;                ///< surrogates only
  std::vector<std::vector<int>> vertices;         ///< per color: dim coordinates per patch
  std::vector<std::vector<double>> weights;       ///< per color, surrogates only: dim per patch
  std::size_t n_patches() const {
    std::size_t n = 0;
    for (const auto& v : vertices) n += v.size() / dim;
    return n;
  }
};

/// The vertices on Neumann faces and on no Dirichlet face (none where every face is a Dirichlet
/// face), by color, lexicographic with direction 0 fastest; O(n^(dim-1)) work.
template <int dim>
std::vector<std::vector<int>> boundary_patch_vertices(const std::array<int, dim>& cells,
                                                      const PatchVertexRange<dim>& range) {
  std::vector<std::vector<int>> colors(1 << dim);
  if (!range.boundary()) return colors;
  std::array<int, dim> first, last;
  for (int d = 0; d < dim; ++d) {
    first[d] = range.low[d] ? 0 : 1;
    last[d] = range.high[d] ? cells[d] : cells[d] - 1;
    if (last[d] < first[d]) return colors;
  }
  std::array<int, dim> v = first;
  while (true) {
    // the x line of (v_1, ..): every vertex if another coordinate lies on a face, else its ends
    bool on_face = false;
    for (int d = 1; d < dim; ++d) on_face |= v[d] == 0 || v[d] == cells[d];
    const auto add = [&](int x) {
      v[0] = x;
      int color = 0;
      for (int d = 0; d < dim; ++d) color |= (v[d] & 1) << d;
      for (int d = 0; d < dim; ++d) colors[color].push_back(v[d]);
    };
    if (on_face) {
      for (int x = first[0]; x <= last[0]; ++x) add(x);
    } else {
      if (range.low[0]) add(0);
      if (range.high[0]) add(cells[0]);
    }
    int d = 1;
    while (d < dim && ++v[d] > last[d]) {
      v[d] = first[d];
      ++d;
    }
    if (d >= dim) break;
  }
  return colors;
}

/// The boundary patches of a level (one process): `cell_metric` non-empty for the surrogates.
template <int dim, typename Number>
BoundaryPatchData<dim, Number> boundary_patch_data(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                   const fe::Quadrature1D& quadrature,
                                                   const std::vector<double>& cell_metric) {
  BoundaryPatchData<dim, Number> out;
  const auto range = patch_vertex_range<dim>(dofs.dirichlet_faces());
  out.vertices = boundary_patch_vertices<dim>(mesh.n_cells(), range);
  if (out.n_patches() == 0) return out;
  const int k = dofs.degree();
  const bool surrogate = !cell_metric.empty();
  std::array<double, dim> h;
  for (int d = 0; d < dim; ++d) h[d] = surrogate ? 1.0 : mesh.cell_size()[d];
  const PatchFastDiagonalization<dim, Number> fd(k, h, quadrature);
  for (int d = 0; d < dim; ++d)
    for (int v = 0; v < 3; ++v) {
      const auto& vec = fd.eigenvectors(d, v);
      out.vectors.insert(out.vectors.end(), vec.begin(), vec.end());
      if (surrogate) {
        const auto& lambda = fd.eigenvalues(d, v);
        out.eigenvalues.insert(out.eigenvalues.end(), lambda.begin(), lambda.end());
      }
    }
  if (!surrogate) {
    // the rows of the inner nodes 1..2k-1, all 2k+1 columns, of the patch's cells along d: both
    // (interior), the one above the vertex (low) or below it (high), as PatchFastDiagonalization
    const int nf = 2 * k + 1, ni = 2 * k - 1;
    for (int d = 0; d < dim; ++d)
      for (const int cells : {3, 2, 1}) {
        const auto m = patch_matrices_1d(k, h[d], quadrature, cells);
        for (const auto* full : {&m.mass, &m.stiffness})
          for (int i = 0; i < ni; ++i)
            for (int j = 0; j < nf; ++j) out.residual_matrices.push_back(static_cast<Number>((*full)[(i + 1) * nf + j]));
      }
    for (int c = 0; c < ipow(3, dim); ++c) {  // c = v_0 + 3 v_1 + 9 v_2
      typename PatchFastDiagonalization<dim, Number>::Variants variant;
      for (int d = 0, r = c; d < dim; ++d, r /= 3) variant[d] = r % 3;
      const auto& inv = fd.inverse_diagonal(variant);
      out.inverse_diagonal.insert(out.inverse_diagonal.end(), inv.begin(), inv.end());
    }
  } else {
    if (cell_metric.size() != mesh.n_owned_cells() * dim)
      throw Error("boundary_patch_data: the cell metric does not match the mesh");
    out.weights.resize(out.vertices.size());
    for (std::size_t c = 0; c < out.vertices.size(); ++c)
      for (std::size_t j = 0; j < out.vertices[c].size(); j += dim) {
        std::array<int, dim> v;
        for (int d = 0; d < dim; ++d) v[d] = out.vertices[c][j + d];
        const auto g = patch_mean_metric<dim>(mesh.partition().ghosted, cell_metric, v);
        out.weights[c].insert(out.weights[c].end(), g.begin(), g.end());
      }
  }
  return out;
}

/// The launch parameters of one color of `data` (the vectors' and the data's device copies are the
/// caller's to set: vertices, vectors, inverse_diagonal, eigenvalues, weights, residual_matrices,
/// r or b, x).
template <int dim, typename Number>
BoundaryPatchParams<Number> boundary_patch_params(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                  const BoundaryPatchData<dim, Number>& data, int color,
                                                  double omega) {
  BoundaryPatchParams<Number> p;
  p.n_patches = static_cast<long long>(data.vertices[color].size() / dim);
  p.k = dofs.degree();
  p.ni = 2 * p.k - 1;
  long long s = 1;
  for (int d = 0; d < dim; ++d) {
    p.stride[d] = s;
    s *= dofs.lattice_extent()[d];
    p.cells[d] = mesh.n_cells()[d];
  }
  for (int f = 0; f < 2 * dim; ++f)
    if (dofs.dirichlet_faces()[f]) p.dirichlet_planes |= 1 << f;
  p.omega = static_cast<Number>(omega);
  return p;
}

}  // namespace tcfem::multigrid::patch_kernels
