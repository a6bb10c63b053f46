// MultiPathRecord (IBA 15.2.5.20): a request for up to NumbPath paths among
// a set of source and destination GIDs. A 24-byte fixed part is followed by
// SGIDCount source GIDs then DGIDCount destination GIDs, all within the SA
// data; the helpers below reach them with bounds checks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/common.hpp"

namespace madengine::wire {

namespace multi_path_record_cm {
inline constexpr std::uint64_t kRawTraffic = 1ull << 0;
inline constexpr std::uint64_t kReserved0 = 1ull << 1;
inline constexpr std::uint64_t kFlowLabel = 1ull << 2;
inline constexpr std::uint64_t kHopLimit = 1ull << 3;
inline constexpr std::uint64_t kTClass = 1ull << 4;
inline constexpr std::uint64_t kReversible = 1ull << 5;
inline constexpr std::uint64_t kNumbPath = 1ull << 6;
inline constexpr std::uint64_t kPKey = 1ull << 7;
inline constexpr std::uint64_t kQosClass = 1ull << 8;
inline constexpr std::uint64_t kSl = 1ull << 9;
inline constexpr std::uint64_t kMtuSelector = 1ull << 10;
inline constexpr std::uint64_t kMtu = 1ull << 11;
inline constexpr std::uint64_t kRateSelector = 1ull << 12;
inline constexpr std::uint64_t kRate = 1ull << 13;
inline constexpr std::uint64_t kPacketLifeTimeSelector = 1ull << 14;
inline constexpr std::uint64_t kPacketLifeTime = 1ull << 15;
inline constexpr std::uint64_t kServiceIdMsb = 1ull << 16;
inline constexpr std::uint64_t kIndependenceSelector = 1ull << 17;
inline constexpr std::uint64_t kReserved1 = 1ull << 18;
inline constexpr std::uint64_t kSGidCount = 1ull << 19;
inline constexpr std::uint64_t kDGidCount = 1ull << 20;
inline constexpr std::uint64_t kServiceIdLsb = 1ull << 21;
inline constexpr std::uint64_t kServiceId = kServiceIdMsb | kServiceIdLsb;
}  // namespace multi_path_record_cm

inline constexpr std::size_t kMultiPathFixedSize = 24;
inline constexpr std::size_t kMultiPathGidsMax = (kSaDataSize - kMultiPathFixedSize) / sizeof(Gid);  // 11

struct MultiPathRecord {
  std::array<std::uint8_t, 4> raw_flow_hop;  // RawTraffic 1, reserved 3, FlowLabel 20, HopLimit 8
  std::uint8_t tclass;
  std::uint8_t reversible_numb_path;         // Reversible 1, NumbPath 7
  be16 pkey;
  be16 qos_class_sl;                         // QoSClass 12, SL 4
  std::uint8_t mtu_sel;
  std::uint8_t rate_sel;
  std::uint8_t packet_life_sel;
  std::uint8_t service_id_msb;               // ServiceID bits 63-56
  std::uint8_t independence_sel;             // IndependenceSelector 2, reserved 6
  std::uint8_t sgid_count;
  std::uint8_t dgid_count;
  std::array<std::uint8_t, 7> service_id_lsb;  // ServiceID bits 55-0

  MADENGINE_WIRE_FLAG(RawTraffic, raw_traffic, 0, 0);
  MADENGINE_WIRE_NAMED_BITS(FlowLabel, flow_label, 0, 4, 20);
  MADENGINE_WIRE_NAMED_BITS(HopLimit, hop_limit, 3, 0, 8);
  MADENGINE_WIRE_FLAG(Reversible, reversible, 5, 0);
  MADENGINE_WIRE_NAMED_BITS(NumbPath, numb_path, 5, 1, 7);
  MADENGINE_WIRE_NAMED_BITS(QosClass, qos_class, 8, 0, 12);
  MADENGINE_WIRE_NAMED_BITS(Sl, sl, 9, 4, 4);
  MADENGINE_WIRE_NAMED_BITS(MtuSelector, mtu_selector, 10, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(Mtu, mtu, 10, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(RateSelector, rate_selector, 11, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(Rate, rate, 11, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(PacketLifeTimeSelector, packet_life_time_selector, 12, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(PacketLifeTime, packet_life_time, 12, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(IndependenceSelector, independence_selector, 14, 0, 2);

  // ServiceID is split around the counts (IBA 1.2.1): 8 bits at byte 13, 56 at bytes 17-23.
  std::uint64_t service_id() const noexcept {
    std::uint64_t v = service_id_msb;
    for (const auto b : service_id_lsb) v = (v << 8) | b;
    return v;
  }
  void set_service_id(std::uint64_t v) noexcept {
    for (std::size_t i = service_id_lsb.size(); i-- > 0;) {
      service_id_lsb[i] = static_cast<std::uint8_t>(v & 0xff);
      v >>= 8;
    }
    service_id_msb = static_cast<std::uint8_t>(v & 0xff);
  }
};
static_assert(sizeof(MultiPathRecord) == kMultiPathFixedSize && alignof(MultiPathRecord) == 1);
static_assert(offsetof(MultiPathRecord, tclass) == 4);
static_assert(offsetof(MultiPathRecord, pkey) == 6);
static_assert(offsetof(MultiPathRecord, qos_class_sl) == 8);
static_assert(offsetof(MultiPathRecord, mtu_sel) == 10);
static_assert(offsetof(MultiPathRecord, service_id_msb) == 13);
static_assert(offsetof(MultiPathRecord, independence_sel) == 14);
static_assert(offsetof(MultiPathRecord, sgid_count) == 15);
static_assert(offsetof(MultiPathRecord, dgid_count) == 16);
static_assert(offsetof(MultiPathRecord, service_id_lsb) == 17);
static_assert(detail::field_within<MultiPathRecord::FlowLabel>(0, 4));
static_assert(detail::field_within<MultiPathRecord::HopLimit>(0, 4));
static_assert(detail::field_within<MultiPathRecord::NumbPath>(5, 1));
static_assert(detail::field_within<MultiPathRecord::Sl>(8, 2));
static_assert(detail::field_within<MultiPathRecord::PacketLifeTime>(12, 1));
static_assert(detail::field_within<MultiPathRecord::IndependenceSelector>(14, 1));

// The i-th GID of the list (SGIDs first, then DGIDs) that follows the fixed
// part in `rec` (the SA data, up to 200 bytes); nullopt if it lies past the
// end of `rec` or beyond SGIDCount + DGIDCount.
inline std::optional<Gid> multipath_gid(std::span<const std::uint8_t> rec, std::size_t i) noexcept {
  if (rec.size() < kMultiPathFixedSize) return std::nullopt;
  const std::size_t count = std::size_t{rec[15]} + rec[16];
  if (i >= count) return std::nullopt;
  const std::size_t off = kMultiPathFixedSize + i * sizeof(Gid);
  if (off + sizeof(Gid) > rec.size()) return std::nullopt;
  return decode<Gid>(rec.subspan(off));
}
inline std::optional<Gid> multipath_sgid(std::span<const std::uint8_t> rec, std::size_t i) noexcept {
  if (rec.size() < kMultiPathFixedSize || i >= rec[15]) return std::nullopt;
  return multipath_gid(rec, i);
}
inline std::optional<Gid> multipath_dgid(std::span<const std::uint8_t> rec, std::size_t i) noexcept {
  if (rec.size() < kMultiPathFixedSize || i >= rec[16]) return std::nullopt;
  return multipath_gid(rec, std::size_t{rec[15]} + i);
}

// Writes `fixed` and the GID lists into `out`, setting SGIDCount/DGIDCount
// from the list sizes; false (nothing written) if they do not fit in `out`.
inline bool encode_multipath(MultiPathRecord fixed, std::span<const Gid> sgids,
                             std::span<const Gid> dgids, std::span<std::uint8_t> out) noexcept {
  const std::size_t gids = sgids.size() + dgids.size();
  if (sgids.size() > 0xff || dgids.size() > 0xff) return false;
  if (out.size() < kMultiPathFixedSize + gids * sizeof(Gid)) return false;
  fixed.sgid_count = static_cast<std::uint8_t>(sgids.size());
  fixed.dgid_count = static_cast<std::uint8_t>(dgids.size());
  encode(fixed, out);
  std::size_t off = kMultiPathFixedSize;
  for (const auto& g : sgids) { encode(g, out.subspan(off)); off += sizeof(Gid); }
  for (const auto& g : dgids) { encode(g, out.subspan(off)); off += sizeof(Gid); }
  return true;
}

}  // namespace madengine::wire
