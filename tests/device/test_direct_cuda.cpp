// The CUDA solve phase of the direct solver (cuBLAS GEMM, CSR kernels) against the CPU solve phase:
// FP64 to round-off, FP32 and FP16 within their tolerances, one and many right-hand sides, and
// every mesh kind (one class of cells and three; padded leading dimensions).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/device.h"
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
      for (auto p : {Precision::fp64, Precision::fp32, Precision::tf32, Precision::fp16}) {
        auto gpu = make_cuda_solve_phase(s.system(), p);
        gpu->load(bh);
        const double seconds = gpu->run();
        EXPECT_GT(seconds, 0.0);
        const auto x = s.recover(gpu->result());
        const double tol = p == Precision::fp64 ? 1e-12 : p == Precision::fp32 ? 1e-5 : 1e-2;  // tf32, fp16: 1e-2
        EXPECT_LE(relative_difference(x, reference), tol)
            << to_string(c.kind) << " L=" << c.level << " L0=" << c.coarse_level << " nrhs=" << nrhs << " "
            << to_string(p) << " (" << gpu->description() << ")";
      }
    }
  }
}

}  // namespace
