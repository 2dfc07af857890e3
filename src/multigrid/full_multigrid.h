#pragma once
// Full multigrid with the V-cycles in a lower precision than the solution: seed 004 Algorithm 2
// (b restricted to every level, the coarsest level solved, then on each finer level the coarser
// solution interpolated and improved by one V-cycle) with every level's V-cycle applied as a
// correction to a residual formed in the high precision, as the outer solver applies its
// preconditioner (seed 000 Section 7.1):
//
//   b_L = b, b_{l-1} = R b_l                                   (Hi)
//   x_0 = A_0^{-1} b_0                                          (Lo coarse solver)
//   for l = 1..L:  x_l = P x_{l-1},  r_l = b_l - A_l x_l        (Hi)
//                  x_l += V_l(r_l)                              (V-cycle on level l in Lo, zero start)
//                  [l = L: the post-smoothing steps in Hi, x_L <- S(x_L, b_L)]
//
// A V-cycle in Lo on the solution itself (VCycle::full_multigrid with Lo vectors) rounds its
// residuals at eps_low |A| |x|, a relative residual of about eps_low * cond(A_l): on 192^3 cells of
// Q3 an fp32 full-multigrid cycle ends at ||b - Ax|| / ||b|| = 1.3e-4, where the fp64 one reaches
// 3e-8 (docs/notebook/performance_history.md). Here each V-cycle only computes a correction, whose rounding is
// relative to the correction, and the result is that of the fp64 full multigrid.
#include <cstddef>
#include <vector>

#include "core/error.h"
#include "multigrid/interfaces.h"
#include "multigrid/vcycle.h"

namespace tcfem::multigrid {

template <class Hi, class Lo>
class MixedFullMultigrid {
 public:
  using HiOps = VectorOps<Hi>;
  using LoOps = VectorOps<Lo>;
  struct Level {
    const LevelOperator<Hi>* op = nullptr;        ///< unused on level 0
    const Transfer<Hi>* transfer = nullptr;       ///< between this level and the next coarser one
  };

  /// `levels` (0 coarsest) in Hi, the V-cycle in Lo over the same levels; `finest_post` (may be
  /// null): the finest level's post-smoother in Hi, run `post_steps` times in `post_order` after
  /// that level's V-cycle (MultigridSettings::finest_post_fp64: the V-cycle then has no
  /// post-smoothing on the finest level).
  MixedFullMultigrid(std::vector<Level> levels, const VCycle<Lo>& cycle, const Smoother<Hi>* finest_post,
                     int post_steps, SweepOrder post_order)
      : levels_(std::move(levels)),
        cycle_(&cycle),
        finest_post_(finest_post),
        post_steps_(post_steps),
        post_order_(post_order) {
    const int n = static_cast<int>(levels_.size());
    TCFEM_ASSERT(n == cycle.n_levels() && n >= 1, "MixedFullMultigrid: level counts differ");
    for (int l = 0; l < n; ++l) {
      TCFEM_ASSERT(l == 0 || (levels_[l].op && levels_[l].transfer), "MixedFullMultigrid: a level without operator");
      const std::size_t size = l == 0 ? cycle.level_size(0) : levels_[l].op->size();
      const bool top = l + 1 == n;
      x_.push_back(HiOps::make(top ? 0 : size));  // the finest x and b are the caller's
      b_.push_back(HiOps::make(top ? 0 : size));
      r_.push_back(HiOps::make(l == 0 ? 0 : size));
      rl_.push_back(LoOps::make(size));
      zl_.push_back(LoOps::make(size));
    }
  }

  /// Device or host bytes of its vectors.
  std::size_t vector_bytes(std::size_t hi_bytes, std::size_t lo_bytes) const {
    std::size_t s = 0;
    for (std::size_t l = 0; l < levels_.size(); ++l)
      s += (x_[l].size() + b_[l].size() + r_[l].size()) * hi_bytes + (rl_[l].size() + zl_[l].size()) * lo_bytes;
    return s;
  }

  /// x = FMG(b) (x's input is ignored); timed into the V-cycle's MultigridTimes (one cycle).
  void run(Hi& x, const Hi& b) const {
    MultigridTimes& times = cycle_->times();
    ++times.cycles;
    const int top = static_cast<int>(levels_.size()) - 1;
    for (int l = top; l >= 1; --l) {
      Timer t(times.levels[l].transfer, times.levels[l].transfer_calls);
      levels_[l].transfer->restrict_to_coarse(b_[l - 1], l == top ? b : b_[l]);
    }
    Hi& x0 = top == 0 ? x : x_[0];
    {
      Timer t(times.conversion);
      LoOps::convert(rl_[0], top == 0 ? b : b_[0]);
    }
    cycle_->cycle_on(0, zl_[0], rl_[0]);
    {
      Timer t(times.conversion);
      HiOps::convert(x0, zl_[0]);
    }
    for (int l = 1; l <= top; ++l) {
      Hi& xl = l == top ? x : x_[l];
      const Hi& bl = l == top ? b : b_[l];
      LevelTimes& lt = times.levels[l];
      {
        Timer t(lt.transfer, lt.transfer_calls);
        levels_[l].transfer->prolongate(xl, x_[l - 1]);
      }
      {
        Timer t(lt.operator_apply, lt.operator_calls);
        levels_[l].op->vmult(r_[l], xl);
      }
      {
        Timer t(lt.vector_ops);
        HiOps::residual_from_product(r_[l], bl);
      }
      {
        Timer t(times.conversion);
        LoOps::convert(rl_[l], r_[l]);
        LoOps::set_zero(zl_[l]);
      }
      cycle_->cycle_on(l, zl_[l], rl_[l], true);
      {
        Timer t(times.conversion);
        HiOps::convert(r_[l], zl_[l]);
      }
      {
        Timer t(lt.vector_ops);
        HiOps::add(xl, r_[l]);
      }
      if (l == top && finest_post_) smooth_timed(*finest_post_, xl, bl, post_steps_, post_order_, lt);
    }
  }

 private:
  using Timer = ComponentTimer<Hi>;
  std::vector<Level> levels_;
  const VCycle<Lo>* cycle_;
  const Smoother<Hi>* finest_post_;
  int post_steps_;
  SweepOrder post_order_;
  mutable std::vector<Hi> x_, b_, r_;
  mutable std::vector<Lo> rl_, zl_;
};

}  // namespace tcfem::multigrid
