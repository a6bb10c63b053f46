// The umad transport without ibsim or an HCA: bad configuration is a clear
// error, and a transport that is not open is inert (no crash, no events).
#include <gtest/gtest.h>

#include "engine/umad/umad_transport.hpp"
#include "madengine/engine/clock.hpp"

namespace madengine {
namespace {

TEST(UmadTransport, UnknownCaFailsWithReason) {
  ManualClock clock;
  UmadConfig cfg;
  cfg.ca_name = "no_such_ca_0";
  UmadTransport t(cfg, clock);
  EXPECT_FALSE(t.open(AgentSpec{.smi = true, .gsi_client = true}));
  EXPECT_FALSE(t.is_open());
  EXPECT_FALSE(t.last_error().empty());
  EXPECT_EQ(t.fd(), -1);
}

TEST(UmadTransport, ClosedTransportIsInert) {
  ManualClock clock;
  UmadTransport t({}, clock);
  MadBuf b{};
  MadBuf* bufs[] = {&b};
  EXPECT_EQ(t.rx_burst(std::span<MadBuf*>(bufs, 1)), 0u);
  EXPECT_EQ(t.tx_burst(std::span<MadBuf* const>(bufs, 1)), 0u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);
  clock.advance_ns(10 * kNanosPerSecond);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);  // never opened: nothing to reopen
  t.close();
  t.close();  // idempotent
  EXPECT_EQ(t.counters().tx, 0u);
  EXPECT_EQ(t.name(), "umad");
}

}  // namespace
}  // namespace madengine
