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

namespace {

struct Case {
  const char* speed_name;
  unsigned s, e, x;  // LinkSpeedEnabled, LinkSpeedExtEnabled, LinkSpeedExtEnabled2 masks
};
constexpr Case kSpeeds[] = {
    {"SDR", 1, 0, 0}, {"DDR", 2, 0, 0}, {"QDR", 4, 0, 0},  {"FDR", 7, 1, 0},
    {"EDR", 7, 2, 0}, {"HDR", 7, 4, 0}, {"NDR", 7, 8, 0}, {"XDR", 7, 8, 1},
};
constexpr unsigned kWidthMasks[] = {1, 16, 2, 4, 8};  // 1x 2x 4x 8x 12x
// IBA rate codes, [speed][width] in the orders above.
constexpr int kRate[8][5] = {
    {2, 5, 3, 6, 4},      {5, 3, 6, 7, 8},      {3, 6, 7, 9, 10},     {11, 19, 12, 13, 14},
    {15, 20, 16, 17, 18}, {20, 16, 17, 21, 22}, {16, 17, 21, 23, 24}, {17, 21, 23, 24, 24},
};

std::string opts(unsigned w, const Case& c) {
  std::string o = "\tw=" + std::to_string(w) + "\ts=" + std::to_string(c.s);
  if (c.e) o += "\te=" + std::to_string(c.e);
  if (c.x) o += "\tx=" + std::to_string(c.x);
  return o;
}

// S1 holds host pairs "A<i>"/"B<i>", pair i on width x speed i; S2 holds
// "X" (4x NDR) and hangs off S1 through a 4x HDR link; "N" on S1 is 4x NDR.
std::string topology() {
  std::string hosts, s1, s2;
  const Case ndr = kSpeeds[6], hdr = kSpeeds[5];
  unsigned port = 1;
  for (unsigned si = 0; si < 8; ++si)
    for (unsigned wi = 0; wi < 5; ++wi)
      for (const char* side : {"A", "B"}) {
        const std::string name = std::string(side) + std::to_string(si * 5 + wi);
        const std::string o = opts(kWidthMasks[wi], kSpeeds[si]);
        hosts += "Hca\t1 \"" + name + "\"\n[1]\t\"S1\"[" + std::to_string(port) + "]" + o + "\n\n";
        s1 += "[" + std::to_string(port++) + "]\t\"" + name + "\"[1]" + o + "\n";
      }
  hosts += "Hca\t1 \"N\"\n[1]\t\"S1\"[" + std::to_string(port) + "]" + opts(2, ndr) + "\n\n";
  s1 += "[" + std::to_string(port++) + "]\t\"N\"[1]" + opts(2, ndr) + "\n";
  s1 += "[" + std::to_string(port) + "]\t\"S2\"[1]" + opts(2, hdr) + "\n";
  s2 += "[1]\t\"S1\"[" + std::to_string(port) + "]" + opts(2, hdr) + "\n";
  hosts += "Hca\t1 \"X\"\n[1]\t\"S2\"[2]" + opts(2, ndr) + "\n\n";
  s2 += "[2]\t\"X\"[1]" + opts(2, ndr) + "\n";
  return hosts + "Switch\t" + std::to_string(port) + " \"S1\"\n" + s1 + "\nSwitch\t2 \"S2\"\n" + s2;
}

TEST(LinkRates, EveryWidthAndSpeedThroughTheCAbi) {
  char dir[] = "/tmp/me-link-rate-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/links.topo";
  std::ofstream(path) << topology();
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

  for (unsigned si = 0; si < 8; ++si)
    for (unsigned wi = 0; wi < 5; ++wi) {
      const std::string a = "A" + std::to_string(si * 5 + wi), b = "B" + std::to_string(si * 5 + wi);
      const std::string what = std::string(kSpeeds[si].speed_name) + " width mask " + std::to_string(kWidthMasks[wi]);
      ASSERT_NE(lid[a], 0) << what;
      me_path p;
      ASSERT_EQ(me_path_query(node, lid[a], lid[b], &p), ME_OK) << what << ": " << me_last_error();
      EXPECT_EQ(p.rate, kRate[si][wi]) << what;
      EXPECT_EQ(link[a].link_rate, kRate[si][wi]) << what;
      EXPECT_EQ(link[a].width, kWidthMasks[wi]) << what;
      EXPECT_EQ(link[a].speed_ext, kSpeeds[si].x ? 8u : kSpeeds[si].e) << what;
      EXPECT_EQ(link[a].speed_ext2, kSpeeds[si].x) << what;
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
