#pragma once
// Geometric quantities at quadrature points for the general-geometry (partial assembly) path,
// computed from the isoparametric geometry field.
//   cells: JxW and the symmetric coefficient C = a w |det J| J^{-1} J^{-T} at each point;
//   faces: surface JxW, a^- = a J_-^{-1} n and a^+ = a J_+^{-1} n (n from the - cell to the +
//          cell, or the outward normal on boundary faces, stored in a^-), and the SIPG penalty
//          (times the largest a on the face). Neumann faces of the box get a^- = 0 and penalty 0:
//          no face terms.
#include <array>
#include <cstdint>
#include <vector>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "mesh/geometry_field.h"
#include "operators/coefficient.h"
#include "tensor/evaluator.h"

namespace tcfem::operators {

/// Number of independent entries of a symmetric dim x dim matrix, and their index.
template <int dim>
constexpr int n_sym = dim * (dim + 1) / 2;
template <int dim>
constexpr int sym_index(int i, int j) {
  if (i > j) return sym_index<dim>(j, i);
  // row-wise upper triangle: (0,0),(0,1),..,(0,dim-1),(1,1),...
  return i * dim - i * (i - 1) / 2 + (j - i);
}

/// Global position (cell multi-index of the + side) of face number `f` of one direction, whose
/// faces are numbered lexicographically over `extent` within the owned cell box.
template <int dim>
std::array<int, dim> face_position(const std::array<int, dim>& extent, const mesh::CellBox<dim>& owned,
                                   std::size_t f) {
  std::array<int, dim> pos;
  for (int e = 0; e < dim; ++e) {
    pos[e] = owned.begin[e] + static_cast<int>(f % extent[e]);
    f /= extent[e];
  }
  return pos;
}

/// J[(c*dim + d) * n_points + q] = d x_c / d xi_d and x[c * n_points + q] at the points of `ev`.
template <int dim>
void cell_jacobians(const tensor::Evaluator<dim, double>& ev, const double* nodes, double* x, double* J);

/// Inverse and determinant of a small matrix given as J[c][d].
template <int dim>
double invert(const std::array<std::array<double, dim>, dim>& J, std::array<std::array<double, dim>, dim>& inv);

template <int dim, typename Number>
struct CellGeometry {
  int points_per_cell = 0;
  std::vector<Number> JxW;   ///< [cell][q]
  std::vector<Number> coef;  ///< [cell][sym comp][q]
  std::vector<double> volume;
  std::size_t memory_bytes() const {
    return (JxW.size() + coef.size()) * sizeof(Number) + volume.size() * sizeof(double);
  }
};

template <int dim, typename Number>
struct FaceGeometry {
  struct Direction {
    std::array<int, dim> extent{};  ///< face positions per direction (n_d + 1 along d)
    std::vector<Number> JxW;        ///< [face][q]
    std::vector<Number> a_minus;    ///< [face][e][q]
    std::vector<Number> a_plus;     ///< [face][e][q]
    std::vector<Number> penalty;    ///< [face]
  };
  int points_per_face = 0;
  std::array<Direction, dim> dirs;
  std::size_t memory_bytes() const {
    std::size_t b = 0;
    for (const auto& d : dirs) b += (d.JxW.size() + d.a_minus.size() + d.a_plus.size() + d.penalty.size());
    return b * sizeof(Number);
  }
};

/// The node field of a mesh (2D, 3D) in the form of the matrix-free (geometry from nodes) kernels,
/// x = I_1 x + d: the vertices' coordinates (double, [c * n_vertices + v], v lexicographic on the
/// (n_cells + 1)-lattice), the displacement d from the cell's multilinear interpolant at every node
/// of the Q_k node lattice ([c * n_nodes + node]; empty when every |d| is below 1e-13 times the
/// mesh's extent: trilinear cells), and the coefficient at the nodes (empty without one). Every
/// node takes its values from the cell that owns it (the lowest index along each direction).
/// Cells of geometry order 2 below k (k >= 3; operators/quadratic_nodes.h): disp2 holds d on the
/// Q2 lattice ([c * n_nodes2 + node2]) where the Q_k displacement is its Q2 interpolant up to
/// rounding (q2_tolerance); empty otherwise.
template <typename Number>
struct NodeGeometry {
  std::vector<double> vertices;
  std::vector<Number> disp;
  std::vector<Number> disp2;
  std::vector<Number> a_nodes;
  std::int64_t n_vertices = 0, n_nodes = 0, n_nodes2 = 0;
  double max_disp = 0;  ///< the largest |d|
};

/// NodeGeometry of a mesh owned by one process (InputError otherwise) from its Q_k field, the
/// coefficient checked as compute_cell_geometry checks it.
template <typename Number, int dim>
NodeGeometry<Number> compute_node_geometry(const mesh::BoxMesh<dim>& mesh, const mesh::GeometryField<dim>& geometry,
                                           const Coefficient& coefficient = {});

/// Cell data for all owned cells. Throws InputError if a cell is inverted (det J <= 0 somewhere)
/// or the coefficient is not positive and finite at a point, naming the cell and the point.
template <int dim, typename Number>
CellGeometry<dim, Number> compute_cell_geometry(const mesh::BoxMesh<dim>& mesh,
                                                const mesh::GeometryField<dim>& geometry,
                                                const fe::Quadrature1D& quad, const Coefficient& coefficient = {});

/// Face data for all faces of owned cells; penalty_factor = k(k+1).
template <int dim, typename Number>
FaceGeometry<dim, Number> compute_face_geometry(const mesh::BoxMesh<dim>& mesh,
                                                const mesh::GeometryField<dim>& geometry,
                                                const fe::Quadrature1D& quad,
                                                const CellGeometry<dim, Number>& cells, double penalty_factor,
                                                const Coefficient& coefficient = {},
                                                const fe::DirichletFaces<dim>& dirichlet = fe::all_dirichlet<dim>());

/// The coefficient at a physical point, checked: InputError naming the point and the cell when
/// it is not positive and finite.
template <int dim>
double checked_coefficient(const Coefficient& coefficient, const double* x, const std::array<int, dim>& cell,
                           const std::array<int, dim>& n_cells);

}  // namespace tcfem::operators
