#pragma once
// The acoustic-gravity wave problem (tcfem wave): velocity u, pressure p and surface height
// eta = p / (rho g) in a basin, the last direction vertical:
//   rho du/dt + grad p = 0,  K^-1 dp/dt + div u = 0            in the basin,
//   free surface  p = rho g eta, d eta/dt = u . n              (faces of kind "surface"),
//   seafloor      u . n = -db/dt  (db/dt: the inward velocity)  ("seafloor"; "wall": db/dt = 0),
//   absorbing     u . n = p / Z,  Z = sqrt(rho K)               ("absorbing").
// Read from a JSON problem file or built in (the default basin); rho, K, g are expressions of x,
// the seafloor velocity, initial data and exact solution expressions of x and t.
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mesh/box_mesh.h"
#include "wave/dispersion.h"

namespace tcfem::wave {

enum class BoundaryKind { surface, wall, absorbing, seafloor };
const char* to_string(BoundaryKind kind);

/// The contents of a wave problem file, checked for keys and types.
struct WaveFile {
  std::string path;  ///< empty: the built-in default basin
  int dim = 3;
  int degree = 4;
  std::vector<std::array<double, 2>> box;
  std::vector<int> cells;
  std::vector<std::string> map;  ///< empty: no map
  std::string rho = "1", K = "1", g = "1";
  std::map<std::string, std::string> boundary;  ///< face -> kind; missing faces: see make_wave_problem
  std::optional<std::string> seafloor_velocity;
  std::optional<std::string> initial_p;
  std::vector<std::string> initial_u;
  std::vector<int> mode;  ///< horizontal wave numbers then the branch; empty: no mode
  std::optional<std::string> exact_p;
  std::vector<std::string> exact_u;
  std::optional<double> t_end, dt, cfl;
};

/// Reads and checks a wave problem file: InputError (one line naming the file and the key) for an
/// unreadable file, malformed JSON, unknown keys, wrong types and inconsistent sizes.
WaveFile read_wave_file(const std::string& path);
/// The default basin: 3D, k = 4, [0,2] x [0,1] x [-1,0] with 8 x 4 x 4 cells, rho = K = g = 1,
/// walls, a free surface, started from the normal mode (1, 1) of the gravity branch, two periods.
WaveFile default_wave_file();

using TimeFunction = std::function<double(const double* x, double t)>;
using SpaceFunction = std::function<double(const double* x)>;

/// The problem with its expressions parsed for dimension dim.
template <int dim>
struct WaveProblem {
  mesh::Domain<dim> domain;
  std::array<int, dim> cells{};
  int degree = 4;
  SpaceFunction rho, K, g;  ///< positive (checked at every point used)
  std::array<BoundaryKind, 2 * dim> faces{};
  TimeFunction seafloor_velocity;              ///< db/dt on faces of kind seafloor; empty: 0
  SpaceFunction initial_p;                     ///< empty: 0
  std::array<SpaceFunction, dim> initial_u{};  ///< empty: 0
  TimeFunction exact_p;                        ///< empty: no errors
  std::array<TimeFunction, dim> exact_u{};
  std::optional<BasinMode<dim>> mode;  ///< started from a normal mode (its exact solution is exact_*)
  std::optional<double> t_end, dt, cfl;
  std::map<std::string, std::string> texts;  ///< the expressions as given, for the report
  /// The file's expressions as CUDA C++ for the device setup (the map's are domain.map_source);
  /// empty where a function has no device form (the normal mode's initial data).
  jit::DeviceSource rho_source, K_source, initial_p_source;
  std::array<jit::DeviceSource, dim> initial_u_source{};

  bool has_exact() const { return static_cast<bool>(exact_p); }
  bool has_absorbing() const;
  bool has_seafloor() const;
};

/// Parses the expressions of `file` for dimension dim and checks the boundary: every face at most
/// once with a known kind (missing faces: the top face is "surface", the others "wall"), the
/// mode's conditions (a box without map, constant rho, K, g, walls and a surface on top).
template <int dim>
WaveProblem<dim> make_wave_problem(const WaveFile& file);

}  // namespace tcfem::wave
