#include "io/gmsh_reader.h"

#include <fstream>

#include "core/error.h"

#ifdef TCFEM_HAVE_GMSH
#include <gmsh.h>

#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <unordered_map>
#endif

namespace tcfem::io {

#ifndef TCFEM_HAVE_GMSH

bool gmsh_available() { return false; }

template <int dim>
mesh::HexMesh<dim> read_gmsh_mesh(const std::string& path) {
  throw InputError("mesh " + path + ": this build of tcfem reads no mesh files (it was built without Gmsh: "
                   "configure with -DTCFEM_WITH_GMSH=ON and Debian's libgmsh-dev)");
}

#else

bool gmsh_available() { return true; }

namespace {

std::mutex gmsh_mutex;

/// Gmsh's API for one read: initialized quietly, finalized on every way out.
struct GmshSession {
  GmshSession() {
    gmsh::initialize(0, nullptr, /*readConfigFiles=*/false);
    gmsh::option::setNumber("General.Terminal", 0);
    gmsh::option::setNumber("General.Verbosity", 0);
  }
  ~GmshSession() { gmsh::finalize(); }
  GmshSession(const GmshSession&) = delete;
  GmshSession& operator=(const GmshSession&) = delete;
};

const char* cell_words(int dim) { return dim == 3 ? "hexahedra" : "quadrilaterals"; }

template <int dim>
mesh::HexMesh<dim> read_locked(const std::string& path) {
  const std::string where = "mesh " + path + ": ";
  {
    std::ifstream probe(path);
    if (!probe) throw InputError(where + "cannot read the file");
  }
  GmshSession session;
  try {
    gmsh::open(path);
  } catch (const std::string& e) {
    throw InputError(where + "Gmsh cannot read it: " + e);
  } catch (const std::exception& e) {
    throw InputError(where + "Gmsh cannot read it: " + e.what());
  }
  const int file_dim = gmsh::model::getDimension();
  std::vector<int> types;
  gmsh::model::mesh::getElementTypes(types, dim);
  if (types.empty())
    throw InputError(where + "the mesh has no " + std::to_string(dim) + "D cells" +
                     (file_dim >= 0 && file_dim != dim ? " (it is a " + std::to_string(file_dim) + "D model)" : "") +
                     "; Gmsh writes only the elements of physical groups when there are any: add a physical group "
                     "of the cells or set Mesh.SaveAll");
  // the cells: one type, hexahedra (quadrilaterals) of order 1 or 2 with all tensor-product nodes
  int cell_type = -1, order = 0;
  std::vector<double> local;
  for (int t : types) {
    std::string name;
    int edim = 0, eorder = 0, n_nodes = 0, n_primary = 0;
    std::vector<double> lc;
    gmsh::model::mesh::getElementProperties(t, name, edim, eorder, n_nodes, lc, n_primary);
    std::vector<std::size_t> tags, nodes;
    gmsh::model::mesh::getElementsByType(t, tags, nodes);
    const bool tensor = n_primary == (1 << dim) && n_nodes == int(std::pow(eorder + 1, dim));
    if (!tensor || eorder > 2) {
      std::string what = std::to_string(tags.size()) + " cells of type \"" + name + "\"";
      if (dim == 3 && n_primary == 4) what = std::to_string(tags.size()) + " tetrahedra";
      if (dim == 2 && n_primary == 3) what = std::to_string(tags.size()) + " triangles";
      throw InputError(where + "the mesh has " + what + "; tcfem reads " + cell_words(dim) + " of order 1 or 2 " +
                       (dim == 3 ? "(8 or 27 nodes)" : "(4 or 9 nodes)") + " only");
    }
    if (cell_type >= 0 && t != cell_type)
      throw InputError(where + "the mesh mixes cells of order 1 and 2; tcfem reads one order");
    cell_type = t;
    order = eorder;
    local = lc;
  }
  const int np = order + 1, npc = int(std::pow(np, dim));
  // gmsh's node i of the reference cell [-1, 1]^dim -> its tensor-product position
  std::vector<int> tensor_position(npc, -1);
  for (int i = 0; i < npc; ++i) {
    int flat = 0, stride = 1;
    for (int d = 0; d < dim; ++d, stride *= np) {
      const double u = local[std::size_t(i) * dim + d];
      const int r = int(std::lround((u + 1.0) * 0.5 * order));
      if (std::abs((u + 1.0) * 0.5 * order - r) > 1e-9 || r < 0 || r > order)
        throw Error(where + "unexpected reference node of a " + cell_words(dim) + " cell");
      flat += r * stride;
    }
    if (tensor_position[flat] >= 0) throw Error(where + "two reference nodes at one position");
    tensor_position[flat] = i;
  }

  mesh::HexMesh<dim> m;
  m.source = path;
  m.order = order;
  std::vector<std::size_t> node_tags;
  std::vector<double> coords, parametric;
  gmsh::model::mesh::getNodes(node_tags, coords, parametric, -1, -1, false, false);
  std::unordered_map<std::size_t, std::size_t> index;
  index.reserve(node_tags.size());
  m.nodes.resize(node_tags.size());
  for (std::size_t i = 0; i < node_tags.size(); ++i) {
    index[node_tags[i]] = i;
    for (int d = 0; d < dim; ++d) m.nodes[i][d] = coords[3 * i + d];  // 2D: x and y of the plane's points
  }
  auto node_index = [&](std::size_t tag) {
    const auto it = index.find(tag);
    if (it == index.end()) throw InputError(where + "an element refers to the missing node " + std::to_string(tag));
    return it->second;
  };
  {
    std::vector<std::size_t> tags, nodes;
    gmsh::model::mesh::getElementsByType(cell_type, tags, nodes);
    m.cell_tags = tags;
    m.cell_nodes.resize(tags.size() * npc);
    for (std::size_t c = 0; c < tags.size(); ++c)
      for (int q = 0; q < npc; ++q) m.cell_nodes[c * npc + q] = node_index(nodes[c * npc + tensor_position[q]]);
  }
  // the boundary parts: physical groups of dimension dim - 1
  gmsh::vectorpair groups;
  gmsh::model::getPhysicalGroups(groups, dim - 1);
  if (groups.empty())
    throw InputError(where + "the mesh has no physical groups of dimension " + std::to_string(dim - 1) +
                     "; name its boundary parts with physical groups (they are the keys of \"dirichlet\" and \"neumann\")");
  for (const auto& [gdim, gtag] : groups) {
    std::string name;
    gmsh::model::getPhysicalName(gdim, gtag, name);
    if (name.empty()) name = std::to_string(gtag);
    std::vector<int> entities;
    gmsh::model::getEntitiesForPhysicalGroup(gdim, gtag, entities);
    for (int e : entities) {
      std::vector<int> etypes;
      std::vector<std::vector<std::size_t>> etags, enodes;
      gmsh::model::mesh::getElements(etypes, etags, enodes, gdim, e);
      for (std::size_t k = 0; k < etypes.size(); ++k) {
        std::string ename;
        int edim = 0, eorder = 0, n_nodes = 0, n_primary = 0;
        std::vector<double> lc;
        gmsh::model::mesh::getElementProperties(etypes[k], ename, edim, eorder, n_nodes, lc, n_primary);
        if (n_primary != mesh::HexMesh<dim>::corners_per_face)
          throw InputError(where + "physical group \"" + name + "\" has elements of type \"" + ename + "\"; the faces of " +
                           cell_words(dim) + " are " + (dim == 3 ? "quadrilaterals" : "lines"));
        for (std::size_t j = 0; j < etags[k].size(); ++j) {
          typename mesh::HexMesh<dim>::BoundaryFace f;
          f.part = name;
          for (int c = 0; c < n_primary; ++c) f.corners[c] = node_index(enodes[k][j * n_nodes + c]);
          m.boundary.push_back(f);
        }
      }
    }
  }
  return m;
}

}  // namespace

template <int dim>
mesh::HexMesh<dim> read_gmsh_mesh(const std::string& path) {
  std::lock_guard<std::mutex> lock(gmsh_mutex);
  try {
    return read_locked<dim>(path);
  } catch (const std::string& e) {  // the Gmsh library throws its messages as strings
    throw InputError("mesh " + path + ": " + e);
  }
}

#endif

template mesh::HexMesh<2> read_gmsh_mesh<2>(const std::string&);
template mesh::HexMesh<3> read_gmsh_mesh<3>(const std::string&);

}  // namespace tcfem::io
