#include "core/error.h"
#include "wave/device_wave.h"

namespace tcfem::wave {

bool device_wave_available() { return false; }

template <int dim>
std::unique_ptr<WaveStepper> make_device_wave_stepper(const WaveOperator<dim>&, const DeviceWaveOptions&) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend");
}
template std::unique_ptr<WaveStepper> make_device_wave_stepper<2>(const WaveOperator<2>&, const DeviceWaveOptions&);
template std::unique_ptr<WaveStepper> make_device_wave_stepper<3>(const WaveOperator<3>&, const DeviceWaveOptions&);

}  // namespace tcfem::wave

namespace tcfem::wave {
template <int dim>
void device_wave_rate(const WaveOperator<dim>&, double, const double*, double*, WaveGeometryForm, WaveCores, WaveStorage) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend");
}
template void device_wave_rate<2>(const WaveOperator<2>&, double, const double*, double*, WaveGeometryForm, WaveCores, WaveStorage);
template void device_wave_rate<3>(const WaveOperator<3>&, double, const double*, double*, WaveGeometryForm, WaveCores, WaveStorage);
}  // namespace tcfem::wave
