#pragma once
// Reads Gmsh meshes (.msh 2.2 and 4.1, through the Gmsh library) of hexahedra (quadrilaterals in
// 2D) of order 1 or 2, with physical groups of dimension dim-1 as the boundary parts. Built only
// with the CMake option TCFEM_WITH_GMSH; without it every read is an InputError saying so.
#include <string>

#include "mesh/structured_block.h"

namespace tcfem::io {

/// Whether this build reads Gmsh meshes.
bool gmsh_available();

/// The cells and named boundary faces of the mesh file `path`. InputError (one line naming the
/// file) for a missing or unreadable file, a mesh of the wrong dimension, cells that are not
/// hexahedra (quadrilaterals) of order 1 or 2 (tetrahedra, prisms, serendipity hex20, ...), or a
/// build without Gmsh. Uses Gmsh's global state: not to be called while the caller holds a Gmsh
/// model of its own.
template <int dim>
mesh::HexMesh<dim> read_gmsh_mesh(const std::string& path);

}  // namespace tcfem::io
