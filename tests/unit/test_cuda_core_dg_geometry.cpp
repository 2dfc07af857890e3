// The cuda-core dg (SIPG) Laplacian on general geometry on the CPU: the host emulation of the
// stored-geometry cell programs on the dg layout (3D lines, 2D points) followed by the faces
// program of every direction, against the CPU operator, on a curved map with a variable
// coefficient, Dirichlet (Nitsche) and Neumann faces, every degree, BP3 and BP5, fp64 and fp32.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <utility>

#include "emulation_check.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "mesh/geometry_field.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/cuda_core/geometry_faces.h"
#include "operators/cuda_core/geometry_lines_setup.h"
#include "operators/cuda_core/geometry_setup.h"
#include "operators/geometry_data.h"

namespace {
using namespace tcfem;
using namespace tcfem::operators::cuda_core;

/// ||emulated - A x|| / ||A x||: cells, then the faces of every direction (`segment` faces per
/// segment of a row, 0: the default; `groups` thread groups per block, 0: the shape's; `reverse`:
/// the threads of each phase in reverse order; `with_faces` false: the cell terms alone).
template <int dim, int k, fe::QuadratureKind kind, typename Number>
double dg_stored_error(const std::array<int, dim>& nc, std::uint64_t seed, bool reverse, int segment,
                       const fe::DirichletFaces<dim>& dirichlet, bool with_faces = true, int groups = 0) {
  constexpr int q = geom_points(kind, k);
  constexpr bool colloc = kind == fe::QuadratureKind::gll_k1;
  const mesh::BoxMesh<dim> mesh(nc, test_inputs::curved_domain<dim>());
  const fe::DofLayout<dim> dofs(mesh, fe::Disc::dg, k, dirichlet);
  auto cfg = test_inputs::curved_config(k, kind);
  cfg.disc = fe::Disc::dg;
  const operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, operators::Form::laplace);
  const mesh::GeometryField<dim> field(mesh, k);
  const auto quad = fe::make_quadrature(kind, k);
  const auto cells = operators::compute_cell_geometry<dim, Number>(mesh, field, quad, cfg.coefficient);
  const auto face_data = operators::compute_face_geometry<dim, Number>(mesh, field, quad, cells, double(k) * (k + 1),
                                                                       cfg.coefficient, dirichlet);
  std::array<DgFaceParams<dim, k, q, Number>, dim> fp;
  for (int d = 0; d < dim; ++d) {
    fp[d] = make_dg_face_params<dim, k, q, Number>(mesh, kind, d, segment, groups);
    const auto& f = face_data.dirs[d];
    EXPECT_EQ(f.penalty.size(), std::size_t(fp[d].n_faces));
    fp[d].jxw = f.JxW.data();
    fp[d].am = f.a_minus.data();
    fp[d].ap = f.a_plus.data();
    fp[d].pen = f.penalty.data();
  }
  const std::size_t n = dofs.n_local();
  auto run_faces = [&](const Number* x, Number* y) {
    if (with_faces)
      for (int d = 0; d < dim; ++d) emulate_dg_faces<dim, k, q, Number>(fp[d], x, y, reverse);
  };
  if constexpr (dim == 3) {
    const auto setup = make_geom_lines_setup<k, q, Number>(mesh, kind, 0, true, 0, true);
    auto p = setup.host_params();
    p.coef = cells.coef.data();
    p.dirichlet = 0;
    return test_inputs::emulation_error<dim, Number>(A, n, seed, [&](const Number* x, Number* y) {
      emulate_geom_lines<k, q, colloc, Number, true, false, false, true>(p, x, y, n, reverse);
      run_faces(x, y);
    });
  } else {
    const auto setup = make_geom_setup<dim, k, q, Number>(mesh, kind, true);
    auto p = setup.host_params();
    p.coef = cells.coef.data();
    p.dirichlet = 0;
    return test_inputs::emulation_error<dim, Number>(A, n, seed, [&](const Number* x, Number* y) {
      emulate_geom<dim, k, q, colloc, Number, true, true>(p, x, y, n, reverse);
      run_faces(x, y);
    });
  }
}

template <int k, fe::QuadratureKind kind>
void check_dg_stored(std::mt19937_64& seeds) {
  const std::string what = "k=" + std::to_string(k) + " " + fe::to_string(kind);
  const auto all2 = fe::all_dirichlet<2>();
  const auto all3 = fe::all_dirichlet<3>();
  const fe::DirichletFaces<2> mixed2{false, true, true, false};
  const fe::DirichletFaces<3> mixed3{false, true, true, false, false, true};
  EXPECT_LT((dg_stored_error<2, k, kind, double>({4, 3}, seeds(), false, 0, all2)), 1e-12) << "2D " << what;
  EXPECT_LT((dg_stored_error<2, k, kind, double>({3, 1}, seeds(), true, 1, mixed2)), 1e-12) << "2D Neumann " << what;
  EXPECT_LT((dg_stored_error<2, k, kind, float>({4, 3}, seeds(), false, 0, mixed2)), 1e-5) << "2D fp32 " << what;
  const std::array<int, 3> m3 = k <= 3 ? std::array<int, 3>{3, 2, 2} : std::array<int, 3>{2, 2, 1};
  EXPECT_LT((dg_stored_error<3, k, kind, double>(m3, seeds(), false, 0, all3)), 1e-12) << "3D " << what;
  EXPECT_LT((dg_stored_error<3, k, kind, double>({1, 2, 1}, seeds(), true, 1, mixed3)), 1e-12)
      << "3D Neumann " << what;
  EXPECT_LT((dg_stored_error<3, k, kind, float>(m3, seeds(), false, 0, mixed3)), 1e-5) << "3D fp32 " << what;
  // rows cut into segments of 2 and 3 faces (segment ends inside rows, a last segment of one
  // face), one thread group per block
  EXPECT_LT((dg_stored_error<2, k, kind, double>({5, 2}, seeds(), true, 2, mixed2, true, 1)), 1e-12)
      << "2D segments " << what;
  EXPECT_LT((dg_stored_error<3, k, kind, double>({4, 2, 1}, seeds(), false, 3, mixed3, true, 1)), 1e-12)
      << "3D segments " << what;
  // the face terms matter: the cell terms alone are far from the operator
  EXPECT_GT((dg_stored_error<2, k, kind, double>({4, 3}, seeds(), false, 0, all2, false)), 1e-2) << "2D " << what;
  EXPECT_GT((dg_stored_error<3, k, kind, double>(m3, seeds(), false, 0, all3, false)), 1e-2) << "3D " << what;
}

template <int... K>
void check_dg_stored_degrees(std::integer_sequence<int, K...>, std::mt19937_64& seeds) {
  (check_dg_stored<K + 1, fe::QuadratureKind::gll_k1>(seeds), ...);
  (check_dg_stored<K + 1, fe::QuadratureKind::gauss_k2>(seeds), ...);
}

TEST(CudaCoreDgGeometry, StoredGeometryEmulationMatchesCpu) {
  std::mt19937_64 seeds(20261126);
  check_dg_stored_degrees(std::make_integer_sequence<int, 8>{}, seeds);
}

TEST(CudaCoreDgGeometry, FaceParams) {
  // the faces of direction 1 of a 4 x 3 x 2 mesh: 4 x 4 x 2 positions; the end tables of Q_2
  const mesh::BoxMesh<3> mesh({4, 3, 2}, test_inputs::curved_domain<3>());
  const auto p = make_dg_face_params<3, 2, 4, double>(mesh, fe::QuadratureKind::gauss_k2, 1);
  EXPECT_EQ(p.n_faces, 4 * 4 * 2);
  EXPECT_EQ(p.ext[1], 4);
  EXPECT_EQ(p.groups, (DgFaceShape<3, 4>::groups_per_block));
  EXPECT_EQ(p.rows, 4 * 2);
  EXPECT_EQ(p.segment, 8);
  EXPECT_EQ(p.segments, 1);
  EXPECT_EQ(p.items, 8);
  const auto s = make_dg_face_params<3, 2, 4, double>(mesh, fe::QuadratureKind::gauss_k2, 0, 2);
  EXPECT_EQ(s.rows, 3 * 2);
  EXPECT_EQ(s.segments, 3);  // faces 0-1, 2-3, 4
  EXPECT_EQ(s.items, 18);
  EXPECT_DOUBLE_EQ(p.ev[0][0], 1.0);
  EXPECT_DOUBLE_EQ(p.ev[1][2], 1.0);
  EXPECT_NEAR(p.ev[0][1] + p.ev[0][2], 0.0, 1e-15);
  // derivatives of the Gauss-Lobatto Q_2 basis at x = 0 on [0, 1]: -3, 4, -1
  EXPECT_NEAR(p.ed[0][0], -3.0, 1e-13);
  EXPECT_NEAR(p.ed[0][1], 4.0, 1e-13);
  EXPECT_NEAR(p.ed[0][2], -1.0, 1e-13);
}

}  // namespace
