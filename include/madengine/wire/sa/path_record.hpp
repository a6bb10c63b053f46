// PathRecord (IBA 15.2.5.16, 64 bytes): the SA's answer to "how do I reach
// that port": LIDs, GIDs, SL, MTU/rate/lifetime with their selectors, and
// the GRH fields. Component mask bits follow the record's field order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa/common.hpp"

namespace madengine::wire {

namespace path_record_cm {
inline constexpr std::uint64_t kServiceIdMsb = 1ull << 0;  // IBA 1.2.1: ServiceID in two halves
inline constexpr std::uint64_t kServiceIdLsb = 1ull << 1;
inline constexpr std::uint64_t kServiceId = kServiceIdMsb | kServiceIdLsb;
inline constexpr std::uint64_t kDGid = 1ull << 2;
inline constexpr std::uint64_t kSGid = 1ull << 3;
inline constexpr std::uint64_t kDLid = 1ull << 4;
inline constexpr std::uint64_t kSLid = 1ull << 5;
inline constexpr std::uint64_t kRawTraffic = 1ull << 6;
inline constexpr std::uint64_t kReserved0 = 1ull << 7;
inline constexpr std::uint64_t kFlowLabel = 1ull << 8;
inline constexpr std::uint64_t kHopLimit = 1ull << 9;
inline constexpr std::uint64_t kTClass = 1ull << 10;
inline constexpr std::uint64_t kReversible = 1ull << 11;
inline constexpr std::uint64_t kNumbPath = 1ull << 12;
inline constexpr std::uint64_t kPKey = 1ull << 13;
inline constexpr std::uint64_t kQosClass = 1ull << 14;
inline constexpr std::uint64_t kSl = 1ull << 15;
inline constexpr std::uint64_t kMtuSelector = 1ull << 16;
inline constexpr std::uint64_t kMtu = 1ull << 17;
inline constexpr std::uint64_t kRateSelector = 1ull << 18;
inline constexpr std::uint64_t kRate = 1ull << 19;
inline constexpr std::uint64_t kPacketLifeTimeSelector = 1ull << 20;
inline constexpr std::uint64_t kPacketLifeTime = 1ull << 21;
inline constexpr std::uint64_t kPreference = 1ull << 22;
inline constexpr std::uint64_t kReserved1 = 1ull << 23;
}  // namespace path_record_cm

struct PathRecord {
  be64 service_id;
  Gid dgid;
  Gid sgid;
  be16 dlid;
  be16 slid;
  std::array<std::uint8_t, 4> raw_flow_hop;  // RawTraffic 1, reserved 3, FlowLabel 20, HopLimit 8
  std::uint8_t tclass;
  std::uint8_t reversible_numb_path;         // Reversible 1, NumbPath 7
  be16 pkey;
  be16 qos_class_sl;                         // QoSClass 12, SL 4
  std::uint8_t mtu_sel;                      // selector 2, MTU 6
  std::uint8_t rate_sel;                     // selector 2, Rate 6
  std::uint8_t packet_life_sel;              // selector 2, PacketLifeTime 6
  std::uint8_t preference;
  std::array<std::uint8_t, 6> reserved1;

  MADENGINE_WIRE_FLAG(RawTraffic, raw_traffic, 44, 0);
  MADENGINE_WIRE_NAMED_BITS(FlowLabel, flow_label, 44, 4, 20);
  MADENGINE_WIRE_NAMED_BITS(HopLimit, hop_limit, 47, 0, 8);
  MADENGINE_WIRE_FLAG(Reversible, reversible, 49, 0);
  MADENGINE_WIRE_NAMED_BITS(NumbPath, numb_path, 49, 1, 7);
  MADENGINE_WIRE_NAMED_BITS(QosClass, qos_class, 52, 0, 12);
  MADENGINE_WIRE_NAMED_BITS(Sl, sl, 53, 4, 4);
  MADENGINE_WIRE_NAMED_BITS(MtuSelector, mtu_selector, 54, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(Mtu, mtu, 54, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(RateSelector, rate_selector, 55, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(Rate, rate, 55, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(PacketLifeTimeSelector, packet_life_time_selector, 56, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(PacketLifeTime, packet_life_time, 56, 2, 6);
};
static_assert(sizeof(PathRecord) == 64 && alignof(PathRecord) == 1);
static_assert(offsetof(PathRecord, dgid) == 8);
static_assert(offsetof(PathRecord, sgid) == 24);
static_assert(offsetof(PathRecord, dlid) == 40);
static_assert(offsetof(PathRecord, slid) == 42);
static_assert(offsetof(PathRecord, raw_flow_hop) == 44);
static_assert(offsetof(PathRecord, tclass) == 48);
static_assert(offsetof(PathRecord, reversible_numb_path) == 49);
static_assert(offsetof(PathRecord, pkey) == 50);
static_assert(offsetof(PathRecord, qos_class_sl) == 52);
static_assert(offsetof(PathRecord, mtu_sel) == 54);
static_assert(offsetof(PathRecord, preference) == 57);
static_assert(detail::field_within<PathRecord::RawTraffic>(44, 4));
static_assert(detail::field_within<PathRecord::FlowLabel>(44, 4));
static_assert(detail::field_within<PathRecord::HopLimit>(44, 4));
static_assert(detail::field_within<PathRecord::NumbPath>(49, 1));
static_assert(detail::field_within<PathRecord::QosClass>(52, 2));
static_assert(detail::field_within<PathRecord::Sl>(52, 2));
static_assert(detail::field_within<PathRecord::Mtu>(54, 1));
static_assert(detail::field_within<PathRecord::Rate>(55, 1));
static_assert(detail::field_within<PathRecord::PacketLifeTime>(56, 1));

}  // namespace madengine::wire
