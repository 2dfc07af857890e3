#pragma once
// The pieces a V-cycle is made of, as interfaces over a vector type: the level operator, the
// smoother, the transfer between two levels, the coarse solver, and the vector operations the
// cycle itself performs. The CPU backend implements them for tcfem::Vector<Number> (Number =
// double or float); a device backend implements the same interfaces for its device vectors and
// reuses VCycle (multigrid/vcycle.h) unchanged.
#include <cstddef>

#include "core/vector.h"
#include "multigrid/multigrid_config.h"

namespace tcfem::multigrid {

/// dst = A src
template <class VectorType>
class LevelOperator {
 public:
  virtual ~LevelOperator() = default;
  virtual void vmult(VectorType& dst, const VectorType& src) const = 0;
  virtual std::size_t size() const = 0;
};

/// x <- S(x, b): one smoothing step for A x = b.
template <class VectorType>
class Smoother {
 public:
  virtual ~Smoother() = default;
  virtual void smooth(VectorType& x, const VectorType& b, SweepOrder order) const = 0;
  /// The same step when this smoother's previous step had the same b, unchanged since (a V-cycle's
  /// post-smoothing, a second pre-smoothing step): what the smoother derived from b alone, such
  /// as the ghost values of a distributed b, may be kept.
  virtual void smooth_same_b(VectorType& x, const VectorType& b, SweepOrder order) const { smooth(x, b, order); }
  /// The same step when x is zero on entry (the pre-smoothing of a coarse-grid correction, a
  /// preconditioner applied from zero): the residual b - A x is b itself, so a smoother may skip the
  /// operator apply it would spend on it; the result is smooth's.
  virtual void smooth_from_zero(VectorType& x, const VectorType& b, SweepOrder order) const { smooth(x, b, order); }
};

/// Grid transfer between a coarse level and the next finer one.
template <class VectorType>
class Transfer {
 public:
  virtual ~Transfer() = default;
  /// fine = P coarse (overwrites fine)
  virtual void prolongate(VectorType& fine, const VectorType& coarse) const = 0;
  /// coarse = P^T fine (overwrites coarse)
  virtual void restrict_to_coarse(VectorType& coarse, const VectorType& fine) const = 0;
};

/// x = A_0^{-1} b on the coarsest level (exactly or to a tight tolerance).
template <class VectorType>
class CoarseSolver {
 public:
  virtual ~CoarseSolver() = default;
  virtual void solve(VectorType& x, const VectorType& b) const = 0;
};

/// The pieces of a level that this rank does not store (the levels of a distributed hierarchy
/// below its gathered level live on rank 0 alone): the other ranks run the cycle's loops over
/// them with vectors of size 0, and these do nothing.
template <class VectorType>
struct AbsentLevel final : LevelOperator<VectorType>, Smoother<VectorType>, Transfer<VectorType>,
                           CoarseSolver<VectorType> {
  void vmult(VectorType&, const VectorType&) const override {}
  std::size_t size() const override { return 0; }
  void smooth(VectorType&, const VectorType&, SweepOrder) const override {}
  void prolongate(VectorType&, const VectorType&) const override {}
  void restrict_to_coarse(VectorType&, const VectorType&) const override {}
  void solve(VectorType&, const VectorType&) const override {}
  static const AbsentLevel& instance() {
    static const AbsentLevel absent;
    return absent;
  }
};

/// The vector operations of the cycle; specialized per vector type.
template <class VectorType>
struct VectorOps;

template <typename Number>
struct VectorOps<Vector<Number>> {
  static Vector<Number> make(std::size_t n) { return Vector<Number>(n); }
  static void set_zero(Vector<Number>& x) { x.fill(Number(0)); }
  /// r = b - r (r holds A x on entry)
  static void residual_from_product(Vector<Number>& r, const Vector<Number>& b) {
    Number* rp = r.data();
    const Number* bp = b.data();
    for (std::size_t i = 0; i < r.size(); ++i) rp[i] = bp[i] - rp[i];
  }
  /// x += y
  static void add(Vector<Number>& x, const Vector<Number>& y) { x.add(Number(1), y); }
  static void copy(Vector<Number>& x, const Vector<Number>& y) {
    std::copy(y.data(), y.data() + y.size(), x.data());
  }
  static double norm(const Vector<Number>& x) { return x.norm(); }
  /// dst = src, rounded to Number
  template <typename From>
  static void convert(Vector<Number>& dst, const Vector<From>& src) {
    Number* d = dst.data();
    const From* s = src.data();
    for (std::size_t i = 0; i < dst.size(); ++i) d[i] = static_cast<Number>(s[i]);
  }
  /// Waits for queued work (nothing on the CPU); called before reading the clock.
  static void synchronize() {}
};

}  // namespace tcfem::multigrid
