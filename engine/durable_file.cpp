// write_file_durably (see include/madengine/common/durable_file.hpp).
#include "engine/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace madengine {

bool write_file_durably(const std::string& path, std::span<const std::uint8_t> bytes, std::string& error) noexcept {
  try {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = tmp + ": " + std::strerror(errno);
      return false;
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = tmp + ": " + std::strerror(n < 0 ? errno : EIO);
        ::close(fd);
        ::unlink(tmp.c_str());
        return false;
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
      error = tmp + ": " + std::strerror(errno);
      ::unlink(tmp.c_str());
      return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      error = path + ": " + std::strerror(errno);
      ::unlink(tmp.c_str());
      return false;
    }
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
      error = dir + ": " + std::strerror(errno);
      return false;
    }
    const bool synced = ::fsync(dfd) == 0;
    const int sync_errno = errno;
    ::close(dfd);
    if (!synced) {
      error = dir + ": " + std::strerror(sync_errno);
      return false;
    }
    return true;
  } catch (...) {
    error = path + ": out of memory";
    return false;
  }
}

}  // namespace madengine
