// Where a simulation may stop a node as a crash would (madsim, tests): the
// SM's phases as they begin (InternalOptions::sm sets SmConfig::on_phase)
// and the steps of a durable file write (the SA journal, guid2lid). Fault
// points fire only under simulation. Private: not part of libmadengine.
#pragma once

#include "engine/durable_file.hpp"
#include "sm/sm.hpp"

namespace madengine::node {

using sm::SmPhase;
using madengine::DurableStep;
using madengine::DurableWriteObserver;
using madengine::kDurableStepCount;
// Process-wide: every durable write asks `observer` before each step (null: none).
using madengine::set_durable_write_observer;

}  // namespace madengine::node
