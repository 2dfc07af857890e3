#pragma once
// The Dirichlet faces of a box as six bits, for kernels: bit 2 d is the lower face of direction d,
// bit 2 d + 1 the upper one (fe::DirichletFaces numbers the faces the same way). A cg lattice node
// is constrained when it lies on a face whose bit is set.
#include <cstdint>

#include "core/hd.h"

namespace tcfem::fe {

/// Every face Dirichlet.
constexpr unsigned all_dirichlet_bits = 0x3fu;

/// Whether lattice coordinate p (of n nodes along direction d) lies on a Dirichlet face.
TCFEM_HD inline bool on_dirichlet_face(std::int64_t p, std::int64_t n, int d, unsigned bits) {
  return (p == 0 && ((bits >> (2 * d)) & 1u)) || (p == n - 1 && ((bits >> (2 * d + 1)) & 1u));
}

/// The bits of a face list of 2 dim entries (fe::DirichletFaces).
template <class Faces>
unsigned dirichlet_bits(const Faces& faces) {
  unsigned bits = 0;
  for (std::size_t f = 0; f < faces.size(); ++f) bits |= faces[f] ? (1u << f) : 0u;
  return bits;
}

}  // namespace tcfem::fe
