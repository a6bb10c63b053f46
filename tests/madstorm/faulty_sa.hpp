// A faulty SA for madstorm's tests: an in-process Transport that answers
// PathRecord, NodeRecord and GetTable queries (RMPP through the engine's
// RmppSender) and, by a rule on the query, answers wrongly: wrong record,
// wrong TID, bad status, silence, wrong attribute, wrong method, BUSY,
// malformed, duplicates. Time is a ManualClock the storm's idle hook
// advances, so timeouts and the open-loop schedule replay exactly.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include "lib/report.hpp"
#include "lib/storm.hpp"
#include "lib/workload.hpp"
#include "madengine/engine/clock.hpp"
#include "engine/rmpp.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"

namespace madstorm::faulty {

namespace wire = madengine::wire;
using madengine::MadBuf;

inline constexpr std::uint16_t kSaLid = 1;
inline constexpr std::uint64_t kPrefix = wire::kDefaultSubnetPrefix;

enum class Fault : int { kNone, kWrongRecord, kWrongTid, kBadStatus, kSilent, kWrongAttr, kWrongMethod, kBusy, kMalformed };
inline constexpr int kFaults = 9;

// The rule both the SA and the test's expectations use.
inline Fault fault_of(std::uint16_t slid, std::uint16_t dlid) { return static_cast<Fault>((slid * 7 + dlid) % kFaults); }
inline bool duplicated(std::uint16_t slid, std::uint16_t dlid) { return fault_of(slid, dlid) == Fault::kNone && slid % 2 == 0; }

inline std::vector<Host> make_hosts(std::uint32_t n) {
  std::vector<Host> h;
  for (std::uint32_t i = 0; i < n; ++i)
    h.push_back(Host{static_cast<std::uint16_t>(i + 2), 0x0002c90300001000ull + i, 0x0002c90300002000ull + i});
  return h;
}

inline wire::Gid gid(std::uint64_t guid) {
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

inline StormConfig base_config() {
  StormConfig c;
  c.sa.lid = kSaLid;
  c.window_max = 16;
  c.window_per_host_max = 2;
  c.retry = RetryPolicy{.timeout_ms = 50, .retries = 2, .busy_backoff_ms = 10, .busy_retries = 2};
  return c;
}

// Time moves only when the storm has nothing to do: it jumps to the deadline.
inline auto idle_for(madengine::ManualClock& clock) {
  return [&clock](Nanos deadline_ns) { clock.set_ns(std::max(clock.now_ns(), deadline_ns)); };
}

}  // namespace madstorm::faulty
