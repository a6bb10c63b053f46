// FabricView and LftTable over the SM's model (fabric::Fabric, fabric::Lft):
// what an embedder reads of an epoch and fills in its routing, as values.
#include <stdexcept>
#include <string>

#include "madengine/fabric/fabric.hpp"
#include "madengine/fabric/lft.hpp"
#include "madengine/node/fabric_view.hpp"
#include "node/fabric_model.hpp"

namespace madengine::node {

static_assert(kNoRoute == fabric::kLftNoRoute);
static_assert(kNoNode == fabric::kNoNode);

FabricView::FabricView(std::shared_ptr<const void> owner, const fabric::Fabric& fabric, const fabric::Lft* lfts,
                       std::size_t lft_count, std::uint64_t epoch, std::uint16_t top_lid)
    : owner_(std::move(owner)), fabric_(&fabric), lfts_(lfts), epoch_(epoch), top_lid_(top_lid) {
  nodes_ = fabric.nodes.size();
  lft_index_.assign(fabric.nodes.size(), ~0u);
  for (std::size_t i = 0; i < lft_count; ++i)
    if (lfts[i].node < lft_index_.size()) lft_index_[lfts[i].node] = static_cast<std::uint32_t>(i);
  std::size_t ends = 0;
  for (const fabric::Node& n : fabric.nodes) {
    ports_ += n.num_ports() + (n.is_switch() ? 1u : 0u);
    for (std::uint8_t p = 1; p <= n.num_ports() && p < n.ports.size(); ++p) ends += n.ports[p].linked();
  }
  links_ = ends / 2;
}

FabricNode FabricView::node(NodeId node) const {
  if (node >= nodes_) throw std::out_of_range("no node " + std::to_string(node));
  const fabric::Node& n = fabric_->nodes[node];
  return FabricNode{.kind = static_cast<NodeKind>(n.kind), .node_guid = n.node_guid, .system_guid = n.system_guid,
                    .description = n.description, .num_ports = n.num_ports(),
                    .lid = n.is_switch() ? n.base_lid : std::uint16_t{0}, .lmc = n.lmc};
}

FabricPort FabricView::port(NodeId node, std::uint8_t port) const {
  if (node >= nodes_) throw std::out_of_range("no node " + std::to_string(node));
  const fabric::Node& n = fabric_->nodes[node];
  if (port > n.num_ports() || port >= n.ports.size() || (port == 0 && !n.is_switch()))
    throw std::out_of_range("node " + std::to_string(node) + " has no port " + std::to_string(port));
  const fabric::Port& p = n.ports[port];
  return FabricPort{.guid = p.guid,
                    .lid = n.is_switch() ? (port == 0 ? n.base_lid : std::uint16_t{0}) : fabric_->lid_of({node, port}),
                    .state = p.state, .peer = p.linked() ? p.peer : kNoNode, .peer_port = p.peer_port,
                    .link_width = p.link_width, .link_speed = p.link_speed, .mtu = p.mtu};
}

std::vector<EndPort> FabricView::end_ports() const {
  std::vector<EndPort> out;
  if (fabric_ == nullptr) return out;
  for (const fabric::EndPort e : fabric_->end_ports()) out.push_back(EndPort{.node = e.node, .port = e.port});
  return out;
}

std::uint16_t FabricView::lid_of(EndPort e) const noexcept {
  if (fabric_ == nullptr || e.node >= nodes_) return 0;
  return fabric_->lid_of(fabric::EndPort{.node = e.node, .port = e.port});
}

bool FabricView::has_lft(NodeId node) const noexcept { return node < lft_index_.size() && lft_index_[node] != ~0u; }

std::uint8_t FabricView::lft_port(NodeId node, std::uint16_t lid) const noexcept {
  if (!has_lft(node)) return kNoRoute;
  const fabric::Lft& l = lfts_[lft_index_[node]];
  return lid < l.ports.size() ? l.ports[lid] : kNoRoute;
}

LftTable::LftTable(std::vector<fabric::Lft>& lfts, const FabricView& fabric) : lfts_(&lfts), fabric_(&fabric) {
  index_.assign(fabric.node_count(), ~0u);
  for (std::size_t i = 0; i < lfts.size(); ++i)
    if (lfts[i].node < index_.size()) index_[lfts[i].node] = static_cast<std::uint32_t>(i);
  top_lid_ = static_cast<std::uint16_t>(lfts.empty() || lfts[0].ports.empty() ? 0 : lfts[0].ports.size() - 1);
}

std::uint8_t* LftTable::entry(NodeId node, std::uint16_t lid) const noexcept {
  if (node >= index_.size() || index_[node] == ~0u) return nullptr;
  fabric::Lft& l = (*lfts_)[index_[node]];
  return lid != 0 && lid < l.ports.size() ? &l.ports[lid] : nullptr;
}

bool LftTable::set(NodeId node, std::uint16_t lid, std::uint8_t port) noexcept {
  std::uint8_t* e = entry(node, lid);
  if (e == nullptr) return false;
  // A switch's ports are 0 (itself) to NumPorts.
  if (port != kNoRoute && port > FabricModel::of(*fabric_).nodes[node].num_ports()) return false;
  *e = port;
  return true;
}

std::uint8_t LftTable::get(NodeId node, std::uint16_t lid) const noexcept {
  const std::uint8_t* e = entry(node, lid);
  return e != nullptr ? *e : kNoRoute;
}

std::function<bool(const fabric::Fabric&, std::vector<fabric::Lft>&, std::string&)> sm_routing_hook(RoutingHook hook) {
  if (!hook) return {};
  return [hook = std::move(hook)](const fabric::Fabric& f, std::vector<fabric::Lft>& lfts, std::string& error) {
    const auto top = static_cast<std::uint16_t>(lfts.empty() || lfts[0].ports.empty() ? 0 : lfts[0].ports.size() - 1);
    const FabricView view(nullptr, f, nullptr, 0, 0, top);
    LftTable table(lfts, view);
    return hook(view, table, error);
  };
}

}  // namespace madengine::node
