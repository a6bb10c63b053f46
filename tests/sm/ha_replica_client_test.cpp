// The standby's ReplicaClient (label fast): it sends a round's three
// GetTables with TIDs of its core, takes single-MAD answers (RMPP inactive:
// small tables, shims that cut answers to one MAD) and RMPP tables of many
// segments (each ACKed to a real RmppSender), ignores responses that are not
// its round's, and drops a round that does not complete in time.
#include "sm/ha/replica_client.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include "engine/dispatch.hpp"
#include "engine/rmpp.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa_records.hpp"

namespace madengine::sm::ha {
namespace {

namespace a = wire::sa_attr;

struct Queue final : TxSink {
  std::deque<MadBuf> q;
  bool send(const MadBuf& b) noexcept override {
    q.push_back(b);
    return true;
  }
};

constexpr std::uint16_t kCore = 3;

wire::ServiceRecord service(std::uint64_t id) {
  wire::ServiceRecord r{};
  r.service_id = wire::be64::from(id);
  r.service_gid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(0x100 + id)};
  r.service_pkey = wire::be16::from(0xffff);
  r.service_lease = wire::be32::from(wire::kServiceLeaseInfinite);
  r.set_name("replica.client");
  return r;
}

// The response header for `query` (status, AttributeOffset of `rec_size`).
MadBuf answer_of(const MadBuf& query, std::uint16_t status, std::size_t rec_size) {
  MadBuf b = query;
  auto& sa = b.as<wire::SaMad>();
  sa.hdr.method = wire::method::kGetTableResp;
  sa.hdr.status = wire::be16::from(status);
  sa.attr_offset = wire::be16::from(static_cast<std::uint16_t>(rec_size / 8));
  sa.sm_key = wire::be64::from(0);
  std::memset(sa.data.data(), 0, sa.data.size());
  b.addr.lid = 1;  // from the master's SA
  return b;
}

class HaReplicaClient : public ::testing::Test {
 protected:
  HaReplicaClient() : client_(clock_, to_master_, kCore) {}
  std::vector<MadBuf> start() {
    EXPECT_TRUE(client_.start(SaTarget{.lid = 1}, 1, kNanosPerSecond, nullptr));
    std::vector<MadBuf> q(to_master_.q.begin(), to_master_.q.end());
    to_master_.q.clear();
    return q;
  }
  ManualClock clock_{1'000};
  Queue to_master_;
  ReplicaClient client_;
};

TEST_F(HaReplicaClient, SingleMadAnswersMakeAnImage) {
  const auto q = start();
  ASSERT_EQ(q.size(), 3u);
  for (const MadBuf& m : q) EXPECT_EQ(tid_core(m.hdr().tid.get()), kCore);
  EXPECT_TRUE(client_.in_flight());
  // Not ours: an SMP response, and an SA answer with another TID.
  MadBuf smp = q[0];
  smp.hdr().mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnLid);
  smp.hdr().method = wire::method::kGetResp;
  EXPECT_FALSE(client_.on_response(smp));
  MadBuf other = answer_of(q[0], 0, sizeof(wire::ServiceRecord));
  other.hdr().tid = wire::be64::from(other.hdr().tid.get() + 7);
  EXPECT_FALSE(client_.on_response(other));

  MadBuf sr = answer_of(q[0], 0, sizeof(wire::ServiceRecord));
  const wire::ServiceRecord rec = service(0x42);
  std::memcpy(sr.as<wire::SaMad>().data.data(), &rec, sizeof rec);
  EXPECT_TRUE(client_.on_response(sr));
  EXPECT_TRUE(client_.on_response(answer_of(q[1], wire::sa_status::kNoRecords, sizeof(wire::McMemberRecord))));
  EXPECT_TRUE(client_.on_response(answer_of(q[2], wire::sa_status::kNoRecords, sizeof(wire::InformInfoRecord))));
  EXPECT_FALSE(client_.in_flight());
  ASSERT_TRUE(client_.image().has_value()) << client_.last_error();
  ASSERT_EQ(client_.image()->services.size(), 1u);
  EXPECT_EQ(client_.image()->services[0].rec.service_id.get(), 0x42u);
  EXPECT_EQ(client_.image_at_ns(), clock_.now_ns());
  EXPECT_EQ(client_.counters().complete, 1u);
  const auto taken = client_.take_image();
  EXPECT_TRUE(taken.has_value());
  EXPECT_FALSE(client_.image().has_value());
}

TEST_F(HaReplicaClient, RmppTableOfManySegmentsIsAckedAndReassembled) {
  const auto q = start();
  ASSERT_EQ(q.size(), 3u);
  // The master's SA side: an RmppSender sending 40 ServiceRecords (32 segments).
  Queue to_standby;
  RmppSender sender(clock_, to_standby, RmppConfig{.transfers_max = 2, .segments_max = 64});
  std::vector<std::uint8_t> payload;
  for (std::uint64_t i = 0; i < 40; ++i) {
    const wire::ServiceRecord r = service(i);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&r);
    payload.insert(payload.end(), p, p + sizeof r);
  }
  bool sent = false;
  MadBuf tmpl = answer_of(q[0], 0, sizeof(wire::ServiceRecord));
  tmpl.addr.lid = 2;  // the master sends to the standby
  ASSERT_EQ(sender.send(tmpl, payload,
                        [](void* user, const RmppSendDone& d) noexcept {
                          *static_cast<bool*>(user) = d.outcome == RmppOutcome::kDone;
                        },
                        &sent),
            RmppStart::kOk);
  for (int step = 0; step < 10'000 && !sent; ++step) {
    sender.poll(clock_.now_ns());
    while (!to_standby.q.empty()) {
      MadBuf seg = to_standby.q.front();
      to_standby.q.pop_front();
      seg.addr.lid = 1;  // as received: from the master
      EXPECT_TRUE(client_.on_response(seg));
    }
    while (!to_master_.q.empty()) {  // the client's ACKs
      MadBuf ack = to_master_.q.front();
      to_master_.q.pop_front();
      ack.addr.lid = 2;  // from the standby
      sender.on_mad(ack);
    }
    clock_.advance_ns(kNanosPerMilli);
    client_.poll(clock_.now_ns());
  }
  ASSERT_TRUE(sent);
  EXPECT_TRUE(client_.on_response(answer_of(q[1], wire::sa_status::kNoRecords, sizeof(wire::McMemberRecord))));
  EXPECT_TRUE(client_.on_response(answer_of(q[2], wire::sa_status::kNoRecords, sizeof(wire::InformInfoRecord))));
  ASSERT_TRUE(client_.image().has_value()) << client_.last_error();
  ASSERT_EQ(client_.image()->services.size(), 40u);
  for (std::uint64_t i = 0; i < 40; ++i) EXPECT_EQ(client_.image()->services[i].rec.service_id.get(), i);
}

TEST_F(HaReplicaClient, RoundNotCompleteInTimeIsDropped) {
  const auto q = start();
  EXPECT_TRUE(client_.on_response(answer_of(q[1], wire::sa_status::kNoRecords, sizeof(wire::McMemberRecord))));
  clock_.advance_ns(2 * kNanosPerSecond);
  client_.poll(clock_.now_ns());
  EXPECT_FALSE(client_.in_flight());
  EXPECT_EQ(client_.counters().timed_out, 1u);
  EXPECT_FALSE(client_.image().has_value());
  // A late answer of the dropped round is no longer ours.
  EXPECT_FALSE(client_.on_response(answer_of(q[0], wire::sa_status::kNoRecords, sizeof(wire::ServiceRecord))));
  // An error status fails the round with a reason.
  const auto q2 = start();
  EXPECT_TRUE(client_.on_response(answer_of(q2[0], wire::sa_status::kReqInvalid, sizeof(wire::ServiceRecord))));
  EXPECT_EQ(client_.counters().failed, 1u);
  EXPECT_NE(client_.last_error().find("ServiceRecord"), std::string::npos);
}

}  // namespace
}  // namespace madengine::sm::ha
