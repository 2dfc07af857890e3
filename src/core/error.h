#pragma once
// Error types of tcfem (the public tcfem/error.h) and the invariant check.
#include <cstdio>
#include <string>

#include "tcfem/error.h"

namespace tcfem {

/// "(x, y, z)" of the first dim coordinates of x, for messages that name a point.
inline std::string point_text(const double* x, int dim) {
  std::string s = "(";
  char buf[40];
  for (int d = 0; d < dim; ++d) {
    std::snprintf(buf, sizeof buf, "%s%.9g", d ? ", " : "", x[d]);
    s += buf;
  }
  return s + ")";
}

/// Throws tcfem::Error with file/line context when `cond` is false. For invariants, not for user input.
#define TCFEM_ASSERT(cond, msg)                                                              \
  do {                                                                                       \
    if (!(cond))                                                                             \
      throw ::tcfem::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                           (msg));                                                           \
  } while (0)

}  // namespace tcfem
