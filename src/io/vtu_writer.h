#pragma once
// VTU output with VTK Lagrange cells (quadrilateral 70, hexahedron 72), binary (base64) data.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tcfem::io {

/// Cells of one polynomial degree, each with its own (degree+1)^dim points (no sharing between
/// cells, so continuous and discontinuous fields are written alike).
struct LagrangeCellData {
  int dim = 3;        ///< 2 or 3
  int degree = 1;     ///< 1..8
  std::size_t n_cells = 0;
  /// n_cells * (degree+1)^dim points, 3 coordinates each (z = 0 in 2D); within a cell the points
  /// are in lexicographic order of the tensor-product node lattice (x index fastest).
  std::vector<double> points;
  /// Point fields (name, values) in the same order as `points`, one value per point.
  std::vector<std::pair<std::string, std::vector<double>>> point_fields;
};

/// Permutation from VTK Lagrange point order to lexicographic order: vtk_index -> lexicographic
/// index, for a cell of the given dim and degree.
std::vector<int> vtk_lagrange_to_lexicographic(int dim, int degree);

/// Writes `data` to `path`. The file appears complete or not at all (written to a temporary file in
/// the same directory, then renamed). Throws tcfem::Error on I/O failure and tcfem::InputError on
/// inconsistent data sizes.
void write_vtu(const std::string& path, const LagrangeCellData& data);

/// The piece of rank `rank` of a parallel VTU file: "dir/name.pvtu" -> "dir/name_<rank>.vtu".
/// Throws InputError unless `pvtu_path` ends in ".pvtu".
std::string pvtu_piece_path(const std::string& pvtu_path, int rank);

/// Writes the parallel VTU file `path` that joins the pieces pvtu_piece_path(path, 0 .. n_pieces-1)
/// (written by write_vtu with the point fields `point_fields`), atomically as write_vtu.
void write_pvtu(const std::string& path, int n_pieces, const std::vector<std::string>& point_fields);

}  // namespace tcfem::io
