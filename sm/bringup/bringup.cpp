// Bring-up (see bringup.hpp). Every Set's response is checked for status and
// read back; P_Key tables are written once every table not known yet was
// read (a switch port's follows its CA's); port states are driven in two waves (all INIT ports to ARMED,
// then all ARMED to ACTIVE) because a port may go ACTIVE only once its
// neighbour is ARMED or ACTIVE (IBA 7.2.x link state machine).
#include "sm/bringup/bringup.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "fabric/link_rate.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sm/qos/qos_program.hpp"

namespace madengine::sm {

using fabric::NodeId;

namespace {

// A block's contents as a 64-bit hash (never 0, which means "unknown"):
// FNV-1a over the 64 port bytes, then a splitmix64 finaliser.
std::uint64_t block_hash(const wire::LftBlock& blk) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (const std::uint8_t p : blk.ports) h = (h ^ p) * 1099511628211ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h == 0 ? 1 : h;
}

std::pair<std::uint64_t, std::uint8_t> port_key(std::uint64_t node_guid, std::uint8_t port) noexcept { return {node_guid, port}; }

// A port bring-up programs; its directed route is looked up (path_of), not
// kept: 65 bytes of 136 for each of 271 k ports at 43,904 hosts.
struct PortRef {
  NodeId node;
  std::uint8_t port;
  wire::PortInfo want;
};

class Programmer {
 public:
  Programmer(SmpQueue& q, DiscoveryResult& d, const RoutingResult& routes, const BringupConfig& cfg,
             ProgrammedState& st, BringupReport& rep)
      : q_(q), d_(d), routes_(routes), cfg_(cfg), st_(st), rep_(rep) {}

  // M_Keys first (IBA 14.2.4): an end port holding another key, or other
  // protection, gets the SM's in a PortInfo Set carrying the key it holds;
  // once these are answered every later SMP uses the SM's key.
  void rekey() {
    if (cfg_.keys == nullptr) return;
    next_ = 0;
    q_.set_feeder([this] {
      while (next_ < d_.fabric.nodes.size()) {
        const NodeId id = static_cast<NodeId>(next_++);
        if (rekey_node(id)) return true;
      }
      return false;
    });
  }

  bool rekey_node(NodeId id) {
    const fabric::Node& n = d_.fabric.nodes[id];
    bool sent = false;
    for (std::uint8_t port = n.is_switch() ? 0 : 1; port <= (n.is_switch() ? 0 : n.num_ports()); ++port) {
      const fabric::Port& p = n.ports[port];
      if (!n.is_switch() && (!p.linked() || p.guid == 0 || port >= d_.ca_port_paths[id].size())) continue;
      const std::uint64_t guid = p.guid != 0 ? p.guid : n.node_guid;
      const std::uint64_t holds = cfg_.keys->key_for(guid);  // what reaches it (a keyless port takes ours)
      const auto known = cfg_.keys->keys.find(guid);
      const bool keyed = known != cfg_.keys->keys.end() ? known->second == cfg_.m_key : holds == cfg_.m_key;
      const bool protection_differs =
          cfg_.m_key != 0 && (p.info.m_key_protect_bits() != cfg_.m_key_protect_bits ||
                              p.info.m_key_lease_period.get() != cfg_.m_key_lease_period);
      if (keyed && !protection_differs) continue;
      const wire::DrPath path = n.is_switch() ? n.dr_path : d_.ca_port_paths[id][port];
      const wire::PortInfo want = desired(n, port);
      ++rep_.smps;
      sent = true;
      const auto key = port_key(n.node_guid, port);
      q_.submit(make_dr_request(wire::method::kSet, wire::smp_attr::kPortInfo, wire::port_info_modifier(port, fabric::extended_speeds(n, port)), path,
                                cfg_.port_num, wire::as_bytes(want), holds),
                [this, id, port, guid, key, want](const TxnResult& r) {
                  const auto got = smp_response_ok(r) ? wire::decode<wire::PortInfo>(smp_data(r.response)) : std::nullopt;
                  if (!got) {
                    ++rep_.errors;  // a key we do not know: reachable again once its lease runs out
                    return;
                  }
                  ++rep_.rekeyed;
                  cfg_.keys->keys[guid] = cfg_.m_key;
                  st_.port_written[key] = want;
                  fabric::Port& pp = d_.fabric.nodes[id].ports[port];
                  pp.info = *got;
                  pp.state = got->port_state();
                });
    }
    return sent;
  }

  // Each stage hands the queue a feeder that submits one unit of work (a
  // switch's blocks, a node's ports, a batch of port-state Sets) whenever the
  // queue runs dry: memory stays bounded by the window, not the fabric.
  void configure() {
    next_ = 0;
    std::size_t ports = 0;  // reserved at once: a doubling vector of 267,344 ports peaked at 107 MB
    for (const fabric::Node& n : d_.fabric.nodes) ports += n.ports.size();
    ports_.reserve(ports);
    q_.set_feeder([this] {
      const std::size_t switches = routes_.lfts.size();
      if (next_ < switches) {
        program_switch(next_++);
      } else if (next_ < switches + d_.fabric.nodes.size()) {
        program_node_ports(static_cast<NodeId>(next_++ - switches));
      } else {
        return false;
      }
      return true;
    });
  }
  // P_Key tables, once every table not known yet has been read.
  void pkeys() {
    next_ = 0;
    q_.set_feeder([this] {
      if (next_ >= pkey_ports_.size()) return false;
      write_pkeys(pkey_ports_[next_++]);
      return true;
    });
  }
  void arm() { drive(wire::PortState::kInit, wire::PortState::kArmed, rep_.ports_armed); }
  void activate() { drive(wire::PortState::kArmed, wire::PortState::kActive, rep_.ports_activated); }
  void done() { q_.set_feeder(nullptr); }

 private:
  void set(std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path, std::span<const std::uint8_t> data,
           SmpQueue::Done done) {
    ++rep_.smps;
    q_.submit(make_dr_request(wire::method::kSet, attr, mod, path, cfg_.port_num, data, cfg_.m_key), std::move(done));
  }
  // The directed route to a port: its switch's, or the CA port's own.
  const wire::DrPath& path_of(const PortRef& ref) const {
    const fabric::Node& n = d_.fabric.nodes[ref.node];
    return n.is_switch() ? n.dr_path : d_.ca_port_paths[ref.node][ref.port];
  }
  void get(std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path, SmpQueue::Done done) {
    ++rep_.smps;
    q_.submit(make_dr_request(wire::method::kGet, attr, mod, path, cfg_.port_num, {}, cfg_.m_key), std::move(done));
  }

  // Writes the blocks of switch `index` whose acknowledged contents differ
  // from its routes (all of them when they are unknown).
  void write_lft_blocks(std::size_t index) {
    const fabric::Lft& lft = routes_.lfts[index];
    const fabric::Node& n = d_.fabric.nodes[lft.node];
    const std::uint16_t top = routes_.top_lid;
    auto& sw = st_.lft[n.node_guid];
    for (std::uint32_t b = 0; b < sw.blocks.size(); ++b) {
      wire::LftBlock blk;
      for (std::uint32_t i = 0; i < wire::kLftBlockSize; ++i) {
        const std::uint32_t lid = b * wire::kLftBlockSize + i;
        blk.ports[i] = lid < lft.ports.size() && lid <= top ? lft.ports[lid] : wire::kLftNoPort;
      }
      const std::uint64_t hash = block_hash(blk);
      if (sw.blocks[b] == hash) continue;
      sw.blocks[b] = 0;
      const std::uint64_t guid = n.node_guid;
      set(wire::smp_attr::kLinearFwdTable, wire::lft_modifier(b), n.dr_path, wire::as_bytes(blk),
          [this, guid, b, blk, hash](const TxnResult& r) {
            const auto got = smp_response_ok(r) ? wire::decode<wire::LftBlock>(smp_data(r.response)) : std::nullopt;
            if (!got || got->ports != blk.ports) {
              ++rep_.errors;
              return;
            }
            ++rep_.lft_blocks_written;
            auto& s = st_.lft[guid];
            if (b < s.blocks.size()) s.blocks[b] = hash;
          });
    }
  }

  void program_switch(std::size_t index) {
    fabric::Fabric& f = d_.fabric;
    const fabric::Lft& lft = routes_.lfts[index];
    const std::uint16_t top = routes_.top_lid;
    const std::uint32_t blocks = top / wire::kLftBlockSize + 1u;
    {
      const fabric::Node& n = f.nodes[lft.node];
      const wire::SwitchInfo& read = n.switch_info;
      auto& sw = st_.lft[n.node_guid];
      // A switch whose LinearFDBTop is not what we wrote was reset or never
      // programmed by us: its blocks are unknown.
      if (read.linear_fdb_top.get() != sw.top) sw.blocks.clear();
      sw.blocks.resize(blocks);
      write_lft_blocks(index);
      // Its LinearFDBTop is ours, but a switch that reset between our read
      // and our SwitchInfo Set holds our top over an empty table: one block
      // read back tells (a reset clears them all).
      if (sw.blocks[0] != 0) {
        const std::uint64_t guid = n.node_guid;
        get(wire::smp_attr::kLinearFwdTable, wire::lft_modifier(0), n.dr_path, [this, guid, index](const TxnResult& r) {
          const auto got = smp_response_ok(r) ? wire::decode<wire::LftBlock>(smp_data(r.response)) : std::nullopt;
          if (!got) return;  // unread: trusted until the next sweep
          auto& s = st_.lft[guid];
          if (s.blocks.empty() || block_hash(*got) == s.blocks[0]) return;
          ++rep_.lfts_lost;
          std::fill(s.blocks.begin(), s.blocks.end(), 0);
          write_lft_blocks(index);
        });
      }
      if (read.linear_fdb_top.get() == top && read.life_time_value() == cfg_.ports.packet_life_time) {
        sw.top = top;
        return;
      }
      wire::SwitchInfo want = read;
      want.prepare_for_set(false);  // never clear a PortStateChange we have not handled
      want.linear_fdb_top = wire::be16::from(top);
      want.set_life_time_value(cfg_.ports.packet_life_time);
      const NodeId id = lft.node;
      set(wire::smp_attr::kSwitchInfo, 0, n.dr_path, wire::as_bytes(want), [this, id, top](const TxnResult& r) {
        const auto got = smp_response_ok(r) ? wire::decode<wire::SwitchInfo>(smp_data(r.response)) : std::nullopt;
        if (!got || got->linear_fdb_top.get() != top) {
          ++rep_.errors;
          return;
        }
        ++rep_.switch_info_sets;
        fabric::Node& node = d_.fabric.nodes[id];
        node.switch_info = *got;
        st_.lft[node.node_guid].top = top;
      });
    }
  }

  // The PortInfo we want on (node, port), from what discovery read.
  wire::PortInfo desired(const fabric::Node& n, std::uint8_t port) const {
    const fabric::Port& p = n.ports[port];
    wire::PortInfo w = p.info;
    // 0 = no change for the state machine fields (IBA 14.2.5.6).
    w.set_port_state(0);
    w.set_port_physical_state(0);
    w.set_link_down_default_state(0);
    w.set_client_reregister(0);
    const bool end_port = n.is_switch() ? port == 0 : true;
    if (end_port) {
      w.lid = wire::be16::from(n.is_switch() ? n.base_lid : n.port_lids[port]);
      w.set_lmc(n.is_switch() ? 0 : n.lmc);
      w.gid_prefix = wire::be64::from(cfg_.ports.subnet_prefix);
      w.master_sm_lid = wire::be16::from(cfg_.sm_lid);
      w.set_master_sm_sl(cfg_.sm_sl);
      w.set_subnet_timeout(cfg_.ports.subnet_timeout);
      w.m_key = wire::be64::from(cfg_.m_key);
      w.m_key_lease_period = wire::be16::from(cfg_.m_key_lease_period);
      w.set_m_key_protect_bits(cfg_.m_key_protect_bits);
    }
    if (p.linked()) {
      const PortSettings& ps = cfg_.ports;
      const fabric::Node& peer = d_.fabric.nodes[p.peer];
      // The high-priority VLArb limit of the port's class (QoS, IBA 14.2.5.6).
      if (cfg_.qos != nullptr) w.vl_high_limit = cfg_.qos->of(qos_class_of(n, port)).high_limit;
      if (p.mtu != 0) w.set_neighbor_mtu(p.mtu);
      // Both ends run the VLs both can hold (OpenSM's max_op_vls bounds them).
      std::uint8_t vls = p.vl_cap != 0 ? std::min(ps.max_op_vls, p.vl_cap) : 0;
      if (const std::uint8_t far = peer.ports[p.peer_port].vl_cap; vls != 0 && far != 0) vls = std::min(vls, far);
      if (vls != 0) w.set_operational_vls(vls);
      set_link_enables(w, n, port);
      if (n.is_switch() && port != 0) {
        const bool leaf = !peer.is_switch();
        w.set_hoq_life(leaf ? ps.leaf_head_of_queue_lifetime : ps.head_of_queue_lifetime);
        w.set_vl_stall_count(leaf ? ps.leaf_vl_stall_count : ps.vl_stall_count);
        // Partition enforcement toward CAs only (OpenSM clears it between switches).
        const bool enforce = leaf && enforces(n, p);
        const PartEnforce e = cfg_.part_enforce;
        w.set_partition_enforcement_inbound(enforce && (e == PartEnforce::kBoth || e == PartEnforce::kIn) ? 1 : 0);
        w.set_partition_enforcement_outbound(enforce && (e == PartEnforce::kBoth || e == PartEnforce::kOut) ? 1 : 0);
      }
    }
    return w;
  }

  // LinkWidthEnabled, LinkSpeedEnabled and LinkSpeedExtEnabled as OpenSM
  // writes them (osm_link_mgr): a forced value, or "set to supported" where
  // enabled and supported differ; 2x only where the port has it, extended
  // speeds only where both ends advertise them.
  void set_link_enables(wire::PortInfo& w, const fabric::Node& n, std::uint8_t port) const {
    const PortSettings& ps = cfg_.ports;
    const wire::PortInfo& caps = n.is_switch() ? n.ports[0].info : n.ports[port].info;
    const bool has_2x = caps.has_cap(wire::port_cap::kIsCapabilityMask2Supported) &&
                        (caps.capability_mask2.get() & wire::port_cap2::kIsLinkWidth2xSupported) != 0;
    if (ps.force_link_width != 0 && (ps.force_link_width < wire::link_width::k2x || has_2x) &&
        (ps.force_link_width != wire::link_width::kSetToSupported || w.link_width_enabled != w.link_width_supported))
      w.link_width_enabled = ps.force_link_width;
    if (ps.force_link_speed != 0 &&
        (ps.force_link_speed != wire::link_speed::kSetToSupported || w.link_speed_enabled() != w.link_speed_supported()))
      w.set_link_speed_enabled(ps.force_link_speed);
    const fabric::Port& p = n.ports[port];
    if (ps.force_link_speed_ext != 0 && fabric::extended_speeds(n, port) &&
        fabric::extended_speeds(d_.fabric.nodes[p.peer], p.peer_port) &&
        (ps.force_link_speed_ext != wire::link_speed_ext::kSetToSupported ||
         w.link_speed_ext_enabled() != w.link_speed_ext_supported()))
      w.set_link_speed_ext_enabled(ps.force_link_speed_ext);
  }

  static bool same_config(const wire::PortInfo& a, const wire::PortInfo& b) noexcept {
    return a.lid == b.lid && a.lmc() == b.lmc() && a.gid_prefix == b.gid_prefix && a.master_sm_lid == b.master_sm_lid &&
           a.master_sm_sl() == b.master_sm_sl() && a.subnet_timeout() == b.subnet_timeout() &&
           a.m_key == b.m_key && a.m_key_lease_period == b.m_key_lease_period &&
           a.m_key_protect_bits() == b.m_key_protect_bits() && a.neighbor_mtu() == b.neighbor_mtu() &&
           a.operational_vls() == b.operational_vls() && a.hoq_life() == b.hoq_life() &&
           a.vl_stall_count() == b.vl_stall_count() &&
           a.partition_enforcement_inbound() == b.partition_enforcement_inbound() &&
           a.partition_enforcement_outbound() == b.partition_enforcement_outbound() && a.vl_high_limit == b.vl_high_limit &&
           same_enables(a, b);
  }

  // "Set to supported" alone sends no Set: it rides with the port's next
  // one (on ibsim and in the sim it changes nothing, so a port would be
  // written again at every start). A forced mask is written at once.
  static bool same_enables(const wire::PortInfo& read, const wire::PortInfo& want) noexcept {
    const auto same = [](unsigned r, unsigned w, unsigned to_supported) { return r == w || w == to_supported; };
    return same(read.link_width_enabled, want.link_width_enabled, wire::link_width::kSetToSupported) &&
           same(read.link_speed_enabled(), want.link_speed_enabled(), wire::link_speed::kSetToSupported) &&
           same(read.link_speed_ext_enabled(), want.link_speed_ext_enabled(), wire::link_speed_ext::kSetToSupported);
  }

  // ---- P_Keys -----------------------------------------------------------------

  // Entries of a port's table: PartitionCap (NodeInfo) for an end port,
  // PartitionEnforcementCap (SwitchInfo) for a switch's external port.
  static std::size_t pkey_cap(const fabric::Node& n, std::uint8_t port) noexcept {
    return n.is_switch() && port != 0 ? n.switch_info.partition_enforcement_cap.get() : n.node_info.partition_cap.get();
  }

  std::span<const std::uint16_t> wanted_pkeys(std::uint64_t port_guid) const noexcept {
    static constexpr std::uint16_t kDefault[] = {wire::kDefaultPKey};
    return cfg_.partitions != nullptr ? cfg_.partitions->pkeys_of(port_guid) : std::span<const std::uint16_t>(kDefault);
  }

  // Whether switch port `p` (toward a CA) filters P_Keys: enforcement on,
  // the switch able to, and the CA's P_Keys fitting its table.
  bool enforces(const fabric::Node& sw, const fabric::Port& p) const {
    const std::size_t cap = sw.switch_info.partition_enforcement_cap.get();
    if (cfg_.part_enforce == PartEnforce::kOff || cap == 0) return false;
    const fabric::Node& ca = d_.fabric.nodes[p.peer];
    bool fits = false;
    (void)peer_pkey_table(wanted_pkeys(ca.ports[p.peer_port].guid), cap, fits);
    return fits;
  }

  // Every block of a table not known yet; the port's entry appears once all are in.
  void read_pkeys(NodeId id, std::uint8_t port, const wire::DrPath& path) {
    const fabric::Node& n = d_.fabric.nodes[id];
    const std::size_t cap = pkey_cap(n, port);
    const std::uint32_t blocks = wire::pkey_blocks_for(static_cast<std::uint32_t>(cap));
    if (blocks == 0) return;
    struct Pending {
      std::vector<std::uint16_t> table;
      std::uint32_t left = 0;
      bool failed = false;
    };
    auto pending = std::make_shared<Pending>();
    pending->table.assign(cap, wire::kInvalidPKey);
    pending->left = blocks;
    const auto key = port_key(n.node_guid, port);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      // A switch's SMA names the port in the modifier; a CA's answers for the port the SMP arrived on.
      const std::uint32_t mod = wire::pkey_table_modifier(static_cast<std::uint16_t>(b), n.is_switch() ? port : 0);
      ++rep_.pkey_reads;
      get(wire::smp_attr::kPKeyTable, mod, path, [this, key, b, pending](const TxnResult& r) {
        const auto blk = smp_response_ok(r) ? wire::decode<wire::PKeyTableBlock>(smp_data(r.response)) : std::nullopt;
        if (!blk) {
          if (!pending->failed) ++rep_.errors;
          pending->failed = true;
        } else {
          for (std::size_t i = 0; i < wire::kPKeyBlockSize; ++i) {
            const std::size_t k = std::size_t{b} * wire::kPKeyBlockSize + i;
            if (k < pending->table.size()) pending->table[k] = blk->pkey(i);
          }
        }
        if (--pending->left == 0 && !pending->failed) {
          fabric::CowVector<std::uint16_t> table(std::move(pending->table));
          pkey_tables_.intern(table);
          st_.pkeys[key] = std::move(table);
        }
      });
    }
  }

  // Writes the blocks of `want` that differ from what (node, port) holds.
  void write_table(NodeId id, std::uint8_t port, const wire::DrPath& path, const std::vector<std::uint16_t>& want) {
    const fabric::Node& n = d_.fabric.nodes[id];
    const auto key = port_key(n.node_guid, port);
    const auto have = st_.pkeys.find(key);
    if (have == st_.pkeys.end()) return;  // not read (an error was counted)
    const fabric::CowVector<std::uint16_t>& cur = have->second;
    for (std::size_t b = 0; b * wire::kPKeyBlockSize < want.size(); ++b) {
      wire::PKeyTableBlock blk{};
      bool same = true;
      for (std::size_t i = 0; i < wire::kPKeyBlockSize; ++i) {
        const std::size_t k = b * wire::kPKeyBlockSize + i;
        const std::uint16_t v = k < want.size() ? want[k] : wire::kInvalidPKey;
        blk.set_pkey(i, v);
        same = same && (k < cur.size() ? cur[k] : wire::kInvalidPKey) == v;
      }
      if (same) continue;
      const std::uint32_t mod = wire::pkey_table_modifier(static_cast<std::uint16_t>(b), n.is_switch() ? port : 0);
      set(wire::smp_attr::kPKeyTable, mod, path, wire::as_bytes(blk), [this, key, b, blk](const TxnResult& r) {
        const auto got = smp_response_ok(r) ? wire::decode<wire::PKeyTableBlock>(smp_data(r.response)) : std::nullopt;
        if (!got || got->pkeys != blk.pkeys) {
          ++rep_.errors;
          st_.pkeys.erase(key);  // read again next sweep
          return;
        }
        ++rep_.pkey_sets;
        auto it = st_.pkeys.find(key);
        if (it == st_.pkeys.end()) return;
        for (std::size_t i = 0; i < wire::kPKeyBlockSize; ++i) {
          const std::size_t k = b * wire::kPKeyBlockSize + i;
          if (k < it->second.size()) it->second[k] = blk.pkey(i);
        }
      });
    }
  }

  // An end port's table, then (a CA behind a switch that enforces) the
  // switch port toward it: the CA's P_Keys, packed (OpenSM's peer update).
  void write_pkeys(const PortRef& ref) {
    const fabric::Node& n = d_.fabric.nodes[ref.node];
    const fabric::Port& p = n.ports[ref.port];
    const auto key = port_key(n.node_guid, ref.port);
    const auto have = st_.pkeys.find(key);
    if (have == st_.pkeys.end()) return;
    std::size_t dropped = 0;
    const std::uint64_t guid = p.guid != 0 ? p.guid : n.node_guid;
    const std::vector<std::uint16_t> table =
        layout_pkey_table(wanted_pkeys(guid), have->second, pkey_cap(n, ref.port), cfg_.allow_both_pkeys, dropped);
    rep_.pkeys_dropped += static_cast<std::uint32_t>(dropped);
    write_table(ref.node, ref.port, path_of(ref), table);
    if (n.is_switch() || !p.linked()) return;
    const fabric::Node& sw = d_.fabric.nodes[p.peer];
    const std::size_t cap = sw.switch_info.partition_enforcement_cap.get();
    if (!sw.is_switch() || cap == 0 || cfg_.part_enforce == PartEnforce::kOff) return;
    bool fits = false;
    const std::vector<std::uint16_t> peer = peer_pkey_table(table, cap, fits);
    if (!fits) ++rep_.enforcement_off;
    write_table(p.peer, p.peer_port, sw.dr_path, peer);
  }

  void program_node_ports(NodeId id) {
    fabric::Fabric& f = d_.fabric;
    {
      const fabric::Node& n = f.nodes[id];
      for (std::uint8_t port = n.is_switch() ? 0 : 1; port <= n.num_ports(); ++port) {
        const fabric::Port& p = n.ports[port];
        if (!p.linked() && !(n.is_switch() && port == 0)) continue;
        if (!n.is_switch() && (p.guid == 0 || port >= d_.ca_port_paths[id].size())) continue;
        PortRef ref{id, port, desired(n, port)};
        ports_.push_back(ref);
        // P_Key tables of end ports (CA ports, a switch's port 0) and of
        // switch external ports: read once, written in the P_Key stage.
        if (!st_.pkeys.contains(port_key(n.node_guid, port))) read_pkeys(id, port, path_of(ref));
        if (!n.is_switch() || port == 0) pkey_ports_.push_back(ref);
        const auto w = st_.port_written.find(port_key(n.node_guid, port));
        const bool unchanged = p.info.lid == ref.want.lid && p.info.master_sm_lid == ref.want.master_sm_lid &&
                               p.info.lmc() == ref.want.lmc() && (p.state >= 3 || !p.linked()) &&
                               (same_config(p.info, ref.want) ||
                                (w != st_.port_written.end() && same_config(w->second, ref.want)));
        // A port in INIT is configured and armed by the same Set (one SMP
        // instead of two; ARMED needs only its neighbour past DOWN).
        const bool arm_now = p.linked() && p.state == static_cast<std::uint8_t>(wire::PortState::kInit);
        if (unchanged && !arm_now) continue;
        wire::PortInfo payload = ref.want;
        if (arm_now) payload.set_state(wire::PortState::kArmed);
        const std::size_t idx = ports_.size() - 1;
        set(wire::smp_attr::kPortInfo, wire::port_info_modifier(port, fabric::extended_speeds(n, port)), path_of(ref), wire::as_bytes(payload),
            [this, idx, arm_now](const TxnResult& r) {
              on_port_set(idx, r, false);
              const fabric::Port& pp = d_.fabric.nodes[ports_[idx].node].ports[ports_[idx].port];
              if (arm_now && pp.state == static_cast<std::uint8_t>(wire::PortState::kArmed)) ++rep_.ports_armed;
            });
      }
    }
  }

  void on_port_set(std::size_t idx, const TxnResult& r, bool state_change) {
    const PortRef& ref = ports_[idx];
    const auto got = smp_response_ok(r) ? wire::decode<wire::PortInfo>(smp_data(r.response)) : std::nullopt;
    fabric::Node& n = d_.fabric.nodes[ref.node];
    const bool end_port = n.is_switch() ? ref.port == 0 : true;
    if (!got || (end_port && (got->lid != ref.want.lid || got->master_sm_lid != ref.want.master_sm_lid))) {
      ++rep_.errors;
      return;
    }
    if (!state_change) ++rep_.port_info_sets;
    st_.port_written[port_key(n.node_guid, ref.port)] = ref.want;
    fabric::Port& p = n.ports[ref.port];
    // The link went down since discovery read the port (its PortStateChange
    // bit may be cleared already): only a new sweep sees the fabric as it is.
    if (p.linked() && got->port_state() == static_cast<std::uint8_t>(wire::PortState::kDown)) ++rep_.links_lost;
    p.info = *got;
    p.state = got->port_state();
  }

  // Every linked (non-management) port in state `from` is Set to `to`.
  void drive(wire::PortState from, wire::PortState to, std::uint32_t& counter) {
    next_ = 0;
    q_.set_feeder([this, from, to, &counter] {
      std::size_t sent = 0;
      while (next_ < ports_.size() && sent < kDriveBatch) sent += drive_one(next_++, from, to, counter) ? 1 : 0;
      return sent != 0;
    });
  }

  bool drive_one(std::size_t idx, wire::PortState from, wire::PortState to, std::uint32_t& counter) {
    {
      const PortRef& ref = ports_[idx];
      const fabric::Node& n = d_.fabric.nodes[ref.node];
      const fabric::Port& p = n.ports[ref.port];
      if (!p.linked() || p.state != static_cast<std::uint8_t>(from)) return false;
      wire::PortInfo payload = ref.want;
      payload.set_state(to);
      set(wire::smp_attr::kPortInfo, wire::port_info_modifier(ref.port, fabric::extended_speeds(n, ref.port)), path_of(ref),
          wire::as_bytes(payload),
          [this, idx, to, &counter](const TxnResult& r) {
            on_port_set(idx, r, true);
            const fabric::Port& pp = d_.fabric.nodes[ports_[idx].node].ports[ports_[idx].port];
            if (pp.state == static_cast<std::uint8_t>(to)) {
              ++counter;
            } else if (smp_response_ok(r)) {
              ++rep_.errors;
            }
          });
    }
    return true;
  }

  static constexpr std::size_t kDriveBatch = 64;

  SmpQueue& q_;
  DiscoveryResult& d_;
  const RoutingResult& routes_;
  const BringupConfig& cfg_;
  ProgrammedState& st_;
  BringupReport& rep_;
  std::vector<PortRef> ports_;
  fabric::CowInterner<std::uint16_t> pkey_tables_;  // the tables read share a buffer when alike (most are)
  std::vector<PortRef> pkey_ports_;  // end ports, in fabric order
  std::size_t next_ = 0;  // the current stage's cursor
};

}  // namespace

Task<BringupReport> bring_up(SmpQueue& q, DiscoveryResult& d, const RoutingResult& routes, const BringupConfig& cfg,
                             ProgrammedState& state) {
  auto rep = std::make_unique<BringupReport>();
  auto prog = std::make_unique<Programmer>(q, d, routes, cfg, state, *rep);
  prog->rekey();
  co_await q.drained();
  prog->configure();
  co_await q.drained();
  prog->pkeys();
  co_await q.drained();
  prog->arm();
  co_await q.drained();
  prog->activate();
  co_await q.drained();
  prog->done();
  co_return *rep;
}

}  // namespace madengine::sm
