#pragma once
// Matrix-free operators on the device behind one interface, and the registry that maps runtime
// (dim, degree, disc, path, precision, variant) to compiled kernels. Usable without CUDA headers:
// vectors are passed as device pointers of the operator's storage type (double for fp64, float
// for every other precision). Builds without CUDA answer every request with an InputError.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "operators/cpu/laplace_operator.h"
#include "operators/tuning.h"
#include "precision/precision.h"

namespace tcfem::operators {

/// Kernel families.
enum class Variant {
  generic,      ///< runtime-sized shared-memory kernels (every configuration; the device reference)
  cuda_core,    ///< degree-templated sum factorization on CUDA cores
  tensor_core,  ///< degree-templated sum factorization on tensor cores (mma.sync)
};
std::string_view to_string(Variant v);
/// Throws InputError naming the allowed values.
Variant variant_from_string(std::string_view name);

/// What a kernel is asked to do.
struct DeviceKernelKey {
  int dim = 3;
  int degree = 1;
  fe::Disc disc = fe::Disc::cg;
  bool cartesian = true;  ///< Kronecker fast path (else general geometry with config.quadrature)
  /// General geometry from an arbitrary node field or with a variable coefficient (or Neumann
  /// faces): only the families that read stored quadrature-point data apply. False: the
  /// geometry is Cartesian or the built-in deformation, which the cuda-core family rebuilds from
  /// 1D tables.
  bool general_field = false;
  /// general_field keys of a Cartesian box (general only for its Neumann parts) with a constant
  /// coefficient: the cuda-core kernels rebuild its cells from the box's 1D tables unless the
  /// matrix-free form is asked for (nothing stored: the tables describe the cells exactly)
  bool box_tables = false;
  fe::QuadratureKind quadrature = fe::QuadratureKind::gauss_k2;
  /// general_field keys: stored quadrature data (pa) or the geometry recomputed from the nodes (mf)
  GeometryForm geometry_form = GeometryForm::pa;
  /// general_field keys with stored geometry: its precision (fp32: an fp64 operator reading its
  /// stored data rounded to fp32; fp32 operators store fp32 either way)
  GeometryStorage geometry_storage = GeometryStorage::fp64;
  Form form = Form::laplace;
  precision::Precision precision = precision::Precision::fp64;
  Variant variant = Variant::generic;
  std::string to_string() const;
};

/// A box of cells [lo[d], hi[d]) of an operator's mesh (directions beyond its dimension: [0, 1)).
struct CellRange {
  int lo[3] = {0, 0, 0};
  int hi[3] = {1, 1, 1};
};

/// A matrix-free operator living on the device.
class DeviceOperator {
 public:
  virtual ~DeviceOperator() = default;
  /// dst = A src on device vectors of n_local() entries of the storage type (asynchronous, default stream).
  virtual void vmult(void* dst, const void* src) const = 0;
  virtual std::size_t n_local() const = 0;
  /// Bytes per vector entry: 8 (fp64) or 4.
  virtual std::size_t value_size() const = 0;
  virtual const DeviceKernelKey& key() const = 0;
  /// Floating-point operations of one apply as the kernel performs them (padding included).
  virtual double flops_per_apply() const = 0;
  /// Least DRAM traffic of one apply: read src and write dst once, plus stored geometry data.
  virtual double dram_bytes_per_apply() const = 0;
  /// Shared-memory bytes moved per apply (loads + stores), for the shared-memory roofline.
  virtual double shared_bytes_per_apply() const = 0;
  /// Device memory held by the operator (tables and geometry).
  virtual std::size_t device_bytes() const = 0;
  /// The kernel choices this operator resolved (operators/tuning.h): launch and layout parameters
  /// that are not part of the key; empty where a family has none.
  virtual KernelChoices choices() const { return {}; }
  /// Writes the operator's diagonal (cg: 1 on constrained rows) into `diag` (device, n_local()
  /// entries of the storage type) and returns true, where the family computes it on the device;
  /// false otherwise (the caller computes it on the host).
  virtual bool diagonal(void* diag) const {
    (void)diag;
    return false;
  }
  /// The cell metric of the Laplace form from the stored quadrature data
  /// (MatrixFreeOperator::cell_metric: [cell * dim + d], on the host) where the family stores
  /// them; empty otherwise.
  virtual std::vector<double> cell_metric() const { return {}; }
  /// The same cell metric written into `metric` (device, n_cells * dim doubles) and true, where
  /// the family stores it; false otherwise (nothing written).
  virtual bool cell_metric_to(double* metric) const {
    (void)metric;
    return false;
  }
  /// dst = A_u src with A_u the operator without its cg constraints (every lattice node a degree
  /// of freedom: the rows and columns of the Dirichlet nodes included; dg: the operator itself),
  /// and returns true, where the family can; false otherwise (the Kronecker kernels, which
  /// constrain every boundary node). The Dirichlet lift of a problem is b -= A_u g_h.
  virtual bool vmult_unconstrained(void* dst, const void* src) const {
    (void)dst;
    (void)src;
    return false;
  }
  /// Splits the apply in two for overlapping a ghost exchange with it (an operator on a rank's
  /// ghosted box): vmult_interior applies the cells of `interior` (those that read no value the
  /// exchange writes) and vmult_rest the other cells. Returns false, and keeps whole applies,
  /// where the family has no split apply or no cell of `interior` fills one of its work units.
  virtual bool split_apply(const CellRange& interior) {
    (void)interior;
    return false;
  }
  /// Whether split_apply succeeded.
  virtual bool is_split() const { return false; }
  /// dst = the interior cells' part of A src, dst zeroed first (asynchronous, default stream).
  /// Only after split_apply returned true.
  virtual void vmult_interior(void* dst, const void* src) const;
  /// dst += the other cells' part of A src: after vmult_interior, once src's ghosts are complete.
  virtual void vmult_rest(void* dst, const void* src) const;
};

/// What every device operator keeps alike: its key, its local size and the work model of one
/// apply (the kernels' constructors fill flops_, dram_ and shared_).
class DeviceOperatorBase : public DeviceOperator {
 public:
  std::size_t n_local() const override { return n_local_; }
  const DeviceKernelKey& key() const override { return key_; }
  double flops_per_apply() const override { return flops_; }
  double dram_bytes_per_apply() const override { return dram_; }
  double shared_bytes_per_apply() const override { return shared_; }

 protected:
  DeviceOperatorBase(const DeviceKernelKey& key, std::size_t n_local) : key_(key), n_local_(n_local) {}
  DeviceKernelKey key_;
  std::size_t n_local_ = 0;
  double flops_ = 0, dram_ = 0, shared_ = 0;
};

/// The geometry fields of a key for a mesh, DoF layout and configuration: the Kronecker fast
/// path where uses_cartesian_path allows it and every face is Dirichlet (the Cartesian kernels
/// constrain every boundary node); general_field for mapped meshes, variable coefficients and
/// Neumann faces (whose constraints the general-geometry kernels take from the DoF layout), with
/// box_tables for a cg Cartesian box with a constant coefficient (its stored geometry fp64: none
/// is stored); the geometry form of general_field keys from the configuration.
template <int dim>
void set_geometry(DeviceKernelKey& key, const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                  const OperatorConfig& config) {
  key.cartesian = uses_cartesian_path(mesh, dofs, config) && dofs.all_faces_dirichlet();
  key.general_field = !key.cartesian && (mesh.geometry() == mesh::GeometryKind::mapped || bool(config.coefficient) ||
                                         !dofs.all_faces_dirichlet());
  key.geometry_form = key.general_field ? config.geometry_form : GeometryForm::pa;
  key.box_tables = key.general_field && mesh.geometry() == mesh::GeometryKind::cartesian && !config.coefficient &&
                   key.disc == fe::Disc::cg;
  key.geometry_storage = key.general_field && !key.box_tables ? config.geometry_storage : GeometryStorage::fp64;
}

/// Whether an fp64 key asks for its stored geometry in fp32 (GeometryStorage::fp32): the
/// cuda-core cg kernels with stored geometry have it; the other families refuse such keys.
inline bool fp32_stored_fp64(const DeviceKernelKey& key) {
  return key.geometry_storage == GeometryStorage::fp32 && key.precision == precision::Precision::fp64;
}

/// The geometry form a key runs with: key.geometry_form unless automatic; automatic takes mf
/// where the cells are trilinear (bilinear) by construction (general geometry on a Cartesian mesh:
/// a variable coefficient or Neumann faces) and the matrix-free kernel's apply was measured faster
/// there: BP5 in 3D fp64 at every degree, fp32 from k = 5 (docs/performance.md, "Matrix-free
/// curved geometry"), in 2D fp64 from k = 3, fp32 from k = 4 ("Matrix-free geometry in 2D"); BP3
/// in 3D fp64 from k = 4, in 2D fp64 from k = 2, fp32 from k = 4 ("Matrix-free geometry at BP3
/// points"). pa elsewhere (curved cells: the stored form was measured faster at every degree but
/// 2D fp64 BP5 k = 5), where the key asks for fp32 stored geometry, and (from the box's 1D tables)
/// for box_tables keys.
inline GeometryForm resolve_geometry_form(const DeviceKernelKey& key, mesh::GeometryKind kind) {
  if (key.geometry_form != GeometryForm::automatic) return key.geometry_form;
  if (key.box_tables) return GeometryForm::pa;  // the box's 1D tables: nothing to store or recompute
  const bool fp64 = key.precision == precision::Precision::fp64, fp32 = key.precision == precision::Precision::fp32;
  const int k = key.degree;
  bool faster = false;
  if (key.quadrature == fe::QuadratureKind::gll_k1)
    faster = key.dim == 3 ? fp64 || (fp32 && k >= 5) : (fp64 && k >= 3) || (fp32 && k >= 4);
  else if (key.quadrature == fe::QuadratureKind::gauss_k2)
    faster = key.dim == 3 ? fp64 && k >= 4 : (fp64 && k >= 2) || (fp32 && k >= 4);
  const bool mf = !fp32_stored_fp64(key) && key.general_field && kind == mesh::GeometryKind::cartesian &&
                  key.disc == fe::Disc::cg && faster;
  return mf ? GeometryForm::mf : GeometryForm::pa;
}

/// The variant measured fastest for an fp64 key of general geometry with stored geometry
/// (key.geometry_form pa): the tensor cores where their kernel beat the cuda-core family's by more
/// than the run-to-run spread (cg, the quarter annulus at 3e7 DoFs on the H200; docs/performance.md,
/// "Curved geometry on FP64 tensor cores" and "Tensor cores on 2D curved cells and with fp32 stored
/// geometry"): 3D BP5 at k = 6 and 7 with fp64 data (by 2-5%), 3D BP3 at k = 7 with fp32 data
/// (8%), 2D BP3 at k = 7 with fp64 data (14%); the cuda cores elsewhere and for box_tables keys
/// (their kernels store nothing). Whether a kernel exists
/// for the key on the device is the caller's to check (with_fastest_stored_geometry_variant does).
inline Variant fastest_stored_geometry_variant(const DeviceKernelKey& key) {
  if (!key.general_field || key.box_tables || key.geometry_form != GeometryForm::pa || key.disc != fe::Disc::cg ||
      key.precision != precision::Precision::fp64)
    return Variant::cuda_core;
  const bool bp5 = key.quadrature == fe::QuadratureKind::gll_k1, bp3 = key.quadrature == fe::QuadratureKind::gauss_k2;
  const bool fp32_data = fp32_stored_fp64(key);
  const bool tensor = key.dim == 3 ? (bp5 && !fp32_data && (key.degree == 6 || key.degree == 7)) ||
                                         (bp3 && fp32_data && key.degree == 7)
                                   : key.dim == 2 && bp3 && !fp32_data && key.degree == 7;
  return tensor ? Variant::tensor_core : Variant::cuda_core;
}

/// `key` with the variant of fastest_stored_geometry_variant where that variant has a kernel for
/// the key on the current device (the tensor cores: the sm_90 FP64 shapes); `key` where not.
DeviceKernelKey with_fastest_stored_geometry_variant(DeviceKernelKey key);

/// Builds the operator for `key` (key.dim must equal dim) with the kernel choices of `tuning` and
/// the coefficient a(x) (empty: 1; general geometry only; `coefficient_source` its device form,
/// compiled where given); throws InputError naming what is supported when no kernel matches, and
/// for Cartesian keys on cg DoF layouts with Neumann faces (set_geometry gives those general keys).
template <int dim>
std::unique_ptr<DeviceOperator> make_device_operator(const mesh::BoxMesh<dim>& mesh, const fe::DofLayout<dim>& dofs,
                                                     const DeviceKernelKey& key, const DeviceTuning& tuning = {},
                                                     const Coefficient& coefficient = {},
                                                     const jit::DeviceSource& coefficient_source = {});

/// Whether a kernel for `key` exists in this build (without building it).
bool device_kernel_supported(const DeviceKernelKey& key);

/// One line per kernel family with what it supports (for --help and error messages).
std::vector<std::string> describe_device_kernels();

}  // namespace tcfem::operators
