#pragma once
// Normal modes of a closed basin for the acoustic-gravity wave equations: rigid lateral walls and
// bottom, a free surface on top. A mode is p = S(x) cos(omega t), u = -grad S sin(omega t) /
// (rho omega), with S the product of cos(k_d (x_d - lower_d)) over the horizontal directions and
// P(zeta) in the height zeta above the bottom: P'' = (kappa^2 - omega^2 / c^2) P, P'(0) = 0, and the
// free surface omega^2 P(H) = g P'(H). Hence the dispersion relation
//   gravity branch:   omega^2 = g gamma tanh(gamma H),  gamma^2 = kappa^2 - omega^2 / c^2 > 0,
//   acoustic branches: omega^2 = -g beta tan(beta H),   beta^2 = omega^2 / c^2 - kappa^2 > 0,
// the j-th acoustic branch with beta H in ((j - 1/2) pi, j pi).
#include <array>

namespace tcfem::wave {

template <int dim>
struct BasinMode {
  std::array<double, dim> lower{}, upper{};  ///< the basin (the last direction is vertical)
  std::array<int, dim - 1> wave_numbers{};   ///< half-wavelengths per horizontal direction
  int branch = 0;                            ///< 0: gravity, j >= 1: the j-th acoustic branch
  double rho = 1, K = 1, g = 1;
  std::array<double, dim - 1> k{};  ///< horizontal wave numbers m pi / L
  double kappa = 0;                 ///< |k|
  double vertical = 0;              ///< gamma (gravity branch) or beta (acoustic branches)
  double omega = 0;                 ///< the angular frequency

  /// S(x): the pressure amplitude of the mode
  double shape(const double* x) const;
  /// dS/dx_d
  double shape_derivative(const double* x, int d) const;
  double pressure(const double* x, double t) const;
  double velocity(const double* x, double t, int d) const;
  double period() const;
};

/// The mode with the given horizontal wave numbers and branch of the basin [lower, upper] with
/// constant rho, K and g. Throws InputError for a mode that does not exist (the gravity branch of
/// wave numbers all zero) or parameters that are not positive.
template <int dim>
BasinMode<dim> basin_mode(const std::array<double, dim>& lower, const std::array<double, dim>& upper,
                          const std::array<int, dim - 1>& wave_numbers, int branch, double rho, double K, double g);

}  // namespace tcfem::wave
