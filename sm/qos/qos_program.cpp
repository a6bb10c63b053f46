// Writing SL2VL and VLArb tables (see qos_program.hpp). Each Set's answer
// must echo what was sent before it counts as written; a table that failed
// is forgotten and sent again by the next sweep.
#include "sm/qos/qos_program.hpp"

#include <cstring>
#include <memory>
#include <unordered_map>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::sm {

namespace {

using Block = std::array<std::uint8_t, 64>;

// The VLs a port with OperationalVLs `op_vls` uses: VL0..VL(2^(op-1) - 1) (IBA 14.2.5.6).
std::uint8_t vl_mask(std::uint8_t op_vls) noexcept {
  if (op_vls == 0) op_vls = 1;
  return static_cast<std::uint8_t>((1u << (op_vls - 1)) - 1u);
}

Block sl2vl_block(const wire::Sl2VlTable& t, std::uint8_t op_vls) {
  const std::uint8_t mask = vl_mask(op_vls);
  wire::Sl2VlTable out{};
  for (std::uint8_t sl = 0; sl < wire::kSlCount; ++sl) {
    const std::uint8_t vl = t.get_vl(sl);
    out.set_vl(sl, vl == wire::kVl15 ? vl : static_cast<std::uint8_t>(vl & mask));  // VL15 stays: "drop this SL"
  }
  Block b{};
  std::memcpy(b.data(), out.bytes.data(), out.bytes.size());
  return b;
}

// The first `len` entries of `src`, VLs limited to the port's; the rest zero.
Block vlarb_block(const wire::VlArbTableBlock& src, std::size_t len, std::uint8_t op_vls) {
  const std::uint8_t mask = vl_mask(op_vls);
  wire::VlArbTableBlock blk{};
  for (std::size_t i = 0; i < len && i < wire::kVlArbBlockSize; ++i) {
    blk.entries[i] = src.entries[i];
    blk.entries[i].set_vl(static_cast<std::uint8_t>(src.entries[i].vl() & mask));
  }
  Block b{};
  std::memcpy(b.data(), &blk, sizeof blk);
  return b;
}

class Writer {
 public:
  Writer(SmpQueue& q, const QosProgramOptions& o, QosProgrammed& st, QosReport& rep) : q_(q), o_(o), st_(st), rep_(rep) {}

  void set(std::uint64_t node_guid, std::uint8_t port, std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path,
           const Block& want) {
    const QosProgrammed::Key key{node_guid, port, attr, mod};
    if (const auto it = st_.written.find(key); it != st_.written.end() && it->second == want) {
      ++rep_.kept;
      return;
    }
    st_.written.erase(key);  // unknown until the answer says otherwise
    ++rep_.smps;
    const std::size_t echo = attr == wire::smp_attr::kSl2VlTable ? sizeof(wire::Sl2VlTable) : want.size();
    q_.submit(make_dr_request(wire::method::kSet, attr, mod, path, o_.port_num, want, o_.m_key),
              [this, key, attr, want, echo](const TxnResult& r) {
                const auto data = smp_response_ok(r) ? smp_data(r.response) : std::span<const std::uint8_t>{};
                if (data.size() < echo || std::memcmp(data.data(), want.data(), echo) != 0) {
                  ++rep_.errors;
                  return;
                }
                st_.written[key] = want;
                ++(attr == wire::smp_attr::kSl2VlTable ? rep_.sl2vl_sets : rep_.vlarb_sets);
              });
  }

  // The VLArb blocks the port's caps give (IBA 14.2.5.9; none with one data VL).
  void vlarb(std::uint64_t guid, std::uint8_t port, std::uint8_t mod_port, const wire::DrPath& path,
             const wire::PortInfo& pi, const QosTables& t) {
    if (pi.vl_cap() <= 1) return;
    const std::uint8_t op = pi.operational_vls();
    struct Part {
      std::uint16_t block;
      std::size_t cap;
      const std::array<wire::VlArbTableBlock, 2>& table;
    };
    for (const Part& p : {Part{wire::vl_arb_block::kLowLower, pi.vl_arbitration_low_cap, t.vlarb_low},
                          Part{wire::vl_arb_block::kHighLower, pi.vl_arbitration_high_cap, t.vlarb_high}}) {
      if (p.cap > 0)
        set(guid, port, wire::smp_attr::kVlArbTable, wire::vl_arb_modifier(p.block, mod_port), path,
            vlarb_block(p.table[0], std::min<std::size_t>(p.cap, wire::kVlArbBlockSize), op));
      if (p.cap > wire::kVlArbBlockSize)
        set(guid, port, wire::smp_attr::kVlArbTable, wire::vl_arb_modifier(static_cast<std::uint16_t>(p.block + 1), mod_port),
            path, vlarb_block(p.table[1], p.cap % wire::kVlArbBlockSize, op));
    }
  }

 private:
  SmpQueue& q_;
  const QosProgramOptions& o_;
  QosProgrammed& st_;
  QosReport& rep_;
};

bool port_down(const fabric::Port& p) noexcept {
  return p.info.port_state() <= static_cast<std::uint8_t>(wire::PortState::kDown);
}

}  // namespace

QosPortClass qos_class_of(const fabric::Node& n, std::uint8_t port) noexcept {
  if (n.is_switch()) return port == 0 ? QosPortClass::kSwitchPort0 : QosPortClass::kSwitchExternal;
  return n.kind == fabric::NodeKind::kRouter ? QosPortClass::kRouter : QosPortClass::kCa;
}

namespace {

// One node's tables: a CA's (or router's) ports, or a switch's.
void program_node(Writer& w, const DiscoveryResult& d, fabric::NodeId id, const QosConfig& cfg) {
  const fabric::Node& n = d.fabric.nodes[id];
  if (!n.is_switch()) {
    for (std::uint8_t p = 1; p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.linked() || port.guid == 0 || id >= d.ca_port_paths.size() || p >= d.ca_port_paths[id].size()) continue;
      const wire::DrPath& path = d.ca_port_paths[id][p];
      const QosTables& t = cfg.of(qos_class_of(n, p));
      // A CA's SMA answers for the port the SMP arrives on: modifier port 0.
      if (cfg.vlarb) w.vlarb(n.node_guid, p, 0, path, port.info, t);
      if (port.info.has_cap(wire::port_cap::kIsSLMappingSupported))
        w.set(n.node_guid, p, wire::smp_attr::kSl2VlTable, 0, path, sl2vl_block(t.sl2vl, port.info.operational_vls()));
    }
    return;
  }
  if (n.ports.empty()) return;
  const bool enhanced0 = n.switch_info.enhanced_port0() != 0;
  for (std::uint8_t out = 1; out < n.ports.size(); ++out)
    if (cfg.vlarb && !port_down(n.ports[out])) w.vlarb(n.node_guid, out, out, n.dr_path, n.ports[out].info, cfg.swe);
  if (n.ports[0].info.has_cap(wire::port_cap::kIsSLMappingSupported)) {
    // Every input port (port 0 too: the switch's own packets) for every output port not down.
    for (std::uint8_t out = enhanced0 ? 0 : 1; out < n.ports.size(); ++out) {
      if (out != 0 && port_down(n.ports[out])) continue;
      const Block b = sl2vl_block(cfg.swe.sl2vl, n.ports[out].info.operational_vls());
      for (std::uint8_t in = 0; in < n.ports.size(); ++in)
        w.set(n.node_guid, out, wire::smp_attr::kSl2VlTable, wire::sl2vl_modifier(in, out), n.dr_path, b);
    }
  }
  if (enhanced0) {
    const fabric::Port& p0 = n.ports[0];
    if (cfg.vlarb) w.vlarb(n.node_guid, 0, 0, n.dr_path, p0.info, cfg.sw0);
    if (p0.info.has_cap(wire::port_cap::kIsSLMappingSupported))
      w.set(n.node_guid, 0, wire::smp_attr::kSl2VlTable, wire::sl2vl_modifier(0, 0), n.dr_path,
            sl2vl_block(cfg.sw0.sl2vl, p0.info.operational_vls()));
  }
}

}  // namespace

Task<QosReport> program_qos(SmpQueue& q, const DiscoveryResult& d, const QosConfig& cfg, QosProgramOptions opts,
                            QosProgrammed& state) {
  auto rep = std::make_unique<QosReport>();
  auto w = std::make_unique<Writer>(q, opts, state, *rep);
  // A node at a time, whenever the queue runs dry: memory stays bounded by
  // the window, not by a switch's ports^2 tables times the fabric.
  fabric::NodeId next = 0;
  q.set_feeder([&] {
    if (next >= d.fabric.nodes.size()) return false;
    program_node(*w, d, next++, cfg);
    return true;
  });
  co_await q.drained();
  q.set_feeder(nullptr);
  co_return *rep;
}

void fill_qos_tables(const fabric::Fabric& f, const QosProgrammed& state, sa::PortTableView::Rows& rows) {
  if (state.written.empty()) return;
  std::unordered_map<std::uint64_t, fabric::NodeId> by_guid;
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) by_guid.emplace(f.nodes[i].node_guid, i);
  rows.resize(f.nodes.size());
  for (const auto& [key, bytes] : state.written) {
    const auto& [guid, port, attr, mod] = key;
    const auto it = by_guid.find(guid);
    if (it == by_guid.end()) continue;
    const fabric::Node& n = f.nodes[it->second];
    auto& ports = rows[it->second];
    if (ports.size() < n.ports.size()) ports.resize(n.ports.size());
    if (port >= ports.size()) continue;
    sa::PortTables& t = ports[port];
    if (attr == wire::smp_attr::kSl2VlTable) {
      const std::size_t in = n.is_switch() ? (mod >> 8) & 0xff : 0;
      if (t.sl2vl.size() < (n.is_switch() ? n.ports.size() : 1)) t.sl2vl.resize(n.is_switch() ? n.ports.size() : 1);
      if (in < t.sl2vl.size()) std::memcpy(t.sl2vl[in].bytes.data(), bytes.data(), t.sl2vl[in].bytes.size());
    } else {
      const std::size_t block = (mod >> 16) & 0xffff;
      if (block < 1 || block > 4) continue;
      if (t.vl_arb.size() < 4) t.vl_arb.resize(4);
      std::memcpy(&t.vl_arb[block - 1], bytes.data(), sizeof(wire::VlArbTableBlock));
    }
  }
}

}  // namespace madengine::sm
