#include "io/json_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace tcfem::io {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot open '" + tmp + "' for writing: " + std::strerror(errno));
    f << text;
    f.flush();
    if (!f) {
      const std::string why = std::strerror(errno);
      f.close();
      std::remove(tmp.c_str());
      throw Error("cannot write '" + path + "': " + why);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error("cannot move '" + tmp + "' to '" + path + "': " + why);
  }
}

void check_output_path(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(option + ": empty file name");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(option + ": '" + path + "' is a directory, expected a file name");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    throw InputError(option + ": directory '" + dir.string() + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError(option + ": directory '" + dir.string() + "' is not writable");
}

}  // namespace tcfem::io
