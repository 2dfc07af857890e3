#include "problem/boundary_value_problem.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/communicator.h"
#include "core/error.h"
#include "core/parallel.h"
#include "fe/lagrange.h"
#include "io/vtu_writer.h"
#include "mesh/geometry_field.h"
#include "operators/geometry_data.h"
#include "tensor/evaluator.h"

namespace tcfem::problem {

namespace {

template <int dim>
using Matrix = std::array<std::array<double, dim>, dim>;

/// Cells per batch and thread: local vectors are computed in parallel, then added in the
/// sequential cell order (results independent of the thread count).
constexpr std::size_t batch_cells_per_thread = 1024;

/// The geometry of one cell at the points of a tensor-product rule (one per thread).
template <int dim>
struct CellState {
  CellState(const mesh::BoxMesh<dim>& mesh, int degree, const fe::Quadrature1D& quad)
      : ev(fe::LagrangeBasis1D::gauss_lobatto(degree), quad), geometry(mesh, degree) {
    nb = ev.dofs_per_cell();
    nq = ev.points_per_cell();
    nf = ev.points_per_face();
    nodes.resize(dim * nb);
    x.resize(dim * nq);
    J.resize(dim * dim * nq);
    w.resize(nq);
    wf.resize(nf);
    const int n = quad.size();
    for (int q = 0; q < nq; ++q) {
      w[q] = 1.0;
      for (int d = 0, r = q; d < dim; ++d, r /= n) w[q] *= quad.weights[r % n];
    }
    for (int q = 0; q < nf; ++q) {
      wf[q] = 1.0;
      for (int d = 0, r = q; d < dim - 1; ++d, r /= n) wf[q] *= quad.weights[r % n];
    }
    idx.resize(nb);
    local.resize(nb);
    lifted.resize(nb);
    uq.resize(nq);
    grad.resize(dim * nq);
    tmp.resize(nq);
    fval.resize(nf);
    fgrad.resize(dim * nf);
    fx.resize(dim * nf);
    fJ.resize(dim * dim * nf);
  }
  void reinit(const std::array<int, dim>& c) {
    geometry.cell_nodes(c, nodes.data());
    operators::cell_jacobians<dim>(ev, nodes.data(), x.data(), J.data());
  }
  Matrix<dim> jacobian(int q) const {
    Matrix<dim> m;
    for (int a = 0; a < dim; ++a)
      for (int b = 0; b < dim; ++b) m[a][b] = J[(a * dim + b) * nq + q];
    return m;
  }
  mesh::Point<dim> point(int q) const {
    mesh::Point<dim> p;
    for (int d = 0; d < dim; ++d) p[d] = x[d * nq + q];
    return p;
  }
  /// Positions and Jacobians at the points of face (d, side).
  void reinit_face(int d, int side) {
    for (int comp = 0; comp < dim; ++comp) {
      ev.face_evaluate(nodes.data() + comp * nb, d, side, fval.data(), fgrad.data());
      for (int q = 0; q < nf; ++q) fx[comp * nf + q] = fval[q];
      for (int e = 0; e < dim; ++e)
        for (int q = 0; q < nf; ++q) fJ[(comp * dim + e) * nf + q] = fgrad[e * nf + q];
    }
  }
  tensor::Evaluator<dim, double> ev;
  mesh::MappedCellNodes<dim> geometry;
  int nb = 0, nq = 0, nf = 0;
  std::vector<double> nodes, x, J, w, wf;
  std::vector<index_t> idx;
  std::vector<double> local, lifted, uq, grad, tmp, fval, fgrad, fx, fJ;
};

template <int dim>
bool on_face(const mesh::BoxMesh<dim>& mesh, const std::array<int, dim>& c, int face) {
  const int d = face / 2;
  return (face % 2 == 0) ? c[d] == 0 : c[d] == mesh.n_cells()[d] - 1;
}

/// cg: g at the constrained nodes of cell c (nodes: the cell's node coordinates), NaN at the
/// others; the first Dirichlet face of a node gives its value.
template <int dim>
void local_lift(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const ProblemDefinition<dim>& problem,
                const std::array<int, dim>& c, const double* nodes, double* out) {
  const int k = dofs.degree(), n = k + 1, nb = dofs.dofs_per_cell();
  for (int i = 0; i < nb; ++i) {
    out[i] = std::numeric_limits<double>::quiet_NaN();
    int face = -1;  // the node is constrained when it lies on a Dirichlet face of the box
    for (int f = 0; f < 2 * dim && face < 0; ++f) {
      const int d = f / 2;
      int li = i;
      for (int e = 0; e < d; ++e) li /= n;
      li %= n;
      const bool at = (f % 2 == 0) ? (c[d] == 0 && li == 0) : (c[d] == mesh.n_cells()[d] - 1 && li == k);
      if (at && problem.dirichlet_faces[f]) face = f;
    }
    if (face < 0) continue;
    mesh::Point<dim> p;
    for (int d = 0; d < dim; ++d) p[d] = nodes[d * nb + i];
    out[i] = problem.boundary[face](p);
  }
}

template <int dim>
bool touches_dirichlet(const mesh::BoxMesh<dim>& mesh, const ProblemDefinition<dim>& problem,
                       const std::array<int, dim>& c) {
  bool touches = false;
  for (int f = 0; f < 2 * dim; ++f) touches |= problem.dirichlet_faces[f] && on_face<dim>(mesh, c, f);
  return touches;
}

/// cg: the nodal interpolant of g on the constrained DoFs, zero elsewhere.
template <int dim>
Vector<double> dirichlet_lift(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                              const ProblemDefinition<dim>& problem) {
  Vector<double> lift = fe::make_vector<double>(dofs);
  const int nb = dofs.dofs_per_cell();
  const mesh::MappedCellNodes<dim> geometry(mesh, dofs.degree());
  std::vector<double> nodes(dim * nb), local(nb);
  std::vector<index_t> idx(nb);
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto c = mesh.cell_index(cell);
    if (!touches_dirichlet<dim>(mesh, problem, c)) continue;
    geometry.cell_nodes(c, nodes.data());
    dofs.cell_dof_indices(c, idx.data());
    local_lift<dim>(mesh, dofs, problem, c, nodes.data(), local.data());
    for (int i = 0; i < nb; ++i)
      if (local[i] == local[i]) lift[idx[i]] = local[i];
  }
  return lift;
}
}  // namespace

namespace {
/// The cell vectors of the listed cells (all cells when `cells` is null): with `volume` the term
/// (f / c, phi_i), and on boundary cells the data terms. `sys` gets their sum (with the lift, cg)
/// unless `locals` is given, which then gets the cell vectors (locals[j * nb + i]). With
/// `device_terms` the cg lift, its term - a(g_h, phi_i) and the Neumann faces are left out
/// (computed on the device).
template <int dim>
void assemble_cells(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                    const operators::OperatorConfig& config, const ProblemDefinition<dim>& problem, bool volume_terms,
                    bool device_terms, const std::vector<std::size_t>* cells, DiscreteSystem<dim>& sys,
                    std::vector<double>* locals) {
  if (dofs.dirichlet_faces() != problem.dirichlet_faces)
    throw Error("assemble_system: the DoF layout's Dirichlet faces differ from the problem's");
  const bool cg = dofs.disc() == fe::Disc::cg;
  const int k = dofs.degree();
  const double inv_c = problem.coefficient ? 1.0 : 1.0 / problem.constant_coefficient;
  if (cg && !locals) sys.lift = dirichlet_lift<dim>(mesh, dofs, problem);
  const auto quad = data_rule<dim>(mesh, dofs, config);
  const int threads = mesh.n_owned_cells() < batch_cells_per_thread ? 1 : host_threads();
  std::vector<std::unique_ptr<CellState<dim>>> states;
  for (int t = 0; t < threads; ++t) states.push_back(std::make_unique<CellState<dim>>(mesh, k, quad));
  const int nb = states[0]->nb;
  if (!locals) sys.rhs = fe::make_vector<double>(dofs);
  const double penalty_factor = double(k) * (k + 1);
  auto coefficient_at = [&](const double* x) { return problem.coefficient ? problem.coefficient(x) : 1.0; };

  auto cell_vector = [&](CellState<dim>& s, const std::array<int, dim>& c, double* out) {
    s.reinit(c);
    const int nq = s.nq, nf = s.nf;
    dofs.cell_dof_indices(c, s.idx.data());
    // (f / c, phi_i) and the cell volume (for the penalty)
    double volume = 0.0;
    for (int q = 0; q < nq; ++q) {
      Matrix<dim> inv;
      const double det = operators::invert<dim>(s.jacobian(q), inv);
      if (!(det > 0.0))
        throw InputError("mesh cell (" + std::to_string(c[0]) + ", " + std::to_string(c[1]) +
                         (dim == 3 ? ", " + std::to_string(c[dim - 1]) : std::string()) +
                         ") is inverted or degenerate (det J = " + std::to_string(det) + ")");
      volume += det * s.w[q];
      if (volume_terms) s.uq[q] = problem.rhs(s.point(q)) * inv_c * det * s.w[q];
    }
    if (volume_terms) s.ev.integrate_values(s.uq.data(), out);
    bool boundary_cell = false;
    for (int f = 0; f < 2 * dim; ++f) boundary_cell |= on_face<dim>(mesh, c, f);
    if (!boundary_cell) return;
    // cg: - a(g_h, phi_i)
    if (cg && !device_terms) {
      bool any = false;
      local_lift<dim>(mesh, dofs, problem, c, s.nodes.data(), s.lifted.data());
      for (int i = 0; i < nb; ++i) {
        if (!(s.lifted[i] == s.lifted[i])) s.lifted[i] = 0.0;
        any |= s.lifted[i] != 0.0;
      }
      if (any) {
        s.ev.values(s.lifted.data(), s.uq.data());
        s.ev.gradients_from_values(s.uq.data(), s.grad.data());
        for (int q = 0; q < nq; ++q) {
          Matrix<dim> inv;
          const double det = operators::invert<dim>(s.jacobian(q), inv);
          const auto xq = s.point(q);
          const double scale = coefficient_at(xq.data()) * det * s.w[q];
          double gr[dim];
          for (int a = 0; a < dim; ++a) gr[a] = s.grad[a * nq + q];
          // physical gradient J^{-T} gr; flux = scale * J^{-1} J^{-T} gr in reference coordinates
          double phys[dim];
          for (int a = 0; a < dim; ++a) {
            phys[a] = 0.0;
            for (int b = 0; b < dim; ++b) phys[a] += inv[b][a] * gr[b];
          }
          for (int a = 0; a < dim; ++a) {
            double v = 0.0;
            for (int b = 0; b < dim; ++b) v += inv[a][b] * phys[b];
            s.grad[a * nq + q] = -scale * v;
          }
        }
        std::fill(s.tmp.begin(), s.tmp.end(), 0.0);
        s.ev.integrate_gradients(s.grad.data(), s.tmp.data());
        s.ev.integrate_values(s.tmp.data(), out, true);
      }
    }
    // boundary faces: Neumann data, and the Nitsche terms of dg
    for (int f = 0; f < 2 * dim; ++f) {
      if (!on_face<dim>(mesh, c, f)) continue;
      const bool dirichlet = problem.dirichlet_faces[f];
      if ((cg && dirichlet) || (device_terms && !dirichlet)) continue;
      const int d = f / 2, side = f % 2;
      s.reinit_face(d, side);
      double area = 0.0, a_max = 0.0;
      std::vector<double>& val = s.fval;
      std::vector<double>& grad = s.fgrad;
      std::fill(grad.begin(), grad.end(), 0.0);
      for (int q = 0; q < nf; ++q) {
        Matrix<dim> Jq, inv;
        for (int a = 0; a < dim; ++a)
          for (int b = 0; b < dim; ++b) Jq[a][b] = s.fJ[(a * dim + b) * nf + q];
        const double det = operators::invert<dim>(Jq, inv);
        double m[dim], len = 0.0;
        for (int a = 0; a < dim; ++a) {
          m[a] = inv[d][a];
          len += m[a] * m[a];
        }
        len = std::sqrt(len);
        const double jxw = std::abs(det) * len * s.wf[q];
        area += jxw;
        mesh::Point<dim> xq;
        for (int a = 0; a < dim; ++a) xq[a] = s.fx[a * nf + q];
        const double data = problem.boundary[f](xq);
        if (!dirichlet) {
          val[q] = data * inv_c * jxw;
          continue;
        }
        // dg Dirichlet: (g, gamma phi_i - a grad phi_i . n); gamma is set after the area is known
        const double a = coefficient_at(xq.data());
        a_max = std::max(a_max, a);
        const double sign = side == 1 ? 1.0 : -1.0;
        for (int e = 0; e < dim; ++e) {
          double v = 0.0;  // (J^{-1} n)_e
          for (int b = 0; b < dim; ++b) v += inv[e][b] * sign * m[b] / len;
          grad[e * nf + q] = -data * a * v * jxw;
        }
        val[q] = data * jxw;  // times gamma below
      }
      if (dirichlet) {
        const double gamma = 2.0 * penalty_factor * area / volume * a_max;
        for (int q = 0; q < nf; ++q) val[q] *= gamma;
      }
      s.ev.face_integrate(val.data(), grad.data(), d, side, out);
    }
  };

  const std::size_t n_cells = cells ? cells->size() : mesh.n_owned_cells();
  auto cell_at = [&](std::size_t j) { return mesh.cell_index(cells ? (*cells)[j] : j); };
  if (locals) {
    locals->assign(n_cells * nb, 0.0);
    parallel_chunks(0, n_cells, [&](std::size_t b, std::size_t e, int t) {
      auto& st = *states[t];
      for (std::size_t j = b; j < e; ++j) cell_vector(st, cell_at(j), locals->data() + j * nb);
    }, threads);
    return;
  }
  const std::size_t batch = batch_cells_per_thread * threads;
  std::vector<double> local(std::min(n_cells, batch) * nb);
  std::vector<index_t> idx(nb);
  for (std::size_t first = 0; first < n_cells; first += batch) {
    const std::size_t count = std::min(batch, n_cells - first);
    parallel_chunks(
        0, count,
        [&](std::size_t b, std::size_t e, int t) {
          for (std::size_t slot = b; slot < e; ++slot) {
            double* out = local.data() + slot * nb;
            std::fill(out, out + nb, 0.0);
            cell_vector(*states[t], cell_at(first + slot), out);
          }
        },
        threads);
    for (std::size_t slot = 0; slot < count; ++slot) {
      dofs.cell_dof_indices(cell_at(first + slot), idx.data());
      for (int i = 0; i < nb; ++i) sys.rhs[idx[i]] += local[slot * nb + i];
    }
  }
  // distributed: the ghost nodes' sums to their owners (cg); dg cells write only their own entries
  if (cg)
    sys.rhs.compress();
  else
    sys.rhs.zero_ghost_values();
  if (cg) {
    const auto& mask = dofs.boundary_mask();
    for (std::size_t i = 0; i < sys.rhs.size(); ++i)
      if (mask[i]) sys.rhs[i] = 0.0;
  }
}
}  // namespace

template <int dim>
fe::Quadrature1D data_rule(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                           const operators::OperatorConfig& config) {
  if (operators::uses_cartesian_path(mesh, dofs, config)) return fe::gauss(config.degree + 2);
  return fe::make_quadrature(config.quadrature, config.degree);
}
template fe::Quadrature1D data_rule<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const operators::OperatorConfig&);
template fe::Quadrature1D data_rule<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const operators::OperatorConfig&);

template <int dim>
DiscreteSystem<dim> assemble_system(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                    const operators::OperatorConfig& config, const ProblemDefinition<dim>& problem) {
  DiscreteSystem<dim> sys;
  assemble_cells<dim>(mesh, dofs, config, problem, true, false, nullptr, sys, nullptr);
  return sys;
}

template <int dim>
BoundaryTerms assemble_boundary_terms(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                      const operators::OperatorConfig& config, const ProblemDefinition<dim>& problem) {
  BoundaryTerms terms;
  if (dofs.disc() == fe::Disc::cg) return terms;  // no Nitsche terms
  for (std::size_t cell = 0; cell < mesh.n_owned_cells(); ++cell) {
    const auto c = mesh.cell_index(cell);
    bool dirichlet = false;
    for (int f = 0; f < 2 * dim; ++f) dirichlet |= on_face<dim>(mesh, c, f) && problem.dirichlet_faces[f];
    if (dirichlet) terms.cells.push_back(cell);
  }
  DiscreteSystem<dim> unused;
  assemble_cells<dim>(mesh, dofs, config, problem, false, true, &terms.cells, unused, &terms.rhs);
  return terms;
}

template <int dim>
Errors compute_errors(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const Vector<double>& u,
                      const PointFunction<dim>& exact,
                      const std::function<mesh::Point<dim>(const mesh::Point<dim>&)>& gradient) {
  const int k = dofs.degree();
  const auto quad = fe::gauss(k + 2);
  u.update_ghost_values();  // distributed: the cells' nodes owned by other ranks
  const int threads = mesh.n_owned_cells() < batch_cells_per_thread ? 1 : host_threads();
  std::vector<std::unique_ptr<CellState<dim>>> states;
  for (int t = 0; t < threads; ++t) states.push_back(std::make_unique<CellState<dim>>(mesh, k, quad));
  const std::size_t n_cells = mesh.n_owned_cells();
  const std::size_t batch = batch_cells_per_thread * threads;
  std::vector<std::array<long double, 2>> sums(std::min(n_cells, batch));
  long double e0 = 0.0L, e1 = 0.0L;
  for (std::size_t first = 0; first < n_cells; first += batch) {
    const std::size_t count = std::min(batch, n_cells - first);
    parallel_chunks(
        0, count,
        [&](std::size_t b, std::size_t e, int t) {
          auto& s = *states[t];
          for (std::size_t slot = b; slot < e; ++slot) {
            const auto c = mesh.cell_index(first + slot);
            s.reinit(c);
            dofs.cell_dof_indices(c, s.idx.data());
            for (int i = 0; i < s.nb; ++i) s.local[i] = u[s.idx[i]];
            s.ev.values(s.local.data(), s.uq.data());
            s.ev.gradients_from_values(s.uq.data(), s.grad.data());
            long double c0 = 0.0L, c1 = 0.0L;
            for (int q = 0; q < s.nq; ++q) {
              Matrix<dim> inv;
              const double jxw = operators::invert<dim>(s.jacobian(q), inv) * s.w[q];
              const auto xq = s.point(q);
              const double diff = s.uq[q] - exact(xq);
              c0 += diff * diff * jxw;
              const auto g = gradient(xq);
              for (int a = 0; a < dim; ++a) {
                double gh = 0.0;
                for (int b = 0; b < dim; ++b) gh += inv[b][a] * s.grad[b * s.nq + q];
                c1 += (gh - g[a]) * (gh - g[a]) * jxw;
              }
            }
            sums[slot] = {c0, c1};
          }
        },
        threads);
    for (std::size_t slot = 0; slot < count; ++slot) {
      e0 += sums[slot][0];
      e1 += sums[slot][1];
    }
  }
  return sum_errors(mesh.partition().comm, e0, e1);
}

template BoundaryTerms assemble_boundary_terms<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                                 const operators::OperatorConfig&, const ProblemDefinition<2>&);
template BoundaryTerms assemble_boundary_terms<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                                 const operators::OperatorConfig&, const ProblemDefinition<3>&);
template DiscreteSystem<2> assemble_system<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                              const operators::OperatorConfig&, const ProblemDefinition<2>&);
template DiscreteSystem<3> assemble_system<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                              const operators::OperatorConfig&, const ProblemDefinition<3>&);
template Errors compute_errors<2>(const mesh::BoxMesh<2>&, const fe::DofLayout<2>&, const Vector<double>&,
                                  const PointFunction<2>&,
                                  const std::function<mesh::Point<2>(const mesh::Point<2>&)>&);
template Errors compute_errors<3>(const mesh::BoxMesh<3>&, const fe::DofLayout<3>&, const Vector<double>&,
                                  const PointFunction<3>&,
                                  const std::function<mesh::Point<3>(const mesh::Point<3>&)>&);

template <int dim>
void write_solution_vtu(const std::string& path, const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                        const Vector<double>& x, const ProblemDefinition<dim>* problem) {
  const Communicator& comm = mesh.partition().comm;
  const std::string piece = comm.distributed() ? io::pvtu_piece_path(path, comm.rank()) : path;
  x.update_ghost_values();  // the owned cells' nodes of other ranks
  io::LagrangeCellData data;
  data.dim = dim;
  data.degree = dofs.degree();
  data.n_cells = mesh.n_owned_cells();
  std::vector<double> values;
  cell_node_values<dim>(mesh, dofs, x, data.points, values);
  const bool have_exact = !problem || problem->exact;
  std::vector<double> exact(have_exact ? values.size() : 0), err(exact.size()), coef(problem ? values.size() : 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    mesh::Point<dim> p;
    for (int d = 0; d < dim; ++d) p[d] = data.points[i * 3 + d];
    if (problem) coef[i] = problem->coefficient ? problem->coefficient(p.data()) : problem->constant_coefficient;
    if (!have_exact) continue;
    exact[i] = problem ? problem->exact(p) : exact_solution<dim>(p);
    err[i] = values[i] - exact[i];
  }
  data.point_fields = {{"u", std::move(values)}};
  if (problem) data.point_fields.push_back({"coefficient", std::move(coef)});
  if (have_exact) {
    data.point_fields.push_back({"u_exact", std::move(exact)});
    data.point_fields.push_back({"error", std::move(err)});
  }
  if (!comm.distributed()) {
    io::write_vtu(path, data);
    return;
  }
  std::vector<std::string> names;
  for (const auto& field : data.point_fields) names.push_back(field.first);
  try {
    collective(comm, [&] { io::write_vtu(piece, data); });
    collective(comm, [&] {
      if (comm.rank() == 0) io::write_pvtu(path, comm.size(), names);
    });
  } catch (...) {
    std::remove(piece.c_str());  // no partial output: every rank removes its piece
    throw;
  }
}

template void write_solution_vtu<2>(const std::string&, const mesh::BoxMesh<2>&, const fe::DofLayout<2>&,
                                    const Vector<double>&, const ProblemDefinition<2>*);
template void write_solution_vtu<3>(const std::string&, const mesh::BoxMesh<3>&, const fe::DofLayout<3>&,
                                    const Vector<double>&, const ProblemDefinition<3>*);

}  // namespace tcfem::problem
