#pragma once
// Asynchronous global -> shared copies of single values (PTX cp.async, sm_80 and newer), with a
// host twin of the same interface that copies at once. A thread issues copies, closes them into a
// group (async_commit), and later waits until at most N of its groups are still in flight
// (async_wait<N>); a block barrier after the wait makes the copied values visible to every thread
// of the block. The copies take no registers and their latencies overlap: a block issues all the
// loads of a gather at once, and a group can stay in flight while the block computes.
#include "core/hd.h"

namespace tcfem::arch {

/// A shared-memory array as the destination of asynchronous copies: on the device its 32-bit
/// shared-window address, converted once (a copy to element i then needs no address conversion),
/// on the host the pointer.
template <typename T>
struct SharedArray {
#if defined(__CUDA_ARCH__)
  unsigned address = 0;
  TCFEM_HD explicit SharedArray(T* p) : address(static_cast<unsigned>(__cvta_generic_to_shared(p))) {}
#else
  T* pointer = nullptr;
  TCFEM_HD explicit SharedArray(T* p) : pointer(p) {}
#endif
};

/// a[i] = *src (4- or 8-byte values, a in shared memory, src in global memory), asynchronously.
template <typename T>
TCFEM_HD inline void async_copy(const SharedArray<T>& a, int i, const T* src) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async of 4- or 8-byte values");
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(a.address + static_cast<unsigned>(i * sizeof(T))), "l"(src),
               "n"(static_cast<int>(sizeof(T)))
               : "memory");
#else
  a.pointer[i] = *src;
#endif
}

/// a[i] = copy ? *src : 0, asynchronously. With copy == false nothing is read (the zero fill of
/// cp.async with source size 0), but src must still be a valid address.
template <typename T>
TCFEM_HD inline void async_copy_or_zero(const SharedArray<T>& a, int i, const T* src, bool copy) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async of 4- or 8-byte values");
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(a.address + static_cast<unsigned>(i * sizeof(T))),
               "l"(src), "n"(static_cast<int>(sizeof(T))), "r"(copy ? static_cast<int>(sizeof(T)) : 0)
               : "memory");
#else
  a.pointer[i] = copy ? *src : T(0);
#endif
}

/// a[i .. i + 16 / sizeof(T)) = src[0 .. 16 / sizeof(T)), asynchronously and past L1 (cp.async.cg):
/// a + i and src must be 16-byte aligned. For streams read once (stored quadrature data).
template <typename T>
TCFEM_HD inline void async_copy16(const SharedArray<T>& a, int i, const T* src) {
  static_assert(16 % sizeof(T) == 0, "16-byte copies of whole values");
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a.address + static_cast<unsigned>(i * sizeof(T))),
               "l"(src)
               : "memory");
#else
  for (int j = 0; j < int(16 / sizeof(T)); ++j) a.pointer[i + j] = src[j];
#endif
}

/// Requests the 128-byte line holding *p into L2 (prefetch.global.L2) without waiting for it and
/// without a register: a later load of the line hits L2 instead of DRAM. The host twin does nothing.
TCFEM_HD inline void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
#else
  (void)p;
#endif
}

/// Closes the copies this thread issued since the last commit into one group.
TCFEM_HD inline void async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `pending` of this thread's committed groups are in flight.
template <int pending>
TCFEM_HD inline void async_wait() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
}

}  // namespace tcfem::arch
