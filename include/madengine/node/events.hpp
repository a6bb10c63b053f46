// What a node tells its embedder as it happens: subnet up, SMInfo state
// changes (HA), the traps and notices the SM receives or raises, and ports
// that changed between two published epochs. All are called on the node's
// event thread, one at a time and in order (docs/embedding.md, threading);
// what happened before Node::stop() is delivered before it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "madengine/wire/smp/notice.hpp"
#include "madengine/wire/smp/sm_info.hpp"

namespace madengine::node {

// A port whose LID or state differs between two published epochs. A port
// that appeared has old_state 0; one that vanished has new_state 0 (IBA
// PortState codes otherwise: 1 Down, 2 Init, 3 Armed, 4 Active). The first
// epoch reports none: read the fabric at subnet up.
struct PortChange {
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint8_t port_num = 0;  // a switch's external ports share its port 0's GUID
  bool is_switch = false;
  std::uint16_t old_lid = 0, new_lid = 0;
  std::uint8_t old_state = 0, new_state = 0;
  std::uint64_t epoch = 0;    // the epoch that shows the change
};

struct NodeEvents {
  // The subnet came up: once, at the end of the first heavy sweep that
  // programmed the fabric (a standby's takeover counts).
  std::function<void(std::uint64_t epoch)> subnet_up;
  // Every SMInfo state change of our SM (NOTACTIVE, DISCOVERING, STANDBY, MASTER).
  std::function<void(wire::SmState from, wire::SmState to)> sm_state;
  // Every trap an SMA sent the SM (after it was repressed) and traps 64/65
  // for end ports a sweep found in or out of service: what the SA's
  // InformInfo subscribers get as Reports.
  std::function<void(const wire::Notice& notice)> notice;
  std::function<void(const PortChange& change)> port_change;
  // Notices and state changes waiting for the event thread; more are
  // dropped and counted (NodeStatus::events_dropped).
  std::size_t queue_max = 4096;
  // How often the event thread looks for subnet up and a new epoch when
  // nothing woke it.
  std::uint32_t poll_ms = 20;
};

}  // namespace madengine::node
