// DevicePatchSmoother: setup on the host (1D patch matrices and fast diagonalization exactly as
// VertexPatchSmoother builds them), the dispatch table of the kernels over the degree, and the
// sequence of launches of one smoothing step.
//
// Additive smoother: x += omega sum_j R_j^T A_j^{-1} R_j (b - A x). The residual r = b - A x is
// computed once (level_vmult); the corrections of overlapping patches are summed by a colored
// accumulation: the 2^dim colors are launched one after the other, each adding omega A_j^{-1} r_j
// straight into x. Patches of one color have disjoint inner nodes (multigrid/patch_kernels/kernels.cuh), so
// no two blocks of a launch write one entry, and r does not change, so the order of the colors
// does not matter: no atomics, and the result is deterministic.
#include "multigrid/device/patch_smoother.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/error.h"
#include "multigrid/patch_kernels/kernels.cuh"
#include "multigrid/patch_kernels/launch.h"
#include "multigrid/patch_kernels/setup.h"

namespace tcfem::multigrid {

using patch_kernels::KernelKind;
using patch_kernels::PatchKernelParams;
using patch_kernels::PatchLayout;

namespace {

/// The contraction a tuning asks for (automatic: even-odd where the matrices allow it).
patch_kernels::Contraction requested_contraction(PatchContraction c) {
  switch (c) {
    case PatchContraction::automatic:
    case PatchContraction::even_odd: return patch_kernels::Contraction::even_odd;
    case PatchContraction::dense: return patch_kernels::Contraction::dense;
    case PatchContraction::tensor_core: return patch_kernels::Contraction::tensor_core;
  }
  throw Error("unknown patch contraction");
}

const char* contraction_name(patch_kernels::Contraction c) {
  switch (c) {
    case patch_kernels::Contraction::dense: return "dense";
    case patch_kernels::Contraction::even_odd: return "even-odd";
    case patch_kernels::Contraction::tensor_core: return "tensor-core";
  }
  return "?";
}

template <int dim, typename Number>
patch_kernels::PatchLauncher<Number> launcher_of(patch_kernels::Contraction c, int k, KernelKind kind) {
  using patch_kernels::Contraction;
  switch (c) {
    case Contraction::dense: return patch_kernels::patch_launcher<dim, Number, Contraction::dense>(k, kind);
    case Contraction::even_odd: return patch_kernels::patch_launcher<dim, Number, Contraction::even_odd>(k, kind);
    case Contraction::tensor_core: return patch_kernels::patch_launcher<dim, Number, Contraction::tensor_core>(k, kind);
  }
  throw Error("unknown patch contraction");
}

template <int dim, typename Number>
patch_kernels::PatchKernelInfo info_of(patch_kernels::Contraction c, int k, KernelKind kind, int carveout) {
  using patch_kernels::Contraction;
  switch (c) {
    case Contraction::dense: return patch_kernels::patch_kernel_info<dim, Number, Contraction::dense>(k, kind, carveout);
    case Contraction::even_odd: return patch_kernels::patch_kernel_info<dim, Number, Contraction::even_odd>(k, kind, carveout);
    case Contraction::tensor_core: return patch_kernels::patch_kernel_info<dim, Number, Contraction::tensor_core>(k, kind, carveout);
  }
  throw Error("unknown patch contraction");
}

}  // namespace


namespace {

/// The patches of the vertices on Neumann faces (patch_kernels/boundary.h): one block per patch.
constexpr int boundary_patch_threads = 128;
template <int dim, typename Number>
__global__ void __launch_bounds__(boundary_patch_threads)
    boundary_patch_kernel(const __grid_constant__ patch_kernels::BoundaryPatchParams<Number> p) {
  extern __shared__ __align__(16) unsigned char boundary_smem_raw[];
  patch_kernels::boundary_patch_block<dim, Number>(
      ThreadGroup{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)}, static_cast<long long>(blockIdx.x), p,
      reinterpret_cast<Number*>(boundary_smem_raw));
}

unsigned grid_1d(long long n, int threads) {
  const long long blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::min<long long>(std::max<long long>(blocks, 1), 132LL * 16));
}
/// Blocks of `threads` for one entry per thread.
unsigned grid_each(long long n, int threads) {
  return static_cast<unsigned>(std::max<long long>((n + threads - 1) / threads, 1));
}

}  // namespace

template <int dim, typename Number>
struct DevicePatchSmoother<dim, Number>::Impl {
  bool additive = false;
  PatchVariant variant = PatchVariant::fused;
  bool surrogate_residuals = false;  // one level residual per step, the colors' from the surrogates
  double omega = 1.0;
  bool replace_inner = false;
  int k = 1;
  std::size_t n = 0;
  std::size_t n_patches = 0;
  std::function<void(Number*, const Number*)> level_vmult;
  patch_kernels::Contraction contraction = patch_kernels::Contraction::even_odd;
  int carveout = 100;
  std::vector<Number> matrices;  // host copy (in the form of the contraction); a kernel parameter of every launch
  DeviceBuffer<Number> inverse_diagonal;
  bool surrogate = false;                          // the separable surrogates of a cell metric
  DeviceBuffer<Number> eigenvalues;                // surrogate: lambda_d of the unit cells
  std::vector<DeviceBuffer<Number>> patch_weights;  // surrogate: per color, dim weights per patch
  mutable DeviceBuffer<Number> residual, color_buffer, correction;  // work vectors of a step
  DeviceBuffer<long long> constrained;
  std::vector<PatchKernelParams<Number>> colors;  // per color; pointers to vectors set per step
  // the patches of the vertices on Neumann faces (patch_kernels/boundary.h), per color
  std::vector<patch_kernels::BoundaryPatchParams<Number>> boundary;
  std::vector<DeviceBuffer<int>> boundary_vertices;
  std::vector<DeviceBuffer<double>> boundary_weights;
  DeviceBuffer<Number> boundary_vectors, boundary_inverse_diagonal, boundary_residual_matrices;
  DeviceBuffer<double> boundary_eigenvalues;
  int boundary_smem = 0;
  std::size_t n_boundary_patches = 0;
  DeviceGhostExchange* ghosts = nullptr;  // a level spread over ranks: the ghosts of one cell layer
  int color_shift = 0;  // bit d: the parity of the box's first global vertex along d

  /// The box's color of global color i (the colors of the global vertex parities).
  int local_color(int i) const { return i ^ color_shift; }
  template <typename T>
  void update_ghosts(T* v) const {
    if (ghosts) ghosts->update_ghosts(v);
  }

  void launch(KernelKind kind, const PatchKernelParams<Number>& p) const {
    if (p.n_patches == 0) return;
    launcher_of<dim, Number>(contraction, k, kind)(p, matrices, carveout);
  }

  /// x += omega A_j^{-1} r_j over the boundary patches of box color c: r_j from the level's
  /// residual r, or (r null) the localized residual from b.
  void launch_boundary(int c, Number* x, const Number* r, const Number* b = nullptr) const {
    if (boundary.empty() || boundary[c].n_patches == 0) return;
    auto p = boundary[c];
    p.x = x;
    p.r = r;
    p.b = r ? nullptr : b;
    boundary_patch_kernel<dim, Number>
        <<<static_cast<unsigned>(p.n_patches), boundary_patch_threads, boundary_smem>>>(p);
    TCFEM_CUDA_CHECK_LAUNCH();
  }

  void global_residual(Number* x, const Number* b) const {
    level_vmult(residual.data(), x);
    patch_kernels::residual_from_product_kernel<<<grid_each(static_cast<long long>(n), 256), 256>>>(
        residual.data(), b, static_cast<long long>(n));
    TCFEM_CUDA_CHECK_LAUNCH();
    update_ghosts(residual.data());  // spread: the patches at the cuts read their neighbours' residuals
  }

  /// The multiplicative sweep over the colors on x with right-hand side b. x_zero: x is 0 on entry
  /// (the surrogate residuals' correction), so the first color's residual is b itself: its patches
  /// take the solve kernel on b (x_I += omega A_II^{-1} b_I) instead of the residual phases.
  void sweep(Number* x, const Number* b, SweepOrder order, bool b_ghosts_fresh, bool x_zero = false) const {
    const int n_colors = 1 << dim;
    // spread: the localized residuals of the patches at the cuts (and with x_zero the first color
    // of every variant) read b at their neighbours' nodes (its ghosts are copies of the owners'
    // entries: the vector keeps its value)
    if ((variant != PatchVariant::global || x_zero) && !b_ghosts_fresh) update_ghosts(const_cast<Number*>(b));
    for (int i = 0; i < n_colors; ++i) {
      const int c = local_color(order == SweepOrder::forward ? i : n_colors - 1 - i);
      auto p = colors[c];
      // spread: every rank takes part in the exchanges, with patches of this color or without
      if (variant != PatchVariant::global) update_ghosts(x);
      if (p.n_patches == 0 && !ghosts && (boundary.empty() || boundary[c].n_patches == 0)) continue;
      p.x = x;
      p.b = b;
      if (x_zero && i == 0) {
        p.r_in = b;
        launch(KernelKind::solve_from_vector, p);
        launch_boundary(c, x, b);
        continue;
      }
      switch (variant) {
        case PatchVariant::fused:
          launch(KernelKind::fused, p);
          launch_boundary(c, x, nullptr, b);  // localized residuals (patches of one color: independent)
          break;
        case PatchVariant::separate:
          p.r_out = color_buffer.data();
          launch(KernelKind::residual, p);
          p.r_in = color_buffer.data();
          launch(KernelKind::solve_from_buffer, p);
          launch_boundary(c, x, nullptr, b);
          break;
        case PatchVariant::global:
          global_residual(x, b);
          p.r_in = residual.data();
          launch(KernelKind::solve_from_vector, p);
          launch_boundary(c, x, residual.data());  // (the interior patches' nodes: disjoint)
          break;
      }
    }
  }
};

template <int dim, typename Number>
DevicePatchSmoother<dim, Number>::DevicePatchSmoother(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                      const fe::Quadrature1D& quadrature,
                                                      const SmootherSettings& settings,
                                                      std::function<void(Number* dst, const Number* src)> level_vmult,
                                                      const std::vector<double>& cell_metric, const Spread& spread,
                                                      const double* device_cell_metric)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  if (settings.kind != SmootherKind::patch && settings.kind != SmootherKind::patch_additive)
    throw InputError("--smoother: the device patch smoother implements patch and patch-additive only");
  if (dofs.disc() != fe::Disc::cg)
    throw InputError("--smoother patch: the vertex-patch smoothers support --disc cg only (use chebyshev for dg)");
  if (dofs.degree() < 1 || dofs.degree() > 8)
    throw InputError("--degree: the device patch smoother supports degrees 1..8");
  const auto& part = mesh.partition();
  for (int d = 0; d < dim; ++d)
    if (part.ghosted.begin[d] != 0 || part.ghosted.end[d] != mesh.n_cells()[d])
      throw InputError("--backend cuda: the device patch smoother needs the whole mesh on one device");
  if (!query_device().available)
    throw InputError("--backend cuda: no CUDA device available for the patch smoother");
  const auto range = patch_vertex_range<dim>(dofs.dirichlet_faces());
  I.ghosts = spread.ghosts;
  for (int d = 0; d < dim; ++d) I.color_shift |= (spread.origin[d] & 1) << d;
  I.additive = settings.kind == SmootherKind::patch_additive;
  I.surrogate = !cell_metric.empty() || device_cell_metric;
  if (I.surrogate && cell_metric.empty() && range.boundary())
    throw Error("DevicePatchSmoother: the patches on Neumann faces need the cell metric on the host");
  // curved cells without surrogates: the residual of the level operator (on Cartesian cells the
  // boundary patches localize theirs too); surrogates: fused / separate take the surrogate
  // residuals (multigrid/host/patch_smoother.h), except with patches on Neumann faces
  const bool global = I.surrogate ? range.boundary() : mesh.geometry() != mesh::GeometryKind::cartesian;
  I.variant = global ? PatchVariant::global : settings.patch_variant;
  I.surrogate_residuals = I.surrogate && !I.additive && I.variant != PatchVariant::global;
  I.omega = settings.relaxation.value_or(I.additive ? additive_default_relaxation(dim) : 1.0);
  I.k = dofs.degree();
  I.n = dofs.n_local();
  I.level_vmult = std::move(level_vmult);
  if ((I.additive || I.variant == PatchVariant::global || I.surrogate_residuals) && !I.level_vmult)
    throw InputError("--patch-variant global / --smoother patch-additive / the separable surrogates: the level "
                     "operator is missing");

  std::vector<Number> inverse_diagonal, eigenvalues;
  auto* lambda = I.surrogate ? &eigenvalues : nullptr;
  I.matrices = patch_kernels::patch_kernel_matrices<dim, Number>(mesh, I.k, quadrature, inverse_diagonal, lambda);
  I.contraction = requested_contraction(settings.kernels.contraction);
  I.carveout = settings.kernels.carveout;
  if (I.carveout < -1 || I.carveout > 100)
    throw InputError("tuning patch_smoother.carveout: -1 (the driver's choice) or 0..100 percent, not " +
                     std::to_string(I.carveout));
  if (I.contraction == patch_kernels::Contraction::even_odd) {
    try {
      auto diagonal = inverse_diagonal;
      auto values = eigenvalues;
      I.matrices = patch_kernels::patch_even_odd_matrices<dim, Number>(I.k, I.matrices, diagonal,
                                                                      lambda ? &values : nullptr);
      inverse_diagonal = std::move(diagonal);
      eigenvalues = std::move(values);
    } catch (const Error&) {
      if (settings.kernels.contraction == PatchContraction::even_odd)
        throw InputError("tuning patch_smoother.contraction even-odd: the patch matrices of this level lack the "
                         "symmetry the even-odd products need; use auto or dense");
      I.contraction = patch_kernels::Contraction::dense;  // no symmetry to exploit: dense products
    }
  }
  I.inverse_diagonal = DeviceBuffer<Number>(inverse_diagonal);
  I.colors = patch_kernels::patch_kernel_colors<dim, Number>(mesh, dofs);
  if (I.surrogate) {
    I.eigenvalues = DeviceBuffer<Number>(eigenvalues);
    I.patch_weights.resize(I.colors.size());
    for (std::size_t c = 0; c < I.colors.size(); ++c) {
      const auto& p = I.colors[c];
      if (p.n_patches == 0) continue;
      if (device_cell_metric) {  // on the device, what patch_kernel_weights computes on the host
        I.patch_weights[c] = DeviceBuffer<Number>(std::size_t(p.n_patches) * dim);
        const auto n = mesh.n_cells();
        patch_kernels::patch_weights_kernel<dim, Number><<<grid_each(p.n_patches, 256), 256>>>(
            make_int3(p.count[0], p.count[1], p.count[2]), make_int3(p.parity[0], p.parity[1], p.parity[2]), n[0],
            dim > 1 ? n[1] : 1, static_cast<long long>(p.n_patches), device_cell_metric, I.patch_weights[c].data());
        TCFEM_CUDA_CHECK_LAUNCH();
      } else {
        I.patch_weights[c] = DeviceBuffer<Number>(patch_kernels::patch_kernel_weights<dim, Number>(mesh, p, cell_metric));
      }
      I.colors[c].patch_weights = I.patch_weights[c].data();
      I.colors[c].eigenvalues = I.eigenvalues.data();
    }
  }
  // the fast diagonalization is the exact inverse of A_II on the Cartesian patches the fused kernel
  // serves, so with relaxation 1 the new x_I does not depend on the old one
  I.replace_inner = !I.additive && I.variant == PatchVariant::fused && I.omega == 1.0;
  std::size_t largest = 0;
  for (auto& p : I.colors) {
    for (int d = 1; d < dim; ++d)
      if (p.count[d] > 65535)
        throw InputError("--cells: the device patch smoother allows at most 131071 cells along y and z");
    p.inverse_diagonal = I.inverse_diagonal.data();
    p.omega = static_cast<Number>(I.omega);
    p.replace_inner = I.replace_inner;
    I.n_patches += p.n_patches;
    largest = std::max<std::size_t>(largest, p.n_patches);
  }
  if (range.boundary()) {
    const auto data = patch_kernels::boundary_patch_data<dim, Number>(mesh, dofs, quadrature,
                                                                      I.surrogate ? cell_metric : std::vector<double>{});
    I.n_boundary_patches = data.n_patches();
    I.n_patches += I.n_boundary_patches;
    I.boundary_vectors = DeviceBuffer<Number>(data.vectors);
    if (!data.inverse_diagonal.empty()) I.boundary_inverse_diagonal = DeviceBuffer<Number>(data.inverse_diagonal);
    if (!data.eigenvalues.empty()) I.boundary_eigenvalues = DeviceBuffer<double>(data.eigenvalues);
    const bool local = !I.additive && I.variant != PatchVariant::global;  // the localized residual
    if (local) I.boundary_residual_matrices = DeviceBuffer<Number>(data.residual_matrices);
    const int n_colors = 1 << dim;
    I.boundary.resize(n_colors);
    I.boundary_vertices.resize(n_colors);
    I.boundary_weights.resize(n_colors);
    for (int c = 0; c < n_colors; ++c) {
      auto& p = I.boundary[c];
      p = patch_kernels::boundary_patch_params<dim, Number>(mesh, dofs, data, c, I.omega);
      if (p.n_patches == 0) continue;
      I.boundary_vertices[c] = DeviceBuffer<int>(data.vertices[c]);
      p.vertices = I.boundary_vertices[c].data();
      p.vectors = I.boundary_vectors.data();
      if (I.surrogate) {
        I.boundary_weights[c] = DeviceBuffer<double>(data.weights[c]);
        p.weights = I.boundary_weights[c].data();
        p.eigenvalues = I.boundary_eigenvalues.data();
      } else {
        p.inverse_diagonal = I.boundary_inverse_diagonal.data();
        p.residual_matrices = local ? I.boundary_residual_matrices.data() : nullptr;
      }
    }
    I.boundary_smem = int(sizeof(Number)) * patch_kernels::boundary_patch_shared_values(dim, 2 * I.k - 1, local);
    int device = 0, limit = 0;
    TCFEM_CUDA_CHECK(cudaGetDevice(&device));
    TCFEM_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (I.boundary_smem > limit)
      throw InputError("--smoother patch with Neumann parts at --degree " + std::to_string(I.k) + ": the patches on " +
                       "Neumann faces need " + std::to_string(I.boundary_smem) + " bytes of shared memory per block, " +
                       "the device allows " + std::to_string(limit) + "; use --smoother chebyshev");
    TCFEM_CUDA_CHECK(cudaFuncSetAttribute(boundary_patch_kernel<dim, Number>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, I.boundary_smem));
  }
  const auto indices = dofs.constrained_indices();
  I.constrained = DeviceBuffer<long long>(std::vector<long long>(indices.begin(), indices.end()));
  if (I.additive || I.variant == PatchVariant::global || I.surrogate_residuals) I.residual.allocate(I.n);
  if (I.surrogate_residuals) I.correction.allocate(I.n);
  if (!I.additive && I.variant == PatchVariant::separate)
    I.color_buffer.allocate(largest * patch_kernels::ipow(2 * I.k - 1, dim));
  // poison the work vectors (all bits set: NaN in float and double): a read before a write shows
  for (auto* buf : {&I.residual, &I.color_buffer, &I.correction})
    if (buf->size()) TCFEM_CUDA_CHECK(cudaMemset(buf->data(), 0xFF, buf->size() * sizeof(Number)));
}

template <int dim, typename Number>
DevicePatchSmoother<dim, Number>::~DevicePatchSmoother() = default;

template <int dim, typename Number>
void DevicePatchSmoother<dim, Number>::smooth(Number* x, const Number* b, SweepOrder order, bool b_ghosts_fresh,
                                              bool x_zero) const {
  const auto& I = *impl_;
  const int n_colors = 1 << dim;
  // a level spread over ranks takes the general step (its first color with x = 0 is not run on
  // the solve kernel there)
  x_zero = x_zero && !I.ghosts;
  if (I.additive) {
    I.global_residual(x, b);
    for (int i = 0; i < n_colors; ++i) {  // colored accumulation of the corrections into x
      auto p = I.colors[I.local_color(i)];
      p.x = x;
      p.r_in = I.residual.data();
      I.launch(KernelKind::solve_from_vector, p);
      I.launch_boundary(I.local_color(i), x, I.residual.data());
    }
  } else if (I.surrogate_residuals && !x_zero) {
    // y = B (b - A x): the sweep of the surrogates on y from 0 with the level residual, x += y
    I.global_residual(x, b);  // (its ghosts updated)
    Number* y = I.correction.data();
    TCFEM_CUDA_CHECK(cudaMemsetAsync(y, 0, I.n * sizeof(Number)));
    I.sweep(y, I.residual.data(), order, true, true);
    const long long n = static_cast<long long>(I.n);
    patch_kernels::add_kernel<<<grid_each(n, 256), 256>>>(x, y, n);
    TCFEM_CUDA_CHECK_LAUNCH();
  } else {
    I.sweep(x, b, order, b_ghosts_fresh, x_zero);  // (x_zero with the surrogate residuals: y = x, r = b)
  }
  const long long nc = static_cast<long long>(I.constrained.size());
  if (nc > 0) {
    patch_kernels::set_constrained_kernel<<<grid_1d(nc, 256), 256>>>(x, b, I.constrained.data(), nc);
    TCFEM_CUDA_CHECK_LAUNCH();
  }
}

template <int dim, typename Number>
std::size_t DevicePatchSmoother<dim, Number>::size() const {
  return impl_->n;
}

template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::description() const {
  const auto& I = *impl_;
  char text[280];
  char boundary[64] = "";
  if (I.n_boundary_patches > 0) std::snprintf(boundary, sizeof boundary, " (%zu on Neumann faces)", I.n_boundary_patches);
  std::snprintf(text, sizeof text, "%s (%s%s%s, %zu patches%s, %d colors, relaxation %g, %s products, carveout %d, device)",
                I.additive ? "additive vertex patch" : "multiplicative vertex patch",
                I.additive ? "global residual" : to_string(I.variant), I.replace_inner ? ", x_I replaced" : "",
                I.surrogate ? (I.surrogate_residuals ? ", separable surrogates, surrogate residuals" : ", separable surrogates") : "",
                I.n_patches, boundary, 1 << dim, I.omega, contraction_name(I.contraction), I.carveout);
  return text;
}

namespace {
template <int dim>
std::pair<KernelKind, KernelKind> step_kernels(bool additive, PatchVariant v) {
  if (additive || v == PatchVariant::global) return {KernelKind::solve_from_vector, KernelKind::solve_from_vector};
  if (v == PatchVariant::separate) return {KernelKind::residual, KernelKind::solve_from_buffer};
  return {KernelKind::fused, KernelKind::fused};
}
}  // namespace

template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::flops_per_step() const {
  const auto& I = *impl_;
  const auto [a, b] = step_kernels<dim>(I.additive, I.variant);
  const bool r = I.replace_inner;  // only the fused kernel replaces
  const double per = patch_kernels::patch_flops(dim, I.k, a, r) + (a == b ? 0.0 : patch_kernels::patch_flops(dim, I.k, b));
  return per * double(I.n_patches - I.n_boundary_patches);
}

template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::flops_performed_per_step() const {
  const auto& I = *impl_;
  const auto [a, b] = step_kernels<dim>(I.additive, I.variant);
  const double per = patch_kernels::patch_flops_performed(dim, I.k, a, I.contraction, I.replace_inner) +
                     (a == b ? 0.0 : patch_kernels::patch_flops_performed(dim, I.k, b, I.contraction));
  return per * double(I.n_patches - I.n_boundary_patches);
}

template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::kernel_info() const {
  const auto& I = *impl_;
  const auto [a, b] = step_kernels<dim>(I.additive, I.variant);
  std::string out;
  for (const KernelKind kind : {a, b}) {
    if (kind == b && a == b && !out.empty()) break;
    const auto info = info_of<dim, Number>(I.contraction, I.k, kind, I.carveout);
    char text[160];
    std::snprintf(text, sizeof text, "%sregs %d threads %d smem %.1f KB blocks/SM %d (%d warps)", out.empty() ? "" : "; ",
                  info.registers, info.threads, info.shared_bytes / 1024.0, info.blocks_per_sm,
                  info.blocks_per_sm * info.threads / 32);
    out += text;
  }
  return out;
}

template <int dim, typename Number>
bool DevicePatchSmoother<dim, Number>::even_odd() const {
  return impl_->contraction == patch_kernels::Contraction::even_odd;
}

template <int dim, typename Number>
std::string DevicePatchSmoother<dim, Number>::contraction() const {
  return contraction_name(impl_->contraction);
}

template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::shared_bytes_per_step() const {
  const auto& I = *impl_;
  const auto [a, b] = step_kernels<dim>(I.additive, I.variant);
  auto bytes = [&](KernelKind kind) {
    return patch_kernels::patch_shared_bytes(patch_kernels::patch_layout(dim, I.k, sizeof(Number), kind, I.contraction), kind,
                                             I.replace_inner);
  };
  return (bytes(a) + (a == b ? 0.0 : bytes(b))) * double(I.n_patches - I.n_boundary_patches);
}

template <int dim, typename Number>
double DevicePatchSmoother<dim, Number>::global_bytes_per_step() const {
  const auto& I = *impl_;
  const auto [a, b] = step_kernels<dim>(I.additive, I.variant);
  const double per = patch_kernels::patch_global_bytes(dim, I.k, sizeof(Number), a, I.replace_inner) +
                     (a == b ? 0.0 : patch_kernels::patch_global_bytes(dim, I.k, sizeof(Number), b));
  return per * double(I.n_patches - I.n_boundary_patches);
}

template class DevicePatchSmoother<2, double>;
template class DevicePatchSmoother<3, double>;
template class DevicePatchSmoother<2, float>;
template class DevicePatchSmoother<3, float>;

}  // namespace tcfem::multigrid
