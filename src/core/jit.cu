#include "core/jit.h"

#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "core/jit_cache.h"

namespace tcfem::jit {

namespace {
void nvrtc_check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("NVRTC error in ") + what + ": " + nvrtcGetErrorString(r));
}

/// The module source: per function a device function and its value and gradient kernels.
std::string module_source(const std::vector<std::pair<std::string, int>>& functions, const std::string& prelude) {
  std::string s =
      "__device__ inline bool tcfem_finite(double v) { return v - v == 0.0; }\n"
      "__device__ inline double tcfem_step(double v) { return 1e-3 * fmax(1.0, fabs(v)); }\n" +
      prelude + "\n";
  for (std::size_t i = 0; i < functions.size(); ++i) {
    const std::string id = std::to_string(i), dim = std::to_string(functions[i].second);
    s += "__device__ inline double tcfem_f" + id + "(const double* x) { return " + functions[i].first + "; }\n";
    s += "extern \"C\" __global__ void tcfem_value_" + id +
         "(const double* __restrict__ p, long long stride, long long n, double* __restrict__ out, "
         "unsigned long long* bad) {\n"
         "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * "
         "blockDim.x) {\n"
         "    double x[3] = {0.0, 0.0, 0.0};\n"
         "    for (int d = 0; d < " + dim + "; ++d) x[d] = p[d * stride + i];\n"
         "    const double v = tcfem_f" + id + "(x);\n"
         "    out[i] = v;\n"
         "    if (!tcfem_finite(v)) atomicMin(bad, (unsigned long long)i);\n"
         "  }\n"
         "}\n";
    // the tensor-product points of Cartesian cells, computed in place of read
    s += "extern \"C\" __global__ void tcfem_tensor_" + id +
         "(const double* __restrict__ pts, int nq, long long n0, long long n1, double o0, double o1, double o2, "
         "double h0, double h1, double h2, long long first, long long n, double* __restrict__ out, "
         "unsigned long long* bad) {\n"
         "  const int dim = " + dim + ";\n"
         "  long long nqc = 1;\n"
         "  for (int d = 0; d < dim; ++d) nqc *= nq;\n"
         "  const double o[3] = {o0, o1, o2}, h[3] = {h0, h1, h2};\n"
         "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * "
         "blockDim.x) {\n"
         "    long long cell = first + i / nqc;\n"
         "    int r = (int)(i % nqc);\n"
         "    const long long c[3] = {cell % n0, (cell / n0) % n1, cell / (n0 * n1)};\n"
         "    double x[3] = {0.0, 0.0, 0.0};\n"
         "    for (int d = 0; d < dim; ++d, r /= nq) x[d] = o[d] + ((double)c[d] + pts[r % nq]) * h[d];\n"
         "    const double v = tcfem_f" + id + "(x);\n"
         "    out[i] = v;\n"
         "    if (!tcfem_finite(v)) atomicMin(bad, (unsigned long long)i);\n"
         "  }\n"
         "}\n";
    s += "extern \"C\" __global__ void tcfem_gradient_" + id +
         "(const double* __restrict__ p, long long stride, long long n, double* __restrict__ out, "
         "unsigned long long* bad) {\n"
         "  const double offsets[4] = {-2.0, -1.0, 1.0, 2.0};\n"
         "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * "
         "blockDim.x) {\n"
         "    double x[3] = {0.0, 0.0, 0.0};\n"
         "    for (int d = 0; d < " + dim + "; ++d) x[d] = p[d * stride + i];\n"
         "    for (int d = 0; d < " + dim + "; ++d) {\n"
         "      double y[3] = {x[0], x[1], x[2]};\n"
         "      const double h = tcfem_step(x[d]);\n"
         "      double f[4];\n"
         "      for (int j = 0; j < 4; ++j) {\n"
         "        y[d] = x[d] + offsets[j] * h;\n"
         "        f[j] = tcfem_f" + id + "(y);\n"
         "      }\n"
         "      const double g = (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);\n"
         "      out[d * stride + i] = g;\n"
         "      if (!tcfem_finite(g)) atomicMin(bad, (unsigned long long)i);\n"
         "    }\n"
         "  }\n"
         "}\n";
  }
  return s;
}

/// NVRTC's cubin of `source`; Error with the compiler's log when it rejects it.
std::string nvrtc_compile(const std::string& source, const char* const* options, int n_options) {
  nvrtcProgram program;
  nvrtc_check(nvrtcCreateProgram(&program, source.c_str(), "tcfem_expressions.cu", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  const nvrtcResult compiled = nvrtcCompileProgram(program, n_options, options);
  if (compiled != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    if (log_size) nvrtcGetProgramLog(program, log.data());
    nvrtcDestroyProgram(&program);
    throw Error(std::string("NVRTC could not compile the device expressions (") + nvrtcGetErrorString(compiled) +
                "):\n" + log);
  }
  std::size_t cubin_size = 0;
  std::string cubin;
  try {
    nvrtc_check(nvrtcGetCUBINSize(program, &cubin_size), "nvrtcGetCUBINSize");
    cubin.resize(cubin_size);
    nvrtc_check(nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN");
  } catch (...) {
    nvrtcDestroyProgram(&program);
    throw;
  }
  nvrtcDestroyProgram(&program);
  return cubin;
}
}  // namespace

struct PointFunctions::Module {
  cudaLibrary_t library = nullptr;
  std::vector<cudaKernel_t> value, gradient, tensor;
  DeviceBuffer<unsigned long long> bad{1};
  int grid_limit = 1;
  ~Module() {
    if (library) cudaLibraryUnload(library);  // no throw from a destructor
  }
};

PointFunctions::PointFunctions() = default;
PointFunctions::~PointFunctions() = default;

int PointFunctions::add(const std::string& expression, int dim) {
  if (module_) throw Error("jit::PointFunctions::add after compile()");
  if (dim < 1 || dim > 3) throw Error("jit::PointFunctions::add: functions have 1 to 3 coordinates");
  functions_.push_back({expression, dim});
  return size() - 1;
}

namespace {
/// Modules compiled in this process, by source (every level of a multigrid hierarchy and every
/// operator compiles the same functions: NVRTC runs once). Kept until the process ends, when the
/// driver releases them with the context.
struct ModuleCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<PointFunctions::Module>> modules;
};
ModuleCache& module_cache() {
  static auto* cache = new ModuleCache;  // never destroyed: no unload after the runtime shuts down
  return *cache;
}
}  // namespace

void PointFunctions::compile(const std::string& prelude) {
  if (module_) throw Error("jit::PointFunctions::compile called twice");
  const auto t0 = std::chrono::steady_clock::now();
  const DeviceInfo info = require_device("--backend cuda");
  std::vector<std::pair<std::string, int>> list;
  for (const auto& f : functions_) list.push_back({f.expression, f.dim});
  const std::string source = module_source(list, prelude);
  auto& cache = module_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  int device = 0;
  TCFEM_CUDA_CHECK(cudaGetDevice(&device));
  const std::string key = std::to_string(device) + "\n" + source;
  if (const auto it = cache.modules.find(key); it != cache.modules.end()) {
    module_ = it->second;
    cached_ = true;
    compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return;
  }
  int nvrtc_major = 0, nvrtc_minor = 0;
  nvrtc_check(nvrtcVersion(&nvrtc_major, &nvrtc_minor), "nvrtcVersion");
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor);
  // no fused multiply-adds: the operations round as the host's evaluation does
  const char* options[] = {arch.c_str(), "--fmad=false", "--std=c++17"};
  // the disk cache's key: everything that shapes the cubin
  std::string disk_key = "nvrtc " + std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor);
  for (const char* o : options) disk_key += std::string(" ") + o;
  disk_key += "\n" + source;
  const CubinCache disk = CubinCache::user();
  auto m = std::make_shared<Module>();
  bool loaded = false;
  if (auto stored = disk.load(disk_key)) {
    // a stored cubin the driver rejects (say, written by another driver) is compiled afresh
    loaded = cudaLibraryLoadData(&m->library, stored->data(), nullptr, nullptr, 0, nullptr, nullptr, 0) == cudaSuccess;
    if (!loaded) (void)cudaGetLastError();
    cached_ = loaded;
  }
  if (!loaded) {
    const std::string cubin = nvrtc_compile(source, options, 3);
    TCFEM_CUDA_CHECK(cudaLibraryLoadData(&m->library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    disk.store(disk_key, cubin);
  }
  for (int i = 0; i < size(); ++i) {
    cudaKernel_t k;
    TCFEM_CUDA_CHECK(cudaLibraryGetKernel(&k, m->library, ("tcfem_value_" + std::to_string(i)).c_str()));
    m->value.push_back(k);
    TCFEM_CUDA_CHECK(cudaLibraryGetKernel(&k, m->library, ("tcfem_gradient_" + std::to_string(i)).c_str()));
    m->gradient.push_back(k);
    TCFEM_CUDA_CHECK(cudaLibraryGetKernel(&k, m->library, ("tcfem_tensor_" + std::to_string(i)).c_str()));
    m->tensor.push_back(k);
  }
  m->grid_limit = std::max(1, info.sm_count * 16);
  cache.modules.emplace(key, m);
  module_ = std::move(m);
  compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void PointFunctions::launch(bool gradient, int f, const double* points, std::size_t stride, std::size_t n,
                            double* out, unsigned long long* bad) const {
  if (!module_) throw Error("jit::PointFunctions: evaluate before compile()");
  if (f < 0 || f >= size()) throw Error("jit::PointFunctions: no function " + std::to_string(f));
  if (n == 0) return;
  const cudaKernel_t k = gradient ? module_->gradient[f] : module_->value[f];
  long long s = static_cast<long long>(stride), count = static_cast<long long>(n);
  void* args[] = {&points, &s, &count, &out, &bad};
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + threads - 1) / threads, module_->grid_limit));
  TCFEM_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(blocks), dim3(threads), args, 0, nullptr));
  TCFEM_CUDA_CHECK_LAUNCH();
}

template <class Launch>
std::int64_t PointFunctions::checked(Launch&& launch) const {
  if (!module_) throw Error("jit::PointFunctions: evaluate before compile()");
  const unsigned long long none = std::numeric_limits<unsigned long long>::max();
  module_->bad.copy_from_host(&none, 1);
  launch(module_->bad.data());
  unsigned long long first = none;
  module_->bad.copy_to_host(&first, 1);
  return first == none ? -1 : static_cast<std::int64_t>(first);
}

void PointFunctions::evaluate_tensor_async(int f, const TensorPoints& t, std::int64_t first_cell, std::size_t n,
                                           double* out, unsigned long long* bad) const {
  if (!module_) throw Error("jit::PointFunctions: evaluate before compile()");
  if (f < 0 || f >= size()) throw Error("jit::PointFunctions: no function " + std::to_string(f));
  if (n == 0) return;
  const double* pts = t.points;
  int nq = t.nq;
  long long n0 = t.n_cells[0], n1 = t.n_cells[1], first = first_cell, count = static_cast<long long>(n);
  double o0 = t.origin[0], o1 = t.origin[1], o2 = t.origin[2], h0 = t.h[0], h1 = t.h[1], h2 = t.h[2];
  void* args[] = {&pts, &nq, &n0, &n1, &o0, &o1, &o2, &h0, &h1, &h2, &first, &count, &out, &bad};
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + threads - 1) / threads, module_->grid_limit));
  TCFEM_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(module_->tensor[f]), dim3(blocks), dim3(threads),
                                    args, 0, nullptr));
  TCFEM_CUDA_CHECK_LAUNCH();
}

std::int64_t PointFunctions::evaluate_tensor(int f, const TensorPoints& t, std::int64_t first_cell, std::size_t n,
                                            double* out) const {
  if (n == 0) return -1;
  return checked([&](unsigned long long* bad) { evaluate_tensor_async(f, t, first_cell, n, out, bad); });
}

std::int64_t PointFunctions::evaluate(int f, const double* p, std::size_t stride, std::size_t n, double* out) const {
  if (n == 0) return -1;
  return checked([&](unsigned long long* bad) { launch(false, f, p, stride, n, out, bad); });
}

std::int64_t PointFunctions::gradient(int f, const double* p, std::size_t stride, std::size_t n, double* out) const {
  if (n == 0) return -1;
  return checked([&](unsigned long long* bad) { launch(true, f, p, stride, n, out, bad); });
}

void PointFunctions::evaluate_async(int f, const double* p, std::size_t stride, std::size_t n, double* out,
                                    unsigned long long* bad) const {
  launch(false, f, p, stride, n, out, bad);
}

void PointFunctions::gradient_async(int f, const double* p, std::size_t stride, std::size_t n, double* out,
                                    unsigned long long* bad) const {
  launch(true, f, p, stride, n, out, bad);
}

}  // namespace tcfem::jit
