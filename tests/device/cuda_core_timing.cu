// Timing driver for the cuda-core kernels (a measurement tool, not a test): for each
// (disc, precision, degree) it builds the operator through the registry on a Cartesian box of
// about --dofs DoFs (all lattice nodes for cg, (n (k+1))^dim for dg), applies it --warmup times,
// then times --reps applies one by one with CUDA events and prints the median as GDoF/s with the
// work models (FLOP/DoF, DRAM and shared bytes/DoF) and the time of a memset of the output.
//
//   cuda_core_timing [--dim 3] [--disc cg,dg] [--prec fp64,fp32] [--degrees 1-8] [--dofs 3e7]
//                    [--reps 20] [--warmup 3] [--variant cuda-core]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "operators/device/device_operator.h"

#include "timing_tool.h"

namespace {
using namespace tcfem;

using timing_tool::degrees;
using timing_tool::median;
using timing_tool::split;

template <int dim>
void run(fe::Disc disc, precision::Precision prec, int k, double target, int reps, int warmup,
         operators::Variant variant) {
  const int per_cell = disc == fe::Disc::cg ? k : k + 1;
  const int n = std::max(1, int(std::ceil((std::pow(target, 1.0 / dim) - (disc == fe::Disc::cg ? 1 : 0)) / per_cell)));
  std::array<int, dim> nc;
  nc.fill(n);
  mesh::BoxMesh<dim> mesh(nc, mesh::GeometryKind::cartesian);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::DeviceKernelKey key;
  key.dim = dim;
  key.degree = k;
  key.disc = disc;
  key.precision = prec;
  key.variant = variant;
  const auto op = operators::make_device_operator<dim>(mesh, dofs, key);
  const std::size_t N = op->n_local(), vs = op->value_size();
  DeviceBuffer<unsigned char> x(N * vs), y(N * vs);
  {
    std::mt19937_64 rng(12345);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<unsigned char> host(N * vs);
    for (std::size_t i = 0; i < N; ++i) {
      const double v = dist(rng);
      if (vs == 8)
        std::memcpy(&host[i * 8], &v, 8);
      else {
        const float f = float(v);
        std::memcpy(&host[i * 4], &f, 4);
      }
    }
    x.copy_from_host(host.data(), host.size());
  }
  cudaEvent_t e0, e1;
  TCFEM_CUDA_CHECK(cudaEventCreate(&e0));
  TCFEM_CUDA_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < warmup; ++i) op->vmult(y.data(), x.data());
  TCFEM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> t(reps), tm(reps);
  for (int r = 0; r < reps; ++r) {
    TCFEM_CUDA_CHECK(cudaEventRecord(e0));
    op->vmult(y.data(), x.data());
    TCFEM_CUDA_CHECK(cudaEventRecord(e1));
    TCFEM_CUDA_CHECK(cudaEventSynchronize(e1));
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&t[r], e0, e1));
  }
  for (int r = 0; r < reps; ++r) {
    TCFEM_CUDA_CHECK(cudaEventRecord(e0));
    TCFEM_CUDA_CHECK(cudaMemsetAsync(y.data(), 0, N * vs));
    TCFEM_CUDA_CHECK(cudaEventRecord(e1));
    TCFEM_CUDA_CHECK(cudaEventSynchronize(e1));
    TCFEM_CUDA_CHECK(cudaEventElapsedTime(&tm[r], e0, e1));
  }
  TCFEM_CUDA_CHECK(cudaGetLastError());
  const double sec = median(t) * 1e-3, msec = median(tm) * 1e-3;
  const double nd = double(dofs.n_dofs());
  std::printf("%dD %s %s k=%d n=%d dofs=%.3e  %8.3f ms  %7.2f GDoF/s  (min %.3f max %.3f ms)  flop/dof %6.1f  %6.2f TFLOP/s  "
              "dram %5.1f B/dof %6.0f GB/s  smem %6.1f B/dof %5.1f TB/s  memset %.3f ms\n",
              dim, fe::to_string(disc), std::string(precision::to_string(prec)).c_str(), k, n, nd, sec * 1e3,
              nd / sec * 1e-9, *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()),
              op->flops_per_apply() / nd, op->flops_per_apply() / sec * 1e-12, op->dram_bytes_per_apply() / nd,
              op->dram_bytes_per_apply() / sec * 1e-9, op->shared_bytes_per_apply() / nd,
              op->shared_bytes_per_apply() / sec * 1e-12, msec * 1e3);
  std::fflush(stdout);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

}  // namespace

int main(int argc, char** argv) {
  int dim = 3, reps = 20, warmup = 3;
  std::string discs = "cg", precs = "fp64,fp32", degs = "1-8", variant = "cuda-core";
  double target = 3e7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--dim") dim = std::atoi(v.c_str());
    else if (a == "--disc") discs = v;
    else if (a == "--prec") precs = v;
    else if (a == "--degrees") degs = v;
    else if (a == "--dofs") target = std::atof(v.c_str());
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else if (a == "--warmup") warmup = std::atoi(v.c_str());
    else if (a == "--variant") variant = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    const auto info = query_device(0);
    if (!info.available) {
      std::fprintf(stderr, "no CUDA device: %s\n", info.reason.c_str());
      return 1;
    }
    std::printf("device %s, %d SMs, %.2f GHz\n", info.name.c_str(), info.sm_count, info.clock_ghz);
    for (const auto& d : split(discs))
      for (const auto& p : split(precs))
        for (int k : degrees(degs)) {
          const auto disc = d == "dg" ? fe::Disc::dg : fe::Disc::cg;
          const auto prec = precision::from_string(p);
          const auto var = operators::variant_from_string(variant);
          try {
            if (dim == 3)
              run<3>(disc, prec, k, target, reps, warmup, var);
            else
              run<2>(disc, prec, k, target, reps, warmup, var);
          } catch (const InputError& e) {
            std::printf("%dD %s %s k=%d: %s\n", dim, d.c_str(), p.c_str(), k, e.what());
          }
        }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
