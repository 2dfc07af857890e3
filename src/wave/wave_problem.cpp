#include "wave/wave_problem.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "problem/expression.h"
#include "problem/json_reader.h"

namespace tcfem::wave {

const char* to_string(BoundaryKind kind) {
  switch (kind) {
    case BoundaryKind::surface: return "surface";
    case BoundaryKind::wall: return "wall";
    case BoundaryKind::absorbing: return "absorbing";
    case BoundaryKind::seafloor: return "seafloor";
  }
  return "?";
}

namespace {
using json = nlohmann::json;

const std::set<std::string> top_keys = {"dim", "degree", "geometry", "rho",   "K",    "g",
                                        "boundary", "seafloor_velocity", "initial", "exact", "time"};
const char* face_names[6] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};

using Reader = problem::JsonReader;
using problem::join;
}  // namespace

WaveFile default_wave_file() {
  WaveFile f;
  f.dim = 3;
  f.degree = 4;
  f.box = {{0.0, 2.0}, {0.0, 1.0}, {-1.0, 0.0}};
  f.cells = {8, 4, 4};
  f.mode = {1, 1, 0};
  return f;
}

WaveFile read_wave_file(const std::string& path) {
  Reader r{path};
  json j = r.read(top_keys);
  WaveFile f;
  f.path = path;
  f.dim = r.dimension(j);
  if (j.contains("degree")) {
    f.degree = r.integer(j["degree"], "degree");
    if (f.degree < 2 || f.degree > 8) r.fail("degree", "must be in 2..8 (the pressure's degree; the velocity's is one less)");
  }
  if (!j.contains("geometry")) r.fail("geometry", "missing: {\"box\": ..., \"cells\": ...}");
  const auto& g = j["geometry"];
  r.only(g, "geometry", {"box", "cells", "map"});
  if (!g.contains("box") || !g["box"].is_array() || int(g["box"].size()) != f.dim)
    r.fail("geometry.box", "expected " + std::to_string(f.dim) + " intervals [lower, upper]");
  for (int d = 0; d < f.dim; ++d) {
    const auto& iv = g["box"][d];
    const std::string key = "geometry.box[" + std::to_string(d) + "]";
    if (!iv.is_array() || iv.size() != 2 || !iv[0].is_number() || !iv[1].is_number()) r.fail(key, "expected [lower, upper]");
    const double lo = iv[0].get<double>(), hi = iv[1].get<double>();
    if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi)) r.fail(key, "needs finite lower < upper");
    f.box.push_back({lo, hi});
  }
  if (!g.contains("cells") || !g["cells"].is_array() || int(g["cells"].size()) != f.dim)
    r.fail("geometry.cells", "expected " + std::to_string(f.dim) + " cell counts");
  for (int d = 0; d < f.dim; ++d) {
    const int n = r.integer(g["cells"][d], "geometry.cells");
    if (n < 1 || n > (1 << 16)) r.fail("geometry.cells", "counts must be in 1..65536");
    f.cells.push_back(n);
  }
  if (g.contains("map")) f.map = r.expressions(g["map"], "geometry.map", f.dim);
  if (j.contains("rho")) f.rho = r.expression(j["rho"], "rho");
  if (j.contains("K")) f.K = r.expression(j["K"], "K");
  if (j.contains("g")) f.g = r.expression(j["g"], "g");
  if (j.contains("boundary")) {
    const auto& b = j["boundary"];
    std::set<std::string> faces;
    for (int i = 0; i < 2 * f.dim; ++i) faces.insert(face_names[i]);
    r.only(b, "boundary", faces);
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!it.value().is_string()) r.fail("boundary." + it.key(), "expected surface, wall, absorbing or seafloor");
      f.boundary[it.key()] = it.value().get<std::string>();
    }
  }
  if (j.contains("seafloor_velocity")) f.seafloor_velocity = r.expression(j["seafloor_velocity"], "seafloor_velocity");
  if (j.contains("initial")) {
    const auto& v = j["initial"];
    r.only(v, "initial", {"p", "u", "mode"});
    if (v.contains("mode") && (v.contains("p") || v.contains("u")))
      r.fail("initial", "give either \"mode\" or \"p\" and \"u\"");
    if (v.contains("p")) f.initial_p = r.expression(v["p"], "initial.p");
    if (v.contains("u")) f.initial_u = r.expressions(v["u"], "initial.u", f.dim);
    if (v.contains("mode")) {
      const auto& m = v["mode"];
      if (!m.is_array() || int(m.size()) != f.dim)
        r.fail("initial.mode", "expected " + std::to_string(f.dim - 1) +
                                   " horizontal wave numbers and a branch (0: gravity, j >= 1: acoustic)");
      for (int d = 0; d < f.dim; ++d) {
        const int n = r.integer(m[d], "initial.mode");
        if (n < 0) r.fail("initial.mode", "entries must be >= 0");
        f.mode.push_back(n);
      }
    }
  }
  if (j.contains("exact")) {
    const auto& v = j["exact"];
    r.only(v, "exact", {"p", "u"});
    if (!v.contains("p") || !v.contains("u")) r.fail("exact", "needs both \"p\" and \"u\"");
    if (!f.mode.empty()) r.fail("exact", "a normal mode has its own exact solution; remove \"exact\"");
    f.exact_p = r.expression(v["p"], "exact.p");
    f.exact_u = r.expressions(v["u"], "exact.u", f.dim);
  }
  if (j.contains("time")) {
    const auto& v = j["time"];
    r.only(v, "time", {"end", "dt", "cfl"});
    if (v.contains("end")) f.t_end = r.positive(v["end"], "time.end");
    if (v.contains("dt")) f.dt = r.positive(v["dt"], "time.dt");
    if (v.contains("cfl")) f.cfl = r.positive(v["cfl"], "time.cfl");
  }
  return f;
}

template <int dim>
bool WaveProblem<dim>::has_absorbing() const {
  for (auto k : faces)
    if (k == BoundaryKind::absorbing) return true;
  return false;
}

template <int dim>
bool WaveProblem<dim>::has_seafloor() const {
  for (auto k : faces)
    if (k == BoundaryKind::seafloor) return true;
  return false;
}

template <int dim>
WaveProblem<dim> make_wave_problem(const WaveFile& file) {
  using problem::Expression;
  const std::string where = file.path.empty() ? std::string("default problem: ") : "problem file " + file.path + ": ";
  if (file.dim != dim) throw InputError(where + "dim: the file is for dim " + std::to_string(file.dim));
  WaveProblem<dim> p;
  p.degree = file.degree;
  if (p.degree < 2 || p.degree > 8) throw InputError(where + "degree: must be in 2..8");
  mesh::Point<dim> lower, upper;
  for (int d = 0; d < dim; ++d) {
    p.cells[d] = file.cells[d];
    lower[d] = file.box[d][0];
    upper[d] = file.box[d][1];
  }
  auto expr = [&](const std::string& key, const std::string& text, bool time = false) {
    p.texts[key] = text;
    return std::make_shared<const Expression>(where + key, text, dim, time);
  };
  auto space = [](std::shared_ptr<const Expression> e) -> SpaceFunction {
    if (e->is_constant()) {  // evaluated once: the setup calls it at every point
      const double zero[3] = {0, 0, 0}, v = (*e)(zero);
      return [v](const double*) { return v; };
    }
    return [e](const double* x) { return (*e)(x); };
  };
  auto timed = [](std::shared_ptr<const Expression> e) -> TimeFunction {
    return [e](const double* x, double t) { return (*e)(x, t); };
  };
  auto device_source = [](const std::shared_ptr<const Expression>& e) -> jit::DeviceSource {
    return {e->source(problem::ExpressionDialect::cuda), Expression::device_prelude()};
  };
  std::function<mesh::Point<dim>(const mesh::Point<dim>&)> map;
  std::array<jit::DeviceSource, dim> map_source{};
  if (!file.map.empty()) {
    std::array<std::shared_ptr<const Expression>, dim> m;
    for (int d = 0; d < dim; ++d) m[d] = expr("geometry.map[" + std::to_string(d) + "]", file.map[d]);
    for (int d = 0; d < dim; ++d) map_source[d] = device_source(m[d]);
    map = [m](const mesh::Point<dim>& X) {
      mesh::Point<dim> x;
      for (int d = 0; d < dim; ++d) x[d] = (*m[d])(X.data());
      return x;
    };
  }
  p.domain = mesh::Domain<dim>::box(lower, upper, map);
  p.domain.map_source = map_source;
  // material: positive constants or expressions (checked positive where they are used)
  std::array<std::optional<double>, 3> constant;
  const std::array<const std::string*, 3> texts = {&file.rho, &file.K, &file.g};
  const char* names[3] = {"rho", "K", "g"};
  std::array<SpaceFunction*, 3> targets = {&p.rho, &p.K, &p.g};
  std::array<jit::DeviceSource*, 3> sources = {&p.rho_source, &p.K_source, nullptr};
  for (int i = 0; i < 3; ++i) {
    const auto e = expr(names[i], *texts[i]);
    if (sources[i]) *sources[i] = device_source(e);
    if (e->is_constant()) {
      const double zero[3] = {0, 0, 0};
      constant[i] = (*e)(zero);
      if (!(*constant[i] > 0)) throw InputError(where + names[i] + ": must be positive (it is " + *texts[i] + ")");
    }
    *targets[i] = space(e);
  }
  // boundary kinds: every face at most once (the file's object has unique keys); missing faces:
  // the top face is the free surface, the others rigid walls
  for (int f = 0; f < 2 * dim; ++f) p.faces[f] = f == 2 * dim - 1 ? BoundaryKind::surface : BoundaryKind::wall;
  for (const auto& [name, kind] : file.boundary) {
    int f = -1;
    for (int i = 0; i < 2 * dim; ++i)
      if (name == face_names[i]) f = i;
    if (f < 0) throw InputError(where + "boundary." + name + ": not a face of the " + std::to_string(dim) + "D box");
    if (kind == "surface") p.faces[f] = BoundaryKind::surface;
    else if (kind == "wall") p.faces[f] = BoundaryKind::wall;
    else if (kind == "absorbing") p.faces[f] = BoundaryKind::absorbing;
    else if (kind == "seafloor") p.faces[f] = BoundaryKind::seafloor;
    else throw InputError(where + "boundary." + name + ": unknown kind \"" + kind + "\"; kinds: surface, wall, absorbing, seafloor");
  }
  if (file.seafloor_velocity) {
    if (!p.has_seafloor())
      throw InputError(where + "seafloor_velocity: no face is of kind \"seafloor\" (set one under \"boundary\")");
    p.seafloor_velocity = timed(expr("seafloor_velocity", *file.seafloor_velocity, true));
  } else if (p.has_seafloor()) {
    throw InputError(where + "seafloor_velocity: missing; faces of kind \"seafloor\" need it (or use \"wall\")");
  }
  if (file.initial_p) {
    const auto e = expr("initial.p", *file.initial_p);
    p.initial_p = space(e);
    p.initial_p_source = device_source(e);
  }
  for (int d = 0; d < int(file.initial_u.size()); ++d) {
    const auto e = expr("initial.u[" + std::to_string(d) + "]", file.initial_u[d]);
    p.initial_u[d] = space(e);
    p.initial_u_source[d] = device_source(e);
  }
  if (file.exact_p) {
    p.exact_p = timed(expr("exact.p", *file.exact_p, true));
    for (int d = 0; d < dim; ++d) p.exact_u[d] = timed(expr("exact.u[" + std::to_string(d) + "]", file.exact_u[d], true));
  }
  if (!file.mode.empty()) {
    const std::string key = where + "initial.mode: ";
    if (!file.map.empty()) throw InputError(key + "normal modes are those of a box; remove the map");
    if (!constant[0] || !constant[1] || !constant[2]) throw InputError(key + "normal modes need constant rho, K and g");
    for (int f = 0; f < 2 * dim; ++f)
      if (p.faces[f] != (f == 2 * dim - 1 ? BoundaryKind::surface : BoundaryKind::wall))
        throw InputError(key + "normal modes are those of a closed basin: walls on every face but the top, a surface on top (" +
                         face_names[f] + " is " + to_string(p.faces[f]) + ")");
    std::array<int, dim - 1> m{};
    for (int d = 0; d + 1 < dim; ++d) m[d] = file.mode[d];
    const auto mode = basin_mode<dim>(lower, upper, m, file.mode[dim - 1], *constant[0], *constant[1], *constant[2]);
    p.mode = mode;
    p.initial_p_source = {};
    for (auto& s : p.initial_u_source) s = {};
    p.initial_p = [mode](const double* x) { return mode.pressure(x, 0.0); };
    p.exact_p = [mode](const double* x, double t) { return mode.pressure(x, t); };
    for (int d = 0; d < dim; ++d) p.exact_u[d] = [mode, d](const double* x, double t) { return mode.velocity(x, t, d); };
  }
  p.t_end = file.t_end;
  p.dt = file.dt;
  p.cfl = file.cfl;
  return p;
}

template struct WaveProblem<2>;
template struct WaveProblem<3>;
template WaveProblem<2> make_wave_problem<2>(const WaveFile&);
template WaveProblem<3> make_wave_problem<3>(const WaveFile&);

}  // namespace tcfem::wave
