// SA conformance of the stateful records on ibsim (star3), with the method
// of conformance.hpp: OpenSM 3.3.23 and madengine each bring up their own
// fresh fabric from bare ibsim (madengine from OpenSM's guid2lid), the same
// client on H2 registers a ServiceRecord, joins the IPoIB broadcast group
// and a new group (H3 joins it too, after two leaves both SAs must refuse
// alike: of the broadcast group H3 is not in, and of a group nobody
// created), and subscribes to trap 64; `saquery
// SR`, `-g`, `-m`, `-m --smkey 1`, `IIR` and `MFTR` from H3, each run once,
// must then give the same records field by field both ways, after the
// normalisation in kNormalised (with its reason), and `ibroute -M` on S1 must
// show the new group's MFT entry reaching both members' ports. OpenSM and
// saquery run over the RMPP layer: every answer is read whole (-g and -m also
// read the NodeRecord table to name members). A second test registers a ServiceRecord with a short
// lease from H2 and watches it listed by saquery on H3, then gone once the
// lease has run out.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"
#include "engine/engine.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "conformance.hpp"
#include "saquery_records.hpp"
#include "umad_sa_client.hpp"
#include "sm/sm.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::MadengineRig;
using ibsim::Outcome;
using ibsim::Record;
namespace scm = wire::service_record_cm;
namespace mcm = wire::mc_member_record_cm;

constexpr const char* kChildEnv = "MADENGINE_SA_STATE_CHILD";
constexpr const char* kServiceName = "saconf.state";
constexpr std::uint64_t kServiceId = 0x0010'0000'00c0'ffeeull;
// The IPoIB IPv4 broadcast group of the default partition (RFC 4391): OpenSM
// creates it at start, madengine when the first member joins.
constexpr std::uint64_t kBcastMgidHi = 0xff12'401b'ffff'0000ull;
constexpr std::uint64_t kBcastMgidLo = 0x0000'0000'ffff'ffffull;
constexpr std::uint32_t kIpoibQkey = 0x0000'0b1b;
// A group of our own, created by the join (link-local scope 2). Not the
// signature 0xA01B: it marks SA-assigned MGIDs, and OpenSM refuses a
// requested link-local one with it.
constexpr std::uint64_t kOwnMgidHi = 0xff12'5a5a'0000'0000ull;
constexpr std::uint64_t kOwnMgidLo = 0x0000'0000'5a5a'0001ull;
constexpr const char* kOwnMgidText = "ff12:5a5a::5a5a:1";  // as saquery prints it
constexpr std::uint32_t kOwnQkey = 0x0000'5a5a;
constexpr std::uint16_t kTrapGidInService = 64;
constexpr const char* kLeaseServiceName = "saconf.lease";
constexpr std::uint32_t kLeaseS = 4;  // long enough for saquery to list it first on a loaded machine

// ---- the client (a child process on H2) ----

// One SA request and its answer's status, with our own timer (the shim never
// reports a send timeout). Returns -1 when no answer came.
// A request whose record is `rec_len` bytes at `rec`.
int sa_request(UmadTransport& t, std::uint8_t method, std::uint16_t attr, std::uint64_t mask, const void* rec,
               std::size_t rec_len, std::uint32_t tid, wire::SaMad* answer) {
  wire::SaMad sa = wire::make_sa_request(method, attr, tid, mask, std::uint8_t{0});
  std::memcpy(sa.data.data(), rec, std::min(rec_len, sa.data.size()));
  return ibsim::umad_sa_request(t, sa, answer);
}

wire::McMemberRecord join_record(const LocalPort& lp, std::uint64_t mgid_hi, std::uint64_t mgid_lo, std::uint32_t qkey,
                                 std::uint8_t mtu_sel, std::uint8_t mtu, std::uint8_t rate_sel, std::uint8_t rate) {
  wire::McMemberRecord r{};
  r.mgid = {wire::be64::from(mgid_hi), wire::be64::from(mgid_lo)};
  r.port_gid = {wire::be64::from(lp.subnet_prefix), wire::be64::from(lp.port_guid)};
  r.qkey = wire::be32::from(qkey);
  r.pkey = wire::be16::from(0xffff);
  r.set_mtu_selector(mtu_sel);
  r.set_mtu(mtu);
  r.set_rate_selector(rate_sel);
  r.set_rate(rate);
  r.set_join_state(1);  // FullMember
  return r;
}

// Everything IBA 15.2.5.17.1 asks of a creating join, plus MTU and rate with
// their selectors.
constexpr std::uint64_t kJoinMask = mcm::kMGid | mcm::kPortGid | mcm::kQKey | mcm::kMtuSelector | mcm::kMtu |
                                    mcm::kTClass | mcm::kPKey | mcm::kRateSelector | mcm::kRate | mcm::kSl |
                                    mcm::kFlowLabel | mcm::kJoinState;

// Run only as a child of the test below: the client's actions, one line of
// output each ("sr 0", "bcast 0 mlid 0xc000", ...) with the SA's status.
// MADENGINE_SA_STATE_CHILD=all (H2) does everything, =join (H3) only joins
// the group H2 created, so that its MFT entry has two member ports.
TEST(SaStateClient, RegisterJoinSubscribe) {
  const char* mode = std::getenv(kChildEnv);
  if (mode == nullptr) GTEST_SKIP() << "runs only as a child of SaStateConformance";
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();
  const LocalPort lp = t.local_port();
  ASSERT_NE(lp.sm_lid, 0);
  wire::SaMad ans{};
  wire::McMemberRecord got{};
  if (std::string(mode) == "lease") {  // a service that lives kLeaseS seconds
    wire::ServiceRecord sr{};
    sr.service_id = wire::be64::from(kServiceId + 1);
    sr.service_gid = {wire::be64::from(lp.subnet_prefix), wire::be64::from(lp.port_guid)};
    sr.service_pkey = wire::be16::from(0xffff);
    sr.service_lease = wire::be32::from(kLeaseS);
    sr.set_name(kLeaseServiceName);
    const int st = sa_request(t, wire::method::kSet, wire::sa_attr::kServiceRecord,
                              scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease |
                                  scm::kServiceName,
                              &sr, sizeof sr, 0x5c06, nullptr);
    std::printf("lease %d\n", st);
    EXPECT_EQ(st, 0);
    std::fflush(stdout);
    t.close();
    return;
  }
  if (std::string(mode) == "join") {
    // Leaves an SA must refuse (IBA o15-0.1.14): of the broadcast group,
    // which this port never joined, and of a group nobody created. One line
    // each: status, response method, whether the record came back as sent.
    struct StrayLeave {
      const char* what;
      std::uint64_t mgid_hi, mgid_lo;
      std::uint32_t tid;
    };
    for (const StrayLeave& x : {StrayLeave{"non-member", kBcastMgidHi, kBcastMgidLo, 0x5c07},
                                StrayLeave{"unknown-mgid", kOwnMgidHi, kOwnMgidLo + 1, 0x5c08}}) {
      auto l = join_record(lp, x.mgid_hi, x.mgid_lo, 0, 0, 0, 0, 0);
      ans = {};
      const int st = sa_request(t, wire::method::kDelete, wire::sa_attr::kMcMemberRecord,
                                mcm::kMGid | mcm::kPortGid | mcm::kJoinState, &l, sizeof l, x.tid, &ans);
      std::printf("leave %s %d method 0x%x record %s\n", x.what, st, ans.hdr.method,
                  std::memcmp(ans.data.data(), &l, sizeof l) == 0 ? "as sent" : "changed");
    }
    auto j = join_record(lp, kOwnMgidHi, kOwnMgidLo, kOwnQkey, 0, 0, 0, 0);
    const int st = sa_request(t, wire::method::kSet, wire::sa_attr::kMcMemberRecord,
                              mcm::kMGid | mcm::kPortGid | mcm::kJoinState, &j, sizeof j, 0x5c05, &ans);
    std::memcpy(&got, ans.data.data(), sizeof got);
    std::printf("join %d mlid 0x%x\n", st, got.mlid.get());
    EXPECT_EQ(st, 0);
    std::fflush(stdout);
    t.close();
    return;
  }

  wire::ServiceRecord sr{};
  sr.service_id = wire::be64::from(kServiceId);
  sr.service_gid = {wire::be64::from(lp.subnet_prefix), wire::be64::from(lp.port_guid)};
  sr.service_pkey = wire::be16::from(0xffff);
  sr.service_lease = wire::be32::from(600);
  sr.set_name(kServiceName);
  sr.service_data8[0] = 0x5a;
  sr.service_data16[1] = wire::be16::from(0x1234);
  sr.service_data32[2] = wire::be32::from(0xdeadbeef);
  sr.service_data64[0] = wire::be64::from(0x0123'4567'89ab'cdefull);
  const std::uint64_t sr_mask = scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease |
                                scm::kServiceName | scm::data8(0) | scm::data16(1) | scm::data32(2) | scm::data64(0);
  const int sr_status = sa_request(t, wire::method::kSet, wire::sa_attr::kServiceRecord, sr_mask, &sr, sizeof sr,
                                   0x5c01, nullptr);
  std::printf("sr %d\n", sr_status);
  EXPECT_EQ(sr_status, 0);

  // The broadcast group as IPoIB joins it: 2048 bytes and 10 Gb/s exactly
  // (what OpenSM's default partition gives it).
  auto bc = join_record(lp, kBcastMgidHi, kBcastMgidLo, kIpoibQkey, 2, 4, 2, 3);
  const int bc_status =
      sa_request(t, wire::method::kSet, wire::sa_attr::kMcMemberRecord, kJoinMask, &bc, sizeof bc, 0x5c02, &ans);
  std::memcpy(&got, ans.data.data(), sizeof got);
  std::printf("bcast %d mlid 0x%x\n", bc_status, got.mlid.get());
  EXPECT_EQ(bc_status, 0);

  // A new group: MTU below 4096 and rate below 40 Gb/s (the selectors, not
  // values, pick them). Scope named: OpenSM keeps the Scope component as
  // sent (0 when absent) where madengine takes it from the MGID.
  auto own = join_record(lp, kOwnMgidHi, kOwnMgidLo, kOwnQkey, 1, 5, 1, 7);
  own.set_scope(2);
  const int own_status = sa_request(t, wire::method::kSet, wire::sa_attr::kMcMemberRecord, kJoinMask | mcm::kScope,
                                    &own, sizeof own, 0x5c03, &ans);
  std::memcpy(&got, ans.data.data(), sizeof got);
  std::printf("own %d mlid 0x%x\n", own_status, got.mlid.get());
  EXPECT_EQ(own_status, 0);

  wire::InformInfo ii{};
  ii.lid_range_begin = wire::be16::from(wire::kInformAllLids);
  ii.is_generic = 1;
  ii.subscribe = 1;
  ii.type = wire::be16::from(wire::inform_type::kAll);
  ii.set_trap_number(kTrapGidInService);
  ii.set_producer_type(wire::kInformAllProducers);
  const int ii_status =
      sa_request(t, wire::method::kSet, wire::sa_attr::kInformInfo, 0, &ii, sizeof ii, 0x5c04, nullptr);
  std::printf("inform %d\n", ii_status);
  EXPECT_EQ(ii_status, 0);
  std::fflush(stdout);
  t.close();
}

// ---- the comparison ----

using ibsim::conformance::Normalised;

// Fields that legitimately differ between OpenSM's SA and ours for the same
// client actions. (Untrusted MCMemberRecord GetTables, saquery's default,
// compare as they are: both SAs give one record per group with PortGID,
// JoinState and ProxyJoin zero, IBA 15.2.5.17; `-m --smkey 1` every member.)
constexpr Normalised kNormalised[] = {
    {"MFTR", "MFT 0xc000",
     "the IPoIB broadcast group (MLID 0xc000 under both SMs) has one member here: OpenSM programs no MFT entry "
     "for a group of one port, madengine forwards to that member"},
};

// The queries: one service, two groups with three memberships, one
// subscription, and the MFT block of S1 that holds both MLIDs.
const std::vector<std::string> kQueries = {"SR", "-g", "-m", "-m --smkey 1", "IIR", "MFTR"};

// Records in a stable order (the SAs list groups in different orders).
bool record_order(const Record& a, const Record& b) {
  const auto key = [](const Record& r) {
    for (const char* k : {"MGID", "ServiceName", "SubscriberGID", "LID"})
      if (auto it = r.find(k); it != r.end()) return it->second + "|" + (r.count("PortGid") ? r.at("PortGid") : "");
    return std::string{};
  };
  return key(a) < key(b);
}

// What one SM's run saw besides the queries' answers.
struct Phase {
  std::string client;  // the children's output
  std::string leaves;  // H3's refused leaves, one line each
  int client_failures = 0;
  std::string mlid;    // of our group, as the creating join's answer gave it ("0xc001")
  std::string mft;     // ibroute -M of S1
};

// Whether `ibroute -M` shows `mlid` ("0xc001") forwarded to switch port `port`.
bool mft_reaches(const std::string& mft, std::string mlid, int port) {
  std::transform(mlid.begin(), mlid.end(), mlid.begin(), [](unsigned char c) { return std::tolower(c); });
  std::istringstream in(mft);
  std::string line;
  std::size_t column = std::string::npos;
  while (std::getline(in, line)) {
    if (const auto at = line.find("Ports:"); at != std::string::npos) {
      column = line.find(" " + std::to_string(port) + " ", at);
      if (column != std::string::npos) ++column;
      continue;
    }
    if (line.rfind(mlid, 0) == 0 && column != std::string::npos) return column < line.size() && line[column] == 'x';
  }
  return false;
}

// The clients' actions, then (bounded) until S1 forwards our group to both
// members, H2 and H3 on S1's ports 2 and 3: an SM programs the MFT after the
// join is answered (OpenSM in a later multicast pass).
Phase client_actions(const IbsimFabric& f) {
  Phase p;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  for (const auto& [mode, host] : {std::pair{"all", "H2"}, std::pair{"join", "H3"}}) {
    const auto c = f.run(std::string(kChildEnv) + "=" + mode + " '" + self +
                             "' --gtest_filter=SaStateClient.RegisterJoinSubscribe",
                         host, 60s);
    p.client += std::string(host) + ": exit " + std::to_string(c.exit_code) + "\n" + c.out + c.err;
    if (c.exit_code != 0) ++p.client_failures;
    std::istringstream lines(c.out);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("leave ", 0) == 0) p.leaves += line + "\n";
    if (const auto at = c.out.find("\nown 0 mlid "); at != std::string::npos)
      p.mlid = c.out.substr(at + 12, c.out.find('\n', at + 1) - at - 12);
  }
  constexpr int kMftPollsMax = 60;
  for (int i = 0; i < kMftPollsMax; ++i) {
    p.mft = f.run("ibroute -M -D 0,1", "H3", 20s).out;  // S1 from H3
    if (!p.mlid.empty() && mft_reaches(p.mft, p.mlid, 2) && mft_reaches(p.mft, p.mlid, 3)) break;
    std::this_thread::sleep_for(500ms);
  }
  return p;
}

// Each SM on its own fresh star3 from bare ibsim (conformance.hpp): OpenSM,
// then madengine from OpenSM's guid2lid; the same client actions; every
// query once.
TEST(SaStateConformance, SaquerySeesTheSameStateAsFromOpenSm) {
  SKIP_WITHOUT_SHIM();
  const std::string topo = ibsim::topology_path("star3.topo");
  Phase osm;
  const auto o = ibsim::conformance::run_opensm(
      topo, "H1", "H3", kQueries, {}, [&osm](const IbsimFabric& f) { osm = client_actions(f); },
      ibsim::conformance::kLayered);
  ASSERT_TRUE(o.ok) << o.error;
  std::printf("OpenSM ibroute -M:\n%s\n", osm.mft.c_str());

  IbsimFabric fabric(topo, ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  MadengineRig me;  // the daemon's default SM_Key, as OpenSM's
  ASSERT_TRUE(me.start_from_opensm_lids(fabric, "H1", o.guid2lid)) << me.error;
  const Phase ours = client_actions(fabric);
  std::printf("madengine ibroute -M:\n%s\n", ours.mft.c_str());

  EXPECT_EQ(osm.client_failures, 0) << osm.client;
  EXPECT_EQ(ours.client_failures, 0) << ours.client;
  ibsim::conformance::Tally tally;
  std::map<std::string, Outcome> answers;
  for (const auto& q : kQueries) {
    const Outcome& b = answers[q] = ibsim::conformance::saquery_once(fabric, q, "H3");
    const Outcome& a = o.answers.at(q);
    const std::string diff = ibsim::conformance::compare(q, a, b, kNormalised, {}, tally, record_order);
    EXPECT_EQ(diff, "") << "saquery " << q << "\nOpenSM:\n" << a.out << a.err << "\nmadengine:\n" << b.out << b.err;
  }
  // A leave by a port that is not a member, and of an unknown group: both
  // SAs refuse it with ERR_REQ_INVALID in a DeleteResp carrying the record
  // as sent (OpenSM: mcmr_rcv_leave_mgrp).
  std::printf("OpenSM's refused leaves:\n%smadengine's:\n%s", osm.leaves.c_str(), ours.leaves.c_str());
  EXPECT_EQ(osm.leaves, "leave non-member 512 method 0x95 record as sent\nleave unknown-mgid 512 method 0x95 record as sent\n")
      << osm.client;
  EXPECT_EQ(ours.leaves, osm.leaves) << ours.client;
  // The group our client created is listed, and S1 forwards its MLID to
  // both members, under both SMs.
  for (const bool is_osm : {true, false}) {
    const Phase* p = is_osm ? &osm : &ours;
    const char* who = is_osm ? "OpenSM" : "madengine";
    EXPECT_NE((is_osm ? o.answers : answers).at("-g").out.find(kOwnMgidText), std::string::npos) << who;
    ASSERT_FALSE(p->mlid.empty()) << who << ": the creating join gave no MLID\n" << p->client;
    for (const int port : {2, 3})
      EXPECT_TRUE(mft_reaches(p->mft, p->mlid, port))
          << who << ": MLID " << p->mlid << " not forwarded to S1 port " << port << "\n" << p->mft;
  }
  const auto c = me.sa().counters();
  std::printf("compared %zu queries, %zu records equal; madengine SA: %llu RMPP transfers, %llu Reports sent, %llu acked\n",
              tally.queries, tally.records, (unsigned long long)c.rmpp_transfers, (unsigned long long)c.reports_sent,
              (unsigned long long)c.reports_acked);
  EXPECT_GE(tally.records, 10u);
}

// A ServiceRecord registered by one client (H2) is found by another (saquery
// on H3) and is gone once its lease has run out.
TEST(SaStateIbsim, ServiceFoundByAnotherClientExpiresWithItsLease) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");
  MadengineRig me;
  ASSERT_TRUE(me.start()) << me.error;
  ASSERT_TRUE(me.sm().wait_subnet_up(60s));
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  // The child registers somewhere between its start and its exit: the lease
  // cannot have run out before `asked` + kLeaseS.
  const auto asked = std::chrono::steady_clock::now();
  const auto c = fabric.run(std::string(kChildEnv) + "=lease '" + self +
                                "' --gtest_filter=SaStateClient.RegisterJoinSubscribe",
                            "H2", 60s);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const auto listed = [&] {
    const Outcome o = ibsim::conformance::saquery_once(fabric, "SR", "H3");
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return o.out.find(kLeaseServiceName) != std::string::npos;
  };
  EXPECT_TRUE(listed());  // within the lease: saquery on H3 finds H2's service
  bool gone = false;
  for (int i = 0; i < 60 && !gone; ++i) {  // bounded: a broken expiry fails, never hangs
    std::this_thread::sleep_for(250ms);
    gone = !listed();
  }
  EXPECT_TRUE(gone) << "the service outlived its " << kLeaseS << " s lease";
  EXPECT_GE(std::chrono::steady_clock::now() - asked, std::chrono::seconds(kLeaseS));
}

}  // namespace
}  // namespace madengine
