// Nodes (SM + SA, the daemon's assembly) on one sim fabric, driven to a
// condition in simulated time, and SA requests from a simulated host with
// their answers' records: the harness of the SM+SA simulation tests
// (header-only, test-side).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/engine.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "sim/fabric.hpp"
#include "sim/host.hpp"
#include "sm_sa_node.hpp"

namespace madengine::testing {

struct SimSaRig {
  using Node = node::InternalNode;
  static constexpr Nanos kStepNs = kNanosPerMilli;
  sim::Fabric fabric;
  std::vector<std::unique_ptr<Node>> nodes;
  SimSaRig(const sim::Topology& t, std::uint64_t seed) : fabric(t, sim::FabricConfig{.seed = seed}) {}
  ~SimSaRig() { nodes.clear(); }
  // A node (the daemon's assembly) at `at`: `cfg` as the daemon's
  // configuration, then `tweak` on the SM's own (parsed partitions, QoS
  // tables: what the tests build without files).
  Node& add(std::uint32_t at, std::function<void(sm::SmConfig&)> tweak = {}, bool replicate = false,
            const node::NodeConfig& cfg = sim_node_config()) {
    nodes.push_back(make_sm_sa_node(fabric, at, cfg, replicate, std::move(tweak)));
    return *nodes.back();
  }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms, sim::Host* host = nullptr) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      std::size_t work = 0;
      for (auto& n : nodes) work += n->engine().poll_all_once();
      if (host != nullptr) work += host->poll();
      if (work == 0) fabric.advance(kStepNs);
    }
    return pred();
  }
  // One SA request from `host`, answered within `sim_ms`.
  std::optional<MadBuf> ask(sim::Host& host, std::uint8_t method, std::uint16_t attr, std::uint64_t mask,
                            std::span<const std::uint8_t> rec, Nanos sim_ms = 1000, std::uint64_t sm_key = 0) {
    const auto tid = host.query(method, attr, mask, rec, 0, sm_key);
    if (!tid) return std::nullopt;
    std::optional<MadBuf> got;
    run_until([&] { return (got = host.take_response(*tid)).has_value(); }, sim_ms, &host);
    return got;
  }
};

template <typename T>
std::span<const std::uint8_t> bytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(T)};
}

// The records of a one-MAD GetTable answer (RMPP First|Last or plain).
template <typename T>
std::vector<T> records(const MadBuf& b) {
  const auto& sa = b.as<wire::SaMad>();
  std::size_t len = sa.data.size();
  if (sa.rmpp.active())
    len = std::min<std::size_t>(len, sa.rmpp.data2.get() - (wire::kSaHeaderSize - wire::kMadHeaderSize - wire::kRmppHeaderSize));
  std::vector<T> out;
  const std::span<const std::uint8_t> payload(sa.data.data(), len);
  for (std::size_t i = 0; i < wire::table_record_count(len, sa.attr_offset.get()); ++i)
    if (const auto r = wire::table_record<T>(payload, sa.attr_offset.get(), i)) out.push_back(*r);
  return out;
}

}  // namespace madengine::testing
