#pragma once
// Vectors of the device backend of multigrid: DeviceVector<Number> owns a device allocation of
// n entries (double or float), and VectorOps<DeviceVector<Number>> gives VCycle (multigrid/vcycle.h)
// its vector operations on the device. The kernels run asynchronously on the default stream;
// reductions (dot, norm) return to the host and so wait for the queued work. Reductions add in
// double in a fixed order (one partial sum per block of a fixed grid, then one block), so repeated
// runs give the same bits. Includes CUDA headers: for .cu files and device tests only.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/device_buffer.h"
#include "multigrid/interfaces.h"

namespace tcfem {
class Communicator;
}

namespace tcfem::multigrid {

template <typename Number>
class DeviceVector {
 public:
  using value_type = Number;
  DeviceVector() = default;
  explicit DeviceVector(std::size_t n) : buffer_(n) {}
  DeviceVector(DeviceVector&&) noexcept = default;
  DeviceVector& operator=(DeviceVector&&) noexcept = default;

  std::size_t size() const { return buffer_.size(); }
  Number* data() { return buffer_.data(); }
  const Number* data() const { return buffer_.data(); }
  void resize(std::size_t n) {
    if (n != size()) buffer_.allocate(n);
  }
  void copy_from_host(const std::vector<Number>& h) {
    resize(h.size());
    buffer_.copy_from_host(h.data(), h.size());
  }
  void copy_from_host(const Number* h, std::size_t n) {
    resize(n);
    buffer_.copy_from_host(h, n);
  }
  /// Synchronous copy to the host (waits for the queued work).
  std::vector<Number> to_host() const { return buffer_.to_host(); }
  void copy_to_host(Number* h) const { buffer_.copy_to_host(h, size()); }

 private:
  DeviceBuffer<Number> buffer_;
};

/// Level-1 operations on device vectors (asynchronous unless they return a value).
namespace device {
/// The reductions of vectors spread over ranks (each rank storing its owned entries and ghost
/// copies of its neighbours'): a rank sums its owned entries (`owned`: a device array of one byte
/// per local entry, 1 where owned) and the sums are added over `comm`. Null, or a serial
/// communicator: a vector of one process.
struct DeviceReduction {
  const std::uint8_t* owned = nullptr;
  const Communicator* comm = nullptr;
};
template <typename Number>
void set_zero(DeviceVector<Number>& x);
/// x = value everywhere
template <typename Number>
void fill(DeviceVector<Number>& x, Number value);
/// dst = src
template <typename Number>
void copy(DeviceVector<Number>& dst, const DeviceVector<Number>& src);
/// y += a x
template <typename Number>
void axpy(double a, const DeviceVector<Number>& x, DeviceVector<Number>& y);
/// y = x + a y
template <typename Number>
void sadd(double a, const DeviceVector<Number>& x, DeviceVector<Number>& y);
/// y = a x
template <typename Number>
void scale_copy(double a, const DeviceVector<Number>& x, DeviceVector<Number>& y);
/// r = b - r
template <typename Number>
void residual_from_product(DeviceVector<Number>& r, const DeviceVector<Number>& b);
/// z = d .* r (entrywise)
template <typename Number>
void multiply(const DeviceVector<Number>& d, const DeviceVector<Number>& r, DeviceVector<Number>& z);
/// sum_i x_i y_i, accumulated in double (blocks until the result is on the host); over the ranks
/// of `red` where given
template <typename Number>
double dot(const DeviceVector<Number>& x, const DeviceVector<Number>& y, const DeviceReduction* red = nullptr);
template <typename Number>
double norm(const DeviceVector<Number>& x, const DeviceReduction* red = nullptr);
/// c = V^T w for the first k columns of V (column-major, n rows, leading dimension n), c (k
/// entries) on the device: the block inner products of the Arnoldi orthogonalization as one
/// tall-skinny product, one pass over V and w per 8 columns on a fixed grid (deterministic); over
/// the ranks of `red` where given (the k sums travel through the host). `with_square`: also
/// c[k] = w^T w, in the same pass and reduction.
void multi_dot(const double* V, std::size_t n, int k, const double* w, double* c,
               const DeviceReduction* red = nullptr, bool with_square = false);
/// y += alpha V a for the first k columns of V (column-major, n rows), a (k entries) on the device.
void multi_axpy(double alpha, const double* V, std::size_t n, int k, const double* a, double* y);
/// dst = src converted entrywise (round to nearest), sizes equal
template <typename To, typename From>
void convert(DeviceVector<To>& dst, const DeviceVector<From>& src);
/// Waits for all queued device work and reports asynchronous kernel errors.
void synchronize();
/// Whether VectorOps::synchronize (called by VCycle around every timed component) waits for the
/// device: on, the per-component times are device times; off (the default), nothing waits and
/// those times only measure the host's launch work (the solve then runs without a pause per
/// component, and reports leave the component times out).
void set_component_timing(bool on);
bool component_timing();
}  // namespace device

template <typename Number>
struct VectorOps<DeviceVector<Number>> {
  static DeviceVector<Number> make(std::size_t n) {
    DeviceVector<Number> v(n);
    device::set_zero(v);
    return v;
  }
  static void set_zero(DeviceVector<Number>& x) { device::set_zero(x); }
  static void residual_from_product(DeviceVector<Number>& r, const DeviceVector<Number>& b) {
    device::residual_from_product(r, b);
  }
  static void add(DeviceVector<Number>& x, const DeviceVector<Number>& y) { device::axpy(1.0, y, x); }
  static void copy(DeviceVector<Number>& x, const DeviceVector<Number>& y) { device::copy(x, y); }
  static double norm(const DeviceVector<Number>& x) { return device::norm(x); }
  /// dst = src, rounded to Number
  template <typename From>
  static void convert(DeviceVector<Number>& dst, const DeviceVector<From>& src) {
    device::convert(dst, src);
  }
  static void synchronize() {
    if (device::component_timing()) device::synchronize();
  }
};

}  // namespace tcfem::multigrid
