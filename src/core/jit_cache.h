#pragma once
// Compiled device code kept on disk between runs: NVRTC's output (a cubin) stored under a key
// (the full source and everything that shapes the compile: architecture, compiler version,
// options). A later process that asks for the same key loads the cubin instead of compiling.
// Every failure (no directory, unreadable or foreign files, a key that differs) reads as a miss,
// and a store that fails leaves no partial file behind: the cache can only save time.
#include <optional>
#include <string>

namespace tcfem::jit {

class CubinCache {
 public:
  /// A cache in `directory` (created on the first store); empty: no cache.
  explicit CubinCache(std::string directory) : directory_(std::move(directory)) {}
  /// The cache of this user: $XDG_CACHE_HOME/tcfem/nvrtc, else $HOME/.cache/tcfem/nvrtc, else none.
  static CubinCache user();

  bool enabled() const { return !directory_.empty(); }
  const std::string& directory() const { return directory_; }
  /// The cubin stored under `key`, if any.
  std::optional<std::string> load(const std::string& key) const;
  /// Stores `cubin` under `key` (written to a temporary file, then renamed); returns whether it
  /// was stored.
  bool store(const std::string& key, const std::string& cubin) const;
  /// The file that holds `key`.
  std::string path_of(const std::string& key) const;

 private:
  std::string directory_;
};

}  // namespace tcfem::jit
