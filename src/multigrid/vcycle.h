#pragma once
// The multigrid V-cycle and full multigrid over the interfaces of multigrid/interfaces.h, written
// once for every vector type (tcfem::Vector<double>, tcfem::Vector<float> on the CPU; device
// vectors in a device backend). Times every component per level.
//
// V-cycle on level l > 0 (seed 000, Algorithm 2; seed 004, Algorithm 1):
//   pre_smooth x (colors forward), r = b - A x, b_c = R r, x_c = V-cycle(l-1, 0, b_c),
//   x += P x_c, post_smooth x (colors forward as in the seeds, or backward: the adjoint sweep,
//   which makes the V-cycle symmetric for CG);
// on level 0: x = A_0^{-1} b (the coarse solver). The finest level may run fewer post-smoothing
// steps than the others (finest_post_smooth): a mixed-precision preconditioner then smooths the
// finest level in a higher precision itself (MultigridSettings::finest_post_fp64).
// Full multigrid (seed 004, Algorithm 2): b_l = R b_{l+1} down to level 0, x_0 = A_0^{-1} b_0, and
// for l = 1..L: x_l = P x_{l-1}, then one V-cycle on level l.
#include <chrono>
#include <cstddef>
#include <vector>

#include "core/error.h"
#include "multigrid/interfaces.h"

namespace tcfem::multigrid {

/// Seconds spent per component on one level (accumulated over all cycles).
struct LevelTimes {
  double smoother = 0.0, operator_apply = 0.0, transfer = 0.0, vector_ops = 0.0, coarse = 0.0;
  long smoother_calls = 0, operator_calls = 0, transfer_calls = 0, coarse_calls = 0;
  double total() const { return smoother + operator_apply + transfer + vector_ops + coarse; }
};

struct MultigridTimes {
  std::vector<LevelTimes> levels;  ///< index = level (0 coarsest)
  double conversion = 0.0;         ///< precision conversion on entry and exit of the preconditioner
  long cycles = 0;
  void reset(std::size_t n_levels) {
    levels.assign(n_levels, LevelTimes{});
    conversion = 0.0;
    cycles = 0;
  }
  double total() const {
    double t = conversion;
    for (const auto& l : levels) t += l.total();
    return t;
  }
};

/// Adds the seconds of its lifetime to a counter (synchronizing the vector type's queue first).
template <class VectorType>
class ComponentTimer {
 public:
  ComponentTimer(double& seconds, long& calls) : seconds_(seconds), start_(now()) { ++calls; }
  explicit ComponentTimer(double& seconds) : seconds_(seconds), start_(now()) {}
  ~ComponentTimer() { seconds_ += std::chrono::duration<double>(now() - start_).count(); }
  ComponentTimer(const ComponentTimer&) = delete;
  ComponentTimer& operator=(const ComponentTimer&) = delete;

 private:
  static std::chrono::steady_clock::time_point now() {
    VectorOps<VectorType>::synchronize();
    return std::chrono::steady_clock::now();
  }
  double& seconds_;
  std::chrono::steady_clock::time_point start_;
};

/// `steps` smoothing steps x <- S(x, b) in `order`, each timed as a smoother call of `times`;
/// `same_b`: the smoother's previous step had this b, unchanged since; `x_zero`: x is zero on entry.
template <class VectorType>
void smooth_timed(const Smoother<VectorType>& smoother, VectorType& x, const VectorType& b, int steps,
                  SweepOrder order, LevelTimes& times, bool same_b = false, bool x_zero = false) {
  for (int i = 0; i < steps; ++i) {
    ComponentTimer<VectorType> timer(times.smoother, times.smoother_calls);
    if (x_zero && i == 0 && !same_b) smoother.smooth_from_zero(x, b, order);
    else if (same_b || i > 0) smoother.smooth_same_b(x, b, order);
    else smoother.smooth(x, b, order);
  }
}

template <class VectorType>
class VCycle {
 public:
  using Ops = VectorOps<VectorType>;
  struct Level {
    const LevelOperator<VectorType>* op = nullptr;
    const Smoother<VectorType>* smoother = nullptr;  ///< unused on level 0
    const Transfer<VectorType>* transfer = nullptr;  ///< between this level and the next coarser one
  };

  /// finest_post_smooth < 0: post_smooth steps on the finest level too.
  VCycle(std::vector<Level> levels, const CoarseSolver<VectorType>& coarse, int pre_smooth, int post_smooth,
         SweepOrder post_order, int finest_post_smooth = -1)
      : levels_(std::move(levels)),
        coarse_(&coarse),
        pre_(pre_smooth),
        post_(post_smooth),
        finest_post_(finest_post_smooth < 0 ? post_smooth : finest_post_smooth),
        post_order_(post_order) {
    TCFEM_ASSERT(!levels_.empty(), "a V-cycle needs at least one level");
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      TCFEM_ASSERT(levels_[l].op, "a level without operator");
      TCFEM_ASSERT(l == 0 || (levels_[l].smoother && levels_[l].transfer), "a level without smoother or transfer");
      const std::size_t n = levels_[l].op->size();
      // the finest level's x and b are the caller's: no storage for them
      const bool top = l + 1 == levels_.size();
      x_.push_back(Ops::make(top ? 0 : n));
      b_.push_back(Ops::make(top ? 0 : n));
      r_.push_back(Ops::make(n));
    }
    times_.reset(levels_.size());
  }

  int n_levels() const { return static_cast<int>(levels_.size()); }
  std::size_t level_size(int level) const { return levels_.at(level).op->size(); }
  int finest() const { return n_levels() - 1; }

  /// One V-cycle on the finest level; x holds the initial guess and receives the result.
  /// x_zero: the initial guess is zero (a preconditioner's application), which the first
  /// pre-smoothing step may use (Smoother::smooth_from_zero).
  void cycle(VectorType& x, const VectorType& b, bool x_zero = false) const {
    ++times_.cycles;
    cycle_on_level(finest(), x, b, x_zero);
  }

  /// One V-cycle on level `level` (0: the coarse solve), x holding the initial guess; for drivers
  /// that cycle on every level (MixedFullMultigrid). Not counted in times().cycles.
  void cycle_on(int level, VectorType& x, const VectorType& b, bool x_zero = false) const {
    TCFEM_ASSERT(level >= 0 && level <= finest(), "cycle_on: no such level");
    cycle_on_level(level, x, b, x_zero);
  }

  /// One V-cycle on zero vectors of the level below the finest (nothing if there is one level),
  /// timed nowhere: it launches every kernel of the cycle once, so that one-time costs (a GPU
  /// backend loads its kernels on their first launch) fall into the setup, not the first solve.
  void warm_up() const {
    if (n_levels() < 2) return;
    const int l = finest() - 1;
    const MultigridTimes saved = times_;
    Ops::set_zero(x_[l]);
    Ops::set_zero(b_[l]);
    cycle_on_level(l, x_[l], b_[l]);
    times_ = saved;
  }

  /// Full multigrid: x = FMG(b) (x's input is ignored).
  void full_multigrid(VectorType& x, const VectorType& b) const {
    ++times_.cycles;
    const int top = finest();
    if (top == 0) {
      coarse_solve(x, b);
      return;
    }
    {
      Timer t(times_.levels[top].transfer, times_.levels[top].transfer_calls);
      levels_[top].transfer->restrict_to_coarse(b_[top - 1], b);
    }
    for (int l = top - 1; l >= 1; --l) {
      Timer t(times_.levels[l].transfer, times_.levels[l].transfer_calls);
      levels_[l].transfer->restrict_to_coarse(b_[l - 1], b_[l]);
    }
    coarse_solve(x_[0], b_[0]);
    for (int l = 1; l <= top; ++l) {
      VectorType& xl = l == top ? x : x_[l];
      const VectorType& bl = l == top ? b : b_[l];
      {
        Timer t(times_.levels[l].transfer, times_.levels[l].transfer_calls);
        levels_[l].transfer->prolongate(xl, x_[l - 1]);
      }
      cycle_on_level(l, xl, bl);
    }
  }

  MultigridTimes& times() const { return times_; }

 private:
  using Timer = ComponentTimer<VectorType>;

  void coarse_solve(VectorType& x, const VectorType& b) const {
    Timer t(times_.levels[0].coarse, times_.levels[0].coarse_calls);
    coarse_->solve(x, b);
  }

  void cycle_on_level(int l, VectorType& x, const VectorType& b, bool x_zero = false) const {
    if (l == 0) {
      coarse_solve(x, b);
      return;
    }
    const Level& level = levels_[l];
    LevelTimes& t = times_.levels[l];
    smooth_timed(*level.smoother, x, b, pre_, SweepOrder::forward, t, false, x_zero);
    {
      Timer timer(t.operator_apply, t.operator_calls);
      level.op->vmult(r_[l], x);
    }
    {
      Timer timer(t.vector_ops);
      Ops::residual_from_product(r_[l], b);
    }
    {
      Timer timer(t.transfer, t.transfer_calls);
      level.transfer->restrict_to_coarse(b_[l - 1], r_[l]);
    }
    {
      Timer timer(times_.levels[l - 1].vector_ops);
      Ops::set_zero(x_[l - 1]);
    }
    cycle_on_level(l - 1, x_[l - 1], b_[l - 1], true);
    {
      Timer timer(t.transfer, t.transfer_calls);
      level.transfer->prolongate(r_[l], x_[l - 1]);
    }
    {
      Timer timer(t.vector_ops);
      Ops::add(x, r_[l]);
    }
    // b is unchanged since the pre-smoothing by the same smoother (the coarse correction changes x)
    smooth_timed(*level.smoother, x, b, l == finest() ? finest_post_ : post_, post_order_, t, pre_ > 0);
  }

  std::vector<Level> levels_;
  const CoarseSolver<VectorType>* coarse_;
  int pre_, post_, finest_post_;
  SweepOrder post_order_;
  mutable std::vector<VectorType> x_, b_, r_;
  mutable MultigridTimes times_;
};

}  // namespace tcfem::multigrid
