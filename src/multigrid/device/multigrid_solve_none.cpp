// Builds without the CUDA backend.
#include "core/error.h"
#include "multigrid/device/multigrid_solve.h"

namespace tcfem::multigrid {

template <int dim>
MultigridSolveReport solve_with_multigrid_cuda(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&,
                                               const operators::OperatorConfig&, const Vector<double>&,
                                               Vector<double>&, const MultigridSolveSettings&,
                                               const solvers::SolverControl&, const DeviceMultigridOptions&,
                                               DeviceMultigridInfo&) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
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
