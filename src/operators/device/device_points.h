#pragma once
// Quadrature points of cells computed on the device, for the device setup (operator geometry,
// right-hand sides, errors): the map at the Gauss-Lobatto nodes of each cell (compiled through
// NVRTC, or a host callable on the host threads), its Q_k interpolant at the quadrature points,
// Jacobians, determinants and inverses, in chunks of cells. The node arithmetic is that of
// mesh::MappedCellNodes, so a node shared by several cells gets the same coordinates in each.
// Includes CUDA headers: for .cu files only.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/cuda_check.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "core/hd.h"
#include "core/jit.h"
#include "fe/dof_layout.h"
#include "fe/quadrature.h"
#include "mesh/box_mesh.h"
#include "operators/generic/kernels.h"

namespace tcfem::operators::setup {

/// Sizes of the mesh's cells and lattice, by value into kernels.
struct Grid {
  int dim = 3, k = 1, nb = 2, nq = 2;  // 1D sizes
  int n_cells[3] = {1, 1, 1};
  double origin[3] = {0, 0, 0}, h[3] = {1, 1, 1};
  std::int64_t lattice[3] = {1, 1, 1};
  bool dg = false;
  bool dirichlet[6] = {false, false, false, false, false, false};
};

/// The grid of a mesh owned by one process (InputError otherwise) with nq points per direction.
template <int dim>
Grid make_grid(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, int nq);

/// The cell and DoF numbering of the generic operator kernels (operators/generic/kernels.h).
__device__ inline OperatorView<double> numbering(const Grid& g) {
  OperatorView<double> v;
  v.dim = g.dim;
  v.nb = g.nb;
  v.dg = g.dg;
  for (int d = 0; d < 3; ++d) {
    v.n_cells[d] = g.n_cells[d];
    v.lattice[d] = g.lattice[d];
  }
  return v;
}

__device__ inline void cell_of(const Grid& g, std::int64_t cell, int* c) { generic::cell_coords(numbering(g), cell, c); }

/// Global index of local DoF i of cell c (one process owns every cell).
__device__ inline std::int64_t dof_of(const Grid& g, const int* c, int i) {
  bool boundary;
  return generic::dof_index(numbering(g), c, i, boundary);
}

/// Coordinate along d of the parameter point of 1D node i (0..k) of the cells with index c along
/// d: the arithmetic of mesh::MappedCellNodes (the lattice point c k + i, its cell, the
/// Gauss-Lobatto point), so a node shared by cells gets the same value from each.
__device__ inline double node_coordinate(const Grid& g, const double* gll, int d, int c, int i) {
  const long p = long(c) * g.k + i;
  const long cell = min(p / g.k, long(g.n_cells[d] - 1));
  return g.origin[d] + (double(cell) + gll[int(p - cell * g.k)]) * g.h[d];
}

/// Whether cg lattice node t lies on a Dirichlet face of the box.
__device__ inline bool constrained_node(const Grid& g, std::int64_t t) {
  bool constrained = false;
  for (int d = 0; d < g.dim; ++d) {
    const std::int64_t p = t % g.lattice[d];
    t /= g.lattice[d];
    constrained |= (p == 0 && g.dirichlet[2 * d]) || (p == g.lattice[d] - 1 && g.dirichlet[2 * d + 1]);
  }
  return constrained;
}

/// x[t] = value on the constrained nodes of the cg lattice (n nodes; device vector).
template <typename Number>
void set_constrained(const Grid& g, std::int64_t n, Number value, Number* x);

/// Shared-memory doubles of interpolate_all's two buffers for n_comp components.
struct InterpolateAllScratch {
  int a = 0, b = 0;
  __host__ __device__ int total() const { return a + b; }
};
__host__ __device__ inline InterpolateAllScratch interpolate_all_scratch(int dim, int nb, int nq, int n_comp) {
  int nbc = 1, p0 = 2 * n_comp * nq;
  for (int d = 0; d < dim; ++d) nbc *= nb;
  for (int d = 1; d < dim; ++d) p0 *= nb;
  const int in = n_comp * nbc;
  const int p1 = dim == 3 ? 3 * n_comp * nq * nq * nb : dim == 2 ? 3 * n_comp * nq * nq : 0;
  const int p2 = dim == 3 ? 4 * n_comp * nq * nq * nq : 0;
  return {in > p1 ? in : p1, p0 > p2 ? p0 : p2};
}

/// One pass of interpolate_all along direction `pass`: pass 0 makes B and D of each component,
/// pass 1 (from B_0: B and D, from D_0: B) BB, DB, BD, pass 2 (3D) BBB, DBB, BDB and BBD; `sizes` are
/// the input tensors' extents, `in_size` their length. Parallel over all entries of all outputs;
/// syncs at the end.
__device__ __forceinline__ void interpolate_pass(const double* B, const double* D, int nq, int nb, int pass,
                                                 int n_comp, const int* sizes, const double* in, int in_size,
                                                 double* out) {
  int pre = 1, post = 1;
  for (int e = 0; e < pass; ++e) pre *= sizes[e];
  for (int e = pass + 1; e < 3; ++e) post *= sizes[e];
  const int per = pass + 2, out_size = pre * nq * post, total = n_comp * per * out_size;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int t = idx / out_size, r = idx - t * out_size;
    const int c = t / per, j = t - c * per;
    int src, derivative;
    if (pass == 0) {
      src = c;
      derivative = j;
    } else if (pass == 1) {
      src = 2 * c + (j == 1);
      derivative = j == 2;
    } else {
      src = 3 * c + (j == 3 ? 0 : j);
      derivative = j == 3;
    }
    const int a = r % pre, row = (r / pre) % nq, rest = r / (pre * nq);
    const double* S = (derivative ? D : B) + row * nb;
    const double* x = in + src * in_size + a + pre * nb * rest;
    double sum = 0.0;
    for (int i = 0; i < nb; ++i) sum += S[i] * x[pre * i];
    out[idx] = sum;
  }
  __syncthreads();
}

/// The values and the dim first derivatives at the quadrature points (B, D: nq x nb) of n_comp
/// fields whose nodal values are in buf_a (field c at buf_a[c * nb^dim], lexicographic), all
/// together, one direction per pass (dim barriers; dim = 1, 2, 3). Returns where field c's value
/// is at [(dim + 1) c * nq^dim] and its derivative along e at [((dim + 1) c + 1 + e) * nq^dim]: buf_a
/// in 2D, buf_b in 1D and 3D (buffers of interpolate_all_scratch's sizes a and b; the values in buf_a are
/// overwritten).
__device__ __forceinline__ const double* interpolate_all(const double* B, const double* D, int nq, int nb,
                                                         int dim, int n_comp, double* buf_a, double* buf_b) {
  int sizes[3] = {nb, dim >= 2 ? nb : 1, dim == 3 ? nb : 1};
  int nbc = 1;
  for (int d = 0; d < dim; ++d) nbc *= nb;
  interpolate_pass(B, D, nq, nb, 0, n_comp, sizes, buf_a, nbc, buf_b);
  if (dim == 1) return buf_b;
  sizes[0] = nq;
  interpolate_pass(B, D, nq, nb, 1, n_comp, sizes, buf_b, nbc / nb * nq, buf_a);
  if (dim == 2) return buf_a;
  sizes[1] = nq;
  interpolate_pass(B, D, nq, nb, 2, n_comp, sizes, buf_a, nq * nq * nb, buf_b);
  return buf_b;
}

/// The shared memory of a kernel that interpolates node fields with interpolate_all: the tables B,
/// D (nq x nb) and w (nq), then its two buffers. Inlined with the sizes: a kernel that passes
/// compile-time sizes gets its loops and index arithmetic specialized.
struct NodeInterpolation {
  double *B, *D, *w, *buf_a, *buf_b;
  int dim, nb, nq, n_comp;
  /// Doubles of shared memory for these sizes.
  static __host__ __device__ int smem_doubles(int dim, int nb, int nq, int n_comp) {
    return 2 * nq * nb + nq + interpolate_all_scratch(dim, nb, nq, n_comp).total();
  }
  /// Lays the memory out at `smem` and loads the tables (B, D, w; then syncs).
  __device__ __forceinline__ NodeInterpolation(double* smem, const double* tables, int dim_, int nb_, int nq_,
                                               int n_comp_)
      : dim(dim_), nb(nb_), nq(nq_), n_comp(n_comp_) {
    B = smem;
    D = B + nq * nb;
    w = D + nq * nb;
    buf_a = w + nq;
    buf_b = buf_a + interpolate_all_scratch(dim, nb, nq, n_comp).a;
    for (int i = threadIdx.x; i < 2 * nq * nb + nq; i += blockDim.x) B[i] = tables[i];
    __syncthreads();
  }
  /// Loads the node values of entity j (field c at X[c * xs + j * nb^dim + i]) and interpolates
  /// them: interpolate_all's result. `relative`: each field minus its value at the entity's first
  /// node (derivatives rounded to the entity's size, not to the values' magnitude: node
  /// coordinates; the caller adds that value back to the interpolated values).
  __device__ __forceinline__ const double* operator()(const double* X, std::int64_t xs, std::int64_t j,
                                                      bool relative = false) const {
    int n = 1;
    for (int d = 0; d < dim; ++d) n *= nb;
    for (int i = threadIdx.x; i < n_comp * n; i += blockDim.x) {
      const int c = i / n;
      const double* field = X + c * xs + j * n;
      buf_a[i] = relative ? field[i - c * n] - field[0] : field[i - c * n];
    }
    __syncthreads();
    return interpolate_all(B, D, nq, nb, dim, n_comp, buf_a, buf_b);
  }
};

/// Determinant of the dim x dim matrix J (row-major 3 x 3 storage).
__device__ inline double determinant(int dim, const double (&J)[3][3]) {
  if (dim == 2) return J[0][0] * J[1][1] - J[0][1] * J[1][0];
  return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
         J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

/// Inverse and determinant of the dim x dim matrix J (row-major 3 x 3 storage): the adjugate
/// times 1 / det J (one division).
__device__ inline double invert(int dim, const double (&J)[3][3], double (&R)[3][3]) {
  const double det = determinant(dim, J);
  const double r = 1.0 / det;
  if (dim == 2) {
    R[0][0] = J[1][1] * r;
    R[0][1] = -J[0][1] * r;
    R[1][0] = -J[1][0] * r;
    R[1][1] = J[0][0] * r;
  } else {
    R[0][0] = (J[1][1] * J[2][2] - J[1][2] * J[2][1]) * r;
    R[0][1] = (J[0][2] * J[2][1] - J[0][1] * J[2][2]) * r;
    R[0][2] = (J[0][1] * J[1][2] - J[0][2] * J[1][1]) * r;
    R[1][0] = (J[1][2] * J[2][0] - J[1][0] * J[2][2]) * r;
    R[1][1] = (J[0][0] * J[2][2] - J[0][2] * J[2][0]) * r;
    R[1][2] = (J[0][2] * J[1][0] - J[0][0] * J[1][2]) * r;
    R[2][0] = (J[1][0] * J[2][1] - J[1][1] * J[2][0]) * r;
    R[2][1] = (J[0][1] * J[2][0] - J[0][0] * J[2][1]) * r;
    R[2][2] = (J[0][0] * J[1][1] - J[0][1] * J[1][0]) * r;
  }
  return det;
}

/// Allows `kernel` `bytes` of dynamic shared memory (beyond 48 KB at high degrees).
template <typename Kernel>
void allow_shared(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024) TCFEM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

/// Blocks for `work` items of `threads` threads each (at most 32 per multiprocessor).
unsigned grid_for(std::int64_t work, unsigned threads);

/// A scalar function of dim coordinates on the device: a function of a compiled module, or a
/// host callable evaluated on the host threads at points copied from the device.
struct PointFunction {
  const jit::PointFunctions* module = nullptr;
  int index = -1;
  std::function<double(const double*)> host;
  std::string name;  ///< for messages ("coefficient", "geometry map", a problem file's key)
  bool empty() const { return index < 0 && !host; }
  /// out[i] = f(p_i) for n points (p_i = points[i], points[stride + i], ...); InputError naming
  /// the point when a value is not finite (and, with `positive`, when it is not > 0). With a
  /// `slot` (device; ChunkChecks) a compiled function does not wait: a failed check lands there.
  void evaluate(int dim, const double* points, std::size_t stride, std::size_t n, double* out,
                bool positive = false, unsigned long long* slot = nullptr) const;
};

/// The checks of a pass over chunks of cells (det J > 0, finite values, a positive coefficient)
/// without waiting for the device after each chunk: each chunk's checks flag its own slot
/// (device), and the pass reads the slots once at its end (for_each_chunk).
class ChunkChecks {
 public:
  explicit ChunkChecks(std::int64_t n_chunks);
  unsigned long long* slot(std::int64_t chunk) { return slots_.data() + chunk; }
  /// The first chunk with a failed check, or -1 (waits for the device).
  std::int64_t first_failed() const;

 private:
  DeviceBuffer<unsigned long long> slots_;
};

/// Runs body(first, m, slot) over the chunks [first, first + m) of n cells, at most `capacity`
/// cells each, with the chunks' checks in their slots (no wait between chunks); then, if a check
/// failed, body(first, m, nullptr) on the first chunk that failed: with the checks that wait, it
/// throws the message naming the cell or point (the pass's outputs are then incomplete).
template <class Body>
void for_each_chunk(std::int64_t n, std::int64_t capacity, Body&& body) {
  if (n <= 0) return;
  const std::int64_t chunks = (n + capacity - 1) / capacity;
  ChunkChecks checks(chunks);
  for (std::int64_t c = 0; c < chunks; ++c)
    body(c * capacity, std::min(capacity, n - c * capacity), checks.slot(c));
  const std::int64_t failed = checks.first_failed();
  if (failed < 0) return;
  body(failed * capacity, std::min(capacity, n - failed * capacity), static_cast<unsigned long long*>(nullptr));
  throw Error("a check of the device setup failed once and passed when repeated");
}

/// The functions a device setup needs, compiled in one module: `add` each source (or the
/// callable when it has none) before compile().
class PointFunctionSet {
 public:
  explicit PointFunctionSet(int dim) : dim_(dim) {}
  /// The function for `source` when it has a device form, else for `host`; `name` for messages.
  PointFunction add(const jit::DeviceSource& source, std::function<double(const double*)> host, std::string name);
  /// Compiles the added sources (nothing when all are host callables). Functions returned by
  /// add() are usable after this.
  void compile();
  bool any_compiled() const { return !sources_.empty(); }
  bool any_host() const { return any_host_; }
  double compile_seconds() const { return functions_.compile_seconds(); }
  /// Whether the compiled module came from a cache (jit::PointFunctions::cached).
  bool cached() const { return functions_.cached(); }

 private:
  int dim_;
  jit::PointFunctions functions_;
  std::vector<std::string> sources_;
  std::string prelude_;
  bool any_host_ = false;
};

/// The map functions of a mesh: none for a Cartesian one (identity), the built-in deformation
/// or the domain's map sources compiled, else the domain's map callable on the host.
template <int dim>
std::array<PointFunction, dim> map_functions(const mesh::BoxMesh<dim>& mesh, PointFunctionSet& set);

/// Quadrature data of chunks of at most `capacity` cells: points xq[d * stride + slot * nqc + q],
/// jxw and (optionally) J^{-1} inv[(a * dim + b) * stride + ...] with stride = capacity * nqc.
/// `map` empty: Cartesian cells (no node field, no interpolation).
class CellPoints {
 public:
  CellPoints(const Grid& grid, const fe::Quadrature1D& quad, std::array<PointFunction, 3> map, bool identity,
             std::int64_t capacity, bool inverse);
  /// Cells [first, first + m); InputError naming the cell when det J <= 0 at a point. With a
  /// `slot` (ChunkChecks) the checks of the map's values and of det J land there, no wait.
  template <int dim>
  void compute(const mesh::BoxMesh<dim>& mesh, std::int64_t first, std::int64_t m,
               unsigned long long* slot = nullptr);
  const double* xq() const { return xq_.data(); }
  const double* jxw() const { return jxw_.data(); }
  const double* inv() const { return inv_.data(); }
  std::int64_t stride() const { return stride_; }
  std::int64_t capacity() const { return capacity_; }
  /// The largest chunk of cells with at most 2^22 quadrature points, or up to 2^24 where a
  /// sixteenth of the device's free memory holds 24 doubles per point (at least one cell).
  static std::int64_t default_capacity(const Grid& g, std::int64_t n_cells);

 private:
  Grid g_;
  std::array<PointFunction, 3> map_;
  bool identity_, inverse_;
  std::int64_t capacity_, stride_;
  DeviceBuffer<double> tables_, gll_, points_, P_, X_, xq_, jxw_, inv_;
  DeviceBuffer<unsigned long long> bad_{1};
};

}  // namespace tcfem::operators::setup
