// SA server fed random requests (random method, attribute, component mask,
// record bytes, SM_Key, RMPP header): it never crashes, answers every
// request that has a response method, and its counters add up.
#include <gtest/gtest.h>

#include <random>

#include "sa_fixture.hpp"

namespace madengine::sa {
namespace {

using namespace testing;

TEST(SaRandomInput, EveryRequestAnsweredNothingLost) {
  auto b = build_snapshot(madengine::testing::fat_tree2(3, 2, 3));
  SaServerConfig cfg;
  cfg.queue_max = 4096;
  cfg.requester_queued_max = 4096;
  SaHarness h(b.snap, cfg);
  const auto lids = ca_lids(*b.snap);
  std::mt19937_64 rng(20261129);
  constexpr std::uint16_t kAttrs[] = {0x01, 0x03, 0x11, 0x12, 0x13, 0x14, 0x15, 0x17, 0x18, 0x20, 0x30, 0x31,
                                      0x33, 0x35, 0x36, 0x38, 0x3a, 0xf3, 0x99};
  constexpr std::uint8_t kMethods[] = {0x01, 0x02, 0x12, 0x14, 0x15, 0x13, 0x03, 0x06};
  std::size_t sent = 0;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 50; ++i) {
      std::array<std::uint8_t, wire::kSaDataSize> data;
      for (auto& x : data) x = static_cast<std::uint8_t>(rng());
      if (rng() % 2) {  // often a plausible LID or GID rather than noise
        const std::uint16_t l = lids[rng() % lids.size()];
        data[0] = static_cast<std::uint8_t>(l >> 8);
        data[1] = static_cast<std::uint8_t>(l);
      }
      const std::uint64_t mask = rng() % 3 == 0 ? rng() : rng() & 0xff;
      MadBuf m = sa_request(kMethods[rng() % std::size(kMethods)], kAttrs[rng() % std::size(kAttrs)], mask, data,
                            0x10000 + sent, lids[rng() % lids.size()]);
      auto& sa = m.as<wire::SaMad>();
      if (rng() % 8 == 0) sa.sm_key = wire::be64::from(kTestSmKey);
      if (rng() % 16 == 0) sa.rmpp.rtime_flags = static_cast<std::uint8_t>(rng());  // garbage RMPP header
      if (rng() % 32 == 0) sa.hdr.class_version = static_cast<std::uint8_t>(rng());
      ASSERT_TRUE(h.inject(m));
      ++sent;
    }
    h.pump();
    h.clock().advance_ns(300 * kNanosPerMilli);  // RMPP windows, retries, leases
  }
  h.pump();
  const auto c = h.server().counters().total();
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(c.received, c.answered + c.busy + c.duplicates + c.ignored);
  EXPECT_GT(c.answered, sent / 2);
  EXPECT_GT(h.answers().size(), sent / 2);
}

}  // namespace
}  // namespace madengine::sa
