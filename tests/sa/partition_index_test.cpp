// PartitionIndex: the P_Key check behind PathRecords. Whether two ports
// share a named partition (both hold it, one as a full member, IBA 10.9.3)
// and the partition's SL agree with a walk of both P_Key tables, on subnets
// with few partitions (answered from per-set bit sets) and with more than
// the bit sets hold (answered by searching the sets).
#include <gtest/gtest.h>

#include <random>

#include "madengine/wire/smp/pkey_table.hpp"
#include "sa/partition_index.hpp"

namespace madengine::sa {
namespace {

// Membership of `base` in a table: 1 limited, 2 full (both when listed twice).
unsigned membership(const std::vector<std::uint16_t>& table, std::uint16_t base) {
  unsigned bits = 0;
  for (const std::uint16_t k : table)
    if (wire::pkey_is_valid(k) && wire::pkey_base(k) == base) bits |= wire::pkey_is_full_member(k) ? 2u : 1u;
  return bits;
}

bool walk_shares(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b, std::uint16_t pkey) {
  if (!wire::pkey_is_valid(pkey)) return false;
  const unsigned x = membership(a, wire::pkey_base(pkey)), y = membership(b, wire::pkey_base(pkey));
  return x != 0 && y != 0 && ((x | y) & 2u) != 0;
}

void check_against_walk(std::size_t partitions, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint16_t> bases;
  for (std::size_t i = 0; i < partitions; ++i) bases.push_back(static_cast<std::uint16_t>(0x100 + 3 * i));
  std::vector<PartitionInfo> defined;
  for (std::size_t i = 0; i < partitions; i += 2) defined.push_back({bases[i], static_cast<std::uint8_t>(i % 16)});
  // LID 0 unused; ports hold the default partition and a few others, full or limited.
  constexpr std::size_t kLids = 400;
  std::vector<std::vector<std::uint16_t>> tables(kLids);
  std::vector<std::span<const std::uint16_t>> spans(kLids);
  for (std::size_t lid = 1; lid < kLids; ++lid) {
    auto& t = tables[lid];
    if (lid % 50 == 0) continue;  // not read: the default partition, full
    t.push_back(rng() % 4 == 0 ? 0x7fff : 0xffff);
    for (std::size_t k = 0; k < 1 + rng() % 6; ++k)
      t.push_back(static_cast<std::uint16_t>(bases[rng() % bases.size()] | (rng() % 2 != 0 ? 0x8000 : 0)));
    if (rng() % 5 == 0) t.push_back(0);  // an empty entry
    spans[lid] = tables[lid];
  }
  PartitionIndex index;
  index.build(spans, defined);
  const auto table_of = [&](std::size_t lid) {
    return lid % 50 == 0 ? std::vector<std::uint16_t>{wire::kDefaultPKey} : tables[lid];
  };
  std::vector<std::uint16_t> asked = bases;
  asked.push_back(0x7fff);
  asked.push_back(0x0005);  // held by no port
  asked.push_back(0);       // invalid
  for (int q = 0; q < 20000; ++q) {
    const std::size_t s = 1 + rng() % (kLids - 1), d = 1 + rng() % (kLids - 1);
    const auto pkey = static_cast<std::uint16_t>(asked[rng() % asked.size()] | (rng() % 2 != 0 ? 0x8000 : 0));
    ASSERT_EQ(index.shares(index.set_of(static_cast<std::uint16_t>(s)), index.set_of(static_cast<std::uint16_t>(d)), pkey),
              walk_shares(table_of(s), table_of(d), pkey))
        << "partitions " << partitions << " LIDs " << s << ", " << d << " P_Key 0x" << std::hex << pkey;
  }
  for (const std::uint16_t b : asked) {
    std::uint8_t sl = 0;
    for (const PartitionInfo& p : defined)
      if (p.pkey == wire::pkey_base(b)) sl = p.sl;
    EXPECT_EQ(index.sl_of(b), sl) << std::hex << b;
    EXPECT_EQ(index.sl_of(static_cast<std::uint16_t>(b | 0x8000)), sl) << std::hex << b;
  }
  EXPECT_FALSE(index.shares(PartitionIndex::kNoSet, index.set_of(1), 0xffff));
}

TEST(PartitionIndex, NamedPKeyAgreesWithTableWalkFewPartitions) { check_against_walk(10, 1); }

TEST(PartitionIndex, NamedPKeyAgreesWithTableWalkSixtyThreePartitions) { check_against_walk(63, 2); }

TEST(PartitionIndex, NamedPKeyAgreesWithTableWalkManyPartitions) { check_against_walk(100, 3); }

}  // namespace
}  // namespace madengine::sa
