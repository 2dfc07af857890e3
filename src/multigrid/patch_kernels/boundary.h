#pragma once
// The vertex patches on Neumann faces (multigrid/host/patch_smoother.h, "Neumann parts") on the
// GPU: one thread group per patch solves x_j += omega A_j^{-1} r_j from the level operator's
// residual r (the global variant), in the (2k-1)^dim layout of the interior patches with the
// missing nodes of the one-cell directions held at zero:
//   gather r at the patch's unknowns (zeros elsewhere), V^T along each direction, scale by the
//   inverse eigenvalue sums, V along each direction, add omega times the unknowns' entries to x.
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
  const Number* r = nullptr;            ///< the residual b - A x
  Number* x = nullptr;
  Number omega = Number(1);
};

/// Shared values one group uses: two tensors of ni^dim.
TCFEM_HD inline int boundary_patch_shared_values(int dim, int ni) {
  int n = 1;
  for (int d = 0; d < dim; ++d) n *= ni;
  return 2 * n;
}

/// Patch `j` by the group g, with shared memory smem (boundary_patch_shared_values entries).
template <int dim, typename Number>
TCFEM_HD void boundary_patch_block(const ThreadGroup g, long long j, const BoundaryPatchParams<Number>& p,
                                   Number* smem) {
  const int ni = p.ni, k = p.k;
  int total = 1;
  for (int d = 0; d < dim; ++d) total *= ni;
  Number* a = smem;
  Number* b = smem + total;
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
  for (int t = g.rank; t < total; t += g.size) {
    const long long n = node(t);
    a[t] = n < 0 ? Number(0) : p.r[n];
  }
  g.sync();
  // y = V_d^T y (transpose) or V_d y along direction d, from `in` to `out`
  const auto contract = [&](int d, bool transpose, const Number* in, Number* out) {
    const Number* V = p.vectors + (static_cast<long long>(d) * 3 + side[d]) * ni * ni;
    int s = 1;
    for (int e = 0; e < d; ++e) s *= ni;
    for (int t = g.rank; t < total; t += g.size) {
      const int i = (t / s) % ni, base = t - i * s;
      Number sum = Number(0);
      for (int m = 0; m < ni; ++m) sum += (transpose ? V[m * ni + i] : V[i * ni + m]) * in[base + m * s];
      out[t] = sum;
    }
    g.sync();
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
