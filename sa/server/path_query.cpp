// PathRecord and MultiPathRecord answers (see path_query.hpp).
#include "sa/server/path_query.hpp"

#include <algorithm>
#include <array>

#include "sa/paths/link_rate.hpp"

namespace madengine::sa {
namespace {

namespace cm = wire::path_record_cm;
namespace sel = wire::selector;
using fabric::EndPort;

constexpr std::uint16_t kDefaultPKeys[] = {wire::kDefaultPKey};

std::uint8_t lid_count(const Snapshot& s, EndPort e) noexcept {
  const fabric::Node& n = s.fabric.nodes[e.node];
  return static_cast<std::uint8_t>(n.is_switch() ? 1u : 1u << n.lmc);
}

// The P_Key the path carries: the requested one if both ends may use it, else
// the first partition the ends share with a full member (IBA 10.9.3); 0 if none.
std::uint16_t common_pkey(std::span<const std::uint16_t> a, std::span<const std::uint16_t> b, bool want,
                          std::uint16_t wanted) noexcept {
  for (const std::uint16_t x : a) {
    if (!wire::pkey_is_valid(x)) continue;
    for (const std::uint16_t y : b) {
      if (!wire::pkeys_match(x, y)) continue;
      if (!want) return static_cast<std::uint16_t>(x | (y & wire::kPKeyMembershipBit));
      if (wire::pkey_base(wanted) == wire::pkey_base(x)) return wanted;
    }
  }
  return 0;
}

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
  const std::uint32_t p = rate_mbps(path), r = rate_mbps(req);
  switch (s) {
    case sel::kGreaterThan: return p > r ? path : 0;
    case sel::kLessThan: {
      if (p < r) return path;
      // The fastest rate below the requested one (a lower rate is always feasible).
      std::uint8_t best = 0;
      for (std::uint8_t c = 2; c <= 22; ++c)
        if (rate_mbps(c) != 0 && rate_mbps(c) < r && (best == 0 || rate_mbps(c) > rate_mbps(best))) best = c;
      return best;
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

struct Ends {
  EndPort src, dst;
  std::uint16_t slid, dlid;
};

const LidEntry& info_of(const Snapshot& s, std::uint16_t lid) noexcept {
  static const LidEntry kNone{};
  return lid < s.lid_info.size() ? s.lid_info[lid] : kNone;
}

// One PathRecord for (slid, dlid) if the path exists and meets the query.
bool build_path(const Snapshot& s, const Ends& e, const wire::PathRecord& q, std::uint64_t mask,
                std::uint8_t subnet_life, wire::PathRecord& out) noexcept {
  const PathAttrs fwd = s.paths.path(e.slid, e.dlid);
  if (!fwd.routed()) return false;
  // The reverse path is looked up only when the query requires it: each
  // lookup is a cache miss in a table of (switches x LIDs), and in a routed
  // subnet every LID is reachable from every switch, so the forward path's
  // existence implies the reverse one's.
  const bool reverse = (mask & cm::kReversible) != 0 && q.reversible() ? s.paths.path(e.dlid, e.slid).routed() : true;
  if (!reverse) return false;

  const std::uint16_t pkey = common_pkey(port_pkeys(s, e.src), port_pkeys(s, e.dst), (mask & cm::kPKey) != 0,
                                         q.pkey.get());
  if (pkey == 0) return false;

  const bool loopback = e.src == e.dst;
  std::uint8_t path_mtu = fwd.mtu, path_rate = fwd.rate;
  if (path_mtu == 0 || path_rate == 0) {
    // A switch's port 0 to itself crosses no link: its own PortInfo's MTUCap
    // and active width and speed, as OpenSM reports them.
    const auto& node = s.fabric.nodes[e.src.node];
    const wire::PortInfo& pi = node.ports[e.src.port].info;
    path_mtu = pi.mtu_cap() != 0 ? pi.mtu_cap() : std::uint8_t{1};
    const std::uint8_t r = rate_code(link_mbps(pi.link_width_active, pi.link_speed_active(), pi.link_speed_ext_active()));
    path_rate = r != 0 ? r : wire::rate_code::k2_5Gbps;
  }
  // A switch's port 0 ends the path inside the switch: OpenSM bounds the
  // path by that port's own MTUCap and active rate, and so do we.
  const LidEntry& si = info_of(s, e.slid);
  const LidEntry& di = info_of(s, e.dlid);
  for (const LidEntry* li : {&si, &di}) {
    if (!li->is_switch) continue;
    if (li->port0_mtu != 0) path_mtu = std::min(path_mtu, li->port0_mtu);
    if (li->port0_rate != 0 && rate_mbps(li->port0_rate) < rate_mbps(path_rate)) path_rate = li->port0_rate;
  }
  const std::uint8_t mtu = select_mtu(path_mtu, q.mtu_selector(), q.mtu(), (mask & cm::kMtu) != 0 && (mask & cm::kMtuSelector) != 0);
  if (mtu == 0) return false;
  const std::uint8_t rate = select_rate(path_rate, q.rate_selector(), q.rate(), (mask & cm::kRate) != 0 && (mask & cm::kRateSelector) != 0);
  if (rate == 0) return false;
  // OpenSM: the subnet timeout, except 0 for a port to itself (IBA 15.2.5.16 Table 205).
  const std::uint8_t life = select_life(loopback ? 0 : subnet_life, q.packet_life_time_selector(), q.packet_life_time(),
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
  // A layered (deadlock-free over several VLs) routing fixes each path's SL:
  // the path must use it, and a query for another SL has no answer (as
  // OpenSM with a routing engine that chooses path SLs).
  if (s.paths.layered()) {
    if ((mask & cm::kSl) != 0 && q.sl() != fwd.sl) return false;
    out.set_sl(fwd.sl);
  } else {
    out.set_sl((mask & cm::kSl) != 0 ? q.sl() : 0);
  }
  out.set_mtu_selector(sel::kExactly);
  out.set_mtu(mtu);
  out.set_rate_selector(sel::kExactly);
  out.set_rate(rate);
  out.set_packet_life_time_selector(sel::kExactly);
  out.set_packet_life_time(life);
  return true;
}

// The LIDs a query allows for an end port: the pinned one, or its LMC block.
struct LidRange {
  std::uint16_t first = 0, count = 0;
};

}  // namespace

std::span<const std::uint16_t> port_pkeys(const Snapshot& snap, EndPort e) noexcept {
  const PortTables* t = snap.tables(e.node, e.port);
  if (t != nullptr && !t->pkeys.empty()) return t->pkeys;
  return kDefaultPKeys;
}

const EndPort* end_port_by_gid(const Snapshot& snap, const wire::Gid& gid) noexcept {
  if (!snap.local_prefix(gid.prefix.get())) return nullptr;
  const auto it = snap.by_port_guid.find(gid.guid.get());
  return it == snap.by_port_guid.end() ? nullptr : &it->second;
}

std::uint16_t collect_path_records(const Snapshot& snap, const PathQuery& pq, RecordSink& sink) {
  const wire::PathRecord& q = *pq.rec;
  const std::uint64_t mask = pq.mask;
  // Source: SLID, else SGID, else the requester's port (IBA 15.2.5.16: a query names at least its destination).
  EndPort src{};
  LidRange srange{};
  if ((mask & cm::kSLid) != 0) {
    const EndPort* e = snap.end_port_by_lid(q.slid.get());
    if (e == nullptr) return 0;
    src = *e;
    srange = {q.slid.get(), 1};
  } else if ((mask & cm::kSGid) != 0) {
    const EndPort* e = end_port_by_gid(snap, q.sgid);
    if (e == nullptr) return wire::sa_status::kReqInvalidGid;
    src = *e;
    srange = {snap.fabric.lid_of(*e), lid_count(snap, *e)};
  } else {
    const EndPort* e = snap.end_port_by_lid(pq.requester_lid);
    if (e == nullptr) return wire::sa_status::kReqInsufficientComponents;
    src = *e;
    srange = {snap.fabric.lid_of(*e), lid_count(snap, *e)};
  }
  if ((mask & cm::kSGid) != 0 && (mask & cm::kSLid) != 0) {
    const EndPort* g = end_port_by_gid(snap, q.sgid);
    if (g == nullptr || !(*g == src)) return 0;
  }

  const bool dst_given = (mask & (cm::kDLid | cm::kDGid)) != 0;
  if (!dst_given && pq.get) return wire::sa_status::kReqInsufficientComponents;
  const std::uint8_t numb = (mask & cm::kNumbPath) != 0 && q.numb_path() != 0 ? q.numb_path() : 0x7f;

  auto paths_to = [&](EndPort dst, LidRange drange) {
    std::uint32_t made = 0;
    const std::uint8_t want = pq.get ? 1 : numb;
    // LMC paths pair source and destination LIDs index by index first, as OpenSM does.
    for (std::uint16_t i = 0; i < std::max(srange.count, drange.count) && made < want && !sink.full(); ++i) {
      const Ends e{src, dst, static_cast<std::uint16_t>(srange.first + i % srange.count),
                   static_cast<std::uint16_t>(drange.first + i % drange.count)};
      wire::PathRecord r;
      if (!build_path(snap, e, q, mask, pq.packet_life, r)) continue;
      const std::size_t before = sink.count();
      sink.offer(&r);
      made += sink.count() != before;
    }
  };

  if ((mask & cm::kDLid) != 0) {
    const EndPort* e = snap.end_port_by_lid(q.dlid.get());
    if (e == nullptr) return 0;
    if ((mask & cm::kDGid) != 0) {
      const EndPort* g = end_port_by_gid(snap, q.dgid);
      if (g == nullptr || !(*g == *e)) return 0;
    }
    paths_to(*e, {q.dlid.get(), 1});
  } else if ((mask & cm::kDGid) != 0) {
    const EndPort* e = end_port_by_gid(snap, q.dgid);
    if (e == nullptr) return wire::sa_status::kReqInvalidGid;
    paths_to(*e, {snap.fabric.lid_of(*e), lid_count(snap, *e)});
  } else {
    for (const auto& [guid, e] : snap.by_port_guid) {
      (void)guid;
      if (sink.full()) break;
      paths_to(e, {snap.fabric.lid_of(e), lid_count(snap, e)});
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
    const EndPort* s = end_port_by_gid(snap, sg);
    if (s == nullptr) return wire::sa_status::kReqInvalidGid;
    for (const wire::Gid& dg : dgids) {
      const EndPort* d = end_port_by_gid(snap, dg);
      if (d == nullptr) return wire::sa_status::kReqInvalidGid;
      if (made >= numb || sink.full()) return 0;
      wire::PathRecord r;
      const Ends e{*s, *d, snap.fabric.lid_of(*s), snap.fabric.lid_of(*d)};
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
