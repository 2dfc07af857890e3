#include "fe/dof_exchange.h"

#include <algorithm>
#include <array>

namespace tcfem::fe {
namespace {

/// A box of units (cg lattice nodes, dg cells) in global unit coordinates, half-open.
template <int dim>
struct UnitBox {
  std::array<long, dim> begin{}, end{};
  bool empty() const {
    for (int d = 0; d < dim; ++d)
      if (end[d] <= begin[d]) return true;
    return false;
  }
  std::size_t size() const {
    if (empty()) return 0;
    std::size_t n = 1;
    for (int d = 0; d < dim; ++d) n *= std::size_t(end[d] - begin[d]);
    return n;
  }
};

template <int dim>
UnitBox<dim> intersect(const UnitBox<dim>& a, const UnitBox<dim>& b) {
  UnitBox<dim> c;
  for (int d = 0; d < dim; ++d) {
    c.begin[d] = std::max(a.begin[d], b.begin[d]);
    c.end[d] = std::min(a.end[d], b.end[d]);
  }
  return c;
}

class ExchangeBase : public GhostLayout {
 public:
  using Neighbour = ExchangePlan::Neighbour;

  const Communicator& communicator() const override { return comm_; }
  std::size_t n_local() const override { return n_local_; }
  double owned_dot(const double* a, const double* b) const override { return dot(a, b); }
  double owned_dot(const float* a, const float* b) const override { return dot(a, b); }
  void update_ghosts(double* v) const override { transfer(v, buffers_d_, true); }
  void update_ghosts(float* v) const override { transfer(v, buffers_f_, true); }
  void add_ghosts_to_owners(double* v) const override { transfer(v, buffers_d_, false); }
  void add_ghosts_to_owners(float* v) const override { transfer(v, buffers_f_, false); }
  void zero_ghosts(double* v) const override { zero(v); }
  void zero_ghosts(float* v) const override { zero(v); }

  const ExchangePlan& plan() const override { return plan_; }

  Communicator comm_;
  std::size_t n_local_ = 0;
  // owned runs, ghosts, and from each owner the ghosts it owns / to each rank holding copies of
  // owned entries
  ExchangePlan plan_;

 private:
  template <typename Number>
  double dot(const Number* a, const Number* b) const {
    double s = 0.0;
    for (const index_t start : plan_.run_starts) {
      const Number* x = a + start;
      const Number* y = b + start;
      for (std::size_t i = 0; i < plan_.run_length; ++i) s += double(x[i]) * double(y[i]);
    }
    return s;
  }
  template <typename Number>
  void zero(Number* v) const {
    for (const index_t i : plan_.ghosts) v[i] = Number(0);
  }
  template <typename Number>
  std::vector<Communicator::Message> messages(const std::vector<Neighbour>& list,
                                              std::vector<std::vector<Number>>& buffers) const {
    buffers.resize(list.size());
    std::vector<Communicator::Message> out(list.size());
    for (std::size_t m = 0; m < list.size(); ++m) {
      buffers[m].resize(list[m].indices.size());
      out[m] = {list[m].rank, buffers[m].data(), buffers[m].size() * sizeof(Number)};
    }
    return out;
  }
  /// forward: owners' entries to the ghosts; backward: ghost entries to their owners, who add
  /// them, then the ghosts are zeroed (the forward messages run backwards)
  template <typename Number>
  void transfer(Number* v, std::vector<std::vector<Number>>& buffers, bool forward) const {
    const auto& packed = forward ? plan_.sends : plan_.receives;
    const auto& unpacked = forward ? plan_.receives : plan_.sends;
    auto& recv_buffers = buffers;
    std::vector<std::vector<Number>> send_buffers;
    const auto recvs = messages(unpacked, recv_buffers);
    const auto sends = messages(packed, send_buffers);
    for (std::size_t m = 0; m < packed.size(); ++m)
      for (std::size_t i = 0; i < packed[m].indices.size(); ++i) send_buffers[m][i] = v[packed[m].indices[i]];
    comm_.exchange(recvs, sends, forward ? 101 : 102);
    for (std::size_t m = 0; m < unpacked.size(); ++m)
      for (std::size_t i = 0; i < unpacked[m].indices.size(); ++i) {
        Number& target = v[unpacked[m].indices[i]];
        target = forward ? recv_buffers[m][i] : target + recv_buffers[m][i];
      }
    if (!forward) zero(v);
  }

  mutable std::vector<std::vector<double>> buffers_d_;
  mutable std::vector<std::vector<float>> buffers_f_;
};

template <int dim>
class BoxExchange final : public ExchangeBase {
 public:
  BoxExchange(const mesh::Partition<dim>& part, Disc disc, int degree, int exchange_width) {
    comm_ = part.comm;
    const int n_ranks = int(part.rank_owned.size());
    TCFEM_ASSERT(n_ranks == comm_.size(), "partition without every rank's box");
    const int me = comm_.rank();
    block_ = 1;
    if (disc == Disc::dg)
      for (int d = 0; d < dim; ++d) block_ *= std::size_t(degree + 1);
    auto owned_units = [&](int r) {
      UnitBox<dim> u;
      const auto& b = part.rank_owned[std::size_t(r)];
      for (int d = 0; d < dim; ++d) {
        if (disc == Disc::cg) {
          u.begin[d] = long(b.begin[d]) * degree;
          u.end[d] = long(b.end[d]) * degree + (b.end[d] == part.global_cells[d] ? 1 : 0);
        } else {
          u.begin[d] = b.begin[d];
          u.end[d] = b.end[d];
        }
      }
      return u;
    };
    // the units of rank r's cells grown by `width` cells (its stored box for the ghost width)
    auto stored_units = [&](int r, int width) {
      UnitBox<dim> u;
      const auto& b = part.rank_owned[std::size_t(r)];
      for (int d = 0; d < dim; ++d) {
        const long gb = std::max(0, b.begin[d] - width);
        const long ge = std::min(part.global_cells[d], b.end[d] + width);
        u.begin[d] = disc == Disc::cg ? gb * degree : gb;
        u.end[d] = disc == Disc::cg ? ge * degree + 1 : ge;
      }
      return u;
    };
    local_ = stored_units(me, part.ghost_width);
    const int width = exchange_width < 0 ? part.ghost_width : std::min(exchange_width, part.ghost_width);
    n_local_ = local_.size() * block_;
    const auto mine = owned_units(me);
    // owned runs: x-lines of the owned box
    plan_.run_length = std::size_t(mine.end[0] - mine.begin[0]) * block_;
    {
      UnitBox<dim> lines = mine;
      lines.end[0] = lines.begin[0] + 1;
      for_each(lines, [&](const std::array<long, dim>& p) { plan_.run_starts.push_back(local_index(p)); });
    }
    // ghosts: stored units outside the owned box, in increasing order, x-line by x-line (a line
    // outside the owned box in another direction whole, else its parts before and after the box):
    // the work is the lines and the ghosts, not every stored unit
    {
      UnitBox<dim> lines = local_;
      lines.end[0] = lines.begin[0] + 1;
      const long nx = local_.end[0] - local_.begin[0];
      const long x0 = std::clamp(mine.begin[0] - local_.begin[0], 0L, nx);
      const long x1 = std::clamp(mine.end[0] - local_.begin[0], x0, nx);
      const index_t block = index_t(block_);
      plan_.ghosts.reserve((local_.size() - mine.size()) * block_);
      for_each(lines, [&](const std::array<long, dim>& p) {
        bool inside = true;
        for (int d = 1; d < dim; ++d) inside = inside && p[d] >= mine.begin[d] && p[d] < mine.end[d];
        const index_t base = local_index(p);  // the line's first unit
        auto add = [&](long from, long to) {  // its units [from, to)
          for (index_t i = index_t(from) * block; i < index_t(to) * block; ++i) plan_.ghosts.push_back(base + i);
        };
        if (!inside) {
          add(0, nx);
          return;
        }
        add(0, x0);
        add(x1, nx);
      });
    }
    for (int r = 0; r < n_ranks; ++r) {
      if (r == me) continue;
      const auto from = intersect(stored_units(me, width), owned_units(r));
      if (!from.empty()) plan_.receives.push_back({r, indices(from)});
      const auto to = intersect(stored_units(r, width), mine);
      if (!to.empty()) plan_.sends.push_back({r, indices(to)});
    }
  }

 private:
  template <typename F>
  static void for_each(const UnitBox<dim>& box, F&& f) {
    if (box.empty()) return;
    std::array<long, dim> p = box.begin;
    while (true) {
      f(p);
      int d = 0;
      for (; d < dim; ++d) {
        if (++p[d] < box.end[d]) break;
        p[d] = box.begin[d];
      }
      if (d == dim) return;
    }
  }
  index_t local_index(const std::array<long, dim>& p) const {
    index_t idx = 0;
    for (int d = dim - 1; d >= 0; --d) idx = idx * (local_.end[d] - local_.begin[d]) + (p[d] - local_.begin[d]);
    return idx * index_t(block_);
  }
  std::vector<index_t> indices(const UnitBox<dim>& box) const {
    std::vector<index_t> out;
    out.reserve(box.size() * block_);
    for_each(box, [&](const std::array<long, dim>& p) {
      const index_t base = local_index(p);
      for (std::size_t i = 0; i < block_; ++i) out.push_back(base + index_t(i));
    });
    return out;
  }

  UnitBox<dim> local_;
  std::size_t block_ = 1;
};

}  // namespace

template <int dim>
std::shared_ptr<const GhostLayout> make_dof_exchange(const mesh::Partition<dim>& partition, Disc disc, int degree,
                                                     int exchange_width) {
  return std::make_shared<BoxExchange<dim>>(partition, disc, degree, exchange_width);
}

ExchangeSummary summarize(const GhostLayout& layout) {
  const auto& plan = layout.plan();
  ExchangeSummary s;
  std::vector<int> ranks;
  for (const auto& n : plan.receives) ranks.push_back(n.rank);
  for (const auto& n : plan.sends) ranks.push_back(n.rank);
  std::sort(ranks.begin(), ranks.end());
  s.neighbours = int(std::unique(ranks.begin(), ranks.end()) - ranks.begin());
  s.ghost_entries = plan.ghosts.size();
  for (const auto& n : plan.sends) s.sent_entries += n.indices.size();
  s.owned_entries = plan.run_starts.size() * plan.run_length;
  return s;
}

template std::shared_ptr<const GhostLayout> make_dof_exchange<2>(const mesh::Partition<2>&, Disc, int, int);
template std::shared_ptr<const GhostLayout> make_dof_exchange<3>(const mesh::Partition<3>&, Disc, int, int);

}  // namespace tcfem::fe
