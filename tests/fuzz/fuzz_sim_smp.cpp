// libFuzzer target: any 256 bytes sent from an endpoint (DR or LID-routed
// SMP, GMP, garbage) are forwarded, answered or dropped with a reason; the
// fabric never crashes and nothing stays in flight.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sim/fabric.hpp"
#include "sim/generators.hpp"

namespace {
madengine::sim::Fabric& fabric() {
  static madengine::sim::Fabric f(madengine::sim::make_fat_tree_2level({4}));
  return f;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace madengine;
  auto& f = fabric();
  static const sim::EndpointId ep = f.attach(f.find_node("host-0-0"), 1, AgentSpec{.smi = true, .gsi_client = true});
  if (size < 2) return 0;
  MadBuf b;
  b.addr.lid = static_cast<std::uint16_t>(data[0] << 8 | data[1]);
  std::memcpy(b.mad.bytes.data(), data + 2, std::min(size - 2, b.mad.bytes.size()));
  f.send(ep, b);
  while (!f.idle()) f.run_until(f.next_event_ns());
  MadBuf in;
  MadBuf* one[1] = {&in};
  while (f.receive(ep, one) == 1) {
  }
  return 0;
}
