#pragma once
// What the MPI unit tests share: the world communicator and a random seed equal on every rank.
#include <random>
#include <string>

#include "core/communicator.h"

namespace tcfem::test {

inline Communicator world() { return Communicator::world(); }

/// A fresh seed, rank 0's on every rank, so that every rank draws the same global vectors.
inline unsigned shared_seed() {
  std::string s = std::to_string(std::random_device{}());
  world().broadcast(s, 0);
  return unsigned(std::stoul(s));
}

}  // namespace tcfem::test
