// MCMemberRecord (IBA 15.2.5.17, 52 bytes): a port's membership of a
// multicast group, used to create, join and leave groups (Set/Delete) and to
// query them (Get/GetTable).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa/common.hpp"

namespace madengine::wire {

namespace mc_member_record_cm {
inline constexpr std::uint64_t kMGid = 1ull << 0;
inline constexpr std::uint64_t kPortGid = 1ull << 1;
inline constexpr std::uint64_t kQKey = 1ull << 2;
inline constexpr std::uint64_t kMLid = 1ull << 3;
inline constexpr std::uint64_t kMtuSelector = 1ull << 4;
inline constexpr std::uint64_t kMtu = 1ull << 5;
inline constexpr std::uint64_t kTClass = 1ull << 6;
inline constexpr std::uint64_t kPKey = 1ull << 7;
inline constexpr std::uint64_t kRateSelector = 1ull << 8;
inline constexpr std::uint64_t kRate = 1ull << 9;
inline constexpr std::uint64_t kPacketLifeTimeSelector = 1ull << 10;
inline constexpr std::uint64_t kPacketLifeTime = 1ull << 11;
inline constexpr std::uint64_t kSl = 1ull << 12;
inline constexpr std::uint64_t kFlowLabel = 1ull << 13;
inline constexpr std::uint64_t kHopLimit = 1ull << 14;
inline constexpr std::uint64_t kScope = 1ull << 15;
inline constexpr std::uint64_t kJoinState = 1ull << 16;
inline constexpr std::uint64_t kProxyJoin = 1ull << 17;
inline constexpr std::uint64_t kReserved = 1ull << 18;
}  // namespace mc_member_record_cm

struct McMemberRecord {
  Gid mgid;
  Gid port_gid;
  be32 qkey;
  be16 mlid;
  std::uint8_t mtu_sel;                     // selector 2, MTU 6
  std::uint8_t tclass;
  be16 pkey;
  std::uint8_t rate_sel;                    // selector 2, Rate 6
  std::uint8_t packet_life_sel;             // selector 2, PacketLifeTime 6
  std::array<std::uint8_t, 4> sl_flow_hop;  // SL 4, FlowLabel 20, HopLimit 8
  std::uint8_t scope_join_state;            // Scope 4, JoinState 4
  std::array<std::uint8_t, 3> proxy_join_bits;  // ProxyJoin 1, reserved 23

  MADENGINE_WIRE_NAMED_BITS(MtuSelector, mtu_selector, 38, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(Mtu, mtu, 38, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(RateSelector, rate_selector, 42, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(Rate, rate, 42, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(PacketLifeTimeSelector, packet_life_time_selector, 43, 0, 2);
  MADENGINE_WIRE_NAMED_BITS(PacketLifeTime, packet_life_time, 43, 2, 6);
  MADENGINE_WIRE_NAMED_BITS(Sl, sl, 44, 0, 4);
  MADENGINE_WIRE_NAMED_BITS(FlowLabel, flow_label, 44, 4, 20);
  MADENGINE_WIRE_NAMED_BITS(HopLimit, hop_limit, 47, 0, 8);
  MADENGINE_WIRE_NAMED_BITS(Scope, scope, 48, 0, 4);
  MADENGINE_WIRE_NAMED_BITS(JoinState, join_state, 48, 4, 4);
  MADENGINE_WIRE_FLAG(ProxyJoin, proxy_join, 49, 0);

  // join_state:: bits; a Delete clears only the bits it names (IBA 15.2.5.17.2).
};
static_assert(sizeof(McMemberRecord) == 52 && alignof(McMemberRecord) == 1);
static_assert(offsetof(McMemberRecord, port_gid) == 16);
static_assert(offsetof(McMemberRecord, qkey) == 32);
static_assert(offsetof(McMemberRecord, mlid) == 36);
static_assert(offsetof(McMemberRecord, mtu_sel) == 38);
static_assert(offsetof(McMemberRecord, tclass) == 39);
static_assert(offsetof(McMemberRecord, pkey) == 40);
static_assert(offsetof(McMemberRecord, rate_sel) == 42);
static_assert(offsetof(McMemberRecord, sl_flow_hop) == 44);
static_assert(offsetof(McMemberRecord, scope_join_state) == 48);
static_assert(offsetof(McMemberRecord, proxy_join_bits) == 49);
static_assert(detail::field_within<McMemberRecord::Mtu>(38, 1));
static_assert(detail::field_within<McMemberRecord::Rate>(42, 1));
static_assert(detail::field_within<McMemberRecord::PacketLifeTime>(43, 1));
static_assert(detail::field_within<McMemberRecord::Sl>(44, 4));
static_assert(detail::field_within<McMemberRecord::FlowLabel>(44, 4));
static_assert(detail::field_within<McMemberRecord::HopLimit>(44, 4));
static_assert(detail::field_within<McMemberRecord::JoinState>(48, 1));
static_assert(detail::field_within<McMemberRecord::ProxyJoin>(49, 3));

}  // namespace madengine::wire
