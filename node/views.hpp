// What the project's tools read of a node (NodeControl, control.hpp):
// plain copies of the SM's, SA's, engine's and journal's figures, filled in
// node/ (views.cpp) from the parts, so a tool depends on these fields only
// and never on an SM, SA or engine header. Private: not part of libmadengine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/sm_info.hpp"

namespace madengine::node {

// Where the SM is: each heavy sweep's phases as they begin, the publication
// that ends it, and a standby's replica round (a fault point for madsim).
enum class SmPhase : std::uint8_t { kDiscovery, kLids, kRouting, kProgramming, kPublished, kReplicaCopy };
const char* to_string(SmPhase p) noexcept;

// One heavy sweep, as the SM reports it.
struct SweepStats {
  std::uint64_t smps = 0;  // SMPs submitted by the whole sweep (retries not counted)
  std::uint32_t nodes = 0, switches = 0, cas = 0, links = 0;
  std::uint32_t discovery_errors = 0;
  std::uint32_t bringup_errors = 0;  // ports bring-up could not program
  std::string routing_engine;        // the engine of the chain that routed, or "routing hook"
  double discovery_s = 0, routing_s = 0, path_db_s = 0, programming_s = 0, total_s = 0;
  bool ok = false;
};

// The SM's SMP transactions (as it last copied them from its core).
struct SmpCounters {
  std::uint64_t sent = 0;  // transmissions, retries included
  std::uint64_t retried = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t failed = 0;  // timed out, refused by the transport, failed at a device loss
};

// SMInfo polling and handover (the HA agent).
struct HaCounters {
  std::uint64_t polls = 0, polls_failed = 0;
  std::uint64_t handovers_sent = 0;
};

// A standby's copies of the master's SA state.
struct ReplicaCounters {
  std::uint64_t rounds = 0;     // started
  std::uint64_t failed = 0;     // an error status, a malformed table or an RMPP abort
  std::uint64_t timed_out = 0;  // not complete within the round's time
  std::int64_t last_round_us = -1;  // the last complete round; -1: none
};

struct SmStatus {
  bool subnet_up = false;
  wire::SmState state = wire::SmState::kNotActive;
  std::uint16_t sm_lid = 0;    // the master's LID: ours as master, else what our port's MasterSMLID says
  std::uint16_t port_lid = 0;  // our own port's LID
  std::uint8_t priority = 0;   // our SMInfo priority
  std::uint64_t epoch = 0;
  std::uint64_t heavy_sweeps = 0;
  std::uint64_t light_sweeps = 0;
  std::uint64_t traps = 0;
  std::uint64_t ha_transitions = 0;
  std::uint64_t polled_guid = 0;  // the master a standby polls (0: none)
  HaCounters ha;
  ReplicaCounters replica;
  std::int64_t replica_age_ms = -1;  // age of the last complete replica image; -1: none
  SmpCounters smps;
  SweepStats last_heavy;
};

// Errors by status: [SA status code 1..7] = MAD status >> 8, then
// unsupported method or attribute (8) and a bad version or field (9).
inline constexpr std::size_t kSaErrorSlots = 10;

struct SaRecordCounters {
  std::uint64_t received = 0;
  std::uint64_t answered = 0;    // OK answers and error answers alike
  std::uint64_t busy = 0;        // answered BUSY without being admitted
  std::uint64_t dropped = 0;     // admitted but never answered: must stay 0
  std::uint64_t duplicates = 0;  // retried TIDs answered from the cache or absorbed while in work
  std::uint64_t ignored = 0;     // requests of a method without a response (Send...): nothing to answer
  std::array<std::uint64_t, kSaErrorSlots> errors{};
};

// One record type asked with one method (IBA 15.2.1.1).
struct SaRequestCounters {
  const char* record = "";  // "PathRecord", "ServiceRecord"... ("other": a type the SA does not serve)
  const char* method = "";  // "Get", "GetTable", "GetMulti", "Set", "Delete", "other"
  SaRecordCounters counters;
};

// Admission to answer of admitted queries (engine clock: simulated time on
// the sim). Bucket i holds answers up to bucket0_ns << i, not cumulative;
// the last one the rest.
struct SaLatency {
  std::vector<std::uint64_t> buckets;
  std::uint64_t bucket0_ns = 0;
  std::uint64_t count = 0;
  std::uint64_t sum_ns = 0;
};

struct SaCounters {
  std::vector<SaRequestCounters> by_request;  // every (record, method) pair the SA counts, in its order
  SaRecordCounters total;
  SaLatency latency;
  std::uint64_t rmpp_transfers = 0;
  std::uint64_t reports_sent = 0;
  std::uint64_t reports_failed = 0;
  std::uint64_t lease_expired = 0;
};

// One engine core's MAD counters.
struct EngineCoreCounters {
  std::uint16_t core = 0;
  std::uint64_t rx = 0;          // MADs received from this core's transports
  std::uint64_t tx = 0;          // MADs this core's transports accepted
  std::uint64_t ring_full = 0;   // hand-offs that found a ring full (back-pressure)
  std::uint64_t tx_full = 0;     // sends refused: transmit queue full or pool empty
  std::uint64_t malformed = 0;   // too short or bad base version
  std::uint64_t no_handler = 0;  // requests with no handler, responses with no hook
  std::uint64_t busy_loops_over_1ms = 0;  // iterations of work longer than 1 ms
  std::uint64_t busy_loop_max_ns = 0;     // the longest iteration that did work
};

struct EngineCounters {
  std::vector<EngineCoreCounters> cores;
};

// The SA journal's writes (warm restart, docs/ha.md) since start.
struct JournalCounters {
  std::uint64_t written = 0;
  std::uint64_t failed = 0;
};

// The registrations the SA holds, as its stores last published them.
struct ServiceHeld {
  std::uint64_t service_id = 0;
  wire::Gid service_gid{};
  Nanos expires_ns = -1;  // -1: an infinite lease
};
struct McGroupHeld {
  wire::Gid mgid{};
  std::vector<wire::Gid> members;  // port GIDs
};
struct SaRegistrations {
  std::vector<ServiceHeld> services;
  std::vector<McGroupHeld> groups;
  std::vector<wire::Gid> subscribers;  // one per InformInfo subscription
};

// What a reload did: one line per thing applied; every other key that
// changed, by its TOML name ("sm.routing"), which needs a restart.
struct ReloadResult {
  std::vector<std::string> applied;
  std::vector<std::string> restart_needed;
};

}  // namespace madengine::node
