#pragma once
// Host-side parallel loops over index ranges with std::thread. The thread count is the hardware
// concurrency, or what set_host_threads chose (`tcfem --threads N`; 1 runs everything on the
// calling thread).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tcfem {

inline constexpr int max_host_threads = 1024;

namespace detail {
inline std::atomic<int>& host_thread_setting() {
  static std::atomic<int> n{0};
  return n;
}
}  // namespace detail

/// Sets the threads of the host-side loops: n >= 1, or 0 for all hardware threads (the default).
inline void set_host_threads(int n) { detail::host_thread_setting() = std::clamp(n, 0, max_host_threads); }

/// Threads used by the host-side setup and post-processing loops.
inline int host_threads() {
  if (const int n = detail::host_thread_setting(); n >= 1) return n;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Splits [begin, end) into contiguous chunks, one per thread, and calls f(chunk_begin, chunk_end,
/// thread) for each; thread t gets the t-th chunk in order. Chunks have at least `grain` indices
/// (fewer threads on small ranges). When chunks throw, the exception of the lowest chunk is
/// rethrown (the same one whatever the timing).
template <typename F>
void parallel_chunks(std::size_t begin, std::size_t end, F&& f, int threads = host_threads(), std::size_t grain = 1) {
  if (end <= begin) return;
  const std::size_t n = end - begin;
  const std::size_t t = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, threads)),
                                              std::max<std::size_t>(1, n / std::max<std::size_t>(1, grain)));
  if (t == 1) {
    f(begin, end, 0);
    return;
  }
  std::vector<std::exception_ptr> errors(t);
  std::vector<std::thread> pool;
  pool.reserve(t);
  for (std::size_t i = 0; i < t; ++i) {
    const std::size_t b = begin + n * i / t, e = begin + n * (i + 1) / t;
    pool.emplace_back([&, b, e, i] {
      try {
        f(b, e, static_cast<int>(i));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace tcfem
