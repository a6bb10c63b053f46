// The tools' views (views.hpp) copied from the SM's, SA's and engine's own
// figures: the one place that knows both shapes.
#include "node/view_fill.hpp"

namespace madengine::node {

static_assert(kSaErrorSlots == sa::kErrSlots, "an SA error slot the view does not carry");
static_assert(static_cast<int>(SmPhase::kReplicaCopy) == static_cast<int>(sm::SmPhase::kReplicaCopy),
              "the SM's phases and the view's differ");

const char* to_string(SmPhase p) noexcept {
  return sm::to_string(static_cast<sm::SmPhase>(p));  // the same phases (asserted above), named once
}

SmPhase phase_view(sm::SmPhase p) noexcept {
  switch (p) {
    case sm::SmPhase::kDiscovery: return SmPhase::kDiscovery;
    case sm::SmPhase::kLids: return SmPhase::kLids;
    case sm::SmPhase::kRouting: return SmPhase::kRouting;
    case sm::SmPhase::kProgramming: return SmPhase::kProgramming;
    case sm::SmPhase::kPublished: return SmPhase::kPublished;
    case sm::SmPhase::kReplicaCopy: return SmPhase::kReplicaCopy;
  }
  return SmPhase::kDiscovery;
}

namespace {

SweepStats sweep_view(const sm::SweepStats& h) {
  SweepStats v;
  v.smps = h.smps;
  v.nodes = h.nodes;
  v.switches = h.switches;
  v.cas = h.cas;
  v.links = h.links;
  v.discovery_errors = h.discovery_errors;
  v.bringup_errors = h.bringup.errors;
  v.routing_engine = h.routing_engine;
  v.discovery_s = h.discovery_s;
  v.routing_s = h.routing_s;
  v.path_db_s = h.path_db_s;
  v.programming_s = h.programming_s;
  v.total_s = h.total_s;
  v.ok = h.ok;
  return v;
}

SaRecordCounters record_view(const sa::SaRecordCounters& r) {
  SaRecordCounters v;
  v.received = r.received;
  v.answered = r.answered;
  v.busy = r.busy;
  v.dropped = r.dropped;
  v.duplicates = r.duplicates;
  v.ignored = r.ignored;
  v.errors = r.errors;
  return v;
}

}  // namespace

SmStatus sm_status_view(const sm::SmStatus& s) {
  SmStatus v;
  v.subnet_up = s.subnet_up;
  v.state = s.state;
  v.sm_lid = s.sm_lid;
  v.port_lid = s.port_lid;
  v.priority = s.priority;
  v.epoch = s.epoch;
  v.heavy_sweeps = s.heavy_sweeps;
  v.light_sweeps = s.light_sweeps;
  v.traps = s.traps;
  v.ha_transitions = s.ha_transitions;
  v.polled_guid = s.polled_guid;
  v.ha = {.polls = s.ha.polls, .polls_failed = s.ha.polls_failed, .handovers_sent = s.ha.handovers_sent};
  v.replica = {.rounds = s.replica.rounds, .failed = s.replica.failed, .timed_out = s.replica.timed_out,
               .last_round_us = s.replica.last_round_us};
  v.replica_age_ms = s.replica_age_ms;
  std::uint64_t failed = s.smps.timed_out + s.smps.send_failed;
  for (const std::uint64_t f : s.smps.failed_by) failed += f;
  v.smps = {.sent = s.smps.sent, .retried = s.smps.retried, .timed_out = s.smps.timed_out, .failed = failed};
  v.last_heavy = sweep_view(s.last_heavy);
  return v;
}

SaCounters sa_counters_view(const sa::SaCounters& c) {
  SaCounters v;
  v.by_request.reserve(sa::kSaRecordKinds * sa::kSaMethodKinds);
  for (std::size_t k = 0; k < sa::kSaRecordKinds; ++k)
    for (std::size_t m = 0; m < sa::kSaMethodKinds; ++m)
      v.by_request.push_back(SaRequestCounters{.record = sa::to_string(static_cast<sa::SaRecordKind>(k)),
                                               .method = sa::to_string(static_cast<sa::SaMethodKind>(m)),
                                               .counters = record_view(c.by_kind_method[k][m])});
  v.total = record_view(c.total());
  v.latency.buckets.assign(c.latency.buckets.begin(), c.latency.buckets.end());
  v.latency.bucket0_ns = sa::kSaLatencyBucket0Ns;
  v.latency.count = c.latency.count;
  v.latency.sum_ns = c.latency.sum_ns;
  v.rmpp_transfers = c.rmpp_transfers;
  v.reports_sent = c.reports_sent;
  v.reports_failed = c.reports_failed;
  v.lease_expired = c.lease_expired;
  return v;
}

EngineCounters engine_view(const EngineStats& e) {
  EngineCounters v;
  v.cores.reserve(e.cores.size());
  for (const CoreSnapshot& c : e.cores)
    v.cores.push_back(EngineCoreCounters{.core = c.core, .rx = c.counters.rx, .tx = c.counters.tx,
                                         .ring_full = c.counters.ring_full, .tx_full = c.counters.tx_full,
                                         .malformed = c.counters.malformed, .no_handler = c.counters.no_handler,
                                         .busy_loops_over_1ms = c.counters.busy_loops_over_1ms,
                                         .busy_loop_max_ns = c.counters.busy_loop_max_ns});
  return v;
}

SaRegistrations registrations_view(const sa::SaStateImage& img) {
  SaRegistrations v;
  v.services.reserve(img.services.size());
  for (const sa::ServiceEntry& e : img.services)
    v.services.push_back(ServiceHeld{.service_id = e.rec.service_id.get(), .service_gid = e.rec.service_gid,
                                     .expires_ns = e.expires_ns});
  v.groups.reserve(img.groups.size());
  for (const sa::McGroupEntry& g : img.groups) {
    McGroupHeld h{.mgid = g.params.mgid, .members = {}};
    h.members.reserve(g.members.size());
    for (const sa::McMember& m : g.members) h.members.push_back(m.port_gid);
    v.groups.push_back(std::move(h));
  }
  v.subscribers.reserve(img.subscriptions.size());
  for (const sa::Subscription& s : img.subscriptions) v.subscribers.push_back(s.subscriber);
  return v;
}

}  // namespace madengine::node
