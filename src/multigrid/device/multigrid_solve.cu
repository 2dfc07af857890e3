#include "multigrid/device/multigrid_solve.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "core/device.h"
#include "core/error.h"
#include "core/memory.h"
#include "multigrid/device/multigrid.h"
#include "solvers/device_blas.h"
#include "solvers/device_krylov.h"

namespace tcfem::multigrid {

namespace {
using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}
/// Host clock for the outer totals; waits for the device first when components are timed.
clock_type::time_point timing_point() {
  if (device::component_timing()) device::synchronize();
  return clock_type::now();
}

template <int dim, typename Number>
MultigridSolveReport run(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                         const operators::OperatorConfig& config, const Vector<double>& b, Vector<double>& x,
                         const MultigridSolveSettings& settings, const solvers::SolverControl& control,
                         const DeviceMultigridOptions& options, DeviceMultigridInfo& info) {
  MultigridSolveReport report;
  const auto t_setup = clock_type::now();
  auto t_stage = t_setup;
  // one line per setup stage with its seconds (DeviceMultigrid adds those of its levels)
  auto progress = [&](const char* what) {
    if (!options.progress) return;
    char text[200];
    std::snprintf(text, sizeof text, "  mg setup        %s (%.2f s)\n", what, seconds_since(t_stage));
    t_stage = clock_type::now();
    options.progress(text);
  };
  LevelHierarchy<dim> hierarchy(mesh, dofs.dirichlet_faces(), config.disc, config.degree);
  progress("level meshes and DoF layouts");
  const std::size_t n = hierarchy.dofs(hierarchy.finest()).n_local();
  TCFEM_ASSERT((options.device_rhs || n == b.size()) && (!options.copy_solution || n == x.size() || x.size() == 0),
               "hierarchy and vector sizes differ");
  MultigridSettings mg_settings = settings.multigrid;
  if (settings.solver == OuterSolver::cg) mg_settings.post_smooth_order = SweepOrder::backward;  // symmetric
  mg_settings.fmg_fp64_residuals = starts_with_fmg(settings);
  DeviceMultigrid<dim, Number> mg(hierarchy, config, mg_settings, settings.precision, options.progress,
                                  options.exchange);
  DeviceGhostExchange* fine_ghosts = mg.fine_ghosts();  // distributed: the outer operator's ghost update
  const device::DeviceReduction* reduction = mg.fine_reduction();
  if (fine_ghosts) {
    info.exchange_overlapped = mg.level_operator(mg.n_levels() - 1).device_operator().is_split();
    info.exchange_path = std::string(to_string(fine_ghosts->path())) +
                         (info.exchange_overlapped ? ", beside the interior cells" : ", before the apply");
    info.exchange_bytes = fine_ghosts->bytes_sent();
  }
  t_stage = clock_type::now();
  const int finest = mg.n_levels() - 1;
  operators::DeviceKernelKey geometry;  // of the mesh the kernels run on (distributed: the ghosted box)
  operators::set_geometry(geometry, mg.operator_mesh(finest), mg.operator_dofs(finest), config);
  // the outer fp64 operator: the finest level's when the V-cycle runs in fp64
  std::unique_ptr<operators::DeviceOperator> outer_owned;
  const operators::DeviceOperator* outer = nullptr;
  if constexpr (sizeof(Number) == 8) {
    outer = &mg.level_operator(finest).device_operator();
    info.outer_kernel = mg.level_kernels()[finest];
  } else if (const auto* fine64 = mg.fine_operator_fp64()) {  // the finest level's fp64 operator (post-smoothing, FMG)
    outer = &fine64->device_operator();
    info.outer_kernel = device_level_key(dim, config, geometry, precision::Precision::fp64, false).to_string() +
                        operators::describe(outer->choices());
  } else {
    const auto key = device_level_key(dim, config, geometry, precision::Precision::fp64, false);
    collective(mesh.partition().comm, [&] {
      outer_owned = operators::make_device_operator<dim>(mg.operator_mesh(finest), mg.operator_dofs(finest), key,
                                                         config.device_tuning, config.coefficient,
                                                         config.coefficient_source);
    });
    if (fine_ghosts && options.exchange.overlap)
      outer_owned->split_apply(operators::interior_cells(mesh.partition()));
    outer = outer_owned.get();
    info.outer_kernel = key.to_string() + operators::describe(outer_owned->choices());
  }
  solvers::DeviceVectorD d_b(n), d_x(n);
  if (options.device_rhs) {
    device::set_zero(d_b);
    options.device_rhs(d_b.data(), *outer);
    // distributed: the ghost entries the operator reads as their owners' (b's terms are exact on
    // the owned entries only)
    if (fine_ghosts) fine_ghosts->update_ghosts(d_b.data());
    device::synchronize();
    progress("right-hand side on the device");
  } else {
    d_b.copy_from_host(b.data(), n);
  }
  if (x.size() == n)
    d_x.copy_from_host(x.data(), n);
  else
    device::set_zero(d_x);
  DeviceVector<Number> vb(vcycle_in_double(settings.precision) ? 0 : n), vx(vb.size());
  // one-time costs into the setup: the cuBLAS handle, and the first launch of every kernel of the
  // V-cycle (CUDA loads kernels lazily; the first cycle of a solve took 10-27 ms longer without this)
  solvers::device_blas_handle();
  mg.warm_up();
  device::synchronize();
  report.setup_seconds = seconds_since(t_setup);
  progress("x on the device, first launches");
  report.n_levels = mg.n_levels();
  report.gathered_level = hierarchy.distributed() ? hierarchy.gathered_level() : -1;
  report.levels = mg.level_info();
  report.coarse = mg.coarse_solver_kind();
  report.finest_post_fp64 = mg.finest_post_fp64();
  info.level_kernels = mg.level_kernels();
  info.device_bytes = mg.device_bytes() + (outer_owned ? outer_owned->device_bytes() : 0) + 2 * n * sizeof(double);
  mg.times().reset(mg.n_levels());

  const solvers::DeviceLinearMap A = [&](solvers::DeviceVectorD& dst, const solvers::DeviceVectorD& src) {
    const auto t = timing_point();
    operators::ghosted_vmult(*outer, fine_ghosts, dst.data(), const_cast<double*>(src.data()));
    report.outer_operator_seconds += std::chrono::duration<double>(timing_point() - t).count();
    ++report.outer_operator_calls;
  };
  // z = V-cycle(r) from a zero initial guess, in Number (conversion on entry and exit)
  const solvers::DeviceLinearMap P = [&](solvers::DeviceVectorD& z, const solvers::DeviceVectorD& r) {
    const auto t = timing_point();
    auto& times = mg.times();
    if constexpr (sizeof(Number) == 8) {
      device::set_zero(z);
      mg.vcycle(z, r, true);
    } else {
      const auto tc = timing_point();
      device::convert(vb, r);
      device::set_zero(vx);
      times.conversion += std::chrono::duration<double>(timing_point() - tc).count();
      mg.vcycle(vx, vb, true);
      const auto tc2 = timing_point();
      device::convert(z, vx);
      times.conversion += std::chrono::duration<double>(timing_point() - tc2).count();
      mg.finest_post_smooth_fp64(z, r);
    }
    report.preconditioner_seconds += std::chrono::duration<double>(timing_point() - t).count();
    ++report.preconditioner_calls;
  };
  device::synchronize();
  // every rank starts the clock together (their setups end at different times), so that each
  // rank's solve time is the solve's
  if (mesh.partition().comm.distributed()) mesh.partition().comm.barrier();
  const auto t_solve = clock_type::now();
  if (starts_with_fmg(settings)) {
    const auto t_fmg = clock_type::now();
    mg.full_multigrid_fp64(d_x, d_b);
    device::synchronize();
    report.fmg_seconds = seconds_since(t_fmg);
  }
  switch (settings.solver) {
    case OuterSolver::fgmres:
      report.result = solvers::solve_fgmres_device(A, d_x, d_b, P, control, outer_fgmres_settings(settings),
                                                   &report.krylov, reduction);
      break;
    case OuterSolver::gmres:
      report.result = solvers::solve_gmres_left_device(A, d_x, d_b, P, control, outer_fgmres_settings(settings),
                                                       &report.krylov, reduction);
      break;
    case OuterSolver::cg:
      report.result = solvers::solve_cg_device(A, d_x, d_b, P, control, reduction);
      break;
    case OuterSolver::fmg:
    case OuterSolver::mg:
      report.result = solvers::solve_richardson_device(A, d_x, d_b, P, control, reduction);
      break;
  }
  device::synchronize();
  report.solve_seconds = seconds_since(t_solve);
  // distributed: the ghosts of one cell layer from their owners (the owned cells' errors read them)
  if (fine_ghosts && (options.device_solution || options.copy_solution)) fine_ghosts->update_ghosts(d_x.data());
  if (options.device_solution) options.device_solution(d_x.data());
  if (options.copy_solution) {
    if (x.size() != n) x.resize(n);
    d_x.copy_to_host(x.data());
  }
  report.times = mg.times();
  info.exchange_seconds = mg.exchange_seconds();
  info.exchange_calls = mg.exchange_calls();
  info.component_times = device::component_timing();
  if (!info.component_times) {
    // without synchronization the host clock saw launches, not device work: leave the seconds out
    for (auto& l : report.times.levels) l.smoother = l.operator_apply = l.transfer = l.vector_ops = l.coarse = 0.0;
    report.times.conversion = 0.0;
  }
  return report;
}
}  // namespace

template <int dim>
MultigridSolveReport solve_with_multigrid_cuda(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                               const operators::OperatorConfig& config, const Vector<double>& b,
                                               Vector<double>& x, const MultigridSolveSettings& settings,
                                               const solvers::SolverControl& control,
                                               const DeviceMultigridOptions& options, DeviceMultigridInfo& info) {
  const DeviceInfo dev = require_device("--backend cuda");
  info.device_name = dev.name;
  check_outer_solver_precision(settings);
  const auto& comm = mesh.partition().comm;
  // this rank's part (a distributed mesh: its ghosted box), refused on every rank where one lacks memory
  auto need = estimate_device_multigrid_memory(dim, double(dofs.n_local()), config, mesh.geometry(), settings,
                                               !dofs.all_faces_dirichlet());
  {
    // a dense coarse factor (fp64) beyond the estimate's fixed part
    double coarse = 1.0;
    for (const int c : LevelHierarchy<dim>::coarsest_cells(mesh.n_cells()))
      coarse *= config.disc == fe::Disc::cg ? double(c) * config.degree + 1 : double(c) * (config.degree + 1);
    const auto kind = settings.multigrid.coarse;
    if (kind == CoarseSolverKind::cholesky ||
        (kind == CoarseSolverKind::automatic && coarse <= double(max_device_dense_coarse_dofs)))
      need.fixed += 8.0 * coarse * coarse;
  }
  collective(comm, [&] {
    if (need.total() > 0.9 * double(dev.free_memory))
      throw InputError(device_memory_refusal(need, double(dofs.n_local()), double(dev.free_memory), dev.name, settings));
  });
  device::set_component_timing(options.component_timing);
  if (vcycle_in_double(settings.precision))
    return run<dim, double>(mesh, dofs, config, b, x, settings, control, options, info);
  return run<dim, float>(mesh, dofs, config, b, x, settings, control, options, info);
}

template MultigridSolveReport solve_with_multigrid_cuda<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                           const operators::OperatorConfig&, const Vector<double>&,
                                                           Vector<double>&, const MultigridSolveSettings&,
                                                           const solvers::SolverControl&,
                                                           const DeviceMultigridOptions&, DeviceMultigridInfo&);
template MultigridSolveReport solve_with_multigrid_cuda<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                           const operators::OperatorConfig&, const Vector<double>&,
                                                           Vector<double>&, const MultigridSolveSettings&,
                                                           const solvers::SolverControl&,
                                                           const DeviceMultigridOptions&, DeviceMultigridInfo&);

}  // namespace tcfem::multigrid
