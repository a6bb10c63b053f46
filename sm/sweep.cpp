// The SM's light sweeps (see sm.hpp): every switch asked whether a port
// changed, our own port watched; multicast-only changes write MFTs; the
// guid2lid file saved off the MAD core. The heavy sweep is heavy_sweep.cpp.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "madengine/wire/codec.hpp"
#include "sm/sm.hpp"

namespace madengine::sm {

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
