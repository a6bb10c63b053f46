// All SMP attribute codecs (IBA 14.2.5), one header per attribute under smp/,
// plus a table from attribute ID to the size and name of its payload, for
// code that routes or logs SMPs without knowing each attribute.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/common.hpp"
#include "madengine/wire/smp/guid_info.hpp"
#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/mft.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/sl2vl.hpp"
#include "madengine/wire/smp/sm_info.hpp"
#include "madengine/wire/smp/switch_info.hpp"
#include "madengine/wire/smp/vl_arb.hpp"

namespace madengine::wire {

// Bytes of SMP data an attribute uses (the rest of the 64 are reserved);
// nullopt for an attribute ID this codebase does not decode.
constexpr std::optional<std::size_t> smp_attr_size(std::uint16_t attr_id) noexcept {
  switch (attr_id) {
    case smp_attr::kNotice: return kSmpDataSize;  // the 64 bytes of a Notice that fit
    case smp_attr::kNodeDescription: return sizeof(NodeDescription);
    case smp_attr::kNodeInfo: return sizeof(NodeInfo);
    case smp_attr::kSwitchInfo: return sizeof(SwitchInfo);
    case smp_attr::kGuidInfo: return sizeof(GuidInfoBlock);
    case smp_attr::kPortInfo: return sizeof(PortInfo);
    case smp_attr::kPKeyTable: return sizeof(PKeyTableBlock);
    case smp_attr::kSl2VlTable: return sizeof(Sl2VlTable);
    case smp_attr::kVlArbTable: return sizeof(VlArbTableBlock);
    case smp_attr::kLinearFwdTable: return sizeof(LftBlock);
    case smp_attr::kMulticastFwdTable: return sizeof(MftBlock);
    case smp_attr::kSmInfo: return sizeof(SmInfo);
    default: return std::nullopt;
  }
}

constexpr const char* smp_attr_name(std::uint16_t attr_id) noexcept {
  switch (attr_id) {
    case smp_attr::kNotice: return "Notice";
    case smp_attr::kNodeDescription: return "NodeDescription";
    case smp_attr::kNodeInfo: return "NodeInfo";
    case smp_attr::kSwitchInfo: return "SwitchInfo";
    case smp_attr::kGuidInfo: return "GUIDInfo";
    case smp_attr::kPortInfo: return "PortInfo";
    case smp_attr::kPKeyTable: return "P_KeyTable";
    case smp_attr::kSl2VlTable: return "SLtoVLMappingTable";
    case smp_attr::kVlArbTable: return "VLArbitrationTable";
    case smp_attr::kLinearFwdTable: return "LinearForwardingTable";
    case smp_attr::kRandomFwdTable: return "RandomForwardingTable";
    case smp_attr::kMulticastFwdTable: return "MulticastForwardingTable";
    case smp_attr::kSmInfo: return "SMInfo";
    case smp_attr::kVendorDiag: return "VendorDiag";
    case smp_attr::kLedInfo: return "LedInfo";
    default: return "unknown";
  }
}

static_assert(sizeof(NodeInfo) <= kSmpDataSize && sizeof(SwitchInfo) <= kSmpDataSize &&
              sizeof(SmInfo) <= kSmpDataSize && sizeof(Sl2VlTable) <= kSmpDataSize);

}  // namespace madengine::wire
