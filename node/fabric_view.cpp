// FabricView and LftTable over the SM's model (fabric::Fabric, fabric::Lft):
// what an embedder reads of an epoch and fills in its routing, as values.
#include <stdexcept>
#include <string>

#include "fabric/link_rate.hpp"
#include "node/fabric_model.hpp"

namespace madengine::node {

static_assert(kNoRoute == fabric::kLftNoRoute);
static_assert(kNoNode == fabric::kNoNode);

namespace {

// The port GUID an end port answers to (a switch's ports share port 0's).
std::uint64_t end_port_guid(const fabric::Node& n, std::uint8_t port) noexcept {
  return port < n.ports.size() && n.ports[port].guid != 0 ? n.ports[port].guid : n.node_guid;
}

const fabric::Node& node_or_throw(const FabricSource& s, NodeId node) {
  if (node >= s.fabric->nodes.size()) throw std::out_of_range("no node " + std::to_string(node));
  return s.fabric->nodes[node];
}

const fabric::Node& port_or_throw(const FabricSource& s, NodeId node, std::uint8_t port) {
  const fabric::Node& n = node_or_throw(s, node);
  if (port > n.num_ports() || port >= n.ports.size() || (port == 0 && !n.is_switch()))
    throw std::out_of_range("node " + std::to_string(node) + " has no port " + std::to_string(port));
  return n;
}

}  // namespace

void FabricSource::count() {
  lft_index.assign(fabric->nodes.size(), ~0u);
  for (std::size_t i = 0; i < lfts.size(); ++i)
    if (lfts[i].node < lft_index.size()) lft_index[lfts[i].node] = static_cast<std::uint32_t>(i);
  std::size_t ends = 0;
  for (const fabric::Node& n : fabric->nodes) {
    ports += n.num_ports() + (n.is_switch() ? 1u : 0u);
    for (std::uint8_t p = 1; p <= n.num_ports() && p < n.ports.size(); ++p) ends += n.ports[p].linked();
  }
  links = ends / 2;
}

FabricView FabricSource::published(std::shared_ptr<const void> owner, const fabric::Fabric& fabric,
                                   std::span<const fabric::Lft> lfts, std::span<const fabric::EndPort> by_lid,
                                   const std::unordered_map<std::uint64_t, fabric::EndPort>& by_guid,
                                   std::uint64_t epoch, std::uint16_t top_lid) {
  auto s = std::make_shared<FabricSource>();
  s->owner = std::move(owner);
  s->fabric = &fabric;
  s->lfts = lfts;
  s->by_lid = by_lid;
  s->by_guid = &by_guid;
  s->epoch = epoch;
  s->top_lid = top_lid;
  s->count();
  return FabricView(std::move(s));
}

FabricView FabricSource::borrowed(const fabric::Fabric& fabric, std::uint16_t top_lid) {
  auto s = std::make_shared<FabricSource>();
  s->fabric = &fabric;
  s->top_lid = top_lid;
  s->own_by_lid.assign(top_lid + 1u, fabric::EndPort{});
  for (const fabric::EndPort e : fabric.end_ports()) {
    const fabric::Node& n = fabric.nodes[e.node];
    s->own_by_guid.emplace(end_port_guid(n, e.port), e);
    const std::uint16_t base = fabric.lid_of(e);
    const unsigned lids = n.is_switch() ? 1u : 1u << n.lmc;
    for (unsigned i = 0; i < lids && base != 0 && base + i < s->own_by_lid.size(); ++i) s->own_by_lid[base + i] = e;
  }
  s->by_lid = s->own_by_lid;
  s->by_guid = &s->own_by_guid;
  s->count();
  return FabricView(std::move(s));
}

std::uint64_t FabricView::epoch() const noexcept { return src_ ? src_->epoch : 0; }
std::uint16_t FabricView::top_lid() const noexcept { return src_ ? src_->top_lid : 0; }
std::size_t FabricView::node_count() const noexcept { return src_ ? src_->fabric->nodes.size() : 0; }
std::size_t FabricView::port_count() const noexcept { return src_ ? src_->ports : 0; }
std::size_t FabricView::link_count() const noexcept { return src_ ? src_->links : 0; }

FabricNode FabricView::node(NodeId node) const {
  if (!src_) throw std::out_of_range("empty fabric view");
  const fabric::Node& n = node_or_throw(*src_, node);
  return FabricNode{.kind = static_cast<NodeKind>(n.kind), .node_guid = n.node_guid, .system_guid = n.system_guid,
                    .description = n.description, .num_ports = n.num_ports(),
                    .lid = n.is_switch() ? n.base_lid : std::uint16_t{0}, .lmc = n.lmc};
}

FabricPort FabricView::port(NodeId node, std::uint8_t port) const {
  if (!src_) throw std::out_of_range("empty fabric view");
  const fabric::Node& n = port_or_throw(*src_, node, port);
  const fabric::Port& p = n.ports[port];
  return FabricPort{.guid = p.guid,
                    .lid = n.is_switch() ? (port == 0 ? n.base_lid : std::uint16_t{0}) : src_->fabric->lid_of({node, port}),
                    .state = p.state, .peer = p.linked() ? p.peer : kNoNode, .peer_port = p.peer_port,
                    .link_width = p.link_width, .link_speed = p.link_speed, .mtu = p.mtu};
}

PortLink FabricView::port_link(NodeId node, std::uint8_t port) const {
  if (!src_) throw std::out_of_range("empty fabric view");
  const fabric::Node& n = port_or_throw(*src_, node, port);
  const fabric::Port& p = n.ports[port];
  const wire::LinkSpeed s = fabric::link_speed_of(n, port);
  const std::uint8_t enabled = p.info.link_width_enabled;
  return PortLink{.width = p.link_width,
                  .width_enabled = enabled == 0xff ? p.info.link_width_supported : enabled,
                  .speed = s.speed,
                  .speed_ext = s.ext,
                  .speed_ext2 = s.ext2,
                  .port_rate = fabric::port_rate_code(n, port),
                  .link_rate = fabric::link_rate_code(*src_->fabric, node, port),
                  .mtu_cap = p.mtu,
                  .vl_cap = p.vl_cap,
                  .op_vls = static_cast<std::uint8_t>(p.info.operational_vls()),
                  .data_mbps = wire::link_mbps(p.link_width, s)};
}

std::vector<EndPort> FabricView::end_ports() const {
  std::vector<EndPort> out;
  if (!src_) return out;
  for (const fabric::EndPort e : src_->fabric->end_ports()) out.push_back(EndPort{.node = e.node, .port = e.port});
  return out;
}

std::uint16_t FabricView::lid_of(EndPort e) const noexcept {
  if (!src_ || e.node >= node_count()) return 0;
  return src_->fabric->lid_of(fabric::EndPort{.node = e.node, .port = e.port});
}

std::optional<EndPort> FabricView::end_port_by_lid(std::uint16_t lid) const noexcept {
  if (!src_ || lid == 0 || lid >= src_->by_lid.size() || src_->by_lid[lid].node == fabric::kNoNode) return std::nullopt;
  const fabric::EndPort e = src_->by_lid[lid];
  return EndPort{.node = e.node, .port = e.port};
}

std::optional<EndPort> FabricView::end_port_by_guid(std::uint64_t guid) const noexcept {
  if (!src_) return std::nullopt;
  const auto it = src_->by_guid->find(guid);
  if (it == src_->by_guid->end()) return std::nullopt;
  return EndPort{.node = it->second.node, .port = it->second.port};
}

bool FabricView::has_lft(NodeId node) const noexcept {
  return src_ && node < src_->lft_index.size() && src_->lft_index[node] != ~0u;
}

std::uint8_t FabricView::lft_port(NodeId node, std::uint16_t lid) const noexcept {
  if (!has_lft(node)) return kNoRoute;
  const fabric::Lft& l = src_->lfts[src_->lft_index[node]];
  return lid < l.ports.size() ? l.ports[lid] : kNoRoute;
}

LftTable::Tables::Tables(std::vector<fabric::Lft>& l, const fabric::Fabric& f) : lfts(&l), fabric(&f) {
  index.assign(f.nodes.size(), ~0u);
  for (std::size_t i = 0; i < l.size(); ++i)
    if (l[i].node < index.size()) index[l[i].node] = static_cast<std::uint32_t>(i);
  top_lid = static_cast<std::uint16_t>(l.empty() || l[0].ports.empty() ? 0 : l[0].ports.size() - 1);
}

std::uint8_t* LftTable::Tables::entry(NodeId node, std::uint16_t lid) noexcept {
  if (node >= index.size() || index[node] == ~0u) return nullptr;
  fabric::Lft& l = (*lfts)[index[node]];
  return lid != 0 && lid < l.ports.size() ? &l.ports[lid] : nullptr;
}

std::uint16_t LftTable::top_lid() const noexcept { return t_->top_lid; }

bool LftTable::set(NodeId node, std::uint16_t lid, std::uint8_t port) noexcept {
  std::uint8_t* e = t_->entry(node, lid);
  if (e == nullptr) return false;
  // A switch's ports are 0 (itself) to NumPorts.
  if (port != kNoRoute && port > t_->fabric->nodes[node].num_ports()) return false;
  *e = port;
  return true;
}

std::uint8_t LftTable::get(NodeId node, std::uint16_t lid) const noexcept {
  const std::uint8_t* e = t_->entry(node, lid);
  return e != nullptr ? *e : kNoRoute;
}

std::function<bool(const fabric::Fabric&, std::vector<fabric::Lft>&, std::string&)> sm_routing_hook(RoutingHook hook) {
  if (!hook) return {};
  return [hook = std::move(hook)](const fabric::Fabric& f, std::vector<fabric::Lft>& lfts, std::string& error) {
    const auto top = static_cast<std::uint16_t>(lfts.empty() || lfts[0].ports.empty() ? 0 : lfts[0].ports.size() - 1);
    const FabricView view = FabricSource::borrowed(f, top);
    LftTable::Tables tables(lfts, f);
    LftTable table(tables);
    return hook(view, table, error);
  };
}

}  // namespace madengine::node
