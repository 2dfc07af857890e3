#pragma once
// The errors tcfem throws. Every failure that reaches the user is one of these; the command-line
// tool maps them to exit codes (InputError -> 2, everything else -> 1).
#include <stdexcept>

namespace tcfem {

/// Invalid input: options, sizes, meshes, files. The message names the offending item and what is allowed.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Internal failure (I/O errors, broken invariants, device errors).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tcfem
