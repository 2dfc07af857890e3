#include "support/gmsh_meshes.h"

#include <gmsh.h>

#include <cmath>
#include <vector>

namespace tcfem::test_meshes {

namespace {

struct Session {
  Session() {
    gmsh::initialize(0, nullptr, false);
    gmsh::option::setNumber("General.Terminal", 0);
    gmsh::model::add("test");
  }
  ~Session() { gmsh::finalize(); }
};

/// The unit square as a geo surface; its four sides in *sides.
int unit_square(std::vector<int>* sides, double size) {
  namespace geo = gmsh::model::geo;
  const int p1 = geo::addPoint(0, 0, 0, size), p2 = geo::addPoint(1, 0, 0, size), p3 = geo::addPoint(1, 1, 0, size),
            p4 = geo::addPoint(0, 1, 0, size);
  *sides = {geo::addLine(p1, p2), geo::addLine(p2, p3), geo::addLine(p3, p4), geo::addLine(p4, p1)};
  return geo::addPlaneSurface({geo::addCurveLoop(*sides)});
}

/// Boundary part "wall" (everything) and the cells' group, then writes.
void finish_box(const std::string& path, int dim, int surface, const std::vector<int>& sides, bool recombine) {
  namespace geo = gmsh::model::geo;
  if (dim == 3) {
    gmsh::vectorpair out;
    if (recombine)
      geo::extrude({{2, surface}}, 0, 0, 1, out, {3}, {}, true);
    else
      geo::extrude({{2, surface}}, 0, 0, 1, out);
    geo::synchronize();
    std::vector<int> walls{surface, out[0].second};
    for (std::size_t i = 2; i < out.size(); ++i) walls.push_back(out[i].second);
    gmsh::model::addPhysicalGroup(2, walls, 1);
    gmsh::model::setPhysicalName(2, 1, "wall");
    gmsh::model::addPhysicalGroup(3, {out[1].second}, 2);
  } else {
    geo::synchronize();
    gmsh::model::addPhysicalGroup(1, sides, 1);
    gmsh::model::setPhysicalName(1, 1, "wall");
    gmsh::model::addPhysicalGroup(2, {surface}, 2);
  }
  gmsh::model::mesh::generate(dim);
  gmsh::write(path);
}

}  // namespace

void write_annulus_mesh(const std::string& path, int dim, int n, int order, double version) {
  Session s;
  namespace geo = gmsh::model::geo;
  const int c = geo::addPoint(0, 0, 0), a = geo::addPoint(1, 0, 0), b = geo::addPoint(2, 0, 0),
            d = geo::addPoint(0, 2, 0), e = geo::addPoint(0, 1, 0);
  const int bottom = geo::addLine(a, b), outer = geo::addCircleArc(b, c, d), left = geo::addLine(d, e),
            inner = geo::addCircleArc(e, c, a);
  const int surface = geo::addPlaneSurface({geo::addCurveLoop({bottom, outer, left, inner})});
  for (int curve : {bottom, outer, left, inner}) geo::mesh::setTransfiniteCurve(curve, n + 1);
  geo::mesh::setTransfiniteSurface(surface);
  geo::mesh::setRecombine(2, surface);
  std::vector<std::pair<std::string, std::pair<int, std::vector<int>>>> groups;
  if (dim == 3) {
    gmsh::vectorpair out;
    geo::extrude({{2, surface}}, 0, 0, 1, out, {n}, {}, true);
    // out: the top surface, the volume, then the sides in the order of the curve loop
    geo::synchronize();
    groups = {{"zlow", {2, {surface}}}, {"ztop", {2, {out[0].second}}}, {"bottom", {2, {out[2].second}}},
              {"outer", {2, {out[3].second}}}, {"left", {2, {out[4].second}}}, {"inner", {2, {out[5].second}}}};
    gmsh::model::addPhysicalGroup(3, {out[1].second}, 100);
  } else {
    geo::synchronize();
    groups = {{"bottom", {1, {bottom}}}, {"outer", {1, {outer}}}, {"left", {1, {left}}}, {"inner", {1, {inner}}}};
    gmsh::model::addPhysicalGroup(2, {surface}, 100);
  }
  int tag = 1;
  for (const auto& [name, g] : groups) {
    gmsh::model::addPhysicalGroup(g.first, g.second, tag);
    gmsh::model::setPhysicalName(g.first, tag, name);
    ++tag;
  }
  gmsh::model::mesh::generate(dim);
  if (order > 1) {
    gmsh::option::setNumber("Mesh.SecondOrderIncomplete", 0);
    gmsh::model::mesh::setOrder(order);
  }
  gmsh::option::setNumber("Mesh.MshFileVersion", version);
  gmsh::write(path);
}

void write_unstructured_hex_mesh(const std::string& path, int dim) {
  Session s;
  std::vector<int> sides;
  const int surface = unit_square(&sides, 0.3);
  gmsh::model::geo::mesh::setRecombine(2, surface);
  gmsh::option::setNumber("Mesh.RecombineAll", 1);
  gmsh::option::setNumber("Mesh.SubdivisionAlgorithm", 1);
  finish_box(path, dim, surface, sides, true);
}

void write_simplex_mesh(const std::string& path, int dim) {
  Session s;
  std::vector<int> sides;
  const int surface = unit_square(&sides, 0.4);
  finish_box(path, dim, surface, sides, false);
}

}  // namespace tcfem::test_meshes
