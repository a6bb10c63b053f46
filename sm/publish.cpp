// What the SM hands the SA (see sm.hpp): routes and the path database built
// on the compute pool, snapshots assembled (one function for every kind)
// and published through the store, a standby's prepared snapshot, notices
// for subscribers, the MFT view.
#include <spdlog/spdlog.h>

#include <chrono>
#include <unordered_map>

#include "engine/offload.hpp"
#include "sa/paths/path_db.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/switch_graph.hpp"
#include "sm/routing_hook.hpp"
#include "sm/sm.hpp"

namespace madengine::sm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

RoutingOptions SubnetManager::routing_options() const {
  RoutingOptions ropts;
  ropts.chain = cfg_.routing_chain;
  ropts.root_guids = cfg_.root_guids;
  ropts.threads = std::max(1u, cfg_.routing_threads);
  ropts.vls_max = data_vls_of_cap(cfg_.ports.max_op_vls);  // the data VLs bring-up enables
  return ropts;
}

// On a compute thread: touches only its arguments (the job owns them).
Routed route_fabric(const fabric::Fabric& f, const RoutingOptions& ropts, unsigned shards, unsigned path_db_threads,
                    const RouteBase* base, const RoutingHook* hook) {
  Routed out;
  const auto t0 = std::chrono::steady_clock::now();
  // The embedder's hook routes every destination. The engines, incremental:
  // destinations the change since `base` leaves alone keep their routes (an
  // unchanged fabric writes no LFT block).
  if (hook != nullptr && *hook) {
    out.routes = route_by_hook(f, *hook);
    base = nullptr;
  } else {
    out.routes = base != nullptr
                     ? compute_routes(f, ropts, PreviousRoutes{&base->snap->fabric, base->routes.get(), &base->snap->lfts})
                     : compute_routes(f, ropts);
  }
  out.routing_s = seconds_since(t0);
  if (!out.routes.ok()) return out;
  const auto t1 = std::chrono::steady_clock::now();
  // Every route kept on the same fabric: the base's path database answers
  // the same (renumbered), so it is not built again.
  const RoutingResult& r = out.routes;
  const bool same_routes = base != nullptr && r.incremental && r.lids_rerouted == 0 && !r.layers.layered() &&
                           r.top_lid == base->snap->top_lid;
  if (!same_routes || !sa::PathDb::reuse(base->snap->paths, base->snap->fabric, f, out.paths))
    out.paths = sa::PathDb::build(f, r.lfts, r.top_lid, shards, std::max(1u, path_db_threads), &r.layers);
  out.path_db_s = seconds_since(t1);
  return out;
}

Task<std::optional<Routed>> SubnetManager::route(std::shared_ptr<const fabric::Fabric> f, bool incremental) {
  std::optional<RouteBase> base;
  if (incremental && current_ != nullptr && current_routes_ != nullptr) base = RouteBase{current_, current_routes_};
  auto job = offload(*compute_, mailbox_,
                     [f, base, ropts = routing_options(), shards = unsigned{engine_.cores()}, threads = cfg_.path_db_threads,
                      hook = cfg_.routing_hook] {
                       return route_fabric(*f, ropts, shards, threads, base ? &*base : nullptr, &hook);
                     });
  auto r = co_await job;
  if (!r) {
    if (!r.cancelled) spdlog::error("sm: routing failed (out of memory?)");
    co_return std::nullopt;
  }
  co_return std::move(*r.value);
}

Task<std::optional<AssembledSnapshot>> SubnetManager::assemble_snapshot(SnapshotParts parts) {
  auto snap = std::make_shared<sa::Snapshot>();
  snap->paths = std::move(parts.paths);
  snap->lfts = std::move(parts.lfts);
  snap->top_lid = parts.top_lid;
  snap->sm = parts.sm;
  snap->subnet_prefix = cfg_.ports.subnet_prefix;
  snap->fabric = std::move(parts.fabric);
  Task<void> filling = fill_tables(snap->fabric, *snap);
  co_await filling;
  auto job = offload(*compute_, mailbox_, [snap, base = store_.current()] {
    snap->index();
    return sa::prepare_change(base, *snap);
  });
  auto r = co_await job;
  if (!r.value) co_return std::nullopt;
  co_return AssembledSnapshot{std::move(snap), std::move(*r.value)};
}

std::uint32_t SubnetManager::publish(AssembledSnapshot a) {
  a.snap->epoch = ++epoch_;
  std::shared_ptr<const sa::Snapshot> mine = std::exchange(current_, a.snap);
  std::shared_ptr<const sa::Snapshot> replaced;
  const auto change = store_.publish(std::move(a.snap), std::move(a.change), &replaced);
  // Either may be the last reference to the old epoch: freed on the compute pool.
  release_on(*compute_, std::move(mine));
  release_on(*compute_, std::move(replaced));
  if (change == nullptr || change->gid_traps.empty()) return 0;
  spdlog::info("sm: epoch {}: {} end ports in service, {} out of service (traps 64/65 for subscribers)", epoch_,
               change->gained.size(), change->lost.size());
  return static_cast<std::uint32_t>(change->gid_traps.size());
}

sa::SmIdentity SubnetManager::sm_identity(const LocalPort& lp, std::uint16_t lid, wire::SmState state,
                                          std::uint32_t act_count) const noexcept {
  return sa::SmIdentity{.port_guid = lp.port_guid,
                        .lid = lid,
                        .sl = cfg_.sm_sl,
                        .priority = cfg_.priority,
                        .state = static_cast<std::uint8_t>(state),
                        .sm_key = cfg_.sm_key,
                        .act_count = act_count,
                        .subnet_timeout = cfg_.ports.subnet_timeout};
}

// ---- a standby's prepared snapshot ----------------------------------------------

// Routes, path database and indexes run on the compute pool: a standby
// answers its master's polls meanwhile.
Task<void> SubnetManager::prepare_warm(fabric::Fabric f, std::vector<std::uint16_t> current_lids, LocalPort lp) {
  warm_.reset();
  warm_change_ = {};
  master_lids_.clear();  // this reading only: an older one may predate a renumbering
  const auto ends = f.end_ports();
  for (std::size_t i = 0; i < ends.size() && i < current_lids.size(); ++i)
    if (current_lids[i] != 0) master_lids_[end_port_guid(f, ends[i])] = lid_range(f.nodes[ends[i].node], current_lids[i]);
  Guid2Lid map = guid2lid_;  // the master's LIDs as the ports report them; our map is not touched
  const LidAssignReport lids = assign_lids(f, map, cfg_.lmc, current_lids, LidPreference::kCurrent);
  if (lids.assigned_new != 0 || lids.conflicts != 0) {
    spdlog::info("sm: standby: the master has not numbered every port yet ({} new, {} conflicts): no prepared snapshot",
                 lids.assigned_new, lids.conflicts);
    co_return;
  }
  auto fab = std::make_shared<fabric::Fabric>(std::move(f));
  Task<std::optional<Routed>> routing = route(fab, false);
  std::optional<Routed> routed = co_await routing;
  if (!routed || !routed->routes.ok()) co_return;
  RoutingResult& routes = routed->routes;
  SnapshotParts parts{.fabric = std::move(*fab),
                      .lfts = std::move(routes.lfts),
                      .top_lid = routes.top_lid,
                      .paths = std::move(routed->paths),
                      .sm = sm_identity(lp, lp.lid, wire::SmState::kMaster, 0)};
  warm_routes_ = std::make_shared<const RoutingResult>(std::move(routes));  // without its LFTs, which the snapshot holds
  Task<std::optional<AssembledSnapshot>> assembling = assemble_snapshot(std::move(parts));
  std::optional<AssembledSnapshot> a = co_await assembling;
  if (!a) co_return;
  warm_ = std::move(a->snap);
  warm_change_ = std::move(a->change);
  update_status([](SmStatus& s) { ++s.prepared_snapshots; });
  spdlog::info("sm: standby prepared a snapshot of the master's fabric ({} nodes, top LID {})",
               warm_->fabric.nodes.size(), warm_->top_lid);
}

// The takeover sweep found every port it reached at the LID the prepared
// snapshot has: publish that now (the dead master's port stays in it until
// the final publication of this sweep).
bool SubnetManager::publish_warm(const fabric::Fabric& f, const std::vector<std::uint16_t>& current_lids) {
  std::unordered_map<std::uint64_t, std::uint16_t> warm_lids;
  for (const fabric::EndPort e : warm_->fabric.end_ports()) {
    const fabric::Node& n = warm_->fabric.nodes[e.node];
    warm_lids.emplace(n.ports[e.port].guid, warm_->fabric.lid_of(e));
  }
  const auto ends = f.end_ports();
  if (ends.size() != current_lids.size()) return false;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const auto it = warm_lids.find(f.nodes[ends[i].node].ports[ends[i].port].guid);
    if (it == warm_lids.end() || current_lids[i] == 0 || it->second != current_lids[i]) return false;
  }
  warm_->sm.act_count = ha_->act_count();
  current_routes_ = std::move(warm_routes_);
  publish(AssembledSnapshot{std::move(warm_), std::move(warm_change_)});
  spdlog::info("sm: takeover: LIDs as prepared, SA answering from epoch {} while routing and programming run", epoch_);
  warm_change_ = {};
  return true;
}

// ---- notices ----------------------------------------------------------------------

void SubnetManager::notify(const wire::Notice& n) noexcept {
  if (!cfg_.on_notice) return;
  try {
    cfg_.on_notice(n);
  } catch (...) {
    spdlog::warn("sm: notice for trap {} not passed on (out of memory)", n.trap_number.get());
  }
}

// ---- tables -----------------------------------------------------------------------

// P_Key tables and MFTs as programmed, for the SA's records and checks.
Task<void> SubnetManager::fill_tables(const fabric::Fabric& f, sa::Snapshot& snap) {
  sa::PortTableView::Rows rows;
  Task<bool> filling = port_table_rows(f, nullptr, rows);
  if (!co_await filling) co_return;  // cancelled: the SM is going away
  snap.port_tables = std::make_shared<sa::PortTableView>(std::move(rows));
  snap.partitions.clear();
  if (plan_ != nullptr)
    for (const Partition& p : plan_->partitions) snap.partitions.push_back(sa::PartitionInfo{.pkey = p.pkey, .sl = p.sl});
  fill_qos(f, snap);
  snap.mfts->store(mft_view(f));
}

// At 13,000 nodes and 80,000 ports the fill takes tens of milliseconds: the
// core this SM shares with every received MAD answers between slices.
Task<bool> SubnetManager::port_table_rows(const fabric::Fabric& f, const sa::PortTableView::Rows* pkeys_of,
                                          sa::PortTableView::Rows& rows) {
  constexpr fabric::NodeId kNodesPerSlice = 512;
  rows.resize(f.nodes.size());
  for (fabric::NodeId first = 0; first < f.nodes.size(); first += kNodesPerSlice) {
    const fabric::NodeId last = std::min<fabric::NodeId>(first + kNodesPerSlice, f.nodes.size());
    for (fabric::NodeId i = first; i < last && pkeys_of != nullptr; ++i)
      if (i < pkeys_of->size()) rows[i] = (*pkeys_of)[i];  // the other tables are replaced below
    fill_port_tables(f, tables_, rows, first, last);  // SL2VL, VLArb, GUIDInfo as read (sm/tables)
    for (fabric::NodeId i = first; i < last && pkeys_of == nullptr; ++i) {
      const fabric::Node& n = f.nodes[i];
      auto& ports = rows[i];
      for (auto it = programmed_.pkeys.lower_bound({n.node_guid, 0});
           it != programmed_.pkeys.end() && it->first.first == n.node_guid; ++it)
        if (it->first.second < ports.size()) ports[it->first.second].pkeys = it->second;
    }
    const Wake w = co_await sched_->yield();
    if (!w) co_return false;
  }
  fill_qos_tables(f, qos_programmed_, rows);  // and, with QoS, as written (acknowledged)
  co_return true;
}

std::vector<sa::SwitchMft> SubnetManager::mft_view(const fabric::Fabric& f) const {
  std::unordered_map<std::uint64_t, fabric::NodeId> by_guid;
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) by_guid.emplace(f.nodes[i].node_guid, i);
  std::vector<sa::SwitchMft> mfts;
  std::map<fabric::NodeId, std::size_t> mft_of;
  for (const auto& [key, blk] : mft_programmed_) {
    const auto it = by_guid.find(key.first);
    if (it == by_guid.end()) continue;
    auto [slot, fresh] = mft_of.emplace(it->second, mfts.size());
    if (fresh) mfts.push_back(sa::SwitchMft{.node = it->second, .masks = {}});
    sa::SwitchMft& m = mfts[slot->second];
    for (std::size_t i = 0; i < wire::kMftBlockSize; ++i) {
      const std::size_t mlid_index = std::size_t{key.second.block} * wire::kMftBlockSize + i;
      if (m.masks.size() <= mlid_index) m.masks.resize(mlid_index + 1);
      auto& positions = m.masks[mlid_index];
      if (positions.size() <= key.second.position) positions.resize(key.second.position + 1u, 0);
      positions[key.second.position] = blk.mask(i);
    }
  }
  return mfts;
}


}  // namespace madengine::sm
