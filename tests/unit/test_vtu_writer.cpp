// Tests of the VTU writer: VTK Lagrange point order, size validation, file contents, atomic write.
#include "io/vtu_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"

namespace {

namespace fs = std::filesystem;
using tcfem::io::LagrangeCellData;
using tcfem::io::vtk_lagrange_to_lexicographic;
using tcfem::io::write_vtu;

int lex(int p, int i, int j, int k = 0) { return i + (p + 1) * (j + (p + 1) * k); }

/// Reference VTK index of lattice point (i, j, k) of a hexahedron of degree p, written as a
/// closed formula (independent of the writer's enumeration). VTK >= 9 in-memory numbering, i.e.
/// vertical edges 0-4, 1-5, 2-6, 3-7.
int vtk9_hex_index(int i, int j, int k, int p) {
  const bool ib = i == 0 || i == p, jb = j == 0 || j == p, kb = k == 0 || k == p;
  const int n_bdy = int(ib) + int(jb) + int(kb);
  const int e = p - 1;  // interior points per edge
  const int corner_of_ij = i ? (j ? 2 : 1) : (j ? 3 : 0);
  if (n_bdy == 3) return corner_of_ij + (k ? 4 : 0);
  int base = 8;
  if (n_bdy == 2) {
    const int layer = k ? 4 * e : 0;
    if (!ib) return base + layer + (j ? 2 * e : 0) + (i - 1);          // edges 0-1 / 3-2
    if (!jb) return base + layer + (i ? e : 3 * e) + (j - 1);          // edges 1-2 / 0-3
    return base + 8 * e + corner_of_ij * e + (k - 1);                  // vertical edges
  }
  base += 12 * e;
  if (n_bdy == 1) {
    if (ib) return base + (i ? e * e : 0) + (j - 1) + e * (k - 1);
    base += 2 * e * e;
    if (jb) return base + (j ? e * e : 0) + (i - 1) + e * (k - 1);
    base += 2 * e * e;
    return base + (k ? e * e : 0) + (i - 1) + e * (j - 1);
  }
  base += 6 * e * e;
  return base + (i - 1) + e * ((j - 1) + e * (k - 1));
}

/// The same for a quadrilateral.
int vtk_quad_index(int i, int j, int p) {
  const bool ib = i == 0 || i == p, jb = j == 0 || j == p;
  const int e = p - 1;
  if (ib && jb) return i ? (j ? 2 : 1) : (j ? 3 : 0);
  if (!ib && jb) return 4 + (j ? 2 * e : 0) + (i - 1);
  if (ib && !jb) return 4 + (i ? e : 3 * e) + (j - 1);
  return 4 + 4 * e + (i - 1) + e * (j - 1);
}

/// VTK 8 <-> VTK 9 hexahedron layout: swap of the last two vertical edges (an involution).
int swap_v8_v9(int vtk_index, int p) {
  const int e = p - 1;
  const int third = 8 + 8 * e + 2 * e;  // first point of the third vertical edge
  if (vtk_index >= third && vtk_index < third + e) return vtk_index + e;
  if (vtk_index >= third + e && vtk_index < third + 2 * e) return vtk_index - e;
  return vtk_index;
}

bool is_permutation_of_iota(const std::vector<int>& v) {
  std::vector<int> s = v;
  std::sort(s.begin(), s.end());
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] != static_cast<int>(i)) return false;
  return true;
}

std::vector<unsigned char> base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding and whitespace
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The base64 text of the DataArray named `name` in a VTU document.
std::string data_array_text(const std::string& doc, const std::string& name) {
  const auto tag = doc.find("Name=\"" + name + "\"");
  if (tag == std::string::npos) return {};
  const auto begin = doc.find('>', tag) + 1;
  const auto end = doc.find("</DataArray>", begin);
  return doc.substr(begin, end - begin);
}

/// Decodes an inline binary array: checks the UInt64 byte-count header, returns the values.
template <class T>
std::vector<T> decode_array(const std::string& doc, const std::string& name) {
  const std::vector<unsigned char> bytes = base64_decode(data_array_text(doc, name));
  EXPECT_GE(bytes.size(), 8u) << name;
  if (bytes.size() < 8) return {};
  std::uint64_t n_bytes = 0;
  std::memcpy(&n_bytes, bytes.data(), 8);
  EXPECT_EQ(n_bytes, bytes.size() - 8) << name;
  std::vector<T> values((bytes.size() - 8) / sizeof(T));
  std::memcpy(values.data(), bytes.data() + 8, values.size() * sizeof(T));
  return values;
}

/// A fresh, empty directory under the system temporary directory, removed on destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("tcfem_vtu_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::size_t n_entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(path_), {}));
  }

 private:
  fs::path path_;
};

/// n_cells unit cells of the given degree side by side along x; field = x + 10 y + 100 z.
LagrangeCellData make_cells(int dim, int degree, std::size_t n_cells) {
  LagrangeCellData d;
  d.dim = dim;
  d.degree = degree;
  d.n_cells = n_cells;
  std::vector<double> f;
  const int nk = dim == 3 ? degree + 1 : 1;
  for (std::size_t c = 0; c < n_cells; ++c)
    for (int k = 0; k < nk; ++k)
      for (int j = 0; j <= degree; ++j)
        for (int i = 0; i <= degree; ++i) {
          const double x = static_cast<double>(c) + double(i) / degree;
          const double y = double(j) / degree;
          const double z = dim == 3 ? double(k) / degree : 0.0;
          d.points.insert(d.points.end(), {x, y, z});
          f.push_back(x + 10 * y + 100 * z);
        }
  d.point_fields.emplace_back("u", std::move(f));
  return d;
}

TEST(VtkLagrangeOrder, IsBijectionForAllDegrees) {
  for (int dim : {2, 3})
    for (int p = 1; p <= 8; ++p) {
      const auto perm = vtk_lagrange_to_lexicographic(dim, p);
      const std::size_t n = dim == 2 ? std::size_t(p + 1) * (p + 1)
                                     : std::size_t(p + 1) * (p + 1) * (p + 1);
      ASSERT_EQ(perm.size(), n) << "dim " << dim << " degree " << p;
      EXPECT_TRUE(is_permutation_of_iota(perm)) << "dim " << dim << " degree " << p;
    }
}

TEST(VtkLagrangeOrder, DegreeOneIsLinearCellOrder) {
  EXPECT_EQ(vtk_lagrange_to_lexicographic(2, 1), (std::vector<int>{0, 1, 3, 2}));
  EXPECT_EQ(vtk_lagrange_to_lexicographic(3, 1), (std::vector<int>{0, 1, 3, 2, 4, 5, 7, 6}));
}

TEST(VtkLagrangeOrder, CornersComeFirst) {
  for (int dim : {2, 3})
    for (int p = 1; p <= 8; ++p) {
      const auto perm = vtk_lagrange_to_lexicographic(dim, p);
      std::vector<int> corners = {lex(p, 0, 0), lex(p, p, 0), lex(p, p, p), lex(p, 0, p)};
      if (dim == 3)
        for (int c = 0; c < 4; ++c) corners.push_back(corners[c] + lex(p, 0, 0, p));
      ASSERT_GE(perm.size(), corners.size());
      EXPECT_TRUE(std::equal(corners.begin(), corners.end(), perm.begin()))
          << "dim " << dim << " degree " << p;
    }
}

TEST(VtkLagrangeOrder, QuadraticMatchesVtkQuadraticCells) {
  // VTK_BIQUADRATIC_QUAD: corners, mid-edges 0-1, 1-2, 2-3, 3-0, center.
  EXPECT_EQ(vtk_lagrange_to_lexicographic(2, 2), (std::vector<int>{0, 2, 8, 6, 1, 5, 7, 3, 4}));
  // VTK_TRIQUADRATIC_HEXAHEDRON (= VTK 9 Lagrange numbering), mapped to the VTK 8 file layout.
  const std::vector<std::array<int, 3>> ijk = {
      {0, 0, 0}, {2, 0, 0}, {2, 2, 0}, {0, 2, 0}, {0, 0, 2}, {2, 0, 2}, {2, 2, 2},
      {0, 2, 2}, {1, 0, 0}, {2, 1, 0}, {1, 2, 0}, {0, 1, 0}, {1, 0, 2}, {2, 1, 2},
      {1, 2, 2}, {0, 1, 2}, {0, 0, 1}, {2, 0, 1}, {2, 2, 1}, {0, 2, 1}, {0, 1, 1},
      {2, 1, 1}, {1, 0, 1}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, {1, 1, 1}};
  const auto perm = vtk_lagrange_to_lexicographic(3, 2);
  ASSERT_EQ(perm.size(), 27u);
  for (int v9 = 0; v9 < 27; ++v9) {
    const auto [i, j, k] = ijk[static_cast<std::size_t>(v9)];
    EXPECT_EQ(perm[static_cast<std::size_t>(swap_v8_v9(v9, 2))], lex(2, i, j, k)) << v9;
  }
}

TEST(VtkLagrangeOrder, MatchesVtkPointIndexFromIjk) {
  for (int p = 1; p <= 8; ++p) {
    const auto quad = vtk_lagrange_to_lexicographic(2, p);
    for (int j = 0; j <= p; ++j)
      for (int i = 0; i <= p; ++i)
        EXPECT_EQ(quad[static_cast<std::size_t>(vtk_quad_index(i, j, p))], lex(p, i, j))
            << "quad degree " << p << " (" << i << "," << j << ")";
    const auto hex = vtk_lagrange_to_lexicographic(3, p);
    for (int k = 0; k <= p; ++k)
      for (int j = 0; j <= p; ++j)
        for (int i = 0; i <= p; ++i)
          EXPECT_EQ(hex[static_cast<std::size_t>(swap_v8_v9(vtk9_hex_index(i, j, k, p), p))],
                    lex(p, i, j, k))
              << "hex degree " << p << " (" << i << "," << j << "," << k << ")";
  }
}

TEST(VtkLagrangeOrder, RejectsInvalidArguments) {
  EXPECT_THROW(vtk_lagrange_to_lexicographic(1, 2), tcfem::InputError);
  EXPECT_THROW(vtk_lagrange_to_lexicographic(3, 0), tcfem::InputError);
  EXPECT_THROW(vtk_lagrange_to_lexicographic(3, 9), tcfem::InputError);
}

TEST(WriteVtu, SizeMismatchThrowsInputError) {
  TempDir dir;
  const std::string path = (dir.path() / "bad.vtu").string();
  {
    auto d = make_cells(3, 2, 2);
    d.points.pop_back();
    EXPECT_THROW(write_vtu(path, d), tcfem::InputError);
  }
  {
    auto d = make_cells(3, 2, 2);
    d.point_fields[0].second.push_back(0.0);
    EXPECT_THROW(write_vtu(path, d), tcfem::InputError);
  }
  {
    auto d = make_cells(2, 3, 1);
    d.n_cells = 2;
    EXPECT_THROW(write_vtu(path, d), tcfem::InputError);
  }
  {
    auto d = make_cells(3, 1, 1);
    d.dim = 4;
    EXPECT_THROW(write_vtu(path, d), tcfem::InputError);
    d.dim = 3;
    d.degree = 9;
    EXPECT_THROW(write_vtu(path, d), tcfem::InputError);
  }
  {
    auto d = make_cells(3, 1, 1);
    d.point_fields.push_back(d.point_fields[0]);  // duplicate name
    EXPECT_THROW(write_vtu(path, d), tcfem::InputError);
  }
  EXPECT_EQ(dir.n_entries(), 0u);
}

TEST(WriteVtu, MissingDirectoryThrowsAndLeavesNoFile) {
  TempDir dir;
  const fs::path missing = dir.path() / "no_such_dir";
  const fs::path path = missing / "out.vtu";
  EXPECT_THROW(write_vtu(path.string(), make_cells(3, 2, 1)), tcfem::Error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_EQ(dir.n_entries(), 0u);
  try {
    write_vtu(path.string(), make_cells(3, 2, 1));
  } catch (const tcfem::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
  }
}

TEST(WriteVtu, FailedRenameRemovesTemporaryFile) {
  TempDir dir;
  const fs::path target = dir.path() / "occupied";
  fs::create_directory(target);
  fs::create_directory(target / "child");  // a non-empty directory cannot be replaced
  EXPECT_THROW(write_vtu(target.string(), make_cells(3, 2, 1)), tcfem::Error);
  EXPECT_EQ(dir.n_entries(), 1u);  // only the directory itself, no temporary file
  EXPECT_TRUE(fs::is_directory(target));
}

TEST(WriteVtu, WritesHexahedraWithVtkConnectivity) {
  TempDir dir;
  const fs::path path = dir.path() / "hex.vtu";
  const int p = 3;
  const std::size_t n_cells = 2, npc = 64;
  const auto d = make_cells(3, p, n_cells);
  write_vtu(path.string(), d);
  EXPECT_EQ(dir.n_entries(), 1u);

  const std::string doc = read_file(path);
  EXPECT_TRUE(doc.rfind("<?xml", 0) == 0 || doc.rfind("<VTKFile", 0) == 0);
  EXPECT_NE(doc.find("type=\"UnstructuredGrid\""), std::string::npos);
  EXPECT_NE(doc.find("header_type=\"UInt64\""), std::string::npos);
  EXPECT_NE(doc.find("NumberOfPoints=\"128\" NumberOfCells=\"2\""), std::string::npos);

  EXPECT_EQ(decode_array<double>(doc, "Points"), d.points);
  EXPECT_EQ(decode_array<double>(doc, "u"), d.point_fields[0].second);
  EXPECT_EQ(decode_array<std::uint8_t>(doc, "types"), (std::vector<std::uint8_t>{72, 72}));
  EXPECT_EQ(decode_array<std::int64_t>(doc, "offsets"), (std::vector<std::int64_t>{64, 128}));

  const auto conn = decode_array<std::int64_t>(doc, "connectivity");
  const auto perm = vtk_lagrange_to_lexicographic(3, p);
  ASSERT_EQ(conn.size(), n_cells * npc);
  for (std::size_t c = 0; c < n_cells; ++c)
    for (std::size_t v = 0; v < npc; ++v)
      EXPECT_EQ(conn[c * npc + v], static_cast<std::int64_t>(c * npc) + perm[v]);
}

TEST(WriteVtu, WritesQuadrilateralsAndEmptyMeshes) {
  TempDir dir;
  const fs::path quad = dir.path() / "quad.vtu";
  write_vtu(quad.string(), make_cells(2, 4, 3));
  const std::string doc = read_file(quad);
  EXPECT_EQ(decode_array<std::uint8_t>(doc, "types"), (std::vector<std::uint8_t>{70, 70, 70}));

  const fs::path empty = dir.path() / "empty.vtu";
  LagrangeCellData d;
  write_vtu(empty.string(), d);
  EXPECT_NE(read_file(empty).find("NumberOfPoints=\"0\" NumberOfCells=\"0\""), std::string::npos);
}

TEST(WriteVtu, ReplacesExistingFileAndEscapesNames) {
  TempDir dir;
  const fs::path path = dir.path() / "out.vtu";
  { std::ofstream(path) << "old contents"; }
  auto d = make_cells(3, 1, 1);
  d.point_fields[0].first = "a<b>&\"c\"";
  write_vtu(path.string(), d);
  const std::string doc = read_file(path);
  EXPECT_EQ(doc.find("old contents"), std::string::npos);
  EXPECT_NE(doc.find("Name=\"a&lt;b&gt;&amp;&quot;c&quot;\""), std::string::npos);
  EXPECT_EQ(dir.n_entries(), 1u);
}

}  // namespace
