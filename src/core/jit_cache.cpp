#include "core/jit_cache.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace tcfem::jit {

namespace {
constexpr char magic[] = "tcfem cubin cache 1\n";

/// 64-bit FNV-1a: stable across builds and compilers (the file name only; the key itself is
/// stored in the file and compared on loading).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void write_size(std::ostream& out, std::uint64_t n) { out.write(reinterpret_cast<const char*>(&n), sizeof n); }
bool read_size(std::istream& in, std::uint64_t& n) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&n), sizeof n));
}
}  // namespace

CubinCache CubinCache::user() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return CubinCache(std::string(xdg) + "/tcfem/nvrtc");
  if (const char* home = std::getenv("HOME"); home && *home) return CubinCache(std::string(home) + "/.cache/tcfem/nvrtc");
  return CubinCache("");
}

std::string CubinCache::path_of(const std::string& key) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.cubin", static_cast<unsigned long long>(fnv1a(key)));
  return directory_ + "/" + name;
}

std::optional<std::string> CubinCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::string head(sizeof magic - 1, '\0');
  std::uint64_t key_size = 0, cubin_size = 0;
  if (!in.read(head.data(), head.size()) || head != magic || !read_size(in, key_size) || key_size != key.size())
    return std::nullopt;
  std::string stored(key_size, '\0');
  if (!in.read(stored.data(), stored.size()) || stored != key || !read_size(in, cubin_size) || cubin_size == 0 ||
      cubin_size > (std::uint64_t(1) << 30))
    return std::nullopt;
  std::string cubin(cubin_size, '\0');
  if (!in.read(cubin.data(), cubin.size())) return std::nullopt;
  return cubin;
}

bool CubinCache::store(const std::string& key, const std::string& cubin) const {
  if (!enabled() || cubin.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec) return false;
  const std::string path = path_of(key);
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(magic, sizeof magic - 1);
    write_size(out, key.size());
    out.write(key.data(), static_cast<std::streamsize>(key.size()));
    write_size(out, cubin.size());
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(temporary, ec);
      return false;
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return false;
  }
  return true;
}

}  // namespace tcfem::jit
