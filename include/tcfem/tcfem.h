#pragma once
// tcfem's public C++ API: state -div(a grad u) = f in a domain, u = g on Dirichlet parts and
// a grad u . n = h on Neumann parts of its boundary, with a, f, g, h as C++ callables or as
// expressions of a problem file; solve it with continuous (cg) or SIPG (dg) Q_k elements on the
// CPU or a CUDA GPU; read iterations, errors, timings and the solution, and write it as VTU.
//
//   find_package(tcfem REQUIRED)
//   target_link_libraries(my_program PRIVATE tcfem::tcfem)
//
// Errors in the input (a part listed twice, a coefficient <= 0 at a quadrature point, an inverted
// map, an unreadable mesh, ...) throw tcfem::InputError with a one-line message; other failures
// throw tcfem::Error. Both derive from std::runtime_error.
#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tcfem/error.h"

namespace tcfem {

template <int dim>
using Point = std::array<double, dim>;

/// A scalar function of the physical point. It is called from several threads at once.
template <int dim>
using Function = std::function<double(const Point<dim>&)>;

/// A map from the parameter box onto the domain (thread-safe, positive Jacobian determinant).
template <int dim>
using Map = std::function<Point<dim>(const Point<dim>&)>;

/// The domain and its cells: a box, a mapped box, or a Gmsh mesh of one structured block.
template <int dim>
class Geometry {
 public:
  /// The box [lower, upper] with cells[d] cells in direction d. Its boundary parts are the faces
  /// xmin, xmax, ymin, ymax (and zmin, zmax in 3D).
  static Geometry box(const Point<dim>& lower, const Point<dim>& upper, const std::array<int, dim>& cells);
  /// A Gmsh mesh (.msh 2.2 or 4.1) whose hexahedra (quadrilaterals in 2D) of order 1 or 2 form one
  /// structured block; its boundary parts are the mesh's physical groups of dimension dim - 1.
  /// Throws InputError for other meshes, or if this build of tcfem reads no Gmsh meshes.
  static Geometry mesh(const std::string& path);

  /// This box mapped by `map` (x = map(X) for X in the box; the parts keep their names), held
  /// isoparametrically with the solution's degree.
  Geometry mapped(Map<dim> map) const;
  /// Every cell split into 2^levels cells per direction (the geometry is not changed).
  Geometry refined(int levels) const;

  const std::array<int, dim>& cells() const;
  /// The names of the boundary parts.
  std::vector<std::string> boundary_parts() const;

  struct Data;  ///< the implementation's (incomplete here)
  const Data& data() const { return *data_; }
  static Geometry from_data(std::shared_ptr<const Data> d) { return Geometry(std::move(d)); }

 private:
  explicit Geometry(std::shared_ptr<const Data> d) : data_(std::move(d)) {}
  std::shared_ptr<const Data> data_;
};

/// The problem: the geometry, the coefficient, the data and optionally the exact solution.
template <int dim>
struct Problem {
  explicit Problem(Geometry<dim> g) : geometry(std::move(g)) {}
  Geometry<dim> geometry;
  /// a(x) > 0 (checked at every quadrature point of every multigrid level); empty: the constant
  /// `constant_coefficient`, which keeps the constant-coefficient fast paths.
  Function<dim> coefficient;
  double constant_coefficient = 1.0;
  Function<dim> rhs;                               ///< f; empty: 0
  std::map<std::string, Function<dim>> dirichlet;  ///< boundary part -> g
  std::map<std::string, Function<dim>> neumann;    ///< boundary part -> h (a grad u . n)
  /// Optional exact solution: the L2 and H1-seminorm errors are then computed.
  Function<dim> exact;
  /// Optional gradient of the exact solution; empty: fourth-order central differences of `exact`.
  std::function<Point<dim>(const Point<dim>&)> exact_gradient;
};

/// Reads a problem file (JSON, docs/user_guide.md "Your own problem"); its expressions become the
/// problem's functions. `degree` receives the file's degree if it gives one.
template <int dim>
Problem<dim> read_problem(const std::string& path, int* degree = nullptr);

enum class Discretization { cg, dg };
enum class Backend { automatic, cpu, cuda };
enum class Solver { fgmres, cg, gmres, multigrid, full_multigrid };
enum class Preconditioner { multigrid, jacobi };
enum class Smoother { automatic, patch, chebyshev };
enum class Precision { automatic, fp64, fp32 };

struct SolverSettings {
  int degree = 4;  ///< 1..8
  Discretization discretization = Discretization::cg;
  /// automatic: the GPU when one is usable and the problem has a device path, else the CPU.
  Backend backend = Backend::automatic;
  Solver solver = Solver::fgmres;
  Preconditioner preconditioner = Preconditioner::multigrid;
  /// automatic: the vertex-patch smoother (for cg on curved cells and with a variable coefficient
  /// with separable surrogates as local solvers; with Neumann parts also the patches of the
  /// vertices on them), Chebyshev for dg with Neumann parts, on curved geometry or with a variable
  /// coefficient, and for cg with Neumann parts at degrees below 4 or on several GPUs.
  Smoother smoother = Smoother::automatic;
  /// of the V-cycle; automatic: fp32 on the GPU, fp64 on the CPU.
  Precision multigrid_precision = Precision::automatic;
  bool full_multigrid_start = true;  ///< start the Krylov solver from a full-multigrid cycle
  double tolerance = 1e-8;           ///< relative residual
  int max_iterations = 500;
  bool verbose = false;  ///< one line per iteration on stdout (rank 0 of several)
  /// The processes that solve the problem together: the Fortran handle of an MPI communicator,
  /// MPI_Comm_c2f(comm) (so that this header needs no MPI), called by every rank of it with the
  /// same problem and settings. Each rank owns a sub-box of the cells; the iterations, residual
  /// and errors are those of the whole problem, cell_node_values those of the rank's cells.
  /// Several ranks solve on the CPU (every solver) unless backend is Backend::cuda: then each rank
  /// takes the GPU of its number among the ranks of its host and the multigrid solvers run with
  /// the smoothers of one GPU (dg: Chebyshev; Jacobi is refused); write_vtu then writes a .pvtu.
  /// Empty: this process alone.
  std::optional<int> mpi_communicator;
};

template <int dim>
struct Result {
  bool converged = false;
  int iterations = 0;
  double relative_residual = 0.0;
  std::size_t n_dofs = 0;
  std::optional<double> l2_error, h1_seminorm_error;  ///< only with an exact solution
  double setup_seconds = 0.0, solve_seconds = 0.0, error_seconds = 0.0;
  std::string backend;         ///< cpu or cuda
  std::string backend_reason;  ///< why
  std::string smoother;        ///< the multigrid smoother (empty for Jacobi)
  /// The solution at the nodes of every cell (the cell's (k+1)^dim nodes in tensor order) and
  /// the nodes' physical points (with several ranks: of this rank's cells).
  std::vector<double> cell_node_values;
  std::vector<Point<dim>> cell_node_points;

  /// Writes the solution on the curved cells (VTK Lagrange cells) with the coefficient and, with
  /// an exact solution, u_exact and the error. The file appears complete or not at all. A result
  /// of several ranks: every rank calls it with a path ending in .pvtu; each writes its cells to
  /// NAME_<rank>.vtu beside it and rank 0 the .pvtu that joins them (InputError for another name).
  void write_vtu(const std::string& path) const;

  struct State;  ///< the implementation's
  std::shared_ptr<const State> state;
};

/// Solves the problem.
template <int dim>
Result<dim> solve(const Problem<dim>& problem, const SolverSettings& settings = {});

}  // namespace tcfem
