// Bring-up (see bringup.hpp). Every Set's response is checked for status and
// read back; port states are driven in two waves (all INIT ports to ARMED,
// then all ARMED to ACTIVE) because a port may go ACTIVE only once its
// neighbour is ARMED or ACTIVE (IBA 7.2.x link state machine).
#include "sm/bringup/bringup.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/pkey_table.hpp"

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

struct PortRef {
  NodeId node;
  std::uint8_t port;
  wire::DrPath path;
  wire::PortInfo want;
};

class Programmer {
 public:
  Programmer(SmpQueue& q, DiscoveryResult& d, const RoutingResult& routes, const BringupConfig& cfg,
             ProgrammedState& st, BringupReport& rep)
      : q_(q), d_(d), routes_(routes), cfg_(cfg), st_(st), rep_(rep) {}

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
        program_switch(routes_.lfts[next_++]);
      } else if (next_ < switches + d_.fabric.nodes.size()) {
        program_node_ports(static_cast<NodeId>(next_++ - switches));
      } else {
        return false;
      }
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
  void get(std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path, SmpQueue::Done done) {
    ++rep_.smps;
    q_.submit(make_dr_request(wire::method::kGet, attr, mod, path, cfg_.port_num, {}, cfg_.m_key), std::move(done));
  }

  void program_switch(const fabric::Lft& lft) {
    fabric::Fabric& f = d_.fabric;
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
      for (std::uint32_t b = 0; b < blocks; ++b) {
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
      if (read.linear_fdb_top.get() == top && read.life_time_value() == cfg_.life_time_value) {
        sw.top = top;
        return;
      }
      wire::SwitchInfo want = read;
      want.prepare_for_set(false);  // never clear a PortStateChange we have not handled
      want.linear_fdb_top = wire::be16::from(top);
      want.set_life_time_value(cfg_.life_time_value);
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
      w.gid_prefix = wire::be64::from(cfg_.subnet_prefix);
      w.master_sm_lid = wire::be16::from(cfg_.sm_lid);
      w.set_master_sm_sl(cfg_.sm_sl);
      w.set_subnet_timeout(cfg_.subnet_timeout);
      w.m_key = wire::be64::from(cfg_.m_key);
      w.m_key_lease_period = wire::be16::from(cfg_.m_key_lease_period);
      w.set_m_key_protect_bits(cfg_.m_key_protect_bits);
    }
    if (p.linked()) {
      if (p.mtu != 0) w.set_neighbor_mtu(p.mtu);
      if (p.vl_cap != 0) w.set_operational_vls(std::min(cfg_.operational_vls, p.vl_cap));
      if (n.is_switch() && port != 0) {
        const bool leaf = !d_.fabric.nodes[p.peer].is_switch();
        w.set_hoq_life(leaf ? cfg_.leaf_head_of_queue_lifetime : cfg_.head_of_queue_lifetime);
        w.set_vl_stall_count(leaf ? cfg_.leaf_vl_stall_count : cfg_.vl_stall_count);
      }
    }
    return w;
  }

  static bool same_config(const wire::PortInfo& a, const wire::PortInfo& b) noexcept {
    return a.lid == b.lid && a.lmc() == b.lmc() && a.gid_prefix == b.gid_prefix && a.master_sm_lid == b.master_sm_lid &&
           a.master_sm_sl() == b.master_sm_sl() && a.subnet_timeout() == b.subnet_timeout() &&
           a.m_key == b.m_key && a.m_key_lease_period == b.m_key_lease_period &&
           a.m_key_protect_bits() == b.m_key_protect_bits() && a.neighbor_mtu() == b.neighbor_mtu() &&
           a.operational_vls() == b.operational_vls() && a.hoq_life() == b.hoq_life() &&
           a.vl_stall_count() == b.vl_stall_count();
  }

  void program_node_ports(NodeId id) {
    fabric::Fabric& f = d_.fabric;
    {
      const fabric::Node& n = f.nodes[id];
      for (std::uint8_t port = n.is_switch() ? 0 : 1; port <= n.num_ports(); ++port) {
        const fabric::Port& p = n.ports[port];
        if (!p.linked() && !(n.is_switch() && port == 0)) continue;
        if (!n.is_switch() && (p.guid == 0 || port >= d_.ca_port_paths[id].size())) continue;
        PortRef ref{id, port, n.is_switch() ? n.dr_path : d_.ca_port_paths[id][port], desired(n, port)};
        ports_.push_back(ref);
        const bool rereg = cfg_.client_reregister && !n.is_switch() &&
                           p.info.has_cap(wire::port_cap::kIsClientReregistrationSupported);
        // P_Key tables of CA ports and switch external ports (OpenSM reports both).
        if (port != 0 && !st_.pkeys.contains(port_key(n.node_guid, port))) check_pkeys(id, port, ref.path);
        const auto w = st_.port_written.find(port_key(n.node_guid, port));
        const bool unchanged = p.info.lid == ref.want.lid && p.info.master_sm_lid == ref.want.master_sm_lid &&
                               p.info.lmc() == ref.want.lmc() && (p.state >= 3 || !p.linked()) &&
                               (same_config(p.info, ref.want) ||
                                (w != st_.port_written.end() && same_config(w->second, ref.want)));
        // A port in INIT is configured and armed by the same Set (one SMP
        // instead of two; ARMED needs only its neighbour past DOWN).
        const bool arm_now = p.linked() && p.state == static_cast<std::uint8_t>(wire::PortState::kInit);
        if (!rereg && unchanged && !arm_now) continue;
        wire::PortInfo payload = ref.want;
        if (rereg) {
          payload.set_client_reregister(1);
          ++rep_.client_reregisters;
        }
        if (arm_now) payload.set_state(wire::PortState::kArmed);
        const std::size_t idx = ports_.size() - 1;
        set(wire::smp_attr::kPortInfo, wire::port_info_modifier(port), ref.path, wire::as_bytes(payload),
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
    p.info = *got;
    p.state = got->port_state();
  }

  void check_pkeys(NodeId id, std::uint8_t port, const wire::DrPath& path) {
    const fabric::Node& n = d_.fabric.nodes[id];
    const auto key = port_key(n.node_guid, port);
    // A switch's SMA names the port in the modifier; a CA's answers for the port the SMP arrived on.
    const std::uint32_t mod = wire::pkey_table_modifier(0, n.is_switch() ? port : 0);
    get(wire::smp_attr::kPKeyTable, mod, path, [this, key, mod, path](const TxnResult& r) {
      const auto blk = smp_response_ok(r) ? wire::decode<wire::PKeyTableBlock>(smp_data(r.response)) : std::nullopt;
      if (!blk) {
        ++rep_.errors;
        return;
      }
      for (std::size_t i = 0; i < wire::kPKeyBlockSize; ++i) {
        if (wire::pkey_is_valid(blk->pkey(i))) {
          auto& keys = st_.pkeys[key];
          keys.clear();
          for (std::size_t j = 0; j < wire::kPKeyBlockSize; ++j) keys.push_back(blk->pkey(j));
          return;
        }
      }
      // An empty table: give the port the default partition, full member.
      wire::PKeyTableBlock want{};
      want.set_pkey(0, wire::kDefaultPKey);
      set(wire::smp_attr::kPKeyTable, mod, path, wire::as_bytes(want),
          [this, key](const TxnResult& rr) {
            const auto got = smp_response_ok(rr) ? wire::decode<wire::PKeyTableBlock>(smp_data(rr.response)) : std::nullopt;
            if (!got || got->pkey(0) != wire::kDefaultPKey) {
              ++rep_.errors;
              return;
            }
            ++rep_.pkey_sets;
            auto& keys = st_.pkeys[key];
            keys.assign(wire::kPKeyBlockSize, wire::kInvalidPKey);
            keys[0] = wire::kDefaultPKey;
          });
    });
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
      set(wire::smp_attr::kPortInfo, wire::port_info_modifier(ref.port), ref.path, wire::as_bytes(payload),
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
  std::size_t next_ = 0;  // the current stage's cursor
};

}  // namespace

Task<BringupReport> bring_up(SmpQueue& q, DiscoveryResult& d, const RoutingResult& routes, const BringupConfig& cfg,
                             ProgrammedState& state) {
  auto rep = std::make_unique<BringupReport>();
  auto prog = std::make_unique<Programmer>(q, d, routes, cfg, state, *rep);
  prog->configure();
  co_await q.drained();
  prog->arm();
  co_await q.drained();
  prog->activate();
  co_await q.drained();
  prog->done();
  co_return *rep;
}

}  // namespace madengine::sm
