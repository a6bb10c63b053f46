// The SM's publication of one epoch as the node's tools read it: fabric,
// LIDs, LFTs and paths, immutable once published (the SA's snapshot).
// Private: not part of libmadengine.
#pragma once

#include "sa/snapshot.hpp"

namespace madengine::node {

using Publication = sa::Snapshot;

}  // namespace madengine::node
