// The example vendor SM (examples/vendor_sm: C ABI, libmadengine.so) as the
// SM of an ibsim fat tree (label ibsim): `ibroute` on every switch shows
// exactly the LFTs its routing callback computed (d-mod-k over the two
// spines, H8 quarantined), `saquery PR` follows them (no path to H8, a path
// to the others), its vendor class 0x09 answers a client on another host,
// and SIGTERM stops it cleanly.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "madengine/wire/mad.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::wait_until;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "0xGUID LID PORT" lines -> [switch GUID][LID] = port.
using Lfts = std::map<std::uint64_t, std::map<unsigned, unsigned>>;
Lfts parse_lfts(const std::string& text) {
  Lfts out;
  std::istringstream in(text);
  std::string guid;
  unsigned lid = 0, port = 0;
  while (in >> guid >> lid >> port) out[std::stoull(guid, nullptr, 16)][lid] = port;
  return out;
}

// ibroute's unicast table: "0x0003 002 : (Channel Adapter portguid ...)" -> [LID] = port.
std::map<unsigned, unsigned> parse_ibroute(const std::string& text) {
  std::map<unsigned, unsigned> out;
  static const std::regex line(R"(^0x([0-9a-fA-F]+) (\d+) :)");
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out[std::stoul(m[1].str(), nullptr, 16)] = std::stoul(m[2].str());
  }
  return out;
}

TEST(VendorSmIbsim, IbrouteShowsItsLftsAndSaqueryFollowsThem) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("ft2x4.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  const std::string dir = fabric.work_dir();
  {
    std::ofstream cfg(dir + "/node.toml");
    cfg << "[transport]\nkind = \"umad\"\n[engine]\ncores = 1\npin = false\n[log]\nlevel = \"warn\"\n";
  }
  const std::string sm = std::string("\"") + VENDOR_SM_BIN + "\" --config node.toml";

  // A first run names the ports (and numbers the fabric, which the second keeps).
  const auto listed = fabric.run(sm + " --list", "H1", 90s);
  ASSERT_EQ(listed.exit_code, 0) << listed.out << listed.err;
  std::map<std::string, std::pair<std::uint64_t, unsigned>> ports;  // node -> (port GUID, LID)
  static const std::regex port_line(R"(vendor_sm: port (0x[0-9a-f]+) LID (\d+) node '(\w+))");
  for (std::sregex_iterator it(listed.out.begin(), listed.out.end(), port_line), end; it != end; ++it)
    ports[(*it)[3].str()] = {std::stoull((*it)[1].str(), nullptr, 16), std::stoul((*it)[2].str())};
  ASSERT_EQ(ports.size(), 8u) << listed.out;

  // The vendor SM in the background on H1, H8 quarantined.
  char quarantine[32];
  std::snprintf(quarantine, sizeof quarantine, "0x%016llx", static_cast<unsigned long long>(ports["H8"].first));
  const IbsimFabric::Background vendor = fabric.start_background(
      sm + " --quarantine " + quarantine + " --lfts lfts.txt --run-ms 120000", "vendor.log", "H1");
  ASSERT_GT(vendor.pid(), 0);
  ASSERT_TRUE(wait_until([&] { return read_file(dir + "/vendor.log").find("vendor_sm: ready") != std::string::npos; }, 90s))
      << read_file(dir + "/vendor.log");

  // ibroute on each switch shows what the routing callback computed.
  const Lfts lfts = parse_lfts(read_file(dir + "/lfts.txt"));
  ASSERT_EQ(lfts.size(), 6u) << "4 leaves and 2 spines";
  for (const auto& [guid, table] : lfts) {
    char g[32];
    std::snprintf(g, sizeof g, "0x%016llx", static_cast<unsigned long long>(guid));
    const auto r = fabric.run(std::string("ibroute -G ") + g, "H2", 20s);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(parse_ibroute(r.out), table) << "switch " << g << ":\n" << r.out;
    EXPECT_EQ(table.count(ports["H8"].second), 0u) << "the quarantined LID is routed by switch " << g;
  }
  // Two hosts on different leaves share one spine on some of their paths only
  // under d-mod-k: the two uplinks of leaf L1 both carry traffic.
  std::map<unsigned, unsigned> uplinks;
  for (const auto& [guid, table] : lfts)
    for (const auto& [lid, port] : table)
      if (port >= 3) ++uplinks[port];
  EXPECT_GT(uplinks[3], 0u);
  EXPECT_GT(uplinks[4], 0u);

  // saquery PR follows them: from H2, a path to H5, none to the quarantined H8.
  const auto to_h5 = fabric.run("saquery PR --slid " + std::to_string(ports["H1"].second) + " --dlid " +
                                    std::to_string(ports["H5"].second),
                                "H2", 20s);
  std::smatch dlid;
  static const std::regex dlid_line(R"(\n\s*dlid\.+(\d+))");
  ASSERT_TRUE(std::regex_search(to_h5.out, dlid, dlid_line)) << to_h5.out << to_h5.err;
  EXPECT_EQ(std::stoul(dlid[1].str()), ports["H5"].second) << to_h5.out;
  const auto to_h8 = fabric.run("saquery PR --slid " + std::to_string(ports["H1"].second) + " --dlid " +
                                    std::to_string(ports["H8"].second),
                                "H2", 20s);
  EXPECT_EQ(to_h8.out.find("dlid"), std::string::npos) << "a PathRecord to the quarantined host:\n" << to_h8.out;

  // The vendor class: a client on H3 asks Get(0x0010) of class 0x09.
  fabric.attach_self("H3");
  SteadyClock clock;
  UmadTransport client({}, clock);
  // The client registers the class too: the shim hands a response to the
  // agent of its class (and crashes on a class nobody registered).
  ASSERT_TRUE(client.open(AgentSpec{.gsi_client = true, .vendor_classes = {0x09}})) << client.last_error();
  MadBuf req{};
  req.hdr().base_version = 1;
  req.hdr().mgmt_class = 0x09;
  req.hdr().class_version = 1;
  req.hdr().method = wire::method::kGet;
  req.hdr().tid = wire::be64::from(0x5a5a0001ull);
  req.hdr().attr_id = wire::be16::from(0x0010);
  req.addr.lid = static_cast<std::uint16_t>(ports["H1"].second);
  req.addr.remote_qpn = 1;
  req.addr.qkey = kGsiQkey;
  req.resp_timeout_ms = 1000;
  MadBuf* out[] = {&req};
  ASSERT_EQ(client.tx_burst(out), 1u);
  MadBuf resp{};
  MadBuf* in[] = {&resp};
  const bool answered = wait_until([&] { return client.rx_burst(in) == 1; }, 10s, 1ms);
  ASSERT_TRUE(answered) << "no answer to the vendor class request";
  EXPECT_EQ(resp.hdr().mgmt_class, 0x09);
  EXPECT_EQ(resp.hdr().method, wire::method::kGetResp);
  EXPECT_EQ(resp.hdr().status.get(), 0);
  EXPECT_EQ(std::strncmp(reinterpret_cast<const char*>(resp.mad.bytes.data() + 24), "madengine vendor_sm example", 27), 0);
  client.close();

  // SIGTERM: the example stops the node and frees it.
  ASSERT_EQ(::kill(vendor.pid(), SIGTERM), 0);
  EXPECT_TRUE(wait_until([&] { return read_file(dir + "/vendor.log").find("vendor_sm: stopped") != std::string::npos; }, 30s))
      << read_file(dir + "/vendor.log");
}

}  // namespace
}  // namespace madengine
