#pragma once
// Writing reports: the file appears complete or not at all.
#include <string>

namespace tcfem::io {

/// Writes `text` to `path` through a temporary file in the same directory and a rename.
/// Throws tcfem::Error on failure (the temporary file is removed).
void write_file_atomically(const std::string& path, const std::string& text);

/// Throws tcfem::InputError naming `option` if the directory that would hold `path` does not exist
/// or is not writable, or if `path` names a directory.
void check_output_path(const std::string& option, const std::string& path);

}  // namespace tcfem::io
