#pragma once
// Helpers shared by the CPU (operator_bench.cpp) and device (operator_bench.cu) measurements.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/hd.h"
#include "bench/operator_bench.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"

namespace tcfem::bench {

/// Input values in [-1, 1): splitmix64 of (seed, i), identical on the host and the device.
TCFEM_HD inline double random_value(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-52 - 1.0;
}

/// The mesh geometry of a key: Cartesian, the deformed box, or (key.general_field) the mapped box.
inline mesh::GeometryKind geometry_of(const operators::DeviceKernelKey& key) {
  return key.cartesian       ? mesh::GeometryKind::cartesian
         : key.general_field ? mesh::GeometryKind::mapped
                             : mesh::GeometryKind::deformed;
}

/// The bench's mesh of a key: the unit box, its deformed image, or for key.general_field the
/// quarter annulus x = (1 + X) cos(pi Y / 2), y = (1 + X) sin(pi Y / 2) (z = Z), a map without the
/// deformed box's separable structure, with its CUDA form for the device setup; with
/// BenchMap::trilinear the multilinear map x = X + X Y / 4, y = Y + Y Z / 5, z = Z + Z X / 8 (y = Y
/// in 2D), whose cells are trilinear (bilinear); with BenchMap::quadratic the map x = X + Y^2 / 5
/// + X Z^2 / 10, y = Y + Z^2 / 7 + X^2 Y / 10, z = Z + X^2 / 10 + Y^2 Z / 10 (2D: x = X + Y^2 / 5,
/// y = Y + X^2 Y / 10), quadratic in each coordinate: cells of geometry order 2; with `block`, the
/// mesh file's block (its map of the parameter box, `cells` a uniform refinement of its cells).
/// `partition`: the mesh's part on this process (serial: the whole box).
template <int dim>
mesh::BoxMesh<dim> bench_mesh(const std::array<int, dim>& cells, const operators::DeviceKernelKey& key,
                              BenchMap map, const BenchBlock* block, const mesh::Partition<dim>& partition) {
  if (!key.general_field) return mesh::BoxMesh<dim>(cells, geometry_of(key), partition);
  if (block) {
    if constexpr (dim == 2) {
      TCFEM_ASSERT(block->block2, "bench block of another dimension");
      return mesh::BoxMesh<dim>(cells, block->block2->domain(), partition);
    } else {
      TCFEM_ASSERT(block->block3, "bench block of another dimension");
      return mesh::BoxMesh<dim>(cells, block->block3->domain(), partition);
    }
  }
  mesh::Point<dim> lo, hi;
  lo.fill(0.0);
  hi.fill(1.0);
  if (map == BenchMap::quadratic) {
    auto domain = mesh::Domain<dim>::box(lo, hi, [](const mesh::Point<dim>& X) {
      mesh::Point<dim> x = X;
      if constexpr (dim == 3) {
        x[0] = X[0] + 0.2 * X[1] * X[1] + 0.1 * X[0] * X[2] * X[2];
        x[1] = X[1] + X[2] * X[2] / 7.0 + 0.1 * X[0] * X[0] * X[1];
        x[2] = X[2] + 0.1 * X[0] * X[0] + 0.1 * X[1] * X[1] * X[2];
      } else {
        x[0] = X[0] + 0.2 * X[1] * X[1];
        x[1] = X[1] + 0.1 * X[0] * X[0] * X[1];
      }
      return x;
    });
    if constexpr (dim == 3) {
      domain.map_source[0].expression = "x[0] + 0.2 * x[1] * x[1] + 0.1 * x[0] * x[2] * x[2]";
      domain.map_source[1].expression = "x[1] + x[2] * x[2] / 7.0 + 0.1 * x[0] * x[0] * x[1]";
      domain.map_source[2].expression = "x[2] + 0.1 * x[0] * x[0] + 0.1 * x[1] * x[1] * x[2]";
    } else {
      domain.map_source[0].expression = "x[0] + 0.2 * x[1] * x[1]";
      domain.map_source[1].expression = "x[1] + 0.1 * x[0] * x[0] * x[1]";
    }
    return mesh::BoxMesh<dim>(cells, domain, partition);
  }
  if (map == BenchMap::trilinear) {
    auto domain = mesh::Domain<dim>::box(lo, hi, [](const mesh::Point<dim>& X) {
      mesh::Point<dim> x = X;
      x[0] = X[0] + 0.25 * X[0] * X[1];
      if constexpr (dim == 3) {
        x[1] = X[1] + 0.2 * X[1] * X[2];
        x[2] = X[2] + 0.125 * X[2] * X[0];
      }
      return x;
    });
    domain.map_source[0].expression = "x[0] + 0.25 * x[0] * x[1]";
    domain.map_source[1].expression = dim == 3 ? "x[1] + 0.2 * x[1] * x[2]" : "x[1]";
    if constexpr (dim == 3) domain.map_source[2].expression = "x[2] + 0.125 * x[2] * x[0]";
    return mesh::BoxMesh<dim>(cells, domain, partition);
  }
  auto domain = mesh::Domain<dim>::box(lo, hi, [](const mesh::Point<dim>& X) {
    mesh::Point<dim> x = X;
    x[0] = (1.0 + X[0]) * std::cos(0.5 * 3.141592653589793 * X[1]);
    x[1] = (1.0 + X[0]) * std::sin(0.5 * 3.141592653589793 * X[1]);
    return x;
  });
  domain.map_source[0].expression = "(1.0 + x[0]) * cos(0.5 * 3.141592653589793 * x[1])";
  domain.map_source[1].expression = "(1.0 + x[0]) * sin(0.5 * 3.141592653589793 * x[1])";
  if constexpr (dim == 3) domain.map_source[2].expression = "x[2]";
  return mesh::BoxMesh<dim>(cells, domain, partition);
}

template <int dim>
mesh::BoxMesh<dim> bench_mesh(const std::array<int, dim>& cells, const operators::DeviceKernelKey& key,
                              BenchMap map = BenchMap::annulus, const BenchBlock* block = nullptr) {
  return bench_mesh<dim>(cells, key, map, block, mesh::Partition<dim>::serial(cells));
}

/// The partition of a case's box over c.comm's ranks with `ghost_width` ghost cells (serial: one
/// process owns the box).
template <int dim>
mesh::Partition<dim> bench_partition(const BenchCase& c, const std::array<int, dim>& cells, int ghost_width) {
  return c.comm.distributed() ? mesh::Partition<dim>::distributed(cells, c.comm, ghost_width)
                              : mesh::Partition<dim>::serial(cells);
}

inline operators::OperatorConfig operator_config(const operators::DeviceKernelKey& key) {
  operators::OperatorConfig c;
  c.disc = key.disc;
  c.degree = key.degree;
  c.quadrature = key.quadrature;
  c.cartesian_fast_path = key.cartesian;
  return c;
}

/// Median, minimum and maximum of per-apply times.
inline void summarize_times(std::vector<double> t, BenchResult& r) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  r.median_seconds = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  r.min_seconds = t.front();
  r.max_seconds = t.back();
}

/// Fills r.check_rel_diff and r.check_passed from an output and the fp64 reference output.
template <typename Number>
void record_check(const Number* y, const double* ref, std::size_t n, double tolerance, BenchResult& r) {
  double diff = 0.0, norm = 0.0;
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) {
    const double yi = double(y[i]);
    if (!std::isfinite(yi) || !std::isfinite(ref[i])) finite = false;
    diff += (yi - ref[i]) * (yi - ref[i]);
    norm += ref[i] * ref[i];
  }
  r.checked = true;
  if (finite && norm > 0.0) r.check_rel_diff = std::sqrt(diff / norm);
  else if (finite && diff == 0.0) r.check_rel_diff = 0.0;
  r.check_passed = r.check_rel_diff.has_value() && *r.check_rel_diff <= tolerance;
}

/// Several ranks: each apply's time is the slowest rank's; the report keeps every rank's median.
inline void summarize_distributed_times(const Communicator& comm, std::vector<double> times, BenchResult& r) {
  BenchResult own;
  summarize_times(times, own);
  for (auto& t : times) t = comm.max(t);
  summarize_times(std::move(times), r);
  auto& d = r.distributed.emplace();
  d.ranks = comm.size();
  d.rank_median_seconds = comm.all_gather(own.median_seconds);
}

/// Several ranks: the check of record_check over the owned entries of every rank (`layout`).
template <typename Number>
void record_distributed_check(const Number* y, const double* ref, std::size_t n, const GhostLayout& layout,
                              double tolerance, BenchResult& r) {
  std::vector<double> diff(n);
  for (std::size_t i = 0; i < n; ++i) diff[i] = double(y[i]) - ref[i];
  // a NaN on an owned entry of any rank fails the check; ghost entries are not compared
  double sums[2] = {layout.owned_dot(diff.data(), diff.data()), layout.owned_dot(ref, ref)};
  layout.communicator().sum(sums, 2);
  r.checked = true;
  r.check_rel_diff.reset();
  if (std::isfinite(sums[0]) && std::isfinite(sums[1]) && sums[1] > 0.0) r.check_rel_diff = std::sqrt(sums[0] / sums[1]);
  else if (std::isfinite(sums[0]) && sums[0] == 0.0) r.check_rel_diff = 0.0;
  r.check_passed = r.check_rel_diff.has_value() && *r.check_rel_diff <= tolerance;
}

/// ||y|| over the owned entries of every rank (layout null: every entry).
template <typename Number>
double owned_norm(const Number* y, std::size_t n, const GhostLayout* layout) {
  if (!layout) {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += double(y[i]) * double(y[i]);
    return std::sqrt(s);
  }
  return std::sqrt(layout->communicator().sum(layout->owned_dot(y, y)));
}

}  // namespace tcfem::bench
