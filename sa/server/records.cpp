// Read-only SA records from a Snapshot (see records.hpp). Queries pinned to
// a LID visit only that LID's node; the rest walk the fabric once.
#include "sa/server/records.hpp"

#include <algorithm>
#include <cstring>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa_records.hpp"

namespace madengine::sa {
namespace {

namespace a = wire::sa_attr;
using fabric::EndPort;
using fabric::Node;
using fabric::NodeId;

std::uint16_t port_lid(const Snapshot& s, NodeId n, std::uint8_t port) noexcept {
  const Node& node = s.fabric.nodes[n];
  return node.is_switch() ? node.base_lid : s.fabric.lid_of({n, port});
}

std::uint64_t port_guid(const Node& node, std::uint8_t port) noexcept {
  if (node.is_switch()) return node.ports.empty() || node.ports[0].guid == 0 ? node.node_guid : node.ports[0].guid;
  return port < node.ports.size() && node.ports[port].guid != 0 ? node.ports[port].guid : node.node_guid;
}

// Nodes to visit: the one owning the pinned LID, or all.
template <typename Fn>
void for_nodes(const Snapshot& s, std::uint16_t lid, Fn&& fn) {
  if (lid != 0) {
    if (const EndPort* e = s.end_port_by_lid(lid)) fn(e->node);
    return;
  }
  for (NodeId n = 0; n < s.fabric.nodes.size(); ++n) fn(n);
}

// End ports of a node: a switch's port 0, or a CA's linked ports.
template <typename Fn>
void for_end_ports(const Node& node, Fn&& fn) {
  if (node.is_switch()) {
    fn(std::uint8_t{0});
    return;
  }
  for (std::uint8_t p = 1; p <= node.num_ports(); ++p)
    if (node.ports[p].linked()) fn(p);
}

wire::NodeInfo node_info_of(const Node& node, std::uint8_t port) noexcept {
  wire::NodeInfo ni = node.node_info;
  ni.node_guid = wire::be64::from(node.node_guid);
  if (ni.system_image_guid.get() == 0) ni.system_image_guid = wire::be64::from(node.system_guid);
  if (ni.node_type == 0) ni.set_type(static_cast<wire::NodeType>(node.kind));
  if (ni.num_ports == 0) ni.num_ports = node.num_ports();
  if (ni.base_version == 0) ni.base_version = 1;
  if (ni.class_version == 0) ni.class_version = 1;
  ni.port_guid = wire::be64::from(port_guid(node, port));
  ni.local_port_num = port;
  return ni;
}

void node_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    for_end_ports(node, [&](std::uint8_t p) {
      if (sink.full()) return;
      wire::NodeRecord r{};
      r.lid = wire::be16::from(port_lid(s, n, p));
      if (r.lid.get() == 0) return;
      r.node_info = node_info_of(node, p);
      r.node_description = node.node_desc;
      if (r.node_description.text().empty() && !node.description.empty())
        r.node_description.set_text(std::string_view(node.description).substr(0, wire::kNodeDescriptionSize));
      sink.offer(&r);
    });
  });
}

void port_info_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    const std::uint8_t first = node.is_switch() ? 0 : 1;
    for (std::uint8_t p = first; p <= node.num_ports() && !sink.full(); ++p) {
      if (!node.is_switch() && !node.ports[p].linked()) continue;
      wire::PortInfoRecord r{};
      r.endport_lid = wire::be16::from(port_lid(s, n, p));
      if (r.endport_lid.get() == 0) continue;
      r.port_num = p;
      r.port_info = node.ports[p].info;  // as read: LocalPortNum is the port the SM's SMP came in by
      sink.offer(&r);
    }
  });
}

void switch_info_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    if (!node.is_switch() || sink.full()) return;
    wire::SwitchInfoRecord r{};
    r.lid = wire::be16::from(node.base_lid);
    r.switch_info = node.switch_info;
    sink.offer(&r);
  });
}

void link_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    for (std::uint8_t p = 1; p <= node.num_ports() && !sink.full(); ++p) {
      const fabric::Port& port = node.ports[p];
      if (!port.linked()) continue;
      wire::LinkRecord r{};
      r.from_lid = wire::be16::from(port_lid(s, n, p));
      r.from_port = p;
      r.to_port = port.peer_port;
      r.to_lid = wire::be16::from(port_lid(s, port.peer, port.peer_port));
      sink.offer(&r);
    }
  });
}

void guid_info_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  const auto rows = s.port_tables->load();
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    for_end_ports(node, [&](std::uint8_t p) {
      const PortTables* t = PortTableView::find(*rows, n, p);
      std::vector<std::uint64_t> guids;
      if (t != nullptr && !t->guids.empty()) {
        guids = t->guids.vec();
      } else {
        // Not read: the port GUID at index 0 of a table GUIDCap long (IBA 14.2.5.11).
        guids.assign(std::max<std::size_t>(1, node.ports[p].info.guid_cap), 0);
        guids[0] = port_guid(node, p);
      }
      for (std::size_t b = 0; b * wire::kGuidInfoBlockSize < guids.size() && !sink.full(); ++b) {
        wire::GuidInfoRecord r{};
        r.lid = wire::be16::from(port_lid(s, n, p));
        r.block_num = static_cast<std::uint8_t>(b);
        for (std::size_t i = 0; i < wire::kGuidInfoBlockSize; ++i) {
          const std::size_t k = b * wire::kGuidInfoBlockSize + i;
          if (k < guids.size()) r.guid_info.set_guid(i, guids[k]);
        }
        sink.offer(&r);
      }
    });
  });
}

void pkey_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  const auto rows = s.port_tables->load();
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    const std::uint8_t first = node.is_switch() ? 0 : 1;
    for (std::uint8_t p = first; p <= node.num_ports() && !sink.full(); ++p) {
      const bool end_port = node.is_switch() ? p == 0 : node.ports[p].linked();
      const PortTables* t = PortTableView::find(*rows, n, p);
      std::vector<std::uint16_t> keys;
      if (t != nullptr && !t->pkeys.empty()) keys = t->pkeys.vec();
      else if (end_port) keys = {wire::kDefaultPKey};  // not read: the default partition
      else continue;
      for (std::size_t b = 0; b * wire::kPKeyBlockSize < keys.size() && !sink.full(); ++b) {
        wire::PKeyTableRecord r{};
        r.lid = wire::be16::from(port_lid(s, n, node.is_switch() ? 0 : p));
        r.block_num = wire::be16::from(static_cast<std::uint16_t>(b));
        r.port_num = p;
        for (std::size_t i = 0; i < wire::kPKeyBlockSize; ++i) {
          const std::size_t k = b * wire::kPKeyBlockSize + i;
          if (k < keys.size()) r.pkey_table.set_pkey(i, keys[k]);
        }
        sink.offer(&r);
      }
    }
  });
}

// A CA's SLtoVL and VLArbitration records answer for the port of the LID
// asked, whatever port numbers the query gives (osmtest asks port 0, "the
// SA should figure it out"): OpenSM ignores those components for end nodes.
constexpr std::uint64_t kEndNodePortComponents =
    wire::sl2vl_record_cm::kInputPortNum | wire::sl2vl_record_cm::kOutputPortNum;

void sl2vl_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  const auto rows = s.port_tables->load();
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    for (std::uint8_t out = node.is_switch() ? 0 : 1; out <= node.num_ports() && !sink.full(); ++out) {
      const PortTables* t = PortTableView::find(*rows, n, out);
      const bool read = t != nullptr && !t->sl2vl.empty();
      // A switch's port 0 always answers, for every input port, zeros when
      // it has no data VLs (a base port 0) or was not read: as its VLArb
      // blocks, and as OpenSM answers it (osmtest -f q asks for it).
      if (!read && !(node.is_switch() && out == 0)) continue;
      const std::size_t inputs = read ? t->sl2vl.size() : std::size_t{node.num_ports()} + 1;
      for (std::size_t in = 0; in < inputs && !sink.full(); ++in) {
        wire::Sl2VlTableRecord r{};
        r.lid = wire::be16::from(port_lid(s, n, out));
        // The port numbers are a switch's (IBA 15.2.5.4); a CA's record leaves them 0, as OpenSM does.
        if (node.is_switch()) {
          r.input_port_num = static_cast<std::uint8_t>(in);
          r.output_port_num = out;
        }
        if (read) r.table = t->sl2vl[in];
        sink.offer(&r, node.is_switch() ? 0 : kEndNodePortComponents);
      }
    }
  });
}

void vl_arb_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  const auto rows = s.port_tables->load();
  for_nodes(s, lid, [&](NodeId n) {
    const Node& node = s.fabric.nodes[n];
    for (std::uint8_t p = node.is_switch() ? 0 : 1; p <= node.num_ports() && !sink.full(); ++p) {
      const PortTables* t = PortTableView::find(*rows, n, p);
      const bool read = t != nullptr && !t->vl_arb.empty();
      // A switch's port 0 always answers its four blocks, zeros when it has
      // no data VLs (a base port 0) or was not read, as OpenSM answers it.
      if (!read && !(node.is_switch() && p == 0)) continue;
      const std::size_t blocks = read ? t->vl_arb.size() : 4;  // low/high, lower/upper (IBA 14.2.5.9)
      for (std::size_t b = 0; b < blocks && !sink.full(); ++b) {
        wire::VlArbTableRecord r{};
        r.lid = wire::be16::from(port_lid(s, n, p));
        r.output_port_num = p;
        r.block_num = static_cast<std::uint8_t>(b + 1);
        if (read) r.vl_arb_table = t->vl_arb[b];
        sink.offer(&r, node.is_switch() ? 0 : wire::vl_arb_record_cm::kOutputPortNum);
      }
    }
  });
}

void lft_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  const EndPort* pinned = lid != 0 ? s.end_port_by_lid(lid) : nullptr;
  if (lid != 0 && pinned == nullptr) return;
  for (const fabric::Lft& lft : s.lfts) {
    if (sink.full()) return;
    if (lft.node >= s.fabric.nodes.size() || (pinned != nullptr && pinned->node != lft.node)) continue;
    const Node& node = s.fabric.nodes[lft.node];
    const std::size_t top = std::min<std::size_t>(lft.ports.size(), std::size_t{s.top_lid} + 1);
    for (std::size_t b = 0; b * wire::kLftBlockSize < top && !sink.full(); ++b) {
      wire::LftRecord r{};
      r.lid = wire::be16::from(node.base_lid);
      r.block_num = wire::be16::from(static_cast<std::uint16_t>(b));
      for (std::size_t i = 0; i < wire::kLftBlockSize; ++i) {
        const std::size_t k = b * wire::kLftBlockSize + i;
        r.lft.set_port(i, k < lft.ports.size() ? lft.ports[k] : wire::kLftNoPort);
      }
      sink.offer(&r);
    }
  }
}

void mft_records(const Snapshot& s, std::uint16_t lid, RecordSink& sink) {
  const EndPort* pinned = lid != 0 ? s.end_port_by_lid(lid) : nullptr;
  if (lid != 0 && pinned == nullptr) return;
  const auto mfts = s.mfts->load();
  for (const SwitchMft& m : *mfts) {
    if (m.node >= s.fabric.nodes.size() || (pinned != nullptr && pinned->node != m.node)) continue;
    const Node& node = s.fabric.nodes[m.node];
    const std::uint8_t positions = static_cast<std::uint8_t>(node.num_ports() / wire::kMftPortsPerPosition + 1);
    for (std::size_t b = 0; b * wire::kMftBlockSize < m.masks.size() && !sink.full(); ++b) {
      for (std::uint8_t pos = 0; pos < positions && !sink.full(); ++pos) {
        wire::MftRecord r{};
        r.lid = wire::be16::from(node.base_lid);
        r.set_position(pos);
        r.set_block_num(static_cast<std::uint16_t>(b));
        bool any = false;
        for (std::size_t i = 0; i < wire::kMftBlockSize; ++i) {
          const std::size_t k = b * wire::kMftBlockSize + i;
          if (k >= m.masks.size() || pos >= m.masks[k].size()) continue;
          r.mft.port_masks[i] = wire::be16::from(m.masks[k][pos]);
          any = any || m.masks[k][pos] != 0;
        }
        if (any) sink.offer(&r);
      }
    }
  }
}

void sm_info_records(const Snapshot& s, RecordSink& sink) {
  if (s.sm.lid == 0) return;
  wire::SmInfoRecord r{};
  r.lid = wire::be16::from(s.sm.lid);
  r.sm_info.guid = wire::be64::from(s.sm.port_guid);
  // SM_Key is returned only to requesters that prove they know it (IBA 15.2.5.9); we never do.
  r.sm_info.act_count = wire::be32::from(s.sm.act_count);
  r.sm_info.set_priority(s.sm.priority);
  r.sm_info.set_sm_state(s.sm.state);
  sink.offer(&r);
}

}  // namespace

bool RecordSink::offer(const void* rec, std::uint64_t unmatched) {
  if (full()) return false;
  const auto* p = static_cast<const std::uint8_t*>(rec);
  if (!components_equal(layout_, mask_ & ~unmatched, p, query_, bit_masks_)) return true;
  const std::size_t at = bytes_.size();
  bytes_.resize(at + stride_, 0);
  std::memcpy(bytes_.data() + at, p, layout_.size);
  ++count_;
  return !full();
}

std::uint16_t query_lid(std::uint16_t attr_id, std::uint64_t mask, const std::uint8_t* query) noexcept {
  switch (attr_id) {
    case a::kNodeRecord: case a::kPortInfoRecord: case a::kSl2VlTableRecord: case a::kSwitchInfoRecord:
    case a::kLinearFwdTableRecord: case a::kMulticastFwdTableRecord: case a::kLinkRecord:
    case a::kGuidInfoRecord: case a::kPKeyTableRecord: case a::kVlArbTableRecord:
      return (mask & 1) != 0 ? static_cast<std::uint16_t>(query[0] << 8 | query[1]) : 0;
    default: return 0;
  }
}

bool collect_snapshot_records(const Snapshot& snap, std::uint16_t attr_id, RecordSink& sink) {
  const std::uint16_t lid = query_lid(attr_id, sink.mask(), sink.query());
  // A LinkRecord is keyed by FromLID (component 0) like the rest.
  switch (attr_id) {
    case a::kNodeRecord: node_records(snap, lid, sink); return true;
    case a::kPortInfoRecord: port_info_records(snap, lid, sink); return true;
    case a::kSwitchInfoRecord: switch_info_records(snap, lid, sink); return true;
    case a::kLinkRecord: link_records(snap, lid, sink); return true;
    case a::kGuidInfoRecord: guid_info_records(snap, lid, sink); return true;
    case a::kPKeyTableRecord: pkey_records(snap, lid, sink); return true;
    case a::kSl2VlTableRecord: sl2vl_records(snap, lid, sink); return true;
    case a::kVlArbTableRecord: vl_arb_records(snap, lid, sink); return true;
    case a::kLinearFwdTableRecord: lft_records(snap, lid, sink); return true;
    case a::kMulticastFwdTableRecord: mft_records(snap, lid, sink); return true;
    case a::kSmInfoRecord: sm_info_records(snap, sink); return true;
    default: return false;
  }
}

}  // namespace madengine::sa
