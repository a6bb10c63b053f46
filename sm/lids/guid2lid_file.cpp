// Reading and writing the guid2lid file (see guid2lid_file.hpp).
#include "sm/lids/guid2lid_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "madengine/fabric/fabric.hpp"

namespace madengine::sm {

bool load_guid2lid(const std::string& path, Guid2Lid& out, Guid2LidError& err) {
  out.clear();
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
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string guid_s;
    if (!(words >> guid_s)) continue;  // blank or comment
    unsigned long long guid = 0;
    unsigned min_lid = 0, max_lid = 0;
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
    if (!(words >> min_lid >> max_lid)) {
      err = {line_no, "expected 'GUID MIN_LID MAX_LID'"};
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

bool save_guid2lid(const std::string& path, const Guid2Lid& map, Guid2LidError& err) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::trunc);
    if (!o) {
      err = {0, tmp + ": " + std::strerror(errno)};
      return false;
    }
    char buf[64];
    for (const auto& [guid, r] : map) {
      std::snprintf(buf, sizeof buf, "0x%016llx %u %u\n", static_cast<unsigned long long>(guid), r.min_lid, r.max_lid);
      o << buf;
    }
    o.flush();
    if (!o) {
      err = {0, tmp + ": write failed"};
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = {0, path + ": " + std::strerror(errno)};
    return false;
  }
  return true;
}

}  // namespace madengine::sm
