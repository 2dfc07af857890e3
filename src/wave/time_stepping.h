#pragma once
// Explicit time stepping of the wave operator: the classical fourth-order Runge-Kutta method with
// fused vector updates, its stable step from the operator's spectral bound, and the measurement
// of an oscillation's frequency from the zero crossings of a signal.
#include <cstddef>
#include <string>
#include <vector>

#include "wave/wave_operator.h"

namespace tcfem::wave {

/// RK4 is stable for eigenvalues i lambda dt with |lambda dt| <= 2 sqrt(2).
inline constexpr double rk4_imaginary_limit = 2.8284271247461903;

/// How a step evaluates RK4. The wave's rate is affine in the state, r(t, x) = L x + b(t) (b: the
/// seafloor's data, zero without seafloor faces).
/// - classic: the four stages k_i = r(t + c_i dt, x + a_i dt k_{i-1}), accumulated as
///   x + dt (k_1 + 2 k_2 + 2 k_3 + k_4) / 6.
/// - nested: the same step, x + dt L x + ... + (dt L)^4 x / 24 plus its terms in b, evaluated in
///   Horner's form: w = x + dt/4 (L x + f_1), w = x + dt/3 (L w + f_2), w = x + dt/2 (L w + f_3),
///   x = x + dt (L w + f_4), with f_1 = b_0, f_2 = (b_0 + b_h) / 2, f_3 = (b_0 + 2 b_h) / 3,
///   f_4 = (b_0 + 4 b_h + b_1) / 6 (b_0, b_h, b_1: b at t, t + dt/2, t + dt). The same four
///   applies and the same stability limit, equal to the classic form up to rounding, and one
///   vector fewer to read and write per stage (no accumulator).
/// - automatic: nested.
enum class Rk4Form { automatic, classic, nested };
const char* to_string(Rk4Form form);
/// The form a stepper runs (automatic resolved).
inline Rk4Form resolve_rk4_form(Rk4Form requested) {
  return requested == Rk4Form::automatic ? Rk4Form::nested : requested;
}
/// The weights of b_0, b_h, b_1 in the nested form's stage forcing f_{stage + 1}.
inline constexpr double rk4_nested_forcing[4][3] = {
    {1.0, 0.0, 0.0}, {0.5, 0.5, 0.0}, {1.0 / 3, 2.0 / 3, 0.0}, {1.0 / 6, 4.0 / 6, 1.0 / 6}};

/// One RK4 step at a time on the CPU: x(t) -> x(t + dt). Holds three work vectors (two in the
/// nested form's steps).
template <int dim>
class Rk4Stepper {
 public:
  explicit Rk4Stepper(const WaveOperator<dim>& op, Rk4Form form = Rk4Form::automatic);
  void step(double t, double dt, std::vector<double>& x);
  double operator_seconds() const { return operator_seconds_; }
  std::size_t operator_applies() const { return applies_; }
  /// classic or nested (never automatic)
  Rk4Form form() const { return form_; }

 private:
  const WaveOperator<dim>* op_;
  Rk4Form form_;
  std::vector<double> k_, y_, acc_;
  std::vector<double> floor_[3], forcing_;  // the nested form's seafloor values at t, t + dt/2, t + dt and f
  double operator_seconds_ = 0;
  std::size_t applies_ = 0;
};

/// The angular frequency of a signal c(t) = A cos(omega t + phi) + small from its zero crossings
/// (linear interpolation between samples, first to last crossing); 0 if it crosses fewer than
/// twice.
double frequency_from_crossings(const std::vector<double>& t, const std::vector<double>& c, int* crossings = nullptr);

}  // namespace tcfem::wave
