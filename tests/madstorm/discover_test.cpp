// madstorm's host discovery against an in-process SA of NodeRecords: the
// scan (a Get per LID) finds every CA port, and a NodeRecord table whose
// MADs arrive cut short (ibsim's umad2sim keeps 224 of 256 bytes and hands
// over garbage for the rest) is never trusted: refused as corrupt, or not
// asked when the port is known to cut MADs, and the scan answers instead.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

#include "lib/hosts.hpp"
#include "madengine/engine/clock.hpp"
#include "engine/rmpp.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/node_record.hpp"

namespace madstorm {
namespace {

namespace wire = madengine::wire;
using madengine::MadBuf;

constexpr std::uint16_t kSaLid = 1;
constexpr std::size_t kCutBytes = 224;  // what umad2sim delivers of a 256-byte MAD

// 40 CA ports at LIDs 2..41 and 5 switches (LID 1 is the SM's switch, 42..45).
std::vector<wire::NodeRecord> make_fabric() {
  std::vector<wire::NodeRecord> v;
  auto add = [&](std::uint16_t lid, wire::NodeType t, std::uint64_t node_guid, std::uint64_t port_guid,
                 std::uint8_t port) {
    wire::NodeRecord r{};
    r.lid = wire::be16::from(lid);
    r.node_info.base_version = 1;
    r.node_info.class_version = 1;
    r.node_info.set_type(t);
    r.node_info.num_ports = t == wire::NodeType::kCa ? 1 : 36;
    r.node_info.node_guid = wire::be64::from(node_guid);
    r.node_info.port_guid = wire::be64::from(port_guid);
    r.node_info.local_port_num = port;
    r.node_description.set_text("node");
    v.push_back(r);
  };
  add(1, wire::NodeType::kSwitch, 0x0002c90300009000ull, 0x0002c90300009000ull, 0);
  for (std::uint16_t i = 0; i < 40; ++i)  // interleaved with switches, like an SA's node order
    add(static_cast<std::uint16_t>(2 + i), wire::NodeType::kCa, 0x0002c90300002000ull + 2 * i,
        0x0002c90300002001ull + 2 * i, 1);
  for (std::uint16_t i = 0; i < 4; ++i)
    add(static_cast<std::uint16_t>(42 + i), wire::NodeType::kSwitch, 0x0002c90300009100ull + i,
        0x0002c90300009100ull + i, 0);
  return v;
}

std::vector<Host> expected_hosts(const std::vector<wire::NodeRecord>& f) {
  std::vector<Host> h;
  for (const auto& r : f)
    if (r.node_info.node_type == static_cast<std::uint8_t>(wire::NodeType::kCa))
      h.push_back(Host{r.lid.get(), r.node_info.port_guid.get(), r.node_info.node_guid.get()});
  return h;
}

// Answers NodeRecord Get (by LID) and GetTable (RMPP through the engine's
// sender). With `cut` set, every MAD it delivers keeps only its first 224
// bytes and carries 0xa5 filler after them, as umad2sim's read() does.
class NodeRecordSa final : public madengine::Transport, madengine::TxSink {
 public:
  NodeRecordSa(const madengine::Clock& clock, std::vector<wire::NodeRecord> recs, bool cut)
      : clock_(clock), recs_(std::move(recs)), cut_(cut), sender_(clock, *this) {
    port_.lid = 2;
    port_.sm_lid = kSaLid;
    port_.state = madengine::PortState::kActive;
  }
  std::string_view name() const noexcept override { return "noderecord-sa"; }
  bool open(const madengine::AgentSpec&) override { return true; }
  void close() noexcept override {}
  const madengine::LocalPort& local_port() const noexcept override { return port_; }
  madengine::DeviceEvent poll_events() noexcept override { return madengine::DeviceEvent::kNone; }

  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override {
    for (MadBuf* b : bufs) handle(*b);
    return bufs.size();
  }
  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override {
    sender_.poll(clock_.now_ns());
    std::size_t n = 0;
    while (n < bufs.size() && !out_.empty()) {
      MadBuf& b = *bufs[n++];
      b = out_.front();
      out_.pop_front();
      if (cut_) std::memset(b.mad.bytes.data() + kCutBytes, 0xa5, wire::kMadSize - kCutBytes);
    }
    return n;
  }
  bool send(const MadBuf& buf) noexcept override {
    out_.push_back(buf);
    return true;
  }

  std::uint32_t gets = 0, tables = 0;

 private:
  void handle(const MadBuf& req) {
    const auto& h = req.hdr();
    if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm)) return;
    if (h.is_response() || req.as<wire::SaMad>().rmpp.active()) {  // the receiver's ACKs
      sender_.on_mad(req);
      return;
    }
    MadBuf r = req;
    r.addr.lid = kSaLid;
    if (h.method == wire::method::kGetTable) {
      ++tables;
      std::vector<std::uint8_t> payload(recs_.size() * 112);
      for (std::size_t i = 0; i < recs_.size(); ++i)
        wire::set_table_record(std::span<std::uint8_t>(payload), 14, i, recs_[i]);
      r.hdr().method = wire::method::kGetTableResp;
      r.as<wire::SaMad>().attr_offset = wire::be16::from(14);
      EXPECT_EQ(sender_.send(r, payload, nullptr, nullptr), madengine::RmppStart::kOk);
      return;
    }
    ++gets;
    const auto& sa = req.as<wire::SaMad>();
    EXPECT_EQ(sa.comp_mask.get(), wire::node_record_cm::kLid);
    const auto q = *wire::decode<wire::NodeRecord>(std::span<const std::uint8_t>(sa.data));
    r.hdr().method = wire::method::kGetResp;
    const auto it = std::find_if(recs_.begin(), recs_.end(), [&](const auto& x) { return x.lid.get() == q.lid.get(); });
    if (it == recs_.end()) {
      r.hdr().status = wire::be16::from(wire::sa_status::kNoRecords);
    } else {
      r.as<wire::SaMad>().data.fill(0);
      std::memcpy(r.mad.bytes.data() + wire::kSaHeaderSize, &*it, sizeof *it);
    }
    out_.push_back(r);
  }

  const madengine::Clock& clock_;
  std::vector<wire::NodeRecord> recs_;
  bool cut_;
  madengine::LocalPort port_;
  madengine::RmppSender sender_;
  std::deque<MadBuf> out_;
};

struct Outcome {
  std::vector<Host> hosts;
  std::string error;
  std::uint32_t gets = 0, tables = 0;
};

Outcome discover(DiscoverOptions opts, bool cut) {
  const auto fabric = make_fabric();
  madengine::ManualClock clock(1'000'000);
  NodeRecordSa sa(clock, fabric, cut);
  SaTarget target;
  target.lid = kSaLid;
  opts.timeout_ms = 50;
  Outcome r;
  r.hosts = discover_hosts(sa, clock, target,
                           [&clock](Nanos deadline) { clock.set_ns(std::max(clock.now_ns(), deadline)); }, opts,
                           r.error);
  r.gets = sa.gets;
  r.tables = sa.tables;
  return r;
}

bool same(const std::vector<Host>& a, const std::vector<Host>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const Host& x, const Host& y) {
           return x.lid == y.lid && x.port_guid == y.port_guid && x.node_guid == y.node_guid;
         });
}

TEST(Discover, ScanAsksEveryLidAndFindsEveryCaPort) {
  const Outcome r = discover(DiscoverOptions{.method = DiscoverMethod::kScan}, false);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(same(r.hosts, expected_hosts(make_fabric())));
  EXPECT_EQ(r.tables, 0u);
  EXPECT_GE(r.gets, 45u);  // LIDs 1..64 at least: the first batch has records, the next none
}

TEST(Discover, TableOnAWholePortIsTrusted) {
  const Outcome r = discover(DiscoverOptions{}, false);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(same(r.hosts, expected_hosts(make_fabric())));
  EXPECT_EQ(r.tables, 1u);
  EXPECT_EQ(r.gets, 0u);
}

TEST(Discover, TableCutShortIsRefusedAsCorrupt) {
  // 200 record bytes per segment, the last 32 lost: record 7's node type is among them.
  const Outcome r = discover(DiscoverOptions{.method = DiscoverMethod::kTable}, true);
  EXPECT_TRUE(r.hosts.empty());
  EXPECT_NE(r.error.find("corrupt"), std::string::npos) << r.error;
}

TEST(Discover, AutoScansWhenTheTableComesBackCorrupt) {
  const Outcome r = discover(DiscoverOptions{}, true);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(same(r.hosts, expected_hosts(make_fabric())));
  EXPECT_EQ(r.tables, 1u);
  EXPECT_GE(r.gets, 45u);
}

TEST(Discover, AutoOnAPortThatCutsMadsScansWithoutAskingForATable) {
  DiscoverOptions o;
  o.mads_cut_short = true;
  const Outcome r = discover(o, true);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(same(r.hosts, expected_hosts(make_fabric())));
  EXPECT_EQ(r.tables, 0u);
}

// --save-hosts writes what --hosts-file reads: the hosts a scan found come
// back from the file unchanged.
TEST(Discover, SavedHostsFileReadsBackTheSameHosts) {
  const Outcome r = discover(DiscoverOptions{}, false);
  ASSERT_FALSE(r.hosts.empty()) << r.error;
  const std::string path = ::testing::TempDir() + "madstorm_hosts_" + std::to_string(::getpid());
  save_hosts_file(path, r.hosts);
  EXPECT_TRUE(same(load_hosts_file(path), r.hosts));
  std::remove(path.c_str());
  EXPECT_THROW(save_hosts_file("/nonexistent-dir/hosts", r.hosts), std::runtime_error);
}

}  // namespace
}  // namespace madstorm
