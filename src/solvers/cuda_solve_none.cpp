// Builds without the CUDA backend.
#include "core/error.h"
#include "solvers/cuda_solve.h"

namespace tcfem::solvers {

template <int dim>
CudaSolveInfo solve_cg_cuda(const mesh::BoxMesh<dim>&, const fe::DofLayout<dim>&, const operators::OperatorConfig&,
                            const Vector<double>&, const Vector<double>&, Vector<double>&, const SolverControl&,
                            VariantChoice, const ExchangeOptions&) {
  throw InputError("--backend cuda: this build of tcfem has no CUDA backend (nvcc was not found at configure time)");
}

template CudaSolveInfo solve_cg_cuda<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                        const operators::OperatorConfig&, const Vector<double>&,
                                        const Vector<double>&, Vector<double>&, const SolverControl&,
                                        VariantChoice, const ExchangeOptions&);
template CudaSolveInfo solve_cg_cuda<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                        const operators::OperatorConfig&, const Vector<double>&,
                                        const Vector<double>&, Vector<double>&, const SolverControl&,
                                        VariantChoice, const ExchangeOptions&);

}  // namespace tcfem::solvers
