// DeviceDgPatchSmoother: setup on the host (the 1D patch matrices of dg_patch_matrices_1d and the
// fast diagonalization of PatchFastDiagonalization, for all four boundary variants of every
// direction), the kernels over the degree, and the launches of one smoothing step.
//
// Kernel (one block per patch of a color, several per block at low degree and in 2D; the vertex of
// patch (m_0, m_1, m_2) is first_d + 3 m_d), three patch tensors R, U, T in shared memory:
//   fused:         U = x on the patch, R = b on the patch; per direction d
//                    T = L_d U + C_d W (W: the face neighbours outside the patch along d, read by
//                        each thread for its line from x)
//                    R -= (blockdiag cell mass along every other direction) T (in place on T)
//                  (the Kronecker form of dg_patch_smoother.h, term by term);
//   from_residual: R = r on the patch (r = b - A x of the level operator);
//   then R = V^T R along every direction, scaled by 1 / (lambda_0 + .. + lambda_{dim-1}) of the
//   patch's boundary variants, R = V R along every direction, and x += omega R on the patch.
// Every contraction runs one thread per line of the n^dim tensor (n = 2(k+1)), reading its line
// into registers and writing it back, so a contraction can run in place. The 1D matrices of
// interior patches and the cell masses come from the kernel parameter (constant bank); those of
// boundary patches from device tables through the read-only cache.
//
// No races: two patches of one color lie at least 3 vertices apart along some direction, so no
// block reads a cell (of the patch, or a face neighbour outside it) that another block of the
// launch writes (dg_patch_smoother.h, colors).
#include "multigrid/device/dg_patch_smoother.h"

#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "multigrid/host/dg_patch_smoother.h"
#include "multigrid/host/patch_smoother.h"

namespace tcfem::multigrid {

namespace dg_patch_kernels {

__host__ __device__ constexpr int ipow(int n, int p) { return p == 0 ? 1 : n * ipow(n, p - 1); }

/// The patches of one color and the mesh.
struct ColorGrid {
  int first[3] = {1, 1, 1};     ///< vertex coordinate of the color's first patch per direction
  int n_cells[3] = {1, 1, 1};   ///< cells per direction
  long long cell_stride[3] = {1, 0, 0};  ///< cells
};

/// Device tables, per direction d and boundary variant b (bit 0: the patch's lower end on the
/// domain boundary, bit 1: the upper end) at (d * 4 + b) * n * n (vectors of n at (d * 4 + b) * n).
template <typename Number>
struct Tables {
  const Number* stiffness = nullptr;  ///< L_d, n x n row-major
  const Number* coupling = nullptr;   ///< blockdiag(C_-, C_+), n x n
  const Number* vectors = nullptr;    ///< V_d, n x n row-major, column j the eigenvector j
  const Number* lambda = nullptr;     ///< eigenvalues, n
};

/// The 1D matrices of the patches away from the boundary (variant 0 in every direction: nearly all
/// patches of a fine mesh) and the cell masses (the same for every variant), as a kernel
/// parameter: 3D, k = 8, double: 25.7 KB of the 32 KB a kernel's parameters may take.
template <int dim, int k, typename Number>
struct InteriorTables {
  static constexpr int nc = k + 1, n = 2 * nc;
  Number stiffness[dim][n * n];
  Number coupling[dim][n * n];
  Number vectors[dim][n * n];
  Number lambda[dim][n];
  Number cell_mass[dim][nc * nc];
};

enum class Mode : int { fused = 0, from_residual = 1 };

/// Shared-memory layout of a patch tensor (n per direction): entry (i_0, i_1, i_2) at
/// i_0 + (n + 1) i_1 + (n + 1) n i_2. The odd row pitch n + 1 puts the lines along x of
/// consecutive threads in different banks (a pitch of n, even, would make them 8-way conflicts for
/// doubles at k = 3); lines along y and z start at consecutive entries.
template <int dim, int n>
struct PatchTensor {
  static constexpr int pitch1 = n + 1, pitch2 = (n + 1) * n;
  static constexpr int elements = dim == 2 ? (n + 1) * n : (n + 1) * n * n;  ///< padded size
  static constexpr int lines = ipow(n, dim - 1);
  __device__ static constexpr int stride(int d) { return d == 0 ? 1 : d == 1 ? pitch1 : pitch2; }
  /// Address of logical entry q (lexicographic, x fastest).
  __device__ static int address(int q) {
    if constexpr (dim == 2)
      return q % n + pitch1 * (q / n);
    else
      return q % n + pitch1 * (q / n % n) + pitch2 * (q / (n * n));
  }
  /// Logical (unpadded, lexicographic) index of the first entry of line l along direction d.
  __device__ static int line_first(int l, int d) {
    int first = 0, stride = 1;
#pragma unroll
    for (int e = 0; e < dim; ++e) {
      if (e != d) {
        first += (l % n) * stride;
        l /= n;
      }
      stride *= n;
    }
    return first;
  }
  /// Address of the first entry of line l along direction d (the lines enumerate the other indices
  /// lexicographically).
  __device__ static int line_base(int l, int d) {
    int base = 0;
#pragma unroll
    for (int e = 0; e < dim; ++e) {
      if (e != d) {
        base += (l % n) * stride(e);
        l /= n;
      }
    }
    return base;
  }
};

/// Patches per thread block: one thread per line of a contraction, n^(dim-1) lines per patch, so
/// low degrees (and 2D) put several patches into a block of about 128 threads.
__host__ __device__ constexpr int patches_per_block(int dim, int k) {
  const int lines = ipow(2 * (k + 1), dim - 1);
  return lines >= 128 ? 1 : 128 / lines;
}

/// Threads of a block: one per line of every patch of the block, rounded up to whole warps.
__host__ __device__ constexpr int block_threads(int dim, int k) {
  return (patches_per_block(dim, k) * ipow(2 * (k + 1), dim - 1) + 31) / 32 * 32;
}

/// Resident blocks per SM asked of the compiler: at most 128 registers per thread.
__host__ __device__ constexpr int min_blocks(int dim, int k) {
  const int b = 65536 / (block_threads(dim, k) * 128);
  return b < 1 ? 1 : b > 8 ? 8 : b;
}

/// The threads of one patch: `rank` of `size` (the lines of a contraction).
struct PatchThreads {
  int rank, size;
};

enum class Store : int { set = 0, add = 1, subtract = 2 };

template <Store store, typename Number>
__device__ inline void put(Number* p, Number s) {
  if constexpr (store == Store::set)
    *p = s;
  else if constexpr (store == Store::add)
    *p += s;
  else
    *p -= s;
}

/// Where a contraction's matrix lives: a device table (read through the read-only cache) or the
/// kernel parameter (InteriorTables: with the indices known at compile time, the FMAs take the
/// entries straight from the constant bank, without a load instruction).
enum class Source : int { table = 0, parameter = 1 };

template <Source src, typename Number>
__device__ inline Number entry(const Number* A, int i) {
  if constexpr (src == Source::table)
    return __ldg(A + i);
  else
    return A[i];
}

/// out = A in along direction d (A n x n row-major; transposed: A^T), in place allowed.
template <int dim, int n, bool transposed, Store store, Source src = Source::table, typename Number>
__device__ void contract(const PatchThreads th, const Number* A, const Number* in, Number* out, int d) {
  using P = PatchTensor<dim, n>;
  const int stride = P::stride(d);
  for (int l = th.rank; l < P::lines; l += th.size) {
    const int base = P::line_base(l, d);
    Number v[n];
#pragma unroll
    for (int j = 0; j < n; ++j) v[j] = in[base + j * stride];
    if constexpr (src == Source::parameter) {
#pragma unroll
      for (int i = 0; i < n; ++i) {
        Number s = Number(0);
#pragma unroll
        for (int j = 0; j < n; ++j) s = fma(entry<src>(A, transposed ? j * n + i : i * n + j), v[j], s);
        put<store>(out + base + i * stride, s);
      }
    } else {
      // one output at a time: unrolled over the outputs, the compiler would load all n^2 table
      // entries ahead into registers (255 registers and spills at k = 5, one block per SM)
#pragma unroll 1
      for (int i = 0; i < n; ++i) {
        Number s = Number(0);
#pragma unroll
        for (int j = 0; j < n; ++j) s = fma(entry<src>(A, transposed ? j * n + i : i * n + j), v[j], s);
        put<store>(out + base + i * stride, s);
      }
    }
  }
}

/// Global index of patch entry q (patch-lexicographic, n per direction) of the patch at vertex v,
/// with the cells shifted by `shift` along direction `sd` (the face neighbours outside the patch:
/// the cell before the patch for o_sd = 0, after it for o_sd = 1); -1 outside the mesh.
template <int dim, int nc>
__device__ inline long long patch_entry(const ColorGrid& g, const int (&v)[3], int q, int sd) {
  constexpr int n = 2 * nc;
  long long cell = 0;
  int local = 0, lstride = 1;
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    const int i = q % n;
    q /= n;
    const int o = i / nc;
    int c = v[d] - 1 + o;
    if (d == sd) c += o ? 1 : -1;
    if (c < 0 || c >= g.n_cells[d]) return -1;
    cell += c * g.cell_stride[d];
    local += (i % nc) * lstride;
    lstride *= nc;
  }
  return cell * ipow(nc, dim) + local;
}

/// T = L_d U + C_d W along direction d, W the face neighbours outside the patch along d, read by
/// each thread for its line straight from x (zero past the domain boundary; no W where both ends
/// are on the boundary). C_d = blockdiag(C_-, C_+): rows of the lower cell take the cell before
/// the patch, rows of the upper cell the cell after it.
template <int dim, int nc, Source src, typename Number>
__device__ void stiffness_and_coupling(const PatchThreads th, const Number* L, const Number* C, bool coupled,
                                       const Number* U, Number* T, int d, const ColorGrid& g, const int (&v)[3],
                                       const Number* __restrict__ x) {
  constexpr int n = 2 * nc;
  using P = PatchTensor<dim, n>;
  const int stride = P::stride(d);
  const int lstride = d == 0 ? 1 : d == 1 ? n : n * n;
  for (int l = th.rank; l < P::lines; l += th.size) {
    const int base = P::line_base(l, d), first = P::line_first(l, d);
    Number u[n], w[n];
#pragma unroll
    for (int j = 0; j < n; ++j) u[j] = U[base + j * stride];
    if (coupled) {
#pragma unroll
      for (int j = 0; j < n; ++j) {
        const long long idx = patch_entry<dim, nc>(g, v, first + j * lstride, d);
        w[j] = idx >= 0 ? x[idx] : Number(0);
      }
    } else {
#pragma unroll
      for (int j = 0; j < n; ++j) w[j] = Number(0);
    }
    auto row = [&](int i) {
      Number s = Number(0);
#pragma unroll
      for (int j = 0; j < n; ++j) s = fma(entry<src>(L, i * n + j), u[j], s);
      const int o = i < nc ? 0 : nc;
#pragma unroll
      for (int j = 0; j < nc; ++j) s = fma(entry<src>(C, i * n + o + j), w[o + j], s);
      T[base + i * stride] = s;
    };
    if constexpr (src == Source::parameter) {
#pragma unroll
      for (int i = 0; i < n; ++i) row(i);
    } else {
#pragma unroll 1
      for (int i = 0; i < n; ++i) row(i);
    }
  }
}

/// out = blockdiag(Mc, Mc) in along direction d (Mc the cell mass, nc x nc).
template <int dim, int nc, Store store, typename Number>
__device__ void contract_mass(const PatchThreads th, const Number* Mc, const Number* in, Number* out, int d) {
  constexpr int n = 2 * nc;
  using P = PatchTensor<dim, n>;
  const int stride = P::stride(d);
  for (int l = th.rank; l < P::lines; l += th.size) {
    const int base = P::line_base(l, d);
#pragma unroll
    for (int o = 0; o < 2; ++o) {
      Number v[nc];
#pragma unroll
      for (int j = 0; j < nc; ++j) v[j] = in[base + (o * nc + j) * stride];
#pragma unroll
      for (int i = 0; i < nc; ++i) {
        Number s = Number(0);
#pragma unroll
        for (int j = 0; j < nc; ++j) s = fma(entry<Source::parameter>(Mc, i * nc + j), v[j], s);
        put<store>(out + base + (o * nc + i) * stride, s);
      }
    }
  }
}

template <int dim, int k, typename Number, Mode mode>
__global__ void __launch_bounds__(block_threads(dim, k), min_blocks(dim, k)) dg_patch_kernel(const ColorGrid g, const Tables<Number> t,
                                const __grid_constant__ InteriorTables<dim, k, Number> it, Number* __restrict__ x,
                                const Number* __restrict__ b_or_r, const Number omega, const int count0) {
  constexpr int nc = k + 1, n = 2 * nc, size = ipow(n, dim);
  using P = PatchTensor<dim, n>;
  constexpr int per_block = patches_per_block(dim, k);
  extern __shared__ __align__(16) unsigned char dg_patch_smem_raw[];
  // the threads of patch j of the block: lines j * n^(dim-1) .. ; the block's spare threads and
  // the patches past the color's last one only take part in the barriers
  const PatchThreads th{static_cast<int>(threadIdx.x) % P::lines, P::lines};
  const int j = static_cast<int>(threadIdx.x) / P::lines;
  const int m0 = static_cast<int>(blockIdx.x) * per_block + j;
  const bool active = j < per_block && m0 < count0;
  Number* R = reinterpret_cast<Number*>(dg_patch_smem_raw) + (j < per_block ? j : 0) * 3 * P::elements;
  Number* U = R + P::elements;
  Number* T = U + P::elements;
  const int m[3] = {m0, static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)};
  int v[3] = {0, 0, 0}, bv[3] = {0, 0, 0};
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    v[d] = g.first[d] + 3 * m[d];
    bv[d] = (v[d] == 1 ? 1 : 0) | (v[d] == g.n_cells[d] - 1 ? 2 : 0);
  }
  const bool interior = (bv[0] | bv[1] | bv[2]) == 0;
  if (active)
    for (int q = th.rank; q < size; q += th.size) {
      const long long idx = patch_entry<dim, nc>(g, v, q, -1);
      R[P::address(q)] = b_or_r[idx];
      if constexpr (mode == Mode::fused) U[P::address(q)] = x[idx];
    }
  __syncthreads();
  if constexpr (mode == Mode::fused) {
#pragma unroll
    for (int d = 0; d < dim; ++d) {
      const int tab = d * 4 + bv[d];
      if (active && interior)
        stiffness_and_coupling<dim, nc, Source::parameter>(th, it.stiffness[d], it.coupling[d], true, U, T, d, g, v, x);
      else if (active)
        stiffness_and_coupling<dim, nc, Source::table>(th, t.stiffness + tab * n * n, t.coupling + tab * n * n,
                                                       bv[d] != 3, U, T, d, g, v, x);
      __syncthreads();
      // the cell masses along the other directions (in place), the last one subtracted from R
      if constexpr (dim == 2) {
        const int e = 1 - d;
        if (active) contract_mass<dim, nc, Store::subtract>(th, it.cell_mass[e], T, R, e);
      } else {
        const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
        if (active) contract_mass<dim, nc, Store::set>(th, it.cell_mass[e1], T, T, e1);
        __syncthreads();
        if (active) contract_mass<dim, nc, Store::subtract>(th, it.cell_mass[e2], T, R, e2);
      }
      __syncthreads();
    }
  }
  // R = A_j^{-1} R by fast diagonalization
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    if (active && interior)
      contract<dim, n, true, Store::set, Source::parameter>(th, it.vectors[d], R, R, d);
    else if (active)
      contract<dim, n, true, Store::set>(th, t.vectors + (d * 4 + bv[d]) * n * n, R, R, d);
    __syncthreads();
  }
  if (active)
    for (int q = th.rank; q < size; q += th.size) {
      Number s = Number(0);
      int r = q;
#pragma unroll
      for (int d = 0; d < dim; ++d) {
        s += interior ? it.lambda[d][r % n] : __ldg(t.lambda + (d * 4 + bv[d]) * n + r % n);
        r /= n;
      }
      R[P::address(q)] /= s;
    }
  __syncthreads();
#pragma unroll
  for (int d = 0; d < dim; ++d) {
    if (active && interior)
      contract<dim, n, false, Store::set, Source::parameter>(th, it.vectors[d], R, R, d);
    else if (active)
      contract<dim, n, false, Store::set>(th, t.vectors + (d * 4 + bv[d]) * n * n, R, R, d);
    __syncthreads();
  }
  if (active)
    for (int q = th.rank; q < size; q += th.size)
      x[patch_entry<dim, nc>(g, v, q, -1)] += omega * R[P::address(q)];
}

/// Block size and dynamic shared memory of the kernel of degree k.
template <int dim, int k, typename Number>
constexpr std::pair<int, std::size_t> block_of() {
  using P = PatchTensor<dim, 2 * (k + 1)>;
  return {block_threads(dim, k), std::size_t(patches_per_block(dim, k)) * 3 * P::elements * sizeof(Number)};
}

template <int dim, typename Number>
using Launch = void (*)(const std::array<int, 3>&, const ColorGrid&, const Tables<Number>&, const std::vector<Number>&,
                        Number*, const Number*, Number);

/// Values of InteriorTables<dim, k, Number>, in its member order (arrays of one type: no padding).
template <int dim>
std::size_t interior_values(int k) {
  const std::size_t nc = k + 1, n = 2 * nc;
  return dim * (3 * n * n + n + nc * nc);
}

template <int dim, int k, typename Number, Mode mode>
void launch(const std::array<int, 3>& counts, const ColorGrid& g, const Tables<Number>& t,
            const std::vector<Number>& interior, Number* x, const Number* b_or_r, Number omega) {
  constexpr auto block = block_of<dim, k, Number>();
  constexpr int per_block = patches_per_block(dim, k);
  InteriorTables<dim, k, Number> it;
  static_assert(std::is_trivially_copyable_v<InteriorTables<dim, k, Number>>);
  TCFEM_ASSERT(interior.size() * sizeof(Number) == sizeof it, "interior tables size");
  std::memcpy(&it, interior.data(), sizeof it);
  const dim3 grid((counts[0] + per_block - 1) / per_block, counts[1], counts[2]);
  dg_patch_kernel<dim, k, Number, mode><<<grid, block.first, block.second>>>(g, t, it, x, b_or_r, omega, counts[0]);
  TCFEM_CUDA_CHECK_LAUNCH();
}

/// Allows the kernel its dynamic shared memory; returns the bytes (0: more than the device has).
template <int dim, int k, typename Number, Mode mode>
std::size_t set_smem_limit(int max_smem) {
  constexpr std::size_t bytes = block_of<dim, k, Number>().second;
  if (bytes > static_cast<std::size_t>(max_smem)) return 0;
  TCFEM_CUDA_CHECK(cudaFuncSetAttribute(dg_patch_kernel<dim, k, Number, mode>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return bytes;
}

template <int dim, typename Number, Mode mode, int k = 1>
std::pair<Launch<dim, Number>, std::size_t (*)(int)> kernel_of(int degree) {
  if constexpr (k > 8) {
    throw InputError("dg vertex-patch smoother on the device: degree " + std::to_string(degree) +
                     " is not supported (1..8)");
  } else {
    if (degree == k) return {&launch<dim, k, Number, mode>, &set_smem_limit<dim, k, Number, mode>};
    return kernel_of<dim, Number, mode, k + 1>(degree);
  }
}

}  // namespace dg_patch_kernels

template <int dim, typename Number>
struct DeviceDgPatchSmoother<dim, Number>::Impl {
  int degree = 1, n = 4;
  bool additive = false;
  PatchVariant variant = PatchVariant::fused;
  double omega = 1.0;
  std::size_t smem = 0, n_patches = 0, n_dofs = 0;
  int per_block = 1;
  std::vector<dg_patch_kernels::ColorGrid> colors;
  std::vector<std::array<int, 3>> counts;
  DeviceBuffer<Number> stiffness, coupling, vectors, lambda;
  dg_patch_kernels::Tables<Number> tables;
  std::vector<Number> interior;  ///< InteriorTables values (variant 0 of every direction, cell masses)
  dg_patch_kernels::Launch<dim, Number> fused = nullptr, from_residual = nullptr;
  std::function<void(Number*, const Number*)> vmult;
  mutable DeviceVector<Number> residual;

  void launch_color(std::size_t c, Number* x, const Number* b_or_r, bool from_r) const {
    const auto& cnt = counts[c];
    if (cnt[0] == 0 || cnt[1] == 0 || cnt[2] == 0) return;
    (from_r ? from_residual : fused)(cnt, colors[c], tables, interior, x, b_or_r, static_cast<Number>(omega));
  }
};

template <int dim, typename Number>
DeviceDgPatchSmoother<dim, Number>::DeviceDgPatchSmoother(const mesh::BoxMesh<dim>& mesh,
                                                          const fe::DofLayout<dim>& dofs,
                                                          const fe::Quadrature1D& quadrature,
                                                          const SmootherSettings& settings,
                                                          std::function<void(Number*, const Number*)> level_vmult)
    : impl_(std::make_unique<Impl>()) {
  using namespace dg_patch_kernels;
  auto& I = *impl_;
  if (dofs.disc() != fe::Disc::dg) throw InputError("DeviceDgPatchSmoother: the smoother of --disc dg layouts");
  if (settings.kind != SmootherKind::patch && settings.kind != SmootherKind::patch_additive)
    throw InputError("DeviceDgPatchSmoother: smoother kind patch or patch-additive");
  const auto& part = mesh.partition();
  for (int d = 0; d < dim; ++d)
    if (part.ghosted.begin[d] != 0 || part.ghosted.end[d] != part.global_cells[d])
      throw InputError("--smoother patch: the dg vertex-patch smoothers run on one process owning the whole mesh");
  I.degree = dofs.degree();
  I.n = 2 * (I.degree + 1);
  I.additive = settings.kind == SmootherKind::patch_additive;
  const bool cartesian = mesh.geometry() == mesh::GeometryKind::cartesian;
  I.variant = cartesian ? settings.patch_variant : PatchVariant::global;
  if (I.variant == PatchVariant::separate) I.variant = PatchVariant::fused;  // the same result, one pass
  I.omega = settings.relaxation.value_or(I.additive ? dg_additive_default_relaxation(dim, cartesian) : 1.0);
  I.vmult = std::move(level_vmult);
  I.n_dofs = dofs.n_local();

  // tables: all four boundary variants of every direction (the closest Cartesian patch on
  // deformed meshes: the parameter grid's cell size), as DgVertexPatchSmoother builds them
  const int n = I.n, nc = I.degree + 1;
  const auto h = mesh.cell_size();
  std::array<std::vector<PatchPair1D>, dim> pairs;
  std::vector<Number> stiff(dim * 4 * n * n), coup(dim * 4 * n * n), vec(dim * 4 * n * n), lam(dim * 4 * n),
      cmass(dim * nc * nc);
  for (int d = 0; d < dim; ++d)
    for (int b = 0; b < 4; ++b) {
      auto p = dg_patch_matrices_1d(I.degree, h[d], quadrature, b);
      for (int i = 0; i < n * n; ++i) {
        stiff[(d * 4 + b) * n * n + i] = static_cast<Number>(p.stiffness[i]);
        coup[(d * 4 + b) * n * n + i] = static_cast<Number>(p.coupling[i]);
      }
      if (b == 0)
        for (int i = 0; i < nc; ++i)
          for (int j = 0; j < nc; ++j) cmass[d * nc * nc + i * nc + j] = static_cast<Number>(p.mass[i * n + j]);
      pairs[d].push_back({std::move(p.mass), std::move(p.stiffness), {}});
    }
  const PatchFastDiagonalization<dim, double> fdm(pairs);
  for (int d = 0; d < dim; ++d)
    for (int b = 0; b < 4; ++b) {
      const auto& V = fdm.eigenvectors(d, b);
      const auto& L = fdm.eigenvalues(d, b);
      for (int i = 0; i < n * n; ++i) vec[(d * 4 + b) * n * n + i] = static_cast<Number>(V[i]);
      for (int i = 0; i < n; ++i) lam[(d * 4 + b) * n + i] = static_cast<Number>(L[i]);
    }
  I.stiffness = DeviceBuffer<Number>(stiff);
  I.coupling = DeviceBuffer<Number>(coup);
  I.vectors = DeviceBuffer<Number>(vec);
  I.lambda = DeviceBuffer<Number>(lam);
  I.tables = {I.stiffness.data(), I.coupling.data(), I.vectors.data(), I.lambda.data()};
  // the interior variant and the cell masses as the kernel parameter (InteriorTables member order)
  I.interior.reserve(interior_values<dim>(I.degree));
  for (const auto* table : {&stiff, &coup, &vec})
    for (int d = 0; d < dim; ++d)
      I.interior.insert(I.interior.end(), table->begin() + d * 4 * n * n, table->begin() + (d * 4 + 1) * n * n);
  for (int d = 0; d < dim; ++d) I.interior.insert(I.interior.end(), lam.begin() + d * 4 * n, lam.begin() + (d * 4 + 1) * n);
  I.interior.insert(I.interior.end(), cmass.begin(), cmass.end());

  // the 3^dim colors: vertices v_d = first_d + 3 m_d in 1 .. n_cells_d - 1
  const auto cells = mesh.n_cells();
  I.colors.resize(ipow(3, dim));
  I.counts.resize(I.colors.size());
  for (std::size_t c = 0; c < I.colors.size(); ++c) {
    auto& g = I.colors[c];
    std::array<int, 3> cnt{1, 1, 1};
    long long stride = 1;
    int rest = static_cast<int>(c);
    for (int d = 0; d < dim; ++d) {
      const int r = rest % 3;
      rest /= 3;
      g.first[d] = r == 0 ? 3 : r;  // the smallest v >= 1 with v mod 3 == r
      g.n_cells[d] = cells[d];
      g.cell_stride[d] = stride;
      stride *= cells[d];
      const int last = cells[d] - 1;  // largest interior vertex
      cnt[d] = last >= g.first[d] ? (last - g.first[d]) / 3 + 1 : 0;
    }
    I.counts[c] = cnt;
    I.n_patches += static_cast<std::size_t>(cnt[0]) * cnt[1] * cnt[2];
  }

  int max_smem = 0, device = 0;
  TCFEM_CUDA_CHECK(cudaGetDevice(&device));
  TCFEM_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  auto fused = kernel_of<dim, Number, Mode::fused>(I.degree);
  auto from_r = kernel_of<dim, Number, Mode::from_residual>(I.degree);
  I.smem = fused.second(max_smem);
  if (I.smem == 0 || from_r.second(max_smem) == 0)
    throw InputError("dg vertex-patch smoother on the device: degree " + std::to_string(I.degree) +
                     " needs more shared memory per block than the device has (" + std::to_string(max_smem) +
                     " bytes); use --smoother chebyshev");
  I.fused = fused.first;
  I.from_residual = from_r.first;
  I.per_block = patches_per_block(dim, I.degree);
  if (I.additive || I.variant == PatchVariant::global) {
    if (!I.vmult) throw InputError("DeviceDgPatchSmoother: the global and additive variants need the level operator");
    I.residual = DeviceVector<Number>(I.n_dofs);
    // poisoned: a step that read the work vector before writing it would show NaNs
    TCFEM_CUDA_CHECK(cudaMemset(I.residual.data(), 0xFF, I.n_dofs * sizeof(Number)));
  }
}

template <int dim, typename Number>
DeviceDgPatchSmoother<dim, Number>::~DeviceDgPatchSmoother() = default;

template <int dim, typename Number>
void DeviceDgPatchSmoother<dim, Number>::smooth(DeviceVector<Number>& x, const DeviceVector<Number>& b,
                                                SweepOrder order) const {
  const auto& I = *impl_;
  TCFEM_ASSERT(x.size() == I.n_dofs && b.size() == I.n_dofs, "dg patch smoother vector sizes");
  if (I.additive) {  // one residual; the colors add their corrections to x in turn
    I.vmult(I.residual.data(), x.data());
    device::residual_from_product(I.residual, b);
    for (std::size_t c = 0; c < I.colors.size(); ++c) I.launch_color(c, x.data(), I.residual.data(), true);
    return;
  }
  const std::size_t n_colors = I.colors.size();
  for (std::size_t i = 0; i < n_colors; ++i) {
    const std::size_t c = order == SweepOrder::forward ? i : n_colors - 1 - i;
    if (I.variant == PatchVariant::global) {
      I.vmult(I.residual.data(), x.data());
      device::residual_from_product(I.residual, b);
      I.launch_color(c, x.data(), I.residual.data(), true);
    } else {
      I.launch_color(c, x.data(), b.data(), false);
    }
  }
}

template <int dim, typename Number>
std::string DeviceDgPatchSmoother<dim, Number>::description() const {
  const auto& I = *impl_;
  char text[200];
  std::snprintf(text, sizeof text, "%s (%s, %zu patches of %d DoFs, %d colors, relaxation %g; device, %d per block)",
                I.additive ? "additive dg vertex patch" : "multiplicative dg vertex patch",
                I.additive ? "global residual" : to_string(I.variant), I.n_patches,
                dg_patch_kernels::ipow(I.n, dim), I.additive ? 1 : static_cast<int>(I.colors.size()), I.omega,
                I.per_block);
  return text;
}

template <int dim, typename Number>
std::size_t DeviceDgPatchSmoother<dim, Number>::n_patches() const {
  return impl_->n_patches;
}

template <int dim, typename Number>
std::size_t DeviceDgPatchSmoother<dim, Number>::device_bytes() const {
  const auto& I = *impl_;
  return (I.stiffness.size() + I.coupling.size() + I.vectors.size() + I.lambda.size() +
          I.residual.size()) *
         sizeof(Number);
}

template class DeviceDgPatchSmoother<2, double>;
template class DeviceDgPatchSmoother<3, double>;
template class DeviceDgPatchSmoother<2, float>;
template class DeviceDgPatchSmoother<3, float>;

}  // namespace tcfem::multigrid
