#include "problem/problem_file.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "io/gmsh_reader.h"
#include "problem/json_reader.h"

namespace tcfem::problem {

namespace {
using json = nlohmann::json;

const std::set<std::string> top_keys = {"dim",       "degree",    "geometry", "mesh",  "coefficient",
                                        "rhs",       "dirichlet", "neumann",  "exact", "exact_gradient"};
const std::set<std::string> geometry_keys = {"box", "cells", "map"};

using Reader = JsonReader;
}  // namespace

const char* box_face_name(int face) {
  static const char* names[6] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
  return face >= 0 && face < 6 ? names[face] : "?";
}

ProblemFile read_problem_file(const std::string& path) {
  Reader r{path};
  json j = r.read(top_keys);
  ProblemFile f;
  f.path = path;
  f.dim = r.dimension(j);
  if (j.contains("degree")) {
    f.degree = r.integer(j["degree"], "degree");
    if (*f.degree < 1 || *f.degree > 8) r.fail("degree", "must be in 1..8");
  }
  if (j.contains("geometry") == j.contains("mesh")) r.fail("geometry", "give exactly one of \"geometry\" and \"mesh\"");
  if (j.contains("mesh")) {
    if (!j["mesh"].is_string() || j["mesh"].get<std::string>().empty()) r.fail("mesh", "expected a file name");
    std::string mesh_path = j["mesh"].get<std::string>();
    const auto slash = path.find_last_of('/');
    if (mesh_path[0] != '/' && slash != std::string::npos) mesh_path = path.substr(0, slash + 1) + mesh_path;
    f.mesh = mesh_path;
    std::array<int, 3> n{};
    if (f.dim == 2) {
      f.block2 = std::make_shared<const mesh::StructuredBlock<2>>(
          mesh::StructuredBlock<2>::recognize(io::read_gmsh_mesh<2>(mesh_path)));
      for (int d = 0; d < 2; ++d) n[d] = f.block2->cells()[d];
    } else {
      f.block3 = std::make_shared<const mesh::StructuredBlock<3>>(
          mesh::StructuredBlock<3>::recognize(io::read_gmsh_mesh<3>(mesh_path)));
      for (int d = 0; d < 3; ++d) n[d] = f.block3->cells()[d];
    }
    for (int d = 0; d < f.dim; ++d) {
      f.cells.push_back(n[d]);
      f.box.push_back({0.0, double(n[d])});
    }
  } else {
    const auto& g = j["geometry"];
    if (!g.is_object()) r.fail("geometry", "expected an object with \"box\", \"cells\" and optionally \"map\"");
    for (auto it = g.begin(); it != g.end(); ++it)
      if (!geometry_keys.count(it.key())) r.fail("geometry." + it.key(), "unknown key; allowed: " + join(geometry_keys));
    if (!g.contains("box")) r.fail("geometry.box", "missing: [[x0, x1], [y0, y1]" + std::string(f.dim == 3 ? ", [z0, z1]]" : "]"));
    if (!g["box"].is_array() || int(g["box"].size()) != f.dim)
      r.fail("geometry.box", "expected " + std::to_string(f.dim) + " intervals [lower, upper]");
    for (int d = 0; d < f.dim; ++d) {
      const auto& iv = g["box"][d];
      const std::string key = "geometry.box[" + std::to_string(d) + "]";
      if (!iv.is_array() || iv.size() != 2) r.fail(key, "expected [lower, upper]");
      const double lo = r.number(iv[0], key), hi = r.number(iv[1], key);
      if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi)) r.fail(key, "needs finite lower < upper");
      f.box.push_back({lo, hi});
    }
    if (!g.contains("cells")) r.fail("geometry.cells", "missing: cells per direction");
    if (!g["cells"].is_array() || int(g["cells"].size()) != f.dim)
      r.fail("geometry.cells", "expected " + std::to_string(f.dim) + " cell counts");
    for (int d = 0; d < f.dim; ++d) {
      const int n = r.integer(g["cells"][d], "geometry.cells");
      if (n < 1 || n > (1 << 20)) r.fail("geometry.cells", "counts must be in 1..2^20");
      f.cells.push_back(n);
    }
    if (g.contains("map")) {
      if (!g["map"].is_array() || int(g["map"].size()) != f.dim)
        r.fail("geometry.map", "expected " + std::to_string(f.dim) + " expressions, one per coordinate");
      for (int d = 0; d < f.dim; ++d)
        f.map.push_back(r.expression(g["map"][d], "geometry.map[" + std::to_string(d) + "]"));
    }
  }
  if (j.contains("coefficient")) f.coefficient = r.expression(j["coefficient"], "coefficient");
  if (j.contains("rhs")) f.rhs = r.expression(j["rhs"], "rhs");
  if (j.contains("dirichlet")) f.dirichlet = r.parts(j["dirichlet"], "dirichlet");
  if (j.contains("neumann")) f.neumann = r.parts(j["neumann"], "neumann");
  if (j.contains("exact")) f.exact = r.expression(j["exact"], "exact");
  if (j.contains("exact_gradient")) {
    if (!f.exact) r.fail("exact_gradient", "needs \"exact\"");
    const auto& g = j["exact_gradient"];
    if (!g.is_array() || int(g.size()) != f.dim)
      r.fail("exact_gradient", "expected " + std::to_string(f.dim) + " expressions");
    for (int d = 0; d < f.dim; ++d)
      f.exact_gradient.push_back(r.expression(g[d], "exact_gradient[" + std::to_string(d) + "]"));
  }
  return f;
}

template <int dim>
void set_boundary_parts(ProblemDefinition<dim>& p, const std::array<std::string, 2 * dim>& face_parts,
                        const std::map<std::string, PointFunction<dim>>& dirichlet,
                        const std::map<std::string, PointFunction<dim>>& neumann, const std::string& where,
                        const std::string& domain_text) {
  p.face_parts = face_parts;
  const std::set<std::string> part_names(face_parts.begin(), face_parts.end());
  for (const auto* parts : {&dirichlet, &neumann})
    for (const auto& [name, g] : *parts)
      if (!part_names.count(name))
        throw InputError(where + (parts == &dirichlet ? "dirichlet." : "neumann.") + name +
                         ": unknown boundary part; the parts of " + domain_text + " are " + join(part_names));
  for (const auto& name : part_names)
    if (dirichlet.count(name) && neumann.count(name))
      throw InputError(where + name + ": the boundary part is listed twice (dirichlet and neumann)");
  for (const auto& name : part_names)
    if (!dirichlet.count(name) && !neumann.count(name))
      throw InputError(where + name + ": the boundary part is missing; list it under \"dirichlet\" or \"neumann\"");
  bool any_dirichlet = false;
  for (int f = 0; f < 2 * dim; ++f) {
    const std::string& name = face_parts[f];
    const bool in_d = dirichlet.count(name) > 0;
    p.dirichlet_faces[f] = in_d;
    any_dirichlet |= in_d;
    p.boundary[f] = in_d ? dirichlet.at(name) : neumann.at(name);
    if (!p.boundary[f]) throw InputError(where + name + ": the boundary part has no function");
  }
  if (!any_dirichlet)
    throw InputError(where + "neumann: every boundary part is Neumann; the solution is then determined only up to a "
                     "constant: make at least one part Dirichlet");
}

template <int dim>
ProblemDefinition<dim> make_problem(const ProblemFile& file) {
  const std::string where = "problem file " + file.path + ": ";
  if (file.dim != dim) throw InputError(where + "dim: the file is for dim " + std::to_string(file.dim));
  ProblemDefinition<dim> p;
  p.degree = file.degree;
  mesh::Point<dim> lower, upper;
  for (int d = 0; d < dim; ++d) {
    p.box[d] = file.box[d];
    p.cells[d] = file.cells[d];
    lower[d] = file.box[d][0];
    upper[d] = file.box[d][1];
  }
  auto expr = [&](const std::string& key, const std::string& text) {
    p.texts[key] = text;
    auto e = std::make_shared<const Expression>(where + key, text, dim);
    p.expressions[key] = e;
    return e;
  };
  auto point_function = [](std::shared_ptr<const Expression> e) -> PointFunction<dim> {
    return [e](const mesh::Point<dim>& x) { return (*e)(x.data()); };
  };
  std::function<mesh::Point<dim>(const mesh::Point<dim>&)> map;
  std::array<jit::DeviceSource, dim> map_source{};
  if (!file.map.empty()) {
    std::array<std::shared_ptr<const Expression>, dim> m;
    for (int d = 0; d < dim; ++d) {
      m[d] = expr("geometry.map[" + std::to_string(d) + "]", file.map[d]);
      map_source[d] = {m[d]->source(ExpressionDialect::cuda), Expression::device_prelude()};
    }
    map = [m](const mesh::Point<dim>& X) {
      mesh::Point<dim> x;
      for (int d = 0; d < dim; ++d) x[d] = (*m[d])(X.data());
      return x;
    };
  }
  if constexpr (dim == 2) {
    if (file.block2) p.domain = file.block2->domain();
  } else {
    if (file.block3) p.domain = file.block3->domain();
  }
  if (!file.mesh) {
    p.domain = mesh::Domain<dim>::box(lower, upper, map);
    p.domain.map_source = map_source;
  }
  const auto a = expr("coefficient", file.coefficient);
  if (a->is_constant()) {
    const double zero[3] = {0.0, 0.0, 0.0};
    p.constant_coefficient = (*a)(zero);
    if (!(p.constant_coefficient > 0.0))
      throw InputError(where + "coefficient: must be positive (it is " + file.coefficient + ")");
  } else {
    p.coefficient = [a](const double* x) { return (*a)(x); };
    p.coefficient_source = {a->source(ExpressionDialect::cuda), Expression::device_prelude()};
  }
  p.rhs = point_function(expr("rhs", file.rhs));
  // boundary parts: a part is a box face or a mesh's physical group
  std::array<std::string, 2 * dim> face_parts;
  for (int f = 0; f < 2 * dim; ++f) face_parts[f] = box_face_name(f);
  if constexpr (dim == 2) {
    if (file.block2) face_parts = file.block2->face_parts();
  } else {
    if (file.block3) face_parts = file.block3->face_parts();
  }
  const std::set<std::string> part_names(face_parts.begin(), face_parts.end());
  std::map<std::string, PointFunction<dim>> dirichlet, neumann;
  for (const auto& [name, text] : file.dirichlet)
    dirichlet[name] = part_names.count(name) ? point_function(expr("dirichlet." + name, text)) : nullptr;
  for (const auto& [name, text] : file.neumann)
    neumann[name] = part_names.count(name) ? point_function(expr("neumann." + name, text)) : nullptr;
  set_boundary_parts<dim>(p, face_parts, dirichlet, neumann, where,
                          file.mesh ? "the mesh " + *file.mesh + " (its physical groups)"
                                    : "a " + std::to_string(dim) + "D box");
  if (file.exact) {
    const auto u = expr("exact", *file.exact);
    p.exact = point_function(u);
    if (!file.exact_gradient.empty()) {
      std::array<std::shared_ptr<const Expression>, dim> g;
      for (int d = 0; d < dim; ++d) g[d] = expr("exact_gradient[" + std::to_string(d) + "]", file.exact_gradient[d]);
      p.exact_gradient = [g](const mesh::Point<dim>& x) {
        mesh::Point<dim> r;
        for (int d = 0; d < dim; ++d) r[d] = (*g[d])(x.data());
        return r;
      };
      p.exact_gradient_given = true;
    } else {
      p.exact_gradient = [u](const mesh::Point<dim>& x) {
        const auto g3 = numerical_gradient(*u, x.data());
        mesh::Point<dim> r;
        for (int d = 0; d < dim; ++d) r[d] = g3[d];
        return r;
      };
    }
  }
  return p;
}

template void set_boundary_parts<2>(ProblemDefinition<2>&, const std::array<std::string, 4>&,
                                    const std::map<std::string, PointFunction<2>>&,
                                    const std::map<std::string, PointFunction<2>>&, const std::string&,
                                    const std::string&);
template void set_boundary_parts<3>(ProblemDefinition<3>&, const std::array<std::string, 6>&,
                                    const std::map<std::string, PointFunction<3>>&,
                                    const std::map<std::string, PointFunction<3>>&, const std::string&,
                                    const std::string&);
template ProblemDefinition<2> make_problem<2>(const ProblemFile&);
template ProblemDefinition<3> make_problem<3>(const ProblemFile&);

}  // namespace tcfem::problem
