#pragma once
// A time stepper of the wave problem that owns its state: the CPU stepper (RK4 on the host) and,
// where tcfem is built with CUDA, the device stepper (the state, the stored geometry and the RK4
// stages on the GPU). tcfem wave drives either through this interface.
#include <memory>
#include <string>
#include <vector>

#include "wave/time_stepping.h"
#include "wave/wave_operator.h"

namespace tcfem::wave {

class WaveStepper {
 public:
  virtual ~WaveStepper() = default;
  virtual void set_state(const std::vector<double>& x) = 0;
  /// The problem's initial state: its initial data interpolated at the nodes (zero where it
  /// gives none), computed where the stepper's data are.
  virtual void set_initial_state() = 0;
  virtual void get_state(std::vector<double>& x) = 0;
  /// One RK4 step x(t) -> x(t + dt).
  virtual void step(double t, double dt) = 0;
  /// How the steps evaluate RK4: classic or nested (time_stepping.h).
  virtual Rk4Form rk4_form() const = 0;
  /// The energy (x, x)_M / 2 of the current state.
  virtual double energy() = 0;
  /// Remembers the current state as x0, for projection().
  virtual void set_reference() = 0;
  /// (x, x0)_M / (x0, x0)_M
  virtual double projection() = 0;
  /// The spectral bound of the operator (as WaveOperator::spectral_bound), on this backend.
  virtual SpectralBound spectral_bound(int max_applies) = 0;
  double spectral_radius(int max_applies) { return spectral_bound(max_applies).radius; }
  /// Time of the timed operator applies (the device: the spectral bound's plain applies, cell
  /// kernel and pressure finish; the CPU: the stepping's applies), and of their cell kernels alone.
  virtual double operator_seconds() const = 0;
  virtual double cell_kernel_seconds() const { return operator_seconds(); }
  virtual std::size_t operator_applies() const = 0;
  /// Waits for queued work (device backends); timings are taken after it.
  virtual void synchronize() {}
  /// What runs: backend, kernel variant and precision.
  virtual std::string description() const = 0;
  /// The units of the cell kernel's contractions: "cpu", "cuda-core" or "tensor-core".
  virtual std::string cores() const { return "cpu"; }
  /// Memory held for the state, work vectors and stored data (bytes).
  virtual std::size_t memory_bytes() const = 0;
};

/// The CPU stepper of `op` (which needs the host's cell data: WaveSetup::host), RK4 in `form`.
template <int dim>
std::unique_ptr<WaveStepper> make_cpu_wave_stepper(const WaveOperator<dim>& op, Rk4Form form = Rk4Form::automatic);

}  // namespace tcfem::wave
