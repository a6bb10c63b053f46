// Where a simulation may stop a node as a crash would (madsim, tests): the
// SM's phases as they begin (ControlOptions::on_sm_phase, views.hpp) and
// the steps of a durable file write (the SA journal, guid2lid). Fault
// points fire only under simulation. Private: not part of libmadengine.
#pragma once

#include "engine/durable_file.hpp"
#include "node/views.hpp"

namespace madengine::node {

using madengine::DurableStep;
using madengine::DurableWriteObserver;
using madengine::kDurableStepCount;
// Process-wide: every durable write asks `observer` before each step (null: none).
using madengine::set_durable_write_observer;

}  // namespace madengine::node
