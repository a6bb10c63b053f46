// M_Keys by port and the guid2mkey file (see mkey_book.hpp).
#include "sm/mkeys/mkey_book.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/durable_file.hpp"

namespace madengine::sm {

std::vector<std::uint64_t> MKeyBook::candidates(std::uint64_t first) const {
  std::vector<std::uint64_t> out{first};
  auto add = [&](std::uint64_t k) {
    if (out.size() < kMKeyCandidatesMax && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  if (configured != 0) add(configured);
  for (const auto& [guid, k] : keys)
    if (k != 0) add(k);  // 0 is no key: any key reaches such a port
  return out;
}

std::string MKeyBook::path_key(const wire::DrPath& p) {
  return std::string(reinterpret_cast<const char*>(p.ports.data()) + 1, p.hops);
}

bool load_guid2mkey(const std::string& path, Guid2Mkey& out, FileIssue& err) {
  out.clear();
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return true;
    err = {path, 0, std::strerror(errno)};
    return false;
  }
  std::string line;
  unsigned n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string g, k, extra;
    if (!(words >> g)) continue;  // blank: OpenSM writes one after every entry
    auto parse = [](const std::string& s, std::uint64_t& v) {
      try {
        std::size_t used = 0;
        v = std::stoull(s, &used, 0);
        return used == s.size();
      } catch (...) {
        return false;
      }
    };
    std::uint64_t guid = 0, key = 0;
    if (!parse(g, guid) || guid == 0) {
      err = {path, n, "'" + g + "' is not a GUID"};
      return false;
    }
    if (!(words >> k) || !parse(k, key) || (words >> extra)) {
      err = {path, n, "expected 'GUID M_KEY' (as 0x0002c90300000003 0x00000000000000ff)"};
      return false;
    }
    out[guid] = key;
  }
  return true;
}

std::string format_guid2mkey(const Guid2Mkey& keys) {
  std::string text;
  char buf[64];
  for (const auto& [guid, key] : keys) {
    std::snprintf(buf, sizeof buf, "0x%016llx 0x%016llx\n\n", static_cast<unsigned long long>(guid),
                  static_cast<unsigned long long>(key));
    text += buf;
  }
  return text;
}

bool save_guid2mkey(const std::string& path, const Guid2Mkey& keys, std::string& err) {
  const std::string text = format_guid2mkey(keys);
  return write_file_durably(path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, err);
}

}  // namespace madengine::sm
