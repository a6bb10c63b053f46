// OpenSM's QoS options (its man page, "QOS CONFIGURATION"): qos_max_vls,
// qos_high_limit, qos_vlarb_high, qos_vlarb_low and qos_sl2vl, for every
// port and per port class (qos_ca_*, qos_sw0_*, qos_swe_*, qos_rtr_*), with
// OpenSM's fall-backs (a class's option, else the general one, else
// OpenSM's built-in default) and syntax ("VL:weight,..." and 16 VLs).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "madengine/wire/smp/sl2vl.hpp"
#include "madengine/wire/smp/vl_arb.hpp"

namespace madengine::sm {

// One set of options as an operator writes them; unset fields fall back.
struct QosClassOptions {
  unsigned max_vls = 0;   // 0: unset
  int high_limit = -1;    // -1: unset
  std::string vlarb_high;  // "": unset
  std::string vlarb_low;
  std::string sl2vl;
};

struct QosOptions {
  bool enabled = false;  // OpenSM's qos (opensm -Q)
  QosClassOptions all;   // qos_*
  QosClassOptions ca, sw0, swe, rtr;  // qos_ca_*, qos_sw0_*, qos_swe_*, qos_rtr_*
};

// OpenSM's built-in defaults.
inline constexpr unsigned kQosDefaultMaxVls = 15;
inline constexpr unsigned kQosDefaultHighLimit = 0;
inline constexpr const char* kQosDefaultVlarbHigh = "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
inline constexpr const char* kQosDefaultVlarbLow = "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
inline constexpr const char* kQosDefaultSl2Vl = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";

// The tables of one port class, before each port's OperationalVLs limit them.
struct QosTables {
  std::uint8_t max_vls = kQosDefaultMaxVls;  // accepted as OpenSM does; like 3.3.23 it does not set OperationalVLs
  std::uint8_t high_limit = kQosDefaultHighLimit;  // PortInfo.VLHighLimit
  std::array<wire::VlArbTableBlock, 2> vlarb_high{};  // 64 entries
  std::array<wire::VlArbTableBlock, 2> vlarb_low{};
  wire::Sl2VlTable sl2vl{};
};

enum class QosPortClass : std::uint8_t { kCa, kSwitchPort0, kSwitchExternal, kRouter };

struct QosConfig {
  QosTables ca, sw0, swe, rtr;
  bool vlarb = true;  // false: SL2VL tables only (layered routing without QoS)
  const QosTables& of(QosPortClass c) const noexcept {
    switch (c) {
      case QosPortClass::kCa: return ca;
      case QosPortClass::kSwitchPort0: return sw0;
      case QosPortClass::kSwitchExternal: return swe;
      case QosPortClass::kRouter: return rtr;
    }
    return ca;
  }
  // SLs that no class maps to VL15 (drop): the SLs a PathRecord may carry.
  std::uint16_t valid_sl_mask() const noexcept;
};

// The four classes' tables from the options, or nullopt with `error` naming
// the option ("qos_ca_vlarb_low: ..."). OpenSM's syntax: "VL:weight" pairs
// separated by commas (up to 64; the rest 0:0), 16 comma-separated VLs.
std::optional<QosConfig> build_qos_config(const QosOptions& opts, std::string& error);

// What a routing that splits paths into virtual-lane layers (dfsssp, nue,
// dor: the layer is the path's SL) needs on every port when QoS is off:
// SL i to VL i, SL15 to VL7 (OpenSM's default qos_sl2vl; programming limits
// it to each port's VLs, and routing uses no more layers than the ports
// have VLs), no VLArb tables. Without
// it a switch keeps its own SL2VL, and the layers' deadlock freedom holds
// only in the SA's SL field.
QosConfig layered_sl2vl_config();

// With QoS on, a layered routing needs SLs 0..layers-1 on distinct VLs
// (none dropped) in every class's SL2VL: true, or false with `error`
// naming the option and the SLs it merges.
bool sl2vl_keeps_layers(const QosConfig& c, std::uint8_t layers, std::string& error);

}  // namespace madengine::sm
