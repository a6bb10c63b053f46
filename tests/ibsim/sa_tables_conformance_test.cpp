// SL2VL, VLArb and GUIDInfo against OpenSM 3.3.23 on ibsim, by the
// conformance method (conformance.hpp): each SM brings up its own fresh
// fabric from bare ibsim, madengine from OpenSM's guid2lid; OpenSM and
// saquery over the RMPP layer; every query runs once; records are counted
// and compared field by field both ways.
//
// QoS on: `opensm -Q` with an options file (-F) and a qos-policy (-Y), and
// madengine with the same qos_* options and policy file in its own keys: what each SM wrote
// (`smpquery sl2vl` and `vlarb` of every CA port and linked switch port),
// what each SA answers (`saquery SL2VL`, `VLAR`, `GIR`, by port and whole), and PathRecord SLs
// from the policy, between every pair of CA ports, with and without a
// ServiceID and a requested SL.
//
// QoS off: neither SM writes a table (`smpquery` shows ibsim's own on both
// fabrics); OpenSM's SA answers all-zero SL2VL/VLArb records (tables it
// never read) where madengine's reads the ports back and answers what
// `smpquery` shows: a deliberate difference, asserted as such.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <sstream>
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
using ibsim::Outcome;
using ibsim::conformance::ExpectedError;
using ibsim::conformance::Normalised;

// The options, as OpenSM's options file has them ("key value") and as
// madengine's configuration takes them (the same names and values).
const std::vector<std::pair<std::string, std::string>> kQosOptions = {
    {"qos_high_limit", "2"},
    {"qos_vlarb_high", "0:8,1:4"},
    {"qos_vlarb_low", "0:0,1:16,2:8,3:4"},
    {"qos_sl2vl", "0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0"},
    {"qos_ca_sl2vl", "1,1,1,1,2,2,2,2,3,3,3,3,0,0,0,0"},
    {"qos_swe_vlarb_low", "0:4,1:4,2:4,3:4"},
};

// H2's port (0x100003) as a destination gets SL 2; ServiceIDs 0x1000-0x1fff SL 1 at 1024 bytes.
constexpr const char* kPolicy =
    "port-groups\n"
    "  port-group\n"
    "    name: h2\n"
    "    port-guid: 0x0000000000100003\n"
    "  end-port-group\n"
    "end-port-groups\n"
    "qos-levels\n"
    "  qos-level\n"
    "    name: DEFAULT\n"
    "    sl: 0\n"
    "  end-qos-level\n"
    "  qos-level\n"
    "    name: to-h2\n"
    "    sl: 2\n"
    "  end-qos-level\n"
    "  qos-level\n"
    "    name: service\n"
    "    sl: 1\n"
    "    mtu-limit: 3\n"
    "  end-qos-level\n"
    "end-qos-levels\n"
    "qos-match-rules\n"
    "  qos-match-rule\n"
    "    service-id: 0x1000-0x1fff\n"
    "    qos-level-name: service\n"
    "  end-qos-match-rule\n"
    "  qos-match-rule\n"
    "    destination: h2\n"
    "    qos-level-name: to-h2\n"
    "  end-qos-match-rule\n"
    "end-qos-match-rules\n";

// Whole tables: OpenSM's records of S1's port without a link (and port 0 as
// an output port), zeros it keeps for tables it neither wrote nor read;
// madengine lists the tables it wrote and read (docs/sa.md).
const ibsim::conformance::UnreadTables kUnread[] = {
    {"SL2VL", {"VL#"}, "switch port pairs OpenSM neither programmed nor read, answered as zeros"},
    {"VLAR", {"VL#", "Weight#"}, "switch ports OpenSM neither programmed nor read, answered as zeros"},
};

// The rig's configuration with QoS on: the options and the policy file
// through the daemon's own keys ([sm] qos, qos_policy_file, qos_*).
node::NodeConfig qos_node_config(const std::string& policy_file) {
  std::string toml = "[sm]\nqos = true\nqos_policy_file = \"" + policy_file + "\"\n";
  for (const auto& [k, v] : kQosOptions)
    toml += k + " = " + (v.find_first_not_of("0123456789") == std::string::npos ? v : "\"" + v + "\"") + "\n";
  const node::NodeConfig parsed = node::parse_config(toml, "qos.toml");
  node::NodeConfig c = MadengineRig::opensm_keyed();
  c.sm.qos = parsed.sm.qos;
  c.sm.qos_policy_file = parsed.sm.qos_policy_file;
  c.sm.qos_all = parsed.sm.qos_all;
  c.sm.qos_ca = parsed.sm.qos_ca;
  c.sm.qos_sw0 = parsed.sm.qos_sw0;
  c.sm.qos_swe = parsed.sm.qos_swe;
  c.sm.qos_rtr = parsed.sm.qos_rtr;
  return c;
}

// star3: H1 - S1 - {H2, H3}. DR paths from H1 to every CA port, and S1's linked ports.
const std::vector<std::string> kCaPaths = {"0", "0,1,2", "0,1,3"};
constexpr int kSwitchLinkedPorts = 3;

std::vector<std::string> smp_commands() {
  std::vector<std::string> c;
  for (const auto& p : kCaPaths) {
    c.push_back("smpquery -D sl2vl " + p);
    c.push_back("smpquery -D vlarb " + p);
  }
  for (int port = 1; port <= kSwitchLinkedPorts; ++port) {
    c.push_back("smpquery -D sl2vl 0,1 " + std::to_string(port));
    c.push_back("smpquery -D vlarb 0,1 " + std::to_string(port));
  }
  return c;
}

// By port. Not asked: S1's port 4 (no link: OpenSM reports zeros it keeps
// for it, madengine neither reads nor writes it) and port 0 as an output
// port (a base port 0 has no data VLs: both SAs answer zeros, compared in
// sa_conformance_test.cpp). With QoS on, the whole tables too.
std::vector<std::string> sa_queries(const std::vector<int>& cas, int sw, bool paths) {
  std::vector<std::string> q;
  for (const int lid : cas) {
    const std::string s = std::to_string(lid);
    q.push_back("SL2VL " + s);
    q.push_back("VLAR " + s + "/1");
    q.push_back("GIR " + s);
  }
  const std::string s = std::to_string(sw);
  for (int out = 1; out <= kSwitchLinkedPorts; ++out) {
    for (int in = 0; in <= 4; ++in) q.push_back("SL2VL " + s + "/" + std::to_string(in) + "/" + std::to_string(out));
    q.push_back("VLAR " + s + "/" + std::to_string(out));
  }
  q.push_back("GIR " + s);
  if (!paths) return q;
  q.push_back("SL2VL");
  q.push_back("VLAR");
  for (const int a : cas)
    for (const int b : cas) {
      const std::string pr = "PR --slid " + std::to_string(a) + " --dlid " + std::to_string(b);
      q.push_back(pr);
      q.push_back(pr + " --service_id 0x1234");
      q.push_back(pr + " --sl 2");
    }
  return q;
}

// LIDs from OpenSM's guid2lid (S1 is 0x200000).
void lids_of(const std::string& guid2lid, std::vector<int>& cas, int& sw) {
  std::istringstream in(guid2lid);
  std::string guid, lo, hi;
  while (in >> guid >> lo >> hi) {
    const int lid = std::stoi(lo, nullptr, 16);
    if (std::stoull(guid, nullptr, 16) == 0x200000ull) sw = lid;
    else cas.push_back(lid);
  }
  std::sort(cas.begin(), cas.end());
}

struct SmRun {
  std::map<std::string, std::string> smp;
  std::map<std::string, Outcome> sa;
};

// madengine on a fresh fabric from OpenSM's guid2lid, `cfg` completed here;
// `tweak` adjusts the SM's own configuration.
void run_madengine(const std::string& topo, const std::string& guid2lid, node::NodeConfig cfg,
                   std::function<void(sm::SmConfig&)> tweak, const std::vector<std::string>& queries, SmRun& out,
                   std::uint64_t& table_smps) {
  IbsimFabric fabric(topo, ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  MadengineRig me;
  ASSERT_TRUE(me.start_from_opensm_lids(fabric, "H1", guid2lid, cfg, std::move(tweak))) << me.error;
  const auto st = me.sm().status().last_heavy;
  EXPECT_EQ(st.bringup.errors + st.qos.errors, 0u);
  table_smps = st.tables_smps + st.qos.smps;
  out.smp = ibsim::conformance::run_each(fabric, smp_commands(), "H1");
  for (const auto& q : queries) out.sa[q] = ibsim::conformance::saquery_once(fabric, q, "H2");
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("madengine-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(SaTablesConformance, QosOnAsOpenSmWithTheSameOptionsAndPolicy) {
  SKIP_WITHOUT_SHIM();
  const std::string topo = ibsim::topology_path("star3.topo");
  std::string opts;
  for (const auto& [k, v] : kQosOptions) opts += k + " " + v + "\n";
  const std::string opts_file = temp_file("opensm.conf", opts);
  const std::string policy_file = temp_file("qos-policy.conf", kPolicy);
  const std::vector<std::string> osm_args = {"-Q", "-F", opts_file, "-Y", policy_file};
  const auto first = ibsim::conformance::run_opensm(topo, "H1", "H2", {}, osm_args, nullptr, ibsim::conformance::kLayered);
  ASSERT_TRUE(first.ok) << first.error;
  std::vector<int> cas;
  int sw = 0;
  lids_of(first.guid2lid, cas, sw);
  ASSERT_EQ(cas.size(), 3u);
  const auto qs = sa_queries(cas, sw, true);
  std::map<std::string, std::string> osm_smp;
  const auto osm = ibsim::conformance::run_opensm(
      topo, "H1", "H2", qs, osm_args,
      [&](const IbsimFabric& f) { osm_smp = ibsim::conformance::run_each(f, smp_commands(), "H1"); },
      ibsim::conformance::kLayered);
  ASSERT_TRUE(osm.ok) << osm.error;
  ASSERT_EQ(osm.guid2lid, first.guid2lid);

  SmRun ours;
  std::uint64_t smps = 0;
  run_madengine(topo, osm.guid2lid, qos_node_config(policy_file), {}, qs, ours, smps);

  // What the SMs wrote.
  for (const auto& [cmd, text] : osm_smp) {
    EXPECT_NE(text.find("exit 0"), std::string::npos) << cmd << ": " << text;
    EXPECT_EQ(ours.smp.at(cmd), text) << cmd;
  }
  // What the SAs answer, and PathRecord SLs from the policy. One field is
  // normalised, in the queries naming a ServiceID only.
  std::vector<std::string> sid_queries;
  for (const auto& q : qs)
    if (q.find("--service_id") != std::string::npos) sid_queries.push_back(q);
  std::vector<Normalised> rules;
  for (const auto& q : sid_queries)
    rules.push_back({q.c_str(), "service_id",
                     "OpenSM 3.3.23 answers ServiceID 0 whatever the query named; madengine echoes the query's "
                     "(the path's ServiceID component, IBA 15.2.5.16)"});
  ibsim::conformance::Tally tally;
  std::size_t sls = 0;
  for (const auto& q : qs) {
    const Outcome& a = osm.answers.at(q);
    const Outcome& b = ours.sa.at(q);
    const std::string diff = ibsim::conformance::compare(q, a, b, rules, std::span<const ExpectedError>{}, tally,
                                                         ibsim::conformance::by_record_key, kUnread);
    EXPECT_EQ(diff, "") << "saquery " << q << "\nOpenSM:\n" << a.out << a.err << "\nmadengine:\n" << b.out << b.err;
    if (q.rfind("PR", 0) == 0)
      for (const auto& r : ibsim::parse_records(a.out))
        if (r.contains("sl") && r.at("sl") != "0x0") ++sls;
  }
  EXPECT_GT(sls, 3u) << "the policy gave some paths a non-zero SL";
  EXPECT_GE(tally.records, qs.size() / 2);
  std::printf("QoS on: %zu queries, %zu records equal (%zu PathRecords with a policy SL), %zu smpquery tables equal; "
              "madengine wrote and read tables with %llu SMPs\n",
              tally.queries, tally.records, sls, osm_smp.size(), static_cast<unsigned long long>(smps));
  std::filesystem::remove(opts_file);
  std::filesystem::remove(policy_file);
}

// "VL: 1| 1| ..." rows of an SL2VL record or an smpquery line: the VLs alone.
std::string vls_of(const std::string& row) {
  std::string out;
  for (const char c : row.substr(row.find(':') + 1))
    if (c != ' ') out += c;
  return out;
}

TEST(SaTablesConformance, QosOffNeitherWritesOpenSmAnswersZerosMadengineThePorts) {
  SKIP_WITHOUT_SHIM();
  const std::string topo = ibsim::topology_path("star3.topo");
  const auto first = ibsim::conformance::run_opensm(topo, "H1", "H2", {}, {}, nullptr, ibsim::conformance::kLayered);
  ASSERT_TRUE(first.ok) << first.error;
  std::vector<int> cas;
  int sw = 0;
  lids_of(first.guid2lid, cas, sw);
  ASSERT_EQ(cas.size(), 3u);
  const auto qs = sa_queries(cas, sw, false);
  std::map<std::string, std::string> osm_smp;
  const auto osm = ibsim::conformance::run_opensm(
      topo, "H1", "H2", qs, {},
      [&](const IbsimFabric& f) { osm_smp = ibsim::conformance::run_each(f, smp_commands(), "H1"); },
      ibsim::conformance::kLayered);
  ASSERT_TRUE(osm.ok) << osm.error;
  SmRun ours;
  std::uint64_t smps = 0;
  run_madengine(topo, osm.guid2lid, MadengineRig::opensm_keyed(),
                [](sm::SmConfig& c) { c.read_switch_port_tables = true; },  // the switch records too
                qs, ours, smps);

  // Neither SM wrote a table: both fabrics show ibsim's own.
  for (const auto& [cmd, text] : osm_smp) EXPECT_EQ(ours.smp.at(cmd), text) << cmd;
  const std::string ibsim_ca_sl2vl = "0|1|2|3|4|5|6|7|8|9|10|11|12|13|14|7|";
  EXPECT_NE(osm_smp.at("smpquery -D sl2vl 0").find("| 0| 1| 2|"), std::string::npos) << osm_smp.at("smpquery -D sl2vl 0");
  std::size_t zero_records = 0, true_records = 0, same = 0;
  ibsim::conformance::Tally tally;
  for (const auto& q : qs) {
    const Outcome& a = osm.answers.at(q);
    const Outcome& b = ours.sa.at(q);
    if (q.rfind("SL2VL", 0) != 0) {
      // VLArb and GUIDInfo: OpenSM answers VLArb zeros too; GUIDInfo compares as is.
      if (q.rfind("GIR", 0) == 0) {
        const std::string diff = ibsim::conformance::compare(q, a, b, std::span<const Normalised>{}, std::span<const ExpectedError>{}, tally);
        EXPECT_EQ(diff, "") << q;
        ++same;
      }
      continue;
    }
    const auto ra = ibsim::parse_records(a.out), rb = ibsim::parse_records(b.out);
    ASSERT_EQ(ra.size(), 1u) << q << ": " << a.out << a.err;
    ASSERT_EQ(rb.size(), 1u) << q << ": " << b.out << b.err;
    // OpenSM: a table it never read, all VL0.
    EXPECT_EQ(vls_of(ra[0].at("VL#0")), "0|0|0|0|0|0|0|0|0|0|0|0|0|0|0|0|") << q;
    ++zero_records;
    // madengine: what the port holds (ibsim's default: SL i -> VL i, SL15 -> VL7).
    EXPECT_EQ(vls_of(rb[0].at("VL#0")), ibsim_ca_sl2vl) << q << ": " << b.out;
    ++true_records;
  }
  EXPECT_GT(zero_records, 5u);
  std::printf("QoS off: %zu SL2VL records: OpenSM all VL0, madengine the ports' tables; %zu GUIDInfo records equal; "
              "%zu smpquery tables equal (neither SM wrote one)\n",
              true_records, same, osm_smp.size());
}

}  // namespace
}  // namespace madengine
