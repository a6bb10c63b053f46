// ClassPortInfo (IBA 13.4.8.1, 72 bytes): the class-independent attribute a
// GSI class (the SA among them) answers with its capabilities, response time,
// redirect target and trap destination.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa/common.hpp"

namespace madengine::wire {

// CapabilityMask bits common to all classes (IBA 13.4.8.1) and the SA's own
// (IBA 15.2.5.1 and the 1.2 errata), bit numbers as OpenSM advertises them.
namespace cpi_cap {
inline constexpr std::uint16_t kTrap = 0x0001;
inline constexpr std::uint16_t kGetSet = 0x0002;  // Get/Set(Notice)
inline constexpr std::uint16_t kCapMask2 = 0x0004;
inline constexpr std::uint16_t kSaOptionalRecords = 1u << 8;
inline constexpr std::uint16_t kSaUdMulticast = 1u << 9;
inline constexpr std::uint16_t kSaMultiPath = 1u << 10;  // MultiPathRecord and TraceRecord
inline constexpr std::uint16_t kSaReinit = 1u << 11;
inline constexpr std::uint16_t kSaPortInfoCapMaskMatch = 1u << 13;
}  // namespace cpi_cap

// The SA's CapabilityMask2 bits (27-bit field).
namespace cpi_cap2 {
inline constexpr std::uint32_t kSaQos = 1u << 1;
inline constexpr std::uint32_t kSaReversePathPKey = 1u << 2;
inline constexpr std::uint32_t kSaMulticastFdbTop = 1u << 3;
inline constexpr std::uint32_t kSaHierarchyInfo = 1u << 4;
inline constexpr std::uint32_t kSaAliasGuids = 1u << 5;
inline constexpr std::uint32_t kSaFullPortInfoRecord = 1u << 6;
inline constexpr std::uint32_t kSaExtendedSpeeds = 1u << 7;
inline constexpr std::uint32_t kSaMulticastServiceRecords = 1u << 8;
inline constexpr std::uint32_t kSaPortInfoCapMask2Match = 1u << 10;
inline constexpr std::uint32_t kSaSendOnlyFullMember = 1u << 12;
inline constexpr std::uint32_t kSaLinkWidth2x = 1u << 13;
inline constexpr std::uint32_t kSaLinkSpeedHdr = 1u << 15;
inline constexpr std::uint32_t kSaLinkSpeedNdr = 1u << 17;
}  // namespace cpi_cap2

struct ClassPortInfo {
  std::uint8_t base_version;
  std::uint8_t class_version;
  be16 capability_mask;
  be32 cap_mask2_resp_time;               // CapabilityMask2 (27 bits), RespTimeValue (5 bits)
  Gid redirect_gid;
  std::array<std::uint8_t, 4> redirect_tc_sl_fl;  // TC 8, SL 4, FlowLabel 20
  be16 redirect_lid;
  be16 redirect_pkey;
  be32 redirect_qp;                        // reserved 8, QP 24
  be32 redirect_qkey;
  Gid trap_gid;
  std::array<std::uint8_t, 4> trap_tc_sl_fl;  // TC 8, SL 4, FlowLabel 20
  be16 trap_lid;
  be16 trap_pkey;
  be32 trap_hl_qp;                         // HopLimit 8, QP 24
  be32 trap_qkey;

  using CapMask2 = BitField<4, 0, 27>;
  using RespTimeValue = BitField<7, 3, 5>;
  using RedirectTc = BitField<24, 0, 8>;
  using RedirectSl = BitField<25, 0, 4>;
  using RedirectFlowLabel = BitField<25, 4, 20>;
  using RedirectQp = BitField<33, 0, 24>;
  using TrapTc = BitField<56, 0, 8>;
  using TrapSl = BitField<57, 0, 4>;
  using TrapFlowLabel = BitField<57, 4, 20>;
  using TrapHopLimit = BitField<64, 0, 8>;
  using TrapQp = BitField<65, 0, 24>;

  std::uint32_t cap_mask2() const noexcept { return CapMask2::get(detail::bytes_of(*this)); }
  void set_cap_mask2(std::uint32_t v) noexcept { CapMask2::set(detail::bytes_of(*this), v); }
  // Response time is 4.096 us * 2^RespTimeValue (IBA 13.4.6.2).
  std::uint8_t resp_time_value() const noexcept {
    return static_cast<std::uint8_t>(RespTimeValue::get(detail::bytes_of(*this)));
  }
  void set_resp_time_value(std::uint8_t v) noexcept { RespTimeValue::set(detail::bytes_of(*this), v); }

  std::uint8_t redirect_tc() const noexcept { return static_cast<std::uint8_t>(RedirectTc::get(detail::bytes_of(*this))); }
  void set_redirect_tc(std::uint8_t v) noexcept { RedirectTc::set(detail::bytes_of(*this), v); }
  std::uint8_t redirect_sl() const noexcept { return static_cast<std::uint8_t>(RedirectSl::get(detail::bytes_of(*this))); }
  void set_redirect_sl(std::uint8_t v) noexcept { RedirectSl::set(detail::bytes_of(*this), v); }
  std::uint32_t redirect_flow_label() const noexcept { return RedirectFlowLabel::get(detail::bytes_of(*this)); }
  void set_redirect_flow_label(std::uint32_t v) noexcept { RedirectFlowLabel::set(detail::bytes_of(*this), v); }
  std::uint32_t redirect_qpn() const noexcept { return RedirectQp::get(detail::bytes_of(*this)); }
  void set_redirect_qpn(std::uint32_t v) noexcept { RedirectQp::set(detail::bytes_of(*this), v); }

  std::uint8_t trap_tc() const noexcept { return static_cast<std::uint8_t>(TrapTc::get(detail::bytes_of(*this))); }
  void set_trap_tc(std::uint8_t v) noexcept { TrapTc::set(detail::bytes_of(*this), v); }
  std::uint8_t trap_sl() const noexcept { return static_cast<std::uint8_t>(TrapSl::get(detail::bytes_of(*this))); }
  void set_trap_sl(std::uint8_t v) noexcept { TrapSl::set(detail::bytes_of(*this), v); }
  std::uint32_t trap_flow_label() const noexcept { return TrapFlowLabel::get(detail::bytes_of(*this)); }
  void set_trap_flow_label(std::uint32_t v) noexcept { TrapFlowLabel::set(detail::bytes_of(*this), v); }
  std::uint8_t trap_hop_limit() const noexcept { return static_cast<std::uint8_t>(TrapHopLimit::get(detail::bytes_of(*this))); }
  void set_trap_hop_limit(std::uint8_t v) noexcept { TrapHopLimit::set(detail::bytes_of(*this), v); }
  std::uint32_t trap_qpn() const noexcept { return TrapQp::get(detail::bytes_of(*this)); }
  void set_trap_qpn(std::uint32_t v) noexcept { TrapQp::set(detail::bytes_of(*this), v); }
};
static_assert(sizeof(ClassPortInfo) == 72 && alignof(ClassPortInfo) == 1);
static_assert(offsetof(ClassPortInfo, cap_mask2_resp_time) == 4);
static_assert(offsetof(ClassPortInfo, redirect_gid) == 8);
static_assert(offsetof(ClassPortInfo, redirect_lid) == 28);
static_assert(offsetof(ClassPortInfo, redirect_qp) == 32);
static_assert(offsetof(ClassPortInfo, redirect_qkey) == 36);
static_assert(offsetof(ClassPortInfo, trap_gid) == 40);
static_assert(offsetof(ClassPortInfo, trap_lid) == 60);
static_assert(offsetof(ClassPortInfo, trap_hl_qp) == 64);
static_assert(offsetof(ClassPortInfo, trap_qkey) == 68);
static_assert(detail::field_within<ClassPortInfo::CapMask2>(4, 4));
static_assert(detail::field_within<ClassPortInfo::RespTimeValue>(4, 4));
static_assert(detail::field_within<ClassPortInfo::RedirectFlowLabel>(24, 4));
static_assert(detail::field_within<ClassPortInfo::RedirectQp>(32, 4));
static_assert(detail::field_within<ClassPortInfo::TrapFlowLabel>(56, 4));
static_assert(detail::field_within<ClassPortInfo::TrapQp>(64, 4));

}  // namespace madengine::wire
