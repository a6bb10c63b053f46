// madstorm over the verbs-ud transport on a real HCA (label hw): host
// discovery and a NodeRecord storm against the port's SM through our own UD
// QP. Skips with a clear message without an RDMA device, an ACTIVE port, an
// SM, or the right to own the GSI Q_Key (CAP_NET_RAW): the transport is
// untested on hardware.
#include <thread>

#include <gtest/gtest.h>

#include "engine/verbs/verbs_transport.hpp"
#include "lib/runner.hpp"
#include "lib/verbs_client.hpp"

namespace madstorm {
namespace {

TEST(MadstormVerbsHw, NodeRecordStormThroughAUdQp) {
  madengine::SteadyClock clock;
  madengine::VerbsUdTransport t(verbs_client_config("", 1, 64), clock);
  // No device ("no RDMA device"), or no right to the GSI Q_Key (CAP_NET_RAW).
  if (!t.open(madengine::AgentSpec{.gsi_client = true}))
    GTEST_SKIP() << "untested-on-hardware: cannot open a verbs port: " << t.last_error();
  if (t.local_port().state != madengine::PortState::kActive || t.local_port().sm_lid == 0)
    GTEST_SKIP() << "port not ACTIVE or no SM on it";
  RunRequest req;
  req.info.transport = "verbs-ud";
  req.info.storm.sa.lid = t.local_port().sm_lid;
  req.info.storm.sa.subnet_prefix = t.local_port().subnet_prefix;
  req.info.storm.queries_max = 200;
  req.info.workload.pattern = Pattern::kNodeRecord;
  std::string error;
  const auto out = run_storm(req, t, clock, [](Nanos) { std::this_thread::yield(); }, error);
  ASSERT_TRUE(out.has_value()) << error;
  EXPECT_EQ(out->result.counters.issued, 200u);
  EXPECT_EQ(out->result.counters.answered, 200u);
  EXPECT_TRUE(strict_problems(out->result, 200).empty());
}

}  // namespace
}  // namespace madstorm
