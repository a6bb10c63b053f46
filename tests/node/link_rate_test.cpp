// PathRecord rates on today's links, through the C ABI on the sim: for every
// width (1x 2x 4x 8x 12x) and speed (SDR to XDR), two hosts on one switch
// with both ends of each link enabling just that width and speed (ibsim's
// per-port masks, "x=" for XDR) get IBA's rate code; a path across a slower
// link between switches gets that link's rate; me_fabric_port_link shows the
// extended speeds. The SM reads and writes PortInfo with SMSupportExtended-
// Speeds, without which the sim's NDR and XDR ports hide their speeds.
#include "madengine/madengine.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "speed_pairs.hpp"

namespace {

using madengine::testing::kPairSpeeds;
using madengine::testing::kPairWidths;
using madengine::testing::kSpeedPairRate;

TEST(LinkRates, EveryWidthAndSpeedThroughTheCAbi) {
  char dir[] = "/tmp/me-link-rate-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/links.topo";
  std::ofstream(path) << madengine::testing::speed_pairs_topology();
  const std::string cfg = "[transport]\nkind = \"sim\"\ntopology = \"" + path +
                          "\"\nsim_node = \"N\"\nsim_speed = 0.0\n[engine]\ncores = 1\npin = false\n";
  char err[256];
  me_node* node = me_node_create(cfg.c_str(), err, sizeof err);
  ASSERT_NE(node, nullptr) << err;
  ASSERT_EQ(me_node_start(node), ME_OK) << me_last_error();
  ASSERT_EQ(me_node_wait_subnet_up(node, 60'000), ME_OK) << me_last_error();

  me_fabric* f = me_node_fabric(node);
  ASSERT_NE(f, nullptr);
  std::map<std::string, std::uint16_t> lid;
  std::map<std::string, me_port_link> link;
  for (std::uint32_t n = 0; n < me_fabric_node_count(f); ++n) {
    me_node_info ni;
    me_port_info pi;
    me_port_link pl;
    ASSERT_EQ(me_fabric_node(f, n, &ni), ME_OK);
    if (ni.type != ME_NODE_CA) continue;
    ASSERT_EQ(me_fabric_port(f, n, 1, &pi), ME_OK);
    ASSERT_EQ(me_fabric_port_link(f, n, 1, &pl), ME_OK);
    lid[ni.description] = pi.lid;
    link[ni.description] = pl;
  }
  me_fabric_release(f);

  for (unsigned si = 0; si < kPairSpeeds.size(); ++si)
    for (unsigned wi = 0; wi < kPairWidths.size(); ++wi) {
      const std::string a = "A" + std::to_string(si * 5 + wi), b = "B" + std::to_string(si * 5 + wi);
      const std::string what = std::string(kPairSpeeds[si].name) + " width mask " + std::to_string(kPairWidths[wi]);
      ASSERT_NE(lid[a], 0) << what;
      me_path p;
      ASSERT_EQ(me_path_query(node, lid[a], lid[b], &p), ME_OK) << what << ": " << me_last_error();
      EXPECT_EQ(p.rate, kSpeedPairRate[si][wi]) << what;
      EXPECT_EQ(link[a].link_rate, kSpeedPairRate[si][wi]) << what;
      EXPECT_EQ(link[a].width, kPairWidths[wi]) << what;
      EXPECT_EQ(link[a].speed_ext, kPairSpeeds[si].x ? 8u : kPairSpeeds[si].e) << what;
      EXPECT_EQ(link[a].speed_ext2, kPairSpeeds[si].x) << what;
      // NDR and XDR hosts are today's hardware: MTU 4096; the rest as ibsim (2048).
      EXPECT_EQ(p.mtu, si >= 6 ? 5 : 4) << what;
    }
  me_path p;
  ASSERT_EQ(me_path_query(node, lid["X"], lid["N"], &p), ME_OK) << me_last_error();
  EXPECT_EQ(p.rate, 17) << "4x NDR, 4x HDR, 4x NDR: the HDR link's 200 Gb/s";
  EXPECT_EQ(p.hops, 1);
  ASSERT_EQ(me_path_query(node, lid["N"], lid["X"], &p), ME_OK) << me_last_error();
  EXPECT_EQ(p.rate, 17);
  EXPECT_EQ(link["N"].data_mbps, 400000u);
  me_node_destroy(node);
  std::remove(path.c_str());
  std::remove(dir);
}

}  // namespace
