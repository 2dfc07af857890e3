// Timing driver of the vertex-patch smoother kernels (a measurement tool, not a test): for each
// (precision, degree) it builds DevicePatchSmoother on a Cartesian box of about --dofs DoFs, runs
// --warmup smoothing steps, then times --reps steps one by one with CUDA events (one step: the
// 2^dim color launches and the Dirichlet copy) and prints the median with the work model of
// multigrid/patch_kernels/layouts.h: FLOP per DoF and TFLOP/s with the fraction of the FP64 (or FP32) FMA
// peak, shared-memory bytes per DoF and TB/s with the fraction of the shared-memory bandwidth,
// and the global bytes (without cache reuse) per DoF and GB/s.
//
// The contractions of --contraction (a list: dense, even-odd, tensor-core; default dense, even-odd) are timed one after the
// other on the same problem (the tuning's patch_smoother.contraction set for each smoother); FLOP/DoF and TFLOP/s
// are those of the dense work model (equal work for all contractions), "performed" the FLOP the
// kernels execute and their fraction of the FMA peak.
//
//   patch_smoother_timing [--dim 3] [--prec fp64,fp32] [--degrees 3-7] [--dofs 1e8]
//                         [--variant fused|separate] [--contraction dense,even-odd,tensor-core] [--carveout 100]
//                         [--reps 10] [--warmup 2]
// --carveout: a list of shared-memory carveouts (the tuning's patch_smoother.carveout: percent, -1 the driver's
// choice), each timed. Each line ends with the registers, block size, shared memory and resident
// blocks per SM of the kernel.
//                         [--fp64-peak 31.6] [--fp32-peak 66.9] [--smem-peak 32.7]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "multigrid/device/patch_smoother.h"

#include "timing_tool.h"

namespace {
using namespace tcfem;

using timing_tool::degrees;
using timing_tool::median;
using timing_tool::split;

struct Peaks {
  double fp64 = 31.6, fp32 = 66.9, smem = 32.7;  // TFLOP/s, TFLOP/s, TB/s
};

template <int dim, typename Number>
void run(int k, double target, multigrid::PatchVariant variant, const std::string& contraction,
         const std::string& carveout, int reps, int warmup, const Peaks& peaks) {
  const int n = std::max(2, int(std::lround((std::pow(target, 1.0 / dim) - 1.0) / k)));
  std::array<int, dim> nc;
  nc.fill(n);
  mesh::BoxMesh<dim> mesh(nc, mesh::GeometryKind::cartesian);
  fe::DofLayout<dim> dofs(mesh, fe::Disc::cg, k);
  multigrid::SmootherSettings settings;
  settings.kind = multigrid::SmootherKind::patch;
  settings.patch_variant = variant;
  settings.kernels.contraction = contraction == "dense"         ? multigrid::PatchContraction::dense
                                 : contraction == "tensor-core" ? multigrid::PatchContraction::tensor_core
                                                                : multigrid::PatchContraction::even_odd;
  settings.kernels.carveout = std::stoi(carveout);
  multigrid::DevicePatchSmoother<dim, Number> smoother(mesh, dofs, fe::gauss(k + 1), settings, nullptr);
  if (smoother.contraction() != contraction)
    throw Error("patch smoother timing: contraction " + contraction + " not used: " + smoother.description());
  const std::size_t N = dofs.n_local();
  DeviceBuffer<Number> x, b;
  {
    std::mt19937_64 rng(12345);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<Number> h(N);
    for (auto& v : h) v = static_cast<Number>(dist(rng));
    x = DeviceBuffer<Number>(h);
    for (auto& v : h) v = static_cast<Number>(dist(rng));
    b = DeviceBuffer<Number>(h);
  }
  cudaEvent_t e0, e1;
  TCFEM_CUDA_CHECK(cudaEventCreate(&e0));
  TCFEM_CUDA_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < warmup; ++i) smoother.smooth(x.data(), b.data(), multigrid::SweepOrder::forward);
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> t(reps);
  for (int r = 0; r < reps; ++r) {
    TCFEM_CUDA_CHECK(cudaEventRecord(e0));
    smoother.smooth(x.data(), b.data(), multigrid::SweepOrder::forward);
    TCFEM_CUDA_CHECK(cudaEventRecord(e1));
    TCFEM_CUDA_CHECK(cudaEventSynchronize(e1));
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&t[r], e0, e1));
  }
  TCFEM_CUDA_CHECK(cudaGetLastError());
  // the iterate must stay finite (random x and b, exact local solves)
  {
    std::vector<Number> h(std::min<std::size_t>(N, 1 << 20));
    TCFEM_CUDA_CHECK(cudaMemcpy(h.data(), x.data(), h.size() * sizeof(Number), cudaMemcpyDeviceToHost));
    for (const auto v : h)
      if (!std::isfinite(double(v))) throw Error("patch smoother timing: non-finite iterate");
  }
  const double sec = median(t) * 1e-3, nd = double(dofs.n_dofs());
  const double flops = smoother.flops_per_step(), smem = smoother.shared_bytes_per_step(),
               glob = smoother.global_bytes_per_step();
  const double tflops = flops / sec * 1e-12, tbs = smem / sec * 1e-12;
  const double peak = sizeof(Number) == 8 ? peaks.fp64 : peaks.fp32;
  const double performed = smoother.flops_performed_per_step() / sec * 1e-12;
  std::printf("patch %s %-8s %dD %s k=%d cells=%d dofs=%.3e  %8.3f ms (min %.3f max %.3f)  %6.2f GDoF/s  flop/dof %6.0f  "
              "%6.2f TFLOP/s (%4.1f%% of %s FMA peak; performed %5.2f = %4.1f%%)  smem %6.0f B/dof %5.2f TB/s (%4.1f%%)  "
              "global %5.1f B/dof %6.0f GB/s  carveout %s  %s\n",
              multigrid::to_string(variant), contraction.c_str(), dim, sizeof(Number) == 8 ? "fp64" : "fp32", k, n, nd,
              sec * 1e3, *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()), nd / sec * 1e-9,
              flops / nd, tflops, 100.0 * tflops / peak, sizeof(Number) == 8 ? "FP64" : "FP32", performed,
              100.0 * performed / peak, smem / nd, tbs, 100.0 * tbs / peaks.smem, glob / nd, glob / sec * 1e-9,
              carveout.c_str(), smoother.kernel_info().c_str());
  std::fflush(stdout);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

}  // namespace

int main(int argc, char** argv) {
  int dim = 3, reps = 10, warmup = 2;
  std::string precs = "fp64,fp32", degs = "3-7", variant = "fused", contractions = "dense,even-odd", carveouts = "100";
  double target = 1e8;
  Peaks peaks;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--dim") dim = std::atoi(v.c_str());
    else if (a == "--prec") precs = v;
    else if (a == "--degrees") degs = v;
    else if (a == "--dofs") target = std::atof(v.c_str());
    else if (a == "--reps") reps = std::max(1, std::atoi(v.c_str()));
    else if (a == "--warmup") warmup = std::atoi(v.c_str());
    else if (a == "--variant") variant = v;
    else if (a == "--contraction") contractions = v;
    else if (a == "--carveout") carveouts = v;
    else if (a == "--fp64-peak") peaks.fp64 = std::atof(v.c_str());
    else if (a == "--fp32-peak") peaks.fp32 = std::atof(v.c_str());
    else if (a == "--smem-peak") peaks.smem = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  for (const auto& c : split(contractions))
    if (c != "dense" && c != "even-odd" && c != "tensor-core") {
      std::fprintf(stderr, "--contraction: a list of dense, even-odd, tensor-core\n");
      return 2;
    }
  const auto var = multigrid::parse_patch_variant(variant);
  if (!var || *var == multigrid::PatchVariant::global || (dim != 2 && dim != 3)) {
    std::fprintf(stderr, "--variant: fused or separate; --dim: 2 or 3\n");
    return 2;
  }
  try {
    const auto info = query_device(0);
    if (!info.available) {
      std::fprintf(stderr, "no CUDA device: %s\n", info.reason.c_str());
      return 1;
    }
    std::printf("device %s, %d SMs, %.2f GHz\n", info.name.c_str(), info.sm_count, info.clock_ghz);
    for (const auto& p : split(precs))
      for (int k : degrees(degs)) {
        try {
          if (p != "fp64" && p != "fp32") throw InputError("--prec: fp64 or fp32");
          for (const auto& c : split(contractions))
            for (const auto& cv : split(carveouts)) {
              if (dim == 3)
                p == "fp64" ? run<3, double>(k, target, *var, c, cv, reps, warmup, peaks)
                            : run<3, float>(k, target, *var, c, cv, reps, warmup, peaks);
              else
                p == "fp64" ? run<2, double>(k, target, *var, c, cv, reps, warmup, peaks)
                            : run<2, float>(k, target, *var, c, cv, reps, warmup, peaks);
            }
        } catch (const InputError& e) {
          std::printf("patch %dD %s k=%d: %s\n", dim, p.c_str(), k, e.what());
        }
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
