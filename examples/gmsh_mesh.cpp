// The problem of curved_annulus on a Gmsh mesh of the quarter annulus (meshes/quarter_annulus.msh:
// 8 x 8 transfinite quadrilaterals of order 2, made from meshes/quarter_annulus.geo), whose
// physical groups inner, outer, bottom and left are the boundary parts. Q2 dg with FGMRES and a
// multigrid V-cycle; writes the solution as VTU.
//   gmsh_mesh [MESH.msh [OUTPUT.vtu]]
#include <cstdio>

#include "annulus_data.h"

int main(int argc, char** argv) {
  try {
    const char* mesh = argc > 1 ? argv[1] : EXAMPLE_MESH;
    const auto geometry = tcfem::Geometry<2>::mesh(mesh);
    std::printf("mesh %s: %d x %d cells, boundary parts:", mesh, geometry.cells()[0], geometry.cells()[1]);
    for (const auto& part : geometry.boundary_parts()) std::printf(" %s", part.c_str());
    std::printf("\n");
    tcfem::Problem<2> problem(geometry);
    annulus::set_data(problem, "inner", "outer", "bottom", "left");
    tcfem::SolverSettings settings;
    settings.degree = 2;
    settings.discretization = tcfem::Discretization::dg;
    const auto result = tcfem::solve(problem, settings);
    std::printf("%zu DoFs, %d FGMRES iterations (%s smoother, %s backend), relative residual %.2e\n", result.n_dofs,
                result.iterations, result.smoother.c_str(), result.backend.c_str(), result.relative_residual);
    std::printf("L2 error %.3e, H1-seminorm error %.3e; setup %.3f s, solve %.3f s\n", *result.l2_error,
                *result.h1_seminorm_error, result.setup_seconds, result.solve_seconds);
    const char* vtu = argc > 2 ? argv[2] : "gmsh_mesh.vtu";
    result.write_vtu(vtu);
    std::printf("wrote %s\n", vtu);
    return result.converged ? 0 : 1;
  } catch (const tcfem::InputError& e) {
    std::fprintf(stderr, "gmsh_mesh: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmsh_mesh: %s\n", e.what());
    return 1;
  }
}
