// Bounds on the umad2sim shim's socket waits (see umad_shim.hpp).
#include "engine/umad/umad_shim.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

namespace madengine::umad_shim {

namespace {

bool set_timeout(int fd, int option, int ms) noexcept {
  const timeval tv{.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  return ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv) == 0;
}

// The abstract name a Unix datagram socket is bound to, "" for anything else.
std::string abstract_name(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_DGRAM) return {};
  sockaddr_un addr{};
  len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX) return {};
  const std::size_t path_len = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
  if (path_len < 2 || addr.sun_path[0] != '\0') return {};
  std::string name(addr.sun_path + 1, path_len - 1);
  while (!name.empty() && name.back() == '\0') name.pop_back();  // ibsim's names carry their terminator
  return name;
}

}  // namespace

bool is_shim_fd(int fd) noexcept { return fd >= 0 && ::fcntl(fd, F_GETFD) == -1 && errno == EBADF; }

int bound_shim_sockets() noexcept {
  try {
    // umad2sim's names (sim_client.c): "<base>:ctl<pid>" and "<base>:in<pid>",
    // base from IBSIM_SOCKNAME, "sim" without it. IBSIM_SERVER_NAME puts the
    // shim on UDP instead, which this does not look for.
    const char* base_env = std::getenv("IBSIM_SOCKNAME");
    const std::string base = base_env != nullptr && *base_env != '\0' ? base_env : "sim";
    const std::string pid = std::to_string(::getpid());
    const std::string ctl = base + ":ctl" + pid, data = base + ":in" + pid;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return -1;
    std::size_t bounded = 0;
    int data_fd = -1;
    while (const dirent* e = ::readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
      const std::string name = abstract_name(static_cast<int>(fd));
      if (name == ctl) {
        bounded += set_timeout(static_cast<int>(fd), SO_RCVTIMEO, kControlTimeoutMs) &&
                   set_timeout(static_cast<int>(fd), SO_SNDTIMEO, kControlTimeoutMs);
      } else if (name == data) {
        bounded += set_timeout(static_cast<int>(fd), SO_SNDTIMEO, kDataSendTimeoutMs);
        data_fd = static_cast<int>(fd);
      }
    }
    ::closedir(dir);
    if (bounded != 2)
      spdlog::warn("umad: under ibsim's shim: {} of its 2 sockets ({}, {}) found to bound; a call into a hung ibsim "
                   "may not return",
                   bounded, ctl, data);
    else
      spdlog::debug("umad: ibsim's shim: control socket waits bounded to {} ms, data sends to {} ms", kControlTimeoutMs,
                    kDataSendTimeoutMs);
    return data_fd;
  } catch (...) {
    return -1;
  }
}

bool shim_data_writable(int data_fd, long wait_us) noexcept {
  pollfd p{data_fd, POLLOUT, 0};
  const timespec ts{.tv_sec = 0, .tv_nsec = wait_us * 1000};
  return ::ppoll(&p, 1, &ts, nullptr) != 0;  // the kernel's: the shim wraps poll(), not ppoll()
}

}  // namespace madengine::umad_shim
