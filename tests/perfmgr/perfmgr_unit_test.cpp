// The performance manager's pure parts: changes across clears, OpenSM's
// clear rule, the thresholds, the node name map's format and its errors.
#include <gtest/gtest.h>

#include "perfmgr/node_name_map.hpp"
#include "perfmgr/port_stats.hpp"

namespace madengine::perfmgr {
namespace {

TEST(PortStats, ChangeCountsAClearByAnotherAsTheNewValue) {
  CounterSet prev{}, now{};
  at(prev, Counter::kSymbolErrors) = 7;
  at(now, Counter::kSymbolErrors) = 9;
  at(prev, Counter::kRcvErrors) = 100;
  at(now, Counter::kRcvErrors) = 3;  // cleared in between (perfquery -R)
  const CounterSet d = delta(prev, now);
  EXPECT_EQ(at(d, Counter::kSymbolErrors), 2u);
  EXPECT_EQ(at(d, Counter::kRcvErrors), 3u);
}

TEST(PortStats, ClearRuleIsOpenSMs) {
  wire::PortCounters pc{};
  EXPECT_EQ(clear_select(pc, true, true), 0);
  pc.symbol_errors.set(0xffff - 0xffff / 4 - 1);
  EXPECT_EQ(clear_select(pc, true, true), 0);
  pc.symbol_errors.set(0xffff - 0xffff / 4);  // three quarters of the range
  EXPECT_EQ(clear_select(pc, true, true), wire::pc_select::kErrors);  // 64-bit data counters kept
  EXPECT_EQ(clear_select(pc, false, true), wire::pc_select::kAll);
  pc = {};
  pc.set_local_link_integrity_errors(10);  // 4-bit counters at 10
  EXPECT_NE(clear_select(pc, true, true), 0);
  pc = {};
  pc.xmit_data.set(0xc0000000u);  // 32-bit data counts only without the extended counters
  EXPECT_EQ(clear_select(pc, true, true), 0);
  EXPECT_EQ(clear_select(pc, false, true), wire::pc_select::kAll);
  pc = {};
  pc.xmit_wait.set(0xc0000000u);
  EXPECT_EQ(clear_select(pc, true, false), 0);  // not read where the PMA has no PortXmitWait
  EXPECT_NE(clear_select(pc, true, true), 0);
}

TEST(PortStats, Thresholds) {
  ErrorThresholds t;
  CounterSet d{};
  at(d, Counter::kSymbolErrors) = t.symbol_errors - 1;
  EXPECT_EQ(over_thresholds(d, t), 0u);
  at(d, Counter::kSymbolErrors) = t.symbol_errors;
  at(d, Counter::kLinkDowned) = 1;
  EXPECT_EQ(over_thresholds(d, t), 0b101u);
  at(d, Counter::kXmitWait) = 1'000'000;  // off by default
  EXPECT_EQ(over_thresholds(d, t), 0b101u);
  t.symbol_errors = 0;
  EXPECT_EQ(over_thresholds(d, t), 0b100u);
}

TEST(NodeNameMap, ReadsTheDiagsFormat) {
  NodeNameMap m;
  std::string err;
  ASSERT_TRUE(parse_node_name_map("# a comment\n\n0x0002c90200401234 \"leaf 1\"  # trailing\n"
                                  "  0x0002c90200405678   spine-2 # unquoted\n"
                                  "12345 \"decimal\"\n",
                                  "map", m, err))
      << err;
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.name(0x0002c90200401234ull, "desc"), "leaf 1");
  EXPECT_EQ(m.name(0x0002c90200405678ull, "desc"), "spine-2");
  EXPECT_EQ(m.name(12345, "desc"), "decimal");
  EXPECT_EQ(m.name(1, "desc"), "desc");
}

TEST(NodeNameMap, ErrorsNameTheLine) {
  NodeNameMap m;
  std::string err;
  EXPECT_FALSE(parse_node_name_map("0x1 \"a\"\nnot-a-guid \"b\"\n", "nn.map", m, err));
  EXPECT_EQ(err, "nn.map:2: \"not-a-guid\" is not a GUID");
  EXPECT_FALSE(parse_node_name_map("0x1 \"a\n", "nn.map", m, err));
  EXPECT_EQ(err, "nn.map:1: the name of 0x1 has no closing quote");
  EXPECT_FALSE(parse_node_name_map("\n\n0x2\n", "nn.map", m, err));
  EXPECT_EQ(err, "nn.map:3: 0x2 has no name");
  EXPECT_FALSE(load_node_name_map("/nonexistent/nn.map", m, err));
  EXPECT_EQ(err, "/nonexistent/nn.map: cannot open");
}

}  // namespace
}  // namespace madengine::perfmgr
