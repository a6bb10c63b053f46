// write_file_durably (see engine/durable_file.hpp).
#include "engine/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace madengine {

namespace {

// Pairs with the release store in set_durable_write_observer.
std::atomic<const DurableWriteObserver*> g_observer{nullptr};

// False (with `error` set) when the observer stops the write before `step`.
bool may(const std::string& path, DurableStep step, std::string& error) {
  const DurableWriteObserver* obs = g_observer.load(std::memory_order_acquire);
  if (obs == nullptr || (*obs)(path, step)) return true;
  error = path + ": stopped before " + to_string(step) + " (crash injected)";
  return false;
}

}  // namespace

const char* to_string(DurableStep s) noexcept {
  switch (s) {
    case DurableStep::kOpenTemp: return "open-temp";
    case DurableStep::kWrite: return "write";
    case DurableStep::kSyncFile: return "fsync-file";
    case DurableStep::kCloseFile: return "close-file";
    case DurableStep::kRename: return "rename";
    case DurableStep::kOpenDir: return "open-dir";
    case DurableStep::kSyncDir: return "fsync-dir";
  }
  return "?";
}

void set_durable_write_observer(const DurableWriteObserver* observer) noexcept {
  g_observer.store(observer, std::memory_order_release);
}

bool write_file_durably(const std::string& path, std::span<const std::uint8_t> bytes, std::string& error) noexcept {
  try {
    const std::string tmp = path + ".tmp";
    if (!may(path, DurableStep::kOpenTemp, error)) return false;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = tmp + ": " + std::strerror(errno);
      return false;
    }
    if (!may(path, DurableStep::kWrite, error)) {
      ::close(fd);
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
    if (!may(path, DurableStep::kSyncFile, error)) {
      ::close(fd);
      return false;
    }
    if (::fsync(fd) != 0) {
      error = tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    if (!may(path, DurableStep::kCloseFile, error)) {
      ::close(fd);
      return false;
    }
    if (::close(fd) != 0) {
      error = tmp + ": " + std::strerror(errno);
      ::unlink(tmp.c_str());
      return false;
    }
    if (!may(path, DurableStep::kRename, error)) return false;
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      error = path + ": " + std::strerror(errno);
      ::unlink(tmp.c_str());
      return false;
    }
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    if (!may(path, DurableStep::kOpenDir, error)) return false;
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
      error = dir + ": " + std::strerror(errno);
      return false;
    }
    if (!may(path, DurableStep::kSyncDir, error)) {
      ::close(dfd);
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
