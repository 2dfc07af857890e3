#pragma once
// Tensor-core atoms of sm_80 (Ampere; also run on sm_86 / sm_89 / sm_90): one struct per PTX
// `mma.sync` instruction. Each derives from its lane map (lane_maps.h) and offers
//   static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c);  // D = A B + C
// Compiled for an architecture without the instruction, mma() runs the CUDA-core twin (`Simt`).
#include <cstdint>

#include "arch/lane_maps.h"
#include "arch/mma_simt.cuh"

namespace tcfem::arch {

/// mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 (DMMA, sm_80+).
struct Sm80_M8N8K4_F64 : LaneMap_M8N8K4_F64 {
  using Simt = SimtMma<LaneMap_M8N8K4_F64>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 80;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%4, %5};\n"
        : "=d"(d.reg[0]), "=d"(d.reg[1])
        : "d"(a.reg[0]), "d"(b.reg[0]), "d"(c.reg[0]), "d"(c.reg[1]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

/// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (sm_80+). Inputs are FP32 values rounded to
/// TF32 by set_a / set_b / load_a / load_b (cvt.rna.tf32.f32); accumulation in FP32.
struct Sm80_M16N8K8_TF32 : LaneMap_M16N8K8_TF32 {
  using Simt = SimtMma<LaneMap_M16N8K8_TF32>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 80;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d.reg[0]), "=f"(d.reg[1]), "=f"(d.reg[2]), "=f"(d.reg[3])
        : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]),
          "f"(c.reg[0]), "f"(c.reg[1]), "f"(c.reg[2]), "f"(c.reg[3]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

/// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (HMMA, sm_80+).
struct Sm80_M16N8K16_F16 : LaneMap_M16N8K16_F16 {
  using Simt = SimtMma<LaneMap_M16N8K16_F16>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 80;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d.reg[0]), "=f"(d.reg[1]), "=f"(d.reg[2]), "=f"(d.reg[3])
        : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]),
          "f"(c.reg[0]), "f"(c.reg[1]), "f"(c.reg[2]), "f"(c.reg[3]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

/// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (sm_80+).
struct Sm80_M16N8K16_BF16 : LaneMap_M16N8K16_BF16 {
  using Simt = SimtMma<LaneMap_M16N8K16_BF16>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 80;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d.reg[0]), "=f"(d.reg[1]), "=f"(d.reg[2]), "=f"(d.reg[3])
        : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]),
          "f"(c.reg[0]), "f"(c.reg[1]), "f"(c.reg[2]), "f"(c.reg[3]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

}  // namespace tcfem::arch
