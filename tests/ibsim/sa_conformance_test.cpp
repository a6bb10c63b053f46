// SA conformance on ibsim (conformance.hpp): the same saquery commands
// against OpenSM 3.3.23 and against madengine's SA, each on a fabric it
// brought up itself from bare ibsim, madengine from OpenSM's guid2lid, with
// OpenSM and saquery over the RMPP layer (whole multi-MAD answers): every
// table whole (NR, PIR, LR, GIR, SWIR, LFTR, PR of every pair, SL2VL, VLAR,
// SMIR, MCMR, SR, IIR), then by LID and port (PIR by IsSM (-s), PKTR, CPI),
// PR by LIDs, by GIDs and by link-local GIDs, and queries both must refuse.
// Records are compared both ways, field by field, but for the fields in
// kNormalised, each scoped and with its reason. Runs on chain3 and on a
// 2-level fat tree (several equal-cost routes).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"
#include "saquery_records.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::MadengineRig;
using ibsim::conformance::ExpectedError;
using ibsim::conformance::Normalised;

// What differs between the two SMs here, and why.
constexpr Normalised kNormalised[] = {
    {"SMIR", "ActCount", "the activity counter of each SM's own run (IBA 14.2.5.13)"},
    {"-c", "Capability mask", "the optional features each SA advertises (madengine: docs/sa.md)"},
    {"-c", "Capability mask 2", "the optional features each SA advertises"},
    {"--smkey 1 PKTR", "Block",
     "OpenSM 3.3.23 writes the block number in host byte order (osm_sa_pkey_record.c) and saquery prints it "
     "unswapped; madengine sends it big-endian (IBA 15.2.5.11): saquery shows block 1 as 256 (docs/sa.md)"},
    {"PIR", "ClientReregister", "transient: set by each new master in its first sweep, read back as the SMA keeps it"},
    {"PIR", "*",
     "a switch port without a link: OpenSM 3.3.23 keeps only its states and reports zeros for the rest; madengine "
     "reports the PortInfo the port's SMA answered (docs/sa.md)",
     "PhysLinkState", "Polling"},
    // With QoS off OpenSM never reads a port's SL2VL or VLArb table and
    // answers zeros; madengine answers the tables it read back
    // (sa_tables_conformance_test asserts both; docs/sa.md).
    {"SL2VL", "VL#*", "OpenSM answers tables it never read (QoS off) as zeros; madengine the ports' own", "OutPort", "0"},
    {"VLAR", "VL#*", "OpenSM answers tables it never read (QoS off) as zeros; madengine the ports' own", "Port", "1"},
    {"VLAR", "Weight#*", "OpenSM answers tables it never read (QoS off) as zeros; madengine the ports' own", "Port",
     "1"},
};

// Whole tables: every record of each type.
const std::vector<std::string> kWholeTables = {"NR",    "PIR",  "LR",   "GIR", "SWIR", "LFTR", "PR",
                                               "SL2VL", "VLAR", "SMIR", "-g",  "-m",   "SR",   "IIR"};

// Whole SL2VL and VLArb tables: OpenSM lists one record for every input and
// output port pair of each switch and every port's VLArb blocks, from port
// objects it fills only when it programs QoS; madengine lists the tables its
// SM read (each CA port, a switch's port 0 VLArb; switch ports with
// sm.read_switch_port_tables or QoS). IBA 15.2.5.4, 15.2.5.9: the records
// are the ports' tables, which zeros never read misstate (docs/sa.md).
const ibsim::conformance::UnreadTables kUnread[] = {
    {"SL2VL", {"VL#"}, "switch SL2VL tables OpenSM never read, answered as zeros"},
    {"VLAR", {"VL#", "Weight#"}, "switch port VLArb tables OpenSM never read, answered as zeros"},
};

// Queries an SA must refuse, with the status saquery prints for each.
constexpr ExpectedError kExpectedErrors[] = {
    // P_KeyTableRecords answer trusted requests only (IBA 15.2.5.11, C15-0.2.2).
    {"PKTR 1/1/0", "SA_ERR_REQ_INVALID", "SA_ERR_REQ_INVALID"},
    // A GID no port has: OpenSM 3.3.23 works out ERR_REQ_INVALID_GID but
    // sends an empty table (a Get: ERR_NO_RECORDS); madengine sends the status.
    {"PR --sgid fe80::dead:beef --dgid fe80::dead:beef", "", "ERR_REQ_INVALID_GID",
     "IBA 15.2.5.16: a GID of no port is ERR_REQ_INVALID_GID (docs/sa.md)"},
};

struct Lids {
  std::vector<int> cas, switches, all;
};

// Each end port's LID and kind, from OpenSM's guid2lid and its NodeRecords.
Lids lids_of(const ibsim::conformance::OpenSmRun& osm, int max_lid) {
  Lids l;
  for (int lid = 1; lid <= max_lid; ++lid) {
    const auto it = osm.answers.find("NR " + std::to_string(lid));
    if (it == osm.answers.end() || it->second.exit_code != 0 || ibsim::parse_records(it->second.out).empty()) continue;
    const bool sw = it->second.out.find("Switch") != std::string::npos;
    (sw ? l.switches : l.cas).push_back(lid);
    l.all.push_back(lid);
  }
  return l;
}

// GIDs as saquery takes them: prefix and GUID ("fe80::2:c903:0:1").
std::string gid_of(const std::string& node_record) {
  const auto r = ibsim::parse_records(node_record);
  if (r.empty() || !r[0].contains("port_guid")) return {};
  const std::string g = r[0].at("port_guid");  // "0x0000000000100001"
  std::uint64_t v = std::stoull(g, nullptr, 16);
  char buf[64];
  std::snprintf(buf, sizeof buf, "fe80::%x:%x:%x:%x", static_cast<unsigned>(v >> 48 & 0xffff),
                static_cast<unsigned>(v >> 32 & 0xffff), static_cast<unsigned>(v >> 16 & 0xffff),
                static_cast<unsigned>(v & 0xffff));
  return buf;
}

// "--smkey 1 PKTR L/P/0" (block 0 named) of a switch port OpenSM's
// PortInfoRecord shows without a link. Asked for the port's whole table
// ("L/P"), both SAs answer none there.
bool unlinked_switch_port(const std::string& q, const ibsim::conformance::OpenSmRun& osm) {
  constexpr std::string_view kPrefix = "--smkey 1 PKTR ";
  if (q.rfind(kPrefix, 0) != 0 || std::count(q.begin(), q.end(), '/') != 2) return false;
  const std::string port = q.substr(kPrefix.size(), q.rfind('/') - kPrefix.size());  // "L/P"
  const auto it = osm.answers.find("PIR " + port);
  if (it == osm.answers.end()) return false;  // a CA port
  const auto r = ibsim::parse_records(it->second.out);
  return r.size() == 1 && r[0].contains("PhysLinkState") && r[0].at("PhysLinkState") == "Polling";
}

std::vector<std::string> record_queries(const Lids& l, int ports_per_switch) {
  // -s: the PortInfoRecords whose CapabilityMask has IsSM, then IsSMdisabled
  // (AttributeModifier bit 31: the mask's bits, not its value).
  std::vector<std::string> q = kWholeTables;
  for (const char* one : {"-c", "-s", "NR 999", "PR --slid 1 --dlid 999"}) q.push_back(one);
  for (const int lid : l.all) {
    const std::string s = std::to_string(lid);
    for (const char* r : {"NR ", "SWIR ", "LFTR ", "GIR "}) q.push_back(std::string(r) + s);
  }
  for (const int lid : l.cas) {
    const std::string s = std::to_string(lid);
    q.push_back("PIR " + s + "/1");
    q.push_back("LR " + s + "/1");
    q.push_back("--smkey 1 PKTR " + s + "/1");
  }
  for (const int lid : l.switches) {
    // Port 0's four VLArb blocks (zeros: no data VLs on a base port 0).
    q.push_back("VLAR " + std::to_string(lid) + "/0");
    for (int port = 0; port <= ports_per_switch; ++port) {
      const std::string s = std::to_string(lid) + "/" + std::to_string(port);
      q.push_back("PIR " + s);
      q.push_back("--smkey 1 PKTR " + s);
      q.push_back("--smkey 1 PKTR " + s + "/0");
      if (port != 0) q.push_back("LR " + s);
    }
  }
  // Paths by LID, as a Get, from the first end port to every other (every
  // pair: the whole "PR" table above).
  for (const int d : l.all) q.push_back("PR --slid " + std::to_string(l.all.front()) + " --dlid " + std::to_string(d));
  for (const auto& e : kExpectedErrors) q.push_back(e.query);
  return q;
}

// PathRecords named by GIDs (SGID|DGID, as IPoIB and rdma_cm ask), the
// subnet's prefix and a link-local one; added once the GUIDs are known.
std::vector<std::string> gid_queries(const std::vector<std::string>& gids) {
  std::vector<std::string> q;
  for (std::size_t i = 0; i + 1 < gids.size(); ++i)
    q.push_back("PR --sgid " + gids[i] + " --dgid " + gids.back());
  return q;
}

// Every LFT entry madengine programmed moves a packet one hop closer to its
// LID (min-hop), however it broke ties among equal-cost ports.
void expect_min_hop_lfts(const sa::Snapshot& s) {
  const auto& f = s.fabric;
  std::size_t entries = 0;
  for (const fabric::Lft& lft : s.lfts) {
    for (std::uint16_t lid = 1; lid < lft.ports.size(); ++lid) {
      const fabric::EndPort* dst = s.end_port_by_lid(lid);
      const std::uint8_t out = lft.ports[lid];
      if (dst == nullptr || out == fabric::kLftNoRoute) continue;
      const fabric::NodeId target = f.nodes[dst->node].is_switch() ? dst->node : f.nodes[dst->node].ports[dst->port].peer;
      // BFS hop counts between switches.
      auto dist = [&](fabric::NodeId from) {
        std::vector<int> d(f.nodes.size(), -1);
        std::vector<fabric::NodeId> queue{from};
        d[from] = 0;
        for (std::size_t i = 0; i < queue.size(); ++i)
          for (const auto& p : f.nodes[queue[i]].ports)
            if (p.linked() && f.nodes[p.peer].is_switch() && d[p.peer] < 0) {
              d[p.peer] = d[queue[i]] + 1;
              queue.push_back(p.peer);
            }
        return d;
      };
      const auto to_target = dist(target);
      if (lft.node == target) continue;
      ASSERT_LT(out, f.nodes[lft.node].ports.size());
      const fabric::Port& via = f.nodes[lft.node].ports[out];
      ASSERT_TRUE(via.linked()) << "LID " << lid << " out of an unlinked port";
      EXPECT_EQ(to_target[via.peer], to_target[lft.node] - 1) << "LID " << lid << " not on a shortest path";
      ++entries;
    }
  }
  EXPECT_GT(entries, 0u);
}

void run_conformance(const std::string& topology, const char* sm_host, const char* query_host, int max_lid,
                     int ports_per_switch, std::span<const Normalised> extra_rules = {}) {
  // First OpenSM: NodeRecords name the LIDs, then every query.
  std::vector<std::string> probe;
  for (int lid = 1; lid <= max_lid; ++lid) probe.push_back("NR " + std::to_string(lid));
  const auto first = ibsim::conformance::run_opensm(topology, sm_host, query_host, probe, {}, nullptr,
                                                    ibsim::conformance::kLayered);
  ASSERT_TRUE(first.ok) << first.error;
  const Lids lids = lids_of(first, max_lid);
  ASSERT_FALSE(lids.cas.empty());
  std::vector<std::string> gids;
  for (const int lid : lids.cas) gids.push_back(gid_of(first.answers.at("NR " + std::to_string(lid)).out));
  std::vector<std::string> qs = record_queries(lids, ports_per_switch);
  for (const auto& q : gid_queries(gids)) qs.push_back(q);
  const auto osm =
      ibsim::conformance::run_opensm(topology, sm_host, query_host, qs, {}, nullptr, ibsim::conformance::kLayered);
  ASSERT_TRUE(osm.ok) << osm.error;
  ASSERT_EQ(osm.guid2lid, first.guid2lid) << "OpenSM numbered the fabric differently on its second run";

  // Then madengine, on a fresh fabric, starting from OpenSM's guid2lid.
  IbsimFabric fabric(topology, ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  MadengineRig me;
  ASSERT_TRUE(me.start_from_opensm_lids(fabric, sm_host, osm.guid2lid)) << me.error;

  ibsim::conformance::Tally tally;
  std::size_t unlinked = 0;
  for (const auto& q : qs) {
    const auto b = ibsim::conformance::saquery_once(fabric, q, query_host);
    if (unlinked_switch_port(q, osm)) {
      // A deliberate difference: OpenSM 3.3.23 lists a switch port without a
      // link with a P_Key table of zeros it never read; madengine, which
      // reads (and programs) the tables of ports that carry traffic, lists none.
      const auto ra = ibsim::parse_records(osm.answers.at(q).out);
      ASSERT_FALSE(ra.empty()) << q << ": " << osm.answers.at(q).out;
      for (const auto& rec : ra) {
        for (const auto& [k, v] : rec) {
          if (k.rfind("text#", 0) == 0) {
            EXPECT_EQ(v.find_first_not_of("0x "), std::string::npos) << q << ": " << v;
          }
        }
      }
      EXPECT_EQ(b.exit_code, 0) << q << ": " << b.err;
      EXPECT_TRUE(ibsim::parse_records(b.out).empty()) << q << ": " << b.out;
      ++unlinked;
      continue;
    }
    std::vector<Normalised> rules(std::begin(kNormalised), std::end(kNormalised));
    rules.insert(rules.end(), extra_rules.begin(), extra_rules.end());
    const std::string diff = ibsim::conformance::compare(q, osm.answers.at(q), b, rules, kExpectedErrors, tally,
                                                         ibsim::conformance::by_record_key, kUnread);
    EXPECT_EQ(diff, "") << "saquery " << q << "\nOpenSM:\n" << osm.answers.at(q).out << osm.answers.at(q).err
                        << "\nmadengine:\n" << b.out << b.err;
    if (q.rfind("--smkey 1 PKTR", 0) == 0) {
      // The block numbers differ only by OpenSM's byte order: n and n << 8.
      auto ra = ibsim::parse_records(osm.answers.at(q).out), rb = ibsim::parse_records(b.out);
      std::sort(ra.begin(), ra.end(), ibsim::conformance::by_record_key);
      std::sort(rb.begin(), rb.end(), ibsim::conformance::by_record_key);
      for (std::size_t i = 0; i < std::min(ra.size(), rb.size()); ++i)
        EXPECT_EQ(std::stoi(rb[i]["Block"]), std::stoi(ra[i]["Block"]) << 8) << q << " record " << i;
    }
  }
  const auto t = me.sa().counters().total();
  std::printf("%s: %zu queries, %zu records equal, %zu refusals equal; madengine SA received %llu answered %llu "
              "dropped %llu\n",
              topology.c_str(), tally.queries, tally.records, tally.errors_matched,
              static_cast<unsigned long long>(t.received), static_cast<unsigned long long>(t.answered),
              static_cast<unsigned long long>(t.dropped));
  EXPECT_EQ(t.dropped, 0u);
  EXPECT_EQ(tally.errors_matched, std::size(kExpectedErrors));
  std::printf("%zu switch ports without a link: OpenSM's zero P_Key tables, no madengine record (deliberate)\n", unlinked);
  EXPECT_GT(tally.records, qs.size() / 2);
  expect_min_hop_lfts(*me.store().current());
}

TEST(SaConformance, Chain3SaquerySeesWhatOpenSmAnswers) {
  SKIP_WITHOUT_SHIM();
  run_conformance(ibsim::topology_path("chain3.topo"), "H1", "H2", 6, 4);
}

// Equal-cost routes: both SMs route min-hop, but break ties among ports
// their own way (OpenSM by its port counters, madengine by its own); the
// LFT entries may differ where several ports are as short, and
// expect_min_hop_lfts() checks every one of madengine's is a shortest path.
constexpr Normalised kFatTreeRules[] = {
    {"LFTR", "row *", "equal-cost ports: each SM balances its own way; madengine's are all shortest (checked)"},
    {"PIR", "LocalPort",
     "the port a switch's SMP arrived on when each SM read it: which of the equal-length directed routes each "
     "discovery reached the switch by first"},
};

// FDR, EDR and HDR links, 1x, 2x, 4x and 12x wide, hosts and switch links
// of different rates: every record, PathRecords' rates and MTUs included,
// as OpenSM answers them (both SMs read the extended speeds).
TEST(SaConformance, MixedSpeedsSaquerySeesWhatOpenSmAnswers) {
  SKIP_WITHOUT_SHIM();
  run_conformance(ibsim::topology_path("speeds.topo"), "H1", "H6", 9, 4);
}

TEST(SaConformance, FatTreeSaquerySeesWhatOpenSmAnswers) {
  SKIP_WITHOUT_SHIM();
  run_conformance(ibsim::topology_path("ft2x4.topo"), "H1", "H8", 16, 4, kFatTreeRules);
}

}  // namespace
}  // namespace madengine
