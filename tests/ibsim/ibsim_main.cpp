// main() of every ibsim test binary: re-executes itself with umad2sim
// preloaded (see README.md), then runs GoogleTest as usual. Built with
// MADENGINE_IBSIM_SELF_LAYERED=1 (madengine_ibsim_test's SELF_LAYERED), the
// RMPP layer is preloaded before the shim too.
#include <gtest/gtest.h>

#include "ibsim_harness.hpp"

#ifndef MADENGINE_IBSIM_SELF_LAYERED
#define MADENGINE_IBSIM_SELF_LAYERED 0
#endif

int main(int argc, char** argv) {
  madengine::ibsim::reexec_with_shim(argc, argv, MADENGINE_IBSIM_SELF_LAYERED != 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
