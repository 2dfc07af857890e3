// The ghost exchange of device vectors across MPI ranks, one GPU each (ctest labels gpu;mpi; every
// test skips where a rank has no usable GPU): every path this build and machine offer (host-staged,
// CUDA IPC between the ranks of one host, NCCL, CUDA-aware MPI), doubles and floats, cg and dg in 2D
// and 3D, against the host exchange of the same layout (the CPU reference) on fresh random owned
// entries with poisoned ghosts; the exchange in two halves around other exchanges; and chains of
// exchanges whose inputs are made on the device between them (what a solver does), which catch a
// buffer reused before its messages completed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "core/device.h"
#include "core/device_buffer.h"
#include "core/device_exchange.h"
#include "fe/dof_exchange.h"
#include "fe/dof_layout.h"
#include "mesh/box_mesh.h"
#include "../unit/mpi_gtest.h"

namespace tcfem {
namespace {

bool gpus_on_every_rank = false;

Communicator world() { return Communicator::world(); }
using test::shared_seed;

/// The paths this run can take.
std::vector<ExchangePath> paths() {
  const auto comm = world();
  std::vector<ExchangePath> out{ExchangePath::host_staged};
  if (comm.min(static_cast<long long>(comm.local_size() == comm.size())) == 1) out.push_back(ExchangePath::cuda_ipc);
  if (nccl_available()) out.push_back(ExchangePath::nccl);
  if (mpi_device_aware()) out.push_back(ExchangePath::device_mpi);
  return out;
}

/// v <- 2 v + 1 on owned entries (mask 1), NaN on ghosts: the next input of a chain.
template <typename T>
__global__ void next_input(T* v, const std::uint8_t* mask, std::int64_t n, T poison) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i < n) v[i] = mask[i] ? T(2) * v[i] + T(1) : poison;
}

template <typename T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  // equal, or NaN both (the outer ghost layer, which no exchange of one cell layer writes)
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(got[i] == want[i] || (std::isnan(double(got[i])) && std::isnan(double(want[i])))) << what << ": entry " << i << " on rank " << world().rank() << ": " << got[i]
                                   << " instead of " << want[i];
}

/// A layout's owned entries: what the host exchange's zero_ghosts leaves.
std::vector<std::uint8_t> owned_of(const GhostLayout& layout) {
  std::vector<double> ones(layout.n_local(), 1.0);
  layout.zero_ghosts(ones.data());
  std::vector<std::uint8_t> owned(ones.size());
  for (std::size_t i = 0; i < ones.size(); ++i) owned[i] = ones[i] != 0.0;
  return owned;
}

template <typename T>
std::vector<T> random_input(const GhostLayout& layout, std::mt19937& rng) {
  const auto owned = owned_of(layout);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(layout.n_local());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = owned[i] ? T(u(rng)) : std::numeric_limits<T>::quiet_NaN();
  return v;
}

template <int dim, typename T>
void check_paths(fe::Disc disc, int degree, const std::array<int, dim>& cells, int ghost_width) {
  if (!gpus_on_every_rank) GTEST_SKIP() << "no usable GPU on every rank";
  const auto comm = world();
  const auto part = mesh::Partition<dim>::distributed(cells, comm, ghost_width);
  const auto layout = fe::make_dof_exchange<dim>(part, disc, degree, 1);
  // the device's mask of owned entries agrees with the host layout's
  std::mt19937 rng(shared_seed() + unsigned(comm.rank()));
  for (const ExchangePath path : paths()) {
    SCOPED_TRACE(to_string(path));
    DeviceGhostExchange exchange(*layout, path);
    ASSERT_EQ(exchange.path(), path);
    std::vector<std::uint8_t> mask(layout->n_local());
    cudaMemcpy(mask.data(), exchange.owned_mask(), mask.size(), cudaMemcpyDeviceToHost);
    expect_same(mask, owned_of(*layout), "owned mask");

    // one exchange, whole and in two halves
    for (const bool halves : {false, true}) {
      const auto input = random_input<T>(*layout, rng);
      auto want = input;
      layout->update_ghosts(want.data());
      DeviceBuffer<T> v(input);
      if (halves) {
        exchange.begin_update(v.data());
        exchange.end_update(v.data());
      } else {
        exchange.update_ghosts(v.data());
      }
      expect_same(v.to_host(), want, halves ? "begin/end" : "update_ghosts");
    }

    // a chain of exchanges with inputs made on the device between them
    const int rounds = 25;
    const auto input = random_input<T>(*layout, rng);
    auto want = input;
    const auto owned = owned_of(*layout);
    layout->update_ghosts(want.data());
    DeviceBuffer<T> v(input);
    exchange.update_ghosts(v.data());
    const std::int64_t n = std::int64_t(want.size());
    for (int r = 0; r < rounds; ++r) {
      next_input<<<int((n + 255) / 256), 256>>>(v.data(), exchange.owned_mask(), n,
                                                std::numeric_limits<T>::quiet_NaN());
      TCFEM_CUDA_CHECK_LAUNCH();
      if (r % 2) {
        exchange.begin_update(v.data());
        exchange.end_update(v.data());
      } else {
        exchange.update_ghosts(v.data());
      }
      for (std::size_t i = 0; i < want.size(); ++i)
        want[i] = owned[i] ? T(2) * want[i] + T(1) : std::numeric_limits<T>::quiet_NaN();
      layout->update_ghosts(want.data());
    }
    expect_same(v.to_host(), want, "chain of " + std::to_string(rounds) + " exchanges");
    EXPECT_EQ(exchange.calls(), 3 + rounds);
  }
}

TEST(DeviceExchange, CgDoubles3D) { check_paths<3, double>(fe::Disc::cg, 3, {5, 4, 6}, 2); }
TEST(DeviceExchange, CgFloats3D) { check_paths<3, float>(fe::Disc::cg, 2, {4, 6, 5}, 2); }
TEST(DeviceExchange, DgDoubles3D) { check_paths<3, double>(fe::Disc::dg, 2, {3, 5, 4}, 2); }
TEST(DeviceExchange, CgDoubles2D) { check_paths<2, double>(fe::Disc::cg, 4, {7, 5}, 2); }
TEST(DeviceExchange, DgFloats2D) { check_paths<2, float>(fe::Disc::dg, 3, {6, 6}, 2); }

/// Two exchanges of different layouts (vectors of doubles and of floats, cg and dg) in halves,
/// one inside the other: what a multigrid level transfer and an apply do.
TEST(DeviceExchange, NestedHalvesOfTwoLayouts) {
  if (!gpus_on_every_rank) GTEST_SKIP() << "no usable GPU on every rank";
  const auto comm = world();
  const std::array<int, 3> cells{6, 5, 4};
  const auto part = mesh::Partition<3>::distributed(cells, comm, 2);
  const auto a = fe::make_dof_exchange<3>(part, fe::Disc::cg, 2, 1);
  const auto b = fe::make_dof_exchange<3>(part, fe::Disc::dg, 1, 1);
  std::mt19937 rng(shared_seed() + unsigned(comm.rank()));
  for (const ExchangePath path : paths()) {
    SCOPED_TRACE(to_string(path));
    DeviceGhostExchange ea(*a, path), eb(*b, path);
    for (int round = 0; round < 4; ++round) {
      const auto in_a = random_input<double>(*a, rng);
      const auto in_b = random_input<float>(*b, rng);
      auto want_a = in_a;
      auto want_b = in_b;
      a->update_ghosts(want_a.data());
      b->update_ghosts(want_b.data());
      DeviceBuffer<double> va(in_a);
      DeviceBuffer<float> vb(in_b);
      ea.begin_update(va.data());
      eb.begin_update(vb.data());
      eb.end_update(vb.data());
      ea.end_update(va.data());
      expect_same(va.to_host(), want_a, "outer exchange");
      expect_same(vb.to_host(), want_b, "inner exchange");
    }
  }
}

TEST(DeviceExchange, PathsOfThisRun) {
  if (!gpus_on_every_rank) GTEST_SKIP() << "no usable GPU on every rank";
  const auto comm = world();
  // the default is one of the paths offered, and the same on every rank
  const ExchangePath d = default_exchange_path(comm);
  const auto offered = paths();
  EXPECT_NE(std::find(offered.begin(), offered.end(), d), offered.end());
  EXPECT_EQ(comm.min(static_cast<long long>(d)), comm.max(static_cast<long long>(d)));
  const bool one_host = comm.min(static_cast<long long>(comm.local_size() == comm.size())) == 1;
  if (one_host) EXPECT_EQ(d, ExchangePath::cuda_ipc);
  if (nccl_available()) {
    if (!one_host) EXPECT_EQ(d, ExchangePath::nccl);
    EXPECT_FALSE(nccl_version().empty());
  } else {
    EXPECT_THROW(choose_exchange_path(comm, ExchangePath::nccl), InputError);
  }
  if (!mpi_device_aware()) EXPECT_THROW(choose_exchange_path(comm, ExchangePath::device_mpi), InputError);
}

}  // namespace
}  // namespace tcfem

int main(int argc, char** argv) {
  tcfem::MpiSession mpi(argc, argv, tcfem::mpi_available());
  ::testing::InitGoogleTest(&argc, argv);
  const auto comm = tcfem::Communicator::world();
  tcfem::set_process_device(comm.local_rank());
  const auto info = tcfem::query_device();
  tcfem::gpus_on_every_rank = comm.min(static_cast<long long>(info.available)) == 1;
  if (comm.rank() == 0) {
    if (!tcfem::gpus_on_every_rank)
      std::printf("not every rank has a usable CUDA device: GPU tests skip (rank 0: %s)\n",
                  info.available ? info.name.c_str() : info.reason.c_str());
    else
      std::printf("%d ranks, one GPU each (%s); NCCL %s\n", comm.size(), info.name.c_str(),
                  tcfem::nccl_available() ? tcfem::nccl_version().c_str() : "not in this build");
  }
  return tcfem::test::run_all_tests_on_every_rank(comm);
}
