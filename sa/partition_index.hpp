// The SA's partition check for PathRecords, built once per epoch: end ports
// share a few distinct P_Key tables (one per membership pattern), so each
// LID maps to a set id and a pair of sets gives the P_Key a path carries in
// one lookup, without walking two tables per query. The choice is OpenSM's:
// two ports share a partition when both hold it and one is a full member
// (IBA 10.9.3); a query that names no P_Key gets the first shared partition
// in OpenSM's order (P_Key bytes swapped) as the source port holds it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "madengine/wire/smp/pkey_table.hpp"

namespace madengine::sa {

// What a PathRecord between two ports may carry.
struct PartitionInfo {
  std::uint16_t pkey = 0;  // low 15 bits
  std::uint8_t sl = 0;     // the partition's SL (partitions.conf sl=, QoS on)
};

class PartitionIndex {
 public:
  static constexpr std::uint16_t kNoSet = 0xffff;
  static constexpr std::size_t kMatrixSetsMax = 128;  // sets^2 P_Keys precomputed up to this (32 KB)

  PartitionIndex() = default;
  // `tables[lid]` is the P_Key table of the port with that LID (empty: no
  // port, or a port the SM has not read: the default partition, full).
  void build(const std::vector<std::span<const std::uint16_t>>& tables, std::vector<PartitionInfo> partitions);

  std::uint16_t set_of(std::uint16_t lid) const noexcept { return lid < lid_set_.size() ? lid_set_[lid] : kNoSet; }
  void prefetch(std::uint16_t lid) const noexcept {
    if (lid < lid_set_.size()) __builtin_prefetch(&lid_set_[lid]);
  }
  // The P_Key of a path from a port of set `src` to one of set `dst` when the
  // query names none; 0 when they share no partition.
  std::uint16_t common(std::uint16_t src, std::uint16_t dst) const noexcept {
    if (src >= sets_.size() || dst >= sets_.size()) return 0;
    if (!matrix_.empty()) return matrix_[std::size_t{src} * sets_.size() + dst];
    return compute_common(src, dst);
  }
  // Whether both hold `pkey`'s partition with a full member between them.
  bool shares(std::uint16_t src, std::uint16_t dst, std::uint16_t pkey) const noexcept {
    if (slot_of_base_.empty()) return shares_slow(src, dst, pkey);
    if (src >= bits_.size() || dst >= bits_.size()) return false;
    const std::uint8_t u = slot_of_base_[wire::pkey_base(pkey)];  // base 0 (invalid) has no slot
    if (u == kNoSlot) return false;                                // no port holds it
    const std::uint64_t b = std::uint64_t{1} << u;
    const SetBits& x = bits_[src];
    const SetBits& y = bits_[dst];
    return (x.any & y.any & b) != 0 && ((x.full | y.full) & b) != 0;
  }
  // The lowest partition in [lo, hi] (low 15 bits) both sets share with a
  // full member between them; 0: none (a QoS level's P_Key list, OpenSM's order).
  std::uint16_t first_shared_in(std::uint16_t src, std::uint16_t dst, std::uint16_t lo, std::uint16_t hi) const noexcept;
  // The partition's SL; 0 for a partition the SM did not define.
  std::uint8_t sl_of(std::uint16_t pkey) const noexcept {
    if (!slot_of_base_.empty()) {
      const std::uint8_t u = slot_of_base_[wire::pkey_base(pkey)];
      if (u != kNoSlot) return slot_sl_[u];
    }
    return sl_slow(pkey);
  }
  std::size_t sets() const noexcept { return sets_.size(); }

 private:
  struct Member {
    std::uint16_t base;
    std::uint8_t bits;  // 1 limited, 2 full
  };
  struct Set {
    std::vector<std::uint16_t> keys;  // valid entries, OpenSM's order, a full entry before a limited one
    std::vector<Member> by_base;      // sorted by base: a query's P_Key in O(log n)
  };
  std::uint16_t compute_common(std::uint16_t src, std::uint16_t dst) const noexcept;
  bool shares_slow(std::uint16_t src, std::uint16_t dst, std::uint16_t pkey) const noexcept;
  std::uint8_t sl_slow(std::uint16_t pkey) const noexcept;
  void build_bits();
  // Membership bits of `base` in a set: 1 limited, 2 full.
  static std::uint8_t bits(const Set& s, std::uint16_t base) noexcept;

  std::vector<std::uint16_t> lid_set_;
  std::vector<Set> sets_;
  std::vector<std::uint16_t> matrix_;  // [src * sets + dst], when sets <= kMatrixSetsMax
  std::vector<PartitionInfo> partitions_;  // sorted by pkey

  // A query's named P_Key checked with two bit tests instead of two searches:
  // when the ports hold at most 64 distinct partitions, each gets a slot
  // (a bit); per set, the slots it holds at all and those it holds as a full
  // member. Empty when there are more (the searches above answer).
  static constexpr std::uint8_t kNoSlot = 0xff;
  static constexpr std::size_t kSlotsMax = 64;
  struct SetBits {
    std::uint64_t any = 0;
    std::uint64_t full = 0;
  };
  std::vector<std::uint8_t> slot_of_base_;  // [P_Key base] -> slot or kNoSlot (32 KB)
  std::vector<SetBits> bits_;               // by set
  std::array<std::uint8_t, kSlotsMax> slot_sl_{};  // the partition's SL by slot
};

}  // namespace madengine::sa
