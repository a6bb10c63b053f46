// Every switch's LFT of one epoch in the layout of OpenSM's LFT dump
// (opensm-lfts.dump in its dump folder, which the file routing engine's -U
// reads; not the ibroute layout `dump_lfts` prints): per switch a
// header line naming its LID, GUID and description, one line per routed
// LID ("0x0004 017 # Channel Adapter portguid 0x...: 'desc'"), then a count.
// Switches in GUID order, as OpenSM walks its switch table.
#pragma once

#include <string>

#include "perfmgr/node_name_map.hpp"
#include "madengine/node/fabric_view.hpp"

namespace madengine::service {

// Nodes are named through `names` (OpenSM's dump does the same with its node name map).
std::string dump_lfts(const node::FabricView& epoch, const perfmgr::NodeNameMap& names = {});

}  // namespace madengine::service
