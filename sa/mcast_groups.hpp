// The SA's multicast groups as the SM consumes them: each group's MLID and
// member end ports, from the SA's MCMemberRecords. The SA owns this view
// (SaServer::mcast_provider) and the SM programs MFTs from it (sm/mcast), so
// the SM depends on the SA and never the other way round.
#pragma once

#include <cstdint>
#include <vector>

namespace madengine::sa {

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

}  // namespace madengine::sa
