// ServiceRecord, multicast group and InformInfo stores (see mutable_state.hpp).
#include "sa/state/mutable_state.hpp"

#include <algorithm>
#include <cstring>

#include "madengine/wire/smp/pkey_table.hpp"
#include "madengine/wire/link_rate.hpp"
#include "sa/server/components.hpp"

namespace madengine::sa {
namespace {

namespace st = wire::sa_status;
namespace scm = wire::service_record_cm;
namespace mcm = wire::mc_member_record_cm;

constexpr std::uint64_t kSaMgidSignature = 0xa01b;  // MGID bytes 2-3 of SA-assigned groups (IBA 4.1.1)
constexpr std::uint64_t kLinkLocalScope = 2;

bool zero_key(const std::array<std::uint8_t, 16>& k) noexcept {
  return std::all_of(k.begin(), k.end(), [](std::uint8_t b) { return b == 0; });
}

// Who may change or remove a service (IBA 15.2.5.14.3): the port that
// registered it, or a requester presenting its non-zero ServiceKey.
bool may_modify(const ServiceEntry& e, const wire::ServiceRecord& r, const Requester& who) noexcept {
  if (e.owner == who.gid) return true;
  return !zero_key(e.rec.service_key) && e.rec.service_key == r.service_key;
}

bool same_service(const wire::ServiceRecord& a, const wire::ServiceRecord& b) noexcept {
  return a.service_id == b.service_id && a.service_gid == b.service_gid && a.service_pkey == b.service_pkey;
}

const RecordLayout& layout_of(std::uint16_t attr) noexcept { return *record_layout(attr); }

// A new group's rate from the creator's selector and value (IBA 15.2.5.17,
// selectors as in 15.2.5.16), within the creator's link rate; rates compare
// by bandwidth (their codes are not ordered). 0: no rate satisfies it.
std::uint8_t group_rate(std::uint8_t sel, std::uint8_t req, std::uint8_t port) noexcept {
  const std::uint32_t p = wire::rate_mbps(port), r = wire::rate_mbps(req);
  switch (sel) {
    case wire::selector::kGreaterThan: return p > r ? port : 0;
    case wire::selector::kLessThan: {
      if (p < r) return port;
      return wire::rate_code_below(r);
    }
    case wire::selector::kExactly: return r != 0 && r <= p ? req : 0;
    default: return port;  // largest available
  }
}

// Whether a group's value meets a joiner's selector and value (o15.0.1.13;
// MTU codes and data rates both order by size). Largest-available: always.
bool meets(std::uint8_t sel, std::uint32_t group, std::uint32_t wanted) noexcept {
  switch (sel) {
    case wire::selector::kGreaterThan: return group > wanted;
    case wire::selector::kLessThan: return group < wanted;
    case wire::selector::kExactly: return group == wanted;
    default: return true;
  }
}

}  // namespace

// ---------------------------------------------------------------- services

void ServiceStore::restore(std::vector<ServiceEntry> entries) {
  entries_ = std::move(entries);
  publish();
}

void ServiceStore::publish() {
  next_expiry_ns_ = -1;
  for (const auto& e : entries_)
    if (e.expires_ns >= 0 && (next_expiry_ns_ < 0 || e.expires_ns < next_expiry_ns_)) next_expiry_ns_ = e.expires_ns;
  pub_.store(entries_);
}

std::uint16_t ServiceStore::set(const wire::ServiceRecord& r, std::uint64_t mask, const Requester& who, Nanos now_ns,
                                wire::ServiceRecord& out) {
  // A registration names its service by ServiceID and ServiceGID; its P_Key is
  // the record's (zero when the mask leaves it out), as OpenSM keeps it.
  if ((mask & (scm::kServiceId | scm::kServiceGid)) != (scm::kServiceId | scm::kServiceGid))
    return st::kReqInsufficientComponents;
  ServiceEntry e;
  e.rec = r;
  e.owner = who.gid;
  // No ServiceLease in the mask: an infinite lease (as OpenSM).
  if ((mask & scm::kServiceLease) == 0) e.rec.service_lease = wire::be32::from(wire::kServiceLeaseInfinite);
  const std::uint32_t lease = e.rec.service_lease.get();
  e.expires_ns = lease == wire::kServiceLeaseInfinite ? -1 : now_ns + Nanos{lease} * kNanosPerSecond;
  for (auto& old : entries_) {
    if (!same_service(old.rec, r)) continue;
    if (!may_modify(old, r, who)) return st::kReqDenied;
    e.owner = old.owner;
    old = e;
    publish();
    out = e.rec;
    return 0;
  }
  entries_.push_back(e);
  publish();
  out = e.rec;
  return 0;
}

std::uint16_t ServiceStore::erase(const wire::ServiceRecord& r, std::uint64_t mask, const Requester& who,
                                  wire::ServiceRecord& out) {
  const RecordLayout& l = layout_of(wire::sa_attr::kServiceRecord);
  std::size_t matched = 0, denied = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!components_equal(l, mask, reinterpret_cast<const std::uint8_t*>(&it->rec),
                          reinterpret_cast<const std::uint8_t*>(&r))) {
      ++it;
      continue;
    }
    if (!may_modify(*it, r, who)) {
      ++denied;
      ++it;
      continue;
    }
    out = it->rec;
    it = entries_.erase(it);
    ++matched;
  }
  if (matched == 0) return denied != 0 ? st::kReqDenied : st::kNoRecords;
  publish();
  return 0;
}

std::size_t ServiceStore::expire(Nanos now_ns) {
  if (next_expiry_ns_ < 0 || now_ns < next_expiry_ns_) return 0;
  const std::size_t before = entries_.size();
  std::erase_if(entries_, [&](const ServiceEntry& e) { return e.expires_ns >= 0 && e.expires_ns <= now_ns; });
  publish();
  return before - entries_.size();
}

// ---------------------------------------------------------------- multicast

wire::McMemberRecord member_record(const McGroupEntry& g, const McMember& m) noexcept {
  wire::McMemberRecord r = g.params;
  r.port_gid = m.port_gid;
  r.set_join_state(m.join_state);
  r.set_proxy_join(m.proxy);
  return r;
}

bool holds_partition(const std::vector<std::uint16_t>& table, std::uint16_t pkey) noexcept {
  if (!wire::pkey_is_valid(pkey)) return true;  // an invalid group P_Key is taken loosely, as OpenSM does
  return std::any_of(table.begin(), table.end(), [&](std::uint16_t k) {
    return wire::pkey_is_valid(k) && wire::pkey_base(k) == wire::pkey_base(pkey);
  });
}

bool McastStore::well_known(const wire::Gid& mgid) const noexcept {
  return std::any_of(well_known_.begin(), well_known_.end(), [&](const wire::McMemberRecord& r) { return r.mgid == mgid; });
}

std::size_t McastStore::set_well_known(const std::vector<wire::McMemberRecord>& groups) {
  well_known_ = groups;
  std::size_t created = 0;
  bool changed = false;
  for (const auto& r : well_known_) {
    const bool have = std::any_of(groups_.begin(), groups_.end(), [&](const McGroupEntry& g) { return g.params.mgid == r.mgid; });
    if (have || groups_.size() >= groups_max_) continue;
    const std::uint16_t mlid = mlid_for(r.mgid);
    if (mlid == 0) break;
    McGroupEntry g;
    g.params = r;
    g.params.port_gid = {};
    g.params.mlid = wire::be16::from(mlid);
    groups_.push_back(std::move(g));
    ++created;
    changed = true;
  }
  // Groups a partition no longer names live on while they have members.
  const std::size_t before = groups_.size();
  std::erase_if(groups_, [&](const McGroupEntry& g) { return g.members.empty() && !well_known(g.params.mgid); });
  changed = changed || groups_.size() != before;
  if (changed) publish();
  return created;
}

std::size_t McastStore::restore(std::vector<McGroupEntry> groups) {
  std::vector<McGroupEntry> kept;
  std::vector<bool> mlid_used(std::size_t{kMlidLast} - kMlidFirst + 1, false);
  for (auto& g : groups) {
    const std::uint16_t mlid = g.params.mlid.get();
    const bool empty_ok = g.members.empty() && well_known(g.params.mgid);
    if (kept.size() >= groups_max_ || (g.members.empty() && !empty_ok) || mlid < kMlidFirst || mlid > kMlidLast) continue;
    // An MLID held twice is an image error, but where consolidated
    // solicited-node groups share it.
    const bool shared_ok = consolidate_ipv6_snm_ && ipv6_solicited_node(g.params.mgid) &&
                           std::any_of(kept.begin(), kept.end(), [&](const McGroupEntry& k) {
                             return k.params.mlid.get() == mlid && same_solicited_node_set(k.params.mgid, g.params.mgid);
                           });
    if (mlid_used[mlid - kMlidFirst] && !shared_ok) continue;
    mlid_used[mlid - kMlidFirst] = true;
    kept.push_back(std::move(g));
  }
  const std::size_t dropped = groups.size() - kept.size();
  groups_ = std::move(kept);
  set_well_known(std::vector<wire::McMemberRecord>(well_known_));  // the partitions' groups exist whatever the image held
  publish();
  return dropped;
}

void McastStore::release() {
  held_ = false;
  if (!due_) return;
  publish();
  due_ = false;  // after the copy: a failed one is tried again at the next release
}

void McastStore::publish() {
  if (held_) {
    due_ = true;
    return;
  }
  pub_.store(groups_);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // pairs with the acquire in generation()
}

bool ipv6_solicited_node(const wire::Gid& mgid) noexcept {
  // ff1S:601b:PPPP:0000 / 0000:0001:ffXX:XXXX (any scope S and P_Key P).
  return (mgid.prefix.get() & 0xff10ffff0000ffffull) == 0xff10601b00000000ull &&
         (mgid.guid.get() & 0xfffffff1ff000000ull) == 0x00000001ff000000ull;
}

bool same_solicited_node_set(const wire::Gid& a, const wire::Gid& b) noexcept {
  // All but the address's last 24 bits (OpenSM compares the first 13 bytes).
  return a.prefix == b.prefix && (a.guid.get() >> 24) == (b.guid.get() >> 24);
}

std::uint16_t McastStore::mlid_for(const wire::Gid& mgid) const noexcept {
  if (consolidate_ipv6_snm_ && ipv6_solicited_node(mgid))
    for (const auto& g : groups_)
      if (ipv6_solicited_node(g.params.mgid) && same_solicited_node_set(g.params.mgid, mgid)) return g.params.mlid.get();
  return allocate_mlid();
}

std::uint16_t McastStore::allocate_mlid() const noexcept {
  for (std::uint32_t mlid = kMlidFirst; mlid <= mlid_last_; ++mlid) {
    bool used = false;
    for (const auto& g : groups_) used = used || g.params.mlid.get() == mlid;
    if (!used) return static_cast<std::uint16_t>(mlid);
  }
  return 0;
}

// SA-assigned MGIDs (IBA 15.2.5.17.1 / 4.1.1): 0xff, flags 1 (transient),
// the scope, the signature 0xA01B, the P_Key, then a number unique here.
wire::Gid McastStore::allocate_mgid(std::uint8_t scope, std::uint16_t pkey) noexcept {
  for (;;) {
    const std::uint64_t n = ++mgid_counter_;
    wire::Gid g;
    g.prefix = wire::be64::from(0xff10'0000'0000'0000ull | kSaMgidSignature << 32 | std::uint64_t{scope & 0xfu} << 48 |
                                std::uint64_t{pkey} << 16);
    g.guid = wire::be64::from(n);
    bool taken = false;
    for (const auto& grp : groups_) taken = taken || grp.params.mgid == g;
    if (!taken) return g;
  }
}

std::uint16_t McastStore::join(const wire::McMemberRecord& r, std::uint64_t mask, const McJoinContext& ctx,
                               wire::McMemberRecord& out) {
  if ((mask & mcm::kPortGid) == 0 || (mask & mcm::kJoinState) == 0 || r.join_state() == 0)
    return st::kReqInsufficientComponents;
  // A join for another port is a proxy join (IBA 15.2.5.17.2): the SA tells
  // it from the requester's port, as OpenSM, not from the record's bit.
  const bool proxy = !(r.port_gid.guid == ctx.who.gid.guid);
  if (ctx.port_guid == 0) return st::kReqInvalid;
  const bool zero_mgid = r.mgid.prefix.get() == 0 && r.mgid.guid.get() == 0;
  McGroupEntry* g = nullptr;
  if (!zero_mgid && (mask & mcm::kMGid) != 0)
    for (auto& grp : groups_)
      if (grp.params.mgid == r.mgid) g = &grp;

  if (g == nullptr) {
    // Creation needs the group's parameters (OpenSM's REQUIRED_MC_CREATE_COMP_MASK).
    constexpr std::uint64_t kCreate = mcm::kQKey | mcm::kTClass | mcm::kPKey | mcm::kFlowLabel | mcm::kSl;
    if ((mask & kCreate) != kCreate) return st::kReqInsufficientComponents;
    // Only full members create: FullMember or SendOnlyFullMember (IBA 1.3,
    // IPoIB's send-only joins), as OpenSM (o15.0.1.9).
    if ((r.join_state() & (wire::join_state::kFullMember | wire::join_state::kSendOnlyFullMember)) == 0)
      return st::kReqInvalid;
    if (!zero_mgid && (r.mgid.prefix.get() >> 56) != 0xff) return st::kReqInvalid;
    // The flags nibble of a multicast GID is 000T: the upper three bits are reserved (IBA 4.1.1).
    if (!zero_mgid && ((r.mgid.prefix.get() >> 52) & 0xeu) != 0) return st::kReqInvalid;
    // The SA-assigned signature 0xA01B never has link-local scope (o15.0.1.6): such
    // an MGID cannot be one we allocated, and a requester may not mint it.
    if (!zero_mgid && ((r.mgid.prefix.get() >> 32) & 0xffffu) == kSaMgidSignature &&
        ((r.mgid.prefix.get() >> 48) & 0xfu) == kLinkLocalScope)
      return st::kReqInvalid;
    if (!wire::pkey_is_valid(r.pkey.get()) || !holds_partition(ctx.port_pkeys, r.pkey.get())) return st::kReqInvalid;
    if (proxy && !holds_partition(ctx.requester_pkeys, r.pkey.get())) return st::kReqInvalid;
    if (groups_.size() >= groups_max_) return st::kNoResources;
    McGroupEntry ng;
    ng.params = wire::McMemberRecord{};
    // A requested MGID carries its scope (IBA 4.1.1); link-local otherwise.
    const std::uint8_t scope = (mask & mcm::kScope) != 0 ? r.scope()
                               : zero_mgid                ? std::uint8_t{2}
                                                          : static_cast<std::uint8_t>((r.mgid.prefix.get() >> 48) & 0xfu);
    ng.params.mgid = zero_mgid ? allocate_mgid(scope, r.pkey.get()) : r.mgid;
    ng.params.qkey = r.qkey;
    ng.params.mlid = wire::be16::from(mlid_for(ng.params.mgid));
    if (ng.params.mlid.get() == 0) return st::kNoResources;
    ng.params.tclass = r.tclass;
    ng.params.pkey = wire::be16::from(static_cast<std::uint16_t>(r.pkey.get() | wire::kPKeyMembershipBit));
    // MTU and rate: what the selectors ask for, within the creator's link.
    std::uint8_t mtu = std::min(ctx.default_mtu, ctx.port_mtu);
    if ((mask & mcm::kMtu) != 0) {
      const std::uint8_t sel = (mask & mcm::kMtuSelector) != 0 ? r.mtu_selector() : wire::selector::kExactly;
      const std::uint8_t v = r.mtu();
      switch (sel) {
        case wire::selector::kGreaterThan: mtu = ctx.port_mtu > v ? ctx.port_mtu : 0; break;
        case wire::selector::kLessThan: mtu = v > 1 ? std::min<std::uint8_t>(ctx.port_mtu, static_cast<std::uint8_t>(v - 1)) : 0; break;
        case wire::selector::kExactly: mtu = v <= ctx.port_mtu ? v : 0; break;
        default: mtu = ctx.port_mtu; break;
      }
      if (mtu == 0) return st::kReqInvalid;
    }
    std::uint8_t rate = wire::rate_mbps(ctx.default_rate) < wire::rate_mbps(ctx.port_rate) ? ctx.default_rate : ctx.port_rate;
    if ((mask & mcm::kRate) != 0) {
      const std::uint8_t sel = (mask & mcm::kRateSelector) != 0 ? r.rate_selector() : wire::selector::kExactly;
      rate = group_rate(sel, r.rate(), ctx.port_rate);
      if (rate == 0) return st::kReqInvalid;
    }
    ng.params.set_mtu_selector(wire::selector::kExactly);
    ng.params.set_mtu(mtu);
    ng.params.set_rate_selector(wire::selector::kExactly);
    ng.params.set_rate(rate);
    ng.params.set_packet_life_time_selector(wire::selector::kExactly);
    ng.params.set_packet_life_time(ctx.packet_life);
    ng.params.set_sl(r.sl());
    ng.params.set_flow_label(r.flow_label());
    ng.params.set_hop_limit((mask & mcm::kHopLimit) != 0 ? r.hop_limit() : 0);
    ng.params.set_scope(scope);
    groups_.push_back(std::move(ng));
    g = &groups_.back();
  } else {
    // Joining an existing group: whatever the joiner names must match it.
    const RecordLayout& l = *record_layout(wire::sa_attr::kMcMemberRecord);
    constexpr std::uint64_t kMustMatch = mcm::kQKey | mcm::kMLid | mcm::kTClass | mcm::kFlowLabel | mcm::kSl;
    if (!components_equal(l, mask & kMustMatch, reinterpret_cast<const std::uint8_t*>(&g->params),
                          reinterpret_cast<const std::uint8_t*>(&r)))
      return st::kReqInvalid;
    if ((mask & mcm::kPKey) != 0) {
      // OpenSM's rules: the same partition, and not both limited.
      if (wire::pkey_base(r.pkey.get()) != wire::pkey_base(g->params.pkey.get())) return st::kReqInvalid;
      if (!wire::pkey_is_full_member(r.pkey.get()) && !wire::pkey_is_full_member(g->params.pkey.get()))
        return st::kReqInvalid;
    }
    // The joining port must be in the group's partition (IBA 10.9, OpenSM's
    // ERR 1B14), and so must a proxy requester.
    if (!holds_partition(ctx.port_pkeys, g->params.pkey.get())) return st::kReqInvalid;
    if (proxy && !holds_partition(ctx.requester_pkeys, g->params.pkey.get())) return st::kReqInvalid;
    // The port's link must carry the group's MTU and rate (OpenSM checks the same).
    if (g->params.mtu() > ctx.port_mtu || wire::rate_mbps(g->params.rate()) > wire::rate_mbps(ctx.port_rate)) return st::kReqInvalid;
    // And the group must be what the joiner selects, where it names a selector (as OpenSM).
    if ((mask & mcm::kMtuSelector) != 0 && !meets(r.mtu_selector(), g->params.mtu(), r.mtu())) return st::kReqInvalid;
    if ((mask & mcm::kRateSelector) != 0 &&
        !meets(r.rate_selector(), wire::rate_mbps(g->params.rate()), wire::rate_mbps(r.rate())))
      return st::kReqInvalid;
  }

  auto m = std::find_if(g->members.begin(), g->members.end(), [&](const McMember& x) { return x.port_gid == r.port_gid; });
  if (m == g->members.end()) {
    g->members.push_back({r.port_gid, r.join_state(), proxy});
    m = g->members.end() - 1;
  } else {
    // A membership the port made itself is the port's to change (OpenSM's rule).
    if (!m->proxy && proxy) return st::kReqInvalid;
    m->join_state = static_cast<std::uint8_t>(m->join_state | r.join_state());
  }
  out = member_record(*g, *m);
  publish();
  return 0;
}

std::uint16_t McastStore::leave(const wire::McMemberRecord& r, std::uint64_t mask, const Requester& who,
                                wire::McMemberRecord& out) {
  if ((mask & mcm::kMGid) == 0 || (mask & mcm::kPortGid) == 0 || (mask & mcm::kJoinState) == 0)
    return st::kReqInsufficientComponents;
  const bool proxy = !(r.port_gid.guid == who.gid.guid);
  for (auto gi = groups_.begin(); gi != groups_.end(); ++gi) {
    if (!(gi->params.mgid == r.mgid)) continue;
    for (auto mi = gi->members.begin(); mi != gi->members.end(); ++mi) {
      if (!(mi->port_gid == r.port_gid)) continue;
      // Only the port itself leaves a membership it made (OpenSM's rule).
      if (proxy && !mi->proxy) return st::kReqInvalid;
      // The bits to leave must all be held (o15-0.1.14): none held, or one
      // the member never joined with, is an invalid request.
      if ((mi->join_state & r.join_state()) == 0 || (r.join_state() & ~mi->join_state) != 0) return st::kReqInvalid;
      out = member_record(*gi, *mi);
      mi->join_state = static_cast<std::uint8_t>(mi->join_state & ~r.join_state());
      out.set_join_state(mi->join_state);
      if (mi->join_state == 0) gi->members.erase(mi);
      if (gi->members.empty() && !well_known(gi->params.mgid)) groups_.erase(gi);
      publish();
      return 0;
    }
    return st::kReqInvalid;
  }
  return st::kReqInvalid;
}

// ---------------------------------------------------------------- inform

bool InformStore::covers(const wire::InformInfo& info, std::uint16_t trap, std::uint8_t type, std::uint32_t producer,
                         std::uint16_t issuer_lid) noexcept {
  if (info.is_generic != 1) return false;
  if (info.trap_number() != wire::kInformAllTraps && info.trap_number() != trap) return false;
  if (info.type.get() != wire::inform_type::kAll && info.type.get() != type) return false;
  if (info.producer_type() != wire::kInformAllProducers && info.producer_type() != producer) return false;
  const std::uint16_t b = info.lid_range_begin.get();
  if (b != wire::kInformAllLids && b != 0) {
    const std::uint16_t e = std::max(b, info.lid_range_end.get());
    if (issuer_lid < b || issuer_lid > e) return false;
  }
  return true;
}

void InformStore::release() {
  held_ = false;
  if (!due_) return;
  publish();
  due_ = false;
}

void InformStore::publish() {
  if (held_) {
    due_ = true;
    return;
  }
  pub_.store(subs_);
}

void InformStore::restore(std::vector<Subscription> subs) {
  subs_ = std::move(subs);
  next_enum_ = 0;
  for (const auto& s : subs_) next_enum_ = std::max<std::uint16_t>(next_enum_, static_cast<std::uint16_t>(s.enumeration + 1));
  publish();
}

std::uint16_t InformStore::set(const wire::InformInfo& info, const Requester& who, const MadAddr& from) {
  auto same = [&](const Subscription& s) {
    return s.subscriber == who.gid && s.info.trap_number_or_device_id == info.trap_number_or_device_id &&
           s.info.type == info.type && s.info.is_generic == info.is_generic &&
           s.info.producer_or_vendor == info.producer_or_vendor && s.info.gid == info.gid &&
           s.info.lid_range_begin == info.lid_range_begin && s.info.lid_range_end == info.lid_range_end;
  };
  const auto it = std::find_if(subs_.begin(), subs_.end(), same);
  if (info.subscribe == 0) {
    if (it == subs_.end()) return st::kReqInvalid;
    subs_.erase(it);
    publish();
    return 0;
  }
  if (info.subscribe != 1) return st::kReqInvalid;
  Subscription s;
  s.info = info;
  s.subscriber = who.gid;
  s.addr = from;
  s.addr.remote_qpn = info.qpn() != 0 ? info.qpn() : from.remote_qpn;
  s.enumeration = it != subs_.end() ? it->enumeration : next_enum_++;
  if (it != subs_.end()) *it = s;
  else subs_.push_back(s);
  publish();
  return 0;
}

wire::InformInfoRecord inform_record(const Subscription& s) noexcept {
  wire::InformInfoRecord r{};
  r.subscriber_gid = s.subscriber;
  r.subscriber_enum = wire::be16::from(s.enumeration);
  r.inform_info = s.info;
  return r;
}

}  // namespace madengine::sa
