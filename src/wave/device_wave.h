#pragma once
// The wave operator and its RK4 stepping on the GPU: the state, the stored geometry (C and s per
// velocity node, the masses and boundary terms) on the device, one fused cell kernel per stage
// (the pressure's gradient to the velocity's rate and the velocity's divergence to the pressure's
// residual in one pass over the cells, fp64, its contractions on CUDA cores or FP64 tensor cores) and one fused vector pass per stage (the
// lumped inverse mass, the absorbing and seafloor terms and the RK4 updates; RK4 in its nested or
// classic form: time_stepping.h).
#include <memory>
#include <string>

#include "wave/wave_stepper.h"

namespace tcfem::wave {

/// pa: C and s stored per velocity node (dim^2 + 1 values); mf: the geometry recomputed in the
/// cell kernel from the node coordinates (dim per pressure node) and 1 / rho per velocity node.
enum class WaveGeometryForm { pa, mf };
const char* to_string(WaveGeometryForm form);

/// Which units run the cell kernel's 1D contractions: CUDA cores (FP64 FMAs) or FP64 tensor
/// cores (the sm_90 mma.sync shapes m16n8k4 / m16n8k8; refused on other GPUs); automatic: tensor
/// cores where the GPU has those shapes and they were measured faster for the (dim, degree,
/// geometry form).
enum class WaveCores { automatic, cuda_core, tensor_core };
const char* to_string(WaveCores cores);

/// The precision of the stored geometry (pa): fp64, or fp32 (C and s rounded to fp32, half the
/// geometry's bytes; the state and the arithmetic stay fp64, and the velocity's mass in the
/// energy is the same rounded s, so the rounded operator is as skew as the fp64 one).
enum class WaveStorage { fp64, fp32 };
const char* to_string(WaveStorage storage);

struct DeviceWaveOptions {
  int device = -1;  ///< -1: the current device
  WaveGeometryForm geometry_form = WaveGeometryForm::pa;
  WaveCores cores = WaveCores::automatic;
  WaveStorage geometry_storage = WaveStorage::fp64;  ///< pa only (mf stores no geometry)
  Rk4Form rk4 = Rk4Form::automatic;                  ///< as resolve_rk4_form
};

/// Whether this build has the device stepper.
bool device_wave_available();

/// The device stepper of `op` (which must outlive it: the seafloor data are evaluated from it on
/// the host at each stage). Throws DeviceError without a usable device.
template <int dim>
std::unique_ptr<WaveStepper> make_device_wave_stepper(const WaveOperator<dim>& op, const DeviceWaveOptions& options);

}  // namespace tcfem::wave

namespace tcfem::wave {
/// r = the device operator's rate at (t, x), host vectors in and out (for the device tests).
template <int dim>
void device_wave_rate(const WaveOperator<dim>& op, double t, const double* x, double* r,
                      WaveGeometryForm form = WaveGeometryForm::pa, WaveCores cores = WaveCores::cuda_core,
                      WaveStorage storage = WaveStorage::fp64);
}  // namespace tcfem::wave
