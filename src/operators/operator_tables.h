#pragma once
// Host-side tables of a matrix-free operator in the flat layout the generic kernels read
// (OperatorView): 1D matrices, SIPG line blocks, quadrature tables and geometry arrays.
#include <vector>

#include "fe/dof_layout.h"
#include "fe/lagrange.h"
#include "operators/generic/kernels.h"
#include "operators/geometry_data.h"
#include "operators/cpu/laplace_operator.h"

namespace tcfem::operators {

/// 1D SIPG blocks of a line of cells of size h for degree k: self blocks for the four boundary
/// variants (bit 0: left end is a boundary, bit 1: right end is), and the couplings to the left
/// (c-1) and right (c+1) neighbours. Each nb x nb row-major, physical units (1/h included).
struct SipgLineBlocks {
  std::vector<double> self[4];
  std::vector<double> left, right;
};
SipgLineBlocks sipg_line_blocks(const fe::LagrangeBasis1D& basis, double h);

template <int dim, typename Number>
struct OperatorTables {
  OperatorView<Number> base;  ///< sizes, flags and grid; pointers unset
  std::vector<Number> mass_1d, stiff_1d, dg_self, dg_left, dg_right, B, Dq, end_val, end_der;
  CellGeometry<dim, Number> cells;
  FaceGeometry<dim, Number> faces;
  /// The view with pointers into these host tables.
  OperatorView<Number> host_view() const;
};

/// `geometry` false: the general path's cell and face data are left empty (the device operator
/// computes them on the device).
template <int dim, typename Number>
OperatorTables<dim, Number> make_operator_tables(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                 const OperatorConfig& config, Form form, bool geometry = true);

}  // namespace tcfem::operators
