#pragma once
// What the MPI unit tests share: the world communicator, a random seed equal on every rank, an
// operator configuration with a variable coefficient, and the quarter annulus.
#include <cmath>
#include <random>
#include <string>

#include "core/communicator.h"
#include "mpi_gtest.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"

namespace tcfem::test {

inline Communicator world() { return Communicator::world(); }

/// The operator configuration of a test: disc and degree, with `coefficient` a smooth positive
/// variable coefficient (a constant one otherwise).
inline operators::OperatorConfig config(fe::Disc disc, int degree, bool coefficient) {
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = degree;
  if (coefficient) cfg.coefficient = [](const double* x) { return 1.5 + std::sin(3 * x[0]) * x[1]; };
  return cfg;
}

/// The quarter annulus: the unit box mapped by (x, y) -> (1 + x)(cos, sin)(pi y / 2).
template <int dim>
mesh::Domain<dim> annulus() {
  mesh::Point<dim> lo{}, hi{};
  for (int d = 0; d < dim; ++d) hi[d] = 1.0;
  return mesh::Domain<dim>::box(lo, hi, [](const mesh::Point<dim>& X) {
    mesh::Point<dim> x = X;
    x[0] = (1 + X[0]) * std::cos(M_PI / 2 * X[1]);
    x[1] = (1 + X[0]) * std::sin(M_PI / 2 * X[1]);
    return x;
  });
}

}  // namespace tcfem::test
