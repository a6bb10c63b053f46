// Reading SL2VL, VLArb and GUIDInfo tables (see tables.hpp). Every SMP goes
// through the sweep's SmpQueue window; completions write straight into the
// cache entry (std::map nodes do not move), and a failed SMP clears the
// entry's shape so the port is read again by the next heavy sweep.
#include "sm/tables/tables.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/guid_info.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/sl2vl.hpp"
#include "madengine/wire/smp/vl_arb.hpp"

namespace madengine::sm {

namespace {

using Key = std::pair<std::uint64_t, std::uint8_t>;
using Entry = TablesCache::Entry;

// The VLArb blocks a port has (IBA 14.2.5.9): a table of Cap entries is one
// block up to 32 entries, two beyond; none with a single data VL (VLCap 1).
bool vl_arb_block_present(const wire::PortInfo& pi, std::uint16_t block) noexcept {
  if (pi.vl_cap() <= 1) return false;
  switch (block) {
    case wire::vl_arb_block::kLowLower: return pi.vl_arbitration_low_cap > 0;
    case wire::vl_arb_block::kLowUpper: return pi.vl_arbitration_low_cap > wire::kVlArbBlockSize;
    case wire::vl_arb_block::kHighLower: return pi.vl_arbitration_high_cap > 0;
    case wire::vl_arb_block::kHighUpper: return pi.vl_arbitration_high_cap > wire::kVlArbBlockSize;
    default: return false;
  }
}

// A GUIDInfo table with no alias GUID (the port's own at index 0, the rest
// zero) is what the SA answers for a port never read: not kept (15 MB at
// 43,904 hosts).
bool only_own_guid(const TablesCache::Entry& e) noexcept {
  const auto& g = e.tables.guids;
  return !g.empty() && g[0] == e.shape.port_guid && std::all_of(g.begin() + 1, g.end(), [](std::uint64_t x) { return x == 0; });
}

class Reader {
 public:
  Reader(SmpQueue& q, const TablesOptions& opts, TablesReport& report) : q_(q), opts_(opts), report_(report) {}

  void get(std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path, Entry& e,
           std::function<void(const std::uint8_t*)> store) {
    ++report_.smps;
    q_.submit(make_dr_request(wire::method::kGet, attr, mod, path, opts_.port_num, {}, opts_.m_key),
              [this, &e, store = std::move(store)](const TxnResult& r) {
                if (!smp_response_ok(r)) {
                  ++report_.errors;
                  e.shape = PortShape{};  // read again next sweep
                  return;
                }
                store(smp_data(r.response).data());
              });
  }

  // A table with no alias GUID is dropped as its last block arrives (see
  // only_own_guid), so its buffer serves the next port's.
  void guid_info(const wire::PortInfo& pi, const wire::DrPath& path, Entry& e) {
    const std::uint32_t blocks = wire::guid_info_blocks_for(std::max<std::uint32_t>(1, pi.guid_cap));
    e.tables.guids.assign(std::size_t{blocks} * wire::kGuidInfoBlockSize, 0);
    e.tables.guids.resize(std::max<std::size_t>(1, pi.guid_cap));
    auto left = std::make_shared<std::uint32_t>(blocks);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      get(wire::smp_attr::kGuidInfo, wire::guid_info_modifier(b), path, e, [&e, b, left](const std::uint8_t* data) {
        const auto blk = wire::decode<wire::GuidInfoBlock>({data, wire::kSmpDataSize});
        if (!blk) return;
        for (std::size_t i = 0; i < wire::kGuidInfoBlockSize; ++i) {
          const std::size_t k = std::size_t{b} * wire::kGuidInfoBlockSize + i;
          if (k < e.tables.guids.size()) e.tables.guids[k] = blk->guid(i);
        }
        if (--*left == 0 && only_own_guid(e)) e.tables.guids.clear();
      });
    }
  }

  // `out` is the switch port (0 on CAs: the port the SMP arrives on).
  void vl_arb(const wire::PortInfo& pi, const wire::DrPath& path, std::uint8_t out, Entry& e) {
    e.tables.vl_arb.assign(4, wire::VlArbTableBlock{});  // blocks the port lacks stay empty, as OpenSM answers them
    for (std::uint16_t block = wire::vl_arb_block::kLowLower; block <= wire::vl_arb_block::kHighUpper; ++block) {
      if (!vl_arb_block_present(pi, block)) continue;
      get(wire::smp_attr::kVlArbTable, wire::vl_arb_modifier(block, out), path, e, [&e, block](const std::uint8_t* data) {
        if (const auto blk = wire::decode<wire::VlArbTableBlock>({data, wire::kSmpDataSize}))
          e.tables.vl_arb[block - 1u] = *blk;
      });
    }
  }

  void sl2vl(const wire::DrPath& path, std::uint8_t in, std::uint8_t out, Entry& e) {
    get(wire::smp_attr::kSl2VlTable, wire::sl2vl_modifier(in, out), path, e, [&e, in](const std::uint8_t* data) {
      if (const auto t = wire::decode<wire::Sl2VlTable>({data, wire::kSmpDataSize})) e.tables.sl2vl[in] = *t;
    });
  }

 private:
  SmpQueue& q_;
  const TablesOptions& opts_;
  TablesReport& report_;
};

PortShape shape_of(const fabric::Fabric& f, const fabric::Node& n, std::uint8_t port) noexcept {
  const fabric::Port& p = n.ports[port];
  const wire::PortInfo& pi = p.info;
  PortShape s;
  s.port_guid = p.guid != 0 ? p.guid : n.node_guid;
  if (p.linked()) {
    s.peer_guid = f.nodes[p.peer].node_guid;
    s.peer_port = p.peer_port;
  }
  s.state = pi.port_state();
  s.operational_vls = pi.operational_vls();
  s.vl_cap = pi.vl_cap();
  s.vl_arb_high_cap = pi.vl_arbitration_high_cap;
  s.vl_arb_low_cap = pi.vl_arbitration_low_cap;
  s.guid_cap = pi.guid_cap;
  return s;
}

}  // namespace

Task<TablesReport> read_port_tables(SmpQueue& q, const fabric::Fabric& f,
                                    const std::vector<std::vector<wire::DrPath>>& ca_port_paths, TablesOptions opts,
                                    TablesCache& cache) {
  TablesReport report;
  Reader rd(q, opts, report);
  std::set<Key> present;
  std::vector<Entry*> read;
  // An entry whose shape matches is kept; otherwise it is reset and read.
  auto entry_to_read = [&](const Key& k, const PortShape& shape) -> Entry* {
    present.insert(k);
    Entry& e = cache.ports[k];
    if (e.shape == shape && shape.port_guid != 0) {
      ++report.ports_kept;
      return nullptr;
    }
    e = Entry{.shape = shape, .tables = {}};
    ++report.ports_read;
    read.push_back(&e);
    return &e;
  };
  // One node's reads at a time, whenever the queue runs dry: memory stays
  // bounded by the window, not the fabric (a 43,904-host fabric queued
  // 311,248 SMPs, 110 MB, at once).
  auto visit = [&](fabric::NodeId id) {
    const fabric::Node& n = f.nodes[id];
    if (!n.is_switch()) {
      // A CA's SMA answers for the port the SMP arrives on: each port by its own path.
      for (std::uint8_t p = 1; p < n.ports.size(); ++p) {
        if (!n.ports[p].linked() || n.ports[p].guid == 0) continue;
        if (id >= ca_port_paths.size() || p >= ca_port_paths[id].size()) continue;
        const wire::DrPath& path = ca_port_paths[id][p];
        Entry* e = entry_to_read({n.node_guid, p}, shape_of(f, n, p));
        if (e == nullptr) continue;
        const wire::PortInfo& pi = n.ports[p].info;
        rd.guid_info(pi, path, *e);
        if (pi.has_cap(wire::port_cap::kIsSLMappingSupported)) {
          e->tables.sl2vl.assign(1, wire::Sl2VlTable{});
          rd.sl2vl(path, 0, 0, *e);
        }
        rd.vl_arb(pi, path, 0, *e);
      }
      return;
    }
    if (n.ports.empty()) return;
    // Switch port 0: the end port's GUIDInfo; with switch_ports, the tables
    // of every linked port for every input port, port 0 and ports without a
    // link included (OpenSM programs them all, so the SA reports them all).
    std::vector<std::uint8_t> inputs;
    for (std::uint8_t p = 0; p < n.ports.size(); ++p) inputs.push_back(p);
    std::uint32_t inputs_hash = 2166136261u;  // FNV-1a of the linked port numbers
    for (const std::uint8_t p : inputs) inputs_hash = (inputs_hash ^ p) * 16777619u;
    const bool enhanced0 = n.switch_info.enhanced_port0() != 0;
    const bool sl_map = n.ports[0].info.has_cap(wire::port_cap::kIsSLMappingSupported);
    for (std::uint8_t out = 0; out < n.ports.size(); ++out) {
      if (out != 0 && (!opts.switch_ports || !n.ports[out].linked())) continue;
      PortShape shape = shape_of(f, n, out);
      if (opts.switch_ports) shape.inputs_hash = inputs_hash;
      Entry* e = entry_to_read({n.node_guid, out}, shape);
      if (e == nullptr) continue;
      const wire::PortInfo& pi = n.ports[out].info;
      if (out == 0) rd.guid_info(pi, n.dr_path, *e);
      if (!opts.switch_ports || (out == 0 && !enhanced0)) continue;  // a base port 0 has no data VLs
      rd.vl_arb(pi, n.dr_path, out, *e);
      if (!sl_map) continue;
      e->tables.sl2vl.assign(n.ports.size(), wire::Sl2VlTable{});
      // Input port 0 too (the switch's own packets), as OpenSM programs it.
      for (const std::uint8_t in : inputs) rd.sl2vl(n.dr_path, in, out, *e);
    }
  };
  fabric::NodeId next = 0;
  q.set_feeder([&] {
    if (next >= f.nodes.size()) return false;
    visit(next++);
    return true;
  });
  co_await q.drained();
  q.set_feeder(nullptr);
  // Nearly every port holds the same SL2VL and VLArb tables: one buffer for
  // each kind of table, shared by the cache and the snapshots.
  fabric::CowInterner<wire::Sl2VlTable> sl2vl_tables;
  fabric::CowInterner<wire::VlArbTableBlock> vl_arb_tables;
  for (Entry* e : read) {
    sl2vl_tables.intern(e->tables.sl2vl);
    vl_arb_tables.intern(e->tables.vl_arb);
    if (only_own_guid(*e)) e->tables.guids.clear();  // a block failed: see guid_info
  }
  std::erase_if(cache.ports, [&](const auto& kv) { return !present.contains(kv.first); });
  co_return report;
}

void fill_port_tables(const fabric::Fabric& f, const TablesCache& cache, sa::PortTableView::Rows& rows,
                      fabric::NodeId first, fabric::NodeId last) {
  for (fabric::NodeId id = first; id < last; ++id) {
    const fabric::Node& n = f.nodes[id];
    auto& ports = rows[id];
    ports.resize(n.ports.size());
    // The cache is ordered by (node GUID, port): one search a node, then its ports in turn.
    for (auto it = cache.ports.lower_bound({n.node_guid, 0}); it != cache.ports.end() && it->first.first == n.node_guid;
         ++it) {
      const std::uint8_t p = it->first.second;
      if (p >= ports.size()) break;
      const sa::PortTables& t = it->second.tables;
      ports[p].sl2vl = t.sl2vl;
      ports[p].vl_arb = t.vl_arb;
      ports[p].guids = t.guids;
    }
  }
}

}  // namespace madengine::sm
