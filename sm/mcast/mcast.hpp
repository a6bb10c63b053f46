// Multicast forwarding: the SM takes multicast groups from a provider (the
// SA implements it from its MCMemberRecords), builds a spanning tree over the
// switches for each group that reaches every member, and turns the trees
// into per-switch MFT blocks (IBA 14.2.5.12).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "madengine/fabric/fabric.hpp"
#include "madengine/wire/smp/mft.hpp"

namespace madengine::sm {

struct McGroup {
  std::uint16_t mlid = 0;                         // 0xc000..0xfffe
  std::vector<std::uint64_t> member_port_guids;   // end ports (CA ports, switch port 0)
};

// Implemented by the SA. groups() is called on the SM's core; changed() may
// be called from any thread and only makes the SM call groups() again.
class McGroupProvider {
 public:
  virtual ~McGroupProvider() = default;
  virtual std::vector<McGroup> groups() = 0;
  // The SM installs this; providers call notify() when groups change.
  void set_listener(void (*fn)(void* arg) noexcept, void* arg) noexcept {
    listener_ = fn;
    listener_arg_ = arg;
  }
  void notify() noexcept {
    if (listener_ != nullptr) listener_(listener_arg_);
  }

 private:
  void (*listener_)(void* arg) noexcept = nullptr;
  void* listener_arg_ = nullptr;
};

// Key of one MFT block on a switch: (block, position) as in the attribute modifier.
struct MftKey {
  std::uint16_t block = 0;
  std::uint8_t position = 0;
  auto operator<=>(const MftKey&) const noexcept = default;
};
using SwitchMft = std::map<MftKey, wire::MftBlock>;

// Per switch (by NodeId) the MFT blocks that carry any group's ports: for
// each group, a BFS tree over switch-to-switch links rooted at the first
// member's switch, pruned to the switches that lead to members.
std::map<fabric::NodeId, SwitchMft> compute_mfts(const fabric::Fabric& f, const std::vector<McGroup>& groups);

}  // namespace madengine::sm
