#include "wave/dispersion.h"

#include <cmath>
#include <algorithm>
#include <functional>
#include <limits>
#include <numbers>
#include <string>

#include "core/error.h"

namespace tcfem::wave {

namespace {
/// The root of f in [a, b] where f(a) < 0 < f(b), by bisection to the last bit.
double bisect(const std::function<double(double)>& f, double a, double b) {
  for (int i = 0; i < 200 && b - a > 4 * std::numeric_limits<double>::epsilon() * std::abs(b); ++i) {
    const double m = 0.5 * (a + b);
    (f(m) < 0 ? a : b) = m;
  }
  return 0.5 * (a + b);
}
}  // namespace

template <int dim>
BasinMode<dim> basin_mode(const std::array<double, dim>& lower, const std::array<double, dim>& upper,
                          const std::array<int, dim - 1>& wave_numbers, int branch, double rho, double K, double g) {
  if (!(rho > 0) || !(K > 0) || !(g > 0))
    throw InputError("normal mode: rho, K and g must be positive constants");
  if (branch < 0) throw InputError("normal mode: the branch must be 0 (gravity) or j >= 1 (acoustic)");
  BasinMode<dim> m;
  m.lower = lower;
  m.upper = upper;
  m.wave_numbers = wave_numbers;
  m.branch = branch;
  m.rho = rho;
  m.K = K;
  m.g = g;
  double kappa2 = 0;
  for (int d = 0; d + 1 < dim; ++d) {
    if (wave_numbers[d] < 0) throw InputError("normal mode: wave numbers must be >= 0");
    m.k[d] = wave_numbers[d] * std::numbers::pi / (upper[d] - lower[d]);
    kappa2 += m.k[d] * m.k[d];
  }
  m.kappa = std::sqrt(kappa2);
  const double H = upper[dim - 1] - lower[dim - 1], c = std::sqrt(K / rho);
  if (branch == 0) {
    if (m.kappa == 0) throw InputError("normal mode: wave numbers all zero have no gravity mode (branch 0)");
    auto f = [&](double w) {
      const double gamma = std::sqrt(std::max(0.0, kappa2 - w * w / (c * c)));
      return w * w - g * gamma * std::tanh(gamma * H);
    };
    m.omega = bisect(f, 0.0, c * m.kappa);
    m.vertical = std::sqrt(std::max(0.0, kappa2 - m.omega * m.omega / (c * c)));
  } else {
    auto f = [&](double beta) {  // increasing from -inf to omega^2 on the branch's interval
      const double w2 = c * c * (beta * beta + kappa2);
      return w2 + g * beta * std::tan(beta * H);
    };
    const double a = (branch - 0.5) * std::numbers::pi / H, b = branch * std::numbers::pi / H;
    m.vertical = bisect(f, a + 1e-14 * b, b);
    m.omega = c * std::sqrt(m.vertical * m.vertical + kappa2);
  }
  return m;
}

template <int dim>
double BasinMode<dim>::shape(const double* x) const {
  double s = 1;
  for (int d = 0; d + 1 < dim; ++d) s *= std::cos(k[d] * (x[d] - lower[d]));
  const double zeta = x[dim - 1] - lower[dim - 1];
  return s * (branch == 0 ? std::cosh(vertical * zeta) : std::cos(vertical * zeta));
}

template <int dim>
double BasinMode<dim>::shape_derivative(const double* x, int dir) const {
  double s = 1;
  for (int d = 0; d + 1 < dim; ++d)
    s *= d == dir ? -k[d] * std::sin(k[d] * (x[d] - lower[d])) : std::cos(k[d] * (x[d] - lower[d]));
  const double zeta = x[dim - 1] - lower[dim - 1];
  if (dir == dim - 1)
    return s * (branch == 0 ? vertical * std::sinh(vertical * zeta) : -vertical * std::sin(vertical * zeta));
  return s * (branch == 0 ? std::cosh(vertical * zeta) : std::cos(vertical * zeta));
}

template <int dim>
double BasinMode<dim>::pressure(const double* x, double t) const {
  return shape(x) * std::cos(omega * t);
}

template <int dim>
double BasinMode<dim>::velocity(const double* x, double t, int d) const {
  return -shape_derivative(x, d) * std::sin(omega * t) / (rho * omega);
}

template <int dim>
double BasinMode<dim>::period() const {
  return 2 * std::numbers::pi / omega;
}

template struct BasinMode<2>;
template struct BasinMode<3>;
template BasinMode<2> basin_mode<2>(const std::array<double, 2>&, const std::array<double, 2>&,
                                    const std::array<int, 1>&, int, double, double, double);
template BasinMode<3> basin_mode<3>(const std::array<double, 3>&, const std::array<double, 3>&,
                                    const std::array<int, 2>&, int, double, double, double);

}  // namespace tcfem::wave
