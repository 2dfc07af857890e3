// Writes the test meshes of support/gmsh_meshes.h for the command-line tests:
//   gmsh_mesh_writer annulus DIM N ORDER VERSION PATH | unstructured DIM PATH | simplex DIM PATH
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/gmsh_meshes.h"

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  if (kind == "annulus" && argc == 7) {
    tcfem::test_meshes::write_annulus_mesh(argv[6], std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]),
                                       std::atof(argv[5]));
  } else if ((kind == "unstructured" || kind == "simplex") && argc == 4) {
    if (kind == "unstructured")
      tcfem::test_meshes::write_unstructured_hex_mesh(argv[3], std::atoi(argv[2]));
    else
      tcfem::test_meshes::write_simplex_mesh(argv[3], std::atoi(argv[2]));
  } else {
    std::fprintf(stderr, "usage: gmsh_mesh_writer annulus DIM N ORDER VERSION PATH | unstructured DIM PATH | "
                         "simplex DIM PATH\n");
    return 2;
  }
  return 0;
}
