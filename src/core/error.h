#pragma once
// Error types of tcfem (the public tcfem/error.h) and the invariant check.
#include <string>

#include "tcfem/error.h"

namespace tcfem {

/// Throws tcfem::Error with file/line context when `cond` is false. For invariants, not for user input.
#define TCFEM_ASSERT(cond, msg)                                                              \
  do {                                                                                       \
    if (!(cond))                                                                             \
      throw ::tcfem::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                           (msg));                                                           \
  } while (0)

}  // namespace tcfem
