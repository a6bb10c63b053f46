// The multicast provider the SM programs MFTs from: the SA's groups with
// their MLIDs and member ports. The shape is the one the SM's sm/mcast/
// expects (McGroup, groups(), a change notification); until that header
// exists this is its definition.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace madengine::sa {

struct McGroup {
  std::uint16_t mlid = 0;
  std::vector<std::uint64_t> member_port_guids;
};

class McastProvider {
 public:
  virtual ~McastProvider() = default;
  // The current groups; any thread.
  virtual std::vector<McGroup> groups() const = 0;
  // Called (on the SA's state core) after every change of groups or members.
  virtual void set_on_change(std::function<void()> fn) = 0;
  // Bumped on every change; lets a poller notice changes without a callback.
  virtual std::uint64_t generation() const noexcept = 0;
};

}  // namespace madengine::sa
