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

  using MtuSelector = BitField<38, 0, 2>;
  using Mtu = BitField<38, 2, 6>;
  using RateSelector = BitField<42, 0, 2>;
  using Rate = BitField<42, 2, 6>;
  using PacketLifeTimeSelector = BitField<43, 0, 2>;
  using PacketLifeTime = BitField<43, 2, 6>;
  using Sl = BitField<44, 0, 4>;
  using FlowLabel = BitField<44, 4, 20>;
  using HopLimit = BitField<47, 0, 8>;
  using Scope = BitField<48, 0, 4>;
  using JoinState = BitField<48, 4, 4>;
  using ProxyJoin = BitField<49, 0, 1>;

  std::uint8_t mtu_selector() const noexcept { return static_cast<std::uint8_t>(MtuSelector::get(detail::bytes_of(*this))); }
  void set_mtu_selector(std::uint8_t v) noexcept { MtuSelector::set(detail::bytes_of(*this), v); }
  std::uint8_t mtu() const noexcept { return static_cast<std::uint8_t>(Mtu::get(detail::bytes_of(*this))); }
  void set_mtu(std::uint8_t v) noexcept { Mtu::set(detail::bytes_of(*this), v); }
  std::uint8_t rate_selector() const noexcept { return static_cast<std::uint8_t>(RateSelector::get(detail::bytes_of(*this))); }
  void set_rate_selector(std::uint8_t v) noexcept { RateSelector::set(detail::bytes_of(*this), v); }
  std::uint8_t rate() const noexcept { return static_cast<std::uint8_t>(Rate::get(detail::bytes_of(*this))); }
  void set_rate(std::uint8_t v) noexcept { Rate::set(detail::bytes_of(*this), v); }
  std::uint8_t packet_life_time_selector() const noexcept {
    return static_cast<std::uint8_t>(PacketLifeTimeSelector::get(detail::bytes_of(*this)));
  }
  void set_packet_life_time_selector(std::uint8_t v) noexcept { PacketLifeTimeSelector::set(detail::bytes_of(*this), v); }
  std::uint8_t packet_life_time() const noexcept {
    return static_cast<std::uint8_t>(PacketLifeTime::get(detail::bytes_of(*this)));
  }
  void set_packet_life_time(std::uint8_t v) noexcept { PacketLifeTime::set(detail::bytes_of(*this), v); }
  std::uint8_t sl() const noexcept { return static_cast<std::uint8_t>(Sl::get(detail::bytes_of(*this))); }
  void set_sl(std::uint8_t v) noexcept { Sl::set(detail::bytes_of(*this), v); }
  std::uint32_t flow_label() const noexcept { return FlowLabel::get(detail::bytes_of(*this)); }
  void set_flow_label(std::uint32_t v) noexcept { FlowLabel::set(detail::bytes_of(*this), v); }
  std::uint8_t hop_limit() const noexcept { return static_cast<std::uint8_t>(HopLimit::get(detail::bytes_of(*this))); }
  void set_hop_limit(std::uint8_t v) noexcept { HopLimit::set(detail::bytes_of(*this), v); }
  std::uint8_t scope() const noexcept { return static_cast<std::uint8_t>(Scope::get(detail::bytes_of(*this))); }
  void set_scope(std::uint8_t v) noexcept { Scope::set(detail::bytes_of(*this), v); }
  // join_state:: bits; a Delete clears only the bits it names (IBA 15.2.5.17.2).
  std::uint8_t join_state() const noexcept { return static_cast<std::uint8_t>(JoinState::get(detail::bytes_of(*this))); }
  void set_join_state(std::uint8_t v) noexcept { JoinState::set(detail::bytes_of(*this), v); }
  bool proxy_join() const noexcept { return ProxyJoin::get(detail::bytes_of(*this)) != 0; }
  void set_proxy_join(bool v) noexcept { ProxyJoin::set(detail::bytes_of(*this), v ? 1 : 0); }
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
