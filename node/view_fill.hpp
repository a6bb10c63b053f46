// The views of views.hpp filled from the parts' own figures (node/ only:
// this header reaches the SM, SA and engine).
#pragma once

#include "engine/engine.hpp"
#include "node/views.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/state/journal.hpp"
#include "sm/sm.hpp"

namespace madengine::node {

SmPhase phase_view(sm::SmPhase p) noexcept;
SmStatus sm_status_view(const sm::SmStatus& s);
SaCounters sa_counters_view(const sa::SaCounters& c);
EngineCounters engine_view(const EngineStats& e);
SaRegistrations registrations_view(const sa::SaStateImage& img);

}  // namespace madengine::node
