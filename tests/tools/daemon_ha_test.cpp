// Warm restart of the madengine daemon on the sim transport (label sim): the
// master journals the SA's state; a new daemon with the same guid2lid and
// journal keeps every LID and record and does not ask clients to reregister;
// a corrupt or stale journal is logged and ignored (no records,
// ClientReregister).
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/sm.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sim/fabric.hpp"
#include "sim/host.hpp"

namespace madengine::node {
namespace {

namespace a = wire::sa_attr;
namespace m = wire::method;
namespace scm = wire::service_record_cm;
namespace mcm = wire::mc_member_record_cm;

const wire::Gid kMgid = {wire::be64::from(0xff12401bffff0000ull), wire::be64::from(0x0000000000000777ull)};

class DaemonHa : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("madengine-daemon-ha-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cfg_.transport.kind = TransportKind::kSim;
    cfg_.transport.generate = "ft2:8";
    cfg_.engine.cores = 1;
    cfg_.engine.pin = false;
    cfg_.sm.guid2lid = (dir_ / "guid2lid").string();
    cfg_.sa.journal = (dir_ / "sa-state.journal").string();
    cfg_.sa.journal_interval_ms = 100;
    cfg_.log.level = "info";
    log_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
    spdlog::default_logger()->sinks().push_back(log_);
  }
  void TearDown() override {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), log_), sinks.end());
    std::filesystem::remove_all(dir_);
  }
  bool logged(const std::string& what) const {
    for (const auto& l : log_->last_formatted())
      if (l.find(what) != std::string::npos) return true;
    return false;
  }
  static bool pump_until(InternalNode& d, sim::Host* host, const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = d.fabric()->now_ns() + sim_ms * kNanosPerMilli;
    while (d.fabric()->now_ns() < end) {
      if (pred()) return true;
      if (host != nullptr) host->poll();
      d.pump(kNanosPerMilli);
    }
    return pred();
  }
  static std::optional<MadBuf> ask(InternalNode& d, sim::Host& host, std::uint8_t method, std::uint16_t attr,
                                   std::uint64_t mask, std::span<const std::uint8_t> rec, std::uint64_t sm_key = 0) {
    const auto tid = host.query(method, attr, mask, rec, 0, sm_key);
    if (!tid) return std::nullopt;
    std::optional<MadBuf> got;
    pump_until(d, &host, [&] { return (got = host.take_response(*tid)).has_value(); }, 1000);
    return got;
  }
  template <typename T>
  static std::vector<T> records(const MadBuf& b) {
    const auto& sa = b.as<wire::SaMad>();
    std::size_t len = sa.data.size();
    if (sa.rmpp.active())
      len = std::min<std::size_t>(len, sa.rmpp.data2.get() - (wire::kSaHeaderSize - wire::kMadHeaderSize - wire::kRmppHeaderSize));
    std::vector<T> out;
    const std::span<const std::uint8_t> payload(sa.data.data(), len);
    for (std::size_t i = 0; i < wire::table_record_count(len, sa.attr_offset.get()); ++i)
      if (const auto r = wire::table_record<T>(payload, sa.attr_offset.get(), i)) out.push_back(*r);
    return out;
  }
  static wire::Gid gid_of(const sim::Fabric& f, std::uint32_t node) {
    return {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(f.port_guid(f.port(node, 1)))};
  }
  static std::map<std::uint64_t, std::uint16_t> lids(const sim::Fabric& f) {
    std::map<std::uint64_t, std::uint16_t> out;
    for (std::uint32_t n = 0; n < f.node_count(); ++n)
      if (!f.is_switch(n)) out[f.port_guid(f.port(n, 1))] = f.lid(f.port(n, 1));
    return out;
  }
  std::uint32_t host_node(const sim::Fabric& f) const { return f.find_node("host-3-1"); }

  // The first daemon: subnet up, a service (lease 600 s) and a group
  // registered from a host, the journal written, then a clean stop.
  std::map<std::uint64_t, std::uint16_t> run_first(std::uint16_t& mlid) {
    InternalNode d(cfg_);
    EXPECT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
    EXPECT_EQ(d.sm().status().reregister_masterships, 1u);  // no journal yet
    const std::uint32_t hn = host_node(*d.fabric());
    sim::Host host(*d.fabric(), hn);
    wire::ServiceRecord sr{};
    sr.service_id = wire::be64::from(0x77);
    sr.service_gid = gid_of(*d.fabric(), hn);
    sr.service_pkey = wire::be16::from(0xffff);
    sr.service_lease = wire::be32::from(600);
    sr.set_name("warm.restart");
    const auto set = ask(d, host, m::kSet, a::kServiceRecord,
                         scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease | scm::kServiceName,
                         {reinterpret_cast<const std::uint8_t*>(&sr), sizeof(sr)});
    EXPECT_TRUE(set && set->hdr().status.get() == 0);
    wire::McMemberRecord j{};
    j.mgid = kMgid;
    j.port_gid = gid_of(*d.fabric(), hn);
    j.qkey = wire::be32::from(0x0b1b);
    j.pkey = wire::be16::from(0xffff);
    j.set_join_state(1);
    const auto joined = ask(d, host, m::kSet, a::kMcMemberRecord,
                            mcm::kMGid | mcm::kPortGid | mcm::kJoinState | mcm::kQKey | mcm::kPKey | mcm::kSl |
                                mcm::kFlowLabel | mcm::kTClass,
                            {reinterpret_cast<const std::uint8_t*>(&j), sizeof(j)});
    EXPECT_TRUE(joined && joined->hdr().status.get() == 0);
    if (joined) mlid = joined->as<wire::SaMad>().data[36] << 8 | joined->as<wire::SaMad>().data[37];
    // The master journals the change within its interval, while running.
    EXPECT_TRUE(pump_until(d, &host, [&] { return std::filesystem::exists(cfg_.sa.journal); }, 1000));
    return lids(*d.fabric());
  }

  std::filesystem::path dir_;
  NodeConfig cfg_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> log_;
};

TEST_F(DaemonHa, RestartKeepsLidsAndRecordsWithoutReregistration) {
  std::uint16_t mlid = 0;
  const auto lids_before = run_first(mlid);
  ASSERT_NE(mlid, 0);

  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
  EXPECT_TRUE(logged("fresh, clients keep their registrations"));
  EXPECT_EQ(d.sm().status().reregister_masterships, 0u);
  EXPECT_EQ(d.sm().status().vouched_masterships, 1u);
  EXPECT_EQ(d.sm().status().last_heavy.bringup.client_reregisters, 0u);
  EXPECT_EQ(lids(*d.fabric()), lids_before);
  EXPECT_EQ(d.sm().status().last_heavy.lids_new, 0u);

  const std::uint32_t hn = host_node(*d.fabric());
  sim::Host host(*d.fabric(), hn);
  const auto srs = ask(d, host, m::kGetTable, a::kServiceRecord, 0, {});
  ASSERT_TRUE(srs.has_value());
  ASSERT_EQ(srs->hdr().status.get(), 0);
  const auto got_sr = records<wire::ServiceRecord>(*srs);
  ASSERT_EQ(got_sr.size(), 1u);
  EXPECT_EQ(got_sr[0].service_id.get(), 0x77u);
  EXPECT_EQ(got_sr[0].service_gid, gid_of(*d.fabric(), hn));
  EXPECT_GT(got_sr[0].service_lease.get(), 0u);
  EXPECT_LE(got_sr[0].service_lease.get(), 600u);
  wire::McMemberRecord q{};
  q.mgid = kMgid;
  const auto mcs = ask(d, host, m::kGetTable, a::kMcMemberRecord, mcm::kMGid,
                       {reinterpret_cast<const std::uint8_t*>(&q), sizeof(q)}, 1);  // the daemon's SM_Key: members shown
  ASSERT_TRUE(mcs.has_value());
  ASSERT_EQ(mcs->hdr().status.get(), 0);
  const auto got_mc = records<wire::McMemberRecord>(*mcs);
  ASSERT_EQ(got_mc.size(), 1u);
  EXPECT_EQ(got_mc[0].mlid.get(), mlid);
  EXPECT_EQ(got_mc[0].port_gid, gid_of(*d.fabric(), hn));
}

TEST_F(DaemonHa, CorruptJournalIsLoggedAndIgnored) {
  std::uint16_t mlid = 0;
  const auto lids_before = run_first(mlid);
  {
    // One flipped byte in the middle: the checksum no longer matches.
    std::fstream f(cfg_.sa.journal, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekg(0, std::ios::end);
    const auto size = static_cast<std::streamoff>(f.tellg());
    ASSERT_GT(size, 40);
    f.seekg(size / 2);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(size / 2);
    f.write(&c, 1);
  }
  InternalNode d(cfg_);
  EXPECT_TRUE(logged("ignored"));
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
  EXPECT_EQ(d.sm().status().reregister_masterships, 1u);
  EXPECT_EQ(d.sm().status().vouched_masterships, 0u);
  EXPECT_EQ(d.sa().services().size(), 0u);
  // Only the default partition's IPoIB broadcast group, which every master
  // creates: the journal's group is not restored.
  ASSERT_EQ(d.sa().groups().groups(), 1u);
  EXPECT_FALSE((*d.sa().groups().view())[0].params.mgid == kMgid);
  EXPECT_EQ(lids(*d.fabric()), lids_before);  // guid2lid still keeps the LIDs
}

TEST_F(DaemonHa, StaleJournalIsIgnoredAndClientsAskedToReregister) {
  std::uint16_t mlid = 0;
  run_first(mlid);
  std::filesystem::last_write_time(cfg_.sa.journal,
                                   std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
  EXPECT_TRUE(logged("stale, ignored"));
  EXPECT_EQ(d.sm().status().reregister_masterships, 1u);
  EXPECT_EQ(d.sa().services().size(), 0u);
}

// The journal and guid2lid name the fabric they describe (our SM port and
// subnet prefix): a daemon on another port of the same files, or with
// another subnet prefix, restores and vouches for nothing, keeps no LID
// from the map, and says so once per file, naming it and both fabrics.
TEST_F(DaemonHa, StateFilesOfAnotherPortOrSubnetAreNotUsed) {
  std::uint16_t mlid = 0;
  run_first(mlid);
  for (const bool other_port : {true, false}) {
    // This daemon's lines only.
    auto mine = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
    spdlog::default_logger()->sinks().push_back(mine);
    NodeConfig cfg = cfg_;
    if (other_port) cfg.transport.sim_node = "host-1-0";
    else cfg.sm.ports.subnet_prefix = 0xfe80000000000001ull;
    {
      InternalNode d(cfg);
      ASSERT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
      std::size_t journal_lines = 0, guid2lid_lines = 0;
      bool kept_none = false;
      for (const auto& l : mine->last_formatted()) {
        kept_none = kept_none || l.find("sm: LIDs: 0 kept from map") != std::string::npos;
        journal_lines += l.find("sa journal " + cfg.sa.journal + ": not restored: written for SM port 0x") != std::string::npos &&
                         l.find(", this is SM port 0x") != std::string::npos;
        guid2lid_lines += l.find("guid2lid " + cfg.sm.guid2lid + ": not used: written for SM port 0x") != std::string::npos;
      }
      EXPECT_EQ(journal_lines, 1u) << other_port;
      EXPECT_EQ(guid2lid_lines, 1u) << other_port;
      EXPECT_EQ(d.sm().status().reregister_masterships, 1u);
      EXPECT_EQ(d.sm().status().vouched_masterships, 0u);
      EXPECT_EQ(d.sa().services().size(), 0u);
      EXPECT_TRUE(kept_none) << other_port;
    }
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), mine), sinks.end());
    // That daemon's clean stop rewrote both for its own fabric: the first
    // daemon's port and prefix now meet a foreign journal in turn.
    run_first(mlid);
  }
}

// A guid2lid that names no fabric (OpenSM's, moved over) keeps its LIDs.
TEST_F(DaemonHa, Guid2lidWithoutAFabricKeepsItsLids) {
  std::uint16_t mlid = 0;
  const auto lids_before = run_first(mlid);
  std::string text;
  {
    std::ifstream in(cfg_.sm.guid2lid);
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      if (first && line.rfind("#fabric ", 0) == 0) {
        first = false;
        std::getline(in, line);  // its blank line
        continue;
      }
      first = false;
      text += line + "\n";
    }
  }
  ASSERT_EQ(text.find("#fabric"), std::string::npos);
  std::ofstream(cfg_.sm.guid2lid, std::ios::trunc) << text;
  std::filesystem::remove(cfg_.sa.journal);
  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
  EXPECT_FALSE(logged("not used"));
  EXPECT_EQ(lids(*d.fabric()), lids_before);
}

// A lease runs on while the daemon is down: a journal written 100 s before
// the restart gives back the service with 100 s less of its 600 s lease.
TEST_F(DaemonHa, DowntimeCountsAgainstRestoredLeases) {
  cfg_.sa.journal_fresh_ms = 300'000;
  std::uint16_t mlid = 0;
  run_first(mlid);
  std::filesystem::last_write_time(cfg_.sa.journal,
                                   std::filesystem::file_time_type::clock::now() - std::chrono::seconds(100));
  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::milliseconds(30'000)));
  EXPECT_TRUE(logged("fresh, clients keep their registrations"));
  const auto services = d.sa().services().view();
  ASSERT_EQ(services->size(), 1u);
  const Nanos left = (*services)[0].expires_ns - d.fabric()->now_ns();
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 500 * kNanosPerSecond);
}

}  // namespace
}  // namespace madengine::node
