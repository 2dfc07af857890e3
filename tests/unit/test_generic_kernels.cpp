// The generic kernel bodies (the code the CUDA backend runs per thread block), executed on the
// host by a one-thread group, agree with the CPU operator for every degree, disc, form and path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "operators/operator_tables.h"

namespace {
using namespace tcfem;
using operators::Form;

template <int dim>
double generic_vs_cpu(fe::Disc disc, mesh::GeometryKind g, int k, int n, bool fast, Form form,
                      fe::QuadratureKind quadrature, std::uint64_t seed) {
  std::array<int, dim> nc;
  nc.fill(n);
  nc[0] = n + 1;  // anisotropic grid: catches mixed-up directions
  mesh::BoxMesh<dim> mesh(nc, g);
  fe::DofLayout<dim> dofs(mesh, disc, k);
  operators::OperatorConfig cfg;
  cfg.disc = disc;
  cfg.degree = k;
  cfg.cartesian_fast_path = fast;
  cfg.quadrature = quadrature;
  operators::MatrixFreeOperator<dim, double> A(mesh, dofs, cfg, form);
  const auto tables = operators::make_operator_tables<dim, double>(mesh, dofs, cfg, form);
  const auto view = tables.host_view();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Vector<double> x(dofs.n_local()), ref(dofs.n_local()), out(dofs.n_local());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = dist(rng);
  A.vmult(ref, x);
  std::vector<double> smem(operators::generic::scratch_size(view), std::numeric_limits<double>::quiet_NaN());
  const ThreadGroup group;
  const bool dg_cartesian = disc == fe::Disc::dg && view.cartesian && form == Form::laplace;
  out.fill(dg_cartesian ? std::numeric_limits<double>::quiet_NaN() : 0.0);  // dg Cartesian writes every entry
  for (std::size_t c = 0; c < mesh.n_owned_cells(); ++c)
    operators::generic::cell_apply(group, view, static_cast<std::int64_t>(c), x.data(), out.data(), smem.data());
  if (disc == fe::Disc::dg && !view.cartesian && form == Form::laplace)
    for (int d = 0; d < dim; ++d) {
      std::int64_t n_faces = 1;
      for (int e = 0; e < dim; ++e) n_faces *= nc[e] + (e == d ? 1 : 0);
      for (std::int64_t f = 0; f < n_faces; ++f)
        operators::generic::face_apply(group, view, d, f, x.data(), out.data(), smem.data());
    }
  if (disc == fe::Disc::cg && form == Form::laplace)
    for (std::size_t i = 0; i < x.size(); ++i)
      if (dofs.boundary_mask()[i]) out[i] = x[i];
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff += (ref[i] - out[i]) * (ref[i] - out[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

TEST(GenericKernels, AgreeWithCpuOperator) {
  using G = mesh::GeometryKind;
  using Q = fe::QuadratureKind;
  std::uint64_t seed = 1000;
  for (int k = 1; k <= 8; ++k)
    for (auto disc : {fe::Disc::cg, fe::Disc::dg})
      for (auto form : {Form::laplace, Form::mass}) {
        const std::string what = std::string(fe::to_string(disc)) + (form == Form::mass ? " mass" : " laplace") +
                                 " k=" + std::to_string(k);
        EXPECT_LT((generic_vs_cpu<2>(disc, G::cartesian, k, 3, true, form, Q::gauss_k2, ++seed)), 1e-13) << what;
        EXPECT_LT((generic_vs_cpu<2>(disc, G::deformed, k, 3, false, form, Q::gauss_k2, ++seed)), 1e-13) << what;
        EXPECT_LT((generic_vs_cpu<2>(disc, G::deformed, k, 2, false, form, Q::gll_k1, ++seed)), 1e-13) << what;
        EXPECT_LT((generic_vs_cpu<3>(disc, G::cartesian, k, 2, true, form, Q::gauss_k2, ++seed)), 1e-13) << what;
        EXPECT_LT((generic_vs_cpu<3>(disc, G::cartesian, k, 2, false, form, Q::gauss_k2, ++seed)), 1e-13) << what;
        EXPECT_LT((generic_vs_cpu<3>(disc, G::deformed, k, 2, false, form, Q::gll_k1, ++seed)), 1e-13) << what;
      }
}

}  // namespace
