#pragma once
// The data of both examples: on the quarter annulus 1 <= r <= 2, 0 <= theta <= pi/2,
//   -div(a grad u) = f,  a = 1 + x^2 + y^2 (2..5),  u = exp(x) sin(y) (harmonic),
// so f = -grad a . grad u; Dirichlet data on the inner arc and the two straight sides, Neumann
// data h = a grad u . n on the outer arc (n = (x, y) / 2).
#include <cmath>

#include <tcfem/tcfem.h>

namespace annulus {

using P = tcfem::Point<2>;

inline double a(const P& p) { return 1.0 + p[0] * p[0] + p[1] * p[1]; }
inline double u(const P& p) { return std::exp(p[0]) * std::sin(p[1]); }
inline P grad_u(const P& p) { return {std::exp(p[0]) * std::sin(p[1]), std::exp(p[0]) * std::cos(p[1])}; }
inline double f(const P& p) {
  const P g = grad_u(p);
  return -(2.0 * p[0] * g[0] + 2.0 * p[1] * g[1]);
}
inline double h_outer(const P& p) {
  const P g = grad_u(p);
  return a(p) * (g[0] * p[0] + g[1] * p[1]) / 2.0;
}

/// Sets the coefficient, the data and the exact solution; the parts are named by the caller.
inline void set_data(tcfem::Problem<2>& pb, const char* inner, const char* outer, const char* bottom,
                     const char* left) {
  pb.coefficient = a;
  pb.rhs = f;
  pb.dirichlet = {{inner, u}, {bottom, u}, {left, u}};
  pb.neumann = {{outer, h_outer}};
  pb.exact = u;
  pb.exact_gradient = grad_u;
}

}  // namespace annulus
