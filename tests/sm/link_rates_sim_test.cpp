// PathRecord and MultiPathRecord rates through the SA on the sim, as a client
// asks for them on the wire: a host pair on every width (1x 2x 4x 8x 12x) and
// speed (SDR to XDR) gets IBA's rate code; a path across a slower link
// between switches gets that link's rate; a rate selector above the link's
// finds no path. The C ABI reads the same in tests/node/link_rate_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "madengine/wire/link_rate.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sim/topology.hpp"
#include "sim_sa_rig.hpp"
#include "speed_pairs.hpp"

namespace madengine {
namespace {

namespace cm = wire::path_record_cm;
namespace m = wire::method;
namespace a = wire::sa_attr;
using testing::bytes;

TEST(LinkRatesSim, EveryWidthAndSpeedThroughTheSa) {
  testing::SimSaRig rig(sim::parse_topology(testing::speed_pairs_topology(), "speed-pairs"), 3);
  auto& node = rig.add(rig.fabric.find_node("N"));
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().subnet_up; }, 30'000));
  const auto& f = rig.fabric;
  const auto lid = [&](const std::string& host) { return f.lid(f.port(f.find_node(host), 1)); };
  sim::Host h(rig.fabric, f.find_node("X"));
  // One PathRecord Get by LIDs; 0 and the status when none.
  const auto path = [&](std::uint16_t s, std::uint16_t d, std::uint64_t mask, wire::PathRecord q, std::uint16_t& status) {
    q.slid = wire::be16::from(s);
    q.dlid = wire::be16::from(d);
    const auto r = rig.ask(h, m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid | mask, bytes(q));
    status = r ? r->hdr().status.get() : 0xffff;
    wire::PathRecord got{};
    if (r && status == 0) std::memcpy(&got, r->as<wire::SaMad>().data.data(), sizeof got);
    return got;
  };
  std::uint16_t status = 0;
  for (unsigned si = 0; si < testing::kPairSpeeds.size(); ++si)
    for (unsigned wi = 0; wi < testing::kPairWidths.size(); ++wi) {
      const std::string i = std::to_string(si * 5 + wi);
      const std::string what = std::string(testing::kPairSpeeds[si].name) + " width mask " +
                               std::to_string(testing::kPairWidths[wi]);
      const auto got = path(lid("A" + i), lid("B" + i), 0, {}, status);
      ASSERT_EQ(status, 0) << what;
      EXPECT_EQ(got.rate(), testing::kSpeedPairRate[si][wi]) << what;
      EXPECT_EQ(got.mtu(), si >= 6 ? 5 : 4) << what << ": NDR and XDR hardware takes 4096, the rest 2048 (as ibsim)";
    }
  // Across S1 - S2: 4x NDR, 4x HDR, 4x NDR.
  EXPECT_EQ(path(lid("X"), lid("N"), 0, {}, status).rate(), wire::rate_code::k200Gbps);
  EXPECT_EQ(path(lid("N"), lid("X"), 0, {}, status).rate(), wire::rate_code::k200Gbps);
  // Rate selectors compare bandwidth: more than 200 Gb/s across the HDR link
  // is no path; at least 200 Gb/s (the largest) is 200; less than 400 is 200.
  wire::PathRecord q{};
  q.set_rate(wire::rate_code::k200Gbps);
  q.set_rate_selector(wire::selector::kGreaterThan);
  path(lid("X"), lid("N"), cm::kRate | cm::kRateSelector, q, status);
  EXPECT_EQ(status, wire::sa_status::kNoRecords);
  q.set_rate(wire::rate_code::k400Gbps);
  q.set_rate_selector(wire::selector::kLessThan);
  EXPECT_EQ(path(lid("X"), lid("N"), cm::kRate | cm::kRateSelector, q, status).rate(), wire::rate_code::k200Gbps);
  EXPECT_EQ(status, 0);
  // 4x XDR (800 Gb/s) under a selector "less than 800": 600, the fastest code below.
  const std::string xdr4 = std::to_string(7 * 5 + 2);
  q.set_rate(wire::rate_code::k800Gbps);
  q.set_rate_selector(wire::selector::kLessThan);
  EXPECT_EQ(path(lid("A" + xdr4), lid("B" + xdr4), cm::kRate | cm::kRateSelector, q, status).rate(),
            wire::rate_code::k600Gbps);
}

}  // namespace
}  // namespace madengine
