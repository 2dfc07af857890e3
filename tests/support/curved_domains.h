#pragma once
// Curved test domains shared by the CPU and device tests: the quarter annulus 1 <= r <= 2
// (extruded along z in 3D) as a mapped unit box, and a coefficient varying 10x on it.
#include <cmath>

#include "mesh/box_mesh.h"

namespace tcfem::test_domains {

/// x = (1 + X) cos(pi Y / 2), y = (1 + X) sin(pi Y / 2) (, z = Z) on the unit box.
template <int dim>
mesh::Domain<dim> quarter_annulus() {
  mesh::Point<dim> lo{}, hi;
  hi.fill(1.0);
  return mesh::Domain<dim>::box(lo, hi, [](const mesh::Point<dim>& X) {
    const double r = 1.0 + X[0], t = 1.5707963267948966 * X[1];
    mesh::Point<dim> x = X;
    x[0] = r * std::cos(t);
    x[1] = r * std::sin(t);
    return x;
  });
}

/// a = 1 + 3 (r^2 - 1): 1 on the inner arc, 10 on the outer one.
inline double annulus_coefficient(const double* x) { return 1.0 + 3.0 * (x[0] * x[0] + x[1] * x[1] - 1.0); }

}  // namespace tcfem::test_domains
