#pragma once
// Structured hexahedral meshes of a box [x0,x1] x [y0,y1] (x [z0,z1]): the Cartesian grid, the
// built-in smooth deformation of the unit box, or the image of the box under a user's map.
// A mesh knows the global grid of cells and the part this process owns (a sub-box plus a ghost
// layer of cells); a single process owns everything and has no ghosts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/communicator.h"
#include "core/jit.h"

namespace tcfem::mesh {

/// cartesian: the box itself; deformed: the built-in deformation of the unit box (the benchmark
/// geometry); mapped: the image of the box under a map given by the user.
enum class GeometryKind { cartesian, deformed, mapped };
const char* to_string(GeometryKind g);

template <int dim>
using Point = std::array<double, dim>;

/// The domain of a structured mesh: the parameter box [lower, upper] and how it is mapped.
/// A forest of blocks would hold one Domain per block.
template <int dim>
struct Domain {
  Point<dim> lower{}, upper{};
  GeometryKind kind = GeometryKind::cartesian;
  /// kind == mapped: x = map(X) for X in the box (thread-safe; det of its Jacobian > 0).
  std::function<Point<dim>(const Point<dim>&)> map;
  /// The map's components as CUDA C++ in X = x[0..dim-1] for the device setup, where the map has
  /// them (a problem file's expressions); empty: the device setup evaluates `map` on the host.
  std::array<jit::DeviceSource, dim> map_source{};

  /// The unit box with the given geometry (cartesian or deformed).
  static Domain unit(GeometryKind kind);
  /// The box [lower, upper], optionally mapped (an empty map: Cartesian).
  static Domain box(const Point<dim>& lower, const Point<dim>& upper,
                    std::function<Point<dim>(const Point<dim>&)> map = {});
};

/// Half-open box of cells [begin, end) in global cell coordinates.
template <int dim>
struct CellBox {
  std::array<int, dim> begin{}, end{};
  int extent(int d) const { return end[d] - begin[d]; }
  std::size_t n_cells() const {
    std::size_t n = 1;
    for (int d = 0; d < dim; ++d) n *= static_cast<std::size_t>(extent(d));
    return n;
  }
  bool contains(const std::array<int, dim>& c) const {
    for (int d = 0; d < dim; ++d)
      if (c[d] < begin[d] || c[d] >= end[d]) return false;
    return true;
  }
  /// The number of cell c (inside the box) in the box's lexicographic order, direction 0 fastest.
  std::size_t number(const std::array<int, dim>& c) const {
    std::size_t n = 0;
    for (int d = dim - 1; d >= 0; --d)
      n = n * static_cast<std::size_t>(extent(d)) + static_cast<std::size_t>(c[d] - begin[d]);
    return n;
  }
  /// The cell of number n (< n_cells()): the inverse of number().
  std::array<int, dim> cell(std::size_t n) const {
    std::array<int, dim> c;
    for (int d = 0; d < dim; ++d) {
      const auto e = static_cast<std::size_t>(extent(d));
      c[d] = begin[d] + static_cast<int>(n % e);
      n /= e;
    }
    return c;
  }
};

/// Which cells this process owns, and which it stores as ghosts (the owned box grown by
/// `ghost_width` cells and clipped to the grid). A distributed partition also knows its
/// communicator and every rank's owned box, from which the ghost exchange (fe/dof_exchange.h)
/// follows without communication.
template <int dim>
struct Partition {
  std::array<int, dim> global_cells{};
  CellBox<dim> owned;
  CellBox<dim> ghosted;
  int ghost_width = 1;
  /// The ranks sharing the mesh (serial: one).
  Communicator comm;
  /// Ranks per direction; rank r sits at grid position r = p_0 + P_0 (p_1 + P_1 p_2).
  std::array<int, dim> process_grid{};
  /// Every rank's owned box, indexed by rank (one entry, `owned`, for a single process).
  std::vector<CellBox<dim>> rank_owned;

  /// The partition of a single process: owns all cells.
  static Partition serial(const std::array<int, dim>& global_cells);
  /// A process owning `owned`, with a ghost layer of `ghost_width` cells around it.
  static Partition sub_box(const std::array<int, dim>& global_cells, const CellBox<dim>& owned,
                           int ghost_width = 1);
  /// The partition of comm's ranks into sub-boxes: the process grid of choose_process_grid, each
  /// direction's cells split into nearly equal parts (they differ by at most one cell). With
  /// `alignment` a > 1 every sub-box boundary is a multiple of a cells (the cells are split in
  /// blocks of a, which must divide every direction's count), so that the partition coarsens
  /// log2(a) times by halving (multigrid levels, coarsened()).
  static Partition distributed(const std::array<int, dim>& global_cells, const Communicator& comm,
                               int ghost_width = 1, int alignment = 1);
  /// Whether every rank's owned box halves into whole cells (all its bounds even).
  bool coarsenable() const;
  /// The partition of the mesh with half the cells per direction: every owned box halved, the
  /// same ranks, process grid and ghost width. Needs coarsenable().
  Partition coarsened() const;
  /// The ranks owning at least one cell of `box` (a box of cells, maybe outside the grid).
  std::vector<int> ranks_touching(const CellBox<dim>& box) const;
  bool is_distributed() const { return comm.distributed(); }
};

/// The process grid (ranks per direction, product n_ranks) with every direction's count at most
/// its cells that minimizes the interface between the sub-boxes (the sum over the cut planes of
/// their cell faces); ties go to the grid with more ranks along the last directions. Throws
/// InputError when no grid fits (more ranks than the cells allow).
template <int dim>
std::array<int, dim> choose_process_grid(const std::array<int, dim>& global_cells, int n_ranks);

/// The cells [begin, end) of part `i` of `n` cells split into `parts` nearly equal parts (the
/// first n % parts parts have one cell more).
std::array<int, 2> split_range(int n, int parts, int i);

/// A box with n_d cells per direction, optionally mapped (Domain). Cells are numbered
/// lexicographically (x fastest) within the owned box.
template <int dim>
class BoxMesh {
 public:
  /// The unit box, Cartesian or with the built-in deformation.
  BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry);
  BoxMesh(const std::array<int, dim>& n_cells, GeometryKind geometry, const Partition<dim>& partition);
  BoxMesh(const std::array<int, dim>& n_cells, const Domain<dim>& domain);
  BoxMesh(const std::array<int, dim>& n_cells, const Domain<dim>& domain, const Partition<dim>& partition);
  /// 2^level cells per direction.
  static BoxMesh refined(int level, GeometryKind geometry);

  const std::array<int, dim>& n_cells() const { return partition_.global_cells; }
  std::size_t n_global_cells() const;
  std::size_t n_owned_cells() const { return partition_.owned.n_cells(); }
  const Partition<dim>& partition() const { return partition_; }
  GeometryKind geometry() const { return domain_.kind; }
  const Domain<dim>& domain() const { return domain_; }
  /// Cell size per direction of the parameter box (the undeformed grid).
  Point<dim> cell_size() const;
  /// Lower corner of the parameter box.
  const Point<dim>& origin() const { return domain_.lower; }
  /// The point of the parameter box at local coordinates xi of cell position c (c + xi in cells).
  Point<dim> parameter_point(const Point<dim>& cell_coordinates) const;

  /// Multi-index (global) of owned cell number `cell` (0 <= cell < n_owned_cells()).
  std::array<int, dim> cell_index(std::size_t cell) const;
  /// Owned cell number of the global multi-index `c` (which must be owned).
  std::size_t cell_number(const std::array<int, dim>& c) const;

  /// The map from the parameter box onto the mesh's domain: identity for Cartesian meshes,
  /// x_d + eps_d * prod_j sin(pi x_j) for the deformed unit box (fixes the boundary, det J > 0),
  /// the user's map for mapped boxes.
  Point<dim> map(const Point<dim>& x) const;
  /// Amplitudes eps_d of the deformation.
  static Point<dim> deformation_amplitudes();

 private:
  Partition<dim> partition_;
  Domain<dim> domain_;
};

/// The ghosted box of a (distributed) mesh as a mesh of its own, owned by one process: the same
/// cells, parameter points and map (the built-in deformation as a map of the sub-box), so that
/// kernels written for a whole box run on a rank's stored cells. Its lattice is the DoF lattice
/// of the mesh's ghosted box, entry for entry.
template <int dim>
BoxMesh<dim> ghosted_box_mesh(const BoxMesh<dim>& mesh);

}  // namespace tcfem::mesh
