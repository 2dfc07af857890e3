#pragma once
// Error types of tcfem. Every failure that reaches the user is one of these; the command-line
// tool maps them to exit codes (InputError -> 2, everything else -> 1).
#include <stdexcept>
#include <string>

namespace tcfem {

/// Invalid input: options, sizes, meshes, files. Message names the offending item and what is allowed.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Internal failure (I/O errors, broken invariants, device errors).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws tcfem::Error with file/line context when `cond` is false. For invariants, not for user input.
#define TCFEM_ASSERT(cond, msg)                                                              \
  do {                                                                                       \
    if (!(cond))                                                                             \
      throw ::tcfem::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + \
                           (msg));                                                           \
  } while (0)

}  // namespace tcfem
