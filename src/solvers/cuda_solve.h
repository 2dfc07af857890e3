#pragma once
// Poisson solve on the GPU: vectors and operator in device memory, CG iterations without host
// copies of vectors (one 8-byte residual read-back per iteration for the stopping test).
// Declared without CUDA headers; builds without CUDA throw InputError.
#include <optional>

#include "core/device_exchange.h"
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
  /// Distributed runs: the ghost exchange's path, its time in the solve and calls, the bytes this
  /// rank sends per exchange, and the time of the operator applies (exchange included, synchronized).
  double apply_seconds = 0.0;  ///< the applies inside the iteration (CUDA events), ghost exchange included
  long apply_calls = 0;
  std::string exchange_path;
  bool exchange_overlapped = false;  ///< the exchange ran beside the interior cells (split applies)
  double exchange_seconds = 0.0;
  long exchange_calls = 0;
  std::size_t exchange_bytes = 0;
};

/// Variant choice for solves: the fastest family that supports the key.
enum class VariantChoice { automatic, generic, cuda_core, tensor_core };

/// Solves A x = b with Jacobi-preconditioned CG on the device; x holds the result on return.
/// On a distributed mesh (a ghost layer of at least two cells) every rank runs the operator on its
/// ghosted box (mesh::ghosted_box_mesh) after a device ghost exchange of the input, and the dot
/// products sum the owned entries over the ranks; x's owned entries hold the result.
template <int dim>
CudaSolveInfo solve_cg_cuda(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                            const operators::OperatorConfig& config, const Vector<double>& b,
                            const Vector<double>& diagonal, Vector<double>& x, const SolverControl& control,
                            VariantChoice variant = VariantChoice::automatic,
                            const ExchangeOptions& exchange = {});

}  // namespace tcfem::solvers
