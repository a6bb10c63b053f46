// Failover and handover times of two madengine SubnetManagers, each with its
// SaServer, on the sim transport (simulated time: 1 us per SMA answer, 100 ns
// per hop; LIDs, routing and path database are wall time added on top, as in
// bring-up).
//   failover_bench ft2:36 100 3      (648 hosts, polls every 100 ms, 3 retries)
//   failover_bench ft3:36:36 100 3   (11,664 hosts)
//   failover_bench ft3:36:36 100 3 2 (routing and path database on 2 threads)
//   failover_bench ft2:36 100 3 1 500 (standby replicates the SA every 500 ms; default 1000)
// Before the kill, 256 hosts register a ServiceRecord each and 2 join a
// multicast group at the master, and the standby replicates them.
// failover: the master's node dies -> the standby publishes its first
//   snapshot as master; -> a probe's ServiceRecord Get sent to the standby's
//   LID every simulated millisecond is first answered with the record
//   registered at the old master (SA answering, state intact); then until
//   the fabric is reprogrammed with the new SM LID.
// handover: a higher-priority SM starts on a managed fabric -> it publishes
//   as master and the old master is STANDBY.
// Prints a table and one JSON line per run. Results: docs/perf/ha.md.
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cstring>
#include <optional>

#include "engine/engine.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/host.hpp"
#include "sim/sim_transport.hpp"
#include "sm/sm.hpp"
#include "sm_sa_node.hpp"

namespace {

using namespace madengine;


using SmNode = node::InternalNode;

struct Rig {
  sim::Fabric fabric;
  std::vector<std::unique_ptr<SmNode>> sms;
  std::vector<std::unique_ptr<sim::Host>> hosts;
  std::uint32_t poll_ms, retries, replica_ms;
  unsigned threads;
  Rig(const sim::Topology& t, std::uint32_t poll, std::uint32_t r, unsigned th, std::uint32_t rep)
      : fabric(t, sim::FabricConfig{.seed = 1}), poll_ms(poll), retries(r), replica_ms(rep), threads(th) {}
  ~Rig() {
    hosts.clear();
    sms.clear();
  }
  SmNode& node(std::size_t i) { return *sms[i]; }
  sm::SubnetManager& add(std::uint32_t node, std::uint8_t prio) {
    node::NodeConfig cfg = testing::sim_node_config();
    cfg.sm.priority = prio;
    cfg.sm.sm_key = 1;
    cfg.sm.ha_poll_interval_ms = poll_ms;
    cfg.sm.ha_poll_retries = retries;
    cfg.sm.sweep_interval_ms = 10'000;
    cfg.sm.routing_threads = threads;
    cfg.sm.ha_replica_interval_ms = replica_ms;
    sms.push_back(testing::make_sm_sa_node(fabric, node, cfg, true));
    return sms.back()->sm();
  }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      std::size_t work = 0;
      for (auto& s : sms) work += s->engine().poll_all_once();
      for (auto& h : hosts) work += h->poll();
      if (work == 0) fabric.advance(kNanosPerMilli / 10);
    }
    return pred();
  }
};

sim::Topology make(const std::string& spec, std::string& err) {
  unsigned k = 0, pods = 0;
  if (std::sscanf(spec.c_str(), "ft3:%u:%u", &k, &pods) == 2) return sim::make_fat_tree_3level({.k = k, .pods = pods});
  if (std::sscanf(spec.c_str(), "ft2:%u", &k) == 1) return sim::make_fat_tree_2level({.k = k});
  err = "fabric spec must be ft2:K or ft3:K:PODS";
  return {};
}

std::pair<std::uint32_t, std::uint32_t> two_hosts(const sim::Fabric& f) {
  std::uint32_t first = 0, last = f.node_count() - 1;
  while (f.is_switch(first)) ++first;
  while (f.is_switch(last)) --last;
  return {first, last};
}

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

wire::Gid gid_of(const sim::Fabric& f, std::uint32_t node) {
  return {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(f.port_guid(f.port(node, 1)))};
}

constexpr std::uint64_t kServiceIdBase = 0x0020'0000'0000'0000ull;
constexpr std::uint32_t kServicesMax = 256;

// `count` hosts other than the skipped ones (the SMs', the probe's) register a ServiceRecord each
// (lease 3600 s); the first two join one multicast group. False if the SA
// refused or did not answer one.
bool register_state(Rig& rig, std::uint32_t count, std::uint32_t skip_a, std::uint32_t skip_b, std::uint32_t skip_c) {
  namespace scm = wire::service_record_cm;
  namespace mcm = wire::mc_member_record_cm;
  std::uint32_t registered = 0;
  for (std::uint32_t n = 0; n < rig.fabric.node_count() && registered < count; ++n) {
    if (rig.fabric.is_switch(n) || n == skip_a || n == skip_b || n == skip_c) continue;
    rig.hosts.push_back(std::make_unique<sim::Host>(rig.fabric, n));
    sim::Host& h = *rig.hosts.back();
    wire::ServiceRecord r{};
    r.service_id = wire::be64::from(kServiceIdBase + registered);
    r.service_gid = gid_of(rig.fabric, n);
    r.service_pkey = wire::be16::from(0xffff);
    r.service_lease = wire::be32::from(3600);
    r.set_name("failover.bench");
    auto ask = [&](std::uint8_t method, std::uint16_t attr, std::uint64_t mask, const void* rec, std::size_t len) {
      const auto tid = h.query(method, attr, mask, {static_cast<const std::uint8_t*>(rec), len});
      if (!tid) return false;
      std::optional<MadBuf> got;
      rig.run_until([&] { return (got = h.take_response(*tid)).has_value(); }, 1000);
      return got.has_value() && got->hdr().status.get() == 0;
    };
    if (!ask(wire::method::kSet, wire::sa_attr::kServiceRecord,
             scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease | scm::kServiceName, &r, sizeof r))
      return false;
    if (registered < 2) {
      wire::McMemberRecord j{};
      j.mgid = {wire::be64::from(0xff12401bffff0000ull), wire::be64::from(0x0000000000000bbbull)};
      j.port_gid = gid_of(rig.fabric, n);
      j.qkey = wire::be32::from(0x0b1b);
      j.pkey = wire::be16::from(0xffff);
      j.set_join_state(1);
      if (!ask(wire::method::kSet, wire::sa_attr::kMcMemberRecord,
               mcm::kMGid | mcm::kPortGid | mcm::kJoinState | mcm::kQKey | mcm::kPKey | mcm::kSl | mcm::kFlowLabel |
                   mcm::kTClass,
               &j, sizeof j))
        return false;
    }
    ++registered;
  }
  return registered == count;
}

// A ServiceRecord Get (by ServiceID: the first registered service) to `lid`.
MadBuf probe_query(std::uint16_t lid, std::uint64_t tid) {
  MadBuf b{};
  auto& sa = b.as<wire::SaMad>();
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = wire::method::kGet;
  sa.hdr.tid = wire::be64::from(tid);
  sa.hdr.attr_id = wire::be16::from(wire::sa_attr::kServiceRecord);
  sa.comp_mask = wire::be64::from(wire::service_record_cm::kServiceId);
  wire::ServiceRecord r{};
  r.service_id = wire::be64::from(kServiceIdBase);
  std::memcpy(sa.data.data(), &r, sizeof r);
  b.len = wire::kMadSize;
  b.addr.lid = lid;
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ft2:K|ft3:K:PODS POLL_MS RETRIES [THREADS]\n", argv[0]);
    return 2;
  }
  std::string err;
  const std::string spec = argv[1];
  const auto topo = make(spec, err);
  if (!err.empty()) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 2;
  }
  const auto poll = static_cast<std::uint32_t>(std::atoi(argv[2]));
  const auto retries = static_cast<std::uint32_t>(std::atoi(argv[3]));
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::max(1, std::atoi(argv[4]))) : 1;  // routing and path db
  const auto replica_ms = argc > 5 ? static_cast<std::uint32_t>(std::max(10, std::atoi(argv[5]))) : 1000u;
  if (poll == 0 || retries == 0 || retries > 255) {
    std::fprintf(stderr, "POLL_MS and RETRIES must be >= 1 (RETRIES <= 255)\n");
    return 2;
  }
  constexpr Nanos kLimitMs = 3'600'000;  // a bound on simulated time, not a timing check

  // ---- failover ----
  double failover_ms = -1, detect_ms = -1, programmed_ms = -1, sweep_wall_s = 0, sa_state_ms = -1;
  std::uint32_t services = 0;
  std::uint64_t replica_rounds = 0;
  unsigned hosts = 0;
  {
    Rig rig(topo, poll, retries, threads, replica_ms);
    for (std::uint32_t n = 0; n < rig.fabric.node_count(); ++n) hosts += rig.fabric.is_switch(n) ? 0 : 1;
    const auto [a, b] = two_hosts(rig.fabric);
    sm::SubnetManager& master = rig.add(a, 9);
    sm::SubnetManager& standby = rig.add(b, 2);
    // Steady state: the standby has prepared its snapshot of the master's fabric.
    if (!rig.run_until([&] { return master.status().subnet_up && standby.status().state == wire::SmState::kStandby &&
                                    standby.status().prepared_snapshots != 0; },
                       kLimitMs)) {
      std::fprintf(stderr, "no master/standby pair\n");
      return 1;
    }
    // SA state at the master, then replicated by the standby (a round that
    // started after the last registration).
    // The probe: a host (neither SM's nor a registrant: the first endpoint on
    // a port gets its MADs) asking the standby's LID.
    std::uint32_t probe_node = b - 1;
    while (rig.fabric.is_switch(probe_node) || probe_node == a) --probe_node;
    services = std::min<std::uint32_t>(kServicesMax, hosts - 3);
    if (!register_state(rig, services, a, b, probe_node)) {
      std::fprintf(stderr, "the master's SA did not take the registrations\n");
      return 1;
    }
    const std::uint64_t complete0 = standby.status().replica.complete;
    if (!rig.run_until([&] { return standby.status().replica.complete >= complete0 + 2; }, kLimitMs)) {
      std::fprintf(stderr, "the standby did not replicate (failed %llu)\n",
                   static_cast<unsigned long long>(standby.status().replica.failed));
      return 1;
    }
    const auto epoch0 = standby.status().epoch;
    const sim::EndpointId probe = rig.fabric.attach(probe_node, 1, AgentSpec{.gsi_client = true});
    const std::uint16_t standby_lid = rig.fabric.lid(rig.fabric.port(b, 1));
    std::uint64_t probe_tid = 0x5000'0000'0000'0001ull;
    Nanos next_probe = 0, sa_state_ns = -1;
    auto probe_step = [&] {
      MadBuf in;
      MadBuf* one[1] = {&in};
      while (rig.fabric.receive(probe, one) == 1) {
        const auto& r = in.as<wire::SaMad>();
        wire::ServiceRecord got{};
        std::memcpy(&got, r.data.data(), sizeof got);
        if (sa_state_ns < 0 && r.hdr.is_response() && r.hdr.status.get() == 0 && got.service_id.get() == kServiceIdBase)
          sa_state_ns = rig.fabric.now_ns();
      }
      if (sa_state_ns < 0 && rig.fabric.now_ns() >= next_probe) {
        rig.fabric.send(probe, probe_query(standby_lid, probe_tid++));
        next_probe = rig.fabric.now_ns() + kNanosPerMilli;
      }
      return sa_state_ns >= 0;
    };
    rig.fabric.kill_node(a);
    const Nanos t0 = rig.fabric.now_ns();
    if (!rig.run_until([&] { probe_step(); return standby.status().state != wire::SmState::kStandby; }, kLimitMs)) return 1;
    detect_ms = ms(rig.fabric.now_ns() - t0);
    const auto w0 = std::chrono::steady_clock::now();
    if (!rig.run_until([&] { probe_step(); return standby.status().epoch > epoch0; }, kLimitMs)) return 1;
    const Nanos answer_ns = rig.fabric.now_ns() - t0;
    if (!rig.run_until([&] { return probe_step(); }, 60'000)) {
      std::fprintf(stderr, "the new master's SA never answered the probe with the replicated record\n");
      return 1;
    }
    if (!rig.run_until([&] { return standby.status().subnet_up; }, kLimitMs)) return 1;
    sweep_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const auto& h = standby.status().last_heavy;
    // Simulated time plus the CPU phases the simulated clock does not see
    // (they all come before the first publication).
    const double cpu_ms = (h.lids_s + h.routing_s + h.path_db_s) * 1e3;
    // A standby's prepared snapshot is published right after discovery,
    // before the CPU phases; otherwise they come first.
    const bool prepared = standby.status().prepared_publications != 0;
    failover_ms = ms(answer_ns) + (prepared ? 0.0 : cpu_ms);
    sa_state_ms = ms(sa_state_ns - t0) + (prepared ? 0.0 : cpu_ms);
    replica_rounds = standby.status().replica.rounds;
    std::printf("failover: SA state handed on %llu (services at the new master %zu, groups %zu), ClientReregister "
                "masterships %llu, replica rounds %llu complete %llu failed %llu timed out %llu\n",
                static_cast<unsigned long long>(standby.status().sa_state_handed_on), rig.node(1).sa().services().size(),
                rig.node(1).sa().groups().groups(),
                static_cast<unsigned long long>(standby.status().reregister_masterships),
                static_cast<unsigned long long>(standby.status().replica.rounds),
                static_cast<unsigned long long>(standby.status().replica.complete),
                static_cast<unsigned long long>(standby.status().replica.failed),
                static_cast<unsigned long long>(standby.status().replica.timed_out));
    std::printf("failover: first publication %s\n", prepared ? "the standby's prepared snapshot" : "after routing");
    programmed_ms = ms(rig.fabric.now_ns() - t0) + cpu_ms;
    std::printf("failover: lids_new %u, nodes %u, smps %llu, published before programming %llu; takeover sweep: "
                "discovery %.3f s (sim), LIDs %.3f s, routing %.3f s, path db %.3f s (CPU), programming %.3f s (sim)\n",
                h.lids_new, h.nodes, static_cast<unsigned long long>(h.smps),
                static_cast<unsigned long long>(standby.status().early_publications), h.discovery_s, h.lids_s, h.routing_s,
                h.path_db_s, h.programming_s);
  }
  // ---- handover ----
  double handover_ms = -1;
  {
    Rig rig(topo, poll, retries, threads, replica_ms);
    const auto [a, b] = two_hosts(rig.fabric);
    sm::SubnetManager& lo = rig.add(a, 2);
    if (!rig.run_until([&] { return lo.status().subnet_up; }, kLimitMs)) return 1;
    const Nanos t0 = rig.fabric.now_ns();
    sm::SubnetManager& hi = rig.add(b, 9);
    if (!rig.run_until([&] { return hi.status().subnet_up && hi.status().state == wire::SmState::kMaster &&
                                    lo.status().state == wire::SmState::kStandby; },
                       kLimitMs))
      return 1;
    const auto& h = hi.status().last_heavy;
    handover_ms = ms(rig.fabric.now_ns() - t0) + (h.lids_s + h.routing_s + h.path_db_s) * 1e3;
  }
  std::printf("| fabric | hosts | polls | replica | detection ms | first publication ms | SA answers with state ms | "
              "fabric reprogrammed ms | handover ms |\n|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %u | %u ms x %u | %u ms, %u services | %.1f | %.1f | %.1f | %.1f | %.1f |\n", spec.c_str(), hosts,
              poll, retries, replica_ms, services, detect_ms, failover_ms, sa_state_ms, programmed_ms, handover_ms);
  std::printf("{\"fabric\":\"%s\",\"hosts\":%u,\"poll_ms\":%u,\"retries\":%u,\"replica_ms\":%u,\"services\":%u,"
              "\"detect_ms\":%.3f,\"failover_ms\":%.3f,\"sa_state_ms\":%.3f,\"programmed_ms\":%.3f,"
              "\"handover_ms\":%.3f,\"takeover_sweep_wall_s\":%.3f,\"replica_rounds\":%llu}\n",
              spec.c_str(), hosts, poll, retries, replica_ms, services, detect_ms, failover_ms, sa_state_ms, programmed_ms,
              handover_ms, sweep_wall_s, static_cast<unsigned long long>(replica_rounds));
  return 0;
}
