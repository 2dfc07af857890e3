// The CUDA solve phase of the direct solver (cuBLAS GEMM, CSR kernels) against the CPU solve phase:
// FP64 to round-off, FP32 and FP16 within their tolerances, one and many right-hand sides, and
// every mesh kind (one class of cells and three; padded leading dimensions).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "direct/cuda_dense.h"
#include "direct/dense.h"
#include "direct/direct_solver.h"
#include "direct/solve_phase.h"

namespace {
using namespace tcfem;
using namespace tcfem::direct;

double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0.0, n = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return std::sqrt(d / n);
}

TEST(DeviceDirect, CudaSolvePhaseMatchesTheCpuSolvePhase) {
  const auto info = query_device(0);
  if (!info.available) GTEST_SKIP() << "no CUDA device: skipping (" << info.reason << ")";
  SetupOptions off;
  off.condition = ConditionMethod::off;
  struct Case {
    MeshKind kind;
    int level, coarse_level;
  };
  for (const auto& c : {Case{MeshKind::flow_square, 5, 1}, Case{MeshKind::square_q1, 5, 2},
                        Case{MeshKind::square_p1, 4, 1}, Case{MeshKind::flow_square, 3, 3}}) {
    const DirectSolver s(c.kind, c.level, c.coarse_level, off);
    for (const std::int64_t nrhs : {std::int64_t(1), std::int64_t(7)}) {
      std::mt19937 rng(11);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<double> b(static_cast<std::size_t>(s.n_dofs() * nrhs));
      for (auto& v : b) v = u(rng);
      const auto bh = s.prehandle(b, nrhs);
      auto cpu = make_cpu_solve_phase(s.system(), Precision::fp64);
      cpu->load(bh);
      cpu->run();
      const auto reference = s.recover(cpu->result());
      for (auto p : {Precision::fp64, Precision::fp32, Precision::tf32, Precision::tf32x3, Precision::fp16}) {
        auto gpu = make_cuda_solve_phase(s.system(), p);
        gpu->load(bh);
        const double seconds = gpu->run();
        EXPECT_GT(seconds, 0.0);
        const auto x = s.recover(gpu->result());
        // fp32 and 3xTF32: 1e-5; tf32, fp16: 1e-2
        const double tol = p == Precision::fp64                               ? 1e-12
                           : p == Precision::fp32 || p == Precision::tf32x3 ? 1e-5
                                                                             : 1e-2;
        EXPECT_LE(relative_difference(x, reference), tol)
            << to_string(c.kind) << " L=" << c.level << " L0=" << c.coarse_level << " nrhs=" << nrhs << " "
            << to_string(p) << " (" << gpu->description() << ")";
      }
    }
  }
}

}  // namespace

// The setup's device inversion (cuSOLVER) against LAPACK on random SPD matrices, odd sizes and a
// leading dimension larger than n; the upper triangle of the input is poisoned (only the lower is
// read); a matrix that is not positive definite is refused.
TEST(DeviceDirect, CudaSpdInverseMatchesLapack) {
  const auto info = query_device(0);
  if (!info.available) GTEST_SKIP() << "no CUDA device: skipping (" << info.reason << ")";
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const std::int64_t n : {std::int64_t(1), std::int64_t(37), std::int64_t(500)}) {
    const std::int64_t lda = n + 3;
    std::vector<double> g(static_cast<std::size_t>(n * n));
    for (auto& v : g) v = u(rng);
    std::vector<double> a(static_cast<std::size_t>(lda * n), 0.0);
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        double s = i == j ? double(n) : 0.0;
        for (std::int64_t k = 0; k < n; ++k) s += g[i + k * n] * g[j + k * n];
        a[i + j * lda] = s;
      }
    std::vector<double> ref = a;
    cholesky_factor(n, ref.data(), lda, "A");
    cholesky_inverse(n, ref.data(), lda, "A");
    std::vector<double> dev = a;
    for (std::int64_t j = 1; j < n; ++j)
      for (std::int64_t i = 0; i < j; ++i) dev[i + j * lda] = std::nan("");
    cuda_spd_inverse(n, dev.data(), lda, "A");
    double d = 0.0, norm = 0.0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        d = std::max(d, std::abs(dev[i + j * lda] - ref[i + j * lda]));
        norm = std::max(norm, std::abs(ref[i + j * lda]));
      }
    EXPECT_LE(d, 1e-12 * norm) << "n = " << n;
    std::printf("  cuda_spd_inverse n = %lld: max difference to LAPACK %.2e (relative)\n", static_cast<long long>(n),
                d / norm);
  }
  std::vector<double> indefinite = {1.0, 2.0, 2.0, 1.0};  // eigenvalues 3 and -1
  EXPECT_THROW(cuda_spd_inverse(2, indefinite.data(), 2, "an indefinite matrix"), Error);
}
