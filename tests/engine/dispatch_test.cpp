// Dispatcher: wildcard precedence, owner selectors (fixed, shard by field),
// responses steered by the core id in the TID, malformed MADs, and the
// unsupported-method/attribute answer.
#include "engine/dispatch.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "madengine/wire/sa.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine {
namespace {

struct NullHandler final : MadHandler {
  void on_mad(MadBuf&, CoreContext&) noexcept override {}
};

MadBuf make_mad(std::uint8_t klass, std::uint8_t meth, std::uint16_t attr, std::uint64_t tid = 1) {
  MadBuf b;
  auto& h = b.hdr();
  h.base_version = 1;
  h.mgmt_class = klass;
  h.class_version = klass == 0x03 ? 2 : 1;
  h.method = meth;
  h.attr_id = wire::be16::from(attr);
  h.tid = wire::be64::from(tid);
  return b;
}

struct VectorSink final : TxSink {
  std::vector<MadBuf> sent;
  bool send(const MadBuf& b) noexcept override {
    sent.push_back(b);
    return true;
  }
};

constexpr std::uint8_t kSa = 0x03;
constexpr std::uint8_t kDr = 0x81;

TEST(Tid, CoreIdSitsInTheTopBitsOfTheLowHalf) {
  const std::uint64_t tid = (std::uint64_t{0xdeadbeef} << 32) | make_tid_low(5, 1234);
  EXPECT_EQ(tid_core(tid), 5);
  EXPECT_EQ(static_cast<std::uint32_t>(tid) & kTidSeqMask, 1234u);
  EXPECT_EQ(tid_core(make_tid_low(3, 0xffffffffu)), 3);  // the sequence cannot spill into the core id
}

TEST(Dispatcher, MostSpecificKeyWins) {
  Dispatcher d(4);
  NullHandler exact, any_attr, any_method, any;
  d.add({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, exact, OwnerSelector::fixed(1));
  d.add({kSa, wire::method::kGet, std::nullopt}, any_attr, OwnerSelector::fixed(2));
  d.add({kSa, std::nullopt, wire::sa_attr::kNodeRecord}, any_method, OwnerSelector::fixed(3));
  d.add({std::nullopt, std::nullopt, std::nullopt}, any, OwnerSelector::fixed(0));

  auto r = d.route(make_mad(kSa, wire::method::kGet, wire::sa_attr::kPathRecord));
  EXPECT_EQ(r.verdict, DispatchVerdict::kHandler);
  EXPECT_EQ(r.handler, &exact);
  EXPECT_EQ(r.core, 1);
  // (class, method, *) beats (class, *, attr): method is checked before attribute wildcards.
  r = d.route(make_mad(kSa, wire::method::kGet, wire::sa_attr::kNodeRecord));
  EXPECT_EQ(r.handler, &any_attr);
  r = d.route(make_mad(kSa, wire::method::kGetTable, wire::sa_attr::kNodeRecord));
  EXPECT_EQ(r.handler, &any_method);
  EXPECT_EQ(r.core, 3);
  r = d.route(make_mad(0x04, wire::method::kGet, 0x12));
  EXPECT_EQ(r.handler, &any);
  EXPECT_EQ(d.handler_for(make_mad(kSa, wire::method::kGet, wire::sa_attr::kPathRecord)), &exact);
}

TEST(Dispatcher, ManyHandlersSurviveTableGrowth) {
  Dispatcher d(4);
  std::vector<NullHandler> hs(300);
  for (std::uint16_t a = 0; a < hs.size(); ++a)
    d.add({kSa, wire::method::kGet, a}, hs[a], OwnerSelector::fixed(static_cast<std::uint16_t>(a % 4)));
  for (std::uint16_t a = 0; a < hs.size(); ++a) {
    const Route r = d.route(make_mad(kSa, wire::method::kGet, a));
    ASSERT_EQ(r.handler, &hs[a]) << a;
    EXPECT_EQ(r.core, a % 4);
  }
  EXPECT_EQ(d.route(make_mad(kSa, wire::method::kGet, 300)).verdict, DispatchVerdict::kNoHandler);
  EXPECT_EQ(d.route(make_mad(kSa, wire::method::kSet, 1)).verdict, DispatchVerdict::kNoHandler);
}

TEST(Dispatcher, NoHandlerAndDuplicates) {
  Dispatcher d(2);
  NullHandler h;
  d.add({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, h, OwnerSelector::fixed(0));
  EXPECT_THROW(d.add({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, h, OwnerSelector::fixed(1)),
               std::invalid_argument);
  EXPECT_THROW(d.add({kSa, wire::method::kSet, std::nullopt}, h, OwnerSelector::fixed(2)), std::invalid_argument);
  EXPECT_EQ(d.route(make_mad(kSa, wire::method::kGet, wire::sa_attr::kNodeRecord)).verdict,
            DispatchVerdict::kNoHandler);
}

TEST(Dispatcher, MalformedMadsAreRejected) {
  Dispatcher d(1);
  MadBuf shortm = make_mad(kSa, wire::method::kGet, 0x35);
  shortm.len = 20;
  EXPECT_EQ(d.route(shortm).verdict, DispatchVerdict::kMalformed);
  MadBuf badver = make_mad(kSa, wire::method::kGet, 0x35);
  badver.hdr().base_version = 2;
  EXPECT_EQ(d.route(badver).verdict, DispatchVerdict::kMalformed);
}

TEST(Dispatcher, ShardsPathRecordsByDlid) {
  Dispatcher d(4);
  NullHandler h;
  d.add({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, h,
        OwnerSelector::by_be16_at(kPathRecordDlidOffset));
  std::vector<int> per_core(4, 0);
  for (std::uint16_t dlid = 1; dlid <= 400; ++dlid) {
    MadBuf m = make_mad(kSa, wire::method::kGet, wire::sa_attr::kPathRecord);
    m.mad.bytes[kPathRecordDlidOffset] = static_cast<std::uint8_t>(dlid >> 8);
    m.mad.bytes[kPathRecordDlidOffset + 1] = static_cast<std::uint8_t>(dlid);
    const Route r = d.route(m);
    ASSERT_EQ(r.verdict, DispatchVerdict::kHandler);
    EXPECT_EQ(r.core, dlid % 4);
    ++per_core[r.core];
  }
  for (int n : per_core) EXPECT_EQ(n, 100);
  // By DGID GUID: deterministic and spread over all cores.
  Dispatcher g(4);
  g.add({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, h, OwnerSelector::by_be64_at(kPathRecordDgidGuidOffset));
  std::vector<int> hits(4, 0);
  for (std::uint64_t guid = 0x0002c90300001000ull; guid < 0x0002c90300001000ull + 64; ++guid) {
    MadBuf m = make_mad(kSa, wire::method::kGet, wire::sa_attr::kPathRecord);
    for (int i = 0; i < 8; ++i) m.mad.bytes[kPathRecordDgidGuidOffset + i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
    ++hits[g.route(m).core];
    EXPECT_EQ(g.route(m).core, g.route(m).core);
  }
  for (int n : hits) EXPECT_GT(n, 0);
}

TEST(Dispatcher, ResponsesGoToTheHookOfTheCoreInTheTid) {
  Dispatcher d(3);
  NullHandler hook1;
  d.set_response_hook(1, hook1);
  const std::uint64_t tid = (std::uint64_t{7} << 32) | make_tid_low(1, 42);
  Route r = d.route(make_mad(kDr, wire::method::kGetResp, wire::smp_attr::kNodeInfo, tid));
  EXPECT_EQ(r.verdict, DispatchVerdict::kResponse);
  EXPECT_EQ(r.core, 1);
  EXPECT_EQ(r.handler, &hook1);
  // No hook on core 2, and a core id beyond the engine: no handler.
  EXPECT_EQ(d.route(make_mad(kDr, wire::method::kGetResp, 0x11, make_tid_low(2, 1))).verdict, DispatchVerdict::kNoHandler);
  EXPECT_EQ(d.route(make_mad(kDr, wire::method::kGetResp, 0x11, make_tid_low(9, 1))).verdict, DispatchVerdict::kNoHandler);
}

TEST(Unsupported, AnswersRequestsOnly) {
  VectorSink sink;
  MadBuf get = make_mad(kSa, wire::method::kGet, 0x7777);
  EXPECT_TRUE(answer_unsupported(get, sink));
  ASSERT_EQ(sink.sent.size(), 1u);
  EXPECT_EQ(sink.sent[0].hdr().method, wire::method::kGetResp);
  EXPECT_EQ(sink.sent[0].hdr().status.get(), wire::status::kMethodAttrUnsupported);

  MadBuf set = make_mad(0x01, wire::method::kSet, 0x7777);
  EXPECT_TRUE(make_error_response(set, wire::status::kMethodAttrUnsupported));
  EXPECT_EQ(set.hdr().method, wire::method::kGetResp);  // IBA 13.4.5: Set is answered by GetResp

  MadBuf table = make_mad(kSa, wire::method::kGetTable, 0x7777);
  EXPECT_TRUE(make_error_response(table, wire::status::kMethodAttrUnsupported));
  EXPECT_EQ(table.hdr().method, wire::method::kGetTableResp);

  MadBuf dr = make_mad(kDr, wire::method::kGet, 0x7777);
  EXPECT_TRUE(make_error_response(dr, wire::status::kMethodAttrUnsupported));
  EXPECT_TRUE(dr.as<wire::DrSmp>().direction_in());
  EXPECT_EQ(dr.as<wire::DrSmp>().smp_status(), wire::status::kMethodAttrUnsupported);

  for (std::uint8_t m : {wire::method::kSend, wire::method::kTrap, wire::method::kGetResp, wire::method::kTrapRepress}) {
    MadBuf b = make_mad(kSa, m, 0x7777);
    const MadBuf before = b;
    EXPECT_FALSE(answer_unsupported(b, sink)) << int(m);
    EXPECT_EQ(b.mad.bytes, before.mad.bytes);
  }
  EXPECT_EQ(sink.sent.size(), 1u);
}

}  // namespace
}  // namespace madengine
