#include "operators/operator_tables.h"

#include "core/error.h"
#include "mesh/geometry_field.h"

namespace tcfem::operators {

SipgLineBlocks sipg_line_blocks(const fe::LagrangeBasis1D& basis, double h) {
  const int nb = basis.size(), k = basis.degree();
  std::vector<double> e[2], der[2];
  for (int s = 0; s < 2; ++s) {
    e[s].resize(nb);
    der[s].resize(nb);
    for (int i = 0; i < nb; ++i) {
      e[s][i] = basis.value(i, s);
      der[s][i] = basis.derivative(i, s);
    }
  }
  const auto K = fe::exact_stiffness_matrix(basis);
  const double gamma = 2.0 * k * (k + 1) / h;  // k(k+1)(1/h + 1/h)
  SipgLineBlocks blocks;
  for (int variant = 0; variant < 4; ++variant) {
    const bool left_bdry = variant & 1, right_bdry = variant & 2;
    auto& A = blocks.self[variant];
    A.resize(nb * nb);
    for (int i = 0; i < nb; ++i)
      for (int j = 0; j < nb; ++j) {
        double a = K(i, j) / h;
        // face at the right end (the cell is the - side; boundary faces take the full flux)
        const double cr = right_bdry ? 1.0 : 0.5;
        a += gamma * e[1][i] * e[1][j] - cr * (e[1][i] * der[1][j] + der[1][i] * e[1][j]) / h;
        // face at the left end (the cell is the + side, normal pointing into it)
        const double cl = left_bdry ? 1.0 : 0.5;
        a += gamma * e[0][i] * e[0][j] + cl * (e[0][i] * der[0][j] + der[0][i] * e[0][j]) / h;
        A[i * nb + j] = a;
      }
  }
  blocks.left.resize(nb * nb);
  blocks.right.resize(nb * nb);
  for (int i = 0; i < nb; ++i)
    for (int j = 0; j < nb; ++j) {
      blocks.right[i * nb + j] = -gamma * e[1][i] * e[0][j] - 0.5 * e[1][i] * der[0][j] / h + 0.5 * der[1][i] * e[0][j] / h;
      blocks.left[i * nb + j] = -gamma * e[0][i] * e[1][j] + 0.5 * e[0][i] * der[1][j] / h - 0.5 * der[0][i] * e[1][j] / h;
    }
  return blocks;
}

namespace {
template <typename Number>
void append(std::vector<Number>& dst, const std::vector<double>& src) {
  dst.insert(dst.end(), src.begin(), src.end());
}
}  // namespace

template <int dim, typename Number>
OperatorTables<dim, Number> make_operator_tables(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                 const OperatorConfig& config, Form form, bool geometry) {
  if (config.degree != dofs.degree() || config.disc != dofs.disc())
    throw InputError("operator configuration does not match the DoF layout");
  const auto& part = mesh.partition();
  for (int d = 0; d < dim; ++d)
    if (part.owned.begin[d] != 0 || part.owned.end[d] != part.global_cells[d])
      throw InputError("the generic kernels support a single process owning the whole mesh");
  const int k = config.degree;
  const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
  OperatorTables<dim, Number> t;
  auto& v = t.base;
  v.dim = dim;
  v.nb = k + 1;
  v.dg = config.disc == fe::Disc::dg;
  v.mass = form == Form::mass;
  v.cartesian = uses_cartesian_path(mesh, dofs, config);
  v.dirichlet = fe::dirichlet_bits(dofs.dirichlet_faces());
  const auto h = mesh.cell_size();
  for (int d = 0; d < dim; ++d) {
    v.n_cells[d] = mesh.n_cells()[d];
    v.lattice[d] = std::int64_t(mesh.n_cells()[d]) * k + 1;
    v.h[d] = static_cast<Number>(h[d]);
  }
  append(t.mass_1d, fe::exact_mass_matrix(basis).data);
  append(t.stiff_1d, fe::exact_stiffness_matrix(basis).data);
  if (v.cartesian) {
    v.nq = v.nb;
    if (v.dg && !v.mass)
      for (int d = 0; d < dim; ++d) {
        const auto blocks = sipg_line_blocks(basis, h[d]);
        for (int variant = 0; variant < 4; ++variant) append(t.dg_self, blocks.self[variant]);
        append(t.dg_left, blocks.left);
        append(t.dg_right, blocks.right);
      }
    return t;
  }
  const auto quad = fe::make_quadrature(config.quadrature, k);
  v.nq = quad.size();
  append(t.B, fe::basis_values(basis, quad.points).data);
  append(t.Dq, fe::basis_derivatives(fe::LagrangeBasis1D(quad.points), quad.points).data);
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i <= k; ++i) {
      t.end_val.push_back(static_cast<Number>(basis.value(i, s)));
    }
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i <= k; ++i) t.end_der.push_back(static_cast<Number>(basis.derivative(i, s)));
  if (!geometry) return t;
  mesh::GeometryField<dim> field(mesh, k);
  const Coefficient none;
  const Coefficient& a = v.mass ? none : config.coefficient;
  t.cells = compute_cell_geometry<dim, Number>(mesh, field, quad, a);
  if (v.dg && !v.mass)
    t.faces = compute_face_geometry<dim, Number>(mesh, field, quad, t.cells, double(k) * (k + 1), a,
                                                 dofs.dirichlet_faces());
  return t;
}

template <int dim, typename Number>
OperatorView<Number> OperatorTables<dim, Number>::host_view() const {
  OperatorView<Number> v = base;
  auto ptr = [](const std::vector<Number>& x) { return x.empty() ? nullptr : x.data(); };
  v.mass_1d = ptr(mass_1d);
  v.stiff_1d = ptr(stiff_1d);
  v.dg_self = ptr(dg_self);
  v.dg_left = ptr(dg_left);
  v.dg_right = ptr(dg_right);
  v.B = ptr(B);
  v.Dq = ptr(Dq);
  v.end_val = ptr(end_val);
  v.end_der = ptr(end_der);
  v.cell_coef = ptr(cells.coef);
  v.cell_jxw = ptr(cells.JxW);
  for (int d = 0; d < dim; ++d) {
    v.face_jxw[d] = ptr(faces.dirs[d].JxW);
    v.face_am[d] = ptr(faces.dirs[d].a_minus);
    v.face_ap[d] = ptr(faces.dirs[d].a_plus);
    v.face_pen[d] = ptr(faces.dirs[d].penalty);
  }
  return v;
}

template struct OperatorTables<2, double>;
template struct OperatorTables<3, double>;
template struct OperatorTables<2, float>;
template struct OperatorTables<3, float>;
template OperatorTables<2, double> make_operator_tables<2, double>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                   const OperatorConfig&, Form, bool);
template OperatorTables<3, double> make_operator_tables<3, double>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                   const OperatorConfig&, Form, bool);
template OperatorTables<2, float> make_operator_tables<2, float>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                                 const OperatorConfig&, Form, bool);
template OperatorTables<3, float> make_operator_tables<3, float>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                                 const OperatorConfig&, Form, bool);

}  // namespace tcfem::operators
