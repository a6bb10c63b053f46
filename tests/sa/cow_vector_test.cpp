// CowVector and CowInterner: copies share a buffer until one is written, a
// write never shows through another copy, and equal tables interned hold
// one buffer.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include "madengine/wire/smp/sl2vl.hpp"
#include "fabric/cow_vector.hpp"

namespace madengine::fabric {
namespace {

TEST(CowVector, CopiesShareUntilWritten) {
  CowVector<std::uint16_t> a(std::vector<std::uint16_t>{0xffff, 0, 0x8001});
  CowVector<std::uint16_t> b = a;
  EXPECT_TRUE(a.shares(b));
  EXPECT_EQ(b.size(), 3u);
  b[1] = 0x8002;  // b gets its own buffer
  EXPECT_FALSE(a.shares(b));
  EXPECT_EQ(a[1], 0);
  EXPECT_EQ(b[1], 0x8002);
  EXPECT_EQ(a[2], 0x8001);
  b.resize(5, 7);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(b[4], 7);
}

TEST(CowVector, EmptyHoldsNoBuffer) {
  CowVector<std::uint64_t> e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.begin(), e.end());
  const std::span<const std::uint64_t> s = e;
  EXPECT_TRUE(s.empty());
  CowVector<std::uint64_t> f = e;
  EXPECT_FALSE(e.shares(f));  // nothing to share
  f.assign(2, 9);
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(f.vec(), (std::vector<std::uint64_t>{9, 9}));
}

TEST(CowVector, ComparesByContents) {
  const CowVector<std::uint16_t> a{1, 2, 3}, b{1, 2, 3}, c{1, 2};
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a.shares(b));
  EXPECT_FALSE(a == c);
  EXPECT_EQ(CowVector<std::uint16_t>{}, CowVector<std::uint16_t>(std::vector<std::uint16_t>{}));
}

TEST(CowInterner, EqualTablesShareOneBuffer) {
  CowInterner<wire::Sl2VlTable> interner;
  wire::Sl2VlTable t{};
  t.set_vl(1, 1);
  std::vector<CowVector<wire::Sl2VlTable>> ports;
  for (int i = 0; i < 100; ++i) ports.emplace_back(std::vector<wire::Sl2VlTable>(3, t));
  wire::Sl2VlTable other = t;
  other.set_vl(2, 1);
  ports.emplace_back(std::vector<wire::Sl2VlTable>{other});
  ports.emplace_back(std::vector<wire::Sl2VlTable>(2, t));  // same bytes as a prefix: not equal
  for (auto& p : ports) interner.intern(p);
  for (int i = 1; i < 100; ++i) EXPECT_TRUE(ports[i].shares(ports[0])) << i;
  EXPECT_FALSE(ports[100].shares(ports[0]));
  EXPECT_FALSE(ports[101].shares(ports[0]));
  EXPECT_EQ(ports[101].size(), 2u);
  // A write to one port's interned table leaves the others as they were.
  ports[5][0] = other;
  EXPECT_FALSE(ports[5].shares(ports[0]));
  EXPECT_EQ(ports[0][0].get_vl(2), t.get_vl(2));
  EXPECT_EQ(ports[5][0].get_vl(2), 1);
}

}  // namespace
}  // namespace madengine::fabric
