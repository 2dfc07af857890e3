#include "direct/direct_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "direct/dense.h"

namespace tcfem::direct {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

/// Entries of A~ at or below this fraction of max |A~| are round-off of exact zeros (true
/// couplings of the hierarchical basis in 2D are O(2^-(L-L0)) relative): they are dropped.
constexpr double drop_fraction = 1e-12;

}  // namespace

double DirectPlan::dense_flops_per_rhs() const {
  return 4.0 * double(macro_cells) * double(nodes_per_cell) * double(nodes_per_cell) +
         2.0 * double(n_edge) * double(n_edge) + 2.0 * double(n_coarse) * double(n_coarse);
}

double DirectPlan::host_bytes(std::int64_t nrhs) const {
  const double n = double(n_dofs), ne = double(n_edge), nc = double(n_coarse), npc = double(nodes_per_cell);
  double bytes = 120.0 * double(n_vertices) + 40.0 * double(n_cells);  // mesh hierarchy, edge tables
  bytes += 650.0 * n;                            // A, A~ and the temporaries of the sparse products
  bytes += 8.0 * (nc * nc + nc * ne + ne * ne);  // A~^0, B (dense), Pi
  bytes += 4.0 * ne * ne;                        // an FP32/FP16 copy of Pi^{-1} in the solve phase
  bytes += 3.0 * 8.0 * double(n_classes) * npc * npc;
  bytes += double(nrhs) * n * (6.0 * 8.0 + 3.0 * 4.0);  // nodal and block vectors, solve-phase copies
  return bytes + 50e6;
}

DirectPlan plan_direct(MeshKind kind, int level, int coarse_level) {
  const Mesh2D coarse = make_coarse_mesh(kind);
  const MeshCounts fine = counts_at_level(coarse, level);
  const MeshCounts macro = counts_at_level(coarse, coarse_level);
  DirectPlan p;
  p.kind = kind;
  p.level = level;
  p.coarse_level = coarse_level;
  p.n_vertices = fine.n_vertices;
  p.n_cells = fine.n_cells;
  p.n_dofs = fine.n_interior_vertices;
  const std::int64_t m = std::int64_t(1) << (level - coarse_level);
  p.macro_cells = macro.n_cells;
  p.nodes_per_cell = coarse.element == Element::p1 ? (m - 1) * (m - 2) / 2 : (m - 1) * (m - 1);
  p.n_coarse = macro.n_interior_vertices;
  p.n_edge = (macro.n_edges - macro.n_boundary_edges) * (m - 1);
  p.n_interior = p.macro_cells * p.nodes_per_cell;
  p.n_classes = count_macro_classes(coarse);
  return p;
}

int optimal_coarse_level(MeshKind kind, int level) {
  int best = 0;
  double best_flops = 0.0;
  for (int l0 = 0; l0 <= level; ++l0) {
    const double f = plan_direct(kind, level, l0).dense_flops_per_rhs();
    if (l0 == 0 || f < best_flops) {
      best = l0;
      best_flops = f;
    }
  }
  return best;
}

std::int64_t PrehandledSystem::nnz_d() const {
  std::int64_t s = 0;
  for (const auto& m : d) s += m.nnz();
  return s;
}

double PrehandledSystem::flops_per_rhs() const {
  double f = 2.0 * double(n_edge) * double(n_edge) + 4.0 * double(b.nnz()) + 4.0 * double(nnz_d());
  for (const auto cells : class_cells) f += 4.0 * double(cells) * double(nodes_per_cell) * double(nodes_per_cell);
  return f;
}

BlockVectors<double> PrehandledSystem::make_vectors(std::int64_t nrhs) const {
  BlockVectors<double> v;
  v.nrhs = nrhs;
  v.c.assign(static_cast<std::size_t>(n_coarse * nrhs), 0.0);
  v.e.assign(static_cast<std::size_t>(n_edge * nrhs), 0.0);
  v.i.resize(class_cells.size());
  for (std::size_t k = 0; k < class_cells.size(); ++k)
    v.i[k].assign(static_cast<std::size_t>(class_size(k) * nrhs), 0.0);
  return v;
}

void PrehandledSystem::apply_prehandled(const BlockVectors<double>& x, BlockVectors<double>& y) const {
  const std::int64_t nrhs = x.nrhs;
  if (y.nrhs != nrhs) y = make_vectors(nrhs);
  for (std::int64_t r = 0; r < nrhs; ++r) {
    const double* xc = x.c.data() + r * n_coarse;
    const double* xe = x.e.data() + r * n_edge;
    double* yc = y.c.data() + r * n_coarse;
    double* ye = y.e.data() + r * n_edge;
    b.multiply(xe, yc);
    for (std::int64_t i = 0; i < n_coarse; ++i) yc[i] += xc[i];
    std::vector<double> t(static_cast<std::size_t>(n_edge));
    e_block.multiply(xe, ye);
    bt.multiply(xc, t.data());
    for (std::int64_t i = 0; i < n_edge; ++i) ye[i] += t[i];
    for (std::size_t k = 0; k < d.size(); ++k) {
      d[k].multiply(x.i[k].data() + r * class_size(k), t.data());
      for (std::int64_t i = 0; i < n_edge; ++i) ye[i] += t[i];
      double* yk = y.i[k].data() + r * class_size(k);
      dt[k].multiply(xe, yk);
      // C_k applied to all cells of the class: nodes_per_cell x cells
      gemm(Transpose::no, Transpose::no, nodes_per_cell, class_cells[k], nodes_per_cell, 1.0, class_matrix[k].data(),
           nodes_per_cell, x.i[k].data() + r * class_size(k), nodes_per_cell, 1.0, yk, nodes_per_cell);
    }
  }
}

DirectSolver::DirectSolver(MeshKind kind, int level, int coarse_level, const SetupOptions& options) {
  const auto t_start = clock_type::now();
  auto report = [&](const char* stage, double seconds) {
    if (options.progress) options.progress(stage, seconds);
  };
  auto t = clock_type::now();
  hierarchy_ = build_hierarchy(kind, level, coarse_level);
  dofs_ = make_dof_map(hierarchy_.fine);
  nodes_ = classify_nodes(hierarchy_, dofs_);
  timings_.mesh = seconds_since(t);
  report("meshes and node classes", timings_.mesh);

  t = clock_type::now();
  stiffness_ = assemble_stiffness(hierarchy_.fine, dofs_);
  diagnostics_.nnz_a_fem = stiffness_.nnz();
  timings_.assembly = seconds_since(t);
  report("nodal system", timings_.assembly);

  t = clock_type::now();
  build_hierarchical_levels();
  CsrMatrix a_tilde = hierarchical_matrix();
  timings_.hierarchical = seconds_since(t);
  report("hierarchical basis A~ = S^T A S", timings_.hierarchical);

  build_blocks(std::move(a_tilde), options);
  timings_.total = seconds_since(t_start);
}

void DirectSolver::build_hierarchical_levels() {
  levels_.resize(hierarchy_.steps.size());
  for (std::size_t s = 0; s < hierarchy_.steps.size(); ++s) {
    const auto& step = hierarchy_.steps[s];
    auto& lev = levels_[s];
    for (std::size_t t = 0; t < step.parents.size(); ++t) {
      const auto dof = dofs_.dof_of_vertex[step.first_new_vertex + static_cast<std::int32_t>(t)];
      if (dof < 0) continue;
      std::array<std::int32_t, 4> p = {-1, -1, -1, -1};
      int n_parents = 0;
      for (int a = 0; a < 4; ++a) {
        if (step.parents[t][a] < 0) continue;
        ++n_parents;
        p[a] = dofs_.dof_of_vertex[step.parents[t][a]];  // boundary parents: value 0, dropped
      }
      lev.dofs.push_back(dof);
      lev.parents.push_back(p);
      lev.weight.push_back(1.0 / n_parents);
    }
  }
}

CsrMatrix DirectSolver::hierarchical_matrix() {
  const std::int64_t n = dofs_.n_dofs();
  CsrMatrix a = stiffness_;
  std::vector<std::int32_t> position(static_cast<std::size_t>(n), -1);
  // A~ = S_1^T ( ... (S_j^T A S_j) ... ) S_1: the finest level first
  for (auto lev = levels_.rbegin(); lev != levels_.rend(); ++lev) {
    for (std::size_t t = 0; t < lev->dofs.size(); ++t) position[lev->dofs[t]] = static_cast<std::int32_t>(t);
    CsrMatrix s;
    s.n_rows = s.n_cols = n;
    s.row_ptr.assign(static_cast<std::size_t>(n + 1), 0);
    for (std::int64_t i = 0; i < n; ++i) {
      if (position[i] >= 0) {
        std::array<std::int32_t, 4> p = lev->parents[position[i]];
        std::sort(p.begin(), p.end());
        for (const auto q : p)
          if (q >= 0) {
            TCFEM_ASSERT(q < i, "hierarchical basis: a parent is numbered after its child");
            s.cols.push_back(q);
            s.values.push_back(lev->weight[position[i]]);
          }
      }
      s.cols.push_back(static_cast<std::int32_t>(i));
      s.values.push_back(1.0);
      s.row_ptr[i + 1] = static_cast<std::int64_t>(s.cols.size());
    }
    for (const auto d : lev->dofs) position[d] = -1;
    a = multiply(transpose(s), multiply(a, s));
    diagnostics_.dropped_entries += drop_below(a, drop_fraction * max_abs(a));
  }
  diagnostics_.nnz_hierarchical = a.nnz();
  return a;
}

void DirectSolver::build_blocks(CsrMatrix&& a_tilde, const SetupOptions& options) {
  auto t = clock_type::now();
  const std::int64_t n = dofs_.n_dofs();
  const std::int64_t nc = nodes_.n_coarse, ne = nodes_.n_edge, npc = nodes_.nodes_per_cell;
  const std::size_t n_classes = nodes_.classes.size();
  auto& sys = system_;
  sys.n_coarse = nc;
  sys.n_edge = ne;
  sys.n_interior = nodes_.n_interior;
  sys.nodes_per_cell = npc;
  sys.class_cells.resize(n_classes);
  for (std::size_t k = 0; k < n_classes; ++k)
    sys.class_cells[k] = static_cast<std::int64_t>(nodes_.classes[k].cells.size());

  class_of_dof_.assign(static_cast<std::size_t>(n), -1);
  scale_.assign(static_cast<std::size_t>(n), 1.0);
  for (std::int64_t d = 0; d < n; ++d) {
    if (nodes_.kind[d] == NodeKind::coarse) continue;
    const double diag = a_tilde.el(d, d);
    TCFEM_ASSERT(diag > 0, "hierarchical matrix has a non-positive diagonal entry");
    scale_[d] = 1.0 / std::sqrt(diag);
    if (nodes_.kind[d] == NodeKind::interior) {
      std::size_t k = 0;
      while (k + 1 < n_classes && nodes_.classes[k + 1].first_interior <= nodes_.index[d]) ++k;
      class_of_dof_[d] = static_cast<std::int32_t>(k);
    }
  }
  auto local_of = [&](std::int64_t d) { return nodes_.index[d] - nodes_.classes[class_of_dof_[d]].first_interior; };

  // ---- split A~ into the blocks of eq. 3, scaled by diag^-1/2 outside C
  std::vector<double> a0(static_cast<std::size_t>(nc * nc), 0.0);
  std::vector<Triplet> ce, ee;
  std::vector<std::vector<Triplet>> dk(n_classes);
  sys.class_matrix.assign(n_classes, std::vector<double>(static_cast<std::size_t>(npc * npc), 0.0));
  double ignored = 0.0;
  // squared Frobenius norm of each cell's block: a cell whose pattern lacks an entry of the
  // representative's shows up here, not in the entrywise comparison
  std::vector<double> norm2(static_cast<std::size_t>(hierarchy_.macro.n_cells()), 0.0);
  for (int pass = 0; pass < 2; ++pass) {
    for (std::int64_t i = 0; i < n; ++i) {
      const NodeKind ki = nodes_.kind[i];
      const std::int32_t ii = nodes_.index[i];
      for (std::int64_t p = a_tilde.row_ptr[i]; p < a_tilde.row_ptr[i + 1]; ++p) {
        const std::int64_t j = a_tilde.cols[p];
        const NodeKind kj = nodes_.kind[j];
        const std::int32_t ij = nodes_.index[j];
        const double v = a_tilde.values[p] * scale_[i] * scale_[j];
        const bool same_cell_ii = ki == NodeKind::interior && kj == NodeKind::interior &&
                                  class_of_dof_[i] == class_of_dof_[j] && local_of(i) / npc == local_of(j) / npc;
        if (same_cell_ii) {
          const auto k = static_cast<std::size_t>(class_of_dof_[i]);
          const std::int64_t li = local_of(i) % npc, lj = local_of(j) % npc;
          const std::int64_t cell = local_of(i) / npc;
          double& rep = sys.class_matrix[k][li + lj * npc];
          if (pass == 0) {
            if (cell == 0) rep = v;
            norm2[nodes_.classes[k].cells[cell]] += v * v;
          } else if (cell != 0) {
            diagnostics_.max_class_deviation = std::max(diagnostics_.max_class_deviation, std::abs(v - rep));
          }
          continue;
        }
        if (pass == 1) continue;
        if (ki == NodeKind::coarse && kj == NodeKind::coarse)
          a0[ii + std::int64_t(ij) * nc] = a_tilde.values[p];
        else if (ki == NodeKind::coarse && kj == NodeKind::edge)
          ce.push_back({ii, ij, a_tilde.values[p] * scale_[j]});
        else if (ki == NodeKind::edge && kj == NodeKind::edge)
          ee.push_back({ii, ij, v});
        else if (ki == NodeKind::edge && kj == NodeKind::interior)
          dk[class_of_dof_[j]].push_back({ii, static_cast<std::int32_t>(local_of(j)), v});
        else if ((ki == NodeKind::coarse && kj == NodeKind::interior) ||
                 (ki == NodeKind::interior && kj == NodeKind::interior))
          ignored = std::max(ignored, std::abs(v));
      }
    }
  }
  diagnostics_.max_ignored_coupling = ignored;
  a_tilde = CsrMatrix{};
  for (const auto& cls : nodes_.classes)
    for (const auto cell : cls.cells)
      diagnostics_.max_class_deviation =
          std::max(diagnostics_.max_class_deviation, std::abs(std::sqrt(norm2[cell]) - std::sqrt(norm2[cls.cells[0]])));
  sys.e_block = csr_from_triplets(ne, ne, std::move(ee));
  sys.d.resize(n_classes);
  sys.dt.resize(n_classes);
  for (std::size_t k = 0; k < n_classes; ++k) {
    sys.d[k] = csr_from_triplets(ne, sys.class_size(k), std::move(dk[k]));
    sys.dt[k] = transpose(sys.d[k]);
  }

  // ---- coarse block: Cholesky, B = L_C^{-1} A~_CE diag_E^{-1/2}
  coarse_factor_ = std::move(a0);
  cholesky_factor(nc, coarse_factor_.data(), nc, "the coarse block A~^0");
  std::vector<double> b_dense(static_cast<std::size_t>(nc * ne), 0.0);
  for (const auto& tr : ce) b_dense[tr.row + std::int64_t(tr.col) * nc] += tr.value;
  ce.clear();
  ce.shrink_to_fit();
  solve_lower(nc, ne, coarse_factor_.data(), nc, b_dense.data(), nc);
  sys.b.n_rows = nc;
  sys.b.n_cols = ne;
  sys.b.row_ptr.assign(static_cast<std::size_t>(nc + 1), 0);
  for (std::int64_t i = 0; i < nc; ++i) {
    for (std::int64_t j = 0; j < ne; ++j) {
      const double v = b_dense[i + j * nc];
      if (v != 0.0) {
        sys.b.cols.push_back(static_cast<std::int32_t>(j));
        sys.b.values.push_back(v);
      }
    }
    sys.b.row_ptr[i + 1] = sys.b.nnz();
  }
  sys.bt = transpose(sys.b);
  timings_.blocks = seconds_since(t);
  if (options.progress) options.progress("prehandling, blocks B, D, E, C_k", timings_.blocks);

  // ---- Pi = E - B^T B - D C^{-1} D^T (lower triangle), from Cholesky factors of the C_k
  t = clock_type::now();
  std::vector<double> pi(static_cast<std::size_t>(ne * ne), 0.0);
  for (std::int64_t i = 0; i < ne; ++i)
    for (std::int64_t p = sys.e_block.row_ptr[i]; p < sys.e_block.row_ptr[i + 1]; ++p)
      if (sys.e_block.cols[p] <= i) pi[i + std::int64_t(sys.e_block.cols[p]) * ne] = sys.e_block.values[p];
  syrk_lower(Transpose::yes, ne, nc, -1.0, b_dense.data(), nc, 1.0, pi.data(), ne);
  b_dense = {};
  std::vector<std::vector<double>> factor(n_classes);
  for (std::size_t k = 0; k < n_classes; ++k) {
    factor[k] = sys.class_matrix[k];
    cholesky_factor(npc, factor[k].data(), npc, "an interior block C_k");
  }
  std::int64_t captured = 0;
  std::vector<double> y, w;
  for (std::int64_t c = 0; c < hierarchy_.macro.n_cells(); ++c) {
    const auto k = static_cast<std::size_t>(nodes_.cell_class[c]);
    const std::int64_t first = std::int64_t(nodes_.cell_position[c]) * npc;
    const std::int64_t r0 = nodes_.cell_edge_ptr[c], r = nodes_.cell_edge_ptr[c + 1] - r0;
    if (r == 0 || npc == 0) continue;
    const auto* rows = nodes_.cell_edge_nodes.data() + r0;
    y.assign(static_cast<std::size_t>(npc * r), 0.0);
    const auto& dm = sys.d[k];
    for (std::int64_t a = 0; a < r; ++a) {
      const auto begin = dm.cols.begin() + dm.row_ptr[rows[a]], end = dm.cols.begin() + dm.row_ptr[rows[a] + 1];
      for (auto it = std::lower_bound(begin, end, static_cast<std::int32_t>(first)); it != end && *it < first + npc;
           ++it) {
        y[(*it - first) + a * npc] = dm.values[it - dm.cols.begin()];
        ++captured;
      }
    }
    solve_lower(npc, r, factor[k].data(), npc, y.data(), npc);  // L_k^{-1} D_c^T
    w.assign(static_cast<std::size_t>(r * r), 0.0);
    syrk_lower(Transpose::yes, r, npc, 1.0, y.data(), npc, 0.0, w.data(), r);
    for (std::int64_t a = 0; a < r; ++a)
      for (std::int64_t b = 0; b <= a; ++b) {
        const std::int64_t i = std::max(rows[a], rows[b]), j = std::min(rows[a], rows[b]);
        pi[i + j * ne] -= w[a + b * r];
      }
  }
  TCFEM_ASSERT(captured == sys.nnz_d(), "D has entries outside the edges of their macro cell");
  timings_.schur = seconds_since(t);
  if (options.progress) options.progress("Pi = E - D C^-1 D^T - B^T B", timings_.schur);

  t = clock_type::now();
  if (options.condition != ConditionMethod::off) compute_conditions(options, pi);
  timings_.conditions = seconds_since(t);
  if (options.progress && options.condition != ConditionMethod::off)
    options.progress("condition numbers", timings_.conditions);

  // ---- explicit inverses in FP64
  t = clock_type::now();
  if (options.spd_inverse) {
    options.spd_inverse(ne, pi.data(), ne, "Pi = E - D C^-1 D^T - B^T B");
  } else {
    cholesky_factor(ne, pi.data(), ne, "Pi = E - D C^-1 D^T - B^T B");
    cholesky_inverse(ne, pi.data(), ne, "Pi");
  }
  sys.pi_inverse = std::move(pi);
  sys.class_inverse.resize(n_classes);
  for (std::size_t k = 0; k < n_classes; ++k) {
    cholesky_inverse(npc, factor[k].data(), npc, "C_k");
    sys.class_inverse[k] = std::move(factor[k]);
  }
  timings_.inverses = seconds_since(t);
  if (options.progress)
    options.progress(options.spd_inverse ? "inverses Pi^-1 (" + options.spd_inverse_name + "), C_k^-1"
                                         : std::string("inverses Pi^-1, C_k^-1"),
                     timings_.inverses);
}

void DirectSolver::compute_conditions(const SetupOptions& options, const std::vector<double>& pi_lower) {
  auto use_dense = [&](std::int64_t n) {
    if (options.condition == ConditionMethod::dense) return n <= 20000;
    if (options.condition == ConditionMethod::lanczos) return false;
    return n <= options.dense_limit;
  };
  const auto& sys = system_;
  // A_FEM
  const std::int64_t n = dofs_.n_dofs();
  if (use_dense(n)) {
    std::vector<double> a(static_cast<std::size_t>(n * n), 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t p = stiffness_.row_ptr[i]; p < stiffness_.row_ptr[i + 1]; ++p)
        a[i + std::int64_t(stiffness_.cols[p]) * n] = stiffness_.values[p];
    conditions_.a_fem = condition_dense(n, a.data(), n);
  } else {
    conditions_.a_fem = condition_lanczos(
        n, [&](const double* x, double* y) { stiffness_.multiply(x, y); }, options.lanczos_steps);
  }
  // Pi
  const std::int64_t ne = sys.n_edge;
  if (use_dense(ne))
    conditions_.pi = condition_dense(ne, pi_lower.data(), ne);
  else
    conditions_.pi = condition_lanczos(
        ne, [&](const double* x, double* y) { symmetric_multiply(ne, pi_lower.data(), ne, x, y); },
        options.lanczos_steps);
  // C_k
  const std::int64_t npc = sys.nodes_per_cell;
  conditions_.classes.clear();
  for (const auto& ck : sys.class_matrix) {
    if (use_dense(npc))
      conditions_.classes.push_back(condition_dense(npc, ck.data(), npc));
    else
      conditions_.classes.push_back(condition_lanczos(
          npc, [&](const double* x, double* y) { symmetric_multiply(npc, ck.data(), npc, x, y); },
          options.lanczos_steps));
  }
  // the whole prehandled matrix A^ (Lanczos on the blocks)
  auto x = sys.make_vectors(1), y = sys.make_vectors(1);
  auto unpack = [&](const double* v, BlockVectors<double>& b) {
    std::copy(v, v + sys.n_coarse, b.c.begin());
    v += sys.n_coarse;
    std::copy(v, v + ne, b.e.begin());
    v += ne;
    for (auto& blk : b.i) {
      std::copy(v, v + blk.size(), blk.begin());
      v += blk.size();
    }
  };
  auto pack = [&](const BlockVectors<double>& b, double* v) {
    v = std::copy(b.c.begin(), b.c.end(), v);
    v = std::copy(b.e.begin(), b.e.end(), v);
    for (const auto& blk : b.i) v = std::copy(blk.begin(), blk.end(), v);
  };
  conditions_.prehandled = condition_lanczos(
      sys.n(),
      [&](const double* v, double* out) {
        unpack(v, x);
        sys.apply_prehandled(x, y);
        pack(y, out);
      },
      options.lanczos_steps);
  conditions_.computed = true;
}

BlockVectors<double> DirectSolver::prehandle(const std::vector<double>& b, std::int64_t nrhs) const {
  const std::int64_t n = dofs_.n_dofs();
  TCFEM_ASSERT(static_cast<std::int64_t>(b.size()) == n * nrhs, "prehandle: b must have n_dofs x nrhs entries");
  std::vector<double> w = b;
  for (auto lev = levels_.rbegin(); lev != levels_.rend(); ++lev)  // S^T = S_1^T ... S_j^T
    for (std::int64_t r = 0; r < nrhs; ++r) {
      double* wr = w.data() + r * n;
      for (std::size_t t = 0; t < lev->dofs.size(); ++t)
        for (const auto p : lev->parents[t])
          if (p >= 0) wr[p] += lev->weight[t] * wr[lev->dofs[t]];
    }
  auto out = system_.make_vectors(nrhs);
  const std::int64_t nc = system_.n_coarse, ne = system_.n_edge;
  for (std::int64_t r = 0; r < nrhs; ++r)
    for (std::int64_t d = 0; d < n; ++d) {
      const double v = w[d + r * n];
      const std::int64_t idx = nodes_.index[d];
      switch (nodes_.kind[d]) {
        case NodeKind::coarse:
          out.c[idx + r * nc] = v;
          break;
        case NodeKind::edge:
          out.e[idx + r * ne] = v * scale_[d];
          break;
        case NodeKind::interior: {
          const auto k = static_cast<std::size_t>(class_of_dof_[d]);
          out.i[k][idx - nodes_.classes[k].first_interior + r * system_.class_size(k)] = v * scale_[d];
        }
      }
    }
  solve_lower(nc, nrhs, coarse_factor_.data(), nc, out.c.data(), nc);
  return out;
}

std::vector<double> DirectSolver::recover(const BlockVectors<double>& x) const {
  const std::int64_t n = dofs_.n_dofs(), nrhs = x.nrhs;
  const std::int64_t nc = system_.n_coarse, ne = system_.n_edge;
  std::vector<double> c = x.c;
  solve_lower_transposed(nc, nrhs, coarse_factor_.data(), nc, c.data(), nc);
  std::vector<double> w(static_cast<std::size_t>(n * nrhs));
  for (std::int64_t r = 0; r < nrhs; ++r)
    for (std::int64_t d = 0; d < n; ++d) {
      const std::int64_t idx = nodes_.index[d];
      double& v = w[d + r * n];
      switch (nodes_.kind[d]) {
        case NodeKind::coarse:
          v = c[idx + r * nc];
          break;
        case NodeKind::edge:
          v = x.e[idx + r * ne] * scale_[d];
          break;
        case NodeKind::interior: {
          const auto k = static_cast<std::size_t>(class_of_dof_[d]);
          v = x.i[k][idx - nodes_.classes[k].first_interior + r * system_.class_size(k)] * scale_[d];
        }
      }
    }
  for (const auto& lev : levels_)  // S = S_j ... S_1: the coarsest level first
    for (std::int64_t r = 0; r < nrhs; ++r) {
      double* wr = w.data() + r * n;
      for (std::size_t t = 0; t < lev.dofs.size(); ++t)
        for (const auto p : lev.parents[t])
          if (p >= 0) wr[lev.dofs[t]] += lev.weight[t] * wr[p];
    }
  return w;
}

}  // namespace tcfem::direct
