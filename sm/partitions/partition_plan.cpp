// Applying partitions.conf to a fabric (see partition_plan.hpp). The rules
// are OpenSM 3.3.23's, as its man page and partition manager state them:
// the default partition first (every end port limited, the SM's port full;
// every port full when there is no file), statements in file order, a later
// entry for a port overriding an earlier one (both memberships kept only
// with allow_both_pkeys), ports not in the subnet skipped, empty partitions
// dropped, P_Keys generated from 1 for partitions named without one.
#include "sm/partitions/partition_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "madengine/wire/smp/pkey_table.hpp"

namespace madengine::sm {

namespace {

struct PortRef {
  std::uint64_t guid;
  fabric::NodeKind kind;
};

// The IPoIB broadcast group's MGID (RFC 4391): ff12:401b:<P_Key>::ffff:ffff.
constexpr std::uint64_t kIpoibMgidHi = 0xff10'401b'0000'0000ull;
constexpr std::uint64_t kIpoibMgidLo = 0x0000'0000'ffff'ffffull;

class Applier {
 public:
  Applier(const fabric::Fabric& f, const PartitionOptions& opts) : opts_(opts) {
    for (const fabric::EndPort e : f.end_ports()) {
      const fabric::Node& n = f.nodes[e.node];
      const std::uint64_t g = n.ports[e.port].guid != 0 ? n.ports[e.port].guid : n.node_guid;
      ports_.push_back({g, n.kind});
      in_subnet_.emplace(g, n.kind);
    }
  }

  void default_partition(bool no_file) {
    Work& d = partition(kDefaultPKeyBase, "Default", 0);
    add_all(d, 0, no_file, false);
    d.p.members.erase(opts_.sm_port_guid);  // the SM's port: full whatever the rest
    add_port(d, opts_.sm_port_guid, true, false);
    if (no_file) {
      d.p.ipoib = true;
      McGroupParams g;
      g.qkey = kIpoibQkey;
      add_groups(d, wire::Gid{wire::be64::from(kIpoibMgidHi | 0xffffull << 16), wire::be64::from(kIpoibMgidLo)}, g);
    }
  }

  void statement(const PartitionDef& def) {
    Work* w = nullptr;
    if (def.pkey == 0 && !def.name.empty())
      for (auto& [k, v] : by_key_)
        if (v.p.name == def.name) w = &v;
    if (w == nullptr) {
      std::uint16_t pkey = def.pkey;
      if (pkey == 0) pkey = generate_pkey();
      if (pkey == 0) {
        note(def.line, "no P_Key left to generate for partition '" + def.name + "'");
        return;
      }
      w = &partition(pkey, def.name, def.line);
    }
    // A partition's SL applies only with QoS (OpenSM overrides it to 0 otherwise).
    w->p.sl = opts_.qos ? def.params.sl : 0;
    McGroupParams params = def.params;
    params.sl = w->p.sl;
    // Groups are created as the file names them (their MLIDs follow that order).
    if (def.ipoib) {
      w->p.ipoib = true;
      McGroupParams g = params;
      if (g.qkey == 0) g.qkey = kIpoibQkey;
      const wire::Gid mgid{wire::be64::from(kIpoibMgidHi | std::uint64_t{full_pkey(*w)} << 16), wire::be64::from(kIpoibMgidLo)};
      add_groups(*w, mgid, g);
    }
    for (const PartitionMember& m : def.members) member(*w, def, m);
    for (PartitionMgroup m : def.mgroups) {
      if (!opts_.qos) m.params.sl = 0;
      const std::uint64_t hi = m.mgid.prefix.get();
      const std::uint16_t sig = static_cast<std::uint16_t>(hi >> 32);
      if (sig == 0x401b || sig == 0x601b) {
        // IP groups carry the partition's P_Key in the MGID and must have
        // the rate and MTU of this statement (OpenSM's checks).
        const std::uint16_t mpkey = static_cast<std::uint16_t>(hi >> 16);
        if (mpkey != 0 && mpkey != full_pkey(*w)) {
          note(m.line, "IP group's P_Key 0x" + hex(mpkey) + " is not its partition's (0x" + hex(full_pkey(*w)) + "): no group");
          continue;
        }
        if (m.params.rate != params.rate || m.params.mtu != params.mtu) {
          note(m.line, "IP group's rate or MTU differs from its partition's: no group");
          continue;
        }
        m.mgid.prefix = wire::be64::from((hi & ~0xffff0000ull) | std::uint64_t{full_pkey(*w)} << 16);
        if (m.params.qkey == 0) m.params.qkey = kIpoibQkey;
      }
      add_groups(*w, m.mgid, m.params);
    }
  }

  PartitionPlan finish() {
    PartitionPlan plan;
    plan.notes = std::move(notes_);
    // OpenSM's order; empty partitions go.
    for (const auto& [key, r] : groups_) {
      const auto it = by_key_.find(key);
      if (it != by_key_.end() && !it->second.p.members.empty()) plan.groups.push_back(r);
    }
    for (auto& [key, w] : by_key_)
      if (!w.p.members.empty()) plan.partitions.push_back(std::move(w.p));
    // Each end port's P_Keys in OpenSM's placement order: partitions in
    // order, limited before full.
    for (const PortRef& port : ports_) {
      std::vector<std::uint16_t> keys;
      std::uint16_t index0 = 0;
      for (const Partition& p : plan.partitions) {
        const auto it = p.members.find(port.guid);
        if (it == p.members.end()) continue;
        if ((it->second & kMemberLimited) != 0) keys.push_back(p.pkey);
        if ((it->second & kMemberFull) != 0) keys.push_back(static_cast<std::uint16_t>(p.pkey | wire::kPKeyMembershipBit));
      }
      if (const auto it = indx0_.find(port.guid); it != indx0_.end()) index0 = it->second;
      // Block 0 index 0: the indx0 partition's entry, else the default partition's.
      auto first = std::find_if(keys.begin(), keys.end(), [&](std::uint16_t k) {
        return index0 != 0 ? k == index0 : wire::pkey_base(k) == kDefaultPKeyBase;
      });
      if (first != keys.end()) std::rotate(keys.begin(), first, first + 1);
      plan.port_pkeys.emplace(port.guid, std::move(keys));
    }
    return plan;
  }

 private:
  struct Work {
    Partition p;
  };

  static std::uint16_t full_pkey(const Work& w) noexcept {
    return static_cast<std::uint16_t>(w.p.pkey | wire::kPKeyMembershipBit);
  }

  Work& partition(std::uint16_t pkey, const std::string& name, unsigned) {
    auto [it, fresh] = by_key_.try_emplace(pkey_order_key(pkey));
    if (fresh) {
      it->second.p.pkey = pkey;
      it->second.p.name = name;
    }
    return it->second;  // a repeated P_Key merges into the first definition (and keeps its name)
  }

  std::uint16_t generate_pkey() {
    while (pkey_counter_ < kDefaultPKeyBase - 1) {
      const std::uint16_t k = ++pkey_counter_;
      if (!by_key_.contains(pkey_order_key(k))) return k;
    }
    return 0;
  }

  // OpenSM's osm_prtn_add_port: one table per port unless allow_both.
  void add_port(Work& w, std::uint64_t guid, bool full, bool indx0) {
    if (!in_subnet_.contains(guid)) return;
    if (indx0) {
      indx0_[guid] = full ? static_cast<std::uint16_t>(w.p.pkey | wire::kPKeyMembershipBit) : w.p.pkey;
    } else if (const auto it = indx0_.find(guid); it != indx0_.end() && wire::pkey_base(it->second) == w.p.pkey) {
      indx0_.erase(it);
    }
    std::uint8_t& bits = w.p.members[guid];
    const std::uint8_t bit = full ? kMemberFull : kMemberLimited;
    bits = opts_.allow_both_pkeys ? static_cast<std::uint8_t>(bits | bit) : bit;
  }

  bool of_kind(const PortRef& p, std::uint8_t kind) const noexcept {
    return kind == 0 || static_cast<std::uint8_t>(p.kind) == kind;
  }

  void add_all(Work& w, std::uint8_t kind, bool full, bool indx0) {
    for (const PortRef& p : ports_)
      if (of_kind(p, kind)) add_port(w, p.guid, full, indx0);
  }

  // With allow_both, naming a port full (limited) drops its limited (full)
  // membership; "both" keeps both.
  void drop_other(Work& w, std::uint8_t kind, std::uint64_t guid, bool one_port, Membership m) {
    if (!opts_.allow_both_pkeys || m == Membership::kBoth) return;
    const std::uint8_t other = m == Membership::kLimited ? kMemberFull : kMemberLimited;
    for (auto it = w.p.members.begin(); it != w.p.members.end();) {
      bool hit = one_port ? it->first == guid : true;
      if (!one_port && kind != 0) {
        const auto k = in_subnet_.find(it->first);
        hit = k != in_subnet_.end() && static_cast<std::uint8_t>(k->second) == kind;
      }
      if (hit) it->second = static_cast<std::uint8_t>(it->second & ~other);
      it = it->second == 0 ? w.p.members.erase(it) : std::next(it);
    }
  }

  void member(Work& w, const PartitionDef& def, const PartitionMember& m) {
    std::uint8_t kind = 0;
    std::uint64_t guid = m.guid;
    switch (m.kind) {
      case MemberKind::kAll: kind = 0; break;
      case MemberKind::kAllCas: kind = static_cast<std::uint8_t>(fabric::NodeKind::kCa); break;
      case MemberKind::kAllSwitches: kind = static_cast<std::uint8_t>(fabric::NodeKind::kSwitch); break;
      case MemberKind::kAllRouters: kind = static_cast<std::uint8_t>(fabric::NodeKind::kRouter); break;
      case MemberKind::kSelf: guid = opts_.sm_port_guid; break;
      case MemberKind::kGuid: break;
    }
    const bool one = m.kind == MemberKind::kGuid || m.kind == MemberKind::kSelf;
    if (one && !in_subnet_.contains(guid)) {
      note(m.line, "port 0x" + hex(guid) + " is not in the subnet (partition '" + w.p.name + "')");
      return;
    }
    drop_other(w, kind, guid, one, m.membership);
    const bool full = m.membership != Membership::kLimited;
    const bool limited = m.membership == Membership::kLimited || (m.membership == Membership::kBoth && opts_.allow_both_pkeys);
    auto add = [&](bool f) {
      if (one) add_port(w, guid, f, def.indx0);
      else add_all(w, kind, f, def.indx0);
    };
    if (full) add(true);
    if (limited) add(false);
  }

  wire::McMemberRecord group(const Partition& p, const wire::Gid& mgid, const McGroupParams& g, std::uint8_t scope) const {
    wire::McMemberRecord r{};
    r.mgid = mgid;
    // The scope nibble of the MGID follows the group's scope.
    r.mgid.prefix = wire::be64::from((mgid.prefix.get() & ~(0xfull << 48)) | std::uint64_t{scope} << 48);
    r.qkey = wire::be32::from(g.qkey);
    r.set_mtu_selector(wire::selector::kExactly);
    r.set_mtu(g.mtu);
    r.tclass = g.tclass;
    r.pkey = wire::be16::from(static_cast<std::uint16_t>(p.pkey | wire::kPKeyMembershipBit));
    r.set_rate_selector(wire::selector::kExactly);
    r.set_rate(g.rate);
    r.set_packet_life_time_selector(wire::selector::kExactly);
    r.set_packet_life_time(opts_.packet_life);
    r.set_sl(g.sl);
    r.set_flow_label(g.flow_label);
    r.set_hop_limit(scope == 2 ? 0 : 0xff);  // link-local stays in the subnet
    r.set_scope(scope);
    return r;
  }

  // One group per scope the flags name (link-local without any); a group
  // whose MGID exists already is not created again.
  void add_groups(const Work& w, const wire::Gid& mgid, const McGroupParams& g) {
    auto add_one = [&](std::uint8_t scope) {
      const wire::McMemberRecord r = group(w.p, mgid, g, scope);
      for (const auto& have : groups_)
        if (have.second.mgid == r.mgid) return;
      groups_.emplace_back(pkey_order_key(w.p.pkey), r);
    };
    if (g.scope_mask == 0) {
      add_one(2);
      return;
    }
    for (std::uint8_t s = 0; s < 16; ++s)
      if ((g.scope_mask & (1u << s)) != 0) add_one(s);
  }

  static std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }
  void note(unsigned line, std::string what) { notes_.push_back({file_, line, std::move(what)}); }

 public:
  std::string file_;

 private:
  const PartitionOptions& opts_;
  std::vector<PortRef> ports_;
  std::unordered_map<std::uint64_t, fabric::NodeKind> in_subnet_;
  std::map<std::uint16_t, Work> by_key_;  // by pkey_order_key
  std::unordered_map<std::uint64_t, std::uint16_t> indx0_;
  std::uint16_t pkey_counter_ = 0;
  std::vector<std::pair<std::uint16_t, wire::McMemberRecord>> groups_;  // in creation order, by partition
  std::vector<FileIssue> notes_;
};

}  // namespace

bool parse_part_enforce(std::string_view text, PartEnforce& out) noexcept {
  if (text == "both") out = PartEnforce::kBoth;
  else if (text == "in") out = PartEnforce::kIn;
  else if (text == "out") out = PartEnforce::kOut;
  else if (text == "off") out = PartEnforce::kOff;
  else return false;
  return true;
}

const Partition* PartitionPlan::find(std::uint16_t pkey) const noexcept {
  for (const Partition& p : partitions)
    if (p.pkey == wire::pkey_base(pkey)) return &p;
  return nullptr;
}

std::span<const std::uint16_t> PartitionPlan::pkeys_of(std::uint64_t port_guid) const noexcept {
  static constexpr std::uint16_t kLimitedDefault[] = {kDefaultPKeyBase};
  const auto it = port_pkeys.find(port_guid);
  if (it == port_pkeys.end()) return kLimitedDefault;
  return it->second;
}

PartitionPlan plan_partitions(const fabric::Fabric& f, const PartitionConfig* cfg, const PartitionOptions& opts) {
  Applier a(f, opts);
  a.file_ = cfg != nullptr ? cfg->file : std::string();
  a.default_partition(cfg == nullptr);
  if (cfg != nullptr)
    for (const PartitionDef& d : cfg->defs) a.statement(d);
  return a.finish();
}

std::vector<std::uint16_t> layout_pkey_table(std::span<const std::uint16_t> wanted, std::span<const std::uint16_t> current,
                                             std::size_t cap, bool allow_both, std::size_t& dropped) {
  dropped = 0;
  std::vector<std::uint16_t> t(cap, wire::kInvalidPKey);
  if (cap == 0) {
    dropped = wanted.size();
    return t;
  }
  auto same = [&](std::uint16_t a, std::uint16_t b) {
    return allow_both ? a == b : wire::pkey_base(a) == wire::pkey_base(b);
  };
  std::vector<bool> placed(wanted.size(), false);
  std::size_t last = 0;  // the highest index in use
  if (!wanted.empty()) {
    t[0] = wanted[0];
    placed[0] = true;
  }
  // Entries already in the table keep their index (not index 0: that is the first entry's).
  for (std::size_t w = 1; w < wanted.size(); ++w) {
    for (std::size_t i = 1; i < std::min(cap, current.size()); ++i) {
      if (!wire::pkey_is_valid(current[i]) || !same(current[i], wanted[w]) || t[i] != wire::kInvalidPKey) continue;
      t[i] = wanted[w];
      placed[w] = true;
      last = std::max(last, i);
      break;
    }
  }
  // New ones after the last used index, then in the holes.
  for (std::size_t w = 1; w < wanted.size(); ++w) {
    if (placed[w]) continue;
    std::size_t at = last + 1;
    if (at >= cap) {
      at = 1;
      while (at < cap && t[at] != wire::kInvalidPKey) ++at;
    }
    if (at >= cap) {
      ++dropped;
      continue;
    }
    t[at] = wanted[w];
    last = std::max(last, at);
  }
  return t;
}

std::vector<std::uint16_t> peer_pkey_table(std::span<const std::uint16_t> ca_table, std::size_t cap, bool& fits) {
  std::vector<std::uint16_t> out;
  for (const std::uint16_t k : ca_table) {
    if (!wire::pkey_is_valid(k)) continue;
    if (!wire::pkey_is_full_member(k) &&
        std::find(ca_table.begin(), ca_table.end(), static_cast<std::uint16_t>(k | wire::kPKeyMembershipBit)) != ca_table.end())
      continue;
    out.push_back(k);
  }
  fits = out.size() <= cap;
  out.resize(cap, wire::kInvalidPKey);
  return out;
}

}  // namespace madengine::sm
