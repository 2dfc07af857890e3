#pragma once
// The user's problem: -div(a grad u) = f in Omega, u = g on Dirichlet parts, a grad u . n = h on
// Neumann parts, on a box or a mapped box; read from a JSON problem file (tcfem solve --problem)
// or built in code. Expressions are muparser text (problem/expression.h).
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "mesh/structured_block.h"
#include "operators/coefficient.h"
#include "problem/expression.h"

namespace tcfem::problem {

/// The contents of a problem file, checked for keys and types (not yet for the dimension's
/// expressions, which ProblemDefinition parses).
struct ProblemFile {
  std::string path;
  int dim = 0;
  std::optional<int> degree;
  std::vector<std::array<double, 2>> box;  ///< per direction [lower, upper]
  std::vector<int> cells;                  ///< per direction
  std::vector<std::string> map;            ///< empty: no map
  std::optional<std::string> mesh;         ///< the mesh file, relative to the problem file's folder
  /// The mesh file's cells as one structured block (read with the file; box is [0, n_d], cells n_d).
  std::shared_ptr<const mesh::StructuredBlock<2>> block2;
  std::shared_ptr<const mesh::StructuredBlock<3>> block3;
  std::string coefficient = "1";
  std::string rhs = "0";
  std::map<std::string, std::string> dirichlet, neumann;  ///< part name -> expression
  std::optional<std::string> exact;
  std::vector<std::string> exact_gradient;  ///< empty: derived from "exact" numerically

  /// Whether the geometry is curved: a map or a mesh file.
  bool curved() const { return !map.empty() || mesh.has_value(); }
};

/// Reads and checks a problem file, and the mesh file it names; InputError (one line naming the
/// file and the key) for unreadable files, malformed JSON, unknown keys, wrong types, inconsistent
/// sizes, and mesh files that are unreadable or not one structured block of hexahedra.
ProblemFile read_problem_file(const std::string& path);

/// Names of the boundary parts of a box: xmin, xmax, ymin, ymax (, zmin, zmax); face 2 d + side.
const char* box_face_name(int face);

/// A scalar function of the physical point; thread-safe.
template <int dim>
using PointFunction = std::function<double(const mesh::Point<dim>&)>;

/// The problem with its expressions parsed for dimension dim.
template <int dim>
struct ProblemDefinition {
  std::array<std::array<double, 2>, dim> box{};
  std::array<int, dim> cells{};
  std::optional<int> degree;
  /// The domain: the box, mapped when the file has a map.
  mesh::Domain<dim> domain;
  /// a(x): empty when the coefficient is a constant, whose value is then constant_coefficient.
  operators::Coefficient coefficient;
  /// The coefficient as CUDA C++ for the device setup (empty for a C++ callable or a constant).
  jit::DeviceSource coefficient_source;
  double constant_coefficient = 1.0;
  PointFunction<dim> rhs;
  fe::DirichletFaces<dim> dirichlet_faces{};
  std::array<PointFunction<dim>, 2 * dim> boundary;  ///< g on Dirichlet faces, h on Neumann faces
  std::array<std::string, 2 * dim> face_parts;       ///< the boundary part of each box face
  PointFunction<dim> exact;                          ///< empty: no exact solution
  std::function<mesh::Point<dim>(const mesh::Point<dim>&)> exact_gradient;
  bool exact_gradient_given = false;
  std::map<std::string, std::string> texts;  ///< key -> expression text, for reports
  /// key -> parsed expression (problem files; empty for functions given as C++ callables): what
  /// the device setup compiles ("rhs", "coefficient", "exact", "exact_gradient[d]",
  /// "geometry.map[d]", "dirichlet.<part>", "neumann.<part>").
  std::map<std::string, std::shared_ptr<const Expression>> expressions;
};

/// Sets the boundary parts of `p`: face_parts[f] names the part of box face f; every part must be
/// in exactly one of `dirichlet` and `neumann` (part -> g or h), and one part must be Dirichlet.
/// InputError starting with `where` naming the part otherwise; domain_text says whose parts these
/// are ("a 2D box").
template <int dim>
void set_boundary_parts(ProblemDefinition<dim>& p, const std::array<std::string, 2 * dim>& face_parts,
                        const std::map<std::string, PointFunction<dim>>& dirichlet,
                        const std::map<std::string, PointFunction<dim>>& neumann, const std::string& where,
                        const std::string& domain_text);

/// Parses the expressions of `file` (InputError naming the key for malformed ones, unknown names,
/// boundary parts missing or listed twice, an all-Neumann problem, a mesh file).
template <int dim>
ProblemDefinition<dim> make_problem(const ProblemFile& file);

}  // namespace tcfem::problem
