// The SM's sweeps (see sm.hpp): a heavy sweep discovers, elects, numbers,
// routes (on the compute pool), programs and publishes; a light sweep asks
// every switch whether a port changed; multicast-only changes write MFTs.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "madengine/wire/codec.hpp"
#include "sa/paths/path_db.hpp"
#include "sm/bringup/client_reregister.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/discovery/rediscover.hpp"
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

// End ports whose PortInfo did not answer this sweep read as LID 0: they
// keep the LID `last` (our last publication, or the master's fabric as a
// standby saw it) knew them by, rather than take a new one. A port that
// answered with LID 0 has none.
void keep_unread_lids(const fabric::Fabric& f, std::vector<std::uint16_t>& lids, const sa::Snapshot* last) {
  if (last == nullptr) return;
  const std::vector<fabric::EndPort> ends = f.end_ports();
  for (std::size_t i = 0; i < ends.size() && i < lids.size(); ++i) {
    if (lids[i] != 0 || f.nodes[ends[i].node].ports[ends[i].port].info.port_state() != 0) continue;
    const auto it = last->by_port_guid.find(end_port_guid(f, ends[i]));
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

Task<void> SubnetManager::heavy_sweep() {
  const Clock& clock = sched_->clock();
  SweepStats st;
  const Nanos t0 = clock.now_ns();
  const std::uint64_t smps0 = queue_->submitted();
  const LocalPort lp = transport_.local_port();
  const std::uint32_t losses0 = device_losses_;
  ha_->sweep_started();
  phase(SmPhase::kDiscovery);
  // PortStateChange bits are cleared only once we know we act on this sweep.
  const DiscoveryOptions dopts{.port_num = lp.port_num,
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
    Task<Rediscovery> again = rediscover(*queue_, current_->fabric, local_node_of(current_->fabric), local_port_,
                                         std::move(changed), dopts);
    Rediscovery r = co_await again;
    if (r.result) {
      found = std::move(r.result);
      st.rediscovered = true;
      spdlog::info("sm: re-discovery: {} link(s) down, {} SMPs", r.links_down, found->smps);
    } else {
      st.walk_reason = r.full_reason;
      spdlog::info("sm: re-discovery not enough ({}): walking the subnet", r.full_reason);
    }
  }
  if (!found) {
    Task<DiscoveryResult> walking = discover(*queue_, dopts);
    found = co_await walking;
  }
  DiscoveryResult d = std::move(*found);
  found.reset();
  if (mkeys_in_use()) learn_mkeys(d);
  unreachable_ = mkeys_in_use() && d.errors != 0;
  const Nanos t1 = clock.now_ns();
  st.discovery_s = seconds(t0, t1);
  st.discovery_smps = queue_->submitted() - smps0;
  st.discovery_errors = d.errors;
  st.nodes = static_cast<std::uint32_t>(d.fabric.nodes.size());
  st.switches = static_cast<std::uint32_t>(d.fabric.switch_count());
  st.cas = st.nodes - st.switches;
  st.links = d.links();
  if (d.local_node == fabric::kNoNode) {
    st.error = "the local port did not answer NodeInfo";
    spdlog::error("sm: heavy sweep failed: {}", st.error);
    update_status([&st](SmStatus& s) { s.last_heavy = st; });
    // Our SMA mute for a while: what this sweep came to do is still to do,
    // and a light sweep may not see it again (its change bits were read).
    resweep_ = true;
    walk_reason_ = "the last heavy sweep failed";
    co_return;
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

  // Election: the other SMs found through IsSM, and whether we configure.
  const std::uint16_t own_lid = d.fabric.lid_of(fabric::EndPort{d.local_node, d.local_port});
  const ha::SweepDecision decision = co_await ha_->after_discovery(*queue_, d.fabric, lp.port_guid, own_lid);
  if (device_losses_ != losses0) co_return stale_sweep();
  publish_ha_status();
  if (!decision.program) {
    spdlog::info("sm: {} with {} other SM(s): fabric left as it is", wire::to_string(ha_->state()), decision.peers);
    if (decision.handed_part) remember_handed_part();
    update_status([](SmStatus& s) { ++s.sweeps_not_programmed; });
    if (ha_->state() == wire::SmState::kStandby) {
      note_master_lid(d);
      std::vector<std::uint16_t> reported = d.current_lids();  // before the fabric is moved out
      Task<void> prepare = prepare_warm(std::move(d.fabric), std::move(reported), lp);
      co_await prepare;
    }
    co_return;
  }
  if (decision.handed) {
    // The SM that handed us the subnet may have programmed it while we read
    // it (LIDs of a part it had just joined): read it again before numbering,
    // as OpenSM sweeps afresh when a HANDOVER ends its discovery.
    spdlog::info("sm: handed the subnet during discovery: discovering again before numbering");
    Task<DiscoveryResult> again = discover(*queue_, dopts);
    DiscoveryResult fresh = co_await again;
    if (fresh.local_node != fabric::kNoNode) {
      if (mkeys_in_use()) learn_mkeys(fresh);
      unreachable_ = mkeys_in_use() && fresh.errors != 0;
      d = std::move(fresh);
    }
  }
  const std::shared_ptr<const PortStateRecheck> recheck = clear_port_state_changes(*queue_, d, dopts);
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
  std::vector<std::uint16_t> current_lids = d.current_lids();
  if (d.errors != 0) keep_unread_lids(d.fabric, current_lids, current_ != nullptr ? current_.get() : warm_.get());
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
  }

  // CPU phases are timed with the steady clock: on the sim transport the
  // engine clock is simulated time, which does not move while we compute.
  const auto w1 = std::chrono::steady_clock::now();
  phase(SmPhase::kLids);
  const LidAssignReport lids = assign_lids(d.fabric, guid2lid_, cfg_.lmc, current_lids,
                                           role_.lids_from_fabric ? LidPreference::kCurrent : LidPreference::kMap);
  role_.lids_from_fabric = false;
  st.lids_new = lids.assigned_new;
  save_guid2lid_async();
  st.lids_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w1).count();
  if (lids.assigned_new != 0 || lids.conflicts != 0 || lids.exhausted != 0)
    spdlog::info("sm: LIDs: {} kept from map, {} kept current, {} new, {} conflicts, {} exhausted", lids.kept_from_map,
                 lids.kept_current, lids.assigned_new, lids.conflicts, lids.exhausted);

  // Routing and the path database run on the compute pool: this core goes
  // on answering SA queries (from the current epoch) and SMInfo polls. The
  // job owns the fabric until it is done.
  auto fab = std::make_shared<fabric::Fabric>(std::move(d.fabric));
  phase(SmPhase::kRouting);
  Task<std::optional<Routed>> routing = route(fab, true);  // a named task: see docs/coding-notes.md
  std::optional<Routed> routed = co_await routing;
  if (!routed) co_return;  // cancelled: the SM is going away
  if (device_losses_ != losses0) co_return stale_sweep();
  if (ha_->state() != wire::SmState::kMaster) {
    // Handed over (or disabled) while routing ran: the fabric is not ours to program.
    spdlog::info("sm: {} since discovery: the routes computed are dropped", wire::to_string(ha_->state()));
    co_return;
  }
  st.routing_s = routed->routing_s;
  st.path_db_s = routed->path_db_s;
  RoutingResult& routes = routed->routes;
  if (!routes.ok()) {
    d.fabric = std::move(*fab);
    st.error = "routing: " + routes.error;
    spdlog::error("sm: heavy sweep failed: {}", st.error);
    update_status([&st](SmStatus& s) { s.last_heavy = st; });
    resweep_ = true;
    walk_reason_ = "the last heavy sweep failed";
    co_return;
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
  sm_lid_ = fab->lid_of(fabric::EndPort{d.local_node, d.local_port});
  local_port_ = d.local_port;
  auto snap = std::make_shared<sa::Snapshot>();
  snap->paths = std::move(routed->paths);
  const Nanos t4 = clock.now_ns();

  // A master that took over (or restarted) with every LID already known
  // publishes before programming: paths and records do not depend on the
  // writes that follow, so the SA answers now rather than after the whole
  // fabric has been rewritten. P_Key tables and MFTs join at the next publish.
  if (current_ == nullptr && ha_->state() == wire::SmState::kMaster && lids.assigned_new == 0 && lids.conflicts == 0 &&
      lids.exhausted == 0) {
    auto pre = std::make_shared<sa::Snapshot>();
    pre->paths = snap->paths;
    pre->lfts = routes.lfts;
    pre->top_lid = routes.top_lid;
    pre->sm = sm_identity(lp, sm_lid_, ha_->state(), ha_->act_count());
    pre->subnet_prefix = cfg_.subnet_prefix;
    fill_tables(*fab, *pre);
    pre->fabric = *fab;
    Task<bool> indexing = index_snapshot(pre);
    if (const bool ok = co_await indexing; !ok) co_return;
    pre->epoch = ++epoch_;
    current_ = pre;
    current_routes_.reset();  // its routing joins it at the final publication
    store_.publish(pre);
    spdlog::info("sm: LIDs unchanged: SA answering from epoch {} while the fabric is programmed", epoch_);
    const std::uint64_t e = epoch_;
    update_status([e](SmStatus& s) {
      s.epoch = e;
      ++s.early_publications;
    });
  }
  d.fabric = std::move(*fab);
  fab.reset();

  BringupConfig bc;
  bc.port_num = lp.port_num;
  bc.sm_lid = sm_lid_;
  bc.sm_sl = cfg_.sm_sl;
  bc.subnet_prefix = cfg_.subnet_prefix;
  bc.subnet_timeout = cfg_.subnet_timeout;
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
  if (decision.absorbed) spdlog::info("sm: another master's part joined ours: its clients are asked to reregister");
  role_.ask_all = role_.ask_all || (role_.mastership_new && role_.reregister) || decision.absorbed;
  note_reregister_ports(d.fabric, sm_lid_);
  if (role_.ask_all || !reregister_ports_.empty()) update_status([](SmStatus& s) { s.sa_state_current = false; });
  bc.partitions = &plan_partitions_for(d.fabric, lp.port_guid);
  bc.allow_both_pkeys = cfg_.allow_both_pkeys;
  bc.part_enforce = cfg_.part_enforce;
  bc.qos = cfg_.qos.get();
  bc.keys = mkeys_in_use() ? &mkeys_ : nullptr;
  phase(SmPhase::kProgramming);
  st.bringup = co_await bring_up(*queue_, d, routes, bc, programmed_);
  // A Set that failed (an LFT block, a PortInfo lost) left that table as it
  // was, and nothing on the wire will report it: sweep again (OpenSM repeats
  // a sweep after initialization errors). What was written is not rewritten.
  if (st.bringup.errors != 0) resweep_ = true;
  save_mkeys_async();
  unreachable_ = unreachable_ || (mkeys_in_use() && st.bringup.errors != 0);
  st.mft_blocks_written = co_await program_mcast(d.fabric);
  mcast_dirty_.store(false, std::memory_order_relaxed);
  // QoS after bring-up (OperationalVLs are final), before the tables are
  // read; without QoS a layered routing still needs its SL2VL on every port.
  static const QosConfig kLayeredSl2Vl = layered_sl2vl_config();
  const QosConfig* vl_tables = cfg_.qos != nullptr ? cfg_.qos.get() : routes.layers.layered() ? &kLayeredSl2Vl : nullptr;
  if (vl_tables != nullptr)
    st.qos = co_await program_qos(*queue_, d, *vl_tables, QosProgramOptions{.port_num = lp.port_num, .m_key = cfg_.m_key},
                                  qos_programmed_);
  // After bring-up: OperationalVLs are final, and only changed ports are read.
  const Nanos t_tables = clock.now_ns();
  const TablesReport tables = co_await read_port_tables(
      *queue_, d, TablesOptions{.port_num = lp.port_num, .m_key = cfg_.m_key, .switch_ports = cfg_.read_switch_port_tables},
      tables_);
  st.tables_smps = tables.smps;
  st.tables_ports_read = tables.ports_read;
  const Nanos t5 = clock.now_ns();
  st.discovery_smps += recheck->smps;  // the clears and their re-reads belong to discovery
  if (recheck->moved) {
    // A link changed while we swept, and the clear erased its bit: no light
    // sweep would see it. Sweep again at once.
    spdlog::info("sm: {} since discovery read it: heavy sweep", recheck->what);
    walk_reason_ = "a port moved during the sweep";
    heavy_requested_.store(true, std::memory_order_relaxed);
  }
  st.tables_s = seconds(t_tables, t5);
  st.programming_s = seconds(t4, t5);
  st.smps = queue_->submitted() - smps0;
  st.total_s = seconds(t0, t5);
  // On a simulated clock the CPU phases took no simulated time: add them.
  if (t4 == t1) st.total_s += st.lids_s + st.routing_s + st.path_db_s;
  st.ok = st.bringup.errors == 0;

  ha_->note_activity();
  if (st.ok) role_.mastership_new = false;

  snap->lfts = std::move(routes.lfts);
  snap->top_lid = routes.top_lid;
  auto next_routes = std::make_shared<const RoutingResult>(std::move(routes));  // without its LFTs, which snap holds
  snap->sm = sm_identity(lp, sm_lid_, ha_->state(), ha_->act_count());
  snap->subnet_prefix = cfg_.subnet_prefix;
  fill_tables(d.fabric, *snap);
  snap->fabric = std::move(d.fabric);
  Task<bool> indexing = index_snapshot(snap);
  if (const bool ok = co_await indexing; !ok) co_return;
  snap->epoch = ++epoch_;
  current_ = snap;
  current_routes_ = std::move(next_routes);
  store_.publish(snap);
  st.gid_traps = report_gid_changes(*snap);
  phase(SmPhase::kPublished);
  if (role_.ask_all || !reregister_ports_.empty()) {
    const ReregisterAsk ask{
        .port_num = lp.port_num, .m_key = cfg_.m_key, .sm_lid = sm_lid_, .all = role_.ask_all, .ports = &reregister_ports_};
    Task<ReregisterReport> asking = ask_clients_to_reregister(*queue_, snap->fabric, d.ca_port_paths, ask);
    const ReregisterReport rr = co_await asking;
    st.bringup.client_reregisters = rr.asked;
    spdlog::info("sm: {} clients asked to reregister ({}), {} answered, {} ports cannot be asked, {} not yet", rr.asked,
                 role_.ask_all ? "all" : "some", rr.acked, rr.unable, rr.unsettled);
    if (st.ok && rr.acked == rr.asked && rr.unsettled == 0) {
      role_.ask_all = false;
      reregister_ports_.clear();
      update_status([](SmStatus& s) { s.sa_state_current = true; });
    }
  }

  const BringupReport& b = st.bringup;
  spdlog::info("sm: programmed: {} SwitchInfo, {} LFT blocks, {} PortInfo, {} armed, {} activated, {} P_Key, {} MFT blocks, {} errors",
               b.switch_info_sets, b.lft_blocks_written, b.port_info_sets, b.ports_armed, b.ports_activated, b.pkey_sets,
               st.mft_blocks_written, b.errors);
  if (b.lfts_lost != 0)
    spdlog::warn("sm: {} switches held our LinearFDBTop over tables we did not write (reset while we programmed): rewritten",
                 b.lfts_lost);
  spdlog::info("sm: tables: {} ports read, {} kept, {} SMPs, {} errors, {:.6f} s; {} GID traps", tables.ports_read,
               tables.ports_kept, tables.smps, tables.errors, st.tables_s, st.gid_traps);
  if (vl_tables != nullptr)
    spdlog::info("sm: {}: {} SL2VL and {} VLArb tables written, {} as wanted, {} errors",
                 cfg_.qos != nullptr ? "QoS" : "layered routing's SL2VL", st.qos.sl2vl_sets, st.qos.vlarb_sets,
                 st.qos.kept, st.qos.errors);
  spdlog::info("sm: subnet up (epoch {}): {} nodes, {} switches, {} CAs, {} links, top LID {}, SM LID {}, {} SMPs; "
               "discovery {:.6f} s, LIDs {:.6f} s, routing {:.6f} s, path db {:.6f} s, programming {:.6f} s, total {:.6f} s",
               epoch_, st.nodes, st.switches, st.cas, st.links, st.top_lid, sm_lid_, st.smps, st.discovery_s, st.lids_s,
               st.routing_s, st.path_db_s, st.programming_s, st.total_s);
  const fabric::Node& own = snap->fabric.nodes[d.local_node];
  local_state_seen_ = own.ports[d.local_port].state;
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

// The guid2lid file is written by the I/O pool (an fsync per save must not
// hold the MAD core), from a copy of the map; saves keep their order.
void SubnetManager::save_guid2lid_async() {
  if (cfg_.guid2lid_path.empty() || (guid2lid_ == guid2lid_saved_ && !guid2lid_name_due_)) return;
  guid2lid_saved_ = guid2lid_;
  guid2lid_name_due_ = false;
  const bool queued = io_->submit([path = cfg_.guid2lid_path, map = guid2lid_, fabric = fabric_] {
    Guid2LidError err;
    if (!save_guid2lid(path, map, err, fabric)) spdlog::warn("sm: cannot save guid2lid: {}", err.what);
  });
  if (!queued) {
    spdlog::warn("sm: guid2lid not saved: the I/O queue is full (saved with the next change)");
    guid2lid_saved_.clear();
  }
}

Task<bool> SubnetManager::light_sweep() {
  const std::uint64_t smps0 = queue_->submitted();
  const std::uint8_t port_num = transport_.local_port().port_num;
  auto changed = std::make_shared<bool>(false);
  const auto snap = current_;
  std::uint64_t lid_routed = 0;
  for (const fabric::Node& n : snap->fabric.nodes) {
    if (!n.is_switch()) continue;
    const wire::DrPath path = n.dr_path;
    // The fabric is programmed: ask each switch by its LID, through the
    // LFTs we wrote, so the switches on the way do no SMA work. A switch
    // that does not answer (dead, or a route broken) escalates to a heavy
    // sweep, which is directed-route.
    const bool by_lid = cfg_.lid_routed_light_sweep && n.base_lid != 0 && path.hops != 0;
    lid_routed += by_lid ? 1 : 0;
    const MadBuf get = by_lid ? make_lid_request(wire::method::kGet, wire::smp_attr::kSwitchInfo, 0, n.base_lid, port_num,
                                                 {}, cfg_.m_key)
                              : make_dr_request(wire::method::kGet, wire::smp_attr::kSwitchInfo, 0, path, port_num, {},
                                                cfg_.m_key);
    queue_->submit(get, [this, changed, path, port_num, guid = n.node_guid](const TxnResult& r) {
      const auto si = smp_response_ok(r) ? wire::decode<wire::SwitchInfo>(smp_data(r.response)) : std::nullopt;
      if (!si) {
        // A switch stopped answering, or its LID route crossed a link that
        // went down: the heavy sweep reads it around the changed links, and
        // walks the subnet if it still does not answer.
        *changed = true;
        changed_switches_.push_back(guid);
        return;
      }
      if (si->port_state_change() == 0) return;
      *changed = true;
      changed_switches_.push_back(guid);
      wire::SwitchInfo clear = *si;
      clear.prepare_for_set(true);  // write 1 to clear (IBA 14.2.5.4)
      queue_->submit(make_dr_request(wire::method::kSet, wire::smp_attr::kSwitchInfo, 0, path, port_num,
                                     wire::as_bytes(clear), cfg_.m_key),
                     nullptr);
    });
  }
  // Another SM of the last election that has become MASTER since (its
  // polls of us failed): the heavy sweep's election settles which stays.
  ha_->check_peers(*queue_, [this, changed](std::uint64_t guid) {
    spdlog::info("sm: SM {:#018x} answers MASTER since our last election: heavy sweep", guid);
    *changed = true;
    walk_reason_ = fmt::format("SM {:#018x} became MASTER", guid);
  });
  const std::uint16_t want_lid = sm_lid_;
  queue_->submit(make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, local_port_, wire::DrPath{}, port_num, {},
                                 cfg_.m_key),
                 [this, changed, want_lid](const TxnResult& r) {
                   const auto pi = smp_response_ok(r) ? wire::decode<wire::PortInfo>(smp_data(r.response)) : std::nullopt;
                   if (!pi || pi->state() != wire::PortState::kActive || pi->lid.get() != want_lid) {
                     *changed = true;
                     walk_reason_ = "our port changed";
                   } else if (pi->master_sm_lid.get() != want_lid) {
                     // Another master programmed our port since our last
                     // election (its SMInfo answer was lost then): elect again.
                     *changed = true;
                     walk_reason_ = fmt::format("our port's MasterSMLID is {}: another master programs the subnet",
                                                pi->master_sm_lid.get());
                   }
                 });
  co_await queue_->drained();
  const std::uint64_t smps = queue_->submitted() - smps0;
  // Ports that did not answer the last heavy sweep may hold a key we lack:
  // sweep again (their lease may have run out by now, IBA 14.2.4.2).
  if (unreachable_) *changed = true;
  const bool ch = *changed;
  if (ch) spdlog::info("sm: light sweep ({} SMPs) saw a change: heavy sweep", smps);
  update_status([smps, lid_routed](SmStatus& s) {
    ++s.light_sweeps;
    s.last_light_smps = smps;
    s.last_light_lid_routed = lid_routed;
  });
  co_return ch;
}

Task<bool> SubnetManager::local_port_changed() {
  auto changed = std::make_shared<bool>(false);
  auto state = std::make_shared<std::uint8_t>(local_state_seen_);
  const std::uint16_t want_lid = sm_lid_;
  queue_->submit(make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, local_port_, wire::DrPath{},
                                 transport_.local_port().port_num, {}, cfg_.m_key),
                 [changed, state, want_lid](const TxnResult& r) {
                   const auto pi = smp_response_ok(r) ? wire::decode<wire::PortInfo>(smp_data(r.response)) : std::nullopt;
                   if (!pi) return;  // our own SMA did not answer: the device's life cycle tells
                   // A LID we did not write, or another state: a cable pulled (DOWN)
                   // or put back (INIT). Each change sweeps once.
                   *changed = (*state != 0 && pi->port_state() != *state) ||
                              (pi->port_state() == static_cast<std::uint8_t>(wire::PortState::kActive) &&
                               pi->lid.get() != want_lid);
                   *state = pi->port_state();
                 });
  co_await queue_->drained();
  if (*changed) {
    spdlog::info("sm: our port is {} (was {}): heavy sweep", *state, local_state_seen_);
    walk_reason_ = "our port changed";
    // A cable pulled: another SM may number the subnet before we are back.
    if (*state != static_cast<std::uint8_t>(wire::PortState::kActive)) role_.lids_from_fabric = true;
  }
  local_state_seen_ = *state;
  co_return *changed;
}

Task<std::uint32_t> SubnetManager::program_mcast(const fabric::Fabric& f) {
  if (cfg_.mcast == nullptr) co_return 0;
  const auto mfts = compute_mfts(f, cfg_.mcast->groups());
  auto written = std::make_shared<std::uint32_t>(0);
  const std::uint8_t port_num = transport_.local_port().port_num;
  std::map<std::pair<std::uint64_t, MftKey>, wire::MftBlock> next;
  for (const auto& [sw, blocks] : mfts) {
    for (const auto& [key, blk] : blocks) next.emplace(std::pair{f.nodes[sw].node_guid, key}, blk);
  }
  // Blocks that held groups before and no longer do are written as zeros.
  for (const auto& [k, blk] : mft_programmed_)
    if (!next.contains(k)) next.emplace(k, wire::MftBlock{});
  std::unordered_map<std::uint64_t, fabric::NodeId> by_guid;
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) by_guid.emplace(f.nodes[i].node_guid, i);
  for (const auto& [k, blk] : next) {
    const auto prev = mft_programmed_.find(k);
    if (prev != mft_programmed_.end() &&
        std::equal(prev->second.port_masks.begin(), prev->second.port_masks.end(), blk.port_masks.begin()))
      continue;
    const auto it = by_guid.find(k.first);
    if (it == by_guid.end()) continue;
    const auto key = k;
    const wire::MftBlock b = blk;
    queue_->submit(make_dr_request(wire::method::kSet, wire::smp_attr::kMulticastFwdTable,
                                   wire::mft_modifier(k.second.position, k.second.block), f.nodes[it->second].dr_path,
                                   port_num, wire::as_bytes(blk), cfg_.m_key),
                   [this, key, b, written](const TxnResult& r) {
                     if (!smp_response_ok(r)) return;
                     mft_programmed_[key] = b;
                     ++*written;
                   });
  }
  co_await queue_->drained();
  co_return *written;
}

}  // namespace madengine::sm
