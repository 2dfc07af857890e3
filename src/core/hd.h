#pragma once
// Host/device qualifiers and the thread-group abstraction that lets one kernel body run on the
// GPU (a thread block) and on the CPU (a single "thread"), so CPU tests exercise device code paths.
#if defined(__CUDACC__)
#define TCFEM_HD __host__ __device__
#else
#define TCFEM_HD
#endif

namespace tcfem {

/// A cooperating group of threads: a CUDA thread block on the device, one thread on the host.
struct ThreadGroup {
  int rank = 0;
  int size = 1;
  TCFEM_HD void sync() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
};

/// dst += v, atomically on the device (several blocks may update one entry), plainly on the host.
template <typename Number>
TCFEM_HD inline void atomic_add(Number* dst, Number v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(dst, v);
#else
  *dst += v;
#endif
}

}  // namespace tcfem
