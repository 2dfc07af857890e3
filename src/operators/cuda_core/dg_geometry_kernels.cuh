#pragma once
// The cuda-core dg (SIPG) Laplacian on general geometry with stored data (partial assembly): the
// cell terms by the stored-geometry cell programs on the dg layout (3D the lines program, 2D the
// points program; operators/cuda_core/geometry_kernels.cuh), the face terms by the faces program
// (operators/cuda_core/geometry_faces.h), one launch per face direction, the face data (surface
// elements, a J^{-1} n of both cells, penalties) computed on the device as the generic kernel's.
// Instantiated per precision in operators/cuda_core/dg_geometry_fp64.cu / _fp32.cu.
#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "operators/cuda_core/geometry_faces.h"
#include "operators/cuda_core/geometry_kernels.cuh"

namespace tcfem::operators::cuda_core {

template <int dim, int k, int q, typename Number>
__global__ void __launch_bounds__(DgFaceShape<dim, q>::threads)
    dg_face_kernel(const __grid_constant__ DgFaceParams<dim, k, q, Number> p, const Number* __restrict__ src,
                   Number* __restrict__ dst) {
  using Prog = DgFaceProgram<dim, k, q, Number>;
  using Shape = DgFaceShape<dim, q>;
  __shared__ Number smem[Shape::groups_per_block * Shape::group_elements];
  typename Prog::Thread th;
  Prog::init(p, blockIdx.x, threadIdx.x, th);
  Prog::run(
      p, smem,
      [&](auto&& f) {
        f(th);
        __syncthreads();
      },
      src, dst);
}

template <int dim, int k, int q, typename Number>
using DgCellParams = std::conditional_t<dim == 3, GeomLinesParams<k, q, Number>, GeomParams<dim, k, q, Number>>;

/// dg Laplacian on any geometry (stored data): memset of dst, the cell kernel, one face kernel
/// per direction.
template <int dim, int k, int q, typename Number>
class DgGeometryOperator final : public GeometryOperatorBase<dim, DgCellParams<dim, k, q, Number>, Number> {
  using Base = GeometryOperatorBase<dim, DgCellParams<dim, k, q, Number>, Number>;
  static constexpr bool colloc = q == k + 1;
  using Faces = DgFaceShape<dim, q>;

 public:
  DgGeometryOperator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                     const DeviceTuning& tuning, const Coefficient& coefficient,
                     const jit::DeviceSource& coefficient_source)
      : Base(key, dofs.n_local()) {
    (void)require_device("--variant cuda-core");
    const DeviceTuning t = checked_geometry_tuning(tuning);
    const GeometryFunctions<dim> f(mesh, coefficient, coefficient_source);
    DeviceBuffer<double> volume(mesh.n_owned_cells());
    auto& p = this->params_;
    if constexpr (dim == 3) {
      using Cg = CgGeometryLinesOperator<k, q, colloc, Number, true>;
      const int requested_cells = t.geometry_cells_per_block > 0 ? t.geometry_cells_per_block : Cg::default_cells();
      this->kernel_ = geom_lines_kernel<k, q, colloc, Number, 1, true, false, false, true>;
      int by_registers = 0;
      const int launch_threads = geom_lines_cells(q, requested_cells) * q * q;
      TCFEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&by_registers, this->kernel_, launch_threads, 0));
      const auto setup =
          make_geom_lines_setup<k, q, Number>(mesh, key.quadrature, requested_cells, true, by_registers, true);
      const auto [s, ds] = this->upload_tables(setup);
      p = setup.params(s, ds);
      p.prefetch = t.geometry_prefetch != 0 ? t.geometry_prefetch > 0 : Cg::default_prefetch();
      this->prefetch_ = p.prefetch ? "on" : "off";
      const GeomLinesLayout& L = p.layout;
      this->threads_ = L.threads;
      this->blocks_ = (p.total_cells + L.cells - 1) / L.cells;
      this->smem_ = L.smem_elements() * int(sizeof(Number));
      this->program_ = "lines + faces";
      this->cells_per_block_ = L.cells;
    } else {
      using Prog = GeomProgram<dim, k, q, colloc, Number, true, true>;
      constexpr GeomLayout L = Prog::L;
      const auto setup = make_geom_setup<dim, k, q, Number>(mesh, key.quadrature, true);
      const auto [s, ds] = this->upload_tables(setup);
      p = setup.params(s, ds);
      p.cells = t.geometry_cells_per_block > 0 ? std::min(t.geometry_cells_per_block, L.cells) : L.cells;
      p.cell_stride = geom_best_cell_stride(L, int(sizeof(Number)));
      const GeomLayout launch = geom_tuned_layout(L, p.cells, p.cell_stride);
      this->kernel_ = geom_kernel<dim, k, q, colloc, Number, 1, true, true>;
      this->threads_ = launch.threads;
      this->blocks_ = geom_blocks<dim, k, q, colloc, Number>(p);
      this->smem_ = launch.smem_elements() * int(sizeof(Number));
      this->program_ = "points + faces";
      this->cells_per_block_ = p.cells;
    }
    p.dirichlet = 0;
    p.coef = this->compute_stored(mesh, dofs, key.quadrature, f, volume.data());
    this->min_blocks_ = 1;
    this->prepare_launch("dg general-geometry cell kernel");
    // the face data of every direction, and the view of the diagonal
    const auto quad = fe::make_quadrature(key.quadrature, k);
    auto& v = this->view_;
    v.dg = true;
    {  // the end values and derivatives of the basis, [end][node] (the diagonal's face terms)
      const auto basis = fe::LagrangeBasis1D::gauss_lobatto(k);
      std::vector<Number> ev, ed;
      for (int end = 0; end < 2; ++end)
        for (int i = 0; i <= k; ++i) {
          ev.push_back(Number(basis.value(i, end)));
          ed.push_back(Number(basis.derivative(i, end)));
        }
      end_val_ = std::make_unique<DeviceBuffer<Number>>(ev);
      end_der_ = std::make_unique<DeviceBuffer<Number>>(ed);
      v.end_val = end_val_->data();
      v.end_der = end_der_->data();
    }
    for (int d = 0; d < dim; ++d) {
      auto& fp = faces_[d];
      fp = make_dg_face_params<dim, k, q, Number>(mesh, key.quadrature, d);
      const std::size_t nf = Faces::nf, n_faces = std::size_t(fp.n_faces);
      auto& b = face_data_[d];
      b[0] = std::make_unique<DeviceBuffer<Number>>(n_faces * nf);
      b[1] = std::make_unique<DeviceBuffer<Number>>(n_faces * dim * nf);
      b[2] = std::make_unique<DeviceBuffer<Number>>(n_faces * dim * nf);
      b[3] = std::make_unique<DeviceBuffer<Number>>(n_faces);
      device_face_geometry<dim, Number>(mesh, dofs, quad, f.a, f.map, double(k) * (k + 1), d, volume.data(),
                                        b[0]->data(), b[1]->data(), b[2]->data(), b[3]->data());
      for (const auto& x : b) this->table_bytes_ += x->size() * sizeof(Number);
      fp.jxw = v.face_jxw[d] = b[0]->data();
      fp.am = v.face_am[d] = b[1]->data();
      fp.ap = v.face_ap[d] = b[2]->data();
      fp.pen = v.face_pen[d] = b[3]->data();
      face_blocks_[d] = (fp.items + fp.groups - 1) / fp.groups;
      if (face_blocks_[d] > std::int64_t(0x7fffffff))
        throw InputError("cuda-core: the mesh has too many faces for one launch");
    }
    TCFEM_CUDA_CHECK(cudaDeviceSynchronize());  // the point functions and the volumes go out of scope
    // work model: the cell program's, and per face the faces program's FLOPs and its reads of
    // both cells' values (from L2 after the cell kernel) and of the face data
    double face_flops = 0, face_shared = 0;
    for (int d = 0; d < dim; ++d) {
      face_flops += dg_face_flops(dim, k, q) * double(faces_[d].n_faces);
      face_shared += 16.0 * Faces::nf * double(faces_[d].n_faces);
    }
    const double cells = double(mesh.n_owned_cells());
    if constexpr (dim == 3) {
      const auto w = geom_lines_cell_work(k, q, colloc, true);
      this->flops_ = w.flops * cells + face_flops;
      this->shared_ = (w.shared_values * cells + face_shared) * sizeof(Number);
    } else {
      constexpr auto w = geom_cell_work<dim, k, q, colloc, true>();
      this->flops_ = w.flops * cells + face_flops;
      this->shared_ = (w.shared_values * cells + face_shared) * sizeof(Number);
    }
    this->dram_ = this->dram_model();
  }

  void vmult(void* dst, const void* src) const override {
    this->launch(this->params_, dst, src);
    for (int d = 0; d < dim; ++d) {
      if (face_blocks_[d] == 0) continue;
      dg_face_kernel<dim, k, q, Number><<<static_cast<unsigned>(face_blocks_[d]), Faces::threads>>>(
          faces_[d], static_cast<const Number*>(src), static_cast<Number*>(dst));
      TCFEM_CUDA_CHECK_LAUNCH();
    }
  }
  /// dg has no constrained nodes to leave out (the Nitsche terms are part of the operator).
  bool vmult_unconstrained(void*, const void*) const override { return false; }
  /// One process owning the box: whole applies only.
  bool split_apply(const CellRange&) override { return false; }
  KernelChoices choices() const override {
    auto c = Base::choices();
    c.push_back({"face_segment", std::to_string(faces_[0].segment)});
    c.push_back({"face_groups_per_block", std::to_string(faces_[0].groups)});
    return c;
  }

 private:
  std::array<DgFaceParams<dim, k, q, Number>, dim> faces_{};
  std::array<std::array<std::unique_ptr<DeviceBuffer<Number>>, 4>, dim> face_data_;
  std::array<std::int64_t, dim> face_blocks_{};
  std::unique_ptr<DeviceBuffer<Number>> end_val_, end_der_;
};

template <int dim, int k, fe::QuadratureKind kind, typename Number>
std::unique_ptr<DeviceOperator> build_dg_geom(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                              const DeviceKernelKey& key, const DeviceTuning& tuning,
                                              const Coefficient& coefficient, const jit::DeviceSource& source) {
  return std::make_unique<DgGeometryOperator<dim, k, geom_points(kind, k), Number>>(mesh, dofs, key, tuning,
                                                                                    coefficient, source);
}

/// table[quadrature kind][degree - 1]: BP3 (Gauss k+2) and BP5 (Gauss-Lobatto k+1)
template <int dim>
using DgGeomTable = std::array<std::array<GeomFactory<dim>, 8>, 3>;

template <int dim, typename Number, int... K>
DgGeomTable<dim> make_dg_geom_table(std::integer_sequence<int, K...>) {
  using fe::QuadratureKind;
  DgGeomTable<dim> t{};
  ((t[int(QuadratureKind::gauss_k2)][K] = &build_dg_geom<dim, K + 1, QuadratureKind::gauss_k2, Number>), ...);
  ((t[int(QuadratureKind::gll_k1)][K] = &build_dg_geom<dim, K + 1, QuadratureKind::gll_k1, Number>), ...);
  return t;
}

/// The dg operator for a supported key (general_field, stored geometry) of precision Number;
/// nullptr where no kernel exists.
template <int dim, typename Number>
std::unique_ptr<DeviceOperator> make_dg_geom_operator_typed(const mesh::BoxMesh<dim>& mesh,
                                                            const fe::DofLayout<dim>& dofs, const DeviceKernelKey& key,
                                                            const DeviceTuning& tuning, const Coefficient& coefficient,
                                                            const jit::DeviceSource& coefficient_source) {
  static const DgGeomTable<dim> table = make_dg_geom_table<dim, Number>(std::make_integer_sequence<int, 8>{});
  if (!key.general_field || key.geometry_form == GeometryForm::mf || key.degree < 1 || key.degree > 8) return nullptr;
  const auto f = table[int(key.quadrature)][key.degree - 1];
  return f ? f(mesh, dofs, key, tuning, coefficient, coefficient_source) : nullptr;
}

}  // namespace tcfem::operators::cuda_core
