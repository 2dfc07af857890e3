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

/// *p for data that no thread changes during the launch: through the read-only data cache on the
/// device, a plain load on the host.
template <typename Number>
TCFEM_HD inline Number load_read_only(const Number* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

/// *p, read once: on the device a streaming load (evict-first in L1 and L2, for data that no other
/// thread reads again, such as stored quadrature-point data); a plain load on the host.
template <typename Number>
TCFEM_HD inline Number load_streaming(const Number* p) {
#if defined(__CUDA_ARCH__)
  return __ldcs(p);
#else
  return *p;
#endif
}

}  // namespace tcfem
