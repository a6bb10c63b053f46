// Building and reading the path-record database (see path_db.hpp). For one
// destination LID the LFTs form a tree towards it, so every switch's entry is
// its next hop's entry plus one link: O(switches) per LID.
#include "sa/paths/path_db.hpp"

#include <algorithm>
#include <array>

#include "sa/paths/link_rate.hpp"
#include "madengine/common/parallel_for.hpp"

namespace madengine::sa {

using fabric::NodeId;

namespace {

constexpr std::uint8_t kUnlimited = 0xfe;  // no link yet: MTU/rate of "nothing"

// Rate codes are not ordered by speed: compare through a table.
struct RateOrder {
  std::array<std::uint32_t, 256> mbps{};
  RateOrder() {
    for (unsigned c = 0; c < 256; ++c) mbps[c] = rate_mbps(static_cast<std::uint8_t>(c));
    mbps[kUnlimited] = ~0u;
  }
  std::uint8_t min(std::uint8_t a, std::uint8_t b) const noexcept { return mbps[a] <= mbps[b] ? a : b; }
};
const RateOrder kRateOrder;

std::uint8_t link_rate(const fabric::Port& p) noexcept { return rate_code(link_mbps(p.link_width, p.link_speed)); }

PathAttrs join(PathAttrs rest, std::uint8_t mtu, std::uint8_t rate, bool switch_hop) noexcept {
  if (!rest.routed()) return rest;
  rest.hops = static_cast<std::uint8_t>(rest.hops + (switch_hop ? 1 : 0));
  rest.mtu = std::min(rest.mtu, mtu);
  rest.rate = kRateOrder.min(rest.rate, rate);
  return rest;
}

}  // namespace

PathDb PathDb::build(const fabric::Fabric& fabric, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                     unsigned shards, unsigned threads) {
  PathDb db;
  shards = std::max(1u, shards);
  db.switches_ = static_cast<std::uint32_t>(lfts.size());
  db.top_lid_ = top_lid;
  db.switch_index_.assign(fabric.nodes.size(), ~0u);
  for (std::uint32_t i = 0; i < lfts.size(); ++i) db.switch_index_[lfts[i].node] = i;

  db.attach_.assign(db.top_lid_ + 1u, Attach{});
  for (const fabric::EndPort e : fabric.end_ports()) {
    const fabric::Node& n = fabric.nodes[e.node];
    const std::uint16_t base = fabric.lid_of(e);
    if (base == 0 || base > db.top_lid_) continue;
    Attach a;
    if (n.is_switch()) {
      a = {db.switch_index_[e.node], kUnlimited, kUnlimited, 1};
    } else {
      const fabric::Port& p = n.ports[e.port];
      a = {db.switch_index_[p.peer], p.mtu, link_rate(p), static_cast<std::uint8_t>(1u << n.lmc)};
    }
    for (unsigned i = 0; i < a.lid_count && base + i <= db.top_lid_; ++i) db.attach_[base + i] = a;
  }

  db.shards_.resize(shards);
  const std::size_t lids_per_shard = db.top_lid_ / shards + 1;
  parallel_for(shards, threads, [&](std::size_t k) {
    Shard& shard = db.shards_[k];
    shard.table.assign(lids_per_shard * db.switches_, PathAttrs{});
    std::vector<std::uint8_t> state(db.switches_);  // 0 new, 1 on the stack, 2 done
    std::vector<std::uint32_t> stack;
    for (std::uint32_t dlid = static_cast<std::uint32_t>(k); dlid <= db.top_lid_; dlid += shards) {
      if (db.attach_[dlid].lid_count == 0) continue;
      PathAttrs* row = shard.table.data() + (dlid / shards) * db.switches_;
      std::fill(state.begin(), state.end(), 0);
      for (std::uint32_t start = 0; start < db.switches_; ++start) {
        if (state[start] == 2) continue;
        // Walk down the tree until a known entry, then fill in on the way back.
        stack.clear();
        std::uint32_t s = start;
        PathAttrs tail;  // the entry the walk ended on
        while (true) {
          if (state[s] == 2) {
            tail = row[s];
            break;
          }
          if (state[s] == 1) {  // a forwarding loop: nothing on it is routed
            tail = PathAttrs{};
            break;
          }
          state[s] = 1;
          stack.push_back(s);
          const fabric::Lft& lft = lfts[s];
          const std::uint8_t port = dlid < lft.ports.size() ? lft.ports[dlid] : fabric::kLftNoRoute;
          const fabric::Node& node = fabric.nodes[lft.node];
          if (port == fabric::kLftNoRoute || (port != 0 && (port > node.num_ports() || !node.ports[port].linked()))) {
            tail = PathAttrs{};
            stack.pop_back();
            row[s] = tail;
            state[s] = 2;
            break;
          }
          if (port == 0) {  // the destination is this switch's own port 0
            tail = {0, kUnlimited, kUnlimited, 0};
            stack.pop_back();
            row[s] = tail;
            state[s] = 2;
            break;
          }
          const fabric::Port& out = node.ports[port];
          if (!fabric.nodes[out.peer].is_switch()) {  // the exit link to the destination CA
            tail = {0, out.mtu, link_rate(out), 0};
            stack.pop_back();
            row[s] = tail;
            state[s] = 2;
            break;
          }
          s = db.switch_index_[out.peer];
        }
        while (!stack.empty()) {
          const std::uint32_t at = stack.back();
          stack.pop_back();
          const fabric::Lft& lft = lfts[at];
          const fabric::Port& out = fabric.nodes[lft.node].ports[lft.ports[dlid]];
          tail = join(tail, out.mtu, link_rate(out), true);
          row[at] = tail;
          state[at] = 2;
        }
      }
    }
  });
  return db;
}

const PathAttrs* PathDb::lookup(NodeId src_switch, std::uint16_t dlid) const noexcept {
  if (src_switch >= switch_index_.size() || dlid > top_lid_ || dlid == 0) return nullptr;
  const std::uint32_t s = switch_index_[src_switch];
  if (s == ~0u) return nullptr;
  const Shard& shard = shards_[shard_of(dlid)];
  return &shard.table[(dlid / shards()) * switches_ + s];
}

PathAttrs PathDb::path(std::uint16_t slid, std::uint16_t dlid) const noexcept {
  if (slid == 0 || dlid == 0 || slid > top_lid_ || dlid > top_lid_) return {};
  const Attach& src = attach_[slid];
  if (src.lid_count == 0 || attach_[dlid].lid_count == 0 || src.switch_index == ~0u) return {};
  const Shard& shard = shards_[shard_of(dlid)];
  PathAttrs p = join(shard.table[(dlid / shards()) * switches_ + src.switch_index], src.mtu, src.rate, false);
  if (p.routed()) {
    if (p.mtu == kUnlimited) p.mtu = 5;     // switch to its own port 0: no link limits it
    if (p.rate == kUnlimited) p.rate = 16;  // nominal 100 Gb/s
  }
  return p;
}

std::size_t PathDb::bytes() const noexcept {
  std::size_t b = attach_.size() * sizeof(Attach) + switch_index_.size() * sizeof(std::uint32_t);
  for (const auto& s : shards_) b += s.table.size() * sizeof(PathAttrs);
  return b;
}

std::size_t PathDb::entries() const noexcept {
  std::size_t n = 0;
  for (const auto& s : shards_) n += s.table.size();
  return n;
}

}  // namespace madengine::sa
