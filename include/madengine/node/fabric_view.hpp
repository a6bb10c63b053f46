// Read access to a fabric as the SM discovered and routed it: nodes, ports,
// links, LIDs and (for a published epoch) every switch's LFT. A view of a
// published epoch keeps that epoch alive for as long as it exists, so it may
// be read from any thread while the SM publishes newer ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "madengine/export.h"
#include "madengine/fabric/fabric.hpp"
#include "madengine/fabric/lft.hpp"

namespace madengine::node {

class FabricView {
 public:
  FabricView() = default;  // empty: no epoch published yet
  // `owner` keeps `fabric` and `lfts` alive (null: borrowed for the length
  // of a call, as the routing hook's fabric).
  MADENGINE_API FabricView(std::shared_ptr<const void> owner, const fabric::Fabric& fabric,
                           std::span<const fabric::Lft> lfts, std::uint64_t epoch, std::uint16_t top_lid);

  bool empty() const noexcept { return fabric_ == nullptr; }
  std::uint64_t epoch() const noexcept { return epoch_; }
  std::uint16_t top_lid() const noexcept { return top_lid_; }
  // Valid unless empty(). Node ids index fabric().nodes.
  const fabric::Fabric& fabric() const noexcept { return *fabric_; }
  std::span<const fabric::Lft> lfts() const noexcept { return lfts_; }

  std::size_t node_count() const noexcept { return fabric_ ? fabric_->nodes.size() : 0; }
  // Every node's physical ports, plus port 0 of each switch.
  std::size_t port_count() const noexcept { return ports_; }
  // Links between two ports, each counted once.
  std::size_t link_count() const noexcept { return links_; }
  // The LFT of switch `node`, or nullptr (not a switch, or not routed).
  MADENGINE_API const fabric::Lft* lft_of(fabric::NodeId node) const noexcept;
  // Switch `node`'s output port for `lid`; kLftNoRoute if it has none.
  MADENGINE_API std::uint8_t lft_port(fabric::NodeId node, std::uint16_t lid) const noexcept;

 private:
  std::shared_ptr<const void> owner_;
  const fabric::Fabric* fabric_ = nullptr;
  std::span<const fabric::Lft> lfts_;
  std::vector<std::uint32_t> lft_index_;  // NodeId -> index into lfts_ (~0u: none)
  std::uint64_t epoch_ = 0;
  std::uint16_t top_lid_ = 0;
  std::size_t ports_ = 0, links_ = 0;
};

}  // namespace madengine::node
