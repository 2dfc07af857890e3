#pragma once
// Owning device allocation (cudaMalloc / cudaFree) with checked copies, and pinned host memory.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "core/cuda_check.h"

namespace tcfem {

namespace detail {
struct DeviceMemory {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    TCFEM_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  static void release(void* p) noexcept { cudaFree(p); }
};
struct PinnedMemory {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    TCFEM_CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
  static void release(void* p) noexcept { cudaFreeHost(p); }
};

/// An owning array of n T in the memory of `Memory` (movable, not copyable).
template <typename T, class Memory>
class OwnedArray {
 public:
  OwnedArray() = default;
  explicit OwnedArray(std::size_t n) { allocate(n); }
  ~OwnedArray() { release(); }
  OwnedArray(const OwnedArray&) = delete;
  OwnedArray& operator=(const OwnedArray&) = delete;
  OwnedArray(OwnedArray&& o) noexcept : ptr_(o.ptr_), n_(o.n_) {
    o.ptr_ = nullptr;
    o.n_ = 0;
  }
  OwnedArray& operator=(OwnedArray&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = o.ptr_;
      n_ = o.n_;
      o.ptr_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }
  void allocate(std::size_t n) {
    release();
    if (n == 0) return;
    ptr_ = static_cast<T*>(Memory::allocate(n * sizeof(T)));
    n_ = n;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  void release() noexcept {
    if (ptr_) Memory::release(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};
}  // namespace detail

/// Device memory with checked copies to and from the host.
template <typename T>
class DeviceBuffer : public detail::OwnedArray<T, detail::DeviceMemory> {
  using Base = detail::OwnedArray<T, detail::DeviceMemory>;

 public:
  using Base::Base;
  explicit DeviceBuffer(const std::vector<T>& host) : Base(host.size()) { copy_from_host(host.data(), host.size()); }
  void copy_from_host(const T* host, std::size_t n) {
    TCFEM_ASSERT(n <= this->size(), "device buffer too small");
    if (n) TCFEM_CUDA_CHECK(cudaMemcpy(this->data(), host, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  void copy_to_host(T* host, std::size_t n) const {
    TCFEM_ASSERT(n <= this->size(), "device buffer too small");
    if (n) TCFEM_CUDA_CHECK(cudaMemcpy(host, this->data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(this->size());
    copy_to_host(h.data(), this->size());
    return h;
  }
};

/// Page-locked host memory (cudaMallocHost): the staging buffers of messages between devices and
/// MPI.
template <typename T>
using PinnedBuffer = detail::OwnedArray<T, detail::PinnedMemory>;

}  // namespace tcfem
