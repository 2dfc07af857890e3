// VTU output with VTK Lagrange cells: point permutation, base64 encoding, atomic file write.
#include "io/vtu_writer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include "core/error.h"

namespace tcfem::io {

namespace {

constexpr std::uint8_t vtk_lagrange_quadrilateral = 70;
constexpr std::uint8_t vtk_lagrange_hexahedron = 72;

/// Number of lattice points of one cell: (degree+1)^dim.
std::size_t points_per_cell(int dim, int degree) {
  std::size_t n = 1;
  for (int d = 0; d < dim; ++d) n *= static_cast<std::size_t>(degree + 1);
  return n;
}

void check_dim_degree(int dim, int degree) {
  if (dim != 2 && dim != 3)
    throw InputError("VTU output: dim must be 2 or 3, got " + std::to_string(dim));
  if (degree < 1 || degree > 8)
    throw InputError("VTU output: degree must be in 1..8, got " + std::to_string(degree));
}

/// Builds the VTK point order of one cell as lattice coordinates (i, j, k); appends the
/// lexicographic index of each point, in VTK order, to `order`.
class LatticeOrder {
 public:
  LatticeOrder(int dim, int degree) : dim_(dim), p_(degree) {}

  void add(int i, int j, int k) { order_.push_back(i + (p_ + 1) * (j + (p_ + 1) * k)); }

  /// Interior points of the edge starting at lattice corner (i, j, k) along `axis`, increasing.
  void add_edge(int i, int j, int k, std::size_t axis) {
    for (int t = 1; t < p_; ++t) {
      std::array<int, 3> x{i, j, k};
      x[axis] = t;
      add(x[0], x[1], x[2]);
    }
  }

  /// Interior points of the face with `normal` axis at lattice position `pos`; the lower remaining
  /// axis runs fastest.
  void add_face(std::size_t normal, int pos) {
    const std::size_t a = normal == 0 ? 1 : 0;  // fast axis
    const std::size_t b = normal == 2 ? 1 : 2;  // slow axis
    for (int s = 1; s < p_; ++s) {
      for (int f = 1; f < p_; ++f) {
        std::array<int, 3> x{};
        x[normal] = pos;
        x[a] = f;
        x[b] = s;
        add(x[0], x[1], x[2]);
      }
    }
  }

  std::vector<int> build() {
    const int p = p_;
    // Corners, counter-clockwise in the bottom layer, then the top layer (3D).
    const int n_layers = dim_ == 3 ? 2 : 1;
    for (int layer = 0; layer < n_layers; ++layer) {
      const int k = layer * p;
      add(0, 0, k);
      add(p, 0, k);
      add(p, p, k);
      add(0, p, k);
    }
    // Edges of the bottom (and top) square: 0-1, 1-2, 3-2, 0-3, each running in +i / +j.
    for (int layer = 0; layer < n_layers; ++layer) {
      const int k = layer * p;
      add_edge(0, 0, k, 0);
      add_edge(p, 0, k, 1);
      add_edge(0, p, k, 0);
      add_edge(0, 0, k, 1);
    }
    if (dim_ == 2) {
      add_face(2, 0);  // the interior of the quadrilateral
      return std::move(order_);
    }
    // Vertical edges in the order of the legacy (VTK 8) layout: 0-4, 1-5, 3-7, 2-6. See
    // vtk_lagrange_to_lexicographic for why the files carry this layout.
    add_edge(0, 0, 0, 2);
    add_edge(p, 0, 0, 2);
    add_edge(0, p, 0, 2);
    add_edge(p, p, 0, 2);
    // Faces -x, +x, -y, +y, -z, +z.
    for (std::size_t normal = 0; normal < 3; ++normal) {
      add_face(normal, 0);
      add_face(normal, p);
    }
    // Volume interior, lexicographic.
    for (int k = 1; k < p; ++k)
      for (int j = 1; j < p; ++j)
        for (int i = 1; i < p; ++i) add(i, j, k);
    return std::move(order_);
  }

 private:
  int dim_;
  int p_;
  std::vector<int> order_;
};

// ---- base64 -------------------------------------------------------------------------------

/// Streaming base64 encoder writing to a FILE*. Write errors are picked up by the caller through
/// ferror/fclose; put() stays cheap.
class Base64Writer {
 public:
  explicit Base64Writer(std::FILE* f) : file_(f) {}

  void put(const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      group_[n_group_++] = bytes[i];
      if (n_group_ == 3) encode_group();
    }
  }

  /// Encodes the pending 1 or 2 bytes with '=' padding and flushes the output buffer.
  void finish() {
    if (n_group_ > 0) encode_group();
    flush();
  }

 private:
  /// Encodes the n_group_ (1..3) pending bytes as 4 characters, '='-padded when n_group_ < 3.
  void encode_group() {
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = n_group_; i < 3; ++i) group_[i] = 0;
    const std::uint32_t v = (std::uint32_t{group_[0]} << 16) | (std::uint32_t{group_[1]} << 8) |
                            std::uint32_t{group_[2]};
    out_[n_out_++] = alphabet[(v >> 18) & 63];
    out_[n_out_++] = alphabet[(v >> 12) & 63];
    out_[n_out_++] = n_group_ > 1 ? alphabet[(v >> 6) & 63] : '=';
    out_[n_out_++] = n_group_ > 2 ? alphabet[v & 63] : '=';
    n_group_ = 0;
    if (n_out_ == out_.size()) flush();
  }

  void flush() {
    if (n_out_ > 0) std::fwrite(out_.data(), 1, n_out_, file_);
    n_out_ = 0;
  }

  std::FILE* file_;
  std::array<unsigned char, 3> group_{};
  std::size_t n_group_ = 0;
  std::array<char, 1 << 16> out_{};  // a multiple of 4: fills up exactly, group by group
  std::size_t n_out_ = 0;
};

/// Appends `value` to the encoder as little-endian bytes.
template <class T>
void put_le(Base64Writer& out, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::array<unsigned char, sizeof(T)> bytes;
  std::memcpy(bytes.data(), &value, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(bytes.begin(), bytes.end());
  out.put(bytes.data(), bytes.size());
}

/// One inline binary DataArray: base64 of [UInt64 byte count][n values of type T], where value i
/// is produced by `value(i)`.
template <class T, class F>
void write_data_array(std::FILE* f, const char* vtk_type, const std::string& name,
                      int n_components, std::size_t n_values, F&& value) {
  std::fprintf(f, "        <DataArray type=\"%s\" Name=\"%s\"", vtk_type, name.c_str());
  if (n_components > 1) std::fprintf(f, " NumberOfComponents=\"%d\"", n_components);
  std::fputs(" format=\"binary\">\n          ", f);
  Base64Writer out(f);
  put_le(out, static_cast<std::uint64_t>(n_values * sizeof(T)));
  for (std::size_t i = 0; i < n_values; ++i) put_le(out, static_cast<T>(value(i)));
  out.finish();
  std::fputs("\n        </DataArray>\n", f);
}

/// Escapes the characters that may not appear literally in an XML attribute value.
std::string xml_escape(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&apos;"; break;
      default: r += c;
    }
  }
  return r;
}

void validate(const LagrangeCellData& data) {
  check_dim_degree(data.dim, data.degree);
  const std::size_t npc = points_per_cell(data.dim, data.degree);
  if (data.n_cells > std::numeric_limits<std::size_t>::max() / (3 * npc))
    throw InputError("VTU output: n_cells = " + std::to_string(data.n_cells) + " is too large");
  const std::size_t n_points = data.n_cells * npc;
  if (data.points.size() != 3 * n_points)
    throw InputError("VTU output: points has " + std::to_string(data.points.size()) +
                     " coordinates, expected 3 * n_cells * (degree+1)^dim = " +
                     std::to_string(3 * n_points) + " (n_cells = " + std::to_string(data.n_cells) +
                     ", dim = " + std::to_string(data.dim) +
                     ", degree = " + std::to_string(data.degree) + ")");
  std::set<std::string> names;
  for (const auto& [name, values] : data.point_fields) {
    if (name.empty()) throw InputError("VTU output: a point field has an empty name");
    if (!names.insert(name).second)
      throw InputError("VTU output: point field '" + name + "' is given more than once");
    if (values.size() != n_points)
      throw InputError("VTU output: point field '" + name + "' has " +
                       std::to_string(values.size()) + " values, expected one per point (" +
                       std::to_string(n_points) + ")");
  }
}

/// Writes the whole VTU document to `f`. Errors are detected by the caller (ferror / fclose).
void write_document(std::FILE* f, const LagrangeCellData& data) {
  const std::size_t npc = points_per_cell(data.dim, data.degree);
  const std::size_t n_points = data.n_cells * npc;
  const std::vector<int> perm = vtk_lagrange_to_lexicographic(data.dim, data.degree);
  const std::uint8_t type = data.dim == 3 ? vtk_lagrange_hexahedron : vtk_lagrange_quadrilateral;

  std::fputs("<?xml version=\"1.0\"?>\n", f);
  std::fputs(
      "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" "
      "header_type=\"UInt64\">\n",
      f);
  std::fputs("  <UnstructuredGrid>\n", f);
  std::fprintf(f, "    <Piece NumberOfPoints=\"%zu\" NumberOfCells=\"%zu\">\n", n_points,
               data.n_cells);

  std::fputs("      <PointData>\n", f);
  for (const auto& field : data.point_fields) {
    const std::vector<double>& values = field.second;
    write_data_array<double>(f, "Float64", xml_escape(field.first), 1, n_points,
                             [&](std::size_t i) { return values[i]; });
  }
  std::fputs("      </PointData>\n", f);

  std::fputs("      <Points>\n", f);
  write_data_array<double>(f, "Float64", "Points", 3, 3 * n_points,
                           [&](std::size_t i) { return data.points[i]; });
  std::fputs("      </Points>\n", f);

  // Points stay in lexicographic order; the connectivity lists each cell's points in VTK order.
  std::fputs("      <Cells>\n", f);
  write_data_array<std::int64_t>(f, "Int64", "connectivity", 1, n_points, [&](std::size_t i) {
    return (i / npc) * npc + static_cast<std::size_t>(perm[i % npc]);
  });
  write_data_array<std::int64_t>(f, "Int64", "offsets", 1, data.n_cells,
                                 [&](std::size_t c) { return (c + 1) * npc; });
  write_data_array<std::uint8_t>(f, "UInt8", "types", 1, data.n_cells,
                                 [&](std::size_t) { return type; });
  std::fputs("      </Cells>\n", f);

  std::fputs("    </Piece>\n", f);
  std::fputs("  </UnstructuredGrid>\n", f);
  std::fputs("</VTKFile>\n", f);
}

[[noreturn]] void throw_io_error(const std::string& what, const std::string& path, int err) {
  throw Error("VTU output: cannot " + what + " '" + path + "': " + std::strerror(err));
}

/// Removes the temporary file on scope exit unless release() was called.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  ~TempFileGuard() {
    if (file_) std::fclose(file_);
    if (armed_) std::remove(path_.c_str());
  }
  std::FILE*& file() { return file_; }
  void release() { armed_ = false; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool armed_ = true;
};

}  // namespace

// VTK's Lagrange cell numbering (vtkHigherOrderQuadrilateral/Hexahedron::PointIndexFromIJK):
// corners, then edge interiors edge by edge, face interiors face by face (-x, +x, -y, +y, -z, +z;
// lower remaining axis fastest), then the interior, all points running in increasing i/j/k.
//
// The hexahedron's vertical edges: VTK >= 9 numbers them 0-4, 1-5, 2-6, 3-7 in memory, but its XML
// reader treats files of version < 2.1 as the VTK 8 layout (0-4, 1-5, 3-7, 2-6) and swaps the last
// two edges on load (vtkUpdateCellsV8toV9). write_vtu writes version 1.0 (the newest version
// meshio 5 accepts), so this returns the layout such files must carry: VTK 8 vertical-edge order,
// which VTK 8 reads as is and VTK >= 9 converts to its own order. The two differ only for
// hexahedra of degree >= 2.
std::vector<int> vtk_lagrange_to_lexicographic(int dim, int degree) {
  check_dim_degree(dim, degree);
  return LatticeOrder(dim, degree).build();
}

namespace {
/// Writes a file through `write` (stdio calls on the stream) so that it appears complete or not at
/// all: a temporary file in the same directory, synced, then renamed.
template <class Write>
void write_atomically(const std::string& path, const Write& write) {
  const std::string tmp_path = path + ".tmp." + std::to_string(::getpid());
  TempFileGuard guard(tmp_path);
  std::FILE*& f = guard.file();
  f = std::fopen(tmp_path.c_str(), "wb");
  if (!f) throw_io_error("create temporary file for", path, errno);

  errno = 0;  // so that a failed stdio write reports its own errno below
  write(f);

  if (std::fflush(f) != 0 || std::ferror(f)) throw_io_error("write", path, errno ? errno : EIO);
  if (::fsync(::fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
    throw_io_error("sync", path, errno);
  std::FILE* closing = f;
  f = nullptr;  // fclose releases the stream even when it fails
  if (std::fclose(closing) != 0) throw_io_error("close", path, errno);
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) throw_io_error("rename onto", path, errno);
  guard.release();
}
}  // namespace

void write_vtu(const std::string& path, const LagrangeCellData& data) {
  validate(data);
  write_atomically(path, [&](std::FILE* f) { write_document(f, data); });
}

std::string pvtu_piece_path(const std::string& pvtu_path, int rank) {
  const std::string suffix = ".pvtu";
  if (pvtu_path.size() <= suffix.size() || pvtu_path.compare(pvtu_path.size() - suffix.size(), suffix.size(), suffix) != 0)
    throw InputError("parallel VTU output: the file name '" + pvtu_path + "' must end in .pvtu (each rank writes "
                     "NAME_<rank>.vtu beside NAME.pvtu)");
  return pvtu_path.substr(0, pvtu_path.size() - suffix.size()) + "_" + std::to_string(rank) + ".vtu";
}

void write_pvtu(const std::string& path, int n_pieces, const std::vector<std::string>& point_fields) {
  if (n_pieces < 1) throw InputError("parallel VTU output: no pieces");
  std::vector<std::string> sources;
  for (int r = 0; r < n_pieces; ++r) {
    const std::string piece = pvtu_piece_path(path, r);
    const auto slash = piece.find_last_of('/');
    sources.push_back(slash == std::string::npos ? piece : piece.substr(slash + 1));  // beside the .pvtu
  }
  write_atomically(path, [&](std::FILE* f) {
    std::fputs("<?xml version=\"1.0\"?>\n", f);
    std::fputs("<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" "
               "header_type=\"UInt64\">\n", f);
    std::fputs("  <PUnstructuredGrid GhostLevel=\"0\">\n    <PPointData>\n", f);
    for (const auto& name : point_fields)
      std::fprintf(f, "      <PDataArray type=\"Float64\" Name=\"%s\"/>\n", xml_escape(name).c_str());
    std::fputs("    </PPointData>\n    <PPoints>\n"
               "      <PDataArray type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\"/>\n    </PPoints>\n", f);
    for (const auto& source : sources) std::fprintf(f, "    <Piece Source=\"%s\"/>\n", xml_escape(source).c_str());
    std::fputs("  </PUnstructuredGrid>\n</VTKFile>\n", f);
  });
}

}  // namespace tcfem::io
