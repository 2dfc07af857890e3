// The quarter annulus as the box [1, 2] x [0, 1] mapped by (r, s) -> (r cos(pi s / 2), r sin(pi s / 2)),
// with the coefficient a lambda: a convergence table over four refinements, Q3 cg, and the finest
// solution as VTU.
//   curved_annulus [OUTPUT.vtu]
#include <cmath>
#include <cstdio>
#include <numbers>

#include "annulus_data.h"

int main(int argc, char** argv) {
  try {
    using tcfem::Point;
    const auto annulus = tcfem::Geometry<2>::box({1.0, 0.0}, {2.0, 1.0}, {2, 2}).mapped([](const Point<2>& X) {
      const double t = std::numbers::pi / 2 * X[1];
      return Point<2>{X[0] * std::cos(t), X[0] * std::sin(t)};
    });
    tcfem::SolverSettings settings;
    settings.degree = 3;
    settings.tolerance = 1e-10;
    // the vertex patches, those of the vertices on the outer arc (a Neumann part) included
    // (automatic takes Chebyshev below degree 4 with Neumann parts)
    settings.smoother = tcfem::Smoother::patch;
    std::printf("cells      DoFs   its  L2 error    rate  H1 error    rate  backend\n");
    double l2_prev = 0.0, h1_prev = 0.0;
    tcfem::Result<2> result;
    for (int level = 0; level < 4; ++level) {
      tcfem::Problem<2> problem(annulus.refined(level));
      // the box's faces: xmin is the inner arc, xmax the outer, ymin the x axis, ymax the y axis
      annulus::set_data(problem, "xmin", "xmax", "ymin", "ymax");
      result = tcfem::solve(problem, settings);
      const double l2 = *result.l2_error, h1 = *result.h1_seminorm_error;
      char l2_rate[32] = "", h1_rate[32] = "";
      if (level > 0) {
        std::snprintf(l2_rate, sizeof l2_rate, "%5.2f", std::log2(l2_prev / l2));
        std::snprintf(h1_rate, sizeof h1_rate, "%5.2f", std::log2(h1_prev / h1));
      }
      std::printf("%2dx%-3d %8zu %5d  %.3e %5s  %.3e %5s  %s\n", 2 << level, 2 << level, result.n_dofs,
                  result.iterations, l2, l2_rate, h1, h1_rate, result.backend.c_str());
      if (!result.converged) {
        std::fprintf(stderr, "curved_annulus: the solver did not converge\n");
        return 1;
      }
      l2_prev = l2;
      h1_prev = h1;
    }
    const char* vtu = argc > 1 ? argv[1] : "curved_annulus.vtu";
    result.write_vtu(vtu);
    std::printf("wrote %s (u, coefficient, u_exact, error)\n", vtu);
    return 0;
  } catch (const tcfem::InputError& e) {
    std::fprintf(stderr, "curved_annulus: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "curved_annulus: %s\n", e.what());
    return 1;
  }
}
