#pragma once
// Memory available to the process, for refusing runs that cannot fit before allocating.
#include <cstddef>
#include <string>

namespace tcfem {

/// Bytes of host memory available now (MemAvailable of /proc/meminfo; 0 if unknown).
std::size_t available_host_memory();
/// "1.23 GB" style formatting.
std::string format_bytes(double bytes);

}  // namespace tcfem
