// Device tests of the mma atoms, their CUDA-core twins and the precision policies: one warp multiplies
// fresh random A and B (plus C) into a NaN-poisoned output, compared with a naive host GEMM in long
// double. Also: the device roundings (cvt) and splits agree bit for bit with the host emulation.
// Without a CUDA device every test is skipped with a message; sm_90-only atoms are skipped below sm_90.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "arch/mma_atoms.cuh"
#include "arch/number_formats.h"
#include "precision/policies.cuh"
#include "precision/split_arithmetic.h"

namespace {

using namespace tcfem;

#define TCFEM_ASSERT_CUDA(call)                                                                \
  do {                                                                                         \
    const cudaError_t tcfem_status = (call);                                                   \
    ASSERT_EQ(tcfem_status, cudaSuccess) << #call << ": " << cudaGetErrorString(tcfem_status); \
  } while (0)

// Launch errors (cudaGetLastError) and execution errors (synchronize).
#define TCFEM_ASSERT_LAUNCH()                   \
  do {                                          \
    TCFEM_ASSERT_CUDA(cudaGetLastError());      \
    TCFEM_ASSERT_CUDA(cudaDeviceSynchronize()); \
  } while (0)

// ---- device discovery ----------------------------------------------------------------------------
struct DeviceInfo {
  bool available = false;
  int sm = 0;  // 10 * major + minor
  std::string name;
  std::string skip_reason;
};

DeviceInfo query_device() {
  DeviceInfo info;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    info.skip_reason = "no CUDA device: skipping";
    if (status != cudaSuccess)
      info.skip_reason += std::string(" (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
    cudaGetLastError();  // clear the error state for later calls
    return info;
  }
  cudaDeviceProp properties{};
  const cudaError_t property_status = cudaGetDeviceProperties(&properties, 0);
  if (property_status != cudaSuccess) {
    info.skip_reason = std::string("no usable CUDA device: skipping (cudaGetDeviceProperties: ") +
                       cudaGetErrorString(property_status) + ")";
    return info;
  }
  info.available = true;
  info.sm = 10 * properties.major + properties.minor;
  info.name = properties.name;
  return info;
}

const DeviceInfo& device_info() {
  static const DeviceInfo info = query_device();
  return info;
}

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!device_info().available) GTEST_SKIP() << device_info().skip_reason;
  }
  /// Skips (returns true) when the device lacks the instruction of `min_sm`.
  static bool skip_below(int min_sm) { return device_info().sm < min_sm; }
};

std::uint64_t fresh_seed() { return std::random_device{}(); }

// ---- device memory -------------------------------------------------------------------------------
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) {
      const cudaError_t status = cudaFree(data_);
      if (status != cudaSuccess) ADD_FAILURE() << "cudaFree: " << cudaGetErrorString(status);
    }
  }
  cudaError_t upload(const std::vector<T>& host) {
    if (const cudaError_t status = allocate(host.size()); status != cudaSuccess) return status;
    return cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  cudaError_t download(std::vector<T>& host) const {
    host.resize(size_);
    return cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost);
  }
  cudaError_t allocate(std::size_t size) {
    size_ = size;
    return cudaMalloc(&data_, size * sizeof(T));
  }
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// ---- kernels -------------------------------------------------------------------------------------
/// D = A B + C with one atom, one warp. in_place: d aliases c (the usual accumulate form).
template <class Atom, bool in_place>
__global__ void atom_kernel(const typename Atom::ValueA* a, int lda, const typename Atom::ValueB* b, int ldb,
                            const typename Atom::ValueC* c, typename Atom::ValueC* d, int ldc) {
  const int lane = arch::lane_id();
  typename Atom::FragA fa;
  typename Atom::FragB fb;
  typename Atom::FragC fc;
  Atom::load_a(fa, a, lda, lane);
  Atom::load_b(fb, b, ldb, lane);
  Atom::load_c(fc, c, ldc, lane);
  if constexpr (in_place) {
    Atom::mma(fc, fa, fb, fc);
    Atom::store_c(fc, d, ldc, lane);
  } else {
    typename Atom::FragC fd;
    Atom::mma(fd, fa, fb, fc);
    Atom::store_c(fd, d, ldc, lane);
  }
}

/// D = A B (A: M x k_extent, B: k_extent x N) with a precision policy, one warp.
template <class Policy>
__global__ void policy_kernel(const typename Policy::Storage* a, int lda, const typename Policy::Storage* b,
                              int ldb, typename Policy::ValueC* d, int ldd, int k_extent) {
  const int lane = arch::lane_id();
  typename Policy::Accumulator acc;
  Policy::clear(acc);
  precision::warp_tile_gemm<Policy>(acc, a, lda, b, ldb, k_extent, lane);
  Policy::store(acc, d, ldd, lane);
}

__global__ void conversion_kernel(const float* x, int n, std::uint32_t* tf32, std::uint16_t* fp16,
                                  std::uint16_t* bf16) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    tf32[i] = arch::float_bits(arch::round_to_tf32(x[i]));
    fp16[i] = arch::float_to_fp16_bits(x[i]);
    bf16[i] = arch::float_to_bf16_bits(x[i]);
  }
}

__global__ void fp16_decode_kernel(float* x) {
  const int h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h <= 0xffff) x[h] = arch::fp16_bits_to_float(static_cast<std::uint16_t>(h));
}

template <precision::Precision p>
__global__ void split_kernel(const float* x, int n, float* hi, float* lo) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const precision::SplitValue s = precision::Arithmetic<p>::split(x[i]);
    hi[i] = s.hi;
    lo[i] = s.lo;
  }
}

// ---- host reference --------------------------------------------------------------------------------
/// ||got - reference||_2 / ||reference||_2 over an M x N matrix (leading dimension ld); NaN if any
/// entry of `got` is not finite (the NaN poisoning was not overwritten).
template <typename T>
double relative_error(const std::vector<T>& got, const std::vector<long double>& reference, int M, int N,
                      int ld) {
  long double error = 0, norm = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      const long double g = got[r * ld + c], e = reference[r * ld + c];
      if (!std::isfinite(static_cast<double>(g))) return std::numeric_limits<double>::quiet_NaN();
      error += (g - e) * (g - e);
      norm += e * e;
    }
  return static_cast<double>(std::sqrt(error / norm));
}

template <typename T>
std::vector<T> random_values(std::mt19937_64& rng, std::size_t n) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<T> values(n);
  for (auto& x : values) x = static_cast<T>(uniform(rng));
  return values;
}

// ---- atoms and twins -------------------------------------------------------------------------------
template <class Atom>
class AtomTest : public DeviceTest {};

using AllAtoms = ::testing::Types<arch::Sm80_M8N8K4_F64, arch::Sm90_M16N8K4_F64, arch::Sm90_M16N8K8_F64,
                                  arch::Sm90_M16N8K16_F64, arch::Sm80_M16N8K8_TF32, arch::Sm80_M16N8K16_F16,
                                  arch::Sm80_M16N8K16_BF16, arch::Simt_M8N8K4_F64, arch::Simt_M16N8K4_F64,
                                  arch::Simt_M16N8K8_F64, arch::Simt_M16N8K16_F64, arch::Simt_M16N8K8_TF32,
                                  arch::Simt_M16N8K16_F16, arch::Simt_M16N8K16_BF16, arch::Simt_M16N8K8_F32>;
struct AtomNames {
  template <class Atom>
  static std::string GetName(int index) {
    static const char* const names[] = {"Sm80_M8N8K4_F64",    "Sm90_M16N8K4_F64",   "Sm90_M16N8K8_F64",
                                        "Sm90_M16N8K16_F64",  "Sm80_M16N8K8_TF32",  "Sm80_M16N8K16_F16",
                                        "Sm80_M16N8K16_BF16", "Simt_M8N8K4_F64",    "Simt_M16N8K4_F64",
                                        "Simt_M16N8K8_F64",   "Simt_M16N8K16_F64",  "Simt_M16N8K8_TF32",
                                        "Simt_M16N8K16_F16",  "Simt_M16N8K16_BF16", "Simt_M16N8K8_F32"};
    return names[index];
  }
};
TYPED_TEST_SUITE(AtomTest, AllAtoms, AtomNames);

/// Runs one product and checks it; raises worst_rounded / worst_stored to the errors seen.
template <class Atom, bool in_place>
void run_atom_and_compare(std::mt19937_64& rng, double& worst_rounded, double& worst_stored) {
  using ValueA = typename Atom::ValueA;
  using ValueB = typename Atom::ValueB;
  using ValueC = typename Atom::ValueC;
  constexpr int M = Atom::M, N = Atom::N, K = Atom::K;
  const int lda = K + 1, ldb = N + 3, ldc = N + 2;  // padded: the leading dimensions matter
  const std::vector<ValueA> a = random_values<ValueA>(rng, M * lda);
  const std::vector<ValueB> b = random_values<ValueB>(rng, K * ldb);
  const std::vector<ValueC> c = random_values<ValueC>(rng, M * ldc);
  std::vector<ValueC> d(M * ldc, std::numeric_limits<ValueC>::quiet_NaN());

  DeviceBuffer<ValueA> a_device;
  DeviceBuffer<ValueB> b_device;
  DeviceBuffer<ValueC> c_device, d_device;
  TCFEM_ASSERT_CUDA(a_device.upload(a));
  TCFEM_ASSERT_CUDA(b_device.upload(b));
  TCFEM_ASSERT_CUDA(c_device.upload(c));
  TCFEM_ASSERT_CUDA(d_device.upload(d));  // NaN-poisoned output
  atom_kernel<Atom, in_place><<<1, arch::warp_size>>>(a_device.data(), lda, b_device.data(), ldb,
                                                      c_device.data(), d_device.data(), ldc);
  TCFEM_ASSERT_LAUNCH();
  TCFEM_ASSERT_CUDA(d_device.download(d));

  // Two references: the stored inputs (tolerance of the precision) and the inputs rounded to the
  // instruction's format (checks the layout tightly: only the accumulation may differ).
  typename Atom::FragA probe_a{};
  typename Atom::FragB probe_b{};
  std::vector<long double> exact(M * ldc, 0.0L), exact_rounded(M * ldc, 0.0L);
  for (int r = 0; r < M; ++r)
    for (int col = 0; col < N; ++col) {
      long double sum = c[r * ldc + col], sum_rounded = sum;
      for (int k = 0; k < K; ++k) {
        sum += static_cast<long double>(a[r * lda + k]) * b[k * ldb + col];
        Atom::set_a(probe_a, 0, a[r * lda + k]);
        Atom::set_b(probe_b, 0, b[k * ldb + col]);
        sum_rounded += static_cast<long double>(Atom::get_a(probe_a, 0)) * Atom::get_b(probe_b, 0);
      }
      exact[r * ldc + col] = sum;
      exact_rounded[r * ldc + col] = sum_rounded;
    }
  constexpr bool is_fp64 = std::is_same_v<ValueC, double>;
  constexpr bool rounds_inputs = !std::is_same_v<typename Atom::RegistersA, arch::PlainRegisters<ValueA>>;
  const double tolerance_rounded = is_fp64 ? 1e-12 : 1e-5;
  const double tolerance = is_fp64 ? 1e-12 : rounds_inputs ? 1e-2 : 1e-5;
  const double error_rounded = relative_error(d, exact_rounded, M, N, ldc);
  const double error = relative_error(d, exact, M, N, ldc);
  EXPECT_LE(error_rounded, tolerance_rounded) << "vs rounded inputs (NaN: output not fully written)";
  EXPECT_LE(error, tolerance) << "vs stored inputs";
  worst_rounded = std::isnan(error_rounded) ? error_rounded : std::max(worst_rounded, error_rounded);
  worst_stored = std::isnan(error) ? error : std::max(worst_stored, error);
}

/// The measured error, in the XML report only (--gtest_output=xml): tests print nothing on success.
void record_error(const char* key, double error) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", error);
  ::testing::Test::RecordProperty(key, text);
}

TYPED_TEST(AtomTest, WarpProductMatchesNaiveGemm) {
  using Atom = TypeParam;
  if (this->skip_below(Atom::min_sm))
    GTEST_SKIP() << "device " << device_info().name << " is sm_" << device_info().sm
                 << "; this atom needs sm_" << Atom::min_sm << ": skipping";
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  double worst_rounded = 0, worst_stored = 0;
  for (int repetition = 0; repetition < 4; ++repetition) {
    ASSERT_NO_FATAL_FAILURE((run_atom_and_compare<Atom, false>(rng, worst_rounded, worst_stored)));
    ASSERT_NO_FATAL_FAILURE((run_atom_and_compare<Atom, true>(rng, worst_rounded, worst_stored)));
  }
  record_error("error_vs_rounded_inputs", worst_rounded);
  record_error("error_vs_stored_inputs", worst_stored);
}

// ---- precision policies ------------------------------------------------------------------------------
template <class Policy>
class PolicyTest : public DeviceTest {};

using precision::Precision;
using AllPolicies = ::testing::Types<
    precision::Fp64Policy<arch::Sm90_M16N8K16_F64>, precision::Fp64Policy<arch::Sm80_M8N8K4_F64>,
    precision::Fp64Policy<arch::Simt_M16N8K16_F64>,
    precision::PolicyFor<Precision::fp64, arch::Fp64Shape::simt>, precision::Fp32Policy<>,
    precision::Tf32x3Policy<>, precision::Tf32x3Policy<arch::Simt_M16N8K8_TF32>, precision::Fp16Policy<>,
    precision::Fp16ecPolicy<>, precision::Fp16ecPolicy<arch::Simt_M16N8K16_F16>, precision::Bf16Policy<>,
    precision::Bf16x3Policy<>, precision::Bf16x3Policy<arch::Simt_M16N8K16_BF16>>;
struct PolicyNames {
  template <class Policy>
  static std::string GetName(int index) {
    static const char* const names[] = {"Fp64_Sm90_M16N8K16",
                                        "Fp64_Sm80_M8N8K4",
                                        "Fp64_Simt_M16N8K16",
                                        "Fp64_Simt_default",
                                        "Fp32_Simt",
                                        "Tf32x3",
                                        "Tf32x3_Simt",
                                        "Fp16",
                                        "Fp16ec",
                                        "Fp16ec_Simt",
                                        "Bf16",
                                        "Bf16x3",
                                        "Bf16x3_Simt"};
    return names[index];
  }
};
TYPED_TEST_SUITE(PolicyTest, AllPolicies, PolicyNames);

TYPED_TEST(PolicyTest, TileGemmReachesThePrecisionTolerance) {
  using Policy = TypeParam;
  using Storage = typename Policy::Storage;
  using ValueC = typename Policy::ValueC;
  if (this->skip_below(Policy::Atom::min_sm))
    GTEST_SKIP() << "device " << device_info().name << " is sm_" << device_info().sm
                 << "; this policy's atom needs sm_" << Policy::Atom::min_sm << ": skipping";
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr int M = Policy::M, N = Policy::N;
  const int k_extent = 4 * Policy::K;  // several k blocks: accumulation across mma calls
  const int lda = k_extent + 2, ldb = N + 1, ldd = N;
  const std::vector<Storage> a = random_values<Storage>(rng, M * lda);
  const std::vector<Storage> b = random_values<Storage>(rng, k_extent * ldb);
  std::vector<ValueC> d(M * ldd, std::numeric_limits<ValueC>::quiet_NaN());
  DeviceBuffer<Storage> a_device, b_device;
  DeviceBuffer<ValueC> d_device;
  TCFEM_ASSERT_CUDA(a_device.upload(a));
  TCFEM_ASSERT_CUDA(b_device.upload(b));
  TCFEM_ASSERT_CUDA(d_device.upload(d));
  policy_kernel<Policy>
      <<<1, arch::warp_size>>>(a_device.data(), lda, b_device.data(), ldb, d_device.data(), ldd, k_extent);
  TCFEM_ASSERT_LAUNCH();
  TCFEM_ASSERT_CUDA(d_device.download(d));

  std::vector<long double> exact(M * ldd, 0.0L);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      for (int k = 0; k < k_extent; ++k)
        exact[r * ldd + c] += static_cast<long double>(a[r * lda + k]) * b[k * ldb + c];
  double tolerance = 1e-5;  // fp32, tf32x3, fp16ec, bf16x3
  if constexpr (Policy::precision == Precision::fp64) tolerance = 1e-12;
  if constexpr (Policy::precision == Precision::fp16 || Policy::precision == Precision::bf16)
    tolerance = 1e-2;
  const double error = relative_error(d, exact, M, N, ldd);
  EXPECT_LE(error, tolerance) << precision::to_string(Policy::precision)
                              << " (NaN: output not fully written)";
  record_error("error_vs_stored_inputs", error);
}

// ---- roundings and splits: device instructions == host emulation -----------------------------------
class NumberFormatTest : public DeviceTest {};

/// Edge cases and random bit patterns (finite or infinite), or a set of NaN patterns.
std::vector<float> conversion_inputs(std::mt19937_64& rng, bool nan_inputs) {
  if (nan_inputs)
    return {arch::float_from_bits(0x7fc00000u), arch::float_from_bits(0xffc01234u),
            arch::float_from_bits(0x7fa00000u), arch::float_from_bits(0x7f800001u),
            arch::float_from_bits(0x7fffffffu)};
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          1.0f + 0x1p-11f,
                          -(1.0f + 0x1p-11f),
                          1.0f + 0x1p-8f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          0x1p-24f,
                          0x1p-25f,
                          0x1.8p-24f,
                          0x1p-137f,
                          0x1p-149f,
                          1e-40f,
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(),
                          std::ldexp(2.0f - 0x1p-11f, 127),
                          INFINITY,
                          -INFINITY};
  std::uniform_int_distribution<std::uint32_t> bits;
  while (x.size() < (1u << 16)) {
    const float v = arch::float_from_bits(bits(rng));
    if (!std::isnan(v)) x.push_back(v);
  }
  return x;
}

void convert_on_device(const std::vector<float>& x, std::vector<std::uint32_t>& tf32,
                       std::vector<std::uint16_t>& fp16, std::vector<std::uint16_t>& bf16) {
  const int n = static_cast<int>(x.size());
  DeviceBuffer<float> x_device;
  DeviceBuffer<std::uint32_t> tf32_device;
  DeviceBuffer<std::uint16_t> fp16_device, bf16_device;
  TCFEM_ASSERT_CUDA(x_device.upload(x));
  TCFEM_ASSERT_CUDA(tf32_device.allocate(n));
  TCFEM_ASSERT_CUDA(fp16_device.allocate(n));
  TCFEM_ASSERT_CUDA(bf16_device.allocate(n));
  conversion_kernel<<<64, 256>>>(x_device.data(), n, tf32_device.data(), fp16_device.data(),
                                 bf16_device.data());
  TCFEM_ASSERT_LAUNCH();
  TCFEM_ASSERT_CUDA(tf32_device.download(tf32));
  TCFEM_ASSERT_CUDA(fp16_device.download(fp16));
  TCFEM_ASSERT_CUDA(bf16_device.download(bf16));
}

TEST_F(NumberFormatTest, DeviceRoundingsMatchHostBitForBit) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<float> x = conversion_inputs(rng, false);
  std::vector<std::uint32_t> tf32;
  std::vector<std::uint16_t> fp16, bf16;
  ASSERT_NO_FATAL_FAILURE(convert_on_device(x, tf32, fp16, bf16));
  int mismatches = 0;
  for (std::size_t i = 0; i < x.size() && mismatches < 10; ++i) {
    const std::uint32_t bits = arch::float_bits(x[i]);
    const bool ok = tf32[i] == arch::tf32_bits_rna_host(bits) && fp16[i] == arch::fp16_bits_rn_host(x[i]) &&
                    bf16[i] == arch::bf16_bits_rn_host(x[i]);
    if (!ok) {
      ++mismatches;
      ADD_FAILURE() << std::hex << "x bits 0x" << bits << ": tf32 device 0x" << tf32[i] << " host 0x"
                    << arch::tf32_bits_rna_host(bits) << "; fp16 device 0x" << fp16[i] << " host 0x"
                    << arch::fp16_bits_rn_host(x[i]) << "; bf16 device 0x" << bf16[i] << " host 0x"
                    << arch::bf16_bits_rn_host(x[i]);
    }
  }
}

// NaN inputs: the host emulation reproduces the SASS of cvt.rna.tf32.f32 (NaN bits truncated, not
// rounded); for FP16 / BF16 only NaN-ness is specified.
TEST_F(NumberFormatTest, NaNInputsStayNaN) {
  std::mt19937_64 rng(0);
  const std::vector<float> x = conversion_inputs(rng, true);
  std::vector<std::uint32_t> tf32;
  std::vector<std::uint16_t> fp16, bf16;
  ASSERT_NO_FATAL_FAILURE(convert_on_device(x, tf32, fp16, bf16));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t bits = arch::float_bits(x[i]);
    EXPECT_EQ(tf32[i], arch::tf32_bits_rna_host(bits)) << std::hex << "x bits 0x" << bits;
    EXPECT_TRUE(std::isnan(arch::fp16_bits_to_float(fp16[i]))) << std::hex << "x bits 0x" << bits;
    EXPECT_TRUE(std::isnan(arch::bf16_bits_to_float(bf16[i]))) << std::hex << "x bits 0x" << bits;
  }
}

TEST_F(NumberFormatTest, DeviceFp16DecodeMatchesHost) {
  DeviceBuffer<float> x_device;
  TCFEM_ASSERT_CUDA(x_device.allocate(1 << 16));
  fp16_decode_kernel<<<(1 << 16) / 256, 256>>>(x_device.data());
  TCFEM_ASSERT_LAUNCH();
  std::vector<float> x;
  TCFEM_ASSERT_CUDA(x_device.download(x));
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    const float host = arch::fp16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(host))
      EXPECT_TRUE(std::isnan(x[h])) << std::hex << h;
    else
      ASSERT_EQ(arch::float_bits(x[h]), arch::float_bits(host)) << std::hex << h;
  }
}

template <Precision p>
void expect_device_split_matches_host(std::mt19937_64& rng) {
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-14, 15);
  std::vector<float> x(1 << 14);
  for (auto& v : x) v = std::ldexp(mantissa(rng), exponent(rng));
  DeviceBuffer<float> x_device, hi_device, lo_device;
  TCFEM_ASSERT_CUDA(x_device.upload(x));
  TCFEM_ASSERT_CUDA(hi_device.allocate(x.size()));
  TCFEM_ASSERT_CUDA(lo_device.allocate(x.size()));
  split_kernel<p>
      <<<16, 256>>>(x_device.data(), static_cast<int>(x.size()), hi_device.data(), lo_device.data());
  TCFEM_ASSERT_LAUNCH();
  std::vector<float> hi, lo;
  TCFEM_ASSERT_CUDA(hi_device.download(hi));
  TCFEM_ASSERT_CUDA(lo_device.download(lo));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const precision::SplitValue s = precision::Arithmetic<p>::split(x[i]);
    ASSERT_EQ(arch::float_bits(hi[i]), arch::float_bits(s.hi)) << precision::to_string(p) << " x = " << x[i];
    ASSERT_EQ(arch::float_bits(lo[i]), arch::float_bits(s.lo)) << precision::to_string(p) << " x = " << x[i];
  }
}

TEST_F(NumberFormatTest, DeviceSplitsMatchHostBitForBit) {
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ASSERT_NO_FATAL_FAILURE(expect_device_split_matches_host<Precision::tf32x3>(rng));
  ASSERT_NO_FATAL_FAILURE(expect_device_split_matches_host<Precision::fp16ec>(rng));
  ASSERT_NO_FATAL_FAILURE(expect_device_split_matches_host<Precision::bf16x3>(rng));
}

}  // namespace
