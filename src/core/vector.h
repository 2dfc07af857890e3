#pragma once
// Distributed-ready vector: entries of the locally stored DoFs (owned and ghost). A single process
// owns all entries; ghost exchange is then a no-op.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace tcfem {

using index_t = std::int64_t;

template <typename Number>
class Vector {
 public:
  Vector() = default;
  explicit Vector(std::size_t n_local, Number value = Number(0)) : data_(n_local, value) {}

  std::size_t size() const { return data_.size(); }
  Number* data() { return data_.data(); }
  const Number* data() const { return data_.data(); }
  Number& operator[](std::size_t i) { return data_[i]; }
  const Number& operator[](std::size_t i) const { return data_[i]; }
  void resize(std::size_t n, Number value = Number(0)) { data_.assign(n, value); }
  void fill(Number v) { std::fill(data_.begin(), data_.end(), v); }
  /// Makes ghost entries consistent with their owners (no-op for a single process).
  void update_ghost_values() const {}

  double dot(const Vector& o) const {
    check_size(o);
    double s = 0.0;
    for (std::size_t i = 0; i < data_.size(); ++i) s += double(data_[i]) * double(o.data_[i]);
    return s;
  }
  double norm() const { return std::sqrt(dot(*this)); }
  /// this += a * x
  void add(Number a, const Vector& x) {
    check_size(x);
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] += a * x.data_[i];
  }
  /// this = x + a * this
  void sadd(Number a, const Vector& x) {
    check_size(x);
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = x.data_[i] + a * data_[i];
  }

 private:
  void check_size(const Vector& o) const {
    TCFEM_ASSERT(o.size() == size(), "vector sizes differ");
  }
  std::vector<Number> data_;
};

}  // namespace tcfem
