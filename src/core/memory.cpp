#include "core/memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tcfem {

std::size_t available_host_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t value = 0;
  std::string unit;
  while (f >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return 0;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 5) {
    bytes /= 1000.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);
  return buf;
}

}  // namespace tcfem
