// The on-disk cache of compiled device code: a stored cubin comes back only for its exact key,
// and damaged, foreign or missing files, or an unusable directory, read as misses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/jit_cache.h"

namespace {
using tcfem::jit::CubinCache;

std::string fresh_directory() {
  std::random_device rd;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tcfem_cubin_cache_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  return dir.string() + "/nested/nvrtc";  // created by the first store
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

TEST(CubinCache, StoredCubinComesBackForItsKeyOnly) {
  const CubinCache cache(fresh_directory());
  std::string key = "nvrtc 13.0 --gpu-architecture=sm_90\nsource";
  key += '\0';  // keys are byte strings
  key += "more source";
  const std::string other = key + " ";
  const std::string cubin = random_bytes(100000, 7);
  EXPECT_FALSE(cache.load(key).has_value());
  ASSERT_TRUE(cache.store(key, cubin));
  const auto back = cache.load(key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, cubin);
  EXPECT_FALSE(cache.load(other).has_value());
  // a second store replaces the first, leaving no temporary files
  const std::string cubin2 = random_bytes(5000, 8);
  ASSERT_TRUE(cache.store(key, cubin2));
  EXPECT_EQ(*cache.load(key), cubin2);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache.directory())) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".cubin") << e.path();
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(std::filesystem::path(cache.directory()).parent_path().parent_path());
}

TEST(CubinCache, DamagedOrForeignFilesAreMisses) {
  const CubinCache cache(fresh_directory());
  const std::string key = "key", cubin = random_bytes(4096, 3);
  ASSERT_TRUE(cache.store(key, cubin));
  const std::string path = cache.path_of(key);
  const auto size = std::filesystem::file_size(path);
  // truncated
  std::filesystem::resize_file(path, size - 10);
  EXPECT_FALSE(cache.load(key).has_value());
  // a file of another program under the same name
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "not a cache file at all";
  }
  EXPECT_FALSE(cache.load(key).has_value());
  // empty
  { std::ofstream out(path, std::ios::binary | std::ios::trunc); }
  EXPECT_FALSE(cache.load(key).has_value());
  std::filesystem::remove_all(std::filesystem::path(cache.directory()).parent_path().parent_path());
}

TEST(CubinCache, UnusableDirectoryOrNoneIsNoCache) {
  const CubinCache none("");
  EXPECT_FALSE(none.enabled());
  EXPECT_FALSE(none.store("k", "cubin"));
  EXPECT_FALSE(none.load("k").has_value());
  // a directory below a regular file cannot be created
  const auto file = std::filesystem::temp_directory_path() / ("tcfem_cubin_file_" + std::to_string(::getpid()));
  { std::ofstream out(file); out << "x"; }
  const CubinCache blocked((file / "nvrtc").string());
  EXPECT_FALSE(blocked.store("k", "cubin"));
  EXPECT_FALSE(blocked.load("k").has_value());
  std::filesystem::remove(file);
}

TEST(CubinCache, UserCacheFollowsXdgThenHome) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/some/cache", 1);
  EXPECT_EQ(CubinCache::user().directory(), "/some/cache/tcfem/nvrtc");
  ::unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME"); home && *home) {
    EXPECT_EQ(CubinCache::user().directory(), std::string(home) + "/.cache/tcfem/nvrtc");
  }
  if (xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}
}  // namespace
