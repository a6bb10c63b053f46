// Bounds on ibsim's LD_PRELOAD shim (umad2sim). The shim turns umad calls
// into blocking calls on its own Unix sockets to ibsim: a request/reply on
// its control socket when the IsSM device is opened or closed and at exit,
// and a write per MAD on its data socket. Against an ibsim that is alive
// but not answering (stopped, or a reply lost when it died) those never
// return. The sockets are ordinary kernel sockets of this process, so the
// transport gives them timeouts: every wait the shim makes for us ends.
//
// The shim writes a MAD holding its one lock, which its receiver thread
// also takes for every MAD it reads. A write that waits for ibsim (whose
// queue for us holds only net.unix.max_dgram_qlen datagrams, 10 by default)
// stops that thread, so ibsim, blocked on our full queue, never reads the
// write: a deadlock only the send timeout breaks, one MAD each 100 ms. The
// transport therefore writes only when the data socket says a datagram
// fits (shim_data_writable).
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
// ":in<pid>" in the abstract namespace). Returns the data socket (-1: not
// found).
int bound_shim_sockets() noexcept;

// The data socket takes a datagram (POLLOUT: room in our send buffer and in
// ibsim's queue for it), waiting at most `wait_us` for ibsim to read: no
// lock is held meanwhile, so the shim's receiver drains what ibsim sends
// us and ibsim gets on. A socket gone reads as writable: the write then
// fails and the transport sees why.
bool shim_data_writable(int data_fd, long wait_us) noexcept;
// How long a send waits for that room before the MADs are kept for later.
inline constexpr long kDataRoomWaitUs = 200;

}  // namespace madengine::umad_shim
