// A reference bring-up done purely with SMPs through an endpoint, so the
// simulator's own tests and benchmarks can get a routed, ACTIVE fabric
// without the project's SM: DR discovery, sequential LIDs, min-hop LFTs,
// PortInfo (LID, SM LID) and INIT -> ARMED -> ACTIVE. Not the project's SM.
#pragma once

#include <cstdint>
#include <vector>

#include "madengine/wire/smp.hpp"
#include "sim/smp_client.hpp"

namespace madengine::sim {

struct DiscoveredNode {
  std::uint64_t guid = 0;
  bool is_switch = false;
  std::uint8_t num_ports = 0;
  wire::DrPath path;                // from the SM's port
  std::uint8_t entry_port = 0;      // port the discovery SMP entered by
  std::vector<std::uint32_t> peer;  // [port] -> discovered node index (or kNoNode)
  std::vector<std::uint8_t> peer_port;
  std::vector<std::uint16_t> lids;  // switch: [0]; CA: [port]
};

struct BringUpResult {
  bool ok = false;
  const char* error = "";
  std::vector<DiscoveredNode> nodes;
  std::uint16_t sm_lid = 0;
  std::uint16_t lid_max = 0;
  std::uint64_t smps = 0;  // SMPs sent
};

// Discovers the whole fabric from `client`'s port, then (when `program`)
// assigns LIDs, writes LFTs and activates every linked port.
BringUpResult bring_up(SmpClient& client, bool program = true);

}  // namespace madengine::sim
