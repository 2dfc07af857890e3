#pragma once
// The vertex patches on Neumann faces (multigrid/host/patch_smoother.h, "Neumann parts") on the
// GPU: one thread group per patch solves x_j += omega A_j^{-1} r_j, in the (2k-1)^dim layout of the
// interior patches with the missing nodes of the one-cell directions held at zero:
//   r_j: the level operator's residual r at the patch's unknowns (the global variant), or the
//        localized residual b_j - A_{j,F} x_F (Cartesian cells, no surrogates: the fused and
//        separate variants), from the patch's full node box (2k+1)^dim, the nodes outside the box
//        and on Dirichlet faces as zeros, and per direction the rectangular 1D mass and stiffness
//        of the patch's cells along it (one cell on a Neumann face, two elsewhere), in the
//        Kronecker sum A = sum_d M_{dim-1} (x) .. L_d .. (x) M_0;
//   V^T along each direction, scale by the inverse eigenvalue sums, V along each direction, add
//   omega times the unknowns' entries to x.
// The 1D eigenvectors and eigenvalues are those of PatchFastDiagonalization's three variants per
// direction (PatchSide: interior, low, high). Boundary patches number O(n^(dim-1)) against the
// interior patches' O(n^dim), so the program favours plainness: runtime sizes, one patch per
// group, 1D contractions read from global memory. Written for the host and the device
// (ThreadGroup); the CPU tests run it against VertexPatchSmoother.
#include <array>

#include "core/hd.h"
#include "multigrid/host/patch_smoother.h"

namespace tcfem::multigrid::patch_kernels {

template <typename Number>
struct BoundaryPatchParams {
  const int* vertices = nullptr;  ///< dim vertex coordinates per patch
  long long n_patches = 0;
  int k = 1, ni = 1;              ///< degree, 2k - 1
  long long stride[3] = {1, 1, 1};  ///< lattice strides (one process: the lattice starts at node 0)
  int cells[3] = {1, 1, 1};       ///< cells per direction (sides: v_d = 0 low, v_d = cells_d high)
  const Number* vectors = nullptr;  ///< [d][variant][ni * ni], row-major, column j the eigenvector j
  /// without surrogates: 1 / (lambda_0 + ...) per combination c = v_0 + 3 v_1 + 9 v_2, [c][ni^dim]
  const Number* inverse_diagonal = nullptr;
  const double* eigenvalues = nullptr;  ///< surrogates: [d][variant][ni]
  const double* weights = nullptr;      ///< surrogates: [patch][dim], the weights g_d
  const Number* r = nullptr;            ///< the residual b - A x (the global variant), or null
  /// the localized residual (r null): the right-hand side, the rectangular 1D matrices
  /// [d][side][M, L][ni x nf] (rows: the inner nodes 1..2k-1 of the patch's node box, columns: all
  /// 2k+1; PatchSide's order) and the Dirichlet faces (bit 2d low along d, 2d + 1 high)
  const Number* b = nullptr;
  const Number* residual_matrices = nullptr;
  int dirichlet_planes = 0;
  Number* x = nullptr;
  Number omega = Number(1);
};

/// Shared values one group uses: two tensors of ni^dim; with the localized residual (`local`) also
/// the node box (2k+1)^dim and the partial products of the Kronecker sum, 2 ni nf^(dim-1) (and
/// 2 ni^2 nf in 3D), the second tensor in the node box's place.
TCFEM_HD inline int boundary_patch_shared_values(int dim, int ni, bool local = false) {
  int n = 1;
  for (int d = 0; d < dim; ++d) n *= ni;
  if (!local) return 2 * n;
  const int nf = ni + 2;
  int box = 1, partial = 2 * ni;
  for (int d = 0; d < dim; ++d) box *= nf;
  for (int d = 1; d < dim; ++d) partial *= nf;
  return n + box + partial + (dim == 3 ? 2 * ni * ni * nf : 0);
}

/// out = A along direction d of `in` (sizes n[0..dim-1], n[d] = cols; out: n[d] replaced by rows),
/// A rows x cols row-major (transposed: A^T, A cols x rows); accumulate: out += instead of out =.
template <int dim, typename Number>
TCFEM_HD void boundary_contract(const ThreadGroup g, const Number* A, int rows, int cols, bool transposed, int d,
                                const int (&n)[3], const Number* in, Number* out, bool accumulate) {
  int s_in = 1, s_out = 1, total = rows;
  for (int e = 0; e < dim; ++e) {
    if (e < d) {
      s_in *= n[e];
      s_out *= n[e];
    }
    if (e != d) total *= n[e];
  }
  for (int t = g.rank; t < total; t += g.size) {
    const int i = (t / s_out) % rows, low = t % s_out, high = t / (s_out * rows);
    const Number* u = in + low + static_cast<long long>(high) * s_in * cols;
    Number sum = Number(0);
    for (int m = 0; m < cols; ++m) sum += (transposed ? A[m * rows + i] : A[i * cols + m]) * u[m * s_in];
    out[t] = accumulate ? out[t] + sum : sum;
  }
  g.sync();
}

/// Patch `j` by the group g, with shared memory smem (boundary_patch_shared_values entries, `local`
/// with p.b).
template <int dim, typename Number>
TCFEM_HD void boundary_patch_block(const ThreadGroup g, long long j, const BoundaryPatchParams<Number>& p,
                                   Number* smem) {
  const int ni = p.ni, nf = ni + 2, k = p.k;
  int total = 1, full = 1;
  for (int d = 0; d < dim; ++d) {
    total *= ni;
    full *= nf;
  }
  Number* a = smem;
  Number* b = smem + total;  // with the localized residual: the node box's place once it is read
  int v[dim], side[dim], lo[dim], hi[dim];
  for (int d = 0; d < dim; ++d) {
    v[d] = p.vertices[j * dim + d];
    side[d] = v[d] == 0 ? int(PatchSide::low) : v[d] == p.cells[d] ? int(PatchSide::high) : int(PatchSide::interior);
    lo[d] = side[d] == int(PatchSide::low) ? k - 1 : 0;
    hi[d] = side[d] == int(PatchSide::high) ? k : ni;
  }
  // the lattice index of padded entry t, or -1 outside the patch's unknowns
  const auto node = [&](int t) -> long long {
    long long g_index = 0;
    for (int d = 0; d < dim; ++d) {
      const int i = t % ni;
      t /= ni;
      if (i < lo[d] || i >= hi[d]) return -1;
      g_index += (static_cast<long long>(v[d] - 1) * k + 1 + i) * p.stride[d];
    }
    return g_index;
  };
  if (p.r) {
    for (int t = g.rank; t < total; t += g.size) {
      const long long n = node(t);
      a[t] = n < 0 ? Number(0) : p.r[n];
    }
    g.sync();
  } else {
    // the localized residual b_I - A_{I,F} x_F into a (rows of the inner nodes; 0 off the unknowns)
    Number* xf = smem + total;
    Number* t0 = xf + full;
    Number* t1 = t0 + full / nf * ni;
    for (int t = g.rank; t < full; t += g.size) {
      long long g_index = 0;
      bool in = true;
      int r = t;
      for (int d = 0; d < dim; ++d) {
        const int node_d = (v[d] - 1) * k + r % nf, last = p.cells[d] * k;
        r /= nf;
        in &= node_d >= 0 && node_d <= last && !(node_d == 0 && (p.dirichlet_planes >> (2 * d) & 1)) &&
              !(node_d == last && (p.dirichlet_planes >> (2 * d + 1) & 1));
        g_index += static_cast<long long>(node_d) * p.stride[d];
      }
      xf[t] = in ? p.x[g_index] : Number(0);
    }
    g.sync();
    const auto matrix = [&](int d, int which) {  // which: 0 M, 1 L
      return p.residual_matrices + ((static_cast<long long>(d) * 3 + side[d]) * 2 + which) * ni * nf;
    };
    if constexpr (dim == 2) {
      // A = M_1 (x) L_0 + L_1 (x) M_0 (direction 0 fastest): t0 = M_1 x, t1 = L_1 x, then along 0
      const int n0[3] = {nf, nf, 1}, n1[3] = {nf, ni, 1};
      boundary_contract<dim>(g, matrix(1, 0), ni, nf, false, 1, n0, xf, t0, false);
      boundary_contract<dim>(g, matrix(1, 1), ni, nf, false, 1, n0, xf, t1, false);
      boundary_contract<dim>(g, matrix(0, 1), ni, nf, false, 0, n1, t0, a, false);
      boundary_contract<dim>(g, matrix(0, 0), ni, nf, false, 0, n1, t1, a, true);
    } else {
      // along 2 (M_2 x, L_2 x), along 1 (M_1 M_2 x; L_1 M_2 x + M_1 L_2 x), along 0
      Number* t2 = t1 + full / nf * ni;
      Number* t3 = t2 + ni * ni * nf;
      const int n0[3] = {nf, nf, nf}, n1[3] = {nf, nf, ni}, n2[3] = {nf, ni, ni};
      boundary_contract<dim>(g, matrix(2, 0), ni, nf, false, 2, n0, xf, t0, false);
      boundary_contract<dim>(g, matrix(2, 1), ni, nf, false, 2, n0, xf, t1, false);
      boundary_contract<dim>(g, matrix(1, 0), ni, nf, false, 1, n1, t0, t2, false);
      boundary_contract<dim>(g, matrix(1, 1), ni, nf, false, 1, n1, t0, t3, false);
      boundary_contract<dim>(g, matrix(1, 0), ni, nf, false, 1, n1, t1, t3, true);
      boundary_contract<dim>(g, matrix(0, 1), ni, nf, false, 0, n2, t2, a, false);
      boundary_contract<dim>(g, matrix(0, 0), ni, nf, false, 0, n2, t3, a, true);
    }
    for (int t = g.rank; t < total; t += g.size) {
      const long long n = node(t);
      a[t] = n < 0 ? Number(0) : p.b[n] - a[t];
    }
    g.sync();
  }
  // y = V_d^T y (transpose) or V_d y along direction d, from `in` to `out`
  const int sizes[3] = {ni, dim > 1 ? ni : 1, dim > 2 ? ni : 1};
  const auto contract = [&](int d, bool transpose, const Number* in, Number* out) {
    const Number* V = p.vectors + (static_cast<long long>(d) * 3 + side[d]) * ni * ni;
    boundary_contract<dim>(g, V, ni, ni, transpose, d, sizes, in, out, false);
  };
  Number* in = a;
  Number* out = b;
  for (int d = 0; d < dim; ++d) {
    contract(d, true, in, out);
    Number* t = in;
    in = out;
    out = t;
  }
  for (int t = g.rank; t < total; t += g.size) {
    if (p.weights) {  // 1 / sum_d g_d lambda_d, as PatchFastDiagonalization::apply_inverse_weighted
      double s = 0.0;
      int r = t;
      for (int d = 0; d < dim; ++d) {
        s += p.weights[j * dim + d] * p.eigenvalues[(d * 3 + side[d]) * ni + r % ni];
        r /= ni;
      }
      in[t] = static_cast<Number>(double(in[t]) / s);
    } else {
      int c = 0;
      for (int d = dim - 1; d >= 0; --d) c = 3 * c + side[d];
      in[t] *= p.inverse_diagonal[static_cast<long long>(c) * total + t];
    }
  }
  g.sync();
  for (int d = 0; d < dim; ++d) {
    contract(d, false, in, out);
    Number* t = in;
    in = out;
    out = t;
  }
  for (int t = g.rank; t < total; t += g.size) {
    const long long n = node(t);
    if (n >= 0) p.x[n] += p.omega * in[t];
  }
}

}  // namespace tcfem::multigrid::patch_kernels
