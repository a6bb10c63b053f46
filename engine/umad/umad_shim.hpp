// Bounds on ibsim's LD_PRELOAD shim (umad2sim). The shim turns umad calls
// into blocking calls on its own Unix sockets to ibsim: a request/reply on
// its control socket when the IsSM device is opened or closed and at exit,
// and a write per MAD on its data socket. Against an ibsim that is alive
// but not answering (stopped, or a reply lost when it died) those never
// return. The sockets are ordinary kernel sockets of this process, so the
// transport gives them timeouts: every wait the shim makes for us ends.
#pragma once

#include <cstddef>

namespace madengine::umad_shim {

// How long a shim call waits on ibsim's side before it fails (the shim
// then logs "ctl failed" or "cannot write" and the call returns an error).
inline constexpr int kControlTimeoutMs = 100;
inline constexpr int kDataSendTimeoutMs = 100;

// A umad fd the kernel never handed out: the shim's (it numbers its fds from 1024).
bool is_shim_fd(int fd) noexcept;

// Sets the timeouts above on the shim's control and data sockets of this
// process (found by their bound names, "<IBSIM_SOCKNAME>:ctl<pid>" and
// ":in<pid>" in the abstract namespace). Returns how many sockets it bounded.
std::size_t bound_shim_sockets() noexcept;

}  // namespace madengine::umad_shim
