#include "wave/device_wave.h"

namespace tcfem::wave {

const char* to_string(WaveGeometryForm form) { return form == WaveGeometryForm::mf ? "mf" : "pa"; }

const char* to_string(WaveStorage storage) { return storage == WaveStorage::fp32 ? "fp32" : "fp64"; }

const char* to_string(WaveCores cores) {
  switch (cores) {
    case WaveCores::cuda_core: return "cuda-core";
    case WaveCores::tensor_core: return "tensor-core";
    case WaveCores::automatic: break;
  }
  return "auto";
}

}  // namespace tcfem::wave
