// Heavy sweep: directed-route BFS from the SM's port. NodeInfo at each new
// path; on a new node NodeDescription, PortInfo of its ports and SwitchInfo;
// every switch port with a physical link is explored by extending the path.
// All requests share one SmpQueue window, so the phases overlap.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/task.hpp"
#include "fabric/fabric.hpp"
#include "sm/mkeys/mkey_book.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm {

struct DiscoveryResult {
  fabric::Fabric fabric;
  // [node][port]: the DR path that reaches a CA through that port (a CA's
  // SMA accepts a PortInfo Set only for the port the SMP arrived on).
  std::vector<std::vector<wire::DrPath>> ca_port_paths;
  fabric::NodeId local_node = fabric::kNoNode;  // the SM's own node
  std::uint8_t local_port = 0;
  std::uint64_t smps = 0;          // SMPs this sweep submitted
  std::uint32_t errors = 0;        // SMPs that failed (timeout or bad status)
  std::uint32_t duplicate_paths = 0;  // NodeInfo answers from nodes already known
  std::unordered_map<std::uint64_t, fabric::NodeId> by_guid;
  // M_Keys learned (by end-port GUID): what a PortInfo Get showed (protection
  // level 0, or the right key presented), or the key a port answered only to.
  Guid2Mkey port_mkeys;
  // End ports that hid their M_Key behind protection from the key we sent
  // (IBA 14.2.4.1: a Get with the wrong key at level 1 reads it as 0): the
  // key we thought they hold is not theirs.
  std::vector<std::uint64_t> port_mkeys_wrong;
  // Switches whose SwitchInfo.PortStateChange was set (not cleared when
  // DiscoveryOptions::clear_port_state_change is false).
  std::vector<fabric::NodeId> port_state_changed;
  std::uint32_t links() const noexcept;
  // The base LID every end port reported (fabric.end_ports() order): assign_lids' `current`.
  std::vector<std::uint16_t> current_lids() const;
};

struct DiscoveryOptions {
  std::uint8_t port_num = 1;  // the local port SMPs leave from
  std::uint64_t m_key = 0;    // without `keys`: every SMP's M_Key
  // With `keys`: each SMP carries the key its port holds (the one the book
  // has for it, by GUID or by the path it was last found at), and an SMP
  // left unanswered (a protected port: IBA 14.2.4.1) is sent again with the
  // book's other keys. Must outlive discover().
  const MKeyBook* keys = nullptr;
  // Clear each PortStateChange the sweep reads (write 1, IBA 14.2.5.4).
  // False leaves them for the SM that acts on the sweep: one that stands by
  // (or defers to another master) must not hide a change from the master's
  // light sweep.
  bool clear_port_state_change = true;
};

// A physical link (IBA 14.2.5.6: PortPhysicalState LinkUp, or a logical
// state at least INIT).
bool has_link(const wire::PortInfo& pi) noexcept;
// A port's fields (state, width, speed, MTU, VLs, LIDs) from its PortInfo as read.
void apply_port_info(fabric::Node& n, std::uint8_t port, const wire::PortInfo& pi) noexcept;

// Runs one heavy sweep on `q` (which must be idle) and returns the fabric.
Task<DiscoveryResult> discover(SmpQueue& q, DiscoveryOptions opts);

// What clearing the PortStateChange bits found: the SMPs it sent, and the
// first port of those switches that moved since discovery read it.
struct PortStateRecheck {
  std::uint32_t smps = 0;
  bool moved = false;
  std::string what;  // the first port that moved
};

// Clears the PortStateChange bits `d` found (submitted on `q`, not awaited),
// then reads each cleared switch's ports again: a link that changed between
// discovery's read and the clear left no bit behind, so only the ports tell.
// Linked ports in INIT or ARMED are not read: bring-up's PortInfo Set to
// each, after the clears, answers with its state (OpenSM reads none again).
// The result fills in as the answers arrive (once `q` drained, it is final).
std::shared_ptr<PortStateRecheck> clear_port_state_changes(SmpQueue& q, const DiscoveryResult& d,
                                                           const DiscoveryOptions& opts);

}  // namespace madengine::sm
