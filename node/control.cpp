// NodeControl: counters copied from the parts into the snapshot types.
#include "node/control.hpp"

#include "node/internal_node.hpp"

namespace madengine::node {

CountersSnapshot NodeControl::counters() const {
  CountersSnapshot c;
  c.node = node_.status();
  const sa::SaRecordCounters sa = node_.sa().counters().total();
  c.sa = SaTotals{.received = sa.received,
                  .answered = sa.answered,
                  .busy = sa.busy,
                  .duplicates = sa.duplicates,
                  .dropped = sa.dropped};
  const sm::SweepStats h = node_.sm().status().last_heavy;
  c.last_heavy = HeavySweepSummary{.nodes = h.nodes,
                                   .switches = h.switches,
                                   .cas = h.cas,
                                   .links = h.links,
                                   .smps = h.smps,
                                   .routing_s = h.routing_s,
                                   .path_db_s = h.path_db_s,
                                   .total_s = h.total_s,
                                   .ok = h.ok};
  const JournalCounters j = node_.journal_counters();
  c.journal_written = j.written;
  c.journal_failed = j.failed;
  return c;
}

sim::Fabric* NodeControl::sim_fabric() const noexcept { return node_.fabric(); }

}  // namespace madengine::node
