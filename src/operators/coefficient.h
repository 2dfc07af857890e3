#pragma once
// The coefficient a(x) of -div(a grad u): a scalar field at physical points.
#include <functional>

namespace tcfem::operators {

/// a(x) at the physical point x (dim coordinates); must be thread-safe. Empty: a = 1 (the
/// operators then keep their constant-coefficient paths).
using Coefficient = std::function<double(const double* x)>;

}  // namespace tcfem::operators
