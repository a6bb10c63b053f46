// Splits the paths of a destination-based routing into virtual-lane layers
// whose channel dependency graphs are acyclic: the layer of the path from
// each source switch to each LID, at most `vls` layers. Two methods:
//  * first fit (assign_layers_first_fit): paths taken destination by
//    destination, sources nearest the destination first; a path joins the
//    layer of the path it continues when its one new dependency keeps that
//    layer acyclic, else the first layer that takes all its dependencies.
//    One pass, no per-path state: for large fabrics. When the CA LIDs'
//    routes together have no cycle (a fat tree's up*/down* routes), they
//    all go to layer 0 in one step, as first fit would place them, and only
//    the switches' own LIDs are placed path by path.
//  * cycle breaking (assign_layers_by_cycles), as DFSSSP does: all paths
//    start on layer 0; while a layer's graph has a cycle, the paths that
//    induce its weakest dependency (the one fewest paths induce) move up one
//    layer. Fewer layers, a byte per (switch, LID) while it runs.
// assign_layers tries first fit (on the test topologies it needs as few
// layers as cycle breaking, in a fraction of the time), then cycle breaking
// when first fit needs more than `vls` layers and the fabric has at most
// 32 M (switch, LID) paths. Fails (false, `error`)
// when no method fits the paths into `vls` layers.
#pragma once

#include <string>
#include <vector>

#include "fabric/lft.hpp"
#include "fabric/path_layers.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

// `threads`: first fit collects the routes' dependencies on that many threads.
bool assign_layers(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
                   fabric::PathLayers& out, std::string& error, unsigned threads = 1);
bool assign_layers_first_fit(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                             unsigned vls, fabric::PathLayers& out, std::string& error);
bool assign_layers_by_cycles(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                             unsigned vls, fabric::PathLayers& out, std::string& error);

}  // namespace madengine::sm
