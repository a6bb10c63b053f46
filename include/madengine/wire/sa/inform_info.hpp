// InformInfo (IBA 13.4.8.3, 36 bytes), the class-independent attribute a
// port Sets at the SA to subscribe to traps, and InformInfoRecord (IBA
// 15.2.5.12, 64 bytes), the SA's view of one subscription.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa/common.hpp"

namespace madengine::wire {

// InformInfo.Type (IBA 13.4.8.3): which notices a subscription covers.
namespace inform_type {
inline constexpr std::uint16_t kEmergency = 0;
inline constexpr std::uint16_t kUrgent = 1;
inline constexpr std::uint16_t kSecurity = 2;
inline constexpr std::uint16_t kSubnetMgmt = 3;
inline constexpr std::uint16_t kInformational = 4;
inline constexpr std::uint16_t kAll = 0xffff;
}  // namespace inform_type

// Wildcards (IBA 13.4.8.3): LIDRangeBegin 0xffff means all LIDs; TrapNumber,
// DeviceID and ProducerType/VendorID use all ones the same way.
inline constexpr std::uint16_t kInformAllLids = 0xffff;
inline constexpr std::uint16_t kInformAllTraps = 0xffff;
inline constexpr std::uint32_t kInformAllProducers = 0xffffff;

struct InformInfo {
  Gid gid;
  be16 lid_range_begin;
  be16 lid_range_end;
  be16 reserved1;
  std::uint8_t is_generic;  // 1: generic (trap number, producer type); 0: vendor (device id, vendor id)
  std::uint8_t subscribe;   // 1 subscribe, 0 unsubscribe
  be16 type;
  // The union of IBA 13.4.8.3: TrapNumber (generic) or DeviceID (vendor).
  be16 trap_number_or_device_id;
  std::array<std::uint8_t, 4> qpn_resp_time;        // QPN 24, reserved 3, RespTimeValue 5
  std::array<std::uint8_t, 4> producer_or_vendor;   // reserved 8, ProducerType or VendorID 24

  MADENGINE_WIRE_NAMED_BITS(Qpn, qpn, 28, 0, 24);
  MADENGINE_WIRE_NAMED_BITS(RespTimeValue, resp_time_value, 31, 3, 5);
  MADENGINE_WIRE_NAMED_BITS(ProducerOrVendor, producer_type, 33, 0, 24);

  // The generic view.
  std::uint16_t trap_number() const noexcept { return trap_number_or_device_id.get(); }
  void set_trap_number(std::uint16_t v) noexcept { trap_number_or_device_id.set(v); }
  // The vendor view.
  std::uint16_t device_id() const noexcept { return trap_number_or_device_id.get(); }
  void set_device_id(std::uint16_t v) noexcept { trap_number_or_device_id.set(v); }
  std::uint32_t vendor_id() const noexcept { return ProducerOrVendor::get(detail::bytes_of(*this)); }
  void set_vendor_id(std::uint32_t v) noexcept { ProducerOrVendor::set(detail::bytes_of(*this), v); }

};
static_assert(sizeof(InformInfo) == 36 && alignof(InformInfo) == 1);
static_assert(offsetof(InformInfo, lid_range_begin) == 16);
static_assert(offsetof(InformInfo, is_generic) == 22);
static_assert(offsetof(InformInfo, type) == 24);
static_assert(offsetof(InformInfo, trap_number_or_device_id) == 26);
static_assert(offsetof(InformInfo, qpn_resp_time) == 28);
static_assert(offsetof(InformInfo, producer_or_vendor) == 32);
static_assert(detail::field_within<InformInfo::Qpn>(28, 4));
static_assert(detail::field_within<InformInfo::RespTimeValue>(28, 4));
static_assert(detail::field_within<InformInfo::ProducerOrVendor>(32, 4));

// Components of InformInfoRecord: the record's own fields, then InformInfo's
// fields in order, reserved ones counted (IBA 15.2.5.12).
namespace inform_info_record_cm {
inline constexpr std::uint64_t kSubscriberGid = 1ull << 0;
inline constexpr std::uint64_t kEnum = 1ull << 1;
inline constexpr std::uint64_t kReserved0 = 1ull << 2;
inline constexpr std::uint64_t kGid = 1ull << 3;
inline constexpr std::uint64_t kLidRangeBegin = 1ull << 4;
inline constexpr std::uint64_t kLidRangeEnd = 1ull << 5;
inline constexpr std::uint64_t kReserved1 = 1ull << 6;
inline constexpr std::uint64_t kIsGeneric = 1ull << 7;
inline constexpr std::uint64_t kSubscribe = 1ull << 8;
inline constexpr std::uint64_t kType = 1ull << 9;
inline constexpr std::uint64_t kTrapNumber = 1ull << 10;  // DeviceID when vendor
inline constexpr std::uint64_t kDeviceId = kTrapNumber;
inline constexpr std::uint64_t kQpn = 1ull << 11;
inline constexpr std::uint64_t kReserved2 = 1ull << 12;
inline constexpr std::uint64_t kRespTimeValue = 1ull << 13;
inline constexpr std::uint64_t kReserved3 = 1ull << 14;
inline constexpr std::uint64_t kProducerType = 1ull << 15;  // VendorID when vendor
inline constexpr std::uint64_t kVendorId = kProducerType;
}  // namespace inform_info_record_cm

struct InformInfoRecord {
  Gid subscriber_gid;
  be16 subscriber_enum;
  std::array<std::uint8_t, 6> reserved0;
  InformInfo inform_info;
  std::array<std::uint8_t, 4> reserved1;
};
static_assert(sizeof(InformInfoRecord) == 64 && alignof(InformInfoRecord) == 1);
static_assert(offsetof(InformInfoRecord, subscriber_enum) == 16);
static_assert(offsetof(InformInfoRecord, inform_info) == 24);

}  // namespace madengine::wire
