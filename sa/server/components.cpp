// Component tables of every SA record (IBA 15.2.5, one table per record; the
// component index is the field's row, reserved rows counted) and the generic
// masked compare that Get/GetTable filtering runs.
#include "sa/server/components.hpp"

#include <array>
#include <cstring>

#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/port_info_record.hpp"

namespace madengine::sa {
namespace {

using C = Component;

constexpr std::array<C, 15> kNodeRecord{{{0, 16}, {16, 16}, {32, 8}, {40, 8}, {48, 8}, {56, 8}, {64, 64},
                                         {128, 64}, {192, 64}, {256, 16}, {272, 16}, {288, 32}, {320, 8},
                                         {328, 24}, {352, 512}}};

constexpr std::array<C, 58> kPortInfoRecord{{
    {0, 16}, {16, 8}, {24, 8},                                   // EndportLID, PortNum, Options
    {32, 64}, {96, 64}, {160, 16}, {176, 16}, {192, 32}, {224, 16}, {240, 16},  // M_Key .. M_KeyLeasePeriod
    {256, 8}, {264, 8}, {272, 8}, {280, 8},                      // LocalPortNum, LinkWidth*
    {288, 4}, {292, 4}, {296, 4}, {300, 4}, {304, 2}, {306, 3}, {309, 3},  // speeds, states, M_KeyProtect, LMC
    {312, 4}, {316, 4}, {320, 4}, {324, 4}, {328, 4}, {332, 4},  // LinkSpeedActive .. InitType
    {336, 8}, {344, 8}, {352, 8}, {360, 4}, {364, 4}, {368, 3}, {371, 5},  // VLHighLimit .. HOQLife
    {376, 4}, {380, 1}, {381, 1}, {382, 1}, {383, 1},            // OperationalVLs, enforcement, filters
    {384, 16}, {400, 16}, {416, 16}, {432, 8},                   // violations, GUIDCap
    {440, 1}, {441, 2}, {443, 5}, {448, 3}, {451, 5},            // ClientReregister .. RespTimeValue
    {456, 4}, {460, 4}, {464, 16}, {480, 8}, {488, 24},          // errors, MaxCreditHint, LinkRoundTripLatency
    {512, 16}, {528, 4}, {532, 4}, {536, 3}, {539, 5},           // CapabilityMask2, LinkSpeedExt*
}};

constexpr std::array<C, 5> kSl2VlRecord{{{0, 16}, {16, 8}, {24, 8}, {32, 32}, {64, 64}}};

constexpr std::array<C, 21> kSwitchInfoRecord{{{0, 16}, {16, 16}, {32, 16}, {48, 16}, {64, 16}, {80, 16},
                                               {96, 8}, {104, 8}, {112, 8}, {120, 5}, {125, 1}, {126, 2},
                                               {128, 16}, {144, 16}, {160, 1}, {161, 1}, {162, 1}, {163, 1},
                                               {164, 1}, {165, 11}, {176, 16}}};

constexpr std::array<C, 4> kLftRecord{{{0, 16}, {16, 16}, {32, 32}, {64, 512}}};
constexpr std::array<C, 6> kMftRecord{{{0, 16}, {16, 4}, {20, 3}, {23, 9}, {32, 32}, {64, 512}}};
constexpr std::array<C, 7> kSmInfoRecord{{{0, 16}, {16, 16}, {32, 64}, {96, 64}, {160, 32}, {192, 4}, {196, 4}}};
constexpr std::array<C, 4> kLinkRecord{{{0, 16}, {16, 8}, {24, 8}, {32, 16}}};
constexpr std::array<C, 12> kGuidInfoRecord{{{0, 16}, {16, 8}, {24, 8}, {32, 32}, {64, 64}, {128, 64},
                                             {192, 64}, {256, 64}, {320, 64}, {384, 64}, {448, 64},
                                             {512, 64}}};

constexpr std::array<C, 37> make_service_record() {
  std::array<C, 37> t{};
  t[0] = {0, 64};     // ServiceID
  t[1] = {64, 128};   // ServiceGID
  t[2] = {192, 16};   // ServiceP_Key
  t[3] = {208, 16};   // reserved
  t[4] = {224, 32};   // ServiceLease
  t[5] = {256, 128};  // ServiceKey
  t[6] = {384, 512};  // ServiceName
  for (unsigned i = 0; i < 16; ++i) t[7 + i] = {static_cast<std::uint16_t>(896 + 8 * i), 8};
  for (unsigned i = 0; i < 8; ++i) t[23 + i] = {static_cast<std::uint16_t>(1024 + 16 * i), 16};
  for (unsigned i = 0; i < 4; ++i) t[31 + i] = {static_cast<std::uint16_t>(1152 + 32 * i), 32};
  for (unsigned i = 0; i < 2; ++i) t[35 + i] = {static_cast<std::uint16_t>(1280 + 64 * i), 64};
  return t;
}
constexpr auto kServiceRecord = make_service_record();

constexpr std::array<C, 5> kPKeyTableRecord{{{0, 16}, {16, 16}, {32, 8}, {40, 24}, {64, 512}}};

// ServiceID is split in two 32-bit halves (IBA 1.2.1 kept the two former reserved rows).
constexpr std::array<C, 24> kPathRecord{{{0, 32}, {32, 32}, {64, 128}, {192, 128}, {320, 16}, {336, 16},
                                         {352, 1}, {353, 3}, {356, 20}, {376, 8}, {384, 8}, {392, 1},
                                         {393, 7}, {400, 16}, {416, 12}, {428, 4}, {432, 2}, {434, 6},
                                         {440, 2}, {442, 6}, {448, 2}, {450, 6}, {456, 8}, {464, 48}}};

constexpr std::array<C, 5> kVlArbRecord{{{0, 16}, {16, 8}, {24, 8}, {32, 32}, {64, 512}}};

constexpr std::array<C, 19> kMcMemberRecord{{{0, 128}, {128, 128}, {256, 32}, {288, 16}, {304, 2}, {306, 6},
                                             {312, 8}, {320, 16}, {336, 2}, {338, 6}, {344, 2}, {346, 6},
                                             {352, 4}, {356, 20}, {376, 8}, {384, 4}, {388, 4}, {392, 1},
                                             {393, 23}}};

constexpr std::array<C, 16> kInformInfoRecord{{{0, 128}, {128, 16}, {144, 48}, {192, 128}, {320, 16},
                                               {336, 16}, {352, 16}, {368, 8}, {376, 8}, {384, 16},
                                               {400, 16}, {416, 24}, {440, 3}, {443, 5}, {448, 8},
                                               {456, 24}}};

namespace a = wire::sa_attr;
const RecordLayout kLayouts[] = {
    {a::kNodeRecord, 108, kNodeRecord},
    {a::kPortInfoRecord, 68, kPortInfoRecord},
    {a::kSl2VlTableRecord, 16, kSl2VlRecord},
    {a::kSwitchInfoRecord, 24, kSwitchInfoRecord},
    {a::kLinearFwdTableRecord, 72, kLftRecord},
    {a::kMulticastFwdTableRecord, 72, kMftRecord},
    {a::kSmInfoRecord, 25, kSmInfoRecord},
    {a::kLinkRecord, 6, kLinkRecord},
    {a::kGuidInfoRecord, 72, kGuidInfoRecord},
    {a::kServiceRecord, 176, kServiceRecord},
    {a::kPKeyTableRecord, 72, kPKeyTableRecord},
    {a::kPathRecord, 64, kPathRecord},
    {a::kVlArbTableRecord, 72, kVlArbRecord},
    {a::kMcMemberRecord, 52, kMcMemberRecord},
    {a::kInformInfoRecord, 64, kInformInfoRecord},
};

// Bit `i` (MSB first) of `p`.
inline unsigned bit_at(const std::uint8_t* p, unsigned i) noexcept { return (p[i >> 3] >> (7 - (i & 7))) & 1u; }

}  // namespace

const RecordLayout* record_layout(std::uint16_t attr_id) noexcept {
  for (const auto& l : kLayouts)
    if (l.attr_id == attr_id) return &l;
  return nullptr;
}

bool components_equal(const RecordLayout& layout, std::uint64_t mask, const std::uint8_t* rec,
                      const std::uint8_t* query, std::uint64_t bit_masks) noexcept {
  for (std::size_t i = 0; mask != 0 && i < layout.components.size(); ++i, mask >>= 1, bit_masks >>= 1) {
    if ((mask & 1) == 0) continue;
    const Component c = layout.components[i];
    if ((bit_masks & 1) != 0) {
      for (unsigned k = c.bit_offset; k < c.bit_offset + c.width_bits; ++k)
        if (bit_at(query, k) > bit_at(rec, k)) return false;
      continue;
    }
    if ((c.bit_offset & 7) == 0 && (c.width_bits & 7) == 0) {
      if (std::memcmp(rec + c.bit_offset / 8, query + c.bit_offset / 8, c.width_bits / 8) != 0) return false;
      continue;
    }
    for (unsigned k = c.bit_offset; k < c.bit_offset + c.width_bits; ++k)
      if (bit_at(rec, k) != bit_at(query, k)) return false;
  }
  return true;
}

std::uint64_t bit_mask_components(std::uint16_t attr_id, std::uint32_t attr_mod) noexcept {
  namespace pir = wire::port_info_record_cm;
  if (attr_id != a::kPortInfoRecord || (attr_mod & wire::kPortInfoRecordCapMaskMatch) == 0) return 0;
  return pir::kCapabilityMask | pir::kCapabilityMask2;
}

std::uint64_t component_value(const RecordLayout& layout, std::size_t i, const std::uint8_t* rec) noexcept {
  if (i >= layout.components.size()) return 0;
  const Component c = layout.components[i];
  std::uint64_t v = 0;
  for (unsigned k = c.bit_offset; k < c.bit_offset + c.width_bits && k < c.bit_offset + 64u; ++k)
    v = (v << 1) | bit_at(rec, k);
  return v;
}

}  // namespace madengine::sa
