// GID-addressed SA queries on ibsim (label ibsim), with the method of
// conformance.hpp: OpenSM 3.3.23 and madengine each bring up their own bare
// 2-level fat tree (ft2x4), madengine from OpenSM's guid2lid, both with the
// same subnet prefix: IBA's default (fe80::/64) or a site prefix
// (fec0:0:0:1::/64, OpenSM's subnet_prefix option, madengine's
// sm.subnet_prefix). Compared field by field, each query once:
//  * PortInfoRecords of every CA (GidPrefix is what the SM wrote);
//  * PathRecords by SGID and DGID from two sources to every CA, in the
//    configured prefix and, with a site prefix, in the link-local form both
//    SAs also accept;
//  * the "half world" GetTable (PathRecord, SGID|NumbPath: every path from
//    one source), from our own client on H3 that acknowledges RMPP segments
//    itself: both SAs answer it with status 0 and a whole transfer (OpenSM's
//    segmented by the RMPP layer, as by the kernel) of one path to every end
//    port, the same records byte for byte.
// Every process runs over the RMPP layer (conformance.hpp), madengine's too.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/rmpp.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa_records.hpp"
#include "madengine_rig.hpp"
#include "saquery_records.hpp"
#include "umad_sa_client.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::MadengineRig;
using ibsim::Outcome;
using ibsim::conformance::Normalised;

constexpr const char* kChildEnv = "MADENGINE_GID_TABLE_CHILD";
constexpr int kCas = 8;           // ft2x4: H1..H8
constexpr int kEndPorts = 8 + 6;  // and 6 switches, each one end port (port 0)
constexpr int kMaxLid = 16;

// ---- the half-world GetTable client (a child process on a host) ----

// Prints "status S" for the first answer and, when it is an RMPP transfer,
// "records N" once every segment came (each acknowledged, window 16).
TEST(SaGidTableClient, HalfWorldGetTable) {
  if (std::getenv(kChildEnv) == nullptr) GTEST_SKIP() << "runs only as a child of SaGidConformance";
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();
  const LocalPort lp = t.local_port();
  wire::PathRecord pr{};
  pr.sgid = {wire::be64::from(lp.subnet_prefix), wire::be64::from(lp.port_guid)};
  pr.set_numb_path(1);
  constexpr std::uint32_t kTid = 0x6e1d;
  wire::SaMad sa = wire::make_sa_request(wire::method::kGetTable, wire::sa_attr::kPathRecord, kTid,
                                         wire::path_record_cm::kSGid | wire::path_record_cm::kNumbPath, std::uint8_t{0});
  wire::encode(pr, std::span<std::uint8_t>(sa.data));
  MadBuf req = ibsim::sa_request_to_sm(sa, lp);
  MadBuf* out[] = {&req};
  ASSERT_EQ(t.tx_burst(std::span<MadBuf* const>(out, 1)), 1u);

  std::vector<std::uint8_t> payload;
  std::uint32_t next_seg = 1;
  std::uint16_t attr_offset = 0;
  bool first = true;
  MadBuf rx[8];
  MadBuf* rxp[8];
  for (int i = 0; i < 8; ++i) rxp[i] = &rx[i];
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{t.fd(), POLLIN, 0};
    ::poll(&p, 1, 50);
    const std::size_t n = t.rx_burst(std::span<MadBuf*>(rxp, 8));
    for (std::size_t i = 0; i < n; ++i) {
      MadBuf& m = rx[i];
      if (!m.hdr().is_response() || static_cast<std::uint32_t>(m.hdr().tid.get()) != kTid) continue;
      const auto& s = m.as<wire::SaMad>();
      if (first) {
        std::printf("status %u rmpp %u\n", s.hdr.status.get(), s.rmpp.version);
        first = false;
        if (s.hdr.status.get() != 0 || s.rmpp.version != 1) {
          std::fflush(stdout);
          return;  // refused, or not a transfer we can follow (OpenSM through the shim)
        }
        attr_offset = s.attr_offset.get();
      }
      if (s.rmpp.rmpp_type() != wire::RmppType::kData || s.rmpp.data1.get() != next_seg) continue;
      const bool last = (s.rmpp.flags() & wire::rmpp_flag::kLast) != 0;
      // The last segment's PayloadLength counts its SA header fields (20 bytes) and data.
      const std::size_t bytes = last ? s.rmpp.data2.get() - (kRmppSegmentPayload - wire::kSaDataSize) : wire::kSaDataSize;
      payload.insert(payload.end(), s.data.begin(), s.data.begin() + std::min(bytes, s.data.size()));
      MadBuf ack = m;
      ack.hdr().method = static_cast<std::uint8_t>(m.hdr().method ^ wire::method::kResponse);
      ack.hdr().status = wire::be16::from(0);
      auto& ar = ack.as<wire::SaMad>();
      ar.rmpp.type = static_cast<std::uint8_t>(wire::RmppType::kAck);
      ar.rmpp.set_flags(0, wire::rmpp_flag::kActive);
      ar.rmpp.data1 = wire::be32::from(next_seg);
      ar.rmpp.data2 = wire::be32::from(next_seg + 16);
      ar.data.fill(0);
      MadBuf* a[] = {&ack};
      ASSERT_EQ(t.tx_burst(std::span<MadBuf* const>(a, 1)), 1u);
      ++next_seg;
      if (last) {
        const std::size_t records = wire::table_record_count(payload.size(), attr_offset);
        std::printf("records %zu\n", records);
        for (std::size_t r = 0; r < records; ++r) {  // each record's bytes, compared field by field by the parent
          std::printf("path ");
          for (const std::uint8_t b : *wire::table_record_bytes(payload, attr_offset, r)) std::printf("%02x", b);
          std::printf("\n");
        }
        std::fflush(stdout);
        return;
      }
    }
  }
  std::printf("%s\n", first ? "no answer" : "transfer incomplete");
  std::fflush(stdout);
}

// ---- the comparison ----

struct Prefix {
  const char* name;
  std::uint64_t value;
  const char* text;  // as saquery prints and takes it: the GID's upper 64 bits
};
constexpr Prefix kDefault{"Default", 0xfe80'0000'0000'0000ull, "fe80::"};
constexpr Prefix kSite{"Site", 0xfec0'0000'0000'0001ull, "fec0:0:0:1:"};

std::string gid_text(const Prefix& p, const std::string& guid_hex) {
  // guid_hex "0x0000000000100001" -> prefix + "0:0:10:1" (16-bit groups).
  const std::uint64_t g = std::strtoull(guid_hex.c_str(), nullptr, 16);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%x:%x:%x:%x", p.text, unsigned(g >> 48), unsigned((g >> 32) & 0xffff),
                unsigned((g >> 16) & 0xffff), unsigned(g & 0xffff));
  return buf;
}

struct Ca {
  int lid;
  std::string guid;  // port_guid as saquery prints it
};

std::vector<Ca> cas_of(const std::map<std::string, Outcome>& nr) {
  std::vector<Ca> out;
  for (int lid = 1; lid <= kMaxLid; ++lid) {
    const auto it = nr.find("NR " + std::to_string(lid));
    if (it == nr.end()) continue;
    const auto recs = ibsim::parse_records(it->second.out);
    if (recs.size() != 1 || !recs[0].contains("port_guid") || it->second.out.find("Switch") != std::string::npos) continue;
    out.push_back({lid, recs[0].at("port_guid")});
  }
  return out;
}

std::vector<std::string> queries(const std::vector<Ca>& cas, const Prefix& p) {
  std::vector<std::string> q;
  for (const Ca& c : cas) q.push_back("PIR " + std::to_string(c.lid) + "/1");
  for (std::size_t s = 0; s < 2 && s < cas.size(); ++s)
    for (const Ca& d : cas) q.push_back("PR --sgid " + gid_text(p, cas[s].guid) + " --dgid " + gid_text(p, d.guid));
  if (p.value != kDefault.value)
    for (std::size_t d = 0; d < 2 && d < cas.size(); ++d)
      q.push_back("PR --sgid " + gid_text(kDefault, cas[2].guid) + " --dgid " + gid_text(kDefault, cas[d].guid));
  return q;
}

// The half-world client's output on H3 under `f`'s SA.
std::string half_world(const IbsimFabric& f) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const auto r = f.run(std::string(kChildEnv) + "=1 '" + self + "' --gtest_filter=SaGidTableClient.HalfWorldGetTable", "H3",
                       30s);
  return r.out + r.err;
}

// What differs between the two SMs here, and why (as in sa_conformance_test.cpp).
constexpr Normalised kNormalised[] = {
    {"PIR", "ClientReregister", "transient: set by each new master in its first sweep, read back as the SMA keeps it"},
};

class SaGidConformance : public ::testing::TestWithParam<Prefix> {};

TEST_P(SaGidConformance, GidQueriesAsFromOpenSm) {
  SKIP_WITHOUT_SHIM();
  const Prefix p = GetParam();
  const std::string topo = ibsim::topology_path("ft2x4.topo");
  std::vector<std::string> osm_args;
  std::string opts_file;
  if (p.value != kDefault.value) {
    opts_file = (std::filesystem::temp_directory_path() / ("madengine-gid-opts-" + std::to_string(getpid()))).string();
    char line[64];
    std::snprintf(line, sizeof line, "subnet_prefix 0x%016llx\n", static_cast<unsigned long long>(p.value));
    std::ofstream(opts_file) << line;
    osm_args = {"-F", opts_file};
  }
  std::vector<std::string> probe;
  for (int lid = 1; lid <= kMaxLid; ++lid) probe.push_back("NR " + std::to_string(lid));
  const auto first = ibsim::conformance::run_opensm(topo, "H1", "H2", probe, osm_args, nullptr,
                                                    ibsim::conformance::kLayered);
  ASSERT_TRUE(first.ok) << first.error;
  const std::vector<Ca> cas = cas_of(first.answers);
  ASSERT_EQ(cas.size(), std::size_t{kCas});
  const auto qs = queries(cas, p);
  std::string osm_table;
  const auto osm = ibsim::conformance::run_opensm(topo, "H1", "H2", qs, osm_args,
                                                  [&](const IbsimFabric& f) { osm_table = half_world(f); },
                                                  ibsim::conformance::kLayered);
  ASSERT_TRUE(osm.ok) << osm.error;
  if (!opts_file.empty()) std::filesystem::remove(opts_file);

  IbsimFabric fabric(topo, ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  MadengineRig me;
  node::NodeConfig cfg = MadengineRig::opensm_keyed();
  cfg.sm.ports.subnet_prefix = p.value;
  ASSERT_TRUE(me.start_from_opensm_lids(fabric, "H1", osm.guid2lid, cfg)) << me.error;

  ibsim::conformance::Tally tally;
  for (const auto& q : qs) {
    const Outcome b = ibsim::conformance::saquery_once(fabric, q, "H2");
    const Outcome& a = osm.answers.at(q);
    const std::string diff = ibsim::conformance::compare(q, a, b, kNormalised, {}, tally);
    EXPECT_EQ(diff, "") << "saquery " << q << "\nOpenSM:\n" << a.out << a.err << "\nmadengine:\n" << b.out << b.err;
  }
  // The prefix is on the wire: every CA's PortInfo shows it under both SMs.
  char want[32];
  std::snprintf(want, sizeof want, "0x%016llx", static_cast<unsigned long long>(p.value));
  for (const Ca& c : cas)
    EXPECT_NE(osm.answers.at("PIR " + std::to_string(c.lid) + "/1").out.find(want), std::string::npos) << c.lid;

  const std::string ours_table = half_world(fabric);
  for (const bool is_osm : {true, false}) {
    const std::string* t = is_osm ? &osm_table : &ours_table;
    const char* who = is_osm ? "OpenSM" : "madengine";
    EXPECT_NE(t->find("status 0 rmpp 1"), std::string::npos) << who << ": " << *t;
    EXPECT_NE(t->find("records " + std::to_string(kEndPorts) + "\n"), std::string::npos) << who << ": " << *t;
  }
  // The same PathRecords, in any order: both SAs route the same LIDs alike.
  const auto paths = [](const std::string& out) {
    std::vector<std::string> r;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("path ", 0) == 0) r.push_back(line);
    std::sort(r.begin(), r.end());
    return r;
  };
  EXPECT_EQ(paths(osm_table).size(), std::size_t{kEndPorts}) << osm_table;
  EXPECT_EQ(paths(ours_table), paths(osm_table)) << "OpenSM:\n" << osm_table << "madengine:\n" << ours_table;
  const auto result_lines = [](const std::string& out) {  // the client's lines, without gtest's
    std::string r;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("status ", 0) == 0 || line.rfind("records ", 0) == 0) r += (r.empty() ? "" : ", ") + line;
    return r;
  };
  std::printf("%s prefix: %zu queries, %zu records equal; half-world GetTable from H3: OpenSM %s; madengine %s\n",
              p.name, tally.queries, tally.records, result_lines(osm_table).c_str(), result_lines(ours_table).c_str());
  EXPECT_EQ(tally.queries, qs.size());
  EXPECT_GE(tally.records, qs.size());
}

INSTANTIATE_TEST_SUITE_P(Prefixes, SaGidConformance, ::testing::Values(kDefault, kSite),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace madengine
