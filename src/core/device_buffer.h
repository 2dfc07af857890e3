#pragma once
// Owning device allocation (cudaMalloc / cudaFree) with checked copies, and pinned host memory.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "core/cuda_check.h"

namespace tcfem {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { allocate(n); }
  explicit DeviceBuffer(const std::vector<T>& host) {
    allocate(host.size());
    copy_from_host(host.data(), host.size());
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) {
    o.ptr_ = nullptr;
    o.n_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
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
    TCFEM_CUDA_CHECK(cudaMalloc(&ptr_, n * sizeof(T)));
    n_ = n;
  }
  void copy_from_host(const T* host, std::size_t n) {
    TCFEM_ASSERT(n <= n_, "device buffer too small");
    if (n) TCFEM_CUDA_CHECK(cudaMemcpy(ptr_, host, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  void copy_to_host(T* host, std::size_t n) const {
    TCFEM_ASSERT(n <= n_, "device buffer too small");
    if (n) TCFEM_CUDA_CHECK(cudaMemcpy(host, ptr_, n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    copy_to_host(h.data(), n_);
    return h;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  void release() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

/// Owning page-locked host allocation (cudaMallocHost / cudaFreeHost): the staging buffers of
/// messages between devices and MPI (asynchronous copies need them).
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t n) { allocate(n); }
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) {
    o.ptr_ = nullptr;
    o.n_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
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
    TCFEM_CUDA_CHECK(cudaMallocHost(&ptr_, n * sizeof(T)));
    n_ = n;
  }
  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return n_; }

 private:
  void release() noexcept {
    if (ptr_) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace tcfem
