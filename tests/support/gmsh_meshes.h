#pragma once
// Meshes for the tests, generated with the Gmsh API and written as .msh files.
#include <string>

namespace tcfem::test_meshes {

/// The quarter annulus 1 <= r <= 2, 0 <= theta <= pi/2 (extruded to 0 <= z <= 1 in 3D) as one
/// transfinite block of n x n (x n) cells of geometric order 1 or 2, written in Gmsh's format
/// `version` (2.2 or 4.1). Boundary parts: inner (r = 1), outer (r = 2), bottom (y = 0), left
/// (x = 0), and in 3D zlow, ztop.
void write_annulus_mesh(const std::string& path, int dim, int n, int order, double version);

/// An unstructured mesh of quadrilaterals (2D) or hexahedra (3D, extruded) of the unit square
/// (cube), with the boundary part "wall".
void write_unstructured_hex_mesh(const std::string& path, int dim);

/// A mesh of triangles (2D) or tetrahedra (3D) of the unit square (cube), with the part "wall".
void write_simplex_mesh(const std::string& path, int dim);

}  // namespace tcfem::test_meshes
