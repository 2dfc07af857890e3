#pragma once
// Explicit time stepping of the wave operator: the classical fourth-order Runge-Kutta method with
// fused vector updates, its stable step from the operator's spectral bound, and the measurement
// of an oscillation's frequency from the zero crossings of a signal.
#include <cstddef>
#include <vector>

#include "wave/wave_operator.h"

namespace tcfem::wave {

/// RK4 is stable for eigenvalues i lambda dt with |lambda dt| <= 2 sqrt(2).
inline constexpr double rk4_imaginary_limit = 2.8284271247461903;

/// One RK4 step at a time on the CPU: x(t) -> x(t + dt). Holds three work vectors.
template <int dim>
class Rk4Stepper {
 public:
  explicit Rk4Stepper(const WaveOperator<dim>& op);
  void step(double t, double dt, std::vector<double>& x);
  double operator_seconds() const { return operator_seconds_; }
  std::size_t operator_applies() const { return applies_; }

 private:
  const WaveOperator<dim>* op_;
  std::vector<double> k_, y_, acc_;
  double operator_seconds_ = 0;
  std::size_t applies_ = 0;
};

/// The angular frequency of a signal c(t) = A cos(omega t + phi) + small from its zero crossings
/// (linear interpolation between samples, first to last crossing); 0 if it crosses fewer than
/// twice.
double frequency_from_crossings(const std::vector<double>& t, const std::vector<double>& c, int* crossings = nullptr);

}  // namespace tcfem::wave
