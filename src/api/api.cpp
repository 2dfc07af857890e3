// The public C++ API (include/tcfem/tcfem.h) on top of the library's layers: the geometry and the
// problem become a mesh::Domain and a problem::ProblemDefinition; solve() runs the same operators,
// multigrid and Krylov solvers as `tcfem solve`, on the CPU or the GPU.
#include "tcfem/tcfem.h"

#include <chrono>
#include <cmath>
#include <algorithm>
#include <cstdio>

#include "core/communicator.h"
#include "core/device.h"
#include "core/error.h"
#include "fe/dof_layout.h"
#include "io/gmsh_reader.h"
#include "mesh/structured_block.h"
#include "multigrid/device/multigrid_solve.h"
#include "multigrid/host/multigrid_solve.h"
#include "operators/cpu/laplace_operator.h"
#include "problem/boundary_value_problem.h"
#include "problem/expression.h"
#include "problem/problem_file.h"
#include "solvers/cg.h"
#include "solvers/cuda_solve.h"
#include "solvers/fgmres.h"

namespace tcfem {

template <int dim>
struct Geometry<dim>::Data {
  mesh::Domain<dim> domain;
  std::array<int, dim> cells{};
  std::array<std::string, 2 * dim> face_parts;
  std::string mesh_file;  ///< empty: a box
};

template <int dim>
struct Result<dim>::State {
  State(const mesh::Domain<dim>& domain, const std::array<int, dim>& cells, const mesh::Partition<dim>& partition,
        fe::Disc disc, int degree, std::shared_ptr<const problem::ProblemDefinition<dim>> p)
      : mesh(cells, domain, partition), dofs(mesh, disc, degree, p->dirichlet_faces), problem(std::move(p)) {}
  mesh::BoxMesh<dim> mesh;
  fe::DofLayout<dim> dofs;
  Vector<double> x;
  std::shared_ptr<const problem::ProblemDefinition<dim>> problem;
};

namespace {

constexpr int max_cells = 1 << 20;

template <int dim>
std::array<std::string, 2 * dim> box_faces() {
  std::array<std::string, 2 * dim> f;
  for (int i = 0; i < 2 * dim; ++i) f[i] = problem::box_face_name(i);
  return f;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// ---- geometry -------------------------------------------------------------------------------------

template <int dim>
Geometry<dim> Geometry<dim>::box(const Point<dim>& lower, const Point<dim>& upper, const std::array<int, dim>& cells) {
  auto d = std::make_shared<Data>();
  for (int i = 0; i < dim; ++i) {
    if (!(lower[i] < upper[i]) || !std::isfinite(lower[i]) || !std::isfinite(upper[i]))
      throw InputError("Geometry::box: direction " + std::to_string(i) + " needs finite lower < upper");
    if (cells[i] < 1 || cells[i] > max_cells)
      throw InputError("Geometry::box: cells[" + std::to_string(i) + "] = " + std::to_string(cells[i]) +
                       " is not in 1..2^20");
  }
  d->domain = mesh::Domain<dim>::box(lower, upper);
  d->cells = cells;
  d->face_parts = box_faces<dim>();
  return Geometry(d);
}

template <int dim>
Geometry<dim> Geometry<dim>::mesh(const std::string& path) {
  const auto block = mesh::StructuredBlock<dim>::recognize(io::read_gmsh_mesh<dim>(path));
  auto d = std::make_shared<Data>();
  d->domain = block.domain();
  d->cells = block.cells();
  d->face_parts = block.face_parts();
  d->mesh_file = path;
  return Geometry(d);
}

template <int dim>
Geometry<dim> Geometry<dim>::mapped(Map<dim> map) const {
  if (!map) throw InputError("Geometry::mapped: the map is empty");
  if (!data_->mesh_file.empty())
    throw InputError("Geometry::mapped: the geometry of the mesh " + data_->mesh_file + " cannot be mapped again");
  if (data_->domain.kind == mesh::GeometryKind::mapped)
    throw InputError("Geometry::mapped: the box is mapped already; compose the maps into one");
  auto d = std::make_shared<Data>(*data_);
  d->domain = mesh::Domain<dim>::box(data_->domain.lower, data_->domain.upper, std::move(map));
  return Geometry(d);
}

template <int dim>
Geometry<dim> Geometry<dim>::refined(int levels) const {
  if (levels < 0 || levels > 20) throw InputError("Geometry::refined: levels must be in 0..20");
  auto d = std::make_shared<Data>(*data_);
  for (int i = 0; i < dim; ++i) {
    const long n = long(d->cells[i]) << levels;
    if (n > max_cells) throw InputError("Geometry::refined: more than 2^20 cells per direction");
    d->cells[i] = int(n);
  }
  return Geometry(d);
}

template <int dim>
const std::array<int, dim>& Geometry<dim>::cells() const {
  return data_->cells;
}

template <int dim>
std::vector<std::string> Geometry<dim>::boundary_parts() const {
  std::vector<std::string> parts;
  for (const auto& p : data_->face_parts)
    if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
  return parts;
}

// ---- problem files ---------------------------------------------------------------------------------

template <int dim>
Problem<dim> read_problem(const std::string& path, int* degree) {
  const auto file = problem::read_problem_file(path);
  const auto def = std::make_shared<const problem::ProblemDefinition<dim>>(problem::make_problem<dim>(file));
  auto g = std::make_shared<typename Geometry<dim>::Data>();
  g->domain = def->domain;
  g->cells = def->cells;
  g->face_parts = def->face_parts;
  g->mesh_file = file.mesh.value_or("");
  Problem<dim> p{Geometry<dim>::from_data(g)};
  if (def->coefficient)
    p.coefficient = [def](const Point<dim>& x) { return def->coefficient(x.data()); };
  else
    p.constant_coefficient = def->constant_coefficient;
  p.rhs = def->rhs;
  for (int f = 0; f < 2 * dim; ++f) (def->dirichlet_faces[f] ? p.dirichlet : p.neumann)[def->face_parts[f]] = def->boundary[f];
  p.exact = def->exact;
  if (def->exact) p.exact_gradient = def->exact_gradient;
  if (degree && def->degree) *degree = *def->degree;
  return p;
}

// ---- solve -------------------------------------------------------------------------------------------

template <int dim>
Result<dim> solve(const Problem<dim>& pr, const SolverSettings& s) {
  const auto t_start = std::chrono::steady_clock::now();
  if (s.degree < 1 || s.degree > 8) throw InputError("SolverSettings::degree: " + std::to_string(s.degree) + " is not in 1..8");
  if (!(s.tolerance > 0.0) || !(s.tolerance < 1.0)) throw InputError("SolverSettings::tolerance: must be in (0, 1)");
  if (s.max_iterations < 1) throw InputError("SolverSettings::max_iterations: must be at least 1");
  const auto& g = pr.geometry.data();
  const bool dg = s.discretization == Discretization::dg;
  const bool jacobi = s.preconditioner == Preconditioner::jacobi;
  if (jacobi && (s.solver == Solver::multigrid || s.solver == Solver::full_multigrid))
    throw InputError("SolverSettings: the multigrid solvers take no Jacobi preconditioner");
  if (jacobi && s.solver == Solver::gmres) throw InputError("SolverSettings: GMRES runs with the multigrid preconditioner");

  // the problem's definition, checked as a problem file's is
  auto def = std::make_shared<problem::ProblemDefinition<dim>>();
  def->domain = g.domain;
  def->cells = g.cells;
  def->degree = s.degree;
  if (pr.coefficient) {
    def->coefficient = [a = pr.coefficient](const double* x) {
      Point<dim> p;
      for (int d = 0; d < dim; ++d) p[d] = x[d];
      return a(p);
    };
  } else {
    if (!(pr.constant_coefficient > 0.0) || !std::isfinite(pr.constant_coefficient))
      throw InputError("Problem::constant_coefficient: must be positive and finite");
    def->constant_coefficient = pr.constant_coefficient;
  }
  def->rhs = pr.rhs ? pr.rhs : [](const Point<dim>&) { return 0.0; };
  problem::set_boundary_parts<dim>(*def, g.face_parts, pr.dirichlet, pr.neumann, "Problem: ",
                                   g.mesh_file.empty() ? "the box" : "the mesh " + g.mesh_file);
  if (pr.exact) {
    def->exact = pr.exact;
    def->exact_gradient_given = bool(pr.exact_gradient);
    def->exact_gradient = pr.exact_gradient ? pr.exact_gradient : [u = pr.exact](const Point<dim>& x) {
      const auto g3 = problem::numerical_gradient(
          [&u](const double* p) {
            Point<dim> q;
            for (int d = 0; d < dim; ++d) q[d] = p[d];
            return u(q);
          },
          dim, x.data());
      Point<dim> r;
      for (int d = 0; d < dim; ++d) r[d] = g3[d];
      return r;
    };
  }
  bool any_neumann = false, curved = g.domain.kind == mesh::GeometryKind::mapped;
  for (int f = 0; f < 2 * dim; ++f) any_neumann |= !def->dirichlet_faces[f];

  Result<dim> r;
  const Communicator comm =
      s.mpi_communicator ? Communicator::from_fortran_handle(*s.mpi_communicator) : Communicator();
  // the backend
  const bool cpu_only = jacobi && s.solver != Solver::cg;
  if (comm.distributed() && s.backend == Backend::cuda) {
    // one GPU per rank (its number among the ranks of its host), the multigrid solvers
    if (jacobi)
      throw InputError("SolverSettings::backend: cuda with " + std::to_string(comm.size()) +
                       " ranks runs the multigrid solvers; Jacobi with several ranks runs on Backend::cpu");
    collective(comm, [&] {
      set_process_device(comm.local_rank());
      require_device("SolverSettings::backend cuda");
    });
    r.backend = "cuda";
    r.backend_reason = "requested";
  } else if (comm.distributed()) {
    r.backend = "cpu";
    r.backend_reason = s.backend == Backend::cpu ? "requested" : std::to_string(comm.size()) + " ranks";
  } else if (s.backend == Backend::cpu) {
    r.backend = "cpu";
    r.backend_reason = "requested";
  } else if (s.backend == Backend::cuda) {
    if (cpu_only)
      throw InputError("SolverSettings::backend: cuda has no path for this solver with Jacobi");
    require_device("SolverSettings::backend cuda");
    r.backend = "cuda";
    r.backend_reason = "requested";
  } else if (cpu_only) {
    r.backend = "cpu";
    r.backend_reason = "this solver with Jacobi runs on the CPU";
  } else {
    const auto info = query_device();
    r.backend = info.available ? "cuda" : "cpu";
    r.backend_reason = info.available ? info.name + " found" : "no usable CUDA device (" + info.reason + ")";
  }
  const bool cuda = r.backend == "cuda";

  // several ranks: a sub-box each, its bounds on a coarse level's cells for multigrid
  const int alignment = comm.distributed() && !jacobi
                            ? multigrid::LevelHierarchy<dim>::partition_alignment(g.cells, comm.size())
                            : 1;
  // (the GPU runs a rank's levels on its ghosted boxes, two cells wide)
  const auto partition = comm.distributed() ? mesh::Partition<dim>::distributed(g.cells, comm, cuda ? 2 : 1, alignment)
                                            : mesh::Partition<dim>::serial(g.cells);
  auto state = std::make_shared<typename Result<dim>::State>(g.domain, g.cells, partition,
                                                              dg ? fe::Disc::dg : fe::Disc::cg, s.degree, def);
  const auto& mesh = state->mesh;
  const auto& dofs = state->dofs;
  operators::OperatorConfig cfg;
  cfg.disc = dg ? fe::Disc::dg : fe::Disc::cg;
  cfg.degree = s.degree;
  cfg.coefficient = def->coefficient;
  // an error in one rank's sub-box (det J, the coefficient) ends every rank
  problem::DiscreteSystem<dim> sys;
  collective(comm, [&] { sys = problem::assemble_system<dim>(mesh, dofs, cfg, *def); });
  Vector<double>& x = state->x;
  x = fe::make_vector<double>(dofs);
  r.n_dofs = dofs.n_dofs();

  solvers::SolverControl control;
  control.tolerance = s.tolerance;
  control.max_iterations = s.max_iterations;
  if (s.verbose && comm.rank() == 0)
    control.progress = [](int it, double res, double t) {
      std::printf("  iteration %6d  relative residual %.3e  (%.1f s)\n", it, res, t);
      std::fflush(stdout);
    };
  solvers::SolverResult result;
  double setup = seconds_since(t_start), solve_time = 0.0;
  if (!jacobi) {
    multigrid::MultigridSolveSettings mgs;
    mgs.solver = s.solver == Solver::fgmres    ? multigrid::OuterSolver::fgmres
                 : s.solver == Solver::gmres   ? multigrid::OuterSolver::gmres
                 : s.solver == Solver::cg      ? multigrid::OuterSolver::cg
                 : s.solver == Solver::multigrid ? multigrid::OuterSolver::mg
                                                 : multigrid::OuterSolver::fmg;
    mgs.start = s.full_multigrid_start ? multigrid::StartKind::fmg : multigrid::StartKind::zero;
    const bool fp32 = s.multigrid_precision == Precision::fp32 ||
                      (s.multigrid_precision == Precision::automatic && cuda && s.solver != Solver::gmres);
    mgs.precision = fp32 ? precision::Precision::fp32 : precision::Precision::fp64;
    // cg: the vertex patches (separable surrogates on curved cells and with a coefficient; with
    // Neumann parts the patches of the vertices on them too, on curved cells or with a coefficient
    // from degree 4 on: as `tcfem solve --smoother auto`); dg: on Dirichlet boxes with a constant
    // coefficient (several ranks on the GPU: Chebyshev, the dg patches run on one GPU)
    const bool local_residuals = !curved && !def->coefficient;
    bool patch = !(dg && (any_neumann || curved || def->coefficient)) && !(dg && cuda && comm.distributed()) &&
                 !(any_neumann && s.degree < 4 && !local_residuals);
    if (s.smoother == Smoother::patch) patch = true;
    if (s.smoother == Smoother::chebyshev) patch = false;
    mgs.multigrid.smoother.kind = patch ? multigrid::SmootherKind::patch : multigrid::SmootherKind::chebyshev;
    multigrid::MultigridSolveReport report;
    if (cuda) {
      multigrid::DeviceMultigridOptions options;
      multigrid::DeviceMultigridInfo info;
      collective(comm, [&] {
        report = multigrid::solve_with_multigrid_cuda<dim>(mesh, dofs, cfg, sys.rhs, x, mgs, control, options, info);
      });
    } else {
      operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
      collective(comm, [&] { report = multigrid::solve_with_multigrid<dim>(mesh, cfg, A, sys.rhs, x, mgs, control); });
    }
    result = report.result;
    setup += report.setup_seconds;
    solve_time = report.solve_seconds;
    r.smoother = report.levels.empty() ? "" : report.levels.back().smoother;
  } else {
    operators::LaplaceOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
    Vector<double> diag;
    A.compute_diagonal(diag);
    if (cuda) {
      const auto info = solvers::solve_cg_cuda<dim>(mesh, dofs, cfg, sys.rhs, diag, x, control);
      result = info.result;
      setup += info.setup_seconds;
      solve_time = info.solve_seconds;
    } else {
      setup = seconds_since(t_start);
      const auto t = std::chrono::steady_clock::now();
      solvers::JacobiPreconditioner<double> P(diag);
      if (s.solver == Solver::fgmres)
        result = solvers::solve_fgmres(A, x, sys.rhs, P, control, solvers::FgmresSettings{});
      else
        result = solvers::solve_cg(A, x, sys.rhs, P, control);
      solve_time = seconds_since(t);
    }
  }
  if (sys.lift.size() == x.size())
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += sys.lift[i];
  r.converged = result.converged;
  r.iterations = result.iterations;
  r.relative_residual = result.final_relative_residual;
  r.setup_seconds = setup;
  r.solve_seconds = solve_time;
  if (def->exact) {
    const auto t = std::chrono::steady_clock::now();
    const auto e = problem::compute_errors<dim>(mesh, dofs, x, def->exact, def->exact_gradient);
    r.l2_error = e.l2;
    r.h1_seminorm_error = e.h1_semi;
    r.error_seconds = seconds_since(t);
  }
  x.update_ghost_values();  // the owned cells' nodes of other ranks
  std::vector<double> points;
  problem::cell_node_values<dim>(mesh, dofs, x, points, r.cell_node_values);
  r.cell_node_points.resize(r.cell_node_values.size());
  for (std::size_t i = 0; i < r.cell_node_points.size(); ++i)
    for (int d = 0; d < dim; ++d) r.cell_node_points[i][d] = points[3 * i + d];
  r.state = state;
  return r;
}

template <int dim>
void Result<dim>::write_vtu(const std::string& path) const {
  if (!state) throw InputError("Result::write_vtu: the result holds no solution");
  problem::write_solution_vtu<dim>(path, state->mesh, state->dofs, state->x, state->problem.get());
}

template class Geometry<2>;
template class Geometry<3>;
template struct Result<2>;
template struct Result<3>;
template Problem<2> read_problem<2>(const std::string&, int*);
template Problem<3> read_problem<3>(const std::string&, int*);
template Result<2> solve<2>(const Problem<2>&, const SolverSettings&);
template Result<3> solve<3>(const Problem<3>&, const SolverSettings&);

}  // namespace tcfem
