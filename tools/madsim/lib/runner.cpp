// The scenario runner's main loop, SM slots and faults (see runner.hpp,
// world.hpp); the invariants are in checks.cpp.
#include "lib/runner.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "lib/policy.hpp"
#include "lib/world.hpp"
#include "node/control.hpp"
#include "sim/faults/schedule.hpp"

namespace madsim {

namespace sim = madengine::sim;
namespace wire = madengine::wire;
using madengine::kNanosPerMilli;
using madengine::node::SmPhase;

std::string replay_command(const Scenario& s) {
  return fmt::format("madsim --seed {} --size {}", s.seed, to_string(s.size));
}

World::World(const Scenario& s, const RunOptions& o, RunResult& out)
    : s_(s), o_(o), r_(out), fabric_(s.topo, sim::FabricConfig{.ca_client_reregistration = true, .seed = s.seed}), loss_(fabric_, s.seed ^ 0x5eedull) {
  fabric_.set_packet_fault(&loss_);
  fired_.assign(s.faults.size(), false);
  touched_.assign(fabric_.node_count(), false);
  if (o.work_dir.empty()) {
    // tmpfs where there is one: every journal and guid2lid write fsyncs the
    // file and its folder, which on a disk costs more than the simulation.
    std::error_code ec;
    char tmpl[] = "/dev/shm/madsim-XXXXXX";
    char tmpl_tmp[] = "/tmp/madsim-XXXXXX";
    const char* d = std::filesystem::is_directory("/dev/shm", ec) ? ::mkdtemp(tmpl) : nullptr;
    if (d == nullptr) d = ::mkdtemp(tmpl_tmp);
    if (d == nullptr) throw std::runtime_error("madsim: cannot create a folder under /dev/shm or /tmp");
    dir_ = d;
    own_dir_ = true;
  } else {
    dir_ = fmt::format("{}/seed-{}", o.work_dir, s.seed);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  observer_ = [this](const std::string& path, madengine::DurableStep step) { return on_durable(path, step); };
  madengine::set_durable_write_observer(&observer_);
  for (unsigned i = 0; i < s.sms.size(); ++i) {
    Slot slot;
    slot.index = i;
    slot.node = s.sms[i].node;
    slot.priority = s.sms[i].priority;
    slot.dir = fmt::format("{}/sm{}", dir_, i);
    std::filesystem::create_directories(slot.dir);
    sms_.push_back(std::move(slot));
  }
  clients_ = std::make_unique<Clients>(fabric_, s, r_.trace);
  // One partitions file for every SM, as a site shares its configuration.
  partitions_ = &s.policy.partitions;
  const bool reloads = std::any_of(s.faults.begin(), s.faults.end(),
                                   [](const FaultDraw& f) { return f.kind == FaultKind::kPartitionsReload; });
  if (!s.policy.partitions.empty() || reloads) {
    partitions_file_ = dir_ + "/partitions.conf";
    write_partitions(*partitions_);
  }
  clients_->set_partitions(partitions_);
  clients_->published = [this](std::uint32_t client, std::uint32_t peer) {
    const auto comp = components();
    return comp[client] == comp[peer] && published_by_master(comp, peer);
  };
}

void World::write_partitions(const std::vector<PartitionDraw>& parts) {
  std::ofstream out(partitions_file_, std::ios::trunc);
  out << partitions_conf(s_, parts);
  if (!out) throw std::runtime_error("madsim: cannot write " + partitions_file_);
}

World::~World() {
  clients_.reset();
  for (Slot& slot : sms_) {
    if (slot.n) slot.n->control().crash();  // the end of a run is not a shutdown to journal
    slot.n.reset();
  }
  madengine::set_durable_write_observer(nullptr);
  std::error_code ec;
  if (own_dir_ && !o_.keep_work_dir) std::filesystem::remove_all(dir_, ec);
}

void World::start_sm(Slot& slot) {
  namespace node = madengine::node;
  node::NodeConfig c;
  c.transport.kind = node::TransportKind::kSim;
  c.engine.cores = 1;
  c.engine.pin = false;
  c.sm.priority = slot.priority;
  c.sm.sm_key = 1;
  c.sm.ha_poll_interval_ms = 100;
  c.sm.ha_poll_retries = 3;
  c.sm.sweep_interval_ms = 500;
  c.sm.ha_replica_interval_ms = 200;
  c.sm.routing_threads = 1;
  c.sm.guid2lid = slot.dir + "/guid2lid";
  c.sa.journal = slot.dir + "/journal";
  c.sa.journal_interval_ms = 200;
  std::error_code ec;
  const Policy& pol = s_.policy;
  c.sm.routing = pol.routing;
  c.sm.partition_config = partitions_file_;
  c.sm.qos = pol.qos;
  c.sm.qos_all.sl2vl = pol.qos_sl2vl;
  c.sm.m_key = slot.starts > 0 && pol.m_key_after_restart != 0 ? pol.m_key_after_restart : pol.m_key;
  c.sm.m_key_lease_period = pol.m_key_lease_s;
  c.sm.m_key_protection_level = pol.m_key_protection;
  if (pol.m_key != 0) {
    c.sm.guid2mkey = slot.dir + "/guid2mkey";
    if (slot.starts > 0 && pol.guid2mkey_lost) std::filesystem::remove(c.sm.guid2mkey, ec);
  }
  // The journal's age is its file time (wall clock): make it the simulated
  // age, so a restart restores leases as they stand in simulated time.
  if (slot.journal_written_ns >= 0 && std::filesystem::exists(c.sa.journal, ec)) {
    const auto age = std::chrono::nanoseconds(now() - slot.journal_written_ns);
    std::filesystem::last_write_time(
        c.sa.journal, std::filesystem::file_time_type::clock::now() - std::chrono::duration_cast<std::filesystem::file_time_type::duration>(age), ec);
  }
  node::ControlOptions in{.sim_fabric = &fabric_, .sim_node = slot.node};
  const unsigned i = slot.index;
  in.on_sm_transition = [this, i](wire::SmState from, wire::SmState to) { on_transition(i, from, to); };
  in.on_sm_phase = [this, i](SmPhase p) { on_phase(i, p); };
  slot.state = wire::SmState::kNotActive;
  slot.n = std::make_unique<node::ControlledNode>(c, node::NodeHooks{}, in);
  ++slot.starts;
  r_.trace.add(now(), fmt::format("sm{} starts on {} priority {}", i, s_.topo.nodes[slot.node].id, slot.priority));
}

bool World::alive(const Slot& slot) const noexcept {
  return slot.n != nullptr && !slot.crash_pending && !fabric_.node_dead(slot.node);
}

void World::fault(const std::string& text) { r_.trace.add(now(), text, true); }

void World::kill_sm(Slot& slot, const std::string& why, bool restart, Nanos back_after_ns) {
  if (slot.n == nullptr || slot.crash_pending) return;
  fault(fmt::format("kill sm{} ({}): {}{}", slot.index, wire::to_string(slot.state), why,
                    restart ? fmt::format(", back in {} ms", back_after_ns / kNanosPerMilli) : std::string()));
  if (slot.state == wire::SmState::kMaster) master_deaths_.push_back(now());
  fabric_.kill_node(slot.node);
  slot.crash_pending = true;
  slot.restart_at = restart ? now() + back_after_ns : -1;
  if (restart) fault_until(slot.restart_at);
  touched_[slot.node] = true;
  ++r_.stats.kills;
  disturb(now(), now() + (restart ? back_after_ns : 0) + 2 * kDisturbanceTailNs);
}

void World::disturb(Nanos from_ns, Nanos until_ns) {
  if (!disturbed_.empty() && from_ns <= disturbed_.back().second) {
    disturbed_.back().second = std::max(disturbed_.back().second, until_ns);
    return;
  }
  disturbed_.emplace_back(from_ns, until_ns);
}

bool World::excused(Nanos from_ns, Nanos until_ns) const noexcept {
  return std::any_of(disturbed_.begin(), disturbed_.end(),
                     [&](const auto& d) { return d.first <= until_ns && from_ns <= d.second; });
}

bool World::at_risk(Nanos acked_ns) const noexcept {
  return std::any_of(master_deaths_.begin(), master_deaths_.end(),
                     [&](Nanos d) { return d >= acked_ns - kAtRiskNs && d <= acked_ns + kAtRiskNs; });
}

void World::on_transition(unsigned i, wire::SmState from, wire::SmState to) {
  Slot& slot = sms_[i];
  slot.state = to;
  r_.trace.add(now(), fmt::format("sm{} {} -> {}", i, wire::to_string(from), wire::to_string(to)));
  if (to == wire::SmState::kMaster) {
    disturb(now(), now() + kDisturbanceTailNs);
    if (r_.stats.heavy_sweeps > 0 || !master_deaths_.empty()) ++r_.stats.takeovers;
  }
}

void World::on_phase(unsigned i, SmPhase p) {
  Slot& slot = sms_[i];
  r_.trace.add(now(), fmt::format("sm{} {}", i, madengine::node::to_string(p)));
  if (p == SmPhase::kPublished) {
    ++r_.stats.heavy_sweeps;
    // The LIDs to keep are those one master gave the whole subnet: after a
    // join, not while the other master still runs its part.
    bool sole = slot.state == wire::SmState::kMaster;
    if (sole && !baseline_taken_) {
      // Joined subnets are one subnet even while a link down keeps part of
      // it away: its master still runs there and takes the whole back
      // (keeping its own numbering), so no master elsewhere either.
      const auto comp = components();
      const bool joined_fabric = s_.fabric_kind == FabricKind::kTwoSubnets;
      for (const Slot& m : sms_)
        if (m.index != i && alive(m) && m.state == wire::SmState::kMaster &&
            (joined_fabric || comp[m.node] == comp[slot.node]))
          sole = false;
    }
    if (!baseline_taken_ && sole && (joined_ || s_.fabric_kind != FabricKind::kTwoSubnets)) take_baseline(slot);
  }
  if (inspecting_) return;  // faults that never came stay unfired: see run()
  const bool sweeping = slot.state == wire::SmState::kMaster || slot.state == wire::SmState::kDiscovering;
  for (std::size_t j = 0; j < s_.faults.size(); ++j) {
    const FaultDraw& f = s_.faults[j];
    if (fired_[j] || f.at_ns > now()) continue;
    if (f.kind == FaultKind::kMasterKill && f.phase == p) {
      if (p == SmPhase::kReplicaCopy) {
        for (Slot& m : sms_)
          if (m.index != i && alive(m) && m.state == wire::SmState::kMaster) {
            fired_[j] = true;
            kill_sm(m, fmt::format("while sm{} copies its SA state", i), f.restart, f.length_ns);
            break;
          }
      } else if (sweeping && alive(slot)) {
        fired_[j] = true;
        kill_sm(slot, fmt::format("in {}", madengine::node::to_string(p)), f.restart, f.length_ns);
      }
    } else if (f.kind == FaultKind::kLinkFlapInPhase && f.phase == p && sweeping) {
      fired_[j] = true;
      fault(fmt::format("link {}[{}] down {} ms as sm{} enters {}", s_.topo.nodes[f.a].id, f.count,
                        f.length_ns / kNanosPerMilli, i, madengine::node::to_string(p)));
      fault_until(sim::schedule_link_flap(fabric_, fabric_.port(f.a, static_cast<std::uint8_t>(f.count)), now(), f.length_ns));
      disturb(now(), now() + f.length_ns + kDisturbanceTailNs);
    }
  }
}

bool World::on_durable(const std::string& path, madengine::DurableStep step) {
  for (Slot& slot : sms_) {
    if (path != slot.dir + "/journal") continue;
    if (step == madengine::DurableStep::kOpenDir) slot.journal_written_ns = now();  // renamed: the new journal stands
    if (slot.state != wire::SmState::kMaster || !alive(slot) || inspecting_) return true;
    for (std::size_t j = 0; j < s_.faults.size(); ++j) {
      const FaultDraw& f = s_.faults[j];
      if (fired_[j] || f.kind != FaultKind::kMasterKillJournal || f.at_ns > now() || static_cast<unsigned>(step) != f.step)
        continue;
      fired_[j] = true;
      kill_sm(slot, fmt::format("writing its SA journal, before {}", madengine::to_string(step)), f.restart, f.length_ns);
      if (step == madengine::DurableStep::kOpenDir) slot.journal_written_ns = now();
      return false;
    }
    return true;
  }
  return true;
}

void World::apply_timed_faults() {
  for (std::size_t j = 0; j < s_.faults.size(); ++j) {
    const FaultDraw& f = s_.faults[j];
    if (fired_[j] || f.at_ns > now()) continue;
    switch (f.kind) {
      case FaultKind::kSmpLoss:
        fault(fmt::format("SMP loss {:.3f} on attribute 0x{:04x} for {} ms", f.rate, f.attr, f.length_ns / kNanosPerMilli));
        loss_.add({.rate = f.rate, .attr_id = f.attr, .from_ns = now(), .until_ns = now() + f.length_ns});
        fault_until(now() + f.length_ns);
        disturb(now(), now() + f.length_ns + kDisturbanceTailNs);
        break;
      case FaultKind::kLinkFlap:
        fault(fmt::format("link {}[{}] down {} ms", s_.topo.nodes[f.a].id, f.count, f.length_ns / kNanosPerMilli));
        fault_until(sim::schedule_link_flap(fabric_, fabric_.port(f.a, static_cast<std::uint8_t>(f.count)), now(), f.length_ns));
        disturb(now(), now() + f.length_ns + kDisturbanceTailNs);
        break;
      case FaultKind::kSwitchReboot:
        fault(fmt::format("switch {} reboots", s_.topo.nodes[f.a].id));
        fabric_.reset_node(f.a);
        touched_[f.a] = true;
        disturb(now(), now() + kDisturbanceTailNs);
        break;
      case FaultKind::kSmaMute:
        fault(fmt::format("SMA of {} mute for {} ms", s_.topo.nodes[f.a].id, f.length_ns / kNanosPerMilli));
        fault_until(sim::schedule_mute(fabric_, f.a, now(), f.length_ns));
        disturb(now(), now() + f.length_ns + kDisturbanceTailNs);
        break;
      case FaultKind::kSmaResetting: {
        fault(fmt::format("SMA of {} resets {} times every {} ms", s_.topo.nodes[f.a].id, f.count,
                          f.length_ns / kNanosPerMilli));
        const Nanos end = sim::schedule_resetting_sma(fabric_, f.a, now(), f.length_ns, f.count);
        touched_[f.a] = true;
        fault_until(end);
        disturb(now(), end + kDisturbanceTailNs);
        break;
      }
      case FaultKind::kSmPortBounce: {
        Slot& slot = sms_[f.a % sms_.size()];
        if (!alive(slot)) break;
        fault(fmt::format("sm{} ({}) port gone for {} ms", slot.index, wire::to_string(slot.state),
                          f.length_ns / kNanosPerMilli));
        if (slot.state == wire::SmState::kMaster) master_deaths_.push_back(now());
        fault_until(sim::schedule_port_bounce(fabric_, slot.node, now(), f.length_ns));
        touched_[slot.node] = true;
        disturb(now(), now() + f.length_ns + 2 * kDisturbanceTailNs);
        break;
      }
      case FaultKind::kJoinSubnets: {
        fault("the two subnets are joined");
        fabric_.link(fabric_.port(s_.join_a, s_.join_a_port), fabric_.port(s_.join_b, s_.join_b_port));
        joined_ = true;
        baseline_taken_ = false;  // LIDs are taken again once one master runs both
        baseline_.clear();
        disturb(now(), now() + kDualMasterMaxNs + kDisturbanceTailNs);
        break;
      }
      case FaultKind::kPartitionsReload: {
        fault(fmt::format("the partitions file changes ({} partitions) and every SM re-reads it",
                          s_.policy.partitions_reloaded.size()));
        partitions_ = &s_.policy.partitions_reloaded;
        write_partitions(*partitions_);
        clients_->set_partitions(partitions_);
        // SIGHUP reaches every running SM process, its port there or not.
        for (Slot& slot : sms_)
          if (slot.n != nullptr && !slot.crash_pending) slot.n->control().reload_config_files();
        disturb(now(), now() + kDisturbanceTailNs);
        break;
      }
      case FaultKind::kLinkFlapInPhase:
      case FaultKind::kMasterKill:
      case FaultKind::kMasterKillJournal:
        continue;  // they wait for their phase
    }
    fired_[j] = true;
  }
}

std::vector<std::uint32_t> World::components() const {
  std::vector<std::uint32_t> parent(fabric_.node_count());
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](std::uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (sim::PortIdx p = 0; p < fabric_.port_count(); ++p) {
    const sim::PortIdx q = fabric_.peer(p);
    if (q == sim::kNoPortIdx || q < p) continue;
    if (fabric_.phys_state(p) != wire::PortPhysState::kLinkUp || fabric_.phys_state(q) != wire::PortPhysState::kLinkUp)
      continue;
    const std::uint32_t a = find(fabric_.node_of(p)), b = find(fabric_.node_of(q));
    if (a != b) parent[a] = b;
  }
  for (std::uint32_t n = 0; n < parent.size(); ++n) parent[n] = find(n);
  return parent;
}

bool World::published_by_master(const std::vector<std::uint32_t>& comp, std::uint32_t node) const {
  const sim::PortIdx p = fabric_.port(node, 1);
  if (fabric_.port_state(p) != wire::PortState::kActive) return false;
  for (const Slot& slot : sms_) {
    if (!alive(slot) || slot.state != wire::SmState::kMaster || comp[slot.node] != comp[node]) continue;
    if (slot.n->control().fabric_view().end_port_by_guid(fabric_.port_guid(p))) return true;
  }
  return false;
}

void World::sample() {
  const auto comp = components();
  std::map<std::uint32_t, unsigned> masters, sms;
  bool bringing_up = false;  // a master that has not brought its subnet up yet (no sweep without errors)
  for (const Slot& slot : sms_) {
    if (!alive(slot)) continue;
    ++sms[comp[slot.node]];
    if (slot.state != wire::SmState::kMaster) continue;
    ++masters[comp[slot.node]];
    bringing_up = bringing_up || !slot.n->control().sm_status().subnet_up;
  }
  // Nor can clients whose master is still bringing the subnet up (a
  // restarted SM whose Sets ports refuse until their M_Key leases end).
  if (bringing_up) disturb(now(), now() + kDisturbanceTailNs);
  // A client whose subnet has no master (every SM there dead, or an
  // election under way) cannot be answered: its queries are excused,
  // and so are those of one its master has not published yet (a sweep still reaching
  // its part: ports behind M_Keys whose leases have not ended, say).
  for (const std::uint32_t client : s_.clients)
    if (masters.count(comp[client]) == 0 || !published_by_master(comp, client)) {
      disturb(now(), now() + kDisturbanceTailNs);
      break;
    }
  bool dual = false;
  for (const auto& [c, n] : sms) {
    const unsigned m = masters.count(c) != 0 ? masters[c] : 0;
    if (m > 1) dual = true;
    if (m == 0) disturb(now(), now() + kDisturbanceTailNs);
  }
  if (!dual) {
    dual_since_ = -1;
  } else if (dual_since_ < 0) {
    dual_since_ = now();
  } else if (now() - dual_since_ > kDualMasterMaxNs && !dual_reported_) {
    dual_reported_ = true;
    violate("one-master", fmt::format("two masters in one subnet for more than {} ms",
                                      kDualMasterMaxNs / kNanosPerMilli));
  }
}

std::size_t World::step() {
  std::size_t work = 0;
  for (Slot& slot : sms_)
    if (slot.n) {
      work += slot.n->control().poll_cores_once();
      slot.n->node().dispatch_events();
    }
  for (Slot& slot : sms_) {
    if (slot.crash_pending) {
      slot.n->control().crash();
      slot.n.reset();
      slot.crash_pending = false;
      slot.state = wire::SmState::kNotActive;
    }
    if (!slot.n && slot.restart_at >= 0 && now() >= slot.restart_at) {
      slot.restart_at = -1;
      fabric_.revive_node(slot.node);
      fault(fmt::format("sm{} restarts", slot.index));
      start_sm(slot);
      ++r_.stats.restarts;
    }
  }
  apply_timed_faults();
  work += clients_->poll(now());
  if (now() >= next_sample_) {
    sample();
    next_sample_ = now() + kSampleNs;
  }
  if (work == 0) fabric_.advance(kStepNs);
  return work;
}

bool World::settled() {
  const auto comp = components();
  std::map<std::uint32_t, std::vector<Slot*>> by_comp;
  for (Slot& slot : sms_)
    if (alive(slot)) by_comp[comp[slot.node]].push_back(&slot);
  std::uint64_t fingerprint = 0;
  for (const auto& [c, slots] : by_comp) {
    unsigned masters = 0;
    for (Slot* slot : slots) {
      if (slot->state != wire::SmState::kMaster) continue;
      ++masters;
      const auto st = slot->n->control().sm_status();
      if (!st.subnet_up) return false;
      // A master still recovering (its last heavy sweep met errors: ports
      // behind M_Key leases, SMPs lost) sweeps again: not quiet yet.
      if (!st.last_heavy.ok || st.last_heavy.discovery_errors != 0 || st.last_heavy.bringup_errors != 0) return false;
      fingerprint = fingerprint * 31 + st.heavy_sweeps * 7 + st.epoch;
    }
    if (masters != 1) return false;
  }
  if (!clients_->idle() || clients_->reregistrations_pending != 0) return false;
  // Quiet only once every fault has ended: an SMA still resetting (its
  // resets may run past the scenario's end) is a fault, not a wrong fabric.
  if (fingerprint != settle_print_ || now() < faults_over_ns_) {
    settle_print_ = fingerprint;
    settle_since_ = now();
    return false;
  }
  return now() - settle_since_ >= kSettledForNs;
}

void World::run() {
  for (Slot& slot : sms_) start_sm(slot);
  while (now() < s_.run_ns) step();
  checking_ = true;
  const Nanos settle_end = now() + kSettleMaxNs;
  settle_since_ = now();
  while (now() < settle_end) {
    step();
    if (settled()) break;
  }
  r_.stats.settled = settled();
  if (!r_.stats.settled) violate("settles", fmt::format("the fabric did not settle within {} s of the scenario's end",
                                                         kSettleMaxNs / madengine::kNanosPerSecond));
  else r_.trace.add(now(), "settled");
  // The checks step the fabric too (their PathRecord queries): a fault
  // waiting for a phase that came only then would kill the master being
  // checked. They inspect the settled fabric; the scenario is over.
  inspecting_ = true;
  check_all();
  for (std::size_t j = 0; j < s_.faults.size(); ++j)
    if (!fired_[j]) r_.trace.add(now(), fmt::format("fault {} ({}) never fired: its phase did not come", j, to_string(s_.faults[j].kind)));
  r_.stats.sim_ns = now();
  r_.stats.smp_dropped = loss_.dropped();
}

RunResult run_scenario(const Scenario& s, const RunOptions& opts) {
  RunResult r;
  spdlog::set_level(opts.sm_logs ? spdlog::level::info : spdlog::level::off);
  {
    World w(s, opts, r);
    w.run();
  }
  r.digest = r.trace.digest();
  return r;
}

}  // namespace madsim
