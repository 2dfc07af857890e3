#pragma once
// Krylov solvers on device vectors in double precision, mirroring the CPU ones step for step:
// FGMRES(m) (solvers/fgmres.h) with the Arnoldi basis V and the preconditioned vectors Z in device
// memory and classical Gram-Schmidt with one re-orthogonalization as block products through
// cuBLAS (c = V^T w as one dgemv, w -= V c as one dgemv); preconditioned CG (solvers/cg.h); and
// the Richardson iteration x += P (b - A x) (solvers/richardson.h). Only scalars go to the host:
// the Gram-Schmidt coefficients and norms of FGMRES, the dot products of CG.
// Includes CUDA headers: for .cu files and device tests only.
#include <functional>

#include "multigrid/device/vector.h"
#include "solvers/cg.h"
#include "solvers/fgmres.h"

namespace tcfem::solvers {

using DeviceVectorD = multigrid::DeviceVector<double>;
/// dst = op(src) on device vectors (asynchronous).
using DeviceLinearMap = std::function<void(DeviceVectorD&, const DeviceVectorD&)>;
/// Vectors spread over ranks: every dot product and norm of the solvers sums the owned entries over
/// the ranks (null: vectors of one process). The maps A and P then update the ghosts they read.
using multigrid::device::DeviceReduction;

SolverResult solve_fgmres_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                                 const DeviceLinearMap& P, const SolverControl& control,
                                 const FgmresSettings& settings = {}, KrylovTimes* times = nullptr,
                                 const DeviceReduction* reduction = nullptr);

/// GMRES(m) with left preconditioning (solvers/fgmres.h, solve_gmres_left): FGMRES on (P A, P r_0)
/// with the identity as preconditioner, for the correction; P a fixed (fp64) map.
SolverResult solve_gmres_left_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                                     const DeviceLinearMap& P, const SolverControl& control,
                                     const FgmresSettings& settings = {}, KrylovTimes* times = nullptr,
                                     const DeviceReduction* reduction = nullptr);

SolverResult solve_cg_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                             const DeviceLinearMap& P, const SolverControl& control,
                             const DeviceReduction* reduction = nullptr);

SolverResult solve_richardson_device(const DeviceLinearMap& A, DeviceVectorD& x, const DeviceVectorD& b,
                                     const DeviceLinearMap& P, const SolverControl& control,
                                     const DeviceReduction* reduction = nullptr);

}  // namespace tcfem::solvers
