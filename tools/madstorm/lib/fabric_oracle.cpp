// FabricOracle: LFT walks on the simulated fabric and the PathRecord checks
// built on them. Only the fabric's programmed state is read (LFTs,
// LinearFDBTop, port states, NeighborMTU/MTUCap, active width and speed,
// OperationalVLs, SL2VL and P_Key tables), never the SA's snapshot.
#include "lib/fabric_oracle.hpp"

#include <algorithm>

#include "madengine/wire/sa/common.hpp"
#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madstorm {

namespace wire = madengine::wire;
using madengine::sim::kNoPortIdx;
using madengine::sim::PortIdx;

namespace {

constexpr std::uint32_t kNoRow = 0xffffffffu;
constexpr std::uint8_t kUnknown = 0, kReached = 1, kNotReached = 2;
constexpr std::uint8_t kMtuNone = 0x3f;
constexpr std::uint16_t kRateNone = 0xffff;
constexpr std::uint8_t kVl15 = 15;  // the management VL: never a data VL

// OperationalVLs code -> data VLs (IBA 14.2.5.6 PortInfo: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7, 5 VL0-14).
unsigned data_vls(std::uint8_t op_vls) noexcept {
  switch (op_vls) {
    case 1: return 1;
    case 2: return 2;
    case 3: return 4;
    case 4: return 8;
    case 5: return 15;
    default: return 0;
  }
}

// Lane rate x10 Gb/s of an active speed: LinkSpeedExtActive2 (XDR), then
// LinkSpeedExtActive win when set.
unsigned lane_x10(std::uint8_t speed, std::uint8_t speed_ext, std::uint8_t speed_ext2) noexcept {
  if (speed_ext2 == 1) return 2000;  // XDR
  switch (speed_ext) {
    case 1: return 140;   // FDR
    case 2: return 250;   // EDR
    case 4: return 500;   // HDR
    case 8: return 1000;  // NDR
    default: break;
  }
  switch (speed) {
    case 1: return 25;   // SDR
    case 2: return 50;   // DDR
    case 4: return 100;  // QDR
    default: return 0;
  }
}

unsigned lanes(std::uint8_t width) noexcept {
  switch (width) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
    default: return 0;
  }
}

// The rate an SA reports for a path of `x10` Gb/s x 10: the code of that
// bandwidth, else the fastest code below it.
std::uint16_t reportable_x10(std::uint16_t x10) noexcept {
  std::uint16_t best = 0;
  for (std::uint8_t c = 2; c <= wire::rate_code::kMax; ++c) {
    const std::uint16_t r = rate_code_x10(c);
    if (r <= x10 && r > best) best = r;
  }
  return best;
}

std::uint16_t rate_of(const madengine::sim::Fabric::LinkState& l) noexcept {
  return static_cast<std::uint16_t>(lanes(l.width_active) * lane_x10(l.speed_active, l.speed_ext_active, l.speed_ext2_active));
}

bool active(const madengine::sim::Fabric& f, PortIdx p) noexcept {
  return f.port_state(p) == wire::PortState::kActive;
}

bool linked(const madengine::sim::Fabric& f, PortIdx p, PortIdx q) noexcept {
  return q != kNoPortIdx && f.phys_state(p) == wire::PortPhysState::kLinkUp &&
         f.phys_state(q) == wire::PortPhysState::kLinkUp;
}

bool share_partition(std::span<const std::uint16_t> a, std::span<const std::uint16_t> b, std::uint16_t pkey) noexcept {
  if (!wire::pkey_is_valid(pkey)) return false;
  for (const std::uint16_t x : a) {
    if (wire::pkey_base(x) != wire::pkey_base(pkey)) continue;
    for (const std::uint16_t y : b)
      if (wire::pkeys_match(x, y)) return true;  // same partition, at least one full member
  }
  return false;
}

}  // namespace

std::uint16_t rate_code_x10(std::uint8_t code) noexcept {
  static constexpr std::array<std::uint16_t, 25> kX10 = {0,    0,    25,   100,  300,  50,   200,  400,  600,
                                                          800,  1200, 140,  560,  1120, 1680, 250,  1000, 2000,
                                                          3000, 280,  500,  4000, 6000, 8000, 12000};
  return code < kX10.size() ? kX10[code] : 0;
}

FabricOracle::FabricOracle(const madengine::sim::Fabric& fabric, FabricOracleConfig cfg)
    : fabric_(fabric), cfg_(cfg), owner_(wire::kUnicastLidMax + 1, kNoPortIdx), row_of_(fabric.node_count(), kNoRow),
      starts_(fabric.port_count()) {
  for (PortIdx p = 0; p < fabric.port_count(); ++p) {
    const std::uint16_t base = fabric.lid(p);
    const std::uint32_t node = fabric.node_of(p);
    // End ports: a CA's ports and a switch's port 0 (the only port of a switch with a LID).
    if (base == 0 || (fabric.is_switch(node) && fabric.port_num_of(p) != 0)) continue;
    const std::uint32_t count = 1u << fabric.link_state(p).lmc;
    for (std::uint32_t l = base; l < base + count && l <= wire::kUnicastLidMax; ++l) {
      owner_[l] = p;
      row_width_ = std::max<std::size_t>(row_width_, l + 1);
    }
  }
}

void FabricOracle::clear() noexcept {
  std::fill(row_of_.begin(), row_of_.end(), kNoRow);
  rows_.clear();
  std::fill(starts_.begin(), starts_.end(), Start{});
}

std::uint16_t FabricOracle::link_rate_x10(PortIdx p) const noexcept { return rate_of(fabric_.link_state(p)); }

std::uint16_t FabricOracle::sls_usable(PortIdx out, std::uint8_t in_port_num) const noexcept {
  const unsigned vls = data_vls(fabric_.link_state(out).op_vls);
  const auto table = fabric_.sl2vl(out, in_port_num);
  std::uint16_t mask = 0;
  for (unsigned sl = 0; sl < 16; ++sl) {
    const unsigned vl = sl % 2 == 0 ? table[sl / 2] >> 4 : table[sl / 2] & 0x0fu;
    if (vl != kVl15 && vl < vls) mask = static_cast<std::uint16_t>(mask | (1u << sl));
  }
  return mask;
}

bool FabricOracle::sl_usable(PortIdx out, std::uint8_t in_port_num, std::uint8_t sl) const noexcept {
  const auto table = fabric_.sl2vl(out, in_port_num);
  const unsigned vl = sl % 2 == 0 ? table[sl / 2] >> 4 : table[sl / 2] & 0x0fu;
  return vl != kVl15 && vl < data_vls(fabric_.link_state(out).op_vls);
}

const FabricOracle::Entry& FabricOracle::entry(std::uint32_t sw, std::uint16_t dlid) noexcept {
  if (row_of_[sw] == kNoRow) {
    row_of_[sw] = static_cast<std::uint32_t>(rows_.size());
    rows_.emplace_back(row_width_);
  }
  Entry& e = rows_[row_of_[sw]][dlid];
  if (e.state == kUnknown) {
    e = walk_from_switch(sw, dlid);
    ++walks_;
  }
  return e;
}

// From switch `sw` (arrived at, or starting at its port 0) to `dlid`, as
// sim::Fabric forwards a LID-routed packet: LinearFDBTop, the LFT entry, both
// ends of each link ACTIVE and physically up, at most kPathHopsMax links.
FabricOracle::Entry FabricOracle::walk_from_switch(std::uint32_t sw, std::uint16_t dlid) noexcept {
  Entry e;
  e.state = kNotReached;
  const PortIdx dest = owner_[dlid];
  if (dest == kNoPortIdx) return e;
  std::uint32_t node = sw;
  std::uint8_t in = 0;
  std::uint8_t mtu = kMtuNone;
  std::uint16_t rate = kRateNone, sl_ok = 0xffff;
  for (std::uint8_t hops = 0; hops <= kPathHopsMax; ++hops) {
    const PortIdx p0 = fabric_.port(node, 0);
    if (dest == p0) {  // the switch's own LID: the packet ends at its port 0
      mtu = std::min(mtu, fabric_.link_state(p0).mtu_cap);
      if (const std::uint16_t r = link_rate_x10(p0); r != 0) rate = std::min(rate, r);
      e = Entry{kReached, hops, mtu, e.out_port, rate, sl_ok};
      return e;
    }
    if (dlid > fabric_.linear_fdb_top(node)) return e;
    const std::uint8_t out_num = fabric_.lft_port(node, dlid);
    if (out_num == 0 || out_num == wire::kLftNoPort || out_num > fabric_.num_ports(node)) return e;
    const PortIdx out = fabric_.port(node, out_num);
    const PortIdx q = fabric_.peer(out);
    if (!linked(fabric_, out, q) || !active(fabric_, out) || !active(fabric_, q)) return e;
    const auto out_link = fabric_.link_state(out);
    mtu = std::min({mtu, out_link.neighbor_mtu, fabric_.link_state(q).mtu_cap});
    rate = std::min(rate, rate_of(out_link));
    // The first egress's SL2VL depends on the port the packet came in on,
    // which differs per source: check() looks that one up itself.
    if (hops == 0) e.out_port = out_num;
    else sl_ok = static_cast<std::uint16_t>(sl_ok & sls_usable(out, in));
    const std::uint32_t next = fabric_.node_of(q);
    if (!fabric_.is_switch(next)) {
      if (q == dest) e = Entry{kReached, static_cast<std::uint8_t>(hops + 1), mtu, e.out_port, rate, sl_ok};
      return e;  // a CA that is not the destination ends the walk
    }
    in = fabric_.port_num_of(q);
    node = next;
  }
  return e;  // a loop
}

const FabricOracle::Start& FabricOracle::start_of(PortIdx from) noexcept {
  Start& s = starts_[from];
  if (s.state != 0) return s;
  s = Start{2, kMtuNone, 0, 0, kRateNone, 0xffff, 0};
  const std::uint32_t node = fabric_.node_of(from);
  if (fabric_.is_switch(node)) {  // from the switch's port 0: its own MTUCap and rate bound the path
    const PortIdx p0 = fabric_.port(node, 0);
    const std::uint16_t r = link_rate_x10(p0);
    s = Start{1, fabric_.link_state(p0).mtu_cap, 0, 0, r != 0 ? r : kRateNone, 0xffff, node};
    return s;
  }
  const PortIdx q = fabric_.peer(from);
  if (!linked(fabric_, from, q) || !active(fabric_, from) || !active(fabric_, q)) return s;
  const auto mtu = std::min(fabric_.link_state(from).neighbor_mtu, fabric_.link_state(q).mtu_cap);
  const std::uint32_t next = fabric_.node_of(q);
  if (!fabric_.is_switch(next)) {  // two CAs cabled back to back
    s = Start{3, mtu, 0, 1, link_rate_x10(from), sls_usable(from, 0), q};
    return s;
  }
  s = Start{1, mtu, fabric_.port_num_of(q), 1, link_rate_x10(from), sls_usable(from, 0), next};
  return s;
}

FabricOracle::Walk FabricOracle::walk(PortIdx from, std::uint16_t dlid, std::uint8_t sl) noexcept {
  Walk w;
  if (from >= fabric_.port_count() || dlid == 0 || dlid > wire::kUnicastLidMax || sl > 15) return w;
  const PortIdx dest = owner_[dlid];
  if (dest == kNoPortIdx) return w;
  if (dest == from && !fabric_.is_switch(fabric_.node_of(from))) {
    // A CA port to itself: its own link bounds the path, nothing is crossed.
    w.reached = true;
    w.mtu = std::min(fabric_.link_state(from).neighbor_mtu, fabric_.link_state(from).mtu_cap);
    w.rate_x10 = link_rate_x10(from);
    w.sl_usable = true;
    return w;
  }
  const Start& s = start_of(from);
  const bool sl_ok = ((s.sl_ok >> sl) & 1u) != 0;
  if (s.state == 2) return w;
  if (s.state == 3) {
    w = Walk{s.sw == dest, s.hops, s.mtu, s.rate_x10, sl_ok};
    return w;
  }
  const Entry& e = entry(s.sw, dlid);
  if (e.state != kReached) return w;
  w.reached = true;
  w.hops = static_cast<std::uint8_t>(s.hops + e.hops);
  w.mtu = std::min(s.mtu, e.mtu);
  w.rate_x10 = std::min(s.rate_x10, e.rate_x10);
  // The first switch's SL2VL depends on the port the walk entered it by.
  w.sl_usable = sl_ok && ((e.sl_ok >> sl) & 1u) != 0 &&
                (e.out_port == 0 || sl_usable(fabric_.port(s.sw, e.out_port), s.in, sl));
  return w;
}

PathCheck FabricOracle::check(const wire::PathRecord& rec) noexcept {
  PathCheck c;
  const std::uint16_t slid = rec.slid.get(), dlid = rec.dlid.get();
  const PortIdx src = port_of_lid(slid), dst = port_of_lid(dlid);
  auto names = [&](const wire::Gid& g, PortIdx p) {
    return g.prefix.get() == cfg_.subnet_prefix && g.guid.get() == fabric_.port_guid(p);
  };
  if (src == kNoPortIdx || dst == kNoPortIdx || !names(rec.sgid, src) || !names(rec.dgid, dst)) {
    c.verdict = PathVerdict::kUnknownEnd;
    return c;
  }
  const std::uint8_t sl = rec.sl();
  const Walk w = walk(src, dlid, sl);
  c.hops = w.hops;
  if (!w.reached) c.verdict = PathVerdict::kUnreached;
  else if (rec.mtu() != w.mtu) c.verdict = PathVerdict::kMtu;
  else if (rate_code_x10(rec.rate()) == 0 || rate_code_x10(rec.rate()) != reportable_x10(w.rate_x10))
    c.verdict = PathVerdict::kRate;
  else if (!share_partition(fabric_.pkey_table(src), fabric_.pkey_table(dst), rec.pkey.get()))
    c.verdict = PathVerdict::kPKey;
  else if ((cfg_.expect_sl0 && sl != 0) || !w.sl_usable) c.verdict = PathVerdict::kSl;
  else if (rec.hop_limit() > 1) c.verdict = PathVerdict::kHopLimit;  // a router would forward it
  else if (rec.reversible() && !walk(dst, slid).reached) c.verdict = PathVerdict::kNotReversible;
  return c;
}

}  // namespace madstorm
