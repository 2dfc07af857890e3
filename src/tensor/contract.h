#pragma once
// Sum-factorization building block on the CPU: apply a small dense 1D matrix along one direction
// of a tensor stored lexicographically (index 0 fastest). Tensors have up to 3 directions; unused
// directions have size 1.
#include <array>

namespace tcfem::tensor {

/// out = S (x)_d in   (or out += ... when `add`), S is m x n row-major, in has sizes[d] == n,
/// out has the same sizes with sizes[d] replaced by m. With `transpose`, S^T (n x m) is applied:
/// in has sizes[d] == m and out gets n.
template <bool transpose, bool add, typename Number, typename MatNumber>
inline void apply_1d(const MatNumber* S, int m, int n, int d, const std::array<int, 3>& sizes,
                     const Number* in, Number* out) {
  const int n_in = transpose ? m : n;
  const int n_out = transpose ? n : m;
  int pre = 1, post = 1;
  for (int e = 0; e < d; ++e) pre *= sizes[e];
  for (int e = d + 1; e < 3; ++e) post *= sizes[e];
  if (pre == 1) {  // direction 0: accumulate in a register (the same operations in the same order)
    for (int p = 0; p < post; ++p)
      for (int r = 0; r < n_out; ++r) {
        Number acc = add ? out[r + n_out * p] : Number(0);
        for (int c = 0; c < n_in; ++c)
          acc += static_cast<Number>(transpose ? S[c * n + r] : S[r * n + c]) * in[c + n_in * p];
        out[r + n_out * p] = acc;
      }
    return;
  }
  for (int p = 0; p < post; ++p)
    for (int r = 0; r < n_out; ++r) {
      Number* o = out + pre * (r + n_out * p);
      if constexpr (!add)
        for (int a = 0; a < pre; ++a) o[a] = Number(0);
      for (int c = 0; c < n_in; ++c) {
        const Number s = static_cast<Number>(transpose ? S[c * n + r] : S[r * n + c]);
        const Number* i = in + pre * (c + n_in * p);
        for (int a = 0; a < pre; ++a) o[a] += s * i[a];
      }
    }
}

/// Sizes array with the first `dim` entries n and the rest 1.
template <int dim>
inline std::array<int, 3> cube_sizes(int n) {
  std::array<int, 3> s{1, 1, 1};
  for (int d = 0; d < dim; ++d) s[d] = n;
  return s;
}

}  // namespace tcfem::tensor
