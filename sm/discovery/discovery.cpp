// The heavy sweep (see discovery.hpp). State lives in one Sweep object the
// completion callbacks share; the coroutine only starts it and awaits the
// queue draining. The peer's port number is NodeInfo.LocalPortNum (IBA 14.2.5.3).
#include "sm/discovery/discovery.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <memory>

#include "madengine/wire/codec.hpp"

namespace madengine::sm {

using fabric::kNoNode;
using fabric::NodeId;

std::uint32_t DiscoveryResult::links() const noexcept {
  std::uint32_t n = 0;
  for (NodeId i = 0; i < fabric.nodes.size(); ++i)
    for (const auto& p : fabric.nodes[i].ports)
      if (p.linked() && (p.peer > i || (p.peer == i))) ++n;
  return n;
}

std::vector<std::uint16_t> DiscoveryResult::current_lids() const {
  std::vector<std::uint16_t> out;
  for (const fabric::EndPort e : fabric.end_ports()) out.push_back(fabric.nodes[e.node].ports[e.port].info.lid.get());
  return out;
}

bool has_link(const wire::PortInfo& pi) noexcept {
  return pi.phys_state() == wire::PortPhysState::kLinkUp || pi.port_state() >= 2;
}

void apply_port_info(fabric::Node& n, std::uint8_t port, const wire::PortInfo& pi) noexcept {
  fabric::Port& p = n.ports[port];
  p.info = pi;
  p.link_width = pi.link_width_active;
  p.link_speed = pi.link_speed_active();
  p.mtu = pi.mtu_cap();
  p.vl_cap = pi.vl_cap();
  p.state = pi.port_state();
  if (!n.is_switch() && port < n.port_lids.size()) n.port_lids[port] = pi.lid.get();
  if (n.is_switch() && port == 0) {
    n.base_lid = pi.lid.get();
    n.lmc = pi.lmc();
  }
  if (!n.is_switch()) n.lmc = pi.lmc();
}

namespace {

class Sweep {
 public:
  Sweep(SmpQueue& q, DiscoveryOptions opts, DiscoveryResult& out) : q_(q), opts_(opts), out_(out) {}

  void start() { get_node_info({}, kNoNode, 0); }

 private:
  // A Get to the port `guid` (0: not known yet, only its path) with the key
  // it holds; unanswered, again with the next candidate key.
  void get(std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path, SmpQueue::Done done, std::uint64_t guid) {
    if (opts_.keys == nullptr) {
      ++out_.smps;
      q_.submit(make_dr_request(wire::method::kGet, attr, mod, path, opts_.port_num, {}, opts_.m_key), std::move(done));
      return;
    }
    if (guid == 0) {
      const auto it = opts_.keys->guid_at_path.find(MKeyBook::path_key(path));
      if (it != opts_.keys->guid_at_path.end()) guid = it->second;
    }
    const auto learned = out_.port_mkeys.find(guid);
    const std::uint64_t first =
        learned != out_.port_mkeys.end() && learned->second != 0 ? learned->second : opts_.keys->key_for(guid);
    send(attr, mod, path, std::make_shared<const std::vector<std::uint64_t>>(opts_.keys->candidates(first)), 0,
         std::make_shared<SmpQueue::Done>(std::move(done)));
  }

  void send(std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path,
            std::shared_ptr<const std::vector<std::uint64_t>> keys, std::size_t i, std::shared_ptr<SmpQueue::Done> done) {
    ++out_.smps;
    q_.submit(make_dr_request(wire::method::kGet, attr, mod, path, opts_.port_num, {}, (*keys)[i]),
              [this, attr, mod, path, keys, i, done](const TxnResult& r) {
                if (r.status == TxnStatus::kTimeout && i + 1 < keys->size()) {
                  send(attr, mod, path, keys, i + 1, done);  // perhaps a key the port holds from before
                  return;
                }
                if (i != 0 && r.status == TxnStatus::kOk) answered_key_ = (*keys)[i];
                if (*done) (*done)(r);
                answered_key_ = 0;
              });
  }

  // A key other than the first candidate got an answer: the port holds it.
  void note_key(std::uint64_t guid) {
    if (answered_key_ != 0 && guid != 0) out_.port_mkeys[guid] = answered_key_;
  }

  void get_node_info(const wire::DrPath& path, NodeId parent, std::uint8_t parent_port) {
    get(wire::smp_attr::kNodeInfo, 0, path, [this, path, parent, parent_port](const TxnResult& r) {
      if (!smp_response_ok(r)) {
        ++out_.errors;
        return;
      }
      const auto ni = wire::decode<wire::NodeInfo>(smp_data(r.response));
      if (!ni) return;
      note_key(ni->port_guid.get());
      on_node_info(*ni, path, parent, parent_port);
    }, 0);
  }

  void on_node_info(const wire::NodeInfo& ni, const wire::DrPath& path, NodeId parent, std::uint8_t parent_port) {
    fabric::Fabric& f = out_.fabric;
    const std::uint8_t lp = ni.local_port_num;
    const auto it = out_.by_guid.find(ni.node_guid.get());
    if (it != out_.by_guid.end()) {
      // Another path to a node we know: record the link, do not re-read it.
      ++out_.duplicate_paths;
      const NodeId id = it->second;
      fabric::Node& n = f.nodes[id];
      if (lp >= n.ports.size()) return;
      if (parent != kNoNode) f.link(parent, parent_port, id, lp);
      if (!n.is_switch() && n.ports[lp].guid == 0) {
        // A CA port first reached now: its GUID, path and PortInfo.
        n.ports[lp].guid = ni.port_guid.get();
        out_.ca_port_paths[id][lp] = path;
        get_port_info(id, lp, path, ni.port_guid.get());
      }
      return;
    }
    fabric::Node n;
    n.kind = ni.is_switch() ? fabric::NodeKind::kSwitch
             : ni.type() == wire::NodeType::kRouter ? fabric::NodeKind::kRouter
                                                    : fabric::NodeKind::kCa;
    n.node_guid = ni.node_guid.get();
    n.system_guid = ni.system_image_guid.get();
    n.ports.resize(ni.num_ports + 1u);
    n.node_info = ni;
    n.dr_path = path;
    if (n.is_switch()) {
      for (auto& p : n.ports) p.guid = ni.port_guid.get();
    } else {
      if (lp == 0 || lp > ni.num_ports) return;  // a CA must name a real port
      n.ports[lp].guid = ni.port_guid.get();
      n.port_lids.assign(n.ports.size(), 0);
    }
    const NodeId id = f.add_node(std::move(n));
    out_.by_guid.emplace(ni.node_guid.get(), id);
    out_.ca_port_paths.emplace_back(ni.num_ports + 1u);
    if (path.hops == 0) {
      out_.local_node = id;
      out_.local_port = lp;
    }
    if (parent != kNoNode) f.link(parent, parent_port, id, lp);
    if (!f.nodes[id].is_switch()) out_.ca_port_paths[id][lp] = path;

    const std::uint64_t port_guid = ni.port_guid.get();  // whose M_Key guards what follows
    get(wire::smp_attr::kNodeDescription, 0, path, [this, id](const TxnResult& r) {
      if (!smp_response_ok(r)) {
        ++out_.errors;
        return;
      }
      if (const auto nd = wire::decode<wire::NodeDescription>(smp_data(r.response))) {
        out_.fabric.nodes[id].node_desc = *nd;
        out_.fabric.nodes[id].description = nd->str();
      }
    }, port_guid);
    if (ni.is_switch()) {
      get(wire::smp_attr::kSwitchInfo, 0, path, [this, id, port_guid](const TxnResult& r) {
        if (!smp_response_ok(r)) {
          ++out_.errors;
          return;
        }
        const auto si = wire::decode<wire::SwitchInfo>(smp_data(r.response));
        if (!si) return;
        out_.fabric.nodes[id].switch_info = *si;
        if (si->port_state_change() != 0) {
          out_.port_state_changed.push_back(id);
          if (!opts_.clear_port_state_change) return;
          // This sweep reads every port, so the change is seen: clear the
          // bit (write 1, IBA 14.2.5.4) or the next light sweep reports it again.
          wire::SwitchInfo clear = *si;
          clear.prepare_for_set(true);
          ++out_.smps;
          const auto learned = out_.port_mkeys.find(port_guid);
          const std::uint64_t key = opts_.keys == nullptr       ? opts_.m_key
                                    : learned != out_.port_mkeys.end() ? learned->second
                                                                       : opts_.keys->key_for(port_guid);
          q_.submit(make_dr_request(wire::method::kSet, wire::smp_attr::kSwitchInfo, 0, out_.fabric.nodes[id].dr_path,
                                    opts_.port_num,
                                    std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&clear), sizeof clear),
                                    key),
                    nullptr);
        }
      }, port_guid);
      for (std::uint8_t p = 0; p <= ni.num_ports; ++p) get_port_info(id, p, path, port_guid);
    } else {
      get_port_info(id, lp, path, port_guid);
    }
  }

  // Every PortInfo Get says the SM reads the extended speeds (modifier bit
  // 31): ports past HDR report their true speeds only then. One Get, where
  // OpenSM asks again once a port shows it has them.
  void get_port_info(NodeId id, std::uint8_t port, const wire::DrPath& path, std::uint64_t guid) {
    get(wire::smp_attr::kPortInfo, wire::port_info_modifier(port, true), path, [this, id, port, path, guid](const TxnResult& r) {
      if (!smp_response_ok(r)) {
        ++out_.errors;
        return;
      }
      const auto pi = wire::decode<wire::PortInfo>(smp_data(r.response));
      if (!pi) return;
      // An end port's PortInfo shows its M_Key at protection level 0 (or to
      // the right key): what the port holds now.
      // A zero behind protection hides the key from one that was wrong:
      // unless a fallback key got the answer, what we sent is not its key.
      const bool end_port = !out_.fabric.nodes[id].is_switch() || port == 0;
      if (end_port && (pi->m_key.get() != 0 || pi->m_key_protect_bits() == 0)) out_.port_mkeys[guid] = pi->m_key.get();
      else if (end_port && answered_key_ != 0) note_key(guid);
      else if (end_port && guid != 0) out_.port_mkeys_wrong.push_back(guid);
      on_port_info(id, port, path, *pi);
    }, guid);
  }

  void on_port_info(NodeId id, std::uint8_t port, const wire::DrPath& path, const wire::PortInfo& pi) {
    fabric::Node& n = out_.fabric.nodes[id];
    const fabric::Port& p = n.ports[port];
    apply_port_info(n, port, pi);
    // Explore: a switch's external ports, and the SM's own port.
    const bool explore = (n.is_switch() && port != 0) || (!n.is_switch() && path.hops == 0);
    if (!explore || !has_link(pi) || p.linked() || path.hops >= wire::kDrHopsMax) return;
    get_node_info(path.extended(port), id, port);
  }

  SmpQueue& q_;
  DiscoveryOptions opts_;
  DiscoveryResult& out_;
  std::uint64_t answered_key_ = 0;  // while a completion runs: the fallback key that got it answered
};

// The link's MTU and VLs are the lesser of the two ends' capabilities.
void finish_links(fabric::Fabric& f) {
  for (auto& n : f.nodes) {
    for (auto& p : n.ports) {
      if (!p.linked()) continue;
      const fabric::Port& q = f.nodes[p.peer].ports[p.peer_port];
      if (q.mtu != 0) p.mtu = std::min(p.mtu, q.mtu);
    }
  }
}

}  // namespace

Task<DiscoveryResult> discover(SmpQueue& q, DiscoveryOptions opts) {
  auto out = std::make_unique<DiscoveryResult>();
  auto sweep = std::make_unique<Sweep>(q, opts, *out);
  sweep->start();
  co_await q.drained();
  finish_links(out->fabric);
  co_return std::move(*out);
}

namespace {
bool was_linked_in(const std::pair<bool, std::uint8_t>& seen, wire::PortState s) noexcept {
  return seen.first && seen.second == static_cast<std::uint8_t>(s);
}
}  // namespace

std::shared_ptr<PortStateRecheck> clear_port_state_changes(SmpQueue& q, const DiscoveryResult& d,
                                                           const DiscoveryOptions& opts) {
  auto out = std::make_shared<PortStateRecheck>();
  for (const fabric::NodeId id : d.port_state_changed) {
    const fabric::Node& n = d.fabric.nodes[id];
    // Each port as discovery saw it: linked or not, and its state.
    std::vector<std::pair<bool, std::uint8_t>> seen(n.ports.size());
    for (std::uint8_t p = 1; p < n.ports.size(); ++p) seen[p] = {has_link(n.ports[p].info), n.ports[p].state};
    wire::SwitchInfo clear = n.switch_info;
    clear.prepare_for_set(true);  // write 1 to clear (IBA 14.2.5.4)
    ++out->smps;
    const wire::DrPath path = n.dr_path;
    std::string name = n.description.empty() ? fmt::format("{:#018x}", n.node_guid) : n.description;
    q.submit(make_dr_request(wire::method::kSet, wire::smp_attr::kSwitchInfo, 0, path, opts.port_num,
                             std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&clear), sizeof clear),
                             opts.m_key),
             [&q, out, path, opts, seen = std::move(seen), name = std::move(name)](const TxnResult& r) {
               // Not cleared: the bit stays for the next light sweep to see.
               if (!smp_response_ok(r)) return;
               // Read after the clear: a change from now on sets the bit again;
               // one since discovery's read shows here. Bring-up may already
               // move ports forward (INIT -> ARMED -> ACTIVE); only a link
               // gained or lost, or a state gone back (a retrain), moved.
               // A linked port in INIT or ARMED needs no read: bring-up Sets
               // it (to ARMED, then ACTIVE) after this clear was answered
               // (its first stage waits for the queue to drain), and the
               // Set's answer shows a link lost (BringupReport.links_lost).
               for (std::uint8_t p = 1; p < seen.size(); ++p) {
                 const bool set_by_bringup =
                     was_linked_in(seen[p], wire::PortState::kInit) || was_linked_in(seen[p], wire::PortState::kArmed);
                 if (set_by_bringup) continue;
                 ++out->smps;
                 q.submit(make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, wire::port_info_modifier(p, true),
                                          path, opts.port_num, {}, opts.m_key),
                          [out, p, was = seen[p], name](const TxnResult& res) {
                            const auto pi =
                                smp_response_ok(res) ? wire::decode<wire::PortInfo>(smp_data(res.response)) : std::nullopt;
                            if (!pi || out->moved) return;
                            if (has_link(*pi) == was.first && pi->port_state() >= was.second) return;
                            out->moved = true;
                            out->what = fmt::format("{} port {} went from state {} to {}", name, p, was.second,
                                                    pi->port_state());
                          });
               }
             });
  }
  return out;
}

}  // namespace madengine::sm
