// What a FabricView reads and an LftTable writes: the SM's model
// (fabric::Fabric, fabric::Lft) with the LID and GUID indexes of an epoch,
// for the library's own code. Private: embedders see only the values of
// madengine/node/fabric_view.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/lft.hpp"
#include "madengine/node/fabric_view.hpp"

namespace madengine::node {

struct FabricSource {
  // Keeps what the pointers below point into alive (null: borrowed for the
  // length of a call, as the routing hook's fabric).
  std::shared_ptr<const void> owner;
  const fabric::Fabric* fabric = nullptr;
  std::span<const fabric::Lft> lfts;
  std::vector<std::uint32_t> lft_index;  // NodeId -> index into lfts (~0u: none)
  // LID -> end port (kNoNode: none) and port GUID -> end port: the epoch's
  // own indexes, or the `own_` ones built for a fabric not yet published.
  std::span<const fabric::EndPort> by_lid;
  const std::unordered_map<std::uint64_t, fabric::EndPort>* by_guid = nullptr;
  std::vector<fabric::EndPort> own_by_lid;
  std::unordered_map<std::uint64_t, fabric::EndPort> own_by_guid;
  std::uint64_t epoch = 0;
  std::uint16_t top_lid = 0;
  std::size_t ports = 0, links = 0;

  // A published epoch's view: `owner` keeps `fabric`, `lfts` and the indexes alive.
  static FabricView published(std::shared_ptr<const void> owner, const fabric::Fabric& fabric,
                              std::span<const fabric::Lft> lfts, std::span<const fabric::EndPort> by_lid,
                              const std::unordered_map<std::uint64_t, fabric::EndPort>& by_guid, std::uint64_t epoch,
                              std::uint16_t top_lid);
  // A fabric being routed, borrowed for a call (its indexes built here).
  static FabricView borrowed(const fabric::Fabric& fabric, std::uint16_t top_lid);
  // Valid unless v.empty().
  static const FabricSource& of(const FabricView& v) noexcept { return *v.src_; }
  static std::weak_ptr<const FabricSource> share(const FabricView& v) noexcept { return v.src_; }
  static FabricView view(std::shared_ptr<const FabricSource> s) noexcept { return FabricView(std::move(s)); }

 private:
  void count();
};

// The last epoch's view, handed out again while that epoch is current:
// building one is a pass over the fabric, and tools ask for one per check.
class ViewCache {
 public:
  // The view of `owner` (an epoch): the last one if it is of the same
  // epoch and still held somewhere, else make().
  template <typename Make>
  FabricView get(const void* owner, Make&& make) {
    std::lock_guard lock(mu_);
    if (owner == owner_)
      if (std::shared_ptr<const FabricSource> s = last_.lock()) return FabricSource::view(std::move(s));
    FabricView v = make();
    owner_ = owner;
    last_ = FabricSource::share(v);
    return v;
  }

 private:
  std::mutex mu_;
  const void* owner_ = nullptr;  // compared only while last_ lives (which keeps it alive)
  std::weak_ptr<const FabricSource> last_;
};

inline const fabric::Fabric& model_of(const FabricView& v) noexcept { return *FabricSource::of(v).fabric; }

// The SM's LFTs of one routing pass, as an LftTable writes them.
struct LftTable::Tables {
  Tables(std::vector<fabric::Lft>& lfts, const fabric::Fabric& fabric);
  std::uint8_t* entry(NodeId node, std::uint16_t lid) noexcept;
  std::vector<fabric::Lft>* lfts;
  const fabric::Fabric* fabric;
  std::vector<std::uint32_t> index;  // NodeId -> index into *lfts (~0u: not a switch)
  std::uint16_t top_lid = 0;
};

// An embedder's routing as the SM calls it (sm::RoutingHook): the fabric
// and LFTs of the pass seen through a FabricView and an LftTable. Empty
// for an empty hook.
std::function<bool(const fabric::Fabric&, std::vector<fabric::Lft>&, std::string&)> sm_routing_hook(RoutingHook hook);

}  // namespace madengine::node
