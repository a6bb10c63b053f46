// saquery output as records, shared by the SA conformance tests on ibsim:
// parses saquery's "key....value" lines and table rows into one map per
// record, and runs one saquery on a fabric (repeating a run the shim crashed);
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

// A saquery record: "key....value" lines under a "... dump:" header; table
// rows "SL: 0| 1|..." / "VL    : ..." / "Weight: ..." are keyed by their
// name and their order in the record ("VL#0", "VL#1"); MFT rows by their
// MLID ("MFT 0xc001"). Other lines without a value start a new record.
using Record = std::map<std::string, std::string>;

inline std::vector<Record> parse_records(const std::string& text) {
  std::vector<Record> out;
  std::map<std::string, int> rows;  // occurrences of a row name in the current record
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    const auto dots = line.find("..", b);
    const auto bar = line.find('|', b);
    // An MFT row: "0xc001<tab>0x000c" (MLID, port mask), keyed "MFT 0xc001".
    if (const auto tab = line.find('\t', b); dots == std::string::npos && tab != std::string::npos &&
                                              line.compare(b, 2, "0x") == 0 && line.compare(tab + 1, 2, "0x") == 0) {
      if (out.empty()) out.emplace_back();
      out.back()["MFT " + line.substr(b, tab - b)] = line.substr(tab + 1);
      continue;
    }
    if (dots == std::string::npos && bar == std::string::npos) {
      out.emplace_back();  // a header line starts a record
      rows.clear();
      continue;
    }
    if (out.empty()) out.emplace_back();
    if (dots != std::string::npos) {
      std::string key = line.substr(b, dots - b);
      if (!key.empty() && key.back() == ':') key.pop_back();
      const auto v = line.find_first_not_of('.', dots);
      out.back()[key] = v == std::string::npos ? "" : line.substr(v);
      continue;
    }
    const auto colon = line.find(':', b);
    if (colon == std::string::npos) continue;
    std::string key = line.substr(b, colon - b);
    while (!key.empty() && key.back() == ' ') key.pop_back();
    out.back()[key + "#" + std::to_string(rows[key]++)] = line.substr(colon + 1);
  }
  std::erase_if(out, [](const Record& r) { return r.empty(); });
  return out;
}

struct Outcome {
  int exit_code = 0;  // -1: timed out
  std::string out;
  std::string err;
};

// Under the shim saquery now and then dies of SIGSEGV before printing
// anything (seen against madengine, 1 to 3 of ~75 queries a run); such a
// run is repeated, at most twice, and counted in `crashes`.
inline constexpr int kShellSegv = 128 + 11;

inline Outcome run_saquery(const IbsimFabric& f, const std::string& args, const char* host, int& crashes) {
  RunResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = f.run("saquery " + args, host, std::chrono::seconds(20));
    if (r.timed_out || r.exit_code != kShellSegv) break;
    ++crashes;
  }
  return {r.timed_out ? -1 : r.exit_code, r.out, r.err};
}

}  // namespace madengine::ibsim
