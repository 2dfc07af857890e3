#pragma once
// The small least-squares problem of (F)GMRES, min || beta e_1 - H_j y || with H_j the (j+1) x j
// upper Hessenberg matrix of the Arnoldi process, kept in QR form by Givens rotations (Saad,
// Iterative Methods for Sparse Linear Systems, 2nd ed., Section 6.5.3). Host code shared by the CPU
// and device FGMRES: the Arnoldi vectors live wherever the solver keeps them, only the m x m
// matrix and the rotations live here.
#include <algorithm>
#include <cmath>
#include <vector>

namespace tcfem::solvers {

class ArnoldiLeastSquares {
 public:
  explicit ArnoldiLeastSquares(int m) : m_(m), H_(std::size_t(m + 1) * m), g_(m + 1), cs_(m), sn_(m) {}

  /// Starts a cycle from the residual norm beta: g = beta e_1.
  void start(double beta) {
    std::fill(g_.begin(), g_.end(), 0.0);
    g_[0] = beta;
  }

  /// Column j of H (j + 2 entries: h_0j .. h_{j+1,j}) for the Arnoldi step to fill in.
  double* column(int j) { return H_.data() + std::size_t(j) * (m_ + 1); }

  /// Applies the previous rotations to column j, forms the new one, and returns the residual
  /// estimate |g_{j+1}| of the least-squares problem with j + 1 columns.
  double add_column(int j) {
    double* h = column(j);
    for (int i = 0; i < j; ++i) {
      const double t = cs_[i] * h[i] + sn_[i] * h[i + 1];
      h[i + 1] = -sn_[i] * h[i] + cs_[i] * h[i + 1];
      h[i] = t;
    }
    const double d = std::hypot(h[j], h[j + 1]);
    cs_[j] = d > 0 ? h[j] / d : 1.0;
    sn_[j] = d > 0 ? h[j + 1] / d : 0.0;
    h[j] = d;
    h[j + 1] = 0.0;
    g_[j + 1] = -sn_[j] * g_[j];
    g_[j] = cs_[j] * g_[j];
    return std::abs(g_[j + 1]);
  }

  /// y (n_columns entries) = R^{-1} g by back substitution over the first n_columns columns.
  void solve(int n_columns, double* y) const {
    for (int i = n_columns - 1; i >= 0; --i) {
      double v = g_[i];
      for (int l = i + 1; l < n_columns; ++l) v -= H_[std::size_t(l) * (m_ + 1) + i] * y[l];
      y[i] = v / H_[std::size_t(i) * (m_ + 1) + i];
    }
  }

 private:
  int m_;
  std::vector<double> H_;  ///< column-major (m + 1) x m
  std::vector<double> g_, cs_, sn_;
};

}  // namespace tcfem::solvers
