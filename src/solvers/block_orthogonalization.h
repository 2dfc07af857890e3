#pragma once
// Block orthogonalization of a vector against the columns of a basis, written as block products
// (the "multi-BLAS" of seed 001): c = V^T w is one GEMV over all basis vectors, not a loop of
// dot products, and w -= V c is one more. On the CPU through BLAS dgemv; a device version maps
// the same two calls to cuBLAS (or a tensor-core GEMM for several vectors at once).
#include <cstdint>

#include "core/communicator.h"

namespace tcfem::solvers {

/// Basis of k vectors of length n, column-major (column j starts at data + j * ld).
struct BlockBasis {
  const double* data = nullptr;
  std::int64_t n = 0, k = 0, ld = 0;
};

/// c = V^T w (c has k entries).
void block_dot(const BlockBasis& v, const double* w, double* c);
/// w -= V c.
void block_subtract(const BlockBasis& v, const double* c, double* w);

/// Classical Gram-Schmidt with one re-orthogonalization (CGS2): w <- (I - V V^T)^2 w, and
/// h = the accumulated coefficients (k entries, h = c1 + c2). `c2` is scratch of k + 1 entries.
/// Returns ||w|| after orthogonalization, from ||w||^2 before the second pass minus the second
/// pass's coefficients squared (summed with them), or summed again where w lay nearly in the span
/// of V. Distributed (comm with several ranks): V and w hold this rank's entries with every ghost
/// entry zero, and the products are summed over the ranks: two reductions (the first pass's k
/// values, the second pass's k values with ||w||^2), a third only in that near-dependent case.
double orthogonalize_cgs2(const BlockBasis& v, double* w, double* h, double* c2,
                          const Communicator& comm = Communicator());

}  // namespace tcfem::solvers
