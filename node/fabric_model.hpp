// The SM's model behind a FabricView, for the library's own readers that
// need more than the view gives (the C ABI's link rates and VLs). Private.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "madengine/fabric/fabric.hpp"
#include "madengine/fabric/lft.hpp"
#include "madengine/node/fabric_view.hpp"

namespace madengine::node {

struct FabricModel {
  // Valid unless v.empty().
  static const fabric::Fabric& of(const FabricView& v) noexcept { return *v.fabric_; }
};

// An embedder's routing as the SM calls it (sm::RoutingHook): the fabric
// and LFTs of the pass seen through a FabricView and an LftTable. Empty
// for an empty hook.
std::function<bool(const fabric::Fabric&, std::vector<fabric::Lft>&, std::string&)> sm_routing_hook(RoutingHook hook);

}  // namespace madengine::node
