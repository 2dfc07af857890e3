#pragma once
// Distributed vector: the entries of the locally stored DoFs, owned and ghost. A vector made with
// a GhostLayout (fe::make_vector on a distributed mesh) reduces its dot products over
// the owned entries of every rank and exchanges ghost values; without one (or on one rank) every
// entry is owned and the exchange does nothing.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/communicator.h"
#include "core/error.h"

namespace tcfem {

using index_t = std::int64_t;

/// The messages of a ghost exchange, by local entry indices: what a rank receives from each
/// owner of its ghosts and sends to each rank holding copies of its entries (forward direction;
/// the reverse exchange sends the same lists backwards), its owned entries as runs of equal
/// length, and its ghost entries.
struct ExchangePlan {
  struct Neighbour {
    int rank = 0;
    std::vector<std::int64_t> indices;  ///< local indices, in message order
  };
  std::vector<Neighbour> receives, sends;
  std::vector<std::int64_t> run_starts;  ///< owned entries: [start, start + run_length)
  std::size_t run_length = 0;
  std::vector<std::int64_t> ghosts;
};

/// Which local entries of a vector a rank owns and how ghost entries meet their owners
/// (implemented by fe/dof_exchange.h for the DoF layouts of a partitioned box).
class GhostLayout {
 public:
  virtual ~GhostLayout() = default;
  /// The index lists behind the exchange (for the device exchange, which runs them on GPU buffers).
  virtual const ExchangePlan& plan() const = 0;
  virtual const Communicator& communicator() const = 0;
  /// Entries stored by this rank (owned and ghost).
  virtual std::size_t n_local() const = 0;
  /// This rank's part of the dot product: the sum of a_i b_i over its owned entries.
  virtual double owned_dot(const double* a, const double* b) const = 0;
  virtual double owned_dot(const float* a, const float* b) const = 0;
  /// Ghost entries get their owners' values.
  virtual void update_ghosts(double* v) const = 0;
  virtual void update_ghosts(float* v) const = 0;
  /// Ghost entries are added to their owners' entries, then zeroed (the sum of a cg vector
  /// assembled cell by cell over the owned cells of every rank).
  virtual void add_ghosts_to_owners(double* v) const = 0;
  virtual void add_ghosts_to_owners(float* v) const = 0;
  /// Ghost entries are set to zero.
  virtual void zero_ghosts(double* v) const = 0;
  virtual void zero_ghosts(float* v) const = 0;
};

template <typename Number>
class Vector {
 public:
  Vector() = default;
  /// A vector of n_local entries, every one owned (no ghost exchange).
  explicit Vector(std::size_t n_local, Number value = Number(0)) : data_(n_local, value) {}
  /// A vector of the layout's local entries (null: as the constructor above with n_local = 0).
  explicit Vector(std::shared_ptr<const GhostLayout> layout, Number value = Number(0))
      : data_(layout ? layout->n_local() : 0, value), layout_(std::move(layout)) {}
  /// A zero vector of the same size and layout as v.
  template <typename Other>
  static Vector like(const Vector<Other>& v) {
    Vector out(v.size());
    out.layout_ = v.layout();
    return out;
  }

  std::size_t size() const { return data_.size(); }
  Number* data() { return data_.data(); }
  const Number* data() const { return data_.data(); }
  Number& operator[](std::size_t i) { return data_[i]; }
  const Number& operator[](std::size_t i) const { return data_[i]; }
  /// n entries; the layout stays when n is its size.
  void resize(std::size_t n, Number value = Number(0)) {
    data_.assign(n, value);
    if (layout_ && layout_->n_local() != n) layout_.reset();
  }
  void fill(Number v) { std::fill(data_.begin(), data_.end(), v); }
  const std::shared_ptr<const GhostLayout>& layout() const { return layout_; }
  /// Gives the vector a layout of the same size.
  void set_layout(std::shared_ptr<const GhostLayout> layout) {
    TCFEM_ASSERT(!layout || layout->n_local() == data_.size(), "layout of another size");
    layout_ = std::move(layout);
  }
  /// Whether the entries are shared with other ranks.
  bool distributed() const { return layout_ && layout_->communicator().distributed(); }
  /// Makes ghost entries equal to their owners' (nothing without other ranks). Const: ghost values
  /// are a copy of other ranks' entries, not part of this rank's value of the vector.
  void update_ghost_values() const {
    if (distributed()) layout_->update_ghosts(const_cast<Number*>(data_.data()));
  }
  /// Adds ghost entries to their owners and zeroes them (a cg vector summed cell by cell).
  void compress() {
    if (distributed()) layout_->add_ghosts_to_owners(data_.data());
  }
  /// Sets ghost entries to zero.
  void zero_ghost_values() {
    if (distributed()) layout_->zero_ghosts(data_.data());
  }

  /// The dot product over the owned entries of every rank.
  double dot(const Vector& o) const {
    check_size(o);
    if (distributed()) return layout_->communicator().sum(layout_->owned_dot(data_.data(), o.data_.data()));
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
  std::shared_ptr<const GhostLayout> layout_;
  template <typename>
  friend class Vector;
};

}  // namespace tcfem
