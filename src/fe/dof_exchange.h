#pragma once
// The ghost exchange of the DoF vectors of a box partitioned into sub-boxes (mesh::Partition):
// which local entries a rank owns, which it holds as copies of other ranks' entries, and the
// messages between them. Built from the partition alone (every rank knows every rank's owned
// box), so setting it up needs no communication.
//  cg: the lattice node p (global lattice coordinates) belongs to the rank owning the cell
//      floor(p / k) in every direction (clipped to the last cell): a rank owns the nodes
//      [k b_d, k e_d) of its cells [b_d, e_d), and the upper ones k e_d where e_d is the last
//      cell; it stores the nodes of its ghosted cell box.
//  dg: a rank owns the DoFs of its owned cells and stores those of its ghosted cells.
// Messages between two ranks carry the entries of the intersection of one's stored box with the
// other's owned box, in global lexicographic order on both sides.
#include <memory>

#include "core/vector.h"
#include "fe/dof_layout.h"

namespace tcfem::fe {

/// The ghost layout of a DoF layout on a distributed mesh (the layout's partition names the ranks).
/// With exchange_width w (0 <= w < the ghost width) the messages fill only the ghosts of the
/// owned cells grown by w cells; the others keep their values (the GPU operator of a rank needs
/// the ghosts of one cell layer although it stores two); negative: every ghost.
template <int dim>
std::shared_ptr<const GhostLayout> make_dof_exchange(const mesh::Partition<dim>& partition, Disc disc, int degree,
                                                     int exchange_width = -1);

/// What a rank's exchange sends and receives, for reports and tests.
struct ExchangeSummary {
  int neighbours = 0;            ///< ranks this one exchanges with
  std::size_t ghost_entries = 0;  ///< local entries owned by other ranks
  std::size_t sent_entries = 0;   ///< entries sent by one forward exchange
  std::size_t owned_entries = 0;
};
ExchangeSummary summarize(const GhostLayout& layout);

}  // namespace tcfem::fe
