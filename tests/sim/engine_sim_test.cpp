// The project's Engine on the `sim` transport: an SA-like handler on the SM
// node answers queries from simulated hosts, all on one thread and one clock
// (the fabric's), driven by Engine::poll_all_once() and Fabric::advance().
#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "madengine/wire/sa.hpp"
#include "sim/bringup.hpp"
#include "sim/generators.hpp"
#include "sim/host.hpp"
#include "sim/sim_transport.hpp"
#include "sim/smp_client.hpp"

using namespace madengine;
using namespace madengine::sim;

namespace {

// Answers every SA Get with an empty GetResp carrying the request's TID.
class EchoSa final : public MadHandler {
 public:
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    ++seen;
    buf.hdr().method = wire::method::kGetResp;
    ctx.tx().send(buf);
  }
  int seen = 0;
};

}  // namespace

TEST(SimEngine, EngineAnswersHostsThroughSimTransport) {
  Fabric fabric(make_fat_tree_2level({4}));
  {
    const EndpointId tmp = fabric.attach(fabric.find_node("host-0-0"), 1, AgentSpec{.smi = true});
    SmpClient c(fabric, tmp);
    ASSERT_TRUE(bring_up(c).ok);
    fabric.detach(tmp);
  }
  SimTransport sa(fabric, fabric.find_node("host-0-0"), 1);
  ASSERT_TRUE(sa.open(AgentSpec{.smi = true, .is_sm = true, .sa_server = true, .gsi_client = true}));

  EngineConfig cfg;
  cfg.cores = 1;
  cfg.pin = false;
  cfg.clock = &fabric.clock();
  Engine engine(cfg);
  EchoSa echo;
  engine.add_transport(sa, 0);
  engine.add_handler(
      DispatchKey{static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm), wire::method::kGet, std::nullopt}, echo,
      OwnerSelector::fixed(0));

  std::vector<Host> hosts;
  hosts.reserve(8);
  for (const char* name : {"host-1-0", "host-1-1", "host-2-0", "host-3-1"})
    hosts.emplace_back(fabric, fabric.find_node(name));
  std::vector<std::pair<Host*, std::uint64_t>> asked;
  for (Host& h : hosts)
    for (int i = 0; i < 5; ++i) {
      const auto tid = h.query(wire::method::kGet, wire::sa_attr::kNodeRecord, 0, {});
      ASSERT_TRUE(tid);
      asked.emplace_back(&h, *tid);
    }
  // Drive: the engine polls (which runs due fabric events), then time moves.
  const Nanos deadline = fabric.now_ns() + 10 * kNanosPerMilli;
  while (fabric.now_ns() < deadline) {
    while (engine.poll_all_once() != 0) {
    }
    fabric.advance(10 * kNanosPerMicro);
  }
  engine.quiesce();
  EXPECT_EQ(echo.seen, 20);
  for (auto& [h, tid] : asked) EXPECT_TRUE(h->take_response(tid)) << "tid " << tid;
  EXPECT_EQ(sa.counters().rx, 20u);
  EXPECT_EQ(sa.counters().tx, 20u);
}
