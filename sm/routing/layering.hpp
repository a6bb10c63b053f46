// Splits the paths of a destination-based routing into virtual-lane layers
// whose channel dependency graphs are acyclic: the layer of the path from
// each source switch to each LID, at most `vls` layers. Paths are taken
// destination by destination, sources nearest the destination first; a path
// joins the layer of the path it continues when its one new dependency keeps
// that layer acyclic, else the first layer that takes all its dependencies.
// Fails (false, `error`) when some path fits no layer.
#pragma once

#include <string>
#include <vector>

#include "madengine/fabric/lft.hpp"
#include "madengine/fabric/path_layers.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

bool assign_layers(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
                   fabric::PathLayers& out, std::string& error);

}  // namespace madengine::sm
