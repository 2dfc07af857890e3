#pragma once
// The vertices of a color's vertex patches and the mean cell metric over a patch's cells (the
// weights of the separable surrogates): one definition for the host smoother, the device setup
// and the patch kernels.
#include "core/hd.h"

namespace tcfem::multigrid {

/// The vertex coordinate along a direction of the patches at position m of a color whose
/// vertices have odd (1, 3, 5, ...) or even (2, 4, ...) coordinates along it: interior vertices.
TCFEM_HD constexpr int color_vertex(int odd, int m) { return odd ? 1 + 2 * m : 2 + 2 * m; }

/// The vertex v of patch j = m_0 + count_0 (m_1 + count_1 m_2) of a color.
template <int dim>
TCFEM_HD inline void color_patch_vertex(long long j, const int* count, const int* parity, int* v) {
  for (int d = 0; d < dim; ++d) {
    const int m = static_cast<int>(j % count[d]);
    j /= count[d];
    v[d] = color_vertex(parity[d], m);
  }
}

/// g_d, the mean of metric[cell * dim + d] over the cells around vertex v (cell c: v - 1 + bit d
/// of the corner along d, the corners in order) that `number` finds (number(c) >= 0; -1: no such
/// cell). Returns how many it found (g is not divided when none).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <int dim, class CellNumber>
TCFEM_HD inline int patch_metric_mean(const int* v, const CellNumber& number, const double* metric, double* g) {
  for (int d = 0; d < dim; ++d) g[d] = 0.0;
  int n = 0;
  for (int corner = 0; corner < (1 << dim); ++corner) {
    int c[dim];
    for (int d = 0; d < dim; ++d) c[d] = v[d] - 1 + ((corner >> d) & 1);
    const long long cell = number(c);
    if (cell < 0) continue;
    for (int d = 0; d < dim; ++d) g[d] += metric[cell * dim + d];
    ++n;
  }
  if (n > 0)
    for (int d = 0; d < dim; ++d) g[d] /= double(n);
  return n;
}

}  // namespace tcfem::multigrid
