// PathRecord and MultiPathRecord answers (see path_query.hpp).
#include "sa/server/path_query.hpp"

#include <algorithm>
#include <array>

#include "fabric/link_rate.hpp"

namespace madengine::sa {
namespace {

namespace cm = wire::path_record_cm;
namespace sel = wire::selector;
using fabric::EndPort;

constexpr std::uint16_t kDefaultPKeys[] = {wire::kDefaultPKey};

// Applies a selector (IBA 15.2.5.16) to a path value where bigger is better
// (MTU codes; rates compared by bandwidth). Returns 0 when no path satisfies it.
std::uint8_t select_mtu(std::uint8_t path, std::uint8_t sel_byte_sel, std::uint8_t req, bool given) noexcept {
  if (!given) return path;
  switch (sel_byte_sel) {
    case sel::kGreaterThan: return path > req ? path : 0;
    case sel::kLessThan: return path < req ? path : (req > 1 ? static_cast<std::uint8_t>(req - 1) : 0);
    case sel::kExactly: return path >= req ? req : 0;
    default: return path;  // largest available
  }
}

std::uint8_t select_rate(std::uint8_t path, std::uint8_t s, std::uint8_t req, bool given) noexcept {
  if (!given) return path;
  const std::uint32_t p = wire::rate_mbps(path), r = wire::rate_mbps(req);
  switch (s) {
    case sel::kGreaterThan: return p > r ? path : 0;
    case sel::kLessThan: {
      if (p < r) return path;
      return wire::rate_code_below(r);  // a lower rate is always feasible
    }
    case sel::kExactly: return p >= r && r != 0 ? req : 0;
    default: return path;
  }
}

// Packet lifetime: smaller is better; returns 0xff when unsatisfiable.
std::uint8_t select_life(std::uint8_t path, std::uint8_t s, std::uint8_t req, bool given) noexcept {
  if (!given) return path;
  switch (s) {
    case sel::kGreaterThan: return path > req ? path : (req < 0x3f ? static_cast<std::uint8_t>(req + 1) : 0xff);
    case sel::kLessThan: return path < req ? path : 0xff;
    case sel::kExactly: return path == req ? path : (req > path ? req : 0xff);
    default: return path;
  }
}

const LidEntry& info_of(const Snapshot& s, std::uint16_t lid) noexcept {
  static const LidEntry kNone{};
  return lid < s.lid_info.size() ? s.lid_info[lid] : kNone;
}

// The two LIDs of one path and their snapshot entries: everything a path
// needs of an end (GUID, partition set, path-database entry) is in that
// one line, no walk of the fabric's nodes.
struct Ends {
  std::uint16_t slid, dlid;
  const LidEntry* si;
  const LidEntry* di;
  Ends(const Snapshot& s, std::uint16_t src, std::uint16_t dst) noexcept
      : slid(src), dlid(dst), si(&info_of(s, src)), di(&info_of(s, dst)) {}
};

// What the partitions and the QoS policy allow between two ports for this
// query: the P_Key, the SL and the QoS level; false when nothing.
struct Admission {
  std::uint16_t pkey = 0;
  std::uint8_t sl = 0;
  const QosLevelView* level = nullptr;
};

bool admit(const Snapshot& s, const LidEntry& si, const LidEntry& di, const wire::PathRecord& q, std::uint64_t mask,
           Admission& a) noexcept {
  // The QoS level (qos-policy, OpenSM's matching), when QoS is on with a policy.
  const QosLevelView* level =
      s.qos_policy == nullptr
          ? nullptr
          : s.qos_policy->level_for(si.port_guid, di.port_guid, (mask & cm::kServiceId) == cm::kServiceId, q.service_id.get(),
                                    (mask & cm::kQosClass) != 0, q.qos_class(), (mask & cm::kPKey) != 0, q.pkey.get());
  // The partition (IBA 10.9.3, OpenSM's choice): the requested P_Key if both
  // ends hold it with a full member between them (and the level allows it),
  // else the first they share.
  const PartitionIndex& parts = s.partition_index;
  const std::uint16_t sset = si.pkey_set, dset = di.pkey_set;
  std::uint16_t pkey = 0;
  if ((mask & cm::kPKey) != 0) {
    pkey = parts.shares(sset, dset, q.pkey.get()) ? q.pkey.get() : 0;
    if (level != nullptr && !level->pkeys.empty() && !in_ranges(level->pkeys, wire::pkey_base(pkey))) pkey = 0;
  } else if (level != nullptr && !level->pkeys.empty()) {
    // The first of the level's P_Keys the ends share, as the level writes it
    // (OpenSM walks each range upwards: below 0x8000 a P_Key without the full bit).
    for (const ValueRange& r : level->pkeys) {
      const bool full = r.lo > wire::kPKeyBaseMask;
      const auto lo = static_cast<std::uint16_t>(r.lo & wire::kPKeyBaseMask);
      const auto hi = static_cast<std::uint16_t>(full ? r.hi & wire::kPKeyBaseMask : std::min<std::uint64_t>(r.hi, wire::kPKeyBaseMask));
      const std::uint16_t base = parts.first_shared_in(sset, dset, lo, hi);
      if (base != 0) {
        pkey = static_cast<std::uint16_t>(base | (full ? wire::kPKeyMembershipBit : 0));
        break;
      }
    }
  } else {
    pkey = parts.common(sset, dset);
  }
  if (pkey == 0) return false;
  // SL: the requested one (a level's must agree), the level's, the partition's.
  std::uint8_t sl = 0;
  if ((mask & cm::kSl) != 0) {
    sl = q.sl();
    if (level != nullptr && level->sl_set && level->sl != sl) return false;
  } else {
    sl = level != nullptr && level->sl_set ? level->sl : parts.sl_of(pkey);
  }
  if (s.qos && (s.valid_sl_mask & (1u << sl)) == 0) return false;  // an SL mapped to VL15 carries nothing
  a = {pkey, sl, level};
  return true;
}

// One PathRecord for (slid, dlid) if the path exists and meets the query.
bool build_path(const Snapshot& s, const Ends& e, const wire::PathRecord& q, std::uint64_t mask,
                std::uint8_t subnet_life, wire::PathRecord& out) noexcept {
  const LidEntry& si = *e.si;
  const LidEntry& di = *e.di;
  // The copies in the LID entries, unless the database was replaced after
  // the snapshot was indexed (then its own entries).
  const bool copies = s.lid_paths_current();
  const PathAttrs fwd = copies ? s.paths.path(si.path, di.path) : s.paths.path(e.slid, e.dlid);
  if (!fwd.routed()) return false;
  // The reverse path is looked up only when the query requires it and the
  // database does not say every pair is routed: each lookup is a cache miss
  // in a table of (switches x LIDs).
  const bool routed_back = (mask & cm::kReversible) != 0 && q.reversible() && !s.paths.all_routed()
                               ? (copies ? s.paths.path(di.path, si.path) : s.paths.path(e.dlid, e.slid)).routed()
                               : true;
  if (!routed_back) return false;

  Admission adm;
  if (!admit(s, si, di, q, mask, adm)) return false;
  // A QoS policy can treat the two directions differently (groups by source
  // or destination): the path is reversible only if the way back is
  // admitted too, as OpenSM works it out.
  Admission back;
  const bool reverse = routed_back && (s.qos_policy == nullptr || admit(s, di, si, q, mask, back));
  if ((mask & cm::kReversible) != 0 && q.reversible() && !reverse) return false;
  const std::uint16_t pkey = adm.pkey;
  std::uint8_t sl = adm.sl;
  const QosLevelView* level = adm.level;
  // A layered (deadlock-free over several VLs) routing fixes each path's SL:
  // the path must use it, and a query (or a QoS level) for another SL has
  // no answer, as OpenSM with a routing engine that chooses path SLs.
  if (s.paths.layered()) {
    if (((mask & cm::kSl) != 0 || (level != nullptr && level->sl_set)) && sl != fwd.sl) return false;
    sl = fwd.sl;
    if (s.qos && (s.valid_sl_mask & (1u << sl)) == 0) return false;
  }

  const bool loopback = si.port_guid == di.port_guid;
  std::uint8_t path_mtu = fwd.mtu, path_rate = fwd.rate;
  if (path_mtu == 0 || path_rate == 0) {
    // A switch's port 0 to itself crosses no link: its own PortInfo's MTUCap
    // and active width and speed, as OpenSM reports them.
    const fabric::EndPort sp = s.by_lid[e.slid];
    const auto& node = s.fabric.nodes[sp.node];
    const wire::PortInfo& pi = node.ports[sp.port].info;
    path_mtu = pi.mtu_cap() != 0 ? pi.mtu_cap() : std::uint8_t{1};
    path_rate = wire::port_rate_code(pi, node.is_switch() ? node.ports[0].info : pi);
  }
  // A switch's port 0 ends the path inside the switch: OpenSM bounds the
  // path by that port's own MTUCap and active rate, and so do we.
  for (const LidEntry* li : {&si, &di}) {
    if (!li->is_switch) continue;
    if (li->port0_mtu != 0) path_mtu = std::min(path_mtu, li->port0_mtu);
    if (li->port0_rate != 0) path_rate = wire::rate_min(path_rate, li->port0_rate);
  }
  // A QoS level's limits come before the query's selectors (OpenSM's order).
  if (level != nullptr) {
    if (level->mtu_set) path_mtu = std::min(path_mtu, level->mtu_limit);
    if (level->rate_set && wire::rate_mbps(level->rate_limit) < wire::rate_mbps(path_rate)) path_rate = level->rate_limit;
  }
  const std::uint8_t mtu = select_mtu(path_mtu, q.mtu_selector(), q.mtu(), (mask & cm::kMtu) != 0 && (mask & cm::kMtuSelector) != 0);
  if (mtu == 0) return false;
  const std::uint8_t rate = select_rate(path_rate, q.rate_selector(), q.rate(), (mask & cm::kRate) != 0 && (mask & cm::kRateSelector) != 0);
  if (rate == 0) return false;
  // OpenSM: the subnet timeout, except 0 for a port to itself (IBA 15.2.5.16 Table 205).
  const std::uint8_t own_life = level != nullptr && level->life_set ? level->packet_life : subnet_life;
  const std::uint8_t life = select_life(loopback ? 0 : own_life, q.packet_life_time_selector(), q.packet_life_time(),
                                        (mask & cm::kPacketLifeTime) != 0 && (mask & cm::kPacketLifeTimeSelector) != 0);
  if (life == 0xff) return false;

  out = wire::PathRecord{};
  if ((mask & cm::kServiceId) != 0) out.service_id = q.service_id;
  // As OpenSM answers: an SGID the query named comes back as named (a
  // link-local one stays link-local); the DGID is the destination port's
  // GID in the subnet's prefix, however the query named it.
  out.dgid = wire::Gid{wire::be64::from(s.subnet_prefix), wire::be64::from(di.port_guid)};
  out.sgid = (mask & cm::kSGid) != 0 ? q.sgid : wire::Gid{wire::be64::from(s.subnet_prefix), wire::be64::from(si.port_guid)};
  out.dlid = wire::be16::from(e.dlid);
  out.slid = wire::be16::from(e.slid);
  // Hop limit 0: the path stays in this subnet (OpenSM's convention).
  if ((mask & cm::kFlowLabel) != 0) out.set_flow_label(q.flow_label());
  if ((mask & cm::kTClass) != 0) out.tclass = q.tclass;
  out.set_reversible(reverse);
  out.pkey = wire::be16::from(pkey);
  out.set_sl(sl);
  out.set_mtu_selector(sel::kExactly);
  out.set_mtu(mtu);
  out.set_rate_selector(sel::kExactly);
  out.set_rate(rate);
  out.set_packet_life_time_selector(sel::kExactly);
  out.set_packet_life_time(life);
  return true;
}

// The LIDs a query allows for an end port: the pinned one, or its LMC
// block; and the port's GUID (which port it is).
struct LidRange {
  std::uint16_t first = 0, count = 0;
  std::uint64_t guid = 0;
};

// The port that has `lid`, pinned to it; false when no port has it.
bool range_of_lid(const Snapshot& s, std::uint16_t lid, LidRange& out) noexcept {
  const LidEntry& li = info_of(s, lid);
  if (!li.present) return false;
  out = {lid, 1, li.port_guid};
  return true;
}

// The port a GID names, with all its LIDs; false when none.
bool range_of_gid(const Snapshot& s, const wire::Gid& gid, LidRange& out) noexcept {
  if (!s.local_prefix(gid.prefix.get())) return false;
  const GuidIndex::Lids l = s.lids_of_guid(gid.guid.get());
  if (l.base == 0) return false;
  out = {l.base, l.count, gid.guid.get()};
  return true;
}

}  // namespace

std::span<const std::uint16_t> port_pkeys(const Snapshot& snap, EndPort e) noexcept {
  // The span outlives `rows`: P_Key buffers are shared by every version of the epoch's tables.
  const auto rows = snap.port_tables->load();
  const PortTables* t = PortTableView::find(*rows, e.node, e.port);
  if (t != nullptr && !t->pkeys.empty()) return t->pkeys;
  return kDefaultPKeys;
}

const EndPort* end_port_by_gid(const Snapshot& snap, const wire::Gid& gid) noexcept {
  if (!snap.local_prefix(gid.prefix.get())) return nullptr;
  return snap.end_port_by_lid(snap.lids_of_guid(gid.guid.get()).base);
}

std::uint16_t collect_path_records(const Snapshot& snap, const PathQuery& pq, RecordSink& sink) {
  const wire::PathRecord& q = *pq.rec;
  const std::uint64_t mask = pq.mask;
  // Source: SLID, else SGID; else a Get's is the requester's port and a
  // GetTable's every port (IBA 15.4: a component left out matches any; as
  // OpenSM answers, and osmtest and `saquery PR` read every path that way).
  const bool every_source = (mask & (cm::kSLid | cm::kSGid)) == 0 && !pq.get;
  // The shape clients send (both GIDs, no LIDs): the slots name both ends'
  // switches, so the path entry is on its way while the GUIDs are checked.
  if (!pq.prefetched && (mask & (cm::kSGid | cm::kDGid | cm::kSLid | cm::kDLid)) == (cm::kSGid | cm::kDGid))
    snap.paths.prefetch_switches(snap.guess_of_guid(q.sgid.guid.get()).hint, snap.guess_of_guid(q.dgid.guid.get()).hint);
  LidRange srange{};
  if ((mask & cm::kSLid) != 0) {
    if (!range_of_lid(snap, q.slid.get(), srange)) return 0;
    if ((mask & cm::kSGid) != 0) {
      LidRange g{};
      if (!range_of_gid(snap, q.sgid, g) || g.guid != srange.guid) return 0;
    }
  } else if ((mask & cm::kSGid) != 0) {
    if (!range_of_gid(snap, q.sgid, srange)) return wire::sa_status::kReqInvalidGid;
  } else if (!every_source) {
    LidRange r{};
    if (!range_of_lid(snap, pq.requester_lid, r)) return wire::sa_status::kReqInsufficientComponents;
    const GuidIndex::Lids l = snap.lids_of_guid(r.guid);
    srange = {l.base, l.count, r.guid};
  }

  const bool dst_given = (mask & (cm::kDLid | cm::kDGid)) != 0;
  if (!dst_given && pq.get) return wire::sa_status::kReqInsufficientComponents;
  const std::uint8_t numb = (mask & cm::kNumbPath) != 0 && q.numb_path() != 0 ? q.numb_path() : 0x7f;

  auto paths_to = [&](const LidRange& drange) {
    std::uint32_t made = 0;
    const std::uint8_t want = pq.get ? 1 : numb;
    // LMC paths pair source and destination LIDs index by index first, as OpenSM does.
    for (std::uint16_t i = 0; i < std::max(srange.count, drange.count) && made < want && !sink.full(); ++i) {
      const Ends e(snap, static_cast<std::uint16_t>(srange.first + i % srange.count),
                   static_cast<std::uint16_t>(drange.first + i % drange.count));
      wire::PathRecord r;
      if (!build_path(snap, e, q, mask, pq.packet_life, r)) continue;
      const std::size_t before = sink.count();
      sink.offer(&r);
      made += sink.count() != before;
    }
  };

  auto paths_from_each = [&](const LidRange& drange) {
    if (!every_source) return paths_to(drange);
    for (const auto& [guid, e] : snap.by_port_guid) {
      (void)e;
      if (sink.full()) return;
      const GuidIndex::Lids l = snap.lids_of_guid(guid);
      if (l.base == 0) continue;
      srange = {l.base, l.count, guid};
      paths_to(drange);
    }
  };

  LidRange drange{};
  if ((mask & cm::kDLid) != 0) {
    if (!range_of_lid(snap, q.dlid.get(), drange)) return 0;
    if ((mask & cm::kDGid) != 0) {
      LidRange g{};
      if (!range_of_gid(snap, q.dgid, g) || g.guid != drange.guid) return 0;
    }
    paths_from_each(drange);
  } else if ((mask & cm::kDGid) != 0) {
    if (!range_of_gid(snap, q.dgid, drange)) return wire::sa_status::kReqInvalidGid;
    paths_from_each(drange);
  } else {
    for (const auto& [guid, e] : snap.by_port_guid) {
      (void)e;
      if (sink.full()) break;
      const GuidIndex::Lids l = snap.lids_of_guid(guid);
      if (l.base != 0) paths_from_each({l.base, l.count, guid});
    }
  }
  return 0;
}

std::uint16_t collect_multi_path_records(const Snapshot& snap, const wire::MultiPathRecord& q,
                                         std::span<const wire::Gid> sgids, std::span<const wire::Gid> dgids,
                                         std::uint64_t mask, std::uint8_t packet_life, RecordSink& sink) {
  namespace mcm = wire::multi_path_record_cm;
  if (sgids.empty() || dgids.empty()) return wire::sa_status::kReqInsufficientComponents;
  // Translate the MultiPathRecord's constraints into a PathRecord query.
  wire::PathRecord pq{};
  std::uint64_t pmask = cm::kSLid | cm::kDLid;
  if ((mask & mcm::kPKey) != 0) pmask |= cm::kPKey, pq.pkey = q.pkey;
  if ((mask & mcm::kSl) != 0) pmask |= cm::kSl, pq.set_sl(q.sl());
  if ((mask & mcm::kReversible) != 0) pmask |= cm::kReversible, pq.set_reversible(q.reversible());
  if ((mask & mcm::kMtuSelector) != 0) pmask |= cm::kMtuSelector, pq.set_mtu_selector(q.mtu_selector());
  if ((mask & mcm::kMtu) != 0) pmask |= cm::kMtu, pq.set_mtu(q.mtu());
  if ((mask & mcm::kRateSelector) != 0) pmask |= cm::kRateSelector, pq.set_rate_selector(q.rate_selector());
  if ((mask & mcm::kRate) != 0) pmask |= cm::kRate, pq.set_rate(q.rate());
  if ((mask & mcm::kPacketLifeTimeSelector) != 0)
    pmask |= cm::kPacketLifeTimeSelector, pq.set_packet_life_time_selector(q.packet_life_time_selector());
  if ((mask & mcm::kPacketLifeTime) != 0) pmask |= cm::kPacketLifeTime, pq.set_packet_life_time(q.packet_life_time());
  const std::uint32_t numb = (mask & mcm::kNumbPath) != 0 && q.numb_path() != 0 ? q.numb_path() : 0x7f;

  std::uint32_t made = 0;
  for (const wire::Gid& sg : sgids) {
    LidRange s{};
    if (!range_of_gid(snap, sg, s)) return wire::sa_status::kReqInvalidGid;
    for (const wire::Gid& dg : dgids) {
      LidRange d{};
      if (!range_of_gid(snap, dg, d)) return wire::sa_status::kReqInvalidGid;
      if (made >= numb || sink.full()) return 0;
      wire::PathRecord r;
      const Ends e(snap, s.first, d.first);
      pq.slid = wire::be16::from(e.slid);
      pq.dlid = wire::be16::from(e.dlid);
      if (!build_path(snap, e, pq, pmask, packet_life, r)) continue;
      const std::size_t before = sink.count();
      sink.offer(&r);
      made += sink.count() != before;
    }
  }
  return 0;
}

}  // namespace madengine::sa
