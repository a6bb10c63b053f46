// What one heavy sweep carries from phase to phase (heavy_sweep.cpp):
// the fabric found, the election's decision, the LIDs, the routes and the
// snapshot being built, and the figures reported at its end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "madengine/engine/transport.hpp"
#include "sa/snapshot.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/ha/ha_agent.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/sm.hpp"
#include "sm/tables/tables.hpp"

namespace madengine::sm {

struct HeavySweep {
  Nanos t0 = 0;               // engine clock at the start
  std::uint64_t smps0 = 0;    // SMPs submitted before the sweep
  LocalPort lp{};
  std::uint32_t losses0 = 0;  // device losses before the sweep: another one makes it stale
  wire::SmState began_as = wire::SmState::kNotActive;  // our HA state as the sweep began
  SweepStats st;
  DiscoveryOptions dopts{};
  DiscoveryResult d;
  Nanos t1 = 0;  // discovery done
  ha::SweepDecision decision;
  std::shared_ptr<const PortStateRecheck> recheck;
  std::vector<std::uint16_t> current_lids;  // as the ports hold them (or the last fabric knew them)
  Guid2Lid first_reading;  // the LIDs the first of two readings (a takeover's) found
  LidAssignReport lids;
  std::shared_ptr<fabric::Fabric> fab;  // the fabric while routing owns it
  std::optional<Routed> routed;
  std::shared_ptr<sa::Snapshot> snap;
  Nanos t4 = 0;  // programming starts
  const QosConfig* vl_tables = nullptr;  // SL2VL/VLArb programmed: QoS, a layered routing's, or none
  bool tables_wait = false;  // ports refused our M_Key: the port tables wait for the next sweep
  TablesReport tables;
};

}  // namespace madengine::sm
