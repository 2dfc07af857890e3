#pragma once
// The cell data of the device wave stepper computed on the device (WaveSetup::device): the node
// coordinates on the pressure lattice (the map at the lattice's parameter points, compiled through
// NVRTC or a host callable), the stored geometry C = w det J J^-1 and s = 1 / (rho w det J) at the
// velocity nodes, 1 / rho there (mf), the lumped pressure mass w det J / K summed over the cells at
// each node, plus the host's boundary terms (surface mass, absorbing damping), and the initial
// state interpolated at the nodes. Checked as the host does: det J > 0 at every velocity and
// pressure node (InputError naming the cell and the point), rho and K positive and finite (naming
// the point). Includes CUDA headers: for .cu files only.
#include "core/device_buffer.h"
#include "wave/wave_operator.h"

namespace tcfem::wave::detail {

/// What to compute: C (pa), in fp32 (C and s rounded from fp64), the node field and 1 / rho (mf).
struct DeviceWaveRequest {
  bool store_c = true;
  bool fp32 = false;
  bool matrix_free = false;
};

struct DeviceWaveData {
  DeviceBuffer<double> nodes, inv_rho;         // matrix_free: [d * n_p + node], [cell][q]
  DeviceBuffer<double> c, s;                   // fp64 storage ([cell][e * dim + d][q], [cell][q])
  DeviceBuffer<float> c32, s32;                // fp32 storage
  DeviceBuffer<double> mass_p, inv_mass_p;
  double damping = 0;  ///< the largest absorbing / mass over the pressure nodes
  double compile_seconds = 0;
};

/// The cell data of `op` (built with WaveSetup::device) on the current device; `state`: a device
/// vector of op.n_dofs() doubles that receives the problem's initial state (null: none).
template <int dim>
DeviceWaveData compute_device_wave_data(const WaveOperator<dim>& op, const DeviceWaveRequest& request, double* state);

}  // namespace tcfem::wave::detail
