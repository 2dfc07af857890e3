#pragma once
// The discrete acoustic-gravity operator (seed 002, eq. 4) on the CPU: the pressure p continuous
// Q_k (Gauss-Lobatto nodes, mass lumped by the Gauss-Lobatto rule), each velocity component
// discontinuous Q_{k-1} with its nodes at the k^dim Gauss points of the cell (the Gauss rule makes
// its mass diagonal). The semi-discrete system is
//   M_u du/dt = -G p,   M_p dp/dt = G^T u - A p + b(t),
// G the gradient (grad p, tau) by the k-point Gauss rule, M_p the lumped (K^-1 p, v) plus the free
// surface's (rho g)^-1 <p, v>, A the absorbing faces' Z^-1 <p, v> (lumped), b the seafloor's
// <db/dt, v>. With the velocity nodes at the quadrature points, the velocity's rate is pointwise:
//   du/dt(x_q) = -(1 / rho) grad p(x_q).
// The geometry is stored per quadrature point (partial assembly): C = w det J J^-1 (dim x dim) and
// s = 1 / (rho w det J), the inverse velocity mass.
//
// The state is one vector [u | p]: u cell by cell, per cell component by component, per
// component the k^dim points (x fastest); p on the lattice of Gauss-Lobatto nodes of the box
// (k n_d + 1 per direction, x fastest).
#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/hd.h"
#include "core/host_array.h"
#include "fe/lagrange.h"
#include "mesh/geometry_field.h"
#include "wave/spectral_bound.h"
#include "wave/wave_problem.h"

namespace tcfem::wave {

/// The start vector of the spectral bound's Lanczos: entry i in [-1, 1) from a hash of i (splitmix64), the
/// same on the host and the device.
TCFEM_HD inline double start_vector_entry(unsigned long long i) {
  unsigned long long z = i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/// Where the cell data (the node coordinates, the stored geometry C and s, the pressure's mass)
/// are computed: on the host threads, held by the operator (the CPU stepper and rate() need
/// them), or on the device by the device stepper (wave/device_wave.h), the operator holding the
/// sizes, tables and boundary terms only.
enum class WaveSetup { host, device };

/// A boundary term at a pressure node: the free surface's mass or the absorbing faces' damping,
/// summed over the faces at the node.
struct NodeTerm {
  std::size_t node;
  double value;
};

template <int dim>
class WaveOperator {
 public:
  /// Builds the boundary terms and, with WaveSetup::host, the geometry data and masses;
  /// InputError for det J <= 0 (naming the cell) and for rho, K or g not positive at a point
  /// (naming the point).
  explicit WaveOperator(const WaveProblem<dim>& problem, WaveSetup setup = WaveSetup::host);
  /// Whether the operator holds the cell data (WaveSetup::host). Without them, rate(), inner(),
  /// spectral_radius() and the stored data's accessors throw Error.
  bool has_cell_data() const { return setup_ == WaveSetup::host; }
  const WaveProblem<dim>& problem() const { return problem_; }
  const mesh::BoxMesh<dim>& mesh() const { return *mesh_; }

  int degree() const { return k_; }
  const std::array<int, dim>& cells() const { return cells_; }
  std::size_t n_cells() const { return n_cells_; }
  std::size_t n_u() const { return n_u_; }
  std::size_t n_p() const { return n_p_; }
  std::size_t n_dofs() const { return n_u_ + n_p_; }
  int points_per_cell() const { return nqc_; }  ///< k^dim velocity nodes
  int nodes_per_cell() const { return npc_; }   ///< (k+1)^dim pressure nodes
  std::size_t p_index(std::size_t cell, int node) const;

  /// r = M^-1 (-A_full x + b(t)): the time derivative of the state x at time t. With skew_only,
  /// only the coupling G (no absorbing term, no seafloor data): the energy-conserving part.
  void rate(double t, const double* x, double* r, bool skew_only = false) const;
  /// r = M^-1 (-A_full x + b) with b given by its values at the seafloor's face nodes (the order
  /// and scaling of seafloor_values; null: no seafloor data), for a combination of b(t) at
  /// several times.
  void rate_with_seafloor(const double* x, double* r, const double* seafloor_values) const;
  /// (x, y)_M with the diagonal mass of the state: 2 x the energy for y = x.
  double inner(const double* x, const double* y) const;
  double energy(const double* x) const { return 0.5 * inner(x, x); }
  /// Largest |lambda| of the energy-conserving part M^-1 G-block (skew Lanczos, at most
  /// max_applies applies, wave/spectral_bound.h) plus the largest absorbing rate: the spectral
  /// bound that sets the RK4 step.
  SpectralBound spectral_bound(int max_applies = 60) const;
  double spectral_radius(int max_applies = 60) const { return spectral_bound(max_applies).radius; }

  /// The state interpolating p0 at the pressure nodes and u0 at the velocity nodes (empty: 0).
  std::vector<double> interpolate(const SpaceFunction& p0, const std::array<SpaceFunction, dim>& u0) const;
  std::vector<double> interpolate(const TimeFunction& p, const std::array<TimeFunction, dim>& u, double t) const;

  struct Errors {
    double p_l2 = 0, p_norm = 0;  ///< ||p_h - p|| (Gauss rule with k+2 points), ||p||
    double u_l2 = 0, u_norm = 0;  ///< the same for u at the velocity nodes
  };
  Errors errors(const double* x, const TimeFunction& p, const std::array<TimeFunction, dim>& u, double t) const;

  /// Per cell, the (k+1)^dim node coordinates (3 per node, z = 0 in 2D) and the fields p, u_d
  /// there (u interpolated from its Gauss nodes), lexicographic: for VTU output.
  void cell_output(const double* x, std::vector<double>& points, std::vector<std::vector<double>>& fields) const;

  /// Stored data (the device operator copies them).
  const HostArray<double>& geometry_c() const { return cell_data(c_); }  ///< [cell][e * dim + d][q]
  const HostArray<double>& geometry_s() const { return cell_data(s_); }  ///< [cell][q]
  const std::vector<double>& inverse_mass_p() const { return cell_data(inv_mass_p_); }
  const std::vector<double>& absorbing() const { return cell_data(absorbing_); }
  /// The boundary terms by node (ascending, each node once): the free surface's part of the
  /// pressure's mass, w |dx/dS| / (rho g), and the absorbing faces' damping, w |dx/dS| / Z.
  const std::vector<NodeTerm>& surface_mass_terms() const { return surface_terms_; }
  const std::vector<NodeTerm>& absorbing_terms() const { return absorbing_terms_; }
  /// The largest damping rate absorbing / mass of the pressure nodes (needs the cell data).
  double damping() const;
  const fe::Matrix1D& values() const { return b_; }        ///< k x (k+1): GLL basis at Gauss points
  const fe::Matrix1D& derivatives() const { return d_; }   ///< k x (k+1)
  /// The seafloor data b(t) on the pressure nodes (zero elsewhere).
  void seafloor_data(double t, double* b) const;
  /// The seafloor's face nodes (a node on several seafloor faces appears once per face) and their
  /// data weight * db/dt(x, t), in the same order.
  std::vector<std::size_t> seafloor_nodes() const;
  void seafloor_values(double t, double* values) const;
  const std::vector<double>& mass_p() const { return cell_data(mass_p_); }
  /// The node coordinates as a field on the pressure lattice: component d at [d * n_p() + node].
  std::vector<double> node_field() const;
  /// 1 / rho per velocity node ([cell][q])
  std::vector<double> inverse_density() const;
  const std::array<std::size_t, dim>& p_strides() const { return p_stride_; }
  bool has_seafloor() const { return !seafloor_.empty(); }
  /// The coordinates of the (k+1)^dim nodes of a cell, out[d * nodes_per_cell() + i] (from the
  /// stored coordinates, or the map evaluated at the cell's nodes).
  void cell_nodes(std::size_t cell, double* out) const;

 private:
  template <typename T>
  const T& cell_data(const T& data) const {
    require_cell_data();
    return data;
  }
  void require_cell_data() const;
  void rate_impl(const double* x, double* r, bool skew_only, const double* seafloor_values) const;
  /// w det J at the cell's velocity nodes from its node coordinates; tmp holds
  /// (dim^2 + 2) max(npc, nqc) doubles.
  void velocity_jxw(const double* nodes, double* jxw, double* tmp) const;
  /// The coordinates of a cell's velocity nodes (its Gauss points), xq[d nqc + q], interpolated
  /// from its pressure nodes' coordinates (nodes[d npc + i]); tmp holds 2 npc doubles.
  void velocity_node_coordinates(const double* nodes, double* xq, double* tmp) const;
  void gradient(const double* pc, double* g, double* tmp) const;                  // g: dim x nqc
  void gradient_transpose(const double* f, double* out, double* tmp) const;        // out: npc (overwritten)
  void build_cell_data();
  void build_boundary_terms();

  WaveProblem<dim> problem_;
  WaveSetup setup_;
  std::unique_ptr<mesh::BoxMesh<dim>> mesh_;
  std::unique_ptr<mesh::MappedCellNodes<dim>> field_;
  int k_, np1_, nq_, npc_, nqc_;
  std::array<int, dim> cells_{};
  std::size_t n_cells_, n_u_, n_p_;
  std::array<std::size_t, dim> p_stride_{};
  HostArray<double> c_, s_, jxw_;  // every entry written by the setup's parallel loop
  std::vector<double> inv_mass_p_, mass_p_, absorbing_;
  struct FaceNode {
    std::size_t node;
    double weight;
    std::array<double, dim> x;
  };
  std::vector<FaceNode> seafloor_;
  std::vector<NodeTerm> surface_terms_, absorbing_terms_;
  std::vector<std::vector<std::size_t>> colors_;  // cells by parity: no two share a node
  fe::Matrix1D b_, d_;
  HostArray<double> node_coords_;  // per cell, dim x npc (the map at the cell's nodes); host setup
};

}  // namespace tcfem::wave
