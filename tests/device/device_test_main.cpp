// Entry point of the device tests: reports the device once, or that every test will skip.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/device.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto info = tcfem::query_device(0);
  if (!info.available) std::printf("no CUDA device: GPU tests skip (%s)\n", info.reason.c_str());
  return RUN_ALL_TESTS();
}
