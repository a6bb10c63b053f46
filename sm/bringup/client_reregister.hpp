// Client reregistration (IBA 14.4.11): PortInfo.ClientReregister set on the
// CA ports whose clients must register again with our SA (services,
// multicast memberships, subscriptions). The SM asks once its sweep's
// snapshot is published: a client that reregisters at once then reaches an
// SA that knows its LID (which the sweep may have changed) over LFTs that
// route to the SA.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "engine/task.hpp"
#include "fabric/fabric.hpp"
#include "madengine/wire/smp.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm {

struct ReregisterAsk {
  std::uint8_t port_num = 1;  // local port SMPs leave from
  std::uint64_t m_key = 0;    // what bring-up left on every end port
  std::uint16_t sm_lid = 0;   // the SM LID bring-up wrote
  bool all = false;           // every CA port
  const std::unordered_set<std::uint64_t>* ports = nullptr;  // and these (CA port GUIDs); must outlive the call
};

struct ReregisterReport {
  std::uint32_t asked = 0;   // PortInfo Sets sent
  std::uint32_t acked = 0;   // answered without error
  std::uint32_t unable = 0;  // ports without IsClientReregistrationSupported: not asked
  std::uint32_t unsettled = 0;  // ports that do not hold what bring-up wrote (a Set lost): not asked yet
};

// Sets ClientReregister on the CA ports `ask` names, each through the path
// discovery reached it by (`ca_port_paths`, [node][port]), writing back the
// PortInfo the port holds (`f`, as programmed) with the state fields left
// unchanged. A port that does not hold the LID `f` gives it and our SM LID
// (bring-up's Set was lost) is not asked: that write would undo the next
// sweep's fix, and its clients could not reach our SA anyway.
Task<ReregisterReport> ask_clients_to_reregister(SmpQueue& q, const fabric::Fabric& f,
                                                 const std::vector<std::vector<wire::DrPath>>& ca_port_paths,
                                                 ReregisterAsk ask);

}  // namespace madengine::sm
