#pragma once
// FP64 tensor-core atoms of sm_90 (Hopper): mma.sync m16n8k4 / m16n8k8 / m16n8k16 with .f64
// (PTX ISA 7.8+, sm_90). On Hopper these run at twice the rate of the sm_80 shape m8n8k4.
// Compiled for an architecture below sm_90, mma() runs the CUDA-core twin (`Simt`) instead, so a
// kernel instantiated with these atoms is correct everywhere; the host picks them only where they
// are native (capability.h: select_fp64_atom).
#include "arch/lane_maps.h"
#include "arch/mma_simt.cuh"

namespace tcfem::arch {

/// True in a device compilation pass below sm_90 (the sm_80 cubin of a fat binary). Kernels whose
/// launchers run them only where the sm_90 shapes are native wrap their body in
/// `if constexpr (!sm90_absent()) body<...>(...)`, so that cubin carries an empty kernel and the
/// build does not compile the body twice.
__host__ __device__ constexpr bool sm90_absent() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return true;
#else
  return false;
#endif
}

/// mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 (sm_90).
struct Sm90_M16N8K4_F64 : LaneMap_M16N8K4_F64 {
  using Simt = SimtMma<LaneMap_M16N8K4_F64>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 90;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
        "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};\n"
        : "=d"(d.reg[0]), "=d"(d.reg[1]), "=d"(d.reg[2]), "=d"(d.reg[3])
        : "d"(a.reg[0]), "d"(a.reg[1]), "d"(b.reg[0]), "d"(c.reg[0]), "d"(c.reg[1]), "d"(c.reg[2]),
          "d"(c.reg[3]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

/// mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 (sm_90).
struct Sm90_M16N8K8_F64 : LaneMap_M16N8K8_F64 {
  using Simt = SimtMma<LaneMap_M16N8K8_F64>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 90;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=d"(d.reg[0]), "=d"(d.reg[1]), "=d"(d.reg[2]), "=d"(d.reg[3])
        : "d"(a.reg[0]), "d"(a.reg[1]), "d"(a.reg[2]), "d"(a.reg[3]), "d"(b.reg[0]), "d"(b.reg[1]),
          "d"(c.reg[0]), "d"(c.reg[1]), "d"(c.reg[2]), "d"(c.reg[3]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

/// mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 (sm_90).
struct Sm90_M16N8K16_F64 : LaneMap_M16N8K16_F64 {
  using Simt = SimtMma<LaneMap_M16N8K16_F64>;
  static constexpr bool is_tensor_core = true;
  static constexpr int min_sm = 90;

  static __device__ void mma(FragC& d, const FragA& a, const FragB& b, const FragC& c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15}, "
        "{%16, %17, %18, %19};\n"
        : "=d"(d.reg[0]), "=d"(d.reg[1]), "=d"(d.reg[2]), "=d"(d.reg[3])
        : "d"(a.reg[0]), "d"(a.reg[1]), "d"(a.reg[2]), "d"(a.reg[3]), "d"(a.reg[4]), "d"(a.reg[5]),
          "d"(a.reg[6]), "d"(a.reg[7]), "d"(b.reg[0]), "d"(b.reg[1]), "d"(b.reg[2]), "d"(b.reg[3]),
          "d"(c.reg[0]), "d"(c.reg[1]), "d"(c.reg[2]), "d"(c.reg[3]));
#else
    Simt::mma(d, a, b, c);
#endif
  }
};

}  // namespace tcfem::arch
