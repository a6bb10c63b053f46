// madstorm against a faulty SA written here: an in-process Transport that
// answers PathRecord, NodeRecord and GetTable queries (RMPP through the
// engine's RmppSender) and, by a rule on the query, answers wrongly: wrong
// record, wrong TID, bad status, silence, wrong attribute, wrong method,
// BUSY, malformed, duplicates. Time is a ManualClock the storm's idle hook
// advances, so timeouts and the open-loop schedule replay exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include "lib/report.hpp"
#include "lib/storm.hpp"
#include "lib/workload.hpp"
#include "madengine/engine/clock.hpp"
#include "madengine/engine/rmpp.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"

namespace madstorm {
namespace {

namespace wire = madengine::wire;
using madengine::MadBuf;

constexpr std::uint16_t kSaLid = 1;
constexpr std::uint64_t kPrefix = wire::kDefaultSubnetPrefix;

enum class Fault : int { kNone, kWrongRecord, kWrongTid, kBadStatus, kSilent, kWrongAttr, kWrongMethod, kBusy, kMalformed };
constexpr int kFaults = 9;

// The rule both the SA and the test's expectations use.
Fault fault_of(std::uint16_t slid, std::uint16_t dlid) { return static_cast<Fault>((slid * 7 + dlid) % kFaults); }
bool duplicated(std::uint16_t slid, std::uint16_t dlid) { return fault_of(slid, dlid) == Fault::kNone && slid % 2 == 0; }

std::vector<Host> make_hosts(std::uint32_t n) {
  std::vector<Host> h;
  for (std::uint32_t i = 0; i < n; ++i)
    h.push_back(Host{static_cast<std::uint16_t>(i + 2), 0x0002c90300001000ull + i, 0x0002c90300002000ull + i});
  return h;
}

wire::Gid gid(std::uint64_t guid) {
  wire::Gid g;
  g.prefix = wire::be64::from(kPrefix);
  g.guid = wire::be64::from(guid);
  return g;
}

class FaultySa final : public madengine::Transport, madengine::TxSink {
 public:
  FaultySa(const madengine::Clock& clock, std::vector<Host> hosts, bool faults)
      : clock_(clock), hosts_(std::move(hosts)), faults_(faults), sender_(clock, *this) {
    port_.lid = 1;
    port_.sm_lid = kSaLid;
    port_.state = madengine::PortState::kActive;
  }
  std::string_view name() const noexcept override { return "faulty-sa"; }
  bool open(const madengine::AgentSpec&) override { return true; }
  void close() noexcept override {}
  const madengine::LocalPort& local_port() const noexcept override { return port_; }
  madengine::DeviceEvent poll_events() noexcept override { return madengine::DeviceEvent::kNone; }

  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override {
    if (refuse_tx) return 0;
    for (MadBuf* b : bufs) handle(*b);
    return bufs.size();
  }
  bool refuse_tx = false;  // a port that takes nothing (full socket, lost device)
  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override {
    sender_.poll(clock_.now_ns());
    std::size_t n = 0;
    while (n < bufs.size() && !out_.empty()) {
      *bufs[n++] = out_.front();
      out_.pop_front();
    }
    return n;
  }
  // RmppSender's segments go to the storm.
  bool send(const MadBuf& buf) noexcept override {
    out_.push_back(buf);
    return true;
  }
  std::uint64_t requests = 0;
  // A host whose GetTable answer carries a path from someone else.
  std::uint16_t bad_table_slid = 0;

 private:
  const Host* by_lid(std::uint16_t lid) const {
    for (const Host& h : hosts_)
      if (h.lid == lid) return &h;
    return nullptr;
  }

  MadBuf response_to(const MadBuf& req, std::uint8_t method) const {
    MadBuf r = req;
    r.hdr().method = method;
    r.addr.lid = kSaLid;
    return r;
  }

  void handle(const MadBuf& req) {
    const auto& h = req.hdr();
    if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm)) return;
    if (h.is_response() || req.as<wire::SaMad>().rmpp.active()) {  // RMPP ACKs from the storm
      sender_.on_mad(req);
      return;
    }
    ++requests;
    const auto sa = *wire::decode<wire::SaMad>(std::span<const std::uint8_t>(req.mad.bytes));
    if (h.attr_id.get() == wire::sa_attr::kNodeRecord) {
      const auto q = *wire::decode<wire::NodeRecord>(std::span<const std::uint8_t>(sa.data));
      const Host* d = by_lid(q.lid.get());
      MadBuf r = response_to(req, wire::method::kGetResp);
      wire::NodeRecord nr{};
      nr.lid = q.lid;
      nr.node_info.node_type = 1;
      nr.node_info.port_guid = wire::be64::from(d ? d->port_guid : 0);
      std::memcpy(r.mad.bytes.data() + wire::kSaHeaderSize, &nr, sizeof nr);
      out_.push_back(r);
      return;
    }
    const auto q = *wire::decode<wire::PathRecord>(std::span<const std::uint8_t>(sa.data));
    const Host* s = by_lid(q.slid.get());
    if (s == nullptr) return;
    if (h.method == wire::method::kGetTable) {
      // Every path from the source: one record per host (RMPP answer).
      std::vector<std::uint8_t> payload(hosts_.size() * 64);
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        wire::PathRecord pr{};
        const bool lie = s->lid == bad_table_slid && i == 3;
        pr.slid = wire::be16::from(lie ? hosts_[0].lid : s->lid);
        pr.sgid = gid(lie ? hosts_[0].port_guid : s->port_guid);
        pr.dlid = wire::be16::from(hosts_[i].lid);
        pr.dgid = gid(hosts_[i].port_guid);
        wire::set_table_record(std::span<std::uint8_t>(payload), 8, i, pr);
      }
      MadBuf tmpl = response_to(req, wire::method::kGetTableResp);
      tmpl.as<wire::SaMad>().attr_offset = wire::be16::from(8);
      EXPECT_EQ(sender_.send(tmpl, payload, nullptr, nullptr), madengine::RmppStart::kOk);
      return;
    }
    const Host* d = by_lid(q.dlid.get());
    if (d == nullptr) return;
    const Fault f = faults_ ? fault_of(s->lid, d->lid) : Fault::kNone;
    MadBuf r = response_to(req, wire::method::kGetResp);
    wire::PathRecord pr{};
    pr.slid = q.slid;
    pr.dlid = q.dlid;
    pr.sgid = gid(s->port_guid);
    pr.dgid = gid(d->port_guid);
    switch (f) {
      case Fault::kNone: break;
      case Fault::kWrongRecord: pr.dlid = wire::be16::from(static_cast<std::uint16_t>(d->lid + 100)); break;
      case Fault::kWrongTid:
        // Another slot of the TID (bit 19 of the low half): no query of the storm's.
        r.hdr().tid = wire::be64::from(h.tid.get() ^ (1ull << 19));
        break;
      case Fault::kBadStatus: r.hdr().status = wire::be16::from(wire::sa_status::kNoRecords); break;
      case Fault::kSilent: return;
      case Fault::kWrongAttr: r.hdr().attr_id = wire::be16::from(wire::sa_attr::kNodeRecord); break;
      case Fault::kWrongMethod: r.hdr().method = wire::method::kGetTableResp; break;
      case Fault::kBusy: r.hdr().status = wire::be16::from(wire::status::kBusy); break;
      case Fault::kMalformed: r.hdr().class_version = 1; break;
    }
    std::memcpy(r.mad.bytes.data() + wire::kSaHeaderSize, &pr, sizeof pr);
    out_.push_back(r);
    if (faults_ && duplicated(s->lid, d->lid)) out_.push_back(r);
  }

  const madengine::Clock& clock_;
  std::vector<Host> hosts_;
  bool faults_;
  madengine::LocalPort port_;
  madengine::RmppSender sender_;
  std::deque<MadBuf> out_;
};

StormConfig base_config() {
  StormConfig c;
  c.sa.lid = kSaLid;
  c.window_max = 16;
  c.window_per_host_max = 2;
  c.retry = RetryPolicy{.timeout_ms = 50, .retries = 2, .busy_backoff_ms = 10, .busy_retries = 2};
  return c;
}

// Time moves only when the storm has nothing to do: it jumps to the deadline.
auto idle_for(madengine::ManualClock& clock) {
  return [&clock](Nanos deadline_ns) { clock.set_ns(std::max(clock.now_ns(), deadline_ns)); };
}

TEST(FaultySa, EveryWrongAnswerLandsInItsCounter) {
  const auto hosts = make_hosts(12);
  madengine::ManualClock clock(1'000'000);
  FaultySa sa(clock, hosts, true);
  const WorkloadConfig wc{.pattern = Pattern::kJobStart};
  Workload w(wc, hosts);
  const StormConfig cfg = base_config();
  Storm storm(cfg, sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();

  // What the SA's rule says each query gets.
  std::array<std::uint64_t, kFaults> want{};
  std::uint64_t dups = 0;
  Workload again(wc, hosts);
  Query q;
  while (again.next(q)) {
    const auto s = hosts[q.src].lid, d = hosts[q.dst].lid;
    ++want[static_cast<std::size_t>(fault_of(s, d))];
    dups += duplicated(s, d) ? 1 : 0;
  }
  const auto n = [&](Fault f) { return want[static_cast<std::size_t>(f)]; };
  const auto e = [&](ErrorKind k) { return r.counters.error_by[static_cast<std::size_t>(k)]; };
  const StormCounters& c = r.counters;
  for (int f = 0; f < kFaults; ++f) EXPECT_GT(want[static_cast<std::size_t>(f)], 0u) << "fault " << f << " never tried";
  EXPECT_EQ(c.issued, 12u * 11u);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_EQ(c.answered, n(Fault::kNone));
  EXPECT_EQ(e(ErrorKind::kWrongRecord), n(Fault::kWrongRecord));
  EXPECT_EQ(e(ErrorKind::kBadStatus), n(Fault::kBadStatus));
  EXPECT_EQ(e(ErrorKind::kWrongAttr), n(Fault::kWrongAttr));
  EXPECT_EQ(e(ErrorKind::kWrongMethod), n(Fault::kWrongMethod));
  EXPECT_EQ(e(ErrorKind::kMalformed), n(Fault::kMalformed));
  EXPECT_EQ(e(ErrorKind::kRmppAborted), 0u);
  EXPECT_EQ(c.errors, n(Fault::kWrongRecord) + n(Fault::kBadStatus) + n(Fault::kWrongAttr) + n(Fault::kWrongMethod) +
                          n(Fault::kMalformed));
  // Silence and wrong TIDs both end in a timeout after 1 + retries sends;
  // each wrong-TID send drew one stray answer.
  EXPECT_EQ(c.timeouts, n(Fault::kSilent) + n(Fault::kWrongTid));
  EXPECT_EQ(c.unmatched, 3 * n(Fault::kWrongTid));
  EXPECT_EQ(c.resent, 2 * (n(Fault::kSilent) + n(Fault::kWrongTid)));
  // BUSY: asked 1 + busy_retries times, then counted as BUSY.
  EXPECT_EQ(c.busy, n(Fault::kBusy));
  EXPECT_EQ(c.busy_answers, 3 * n(Fault::kBusy));
  EXPECT_EQ(c.late, dups);
  EXPECT_EQ(sa.requests, c.sent);
  EXPECT_EQ(r.latency.count(), c.answered);
  EXPECT_LE(r.window_peak, cfg.window_max);

  // The JSON says the same, field by field.
  const auto j = to_json(RunInfo{.label = "faulty", .transport = "test", .storm = cfg, .workload = wc}, r);
  EXPECT_EQ(j["counts"]["issued"], c.issued);
  EXPECT_EQ(j["counts"]["timeouts"], c.timeouts);
  EXPECT_EQ(j["counts"]["error_kinds"]["wrong_record"], e(ErrorKind::kWrongRecord));
  EXPECT_EQ(j["counts"]["unmatched"], c.unmatched);
  EXPECT_EQ(j["counts_add_up"], true);
}

TEST(FaultySa, GetTableThroughRmppAndALyingTable) {
  const auto hosts = make_hosts(40);  // 40 x 64 bytes: 12 RMPP segments
  madengine::ManualClock clock(1'000'000);
  FaultySa sa(clock, hosts, false);
  sa.bad_table_slid = hosts[5].lid;
  Workload w(WorkloadConfig{.pattern = Pattern::kGetTable}, hosts);
  Storm storm(base_config(), sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  const StormCounters& c = r.counters;
  EXPECT_EQ(c.issued, 40u);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_EQ(c.answered, 39u);
  EXPECT_EQ(c.error_by[static_cast<std::size_t>(ErrorKind::kWrongRecord)], 1u);
  EXPECT_EQ(c.rmpp_transfers, 40u);
  EXPECT_EQ(c.records, 39u * 40u);
  EXPECT_EQ(c.timeouts, 0u);
}

TEST(FaultySa, OpenLoopIssuesOnScheduleAndCountsLatencyFromIt) {
  const auto hosts = make_hosts(8);
  madengine::ManualClock clock(5'000'000);
  FaultySa sa(clock, hosts, false);
  Workload w(WorkloadConfig{.pattern = Pattern::kRandomPairs, .seed = 9}, hosts);
  StormConfig cfg = base_config();
  cfg.rate_qps = 2000;
  cfg.duration_ms = 500;
  cfg.warmup_ms = 100;
  Storm storm(cfg, sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  EXPECT_EQ(r.counters.warmup_issued, 200u);
  EXPECT_EQ(r.counters.issued, 1000u);
  EXPECT_EQ(r.counters.answered, 1000u);
  EXPECT_NEAR(r.issue_rate_qps(), 2000.0, 1.0);
  EXPECT_EQ(r.schedule_lag.max(), 0u);
  // 100 ms buckets: 200 issues in each.
  ASSERT_EQ(r.series.size(), 5u);
  for (const auto& b : r.series) EXPECT_EQ(b.issued, 200u);
}

TEST(FaultySa, NodeRecordStormAndBadBounds) {
  const auto hosts = make_hosts(10);
  madengine::ManualClock clock(1);
  FaultySa sa(clock, hosts, false);
  Workload w(WorkloadConfig{.pattern = Pattern::kNodeRecord}, hosts);
  StormConfig cfg = base_config();
  cfg.queries_max = 300;
  {
    Storm storm(cfg, sa, clock, hosts, w);
    storm.set_idle(idle_for(clock));
    const StormResult r = storm.run();
    EXPECT_EQ(r.counters.issued, 300u);
    EXPECT_EQ(r.counters.answered, 300u);
    EXPECT_EQ(r.counters.issued_by[static_cast<std::size_t>(QueryKind::kNodeRecord)], 300u);
  }
  StormConfig bad = cfg;
  bad.window_max = 0;
  EXPECT_THROW(Storm(bad, sa, clock, hosts, w), std::invalid_argument);
  bad = cfg;
  bad.sa.lid = 0;
  EXPECT_THROW(Storm(bad, sa, clock, hosts, w), std::invalid_argument);
  bad = cfg;
  bad.rate_qps = -1;
  EXPECT_THROW(Storm(bad, sa, clock, hosts, w), std::invalid_argument);
}

TEST(FaultySa, ATransportThatRefusesEverythingEndsInTimeouts) {
  const auto hosts = make_hosts(6);
  madengine::ManualClock clock(1);
  FaultySa sa(clock, hosts, false);
  sa.refuse_tx = true;
  Workload w(WorkloadConfig{.pattern = Pattern::kJobStart}, hosts);
  Storm storm(base_config(), sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  EXPECT_EQ(r.counters.issued, 30u);
  EXPECT_EQ(r.counters.timeouts, 30u);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_GT(r.counters.tx_stalls, 0u);
  EXPECT_EQ(sa.requests, 0u);
}

}  // namespace
}  // namespace madstorm
