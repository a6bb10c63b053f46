// QoS options into per-class tables (see qos_options.hpp). Stricter than
// OpenSM, which reads what it can of a malformed list: a bad entry is an
// error naming the option, so a typo never programs a surprise.
#include "sm/qos/qos_options.hpp"

#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace madengine::sm {

namespace {

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    const auto at = s.find(',');
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool number(std::string_view s, unsigned max, unsigned& out) {
  s = trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size() && out <= max;
}

bool parse_vlarb(std::string_view text, std::array<wire::VlArbTableBlock, 2>& out, std::string& why) {
  out = {};
  const auto items = split_commas(text);
  if (items.size() > 2 * wire::kVlArbBlockSize) {
    why = "more than 64 VL:weight entries";
    return false;
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto colon = items[i].find(':');
    unsigned vl = 0, weight = 0;
    if (colon == std::string_view::npos || !number(items[i].substr(0, colon), 14, vl) ||
        !number(items[i].substr(colon + 1), 255, weight)) {
      why = "entry " + std::to_string(i + 1) + " '" + std::string(trim(items[i])) + "' is not VL:weight (VL 0..14, weight 0..255)";
      return false;
    }
    wire::VlArbEntry& e = out[i / wire::kVlArbBlockSize].entries[i % wire::kVlArbBlockSize];
    e.set_vl(static_cast<std::uint8_t>(vl));
    e.weight = static_cast<std::uint8_t>(weight);
  }
  return true;
}

bool parse_sl2vl(std::string_view text, wire::Sl2VlTable& out, std::string& why) {
  const auto items = split_commas(text);
  if (items.size() != wire::kSlCount) {
    why = "needs 16 VLs (one per SL), has " + std::to_string(items.size());
    return false;
  }
  for (std::uint8_t sl = 0; sl < wire::kSlCount; ++sl) {
    unsigned vl = 0;
    if (!number(items[sl], 15, vl)) {
      why = "SL " + std::to_string(sl) + ": '" + std::string(trim(items[sl])) + "' is not a VL 0..15";
      return false;
    }
    out.set_vl(sl, static_cast<std::uint8_t>(vl));
  }
  return true;
}

bool build_class(const QosClassOptions& own, const QosClassOptions& all, const char* prefix, QosTables& t,
                 std::string& error) {
  const unsigned max_vls = own.max_vls != 0 ? own.max_vls : all.max_vls != 0 ? all.max_vls : kQosDefaultMaxVls;
  const int high = own.high_limit >= 0 ? own.high_limit : all.high_limit >= 0 ? all.high_limit : int{kQosDefaultHighLimit};
  if (max_vls > 15 || high > 255) {
    error = std::string(prefix) + (max_vls > 15 ? "max_vls must be 1..15" : "high_limit must be 0..255");
    return false;
  }
  t.max_vls = static_cast<std::uint8_t>(max_vls);
  t.high_limit = static_cast<std::uint8_t>(high);
  auto pick = [](const std::string& a, const std::string& b, const char* d) -> std::string_view {
    return !a.empty() ? a : !b.empty() ? std::string_view(b) : std::string_view(d);
  };
  // The option that supplied a value is the one an error names.
  auto origin = [&](const std::string& a, const char* key) {
    return std::string(!a.empty() ? prefix : "qos_") + key;
  };
  std::string why;
  if (!parse_vlarb(pick(own.vlarb_high, all.vlarb_high, kQosDefaultVlarbHigh), t.vlarb_high, why)) {
    error = origin(own.vlarb_high, "vlarb_high") + ": " + why;
    return false;
  }
  if (!parse_vlarb(pick(own.vlarb_low, all.vlarb_low, kQosDefaultVlarbLow), t.vlarb_low, why)) {
    error = origin(own.vlarb_low, "vlarb_low") + ": " + why;
    return false;
  }
  if (!parse_sl2vl(pick(own.sl2vl, all.sl2vl, kQosDefaultSl2Vl), t.sl2vl, why)) {
    error = origin(own.sl2vl, "sl2vl") + ": " + why;
    return false;
  }
  return true;
}

}  // namespace

std::uint16_t QosConfig::valid_sl_mask() const noexcept {
  std::uint16_t mask = 0xffff;
  for (const QosTables* t : {&ca, &sw0, &swe, &rtr})
    for (std::uint8_t sl = 0; sl < wire::kSlCount; ++sl)
      if (t->sl2vl.get_vl(sl) == wire::kVl15) mask = static_cast<std::uint16_t>(mask & ~(1u << sl));
  return mask;
}

QosConfig layered_sl2vl_config() {
  QosConfig c;
  c.vlarb = false;
  for (QosTables* t : {&c.ca, &c.sw0, &c.swe, &c.rtr})
    for (std::uint8_t sl = 0; sl < wire::kSlCount; ++sl) t->sl2vl.set_vl(sl, sl < 15 ? sl : 7);
  return c;
}

bool sl2vl_keeps_layers(const QosConfig& c, std::uint8_t layers, std::string& error) {
  static constexpr std::pair<const char*, QosTables QosConfig::*> kClasses[] = {
      {"qos_ca_sl2vl", &QosConfig::ca}, {"qos_sw0_sl2vl", &QosConfig::sw0},
      {"qos_swe_sl2vl", &QosConfig::swe}, {"qos_rtr_sl2vl", &QosConfig::rtr}};
  for (const auto& [name, table] : kClasses) {
    const wire::Sl2VlTable& t = (c.*table).sl2vl;
    for (std::uint8_t a = 0; a < layers && a < wire::kSlCount; ++a) {
      if (t.get_vl(a) == wire::kVl15) {
        error = std::string(name) + " (or qos_sl2vl) drops SL" + std::to_string(a) + ", which a layered routing uses";
        return false;
      }
      for (std::uint8_t b = 0; b < a; ++b)
        if (t.get_vl(a) == t.get_vl(b)) {
          error = std::string(name) + " (or qos_sl2vl) maps SL" + std::to_string(b) + " and SL" + std::to_string(a) +
                  " to VL" + std::to_string(t.get_vl(a)) + ": a layered routing puts each layer on its own VL (SL i), "
                  "and two layers on one VL can deadlock; give SL0.." + std::to_string(layers - 1) + " distinct VLs";
          return false;
        }
    }
  }
  return true;
}

std::optional<QosConfig> build_qos_config(const QosOptions& opts, std::string& error) {
  QosConfig c;
  if (!build_class(opts.all, QosClassOptions{}, "qos_", c.ca, error)) return std::nullopt;  // the general options alone first
  if (!build_class(opts.ca, opts.all, "qos_ca_", c.ca, error) || !build_class(opts.sw0, opts.all, "qos_sw0_", c.sw0, error) ||
      !build_class(opts.swe, opts.all, "qos_swe_", c.swe, error) || !build_class(opts.rtr, opts.all, "qos_rtr_", c.rtr, error))
    return std::nullopt;
  return c;
}

}  // namespace madengine::sm
