// Link profiles (see link_profiles.hpp).
#include "sim/link_profiles.hpp"

#include <stdexcept>
#include <vector>

namespace madengine::sim {

PortSpeeds port_speeds(std::string_view g) {
  constexpr std::uint8_t kSdrDdrQdr = link_speed::kSdr | link_speed::kDdr | link_speed::kQdr;
  constexpr std::uint8_t k1x4x = link_width::k1x | link_width::k4x;
  // 2x links arrived with HDR.
  constexpr std::uint8_t k1x2x4x = k1x4x | link_width::k2x;
  using namespace link_speed_ext;
  if (g == "sdr") return {};
  if (g == "qdr") return {k1x4x, kSdrDdrQdr, kNone, 0};
  if (g == "fdr") return {k1x4x, kSdrDdrQdr, kFdr, 0};
  if (g == "edr") return {k1x4x, kSdrDdrQdr, kFdr | kEdr, 0};
  if (g == "hdr") return {k1x2x4x, kSdrDdrQdr, kFdr | kEdr | kHdr, 0};
  if (g == "ndr") return {k1x2x4x, kSdrDdrQdr, kFdr | kEdr | kHdr | kNdr, 0};
  if (g == "xdr") return {k1x2x4x, kSdrDdrQdr, kFdr | kEdr | kHdr | kNdr, link_speed_ext2::kXdr};
  throw std::invalid_argument("unknown link profile '" + std::string(g) + "' (" + kLinkProfileNames + ")");
}

namespace {

struct Roles {
  PortSpeeds ca, leaf_host, leaf_up, spine;
};

Roles roles_of(std::string_view profile) {
  if (profile == "ndr200") {
    Roles r;
    r.ca = r.leaf_up = r.spine = port_speeds("ndr");
    r.leaf_host = r.ca;
    r.leaf_host.width = link_width::k1x | link_width::k2x;  // a 4x cage split in two 2x ports
    return r;
  }
  if (profile == "hdr-ndr") {
    const PortSpeeds hdr = port_speeds("hdr");
    return {hdr, hdr, hdr, port_speeds("ndr")};
  }
  const PortSpeeds s = port_speeds(profile);
  return {s, s, s, s};
}

void set(TopoPort& p, const PortSpeeds& s) {
  p.width_enabled = s.width;
  p.speed_enabled = s.speed;
  p.speed_ext_enabled = s.speed_ext;
  p.speed_ext2_enabled = s.speed_ext2;
}

}  // namespace

void apply_link_profile(Topology& topo, std::string_view profile) {
  const Roles r = roles_of(profile);
  std::vector<bool> leaf(topo.nodes.size(), false);
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    const TopoNode& n = topo.nodes[i];
    if (!n.is_switch()) continue;
    for (std::size_t p = 1; p < n.ports.size(); ++p)
      if (n.ports[p].connected() && !topo.nodes[n.ports[p].peer_node].is_switch()) leaf[i] = true;
  }
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    TopoNode& n = topo.nodes[i];
    for (std::size_t p = 0; p < n.ports.size(); ++p) {
      TopoPort& tp = n.ports[p];
      const bool to_ca = tp.connected() && !topo.nodes[tp.peer_node].is_switch();
      if (!n.is_switch()) set(tp, r.ca);
      else if (!leaf[i]) set(tp, r.spine);
      else set(tp, to_ca ? r.leaf_host : r.leaf_up);
    }
  }
}

}  // namespace madengine::sim
