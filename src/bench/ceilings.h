#pragma once
// Measured hardware ceilings of CUDA device 0 (`tcfem bench --ceilings`): DRAM copy bandwidth,
// FP64 / FP32 FMA rates on CUDA cores, mma.sync rates (FP64 m8n8k4 and m16n8k16, FP16 and TF32 with
// FP32 accumulation) and shared-memory load bandwidth. Each figure is the best of `runs` timed
// launches after one untimed launch. Plain C++: measured in ceilings.cu (stub without CUDA).
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>

#include "arch/capability.h"
#include "operators/device/device_operator.h"
#include "precision/precision.h"

namespace tcfem::bench {

struct CeilingOptions {
  int runs = 5;
  /// Bytes of each of the two DRAM copy buffers; 0: min(4 GiB, free device memory / 4).
  std::size_t dram_buffer_bytes = 0;
};

struct Ceilings {
  int runs = 0;
  std::size_t dram_buffer_bytes = 0;
  int sm_major = 0, sm_minor = 0;
  // bytes read + written per second
  double dram_copy_kernel_tb_per_s = 0.0;  ///< one-pass vectorized copy kernel
  double dram_memcpy_tb_per_s = 0.0;       ///< cudaMemcpy device to device
  double fp64_fma_tflop_per_s = 0.0;
  double fp32_fma_tflop_per_s = 0.0;
  std::optional<double> dmma_m8n8k4_tflop_per_s;    ///< sm_80 and sm_90
  std::optional<double> dmma_m16n8k16_tflop_per_s;  ///< sm_90 only
  std::optional<double> hmma_f16_tflop_per_s;       ///< m16n8k16 f16 inputs, f32 accumulation (sm_80+)
  std::optional<double> tf32_mma_tflop_per_s;       ///< m16n8k8 tf32 inputs, f32 accumulation (sm_80+)
  double shared_load_tb_per_s = 0.0;                ///< 16-byte loads, all SMs

  /// The DRAM ceiling: the better of the two copies.
  double dram_tb_per_s() const { return std::max(dram_copy_kernel_tb_per_s, dram_memcpy_tb_per_s); }
};

/// Measures on CUDA device 0; InputError without a device or in builds without CUDA.
Ceilings measure_ceilings(const CeilingOptions& options);

/// The compute ceiling a kernel of (precision, variant) runs against: its name (as in the JSON
/// "ceilings" object, without the unit) and value in TFLOP/s; nothing if it was not measured.
struct ComputeCeiling {
  std::string name;
  double tflop_per_s = 0.0;
};
inline std::optional<ComputeCeiling> compute_ceiling(const Ceilings& c, precision::Precision p,
                                                     operators::Variant v) {
  using precision::Precision;
  auto make = [](const char* name, std::optional<double> value) -> std::optional<ComputeCeiling> {
    if (!value || *value <= 0.0) return std::nullopt;
    return ComputeCeiling{name, *value};
  };
  const bool tensor = v == operators::Variant::tensor_core;
  switch (p) {
    case Precision::fp64:
      if (tensor) {
        switch (arch::select_fp64_atom(c.sm_major, c.sm_minor)) {
          case arch::Fp64Shape::m16n8k16: return make("dmma_m16n8k16", c.dmma_m16n8k16_tflop_per_s);
          case arch::Fp64Shape::m8n8k4: return make("dmma_m8n8k4", c.dmma_m8n8k4_tflop_per_s);
          case arch::Fp64Shape::simt: break;
        }
      }
      return make("fp64_fma", c.fp64_fma_tflop_per_s);
    case Precision::fp32: return make("fp32_fma", c.fp32_fma_tflop_per_s);
    case Precision::tf32x3: return tensor ? make("tf32_mma", c.tf32_mma_tflop_per_s) : make("fp32_fma", c.fp32_fma_tflop_per_s);
    case Precision::fp16:
    case Precision::fp16ec:
    case Precision::bf16:
    case Precision::bf16x3:  // BF16 and FP16 mma.sync run at the same rate on sm_80 and sm_90
      return tensor ? make("hmma_f16", c.hmma_f16_tflop_per_s) : make("fp32_fma", c.fp32_fma_tflop_per_s);
  }
  return std::nullopt;
}

}  // namespace tcfem::bench
