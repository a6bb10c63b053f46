// SA server under load: a burst larger than the queue is answered BUSY at
// once (nothing admitted is lost, counters add up), a flooding requester gets
// BUSY before others do, retried TIDs are answered once, and with two cores
// PathRecord queries run on the core owning their destination's shard while
// GetTable answers (and their RMPP ACKs) stay on the core their TID names.
#include <gtest/gtest.h>

#include <cstring>

#include "sa_fixture.hpp"

namespace madengine::sa {
namespace {

using namespace testing;
namespace a = wire::sa_attr;
namespace m = wire::method;
namespace cm = wire::path_record_cm;

MadBuf path_get(std::uint16_t slid, std::uint16_t dlid, std::uint64_t tid, std::uint16_t from) {
  wire::PathRecord q{};
  q.slid = wire::be16::from(slid);
  q.dlid = wire::be16::from(dlid);
  return sa_request(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid, q, tid, from);
}

struct Tally {
  std::size_t ok = 0, busy = 0, other = 0;
};

Tally tally(SaHarness& h, std::uint64_t tid_first, std::uint64_t tid_end) {
  Tally t;
  for (std::uint64_t tid = tid_first; tid < tid_end; ++tid) {
    const auto it = h.answers().find(tid);
    if (it == h.answers().end()) continue;
    const std::uint16_t s = it->second.status();
    (s == 0 ? t.ok : s == wire::status::kBusy ? t.busy : t.other)++;
  }
  return t;
}

TEST(SaStorm, BurstBeyondTheQueueIsAnsweredBusy) {
  auto b = build_snapshot(madengine::testing::fat_tree2(2, 1, 4));
  SaServerConfig cfg;
  cfg.queue_max = 8;
  cfg.requester_queued_max = 8;
  SaHarness h(b.snap, cfg);
  const auto lids = ca_lids(*b.snap);
  for (std::uint64_t i = 0; i < 24; ++i)
    ASSERT_TRUE(h.inject(path_get(lids[0], lids[1 + i % 7], 0x1000 + i, lids[0])));
  h.pump();
  const Tally t = tally(h, 0x1000, 0x1000 + 24);
  EXPECT_EQ(t.ok + t.busy, 24u);  // every query answered, none lost
  EXPECT_EQ(t.ok, 8u);
  EXPECT_EQ(t.busy, 16u);
  const auto c = h.server().counters()[SaRecordKind::kPath];
  EXPECT_EQ(c.received, 24u);
  EXPECT_EQ(c.answered, 8u);
  EXPECT_EQ(c.busy, 16u);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(c.received, c.answered + c.busy + c.duplicates + c.dropped);
  // Once drained, the same requester is served again.
  const auto r = h.ask(path_get(lids[0], lids[1], 0x2000, lids[0]));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), 0);
}

TEST(SaStorm, BusyUntilTheFirstSnapshot) {
  auto b = build_snapshot(madengine::testing::fat_tree2(2, 1, 2));
  SaHarness h(nullptr);
  const auto lids = ca_lids(*b.snap);
  auto r = h.ask(path_get(lids[0], lids[1], 0x900, lids[0]));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), wire::status::kBusy);
  h.publish(b.snap);
  r = h.ask(path_get(lids[0], lids[1], 0x900, lids[0]));  // the retry is a new attempt
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), 0);
  const auto c = h.server().counters()[SaRecordKind::kPath];
  EXPECT_EQ(c.busy, 1u);
  EXPECT_EQ(c.answered, 1u);
  EXPECT_EQ(c.received, c.answered + c.busy + c.duplicates + c.dropped);
}

TEST(SaStorm, AFloodingRequesterGetsBusyFirst) {
  auto b = build_snapshot(madengine::testing::fat_tree2(2, 1, 4));
  SaServerConfig cfg;
  cfg.queue_max = 16;
  cfg.requester_queued_max = 4;
  SaHarness h(b.snap, cfg);
  const auto lids = ca_lids(*b.snap);
  // A floods with 20 queries, then B and C ask 3 each, all in one burst.
  for (std::uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(h.inject(path_get(lids[0], lids[2], 0x3000 + i, lids[0])));
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(h.inject(path_get(lids[1], lids[2], 0x4000 + i, lids[1])));
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(h.inject(path_get(lids[3], lids[2], 0x5000 + i, lids[3])));
  h.pump();
  const Tally flood = tally(h, 0x3000, 0x3000 + 20), b1 = tally(h, 0x4000, 0x4003), c1 = tally(h, 0x5000, 0x5003);
  EXPECT_EQ(flood.ok, 4u);
  EXPECT_EQ(flood.busy, 16u);
  EXPECT_EQ(b1.ok, 3u);
  EXPECT_EQ(c1.ok, 3u);
  EXPECT_EQ(h.server().counters().total().dropped, 0u);
}

TEST(SaStorm, RetriedTidsAreAnsweredOnce) {
  auto b = build_snapshot(madengine::testing::fat_tree2(2, 1, 4));
  SaHarness h(b.snap);
  const auto lids = ca_lids(*b.snap);
  // Three copies while the first is still queued: one answer.
  const MadBuf q = path_get(lids[0], lids[3], 0x6000, lids[0]);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.inject(q));
  h.pump();
  EXPECT_EQ(h.answers_to(0x6000), 1u);
  // A retry after the answer: the cached answer again, not a second query.
  ASSERT_TRUE(h.inject(q));
  h.pump();
  EXPECT_EQ(h.answers_to(0x6000), 2u);
  const auto c = h.server().counters()[SaRecordKind::kPath];
  EXPECT_EQ(c.received, 4u);
  EXPECT_EQ(c.answered, 1u);
  EXPECT_EQ(c.duplicates, 3u);
  // The same TID from another requester is another query.
  ASSERT_TRUE(h.inject(path_get(lids[1], lids[3], 0x6000, lids[1])));
  h.pump();
  EXPECT_EQ(h.server().counters()[SaRecordKind::kPath].answered, 2u);
  // A GetTable retried while its RMPP transfer runs: one transfer.
  const MadBuf t = sa_request(m::kGetTable, a::kNodeRecord, 0, wire::NodeRecord{}, 0x7000, lids[0]);
  ASSERT_TRUE(h.inject(t));
  ASSERT_TRUE(h.inject(t));
  h.pump();
  EXPECT_EQ(h.answers_to(0x7000), 1u);
  EXPECT_EQ(h.server().counters().rmpp_transfers, 1u);
}

// A client that reuses a TID once its transaction is over (osmtest does)
// sends a new request: only the same request (requester, TID and every byte)
// is a retry answered from the cache.
TEST(SaStorm, AReusedTidWithAnotherRequestIsANewQuery) {
  auto b = build_snapshot(madengine::testing::fat_tree2(2, 1, 4));
  SaHarness h(b.snap);
  const auto lids = ca_lids(*b.snap);
  constexpr std::uint64_t kTid = 0x9000;
  auto r = h.ask(path_get(lids[0], lids[1], kTid, lids[0]));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first.hdr().attr_id.get(), a::kPathRecord);
  EXPECT_EQ(r->record<wire::PathRecord>().dlid.get(), lids[1]);
  // Same TID, another attribute.
  wire::NodeRecord nr{};
  nr.lid = wire::be16::from(lids[2]);
  r = h.ask(sa_request(m::kGet, a::kNodeRecord, wire::node_record_cm::kLid, nr, kTid, lids[0]));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->first.hdr().attr_id.get(), a::kNodeRecord);
  EXPECT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::NodeRecord>().lid.get(), lids[2]);
  // Same TID and attribute, another record asked for.
  r = h.ask(path_get(lids[0], lids[3], kTid, lids[0]));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->record<wire::PathRecord>().dlid.get(), lids[3]);
  // Same TID, another attribute modifier.
  MadBuf q = path_get(lids[0], lids[3], kTid, lids[0]);
  q.hdr().attr_mod = wire::be32::from(1);
  r = h.ask(q);
  ASSERT_TRUE(r);
  // The very same request again: the cached answer, not a new query.
  r = h.ask(q);
  ASSERT_TRUE(r);
  const auto c = h.server().counters().total();
  EXPECT_EQ(c.answered, 4u);
  EXPECT_EQ(c.duplicates, 1u);
  EXPECT_EQ(c.received, c.answered + c.busy + c.duplicates + c.dropped);
}

// The retry cache keeps 120 bytes of a short answer and whole MADs only for
// longer ones: either way a retry gets the first answer byte for byte.
TEST(SaStorm, RetriedAnswersAreByteIdentical) {
  auto b = build_snapshot(madengine::testing::fat_tree2(2, 1, 4));
  SaHarness h(b.snap);
  const auto lids = ca_lids(*b.snap);
  wire::NodeRecord nr{};
  nr.lid = wire::be16::from(0xbeef);  // no such LID: NoRecords, the request's data echoed
  std::memset(&nr.node_description, 'x', sizeof(nr.node_description));  // non-zero beyond 64 data bytes
  wire::NodeRecord known{};
  known.lid = wire::be16::from(lids[3]);
  wire::ClassPortInfo cpi{};
  const MadBuf reqs[] = {
      path_get(lids[0], lids[3], 0x8000, lids[0]),                                       // 64-byte record
      sa_request(m::kGet, a::kClassPortInfo, 0, cpi, 0x8001, lids[1]),                   // 72-byte record
      sa_request(m::kGet, a::kNodeRecord, wire::node_record_cm::kLid, nr, 0x8002, lids[2]),  // error, long echo
      sa_request(m::kGet, a::kNodeRecord, wire::node_record_cm::kLid, known, 0x8003, lids[2]),  // 108-byte record
  };
  for (const MadBuf& q : reqs) {
    const auto first = h.ask(q);
    ASSERT_TRUE(first.has_value());
    const auto again = h.ask(q);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(first->first.len, again->first.len);
    EXPECT_EQ(first->first.mad.bytes, again->first.mad.bytes) << "tid " << q.hdr().tid.get();
    EXPECT_EQ(h.answers_to(q.hdr().tid.get()), 2u);
  }
  EXPECT_NE(h.answers().at(0x8002).status(), 0u);
  const auto c = h.server().counters().total();
  EXPECT_EQ(c.duplicates, 4u);
  EXPECT_EQ(c.dropped, 0u);
}

TEST(SaStorm, TwoCoresShardPathsAndKeepTransfersWithTheirTid) {
  auto b = build_snapshot(madengine::testing::fat_tree2(4, 2, 4));
  SaHarness h(b.snap, {}, 2);
  const auto lids = ca_lids(*b.snap);
  // One at a time: core 0, which receives them, answers each itself.
  std::uint64_t tid = 0x8000;
  for (const auto d : lids) {
    const auto r = h.ask(path_get(lids[0], d, ++tid, lids[0]));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status(), 0);
    EXPECT_EQ(r->record<wire::PathRecord>().dlid.get(), d);
  }
  EXPECT_EQ(h.engine().stats().cores[1].counters.handled, 0u);
  // A storm (every query queued before the engine runs, more than one
  // receive burst takes): each core runs the queries of its shard (DLID
  // modulo the cores).
  std::size_t even = 0, odd = 0;
  const std::uint64_t first_tid = tid + 1;
  for (int round = 0; round < 8; ++round) {
    for (const auto d : lids) {
      (d % 2 == 0 ? even : odd)++;
      ASSERT_TRUE(h.inject(path_get(lids[0], d, ++tid, lids[0])));
    }
  }
  h.pump();
  for (std::uint64_t t = first_tid; t <= tid; ++t) {
    ASSERT_EQ(h.answers().count(t), 1u) << t;
    EXPECT_EQ(h.answers().at(t).status(), 0);
  }
  const auto stats = h.engine().stats();
  EXPECT_EQ(stats.cores[1].counters.handled, odd);
  EXPECT_GT(odd, 0u);
  EXPECT_GT(even, 0u);
  // A storm of GID-addressed Gets (rdma_cm's shape) is spread over both
  // cores too, by the DGID's GUID, and every one is answered.
  const std::uint64_t gid_first = tid + 1;
  for (int round = 0; round < 8; ++round)
    for (const auto d : lids) {
      wire::PathRecord q{};
      q.sgid = gid_of(port_guid_of_lid(*b.snap, lids[0]));
      q.dgid = gid_of(port_guid_of_lid(*b.snap, d));
      q.pkey = wire::be16::from(0xffff);
      q.set_numb_path(1);
      q.set_reversible(true);
      ASSERT_TRUE(h.inject(sa_request(m::kGet, a::kPathRecord, cm::kSGid | cm::kDGid | cm::kPKey | cm::kNumbPath | cm::kReversible,
                                      q, ++tid, lids[0])));
    }
  h.pump();
  for (std::uint64_t t = gid_first; t <= tid; ++t) {
    ASSERT_EQ(h.answers().count(t), 1u) << t;
    EXPECT_EQ(h.answers().at(t).status(), 0);
  }
  EXPECT_GT(h.engine().stats().cores[1].counters.handled, odd);
  EXPECT_LT(h.engine().stats().cores[1].counters.handled, odd + 8 * lids.size());
  // A GetTable whose TID names core 1: its RMPP answer completes there.
  const MadBuf t = sa_request(m::kGetTable, a::kNodeRecord, 0, wire::NodeRecord{}, make_tid_low(1, 0x99), lids[0]);
  const auto r = h.ask(t);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->rmpp);
  EXPECT_EQ(r->records<wire::NodeRecord>().size(), b.snap->by_port_guid.size());
  EXPECT_EQ(h.server().counters().total().dropped, 0u);
}

}  // namespace
}  // namespace madengine::sa
