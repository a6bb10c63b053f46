// Reading and writing the guid2lid file (see guid2lid_file.hpp).
#include "sm/lids/guid2lid_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/durable_file.hpp"
#include "fabric/fabric.hpp"

namespace madengine::sm {

namespace {

// A LID as OpenSM writes it ("0x0037") or as a plain decimal ("55"). A
// leading zero without "0x" is decimal, not octal.
bool parse_lid(const std::string& s, unsigned& out) noexcept {
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  try {
    std::size_t used = 0;
    const unsigned long v = std::stoul(hex ? s.substr(2) : s, &used, hex ? 16 : 10);
    if (used != s.size() - (hex ? 2 : 0) || v > 0xffff) return false;
    out = static_cast<unsigned>(v);
    return true;
  } catch (...) {
    return false;
  }
}

constexpr const char* kFabricKey = "#fabric";

// "#fabric sm_port_guid 0x... subnet_prefix 0x...": false with `why` when malformed.
bool parse_fabric_line(const std::string& line, sa::FabricIdentity& id, std::string& why) {
  std::istringstream words(line);
  std::string key, guid_name, guid_s, prefix_name, prefix_s, extra;
  words >> key >> guid_name >> guid_s >> prefix_name >> prefix_s;
  if (guid_name != "sm_port_guid" || prefix_name != "subnet_prefix" || (words >> extra)) {
    why = "expected '#fabric sm_port_guid GUID subnet_prefix PREFIX'";
    return false;
  }
  try {
    std::size_t used_guid = 0, used_prefix = 0;
    id.sm_port_guid = std::stoull(guid_s, &used_guid, 0);
    id.subnet_prefix = std::stoull(prefix_s, &used_prefix, 0);
    if (used_guid == guid_s.size() && used_prefix == prefix_s.size() && id.sm_port_guid != 0) return true;
  } catch (...) {
  }
  why = "'" + guid_s + "' / '" + prefix_s + "' is not an SM port GUID and subnet prefix";
  return false;
}

}  // namespace

bool load_guid2lid(const std::string& path, Guid2Lid& out, Guid2LidError& err, sa::FabricIdentity* fabric) {
  out.clear();
  if (fabric != nullptr) *fabric = {};
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return true;
    err = {0, path + ": " + std::strerror(errno)};
    return false;
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.rfind(kFabricKey, 0) == 0 && (line.size() == 7 || line[7] == ' ' || line[7] == '\t')) {
      sa::FabricIdentity id;
      std::string why;
      if (!parse_fabric_line(line, id, why)) {
        err = {line_no, why};
        return false;
      }
      if (fabric != nullptr) *fabric = id;
      continue;
    }
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string guid_s;
    if (!(words >> guid_s)) continue;  // blank (OpenSM leaves one after every entry) or comment
    unsigned long long guid = 0;
    std::size_t used = 0;
    try {
      guid = std::stoull(guid_s, &used, 0);
    } catch (...) {
      used = 0;
    }
    if (used != guid_s.size() || guid == 0) {
      err = {line_no, "'" + guid_s + "' is not a GUID"};
      return false;
    }
    std::string min_s, max_s;
    unsigned min_lid = 0, max_lid = 0;
    if (!(words >> min_s >> max_s) || !parse_lid(min_s, min_lid) || !parse_lid(max_s, max_lid)) {
      err = {line_no, "expected 'GUID MIN_LID MAX_LID' (LIDs as 0x0037 or 55)"};
      return false;
    }
    std::string extra;
    if (words >> extra) {
      err = {line_no, "unexpected '" + extra + "' after MAX_LID"};
      return false;
    }
    if (min_lid == 0 || max_lid < min_lid || max_lid > fabric::kLidUnicastMax) {
      err = {line_no, "LID range " + std::to_string(min_lid) + ".." + std::to_string(max_lid) +
                          " is not a unicast range (1..49151)"};
      return false;
    }
    if (!out.emplace(guid, LidRange{static_cast<std::uint16_t>(min_lid), static_cast<std::uint16_t>(max_lid)}).second) {
      err = {line_no, "GUID " + guid_s + " appears twice"};
      return false;
    }
  }
  return true;
}

std::string format_guid2lid(const Guid2Lid& map, const sa::FabricIdentity& fabric) {
  std::string text;
  text.reserve(map.size() * 35 + 80);
  char buf[96];
  if (fabric.known()) {
    // Its own entry for OpenSM's reader: the blank line ends it.
    std::snprintf(buf, sizeof buf, "%s sm_port_guid 0x%016llx subnet_prefix 0x%016llx\n\n", kFabricKey,
                  static_cast<unsigned long long>(fabric.sm_port_guid),
                  static_cast<unsigned long long>(fabric.subnet_prefix));
    text += buf;
  }
  for (const auto& [guid, r] : map) {
    // OpenSM's own line, and the blank line its database writer puts after it.
    std::snprintf(buf, sizeof buf, "0x%016llx 0x%04x 0x%04x\n\n", static_cast<unsigned long long>(guid), r.min_lid,
                  r.max_lid);
    text += buf;
  }
  return text;
}

bool save_guid2lid(const std::string& path, const Guid2Lid& map, Guid2LidError& err, const sa::FabricIdentity& fabric) {
  const std::string text = format_guid2lid(map, fabric);
  std::string why;
  if (write_file_durably(path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, why)) return true;
  err = {0, why};
  return false;
}

}  // namespace madengine::sm
