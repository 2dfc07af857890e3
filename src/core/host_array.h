#pragma once
// Host arrays whose entries are not zeroed on allocation: a large array is then first touched (its
// pages faulted in) by the parallel loop that fills it, on every thread, instead of by one thread
// zeroing it. For arrays every entry of which the filling loop writes.
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace tcfem {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  /// Default-initializes (for arithmetic types: leaves the value unset).
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using HostArray = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace tcfem
