// libFuzzer target: the topology parser never crashes; whatever it accepts
// writes out and parses back to the same text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto topo = madengine::sim::parse_topology(text, "fuzz");
    const std::string once = madengine::sim::write_topology(topo);
    const std::string twice = madengine::sim::write_topology(madengine::sim::parse_topology(once, "fuzz-rt"));
    if (once != twice) __builtin_trap();
  } catch (const madengine::sim::TopologyError&) {
  }
  return 0;
}
