// saquery output as records, shared by the SA conformance tests on ibsim:
// saquery's "key....value" lines and table rows into one map per record;
// and one smpquery/saquery answer of "key....value" lines as one map.
#pragma once

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ibsim_harness.hpp"

namespace madengine::ibsim {

// "Key:....value" (smpquery) and "\t\tkey....value" (saquery) lines into a map.
inline std::map<std::string, std::string> parse_dotted(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto key_begin = line.find_first_not_of(" \t");
    if (key_begin == std::string::npos) continue;
    const auto dots = line.find("..", key_begin);
    if (dots == std::string::npos) continue;
    std::string key = line.substr(key_begin, dots - key_begin);
    if (!key.empty() && key.back() == ':') key.pop_back();
    const auto val_begin = line.find_first_not_of('.', dots);
    if (val_begin == std::string::npos) continue;
    m.emplace(key, line.substr(val_begin));
  }
  return m;
}

// A saquery record, as saquery prints it: a header at the left margin
// ("PortInfoRecord dump:") starts one; indented lines belong to it:
//   "key....value"                 -> key = value
//   "SL: 0| 1|..." / "VL    : ..." -> rows keyed by name and order ("VL#0", "VL#1")
//   "0xc001<tab>0x000c"            -> an MFT row, "MFT 0xc001" (MLID, port mask)
//   "5<tab>2"                      -> a table row, "row 5" (an LFT's LID and port)
//   "LFT:" / "PortInfo dump:"      -> a section label, not a field
//   anything else ("IsTrapSupported" under CapMask, a P_Key table's words)
//                                  -> appended to the field above it (or "text#n")
using Record = std::map<std::string, std::string>;

inline std::vector<Record> parse_records(const std::string& text) {
  std::vector<Record> out;
  std::map<std::string, int> rows;  // occurrences of a row name in the current record
  std::string last_key;
  std::istringstream in(text);
  std::string line;
  auto record = [&]() -> Record& {
    if (out.empty()) out.emplace_back();
    return out.back();
  };
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    const std::string body = line.substr(b, e - b + 1);
    const auto dots = body.find("..");
    const auto bar = body.find('|');
    if (b == 0 && dots == std::string::npos && bar == std::string::npos && body.back() == ':') {
      out.emplace_back();  // a header at the margin starts a record
      rows.clear();
      last_key.clear();
      continue;
    }
    if (dots != std::string::npos) {
      std::string key = body.substr(0, dots);
      if (!key.empty() && key.back() == ':') key.pop_back();
      const auto v = body.find_first_not_of('.', dots);
      record()[key] = v == std::string::npos ? "" : body.substr(v);
      last_key = key;
      continue;
    }
    if (bar != std::string::npos) {
      const auto colon = body.find(':');
      if (colon == std::string::npos) continue;
      std::string key = body.substr(0, colon);
      while (!key.empty() && key.back() == ' ') key.pop_back();
      record()[key + "#" + std::to_string(rows[key]++)] = body.substr(colon + 1);
      last_key.clear();
      continue;
    }
    if (const auto tab = body.find('\t'); tab != std::string::npos && body.find('\t', tab + 1) == std::string::npos &&
                                          body.find(' ') == std::string::npos) {
      const std::string first = body.substr(0, tab), second = body.substr(tab + 1);
      record()[(first.rfind("0x", 0) == 0 ? "MFT " : "row ") + first] = second;
      continue;
    }
    if (body.back() == ':') {
      last_key.clear();  // a section label
      continue;
    }
    if (!last_key.empty()) {
      record()[last_key] += " " + body;
    } else {
      record()["text#" + std::to_string(rows["text"]++)] = body;
    }
  }
  std::erase_if(out, [](const Record& r) { return r.empty(); });
  return out;
}

struct Outcome {
  int exit_code = 0;  // -1: timed out
  std::string out;
  std::string err;
};

}  // namespace madengine::ibsim
