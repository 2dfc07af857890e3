#pragma once
// Poisson solve on the GPU: vectors and operator in device memory, CG iterations without host
// copies of vectors (one 8-byte residual read-back per iteration for the stopping test).
// Declared without CUDA headers; builds without CUDA throw InputError.
#include "core/vector.h"
#include "fe/dof_layout.h"
#include "operators/device/device_operator.h"
#include "operators/cpu/laplace_operator.h"
#include "solvers/cg.h"

namespace tcfem::solvers {

struct CudaSolveInfo {
  SolverResult result;
  double setup_seconds = 0.0;  ///< device tables and transfers
  double solve_seconds = 0.0;  ///< CG iterations on the device (synchronized)
  std::size_t device_bytes = 0;
  std::string device_name;
  std::string kernel;  ///< the operator kernel used (DeviceKernelKey::to_string)
};

/// Variant choice for solves: the fastest family that supports the key.
enum class VariantChoice { automatic, generic, cuda_core, tensor_core };

/// Solves A x = b with Jacobi-preconditioned CG on the device; x holds the result on return.
template <int dim>
CudaSolveInfo solve_cg_cuda(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                            const operators::OperatorConfig& config, const Vector<double>& b,
                            const Vector<double>& diagonal, Vector<double>& x, const SolverControl& control,
                            VariantChoice variant = VariantChoice::automatic);

}  // namespace tcfem::solvers
