#pragma once
// The Schwarz sweeps of the vertex-patch smoothers, written once for every kind of patch (cg:
// VertexPatchSmoother, dg: DgVertexPatchSmoother). A patch kind supplies four operations:
//   residual(patch, x, b, r)   r = the localized residual b_j - (A x)_j of the patch
//   solve(patch, r)            r = A_j^{-1} r
//   gather(patch, u, r)        r = R_j u
//   add(patch, s, r, u)        u += s R_j^T r
#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "core/vector.h"
#include "mesh/box_mesh.h"
#include "multigrid/interfaces.h"
#include "multigrid/multigrid_config.h"

namespace tcfem::multigrid {

/// The patches this rank runs: the vertices v it owns (the owner of cell v; of cell n_d - 1 for
/// v_d = n_d), interior (1 <= v_d <= n_d - 1) or, along d, also on the low face (v_d = 0) where
/// low[d] and on the high face (v_d = n_d) where high[d]; lexicographic with direction 0 fastest,
/// sorted into `n_colors` colors by color(v).
template <int dim, class Color>
std::vector<std::vector<std::array<int, dim>>> owned_patch_vertices(const mesh::Partition<dim>& part, int n_colors,
                                                                    Color&& color, const std::array<bool, dim>& low = {},
                                                                    const std::array<bool, dim>& high = {}) {
  std::vector<std::vector<std::array<int, dim>>> colors(static_cast<std::size_t>(n_colors));
  std::array<int, dim> v, first, count;
  std::size_t n_vertices = 1;
  for (int d = 0; d < dim; ++d) {
    const int n = part.global_cells[d];
    first[d] = std::max(low[d] ? 0 : 1, part.owned.begin[d]);
    const int last_owned = part.owned.end[d] == n ? n : part.owned.end[d] - 1;
    count[d] = std::max(0, std::min(high[d] ? n : n - 1, last_owned) - first[d] + 1);
    n_vertices *= static_cast<std::size_t>(count[d]);
  }
  for (std::size_t i = 0; i < n_vertices; ++i) {
    std::size_t r = i;
    for (int d = 0; d < dim; ++d) {
      v[d] = first[d] + static_cast<int>(r % count[d]);
      r /= count[d];
    }
    colors[static_cast<std::size_t>(color(v))].push_back(v);
  }
  return colors;
}

/// The work vectors of a sweep: `residual` (n DoFs), `r` (one patch), `buffer` (a color's
/// residuals, PatchVariant::separate), `correction` (n DoFs, additive sweep and distributed
/// levels); `ghosts`: the level's ghost exchange on a distributed level (null on one process),
/// with which the patches of vertices owned by this rank read the ghost values of x and of the
/// residual and pass their corrections at other ranks' nodes to the owners.
template <typename Number>
struct PatchSweepWork {
  Vector<Number>& residual;
  Vector<Number>& correction;
  std::vector<Number>& r;
  std::vector<Number>& buffer;
  const GhostLayout* ghosts = nullptr;
};

/// One color of the multiplicative smoother: every patch of the color, x += omega A_j^{-1} r_j, with
/// the residuals localized per patch (fused), all localized first (separate) or of the level
/// operator (global). Patches of one color do not change each other's residuals.
template <typename Number, class Patch, class Ops>
void multiplicative_color_sweep(PatchVariant variant, const std::vector<Patch>& patches, std::size_t patch_size,
                                Number omega, const LevelOperator<Vector<Number>>& op, Vector<Number>& x,
                                const Vector<Number>& b, PatchSweepWork<Number> w, const Ops& ops) {
  // distributed: every rank takes part in the exchanges, with patches of this color or without;
  // the corrections go through w.correction to the owners of their nodes
  if (patches.empty() && !w.ghosts) return;
  Vector<Number>& target = w.ghosts ? w.correction : x;
  if (w.ghosts) {
    w.correction.fill(Number(0));
    if (variant != PatchVariant::global) w.ghosts->update_ghosts(x.data());
  }
  switch (variant) {
    case PatchVariant::fused:
      for (const auto& v : patches) {
        ops.residual(v, x, b, w.r.data());
        ops.solve(v, w.r.data());
        ops.add(v, omega, w.r.data(), target);
      }
      break;
    case PatchVariant::separate:
      w.buffer.resize(patches.size() * patch_size);
      for (std::size_t p = 0; p < patches.size(); ++p) ops.residual(patches[p], x, b, w.buffer.data() + p * patch_size);
      for (std::size_t p = 0; p < patches.size(); ++p) {
        Number* r = w.buffer.data() + p * patch_size;
        ops.solve(patches[p], r);
        ops.add(patches[p], omega, r, target);
      }
      break;
    case PatchVariant::global:
      op.vmult(w.residual, x);
      VectorOps<Vector<Number>>::residual_from_product(w.residual, b);
      if (w.ghosts) w.ghosts->update_ghosts(w.residual.data());
      for (const auto& v : patches) {
        ops.gather(v, w.residual, w.r.data());
        ops.solve(v, w.r.data());
        ops.add(v, omega, w.r.data(), target);
      }
      break;
  }
  if (w.ghosts) {
    w.ghosts->add_ghosts_to_owners(w.correction.data());
    x.add(Number(1), w.correction);
  }
}

/// The additive smoother: x += omega sum_j R_j^T A_j^{-1} R_j (b - A x), summed color by color.
template <typename Number, class Patch, class Ops>
void additive_sweep(const std::vector<std::vector<Patch>>& colors, Number omega,
                    const LevelOperator<Vector<Number>>& op, Vector<Number>& x, const Vector<Number>& b,
                    PatchSweepWork<Number> w, const Ops& ops) {
  op.vmult(w.residual, x);
  VectorOps<Vector<Number>>::residual_from_product(w.residual, b);
  if (w.ghosts) w.ghosts->update_ghosts(w.residual.data());
  w.correction.fill(Number(0));
  for (const auto& patches : colors)
    for (const auto& v : patches) {
      ops.gather(v, w.residual, w.r.data());
      ops.solve(v, w.r.data());
      ops.add(v, Number(1), w.r.data(), w.correction);
    }
  if (w.ghosts) w.ghosts->add_ghosts_to_owners(w.correction.data());
  x.add(omega, w.correction);
}

/// One smoothing step of a vertex-patch smoother: the additive sweep, or the multiplicative one
/// color by color (forward, or backward for SweepOrder::backward).
template <typename Number, class Patch, class Ops>
void schwarz_step(bool additive, PatchVariant variant, const std::vector<std::vector<Patch>>& colors,
                  std::size_t patch_size, Number omega, const LevelOperator<Vector<Number>>& op, Vector<Number>& x,
                  const Vector<Number>& b, SweepOrder order, PatchSweepWork<Number> w, const Ops& ops) {
  if (additive) {
    additive_sweep(colors, omega, op, x, b, w, ops);
    return;
  }
  const int n_colors = static_cast<int>(colors.size());
  for (int i = 0; i < n_colors; ++i) {
    const auto& color = colors[order == SweepOrder::forward ? i : n_colors - 1 - i];
    multiplicative_color_sweep(variant, color, patch_size, omega, op, x, b, w, ops);
  }
}

}  // namespace tcfem::multigrid
