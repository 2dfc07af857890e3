#pragma once
// Host-side capability queries: which tensor-core instruction shapes a device of compute capability
// (sm_major, sm_minor) runs natively. The only place outside the .cuh atoms that knows architectures.
// Plain C++ (no CUDA).
#include <string_view>

namespace tcfem::arch {

/// The FP64 matrix-multiply path of a device.
enum class Fp64Shape {
  simt,      ///< no FP64 tensor cores: CUDA-core FMAs (the SIMT twins)
  m8n8k4,    ///< mma.m8n8k4.f64 (sm_80 family; on sm_90 it runs only at FP64-FMA speed)
  m16n8k16,  ///< mma.m16n8k{4,8,16}.f64 (sm_90; twice the m8n8k4 throughput there)
};

/// sm_90 -> m16n8k16, sm_80 / sm_86 / sm_89 -> m8n8k4, anything else -> simt. Later architectures
/// (sm_100+) get simt until tcfem builds code for them: the sm_80 / sm_90 cubins do not run there.
Fp64Shape select_fp64_atom(int sm_major, int sm_minor);

/// Whether the FP16 / BF16 / TF32 mma.sync instructions (m16n8k16, m16n8k8) exist: sm_80 and later.
bool has_fp32_tensor_cores(int sm_major, int sm_minor);

std::string_view to_string(Fp64Shape shape);

}  // namespace tcfem::arch
