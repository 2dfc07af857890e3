#pragma once
// Fresh random inputs of the CPU tests: a seed that differs between runs (a failure prints it) and
// vectors of uniform entries in [-1, 1].
#include <cstddef>
#include <random>

#include "core/vector.h"

namespace tcfem::test_inputs {

inline unsigned fresh_seed() {
  static std::random_device device;
  return device();
}

template <typename Number>
Vector<Number> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<Number> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<Number>(dist(gen));
  return v;
}

}  // namespace tcfem::test_inputs
