#pragma once
// What every MPI test program shares: a random seed equal on every rank, and the end of its main
// (one report, rank 0's; every rank exits with the worst result of all).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/communicator.h"

namespace tcfem::test {

/// A fresh seed, rank 0's on every rank, so that every rank draws the same global vectors.
inline unsigned shared_seed() {
  std::string s = std::to_string(std::random_device{}());
  Communicator::world().broadcast(s, 0);
  return unsigned(std::stoul(s));
}

/// RUN_ALL_TESTS on every rank of comm, printed by rank 0 only (a failure on another rank still
/// fails its exit code); the worst exit code of every rank.
inline int run_all_tests_on_every_rank(const Communicator& comm) {
  if (comm.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  return int(comm.max(static_cast<long long>(rc)));
}

}  // namespace tcfem::test
