// GuidIndex: the port GUID -> LID slots GID-addressed PathRecords use. Every
// port is found with its base LID and LID count, unknown GUIDs and GUIDs
// whose LID entry names another port are not, whatever the GUID pattern.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "sa/guid_index.hpp"

namespace madengine::sa {
namespace {

// The index and the LID -> GUID table its checks read (a snapshot's LID entries).
struct Indexed {
  GuidIndex index;
  std::map<std::uint16_t, std::uint64_t> guid_at;
  GuidIndex::Lids find(std::uint64_t guid) const {
    return index.find(guid, [&](std::uint16_t lid) {
      const auto it = guid_at.find(lid);
      return it == guid_at.end() ? 0 : it->second;
    });
  }
};

Indexed build(const std::vector<GuidIndex::Entry>& entries) {
  Indexed x;
  x.index.build(entries);
  for (const auto& e : entries)
    if (e.lids.base != 0) x.guid_at[e.lids.base] = e.guid;
  return x;
}

TEST(GuidIndex, FindsEveryPortSequentialAndRandomGuids) {
  std::mt19937_64 rng(3);
  for (const bool sequential : {true, false}) {
    std::vector<GuidIndex::Entry> entries;
    std::uint16_t lid = 1;
    for (std::uint64_t i = 0; i < 20000; ++i) {
      const std::uint64_t guid = sequential ? 0x0002c90300a00000ull + i : rng() | 1;
      const std::uint8_t count = static_cast<std::uint8_t>(1u << (i % 3));  // LMC 0, 1, 2
      entries.push_back({guid, {lid, count}});
      lid = static_cast<std::uint16_t>(lid + count);
    }
    const Indexed x = build(entries);
    for (const auto& e : entries) {
      const GuidIndex::Lids got = x.find(e.guid);
      ASSERT_EQ(got.base, e.lids.base) << std::hex << e.guid;
      EXPECT_EQ(got.count, e.lids.count);
      EXPECT_EQ(x.index.likely_lid(e.guid), e.lids.base);
    }
    for (std::uint64_t i = 0; i < 20000; ++i) {
      const std::uint64_t absent = sequential ? 0x0002c90300b00000ull + i : (rng() & ~1ull);
      EXPECT_EQ(x.find(absent).base, 0) << std::hex << absent;
    }
  }
}

TEST(GuidIndex, ASlotWhoseLidNamesAnotherPortIsNoMatch) {
  const Indexed x = build({{0x10, {5, 1}}, {0x20, {6, 4}}});
  // The LID entry at 5 now holds another port: the slot's guess is not trusted.
  const GuidIndex::Lids got = x.index.find(0x10, [](std::uint16_t) { return std::uint64_t{0x99}; });
  EXPECT_EQ(got.base, 0);
  EXPECT_EQ(x.find(0x20).base, 6);
  EXPECT_EQ(x.find(0x20).count, 4);
}

TEST(GuidIndex, EmptyZeroGuidAndPortsWithoutLid) {
  const GuidIndex empty;
  EXPECT_EQ(empty.find(0x10, [](std::uint16_t) { return std::uint64_t{0x10}; }).base, 0);
  EXPECT_EQ(empty.likely_lid(0x10), 0);
  empty.prefetch(0x10);
  const Indexed x = build({{0, {3, 1}}, {0x30, {0, 1}}, {0x40, {4, 128}}});
  EXPECT_EQ(x.find(0).base, 0);     // GUID 0 is no port's
  EXPECT_EQ(x.find(0x30).base, 0);  // a port without a LID cannot be reached by GID
  EXPECT_EQ(x.find(0x40).base, 4);
  EXPECT_EQ(x.find(0x40).count, 128);  // LMC 7
}

TEST(GuidIndex, GuessNamesTheSlotsLidAndHint) {
  // The hint travels with the slot (a PathRecord prefetches its path entry
  // from it); a port without one reads kNoHint.
  std::vector<GuidIndex::Entry> entries;
  for (std::uint16_t i = 1; i <= 3000; ++i)
    entries.push_back({0x0002c90300c00000ull + i, {i, 1}, static_cast<std::uint16_t>(i % 7 == 0 ? GuidIndex::kNoHint : i * 3)});
  const Indexed x = build(entries);
  for (const auto& e : entries) {
    const GuidIndex::Guess g = x.index.guess(e.guid);
    ASSERT_EQ(g.lid, e.lids.base);
    EXPECT_EQ(g.hint, e.hint);
    EXPECT_EQ(x.find(e.guid).base, e.lids.base);
  }
  EXPECT_EQ(x.index.guess(0x0002c90300d00000ull).lid, 0);
}

TEST(GuidIndex, DuplicateGuidFindsTheFirstPort) {
  // Two ports reporting one GUID (a misconfigured fabric): the first listed
  // wins, as the snapshot's by-GUID map keeps the first.
  const Indexed x = [] {
    Indexed y;
    y.index.build({{0x50, {7, 1}}, {0x50, {8, 1}}});
    y.guid_at = {{7, 0x50}, {8, 0x50}};
    return y;
  }();
  EXPECT_EQ(x.find(0x50).base, 7);
}

}  // namespace
}  // namespace madengine::sa
