#pragma once
// The factories of the general-geometry cuda-core cg operators of one degree (geom_column,
// geom_stored32_column; operators/cuda_core/geometry_kernels.cuh): included only by the units
// generated from geometry_degree.cu.in, one per degree and number type, which instantiate them.
#include "operators/cuda_core/geometry_kernels.cuh"

namespace tcfem::operators::cuda_core {

template <int dim, typename Number, int k>
GeomColumn<dim> geom_column() {
  using fe::QuadratureKind;
  GeomColumn<dim> c{};
  c[0][int(QuadratureKind::gauss_k2)] = &build_geom<dim, k, QuadratureKind::gauss_k2, Number, false>;
  c[0][int(QuadratureKind::gll_k1)] = &build_geom<dim, k, QuadratureKind::gll_k1, Number, false>;
  c[0][int(QuadratureKind::gauss_k1)] = &build_geom<dim, k, QuadratureKind::gauss_k1, Number, false>;
  c[1][int(QuadratureKind::gauss_k2)] = &build_geom<dim, k, QuadratureKind::gauss_k2, Number, true>;
  c[1][int(QuadratureKind::gll_k1)] = &build_geom<dim, k, QuadratureKind::gll_k1, Number, true>;
  c[2][int(QuadratureKind::gauss_k2)] = &build_geom<dim, k, QuadratureKind::gauss_k2, Number, false, true>;
  c[2][int(QuadratureKind::gll_k1)] = &build_geom<dim, k, QuadratureKind::gll_k1, Number, false, true>;
  return c;
}

template <int dim, int k>
GeomStored32Column<dim> geom_stored32_column() {
  using fe::QuadratureKind;
  return {&build_geom<dim, k, QuadratureKind::gll_k1, double, true, false, float>,
          &build_geom<dim, k, QuadratureKind::gauss_k2, double, true, false, float>};
}

}  // namespace tcfem::operators::cuda_core
