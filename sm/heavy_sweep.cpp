// The SM's heavy sweep (see sm.hpp), one function a phase: discovery,
// election and takeover, LIDs, routing (on the compute pool), an early
// publication, programming, publication and reregistration, the report.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <string>
#include <unordered_set>

#include "engine/offload.hpp"
#include "madengine/wire/codec.hpp"
#include "sa/paths/path_db.hpp"
#include "sm/bringup/client_reregister.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/discovery/rediscover.hpp"
#include "sm/heavy_sweep.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/sm.hpp"

namespace madengine::sm {

namespace {

double seconds(Nanos a, Nanos b) { return static_cast<double>(b - a) / 1e9; }

// The SM's own node in a fabric it discovered: the one reached by the empty path.
fabric::NodeId local_node_of(const fabric::Fabric& f) {
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i)
    if (f.nodes[i].dr_path.hops == 0) return i;
  return fabric::kNoNode;
}

// The LIDs end ports answered this reading with, by GUID (0: the port
// answered with none); ports whose PortInfo did not answer are left out.
Guid2Lid lids_read(const DiscoveryResult& d) {
  Guid2Lid out;
  const std::vector<fabric::EndPort> ends = d.fabric.end_ports();
  const std::vector<std::uint16_t> lids = d.current_lids();
  for (std::size_t i = 0; i < ends.size() && i < lids.size(); ++i)
    if (d.fabric.nodes[ends[i].node].ports[ends[i].port].info.port_state() != 0)
      out[end_port_guid(d.fabric, ends[i])] = LidRange{lids[i], lids[i]};
  return out;
}

// End ports whose PortInfo did not answer this sweep read as LID 0: they
// keep the LID they were last known by, rather than take a new one, the
// newest reading first: this sweep's own first reading (`earlier`, when it
// read the subnet twice), then the one our standby's latest refresh read
// (`seen`, the master's numbering, newer than a publication of ours from
// before we stood by), else the one `last` (our last publication, or the
// master's fabric as a standby prepared it) gives. A port that answered
// with LID 0 has none.
void keep_unread_lids(const fabric::Fabric& f, std::vector<std::uint16_t>& lids, const Guid2Lid& earlier,
                      const Guid2Lid& seen, const sa::Snapshot* last) {
  const std::vector<fabric::EndPort> ends = f.end_ports();
  for (std::size_t i = 0; i < ends.size() && i < lids.size(); ++i) {
    if (lids[i] != 0 || f.nodes[ends[i].node].ports[ends[i].port].info.port_state() != 0) continue;
    const std::uint64_t guid = end_port_guid(f, ends[i]);
    if (const auto e = earlier.find(guid); e != earlier.end()) {
      lids[i] = e->second.min_lid;
      continue;
    }
    if (const auto s = seen.find(guid); s != seen.end()) {
      lids[i] = s->second.min_lid;
      continue;
    }
    if (last == nullptr) continue;
    const auto it = last->by_port_guid.find(guid);
    if (it != last->by_port_guid.end()) lids[i] = last->fabric.lid_of(it->second);
  }
}

// End ports the last fabric we knew (`last`: our publication, or the
// master's as a standby prepared it) had and this sweep did not find (a link
// down, a mute SMA) still carry their LIDs. Entered in `map` when it has
// none for them, so assign_lids keeps those LIDs theirs: a new master knows
// the ports it never numbered only from that fabric.
std::unordered_set<std::uint64_t> end_port_guids(const fabric::Fabric& f) {
  std::unordered_set<std::uint64_t> found;
  for (const fabric::EndPort e : f.end_ports()) found.insert(end_port_guid(f, e));
  return found;
}

void remember_absent_lids(const fabric::Fabric& f, Guid2Lid& map, const sa::Snapshot* last) {
  if (last == nullptr) return;
  const std::unordered_set<std::uint64_t> found = end_port_guids(f);
  for (const fabric::EndPort e : last->fabric.end_ports()) {
    const std::uint64_t guid = end_port_guid(last->fabric, e);
    const std::uint16_t lid = last->fabric.lid_of(e);
    if (guid == 0 || lid == 0 || found.contains(guid) || map.contains(guid)) continue;
    map[guid] = lid_range(last->fabric.nodes[e.node], lid);
  }
}

// The same from the LIDs a standby's latest refresh read (`seen`): the
// master's numbering, newer than any our map holds from an earlier
// mastership of ours (two subnets joined, the master renumbered our old
// part), so it wins for the ports this sweep did not find.
void remember_absent_lids(const fabric::Fabric& f, Guid2Lid& map, const Guid2Lid& seen) {
  const std::unordered_set<std::uint64_t> found = end_port_guids(f);
  for (const auto& [guid, range] : seen)
    if (!found.contains(guid)) map[guid] = range;
}

}  // namespace

void SubnetManager::stale_sweep() {
  spdlog::info("sm: our device was lost during this sweep: what it read may be stale (another SM may have numbered "
               "the subnet meanwhile): sweeping again");
  role_.lids_from_fabric = true;
  request_heavy_sweep();
}

// A heavy sweep, phase by phase; each phase fires SmConfig::on_phase as it
// starts, and a phase that returns false ends the sweep.
Task<void> SubnetManager::heavy_sweep() {
  HeavySweep h{.t0 = sched_->clock().now_ns(),
               .smps0 = queue_->submitted(),
               .lp = transport_.local_port(),
               .losses0 = device_losses_};
  Task<bool> discovery = sweep_discovery(h);
  if (const bool ok = co_await discovery; !ok) co_return;
  Task<bool> election = sweep_election(h);
  if (const bool ok = co_await election; !ok) co_return;
  sweep_lids(h);
  Task<bool> routing = sweep_routing(h);
  if (const bool ok = co_await routing; !ok) co_return;
  Task<bool> early = sweep_early_publication(h);
  if (const bool ok = co_await early; !ok) co_return;
  Task<void> programming = sweep_programming(h);
  co_await programming;
  Task<bool> publication = sweep_publication(h);
  if (const bool ok = co_await publication; !ok) co_return;
  Task<void> reregistration = sweep_reregistration(h);
  co_await reregistration;
  sweep_subnet_up(h);
  Task<void> tables = sweep_port_tables(h);
  co_await tables;
  sweep_done(h);
}

void SubnetManager::sweep_failed(SweepStats& st, std::string error) {
  st.error = std::move(error);
  spdlog::error("sm: heavy sweep failed: {}", st.error);
  update_status([&st](SmStatus& s) { s.last_heavy = st; });
  resweep_ = true;
  walk_reason_ = "the last heavy sweep failed";
}

// Discovery: re-discovery around the switches that reported a change, or a
// walk of the subnet; false when our own port did not answer.
Task<bool> SubnetManager::sweep_discovery(HeavySweep& h) {
  SweepStats& st = h.st;
  ha_->sweep_started();
  h.began_as = ha_->state();
  phase(SmPhase::kDiscovery);
  // PortStateChange bits are cleared only once we know we act on this sweep.
  h.dopts = DiscoveryOptions{.port_num = h.lp.port_num,
                             .m_key = cfg_.m_key,
                             .keys = mkeys_in_use() ? &mkeys_ : nullptr,
                             .clear_port_state_change = false};
  std::vector<std::uint64_t> changed = std::move(changed_switches_);
  changed_switches_.clear();
  std::string walk_reason = std::move(walk_reason_);
  walk_reason_.clear();
  if (walk_requested_.exchange(false, std::memory_order_relaxed)) walk_reason = "requested";
  else if (!cfg_.rediscover_link_changes) walk_reason = "re-discovery is off";
  else if (current_ == nullptr) walk_reason = "no fabric yet";
  // Re-discovery sends every SMP with the configured key; the walk sends
  // each with the key its port holds and learns the keys it finds.
  else if (mkeys_in_use()) walk_reason = "M_Keys in use";
  else if (ha_->state() != wire::SmState::kMaster || role_.mastership_new) walk_reason = "a new mastership";
  else if (walk_reason.empty() && changed.empty()) walk_reason = "no switch reported a change";
  st.walk_reason = walk_reason;
  std::optional<DiscoveryResult> found;
  if (walk_reason.empty()) {
    // The copy to start from is made on the compute pool from the published
    // snapshot (immutable, shared with the job).
    auto copying = offload(*compute_, mailbox_, [last = current_] { return discovery_from(last->fabric); });
    auto copied = co_await copying;
    if (copied.value) {
      Task<Rediscovery> again = rediscover(*queue_, std::move(*copied.value), local_node_of(current_->fabric),
                                           local_port_, std::move(changed), h.dopts);
      Rediscovery r = co_await again;
      if (r.result) {
        found = std::move(r.result);
        st.rediscovered = true;
        spdlog::info("sm: re-discovery: {} link(s) down, {} SMPs", r.links_down, found->smps);
      } else {
        st.walk_reason = r.full_reason;
        spdlog::info("sm: re-discovery not enough ({}): walking the subnet", r.full_reason);
      }
    } else {
      st.walk_reason = copied.cancelled ? "cancelled" : "the last fabric was not copied";
    }
  }
  if (!found) {
    Task<DiscoveryResult> walking = discover(*queue_, h.dopts);
    found = co_await walking;
  }
  h.d = std::move(*found);
  found.reset();
  DiscoveryResult& d = h.d;
  if (mkeys_in_use()) learn_mkeys(d);
  unreachable_ = mkeys_in_use() && d.errors != 0;
  h.t1 = sched_->clock().now_ns();
  st.discovery_s = seconds(h.t0, h.t1);
  st.discovery_smps = queue_->submitted() - h.smps0;
  st.discovery_errors = d.errors;
  st.nodes = static_cast<std::uint32_t>(d.fabric.nodes.size());
  st.switches = static_cast<std::uint32_t>(d.fabric.switch_count());
  st.cas = st.nodes - st.switches;
  st.links = d.links();
  if (d.local_node == fabric::kNoNode) {
    // Our SMA mute for a while: what this sweep came to do is still to do,
    // and a light sweep may not see it again (its change bits were read).
    sweep_failed(st, "the local port did not answer NodeInfo");
    co_return false;
  }
  // What appeared and vanished since the last sweep.
  std::unordered_set<std::uint64_t> before;
  if (current_ != nullptr)
    for (const auto& n : current_->fabric.nodes) before.insert(n.node_guid);
  for (const auto& n : d.fabric.nodes) st.new_nodes += before.erase(n.node_guid) == 0 ? 1 : 0;
  st.vanished_nodes = static_cast<std::uint32_t>(before.size());
  spdlog::info("sm: discovery: {} nodes ({} switches, {} CAs), {} links, {} new, {} vanished, {} SMPs, {} errors, {:.6f} s",
               st.nodes, st.switches, st.cas, st.links, st.new_nodes, st.vanished_nodes, st.discovery_smps,
               d.errors, st.discovery_s);
  co_return true;
}

// Election: the other SMs found through IsSM, and whether we configure; as
// master, the fabric is taken over (change bits cleared, SA state settled,
// the LIDs of ports not found kept theirs). False: not ours to program.
Task<bool> SubnetManager::sweep_election(HeavySweep& h) {
  DiscoveryResult& d = h.d;
  const std::uint16_t own_lid = d.fabric.lid_of(fabric::EndPort{d.local_node, d.local_port});
  h.decision = co_await ha_->after_discovery(*queue_, d.fabric, h.lp.port_guid, own_lid);
  const ha::SweepDecision& decision = h.decision;
  if (device_losses_ != h.losses0) {
    stale_sweep();
    co_return false;
  }
  publish_ha_status();
  if (!decision.program) {
    spdlog::info("sm: {} with {} other SM(s): fabric left as it is", wire::to_string(ha_->state()), decision.peers);
    if (decision.handed_part) remember_handed_part();
    update_status([](SmStatus& s) { ++s.sweeps_not_programmed; });
    if (ha_->state() == wire::SmState::kStandby) {
      note_master_lid(d);
      std::vector<std::uint16_t> reported = d.current_lids();  // before the fabric is moved out
      Task<void> prepare = prepare_warm(std::move(d.fabric), std::move(reported), h.lp);
      co_await prepare;
    }
    co_return false;
  }
  if (decision.handed || h.began_as == wire::SmState::kStandby) {
    // The SM that handed us the subnet, or the master that died while our
    // standby's sweep read it, may have programmed it while we read it (LIDs
    // of a part it had just joined): read it again before numbering, as
    // OpenSM sweeps afresh when a HANDOVER ends its discovery.
    spdlog::info("sm: {} during discovery: discovering again before numbering",
                 decision.handed ? "handed the subnet" : "took over from a master");
    Task<DiscoveryResult> again = discover(*queue_, h.dopts);
    DiscoveryResult fresh = co_await again;
    if (fresh.local_node != fabric::kNoNode) {
      // A port the second reading lost keeps what the first found: newer
      // than our standby's readings, which may predate the dead master's
      // renumbering (a join), where another port now carries its old LID.
      h.first_reading = lids_read(d);
      if (mkeys_in_use()) learn_mkeys(fresh);
      unreachable_ = mkeys_in_use() && fresh.errors != 0;
      d = std::move(fresh);
    }
  }
  h.recheck = clear_port_state_changes(*queue_, d, h.dopts);
  resweep_ = d.errors != 0;
  if (role_.mastership_new && !role_.sa_state_decided) {
    if (role_.handed_by_live_master) {
      Task<void> last_copy = final_replica_round();
      co_await last_copy;
    }
    role_.reregister = settle_sa_state(d);
  }
  if (current_ == nullptr && warm_ != nullptr && publish_warm(d.fabric, d.current_lids())) {
    const std::uint64_t e = epoch_;
    update_status([e](SmStatus& s) {
      s.epoch = e;
      ++s.early_publications;
      ++s.prepared_publications;
    });
  }
  h.current_lids = d.current_lids();
  if (d.errors != 0)
    keep_unread_lids(d.fabric, h.current_lids, h.first_reading, role_.mastership_new ? master_lids_ : Guid2Lid{},
                     current_ != nullptr ? current_.get() : warm_.get());
  remember_absent_lids(d.fabric, guid2lid_, current_ != nullptr ? current_.get() : warm_.get());
  if (role_.mastership_new) {
    // A takeover: ports our standby sweeps saw that this sweep did not find
    // (a link down, a mute SMA) keep the LIDs the master gave them.
    remember_absent_lids(d.fabric, guid2lid_, master_lids_);
    seen_as_standby_ = std::move(master_lids_);
    master_lids_.clear();
  }
  warm_.reset();
  if (decision.assert_all && current_ != nullptr) {
    // Handed a subnet or joined to one: rewrite every port and table (SM LID
    // included) rather than trust what another master left.
    programmed_ = ProgrammedState{};
    mft_programmed_.clear();
    qos_programmed_ = QosProgrammed{};
  }
  co_return true;
}

// LIDs: the guid2lid map, the ports' own LIDs, new ones; the map saved.
// CPU phases are timed with the steady clock: on the sim transport the
// engine clock is simulated time, which does not move while we compute.
void SubnetManager::sweep_lids(HeavySweep& h) {
  const auto w1 = std::chrono::steady_clock::now();
  phase(SmPhase::kLids);
  h.lids = assign_lids(h.d.fabric, guid2lid_, cfg_.lmc, h.current_lids,
                       role_.lids_from_fabric ? LidPreference::kCurrent : LidPreference::kMap);
  const LidAssignReport& lids = h.lids;
  role_.lids_from_fabric = false;
  h.st.lids_new = lids.assigned_new;
  save_guid2lid_async();
  h.st.lids_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w1).count();
  if (lids.assigned_new != 0 || lids.conflicts != 0 || lids.exhausted != 0)
    spdlog::info("sm: LIDs: {} kept from map, {} kept current, {} new, {} conflicts, {} exhausted", lids.kept_from_map,
                 lids.kept_current, lids.assigned_new, lids.conflicts, lids.exhausted);
}

// Routing and the path database run on the compute pool: this core goes
// on answering SA queries (from the current epoch) and SMInfo polls. The
// job owns the fabric until it is done. False: cancelled, stale, no longer
// master, or no routes.
Task<bool> SubnetManager::sweep_routing(HeavySweep& h) {
  SweepStats& st = h.st;
  h.fab = std::make_shared<fabric::Fabric>(std::move(h.d.fabric));
  phase(SmPhase::kRouting);
  Task<std::optional<Routed>> routing = route(h.fab, true);  // a named task: see docs/coding-notes.md
  h.routed = co_await routing;
  if (!h.routed) co_return false;  // cancelled: the SM is going away
  if (device_losses_ != h.losses0) {
    stale_sweep();
    co_return false;
  }
  if (ha_->state() != wire::SmState::kMaster) {
    // Handed over (or disabled) while routing ran: the fabric is not ours to program.
    spdlog::info("sm: {} since discovery: the routes computed are dropped", wire::to_string(ha_->state()));
    co_return false;
  }
  st.routing_s = h.routed->routing_s;
  st.path_db_s = h.routed->path_db_s;
  const RoutingResult& routes = h.routed->routes;
  if (!routes.ok()) {
    h.d.fabric = std::move(*h.fab);
    sweep_failed(st, "routing: " + routes.error);
    co_return false;
  }
  st.top_lid = routes.top_lid;
  st.routing_engine = cfg_.routing_hook ? "routing hook" : to_string(routes.engine);
  st.routing_vls = routes.layers.count();
  st.lids_rerouted = routes.lids_rerouted;
  for (const std::string& why : routes.failed) spdlog::warn("sm: routing: {} (next engine of the chain)", why);
  spdlog::info("sm: routing: {} on {} SL/VL(s), {} LIDs routed{}{}; {:.3f} s (hop tables {:.3f}, LFTs {:.3f}, layers {:.3f})",
               st.routing_engine, st.routing_vls, st.lids_rerouted, routes.incremental ? " (incremental)" : "",
               routes.full_reason.empty() ? "" : " (full: " + routes.full_reason + ")", st.routing_s, routes.hop_tables_s,
               routes.lfts_s, routes.layers_s);
  sm_lid_ = h.fab->lid_of(fabric::EndPort{h.d.local_node, h.d.local_port});
  local_port_ = h.d.local_port;
  h.t4 = sched_->clock().now_ns();
  co_return true;
}

// A master that took over (or restarted) with every LID already known
// publishes before programming: paths and records do not depend on the
// writes that follow, so the SA answers now rather than after the whole
// fabric has been rewritten. P_Key tables and MFTs join at the next publish.
// The fabric returns to the sweep. False: cancelled.
Task<bool> SubnetManager::sweep_early_publication(HeavySweep& h) {
  const LidAssignReport& lids = h.lids;
  if (current_ == nullptr && ha_->state() == wire::SmState::kMaster && lids.assigned_new == 0 && lids.conflicts == 0 &&
      lids.exhausted == 0) {
    const RoutingResult& routes = h.routed->routes;
    Task<std::optional<AssembledSnapshot>> assembling =
        assemble_snapshot(SnapshotParts{.fabric = *h.fab,
                                        .lfts = routes.lfts,
                                        .top_lid = routes.top_lid,
                                        .paths = h.routed->paths,
                                        .sm = sm_identity(h.lp, sm_lid_, ha_->state(), ha_->act_count())});
    std::optional<AssembledSnapshot> pre = co_await assembling;
    if (!pre) co_return false;
    current_routes_.reset();  // its routing joins it at the final publication
    h.st.gid_traps += publish(std::move(*pre));
    spdlog::info("sm: LIDs unchanged: SA answering from epoch {} while the fabric is programmed", epoch_);
    const std::uint64_t e = epoch_;
    update_status([e](SmStatus& s) {
      s.epoch = e;
      ++s.early_publications;
    });
  }
  h.d.fabric = std::move(*h.fab);
  h.fab.reset();
  co_return true;
}

// What bring-up writes, and who is asked to reregister after the publication.
BringupConfig SubnetManager::sweep_bringup_config(HeavySweep& h) {
  BringupConfig bc;
  bc.port_num = h.lp.port_num;
  bc.sm_lid = sm_lid_;
  bc.sm_sl = cfg_.sm_sl;
  bc.ports = cfg_.ports;
  bc.m_key = cfg_.m_key;
  bc.m_key_lease_period = cfg_.m_key_lease_period;
  bc.m_key_protect_bits = cfg_.m_key_protect_bits;
  // A new mastership that cannot vouch for the clients' SA state asks them
  // to reregister; so does one that took another master's part (subnets
  // joined): those clients registered with that master's SA, not ours; and
  // ports are asked one by one (note_reregister_ports). Asked after the
  // publication, and again until a sweep programs and asks cleanly (an ask
  // may not have arrived, or came while a link down kept clients from our SA).
  if (h.decision.absorbed) spdlog::info("sm: another master's part joined ours: its clients are asked to reregister");
  role_.ask_all = role_.ask_all || (role_.mastership_new && role_.reregister) || h.decision.absorbed;
  note_reregister_ports(h.d.fabric, sm_lid_);
  if (role_.ask_all || !reregister_ports_.empty()) update_status([](SmStatus& s) { s.sa_state_current = false; });
  bc.partitions = &plan_partitions_for(h.d.fabric, h.lp.port_guid);
  bc.allow_both_pkeys = cfg_.allow_both_pkeys;
  bc.part_enforce = cfg_.part_enforce;
  bc.qos = cfg_.qos.get();
  bc.keys = mkeys_in_use() ? &mkeys_ : nullptr;
  return bc;
}

// Programming: switches and ports brought up, MFTs, SL2VL/VLArb; the
// sweep's times and SMPs to subnet up counted.
Task<void> SubnetManager::sweep_programming(HeavySweep& h) {
  SweepStats& st = h.st;
  DiscoveryResult& d = h.d;
  const RoutingResult& routes = h.routed->routes;
  const BringupConfig bc = sweep_bringup_config(h);
  phase(SmPhase::kProgramming);
  forget_reset_nodes(d.fabric);
  st.bringup = co_await bring_up(*queue_, d, routes, bc, programmed_);
  // A Set that failed (an LFT block, a PortInfo lost) left that table as it
  // was, and nothing on the wire will report it: sweep again (OpenSM repeats
  // a sweep after initialization errors). What was written is not rewritten.
  if (st.bringup.errors != 0) resweep_ = true;
  save_mkeys_async();
  unreachable_ = unreachable_ || (mkeys_in_use() && st.bringup.errors != 0);
  // Ports still behind a key we do not hold (a new key, their leases not
  // run out) refuse every Set, and each spends its time-outs and retries:
  // a switch's SL2VL tables alone are ports^2 of them, minutes of sweep.
  // The tables wait for the sweep that reaches them (one follows errors).
  const bool keys_unsettled = mkeys_in_use() && st.bringup.errors != 0;
  if (keys_unsettled) spdlog::info("sm: ports refused our M_Key: multicast, QoS and port tables wait for the next sweep");
  if (!keys_unsettled) {
    st.mft_blocks_written = co_await program_mcast(d.fabric);
    mcast_dirty_.store(false, std::memory_order_relaxed);
  }
  // QoS after bring-up (OperationalVLs are final), before the tables are
  // read; without QoS a layered routing still needs its SL2VL on every port.
  static const QosConfig kLayeredSl2Vl = layered_sl2vl_config();
  h.vl_tables = cfg_.qos != nullptr ? cfg_.qos.get() : routes.layers.layered() ? &kLayeredSl2Vl : nullptr;
  if (h.vl_tables != nullptr && !keys_unsettled)
    st.qos = co_await program_qos(*queue_, d, *h.vl_tables,
                                  QosProgramOptions{.port_num = h.lp.port_num, .m_key = cfg_.m_key}, qos_programmed_);
  h.tables_wait = keys_unsettled;
  const Nanos t5 = sched_->clock().now_ns();
  st.discovery_smps += h.recheck->smps;  // the clears and their re-reads belong to discovery
  if (h.recheck->moved || st.bringup.links_lost != 0) {
    // A link changed while we swept, and the clear erased its bit: no light
    // sweep would see it. Sweep again at once.
    spdlog::info("sm: {} since discovery read it: heavy sweep",
                 h.recheck->moved ? h.recheck->what : fmt::format("{} links went down", st.bringup.links_lost));
    walk_reason_ = "a port moved during the sweep";
    heavy_requested_.store(true, std::memory_order_relaxed);
  }
  st.programming_s = seconds(h.t4, t5);
  st.smps = queue_->submitted() - h.smps0;
  st.total_s = seconds(h.t0, t5);
  // On a simulated clock the CPU phases took no simulated time: add them.
  if (h.t4 == h.t1) st.total_s += st.lids_s + st.routing_s + st.path_db_s;
  st.ok = st.bringup.errors == 0;

  ha_->note_activity();
  if (st.ok) role_.mastership_new = false;
}

// Publication: the snapshot with its routes and tables, indexed off this
// core, becomes the SA's epoch; the store derives its change (traps 64/65
// for end ports gained and lost). False: cancelled.
Task<bool> SubnetManager::sweep_publication(HeavySweep& h) {
  RoutingResult& routes = h.routed->routes;
  SnapshotParts parts{.fabric = std::move(h.d.fabric),
                      .lfts = std::move(routes.lfts),
                      .top_lid = routes.top_lid,
                      .paths = std::move(h.routed->paths),
                      .sm = sm_identity(h.lp, sm_lid_, ha_->state(), ha_->act_count())};
  auto next_routes = std::make_shared<const RoutingResult>(std::move(routes));  // without its LFTs, which the snapshot holds
  Task<std::optional<AssembledSnapshot>> assembling = assemble_snapshot(std::move(parts));
  std::optional<AssembledSnapshot> a = co_await assembling;
  if (!a) co_return false;
  h.snap = a->snap;
  current_routes_ = std::move(next_routes);
  h.st.gid_traps += publish(std::move(*a));
  phase(SmPhase::kPublished);
  co_return true;
}

// After the publication: the clients of a new mastership, an absorbed part
// or ports noted one by one are asked to reregister (PortInfo.ClientReregister).
Task<void> SubnetManager::sweep_reregistration(HeavySweep& h) {
  if (!role_.ask_all && reregister_ports_.empty()) co_return;
  const ReregisterAsk ask{
      .port_num = h.lp.port_num, .m_key = cfg_.m_key, .sm_lid = sm_lid_, .all = role_.ask_all, .ports = &reregister_ports_};
  Task<ReregisterReport> asking = ask_clients_to_reregister(*queue_, h.snap->fabric, h.d.ca_port_paths, ask);
  const ReregisterReport rr = co_await asking;
  h.st.bringup.client_reregisters = rr.asked;
  spdlog::info("sm: {} clients asked to reregister ({}), {} answered, {} ports cannot be asked, {} not yet", rr.asked,
               role_.ask_all ? "all" : "some", rr.acked, rr.unable, rr.unsettled);
  if (h.st.ok && rr.acked == rr.asked && rr.unsettled == 0) {
    role_.ask_all = false;
    reregister_ports_.clear();
    update_status([](SmStatus& s) { s.sa_state_current = true; });
  }
}

// Subnet up: ports active, routes written, the SA answering from the
// publication; logged and in SmStatus (the port tables follow).
void SubnetManager::sweep_subnet_up(HeavySweep& h) {
  const SweepStats& st = h.st;
  const BringupReport& b = st.bringup;
  spdlog::info("sm: programmed: {} SwitchInfo, {} LFT blocks, {} PortInfo, {} armed, {} activated, {} P_Key, {} MFT blocks, {} errors",
               b.switch_info_sets, b.lft_blocks_written, b.port_info_sets, b.ports_armed, b.ports_activated, b.pkey_sets,
               st.mft_blocks_written, b.errors);
  if (b.lfts_lost != 0)
    spdlog::warn("sm: {} switches held our LinearFDBTop over tables we did not write (reset while we programmed): rewritten",
                 b.lfts_lost);
  if (h.vl_tables != nullptr)
    spdlog::info("sm: {}: {} SL2VL and {} VLArb tables written, {} as wanted, {} errors",
                 cfg_.qos != nullptr ? "QoS" : "layered routing's SL2VL", st.qos.sl2vl_sets, st.qos.vlarb_sets,
                 st.qos.kept, st.qos.errors);
  spdlog::info("sm: subnet up (epoch {}): {} nodes, {} switches, {} CAs, {} links, top LID {}, SM LID {}, {} SMPs; "
               "discovery {:.6f} s, LIDs {:.6f} s, routing {:.6f} s, path db {:.6f} s, programming {:.6f} s, total {:.6f} s",
               epoch_, st.nodes, st.switches, st.cas, st.links, st.top_lid, sm_lid_, st.smps, st.discovery_s, st.lids_s,
               st.routing_s, st.path_db_s, st.programming_s, st.total_s);
  const fabric::Node& own = h.snap->fabric.nodes[h.d.local_node];
  local_state_seen_ = own.ports[h.d.local_port].state;
  const std::uint64_t epoch = epoch_;
  const std::uint16_t sm_lid = shown_sm_lid();
  const wire::SmState state = ha_->state();
  update_status([&](SmStatus& s) {
    s.subnet_up = s.subnet_up || st.ok;
    s.state = state;
    s.sm_lid = sm_lid;
    s.epoch = epoch;
    ++s.heavy_sweeps;
    s.last_heavy = st;
  });
}

// After subnet up: the port tables (GUIDInfo, SL2VL, VLArb; OpenSM reads
// none) of the ports that changed, so subnet up does not wait for them.
// What was read replaces the subnet-up epoch's port tables inside the epoch
// (a new one would copy the fabric and the path database for them).
Task<void> SubnetManager::sweep_port_tables(HeavySweep& h) {
  if (h.tables_wait) co_return;  // keys unsettled: the next sweep reads them
  const Clock& clock = sched_->clock();
  const Nanos t0 = clock.now_ns();
  Task<TablesReport> reading = read_port_tables(
      *queue_, h.snap->fabric, h.d.ca_port_paths,
      TablesOptions{.port_num = h.lp.port_num, .m_key = cfg_.m_key, .switch_ports = cfg_.read_switch_port_tables},
      tables_);
  h.tables = co_await reading;
  h.st.tables_smps = h.tables.smps;
  h.st.tables_ports_read = h.tables.ports_read;
  h.st.tables_s = seconds(t0, clock.now_ns());
  // Nothing new, or another publication came first (it read the cache).
  if (h.tables.ports_read == 0 || current_ != h.snap) co_return;
  sa::PortTableView::Rows rows;
  const std::shared_ptr<const sa::PortTableView::Rows> now = h.snap->port_tables->load();
  Task<bool> filling = port_table_rows(h.snap->fabric, now.get(), rows);
  if (!co_await filling || current_ != h.snap) co_return;
  h.snap->port_tables->store(std::move(rows));
}

// The sweep's end: its counts, with the port tables', in SmStatus.
void SubnetManager::sweep_done(HeavySweep& h) {
  SweepStats& st = h.st;
  st.smps = queue_->submitted() - h.smps0;
  const TablesReport& tables = h.tables;
  spdlog::info("sm: tables: {} ports read, {} kept, {} SMPs, {} errors, {:.6f} s after subnet up; in epoch {}",
               tables.ports_read, tables.ports_kept, tables.smps, tables.errors, st.tables_s, epoch_);
  update_status([&](SmStatus& s) {
    ++s.port_table_sweeps;
    s.last_heavy = st;
  });
}

}  // namespace madengine::sm
