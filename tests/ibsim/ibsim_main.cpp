// main() of every ibsim test binary: re-executes itself with umad2sim
// preloaded (see README.md), then runs GoogleTest as usual.
#include <gtest/gtest.h>

#include "ibsim_harness.hpp"

int main(int argc, char** argv) {
  madengine::ibsim::reexec_with_shim(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
