// Reading and writing the guid2lid file (see guid2lid_file.hpp).
#include "sm/lids/guid2lid_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "madengine/fabric/fabric.hpp"

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

bool write_all(int fd, const std::string& s) noexcept {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

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

std::string format_guid2lid(const Guid2Lid& map) {
  std::string text;
  text.reserve(map.size() * 35);
  char buf[64];
  for (const auto& [guid, r] : map) {
    // OpenSM's own line, and the blank line its database writer puts after it.
    std::snprintf(buf, sizeof buf, "0x%016llx 0x%04x 0x%04x\n\n", static_cast<unsigned long long>(guid), r.min_lid,
                  r.max_lid);
    text += buf;
  }
  return text;
}

bool save_guid2lid(const std::string& path, const Guid2Lid& map, Guid2LidError& err) {
  const std::string text = format_guid2lid(map);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    err = {0, tmp + ": " + std::strerror(errno)};
    return false;
  }
  // Data on disk before the rename, and the rename itself after it: a crash
  // leaves the old file or the new one, never an empty or torn one.
  const bool written = write_all(fd, text) && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  if (!written) {
    err = {0, tmp + ": " + std::strerror(write_errno)};
    ::unlink(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = {0, path + ": " + std::strerror(errno)};
    return false;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    const bool synced = ::fsync(dfd) == 0;
    const int sync_errno = errno;
    ::close(dfd);
    if (!synced) {
      err = {0, dir + ": " + std::strerror(sync_errno)};
      return false;
    }
  }
  return true;
}

}  // namespace madengine::sm
