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
  std::optional<std::string> mesh;
  std::string coefficient = "1";
  std::string rhs = "0";
  std::map<std::string, std::string> dirichlet, neumann;  ///< part name -> expression
  std::optional<std::string> exact;
  std::vector<std::string> exact_gradient;  ///< empty: derived from "exact" numerically
};

/// Reads and checks a problem file; InputError (one line naming the file and the key) for
/// unreadable files, malformed JSON, unknown keys, wrong types and inconsistent sizes.
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
  double constant_coefficient = 1.0;
  PointFunction<dim> rhs;
  fe::DirichletFaces<dim> dirichlet_faces{};
  std::array<PointFunction<dim>, 2 * dim> boundary;  ///< g on Dirichlet faces, h on Neumann faces
  PointFunction<dim> exact;                          ///< empty: no exact solution
  std::function<mesh::Point<dim>(const mesh::Point<dim>&)> exact_gradient;
  bool exact_gradient_given = false;
  std::map<std::string, std::string> texts;  ///< key -> expression text, for reports
};

/// Parses the expressions of `file` (InputError naming the key for malformed ones, unknown names,
/// boundary parts missing or listed twice, an all-Neumann problem, a mesh file).
template <int dim>
ProblemDefinition<dim> make_problem(const ProblemFile& file);

}  // namespace tcfem::problem
