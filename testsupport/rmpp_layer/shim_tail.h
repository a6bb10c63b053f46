/* Repair of umad2sim's receive path. The shim copies each MAD ibsim sends
 * into a buffer sized for ibsim's packet, not for a umad header plus a MAD:
 * it keeps the first 224 bytes and hands out the last 32 from beyond that
 * buffer. A relay between ibsim and the shim, on the shim's data socket,
 * keeps the true last 32 bytes of each MAD so the layer can put them back. */
#ifndef SHIM_TAIL_H
#define SHIM_TAIL_H

#include <infiniband/umad.h>
#include <stddef.h>

enum { kShimTailKept = 224 }; /* bytes of a MAD the shim copies faithfully */

/* Called on each socket the process connects: when fd is the shim's data
 * socket (the shim connects it before it starts its receiver thread, so
 * nothing waits on it yet), puts the relay in front of it. Returns 0, or -1
 * with nothing changed. */
int shim_tail_adopt(int fd);
void shim_tail_stop(void);

/* The agents the process has registered, by port fd. The relay drops a MAD
 * of a class no agent has: the shim would hand it to a NULL queue and crash
 * (late retransmissions after a port closed, traps before an SM binds). */
void shim_tail_agent_added(int port_fd, int agent_id, int mgmt_class);
void shim_tail_agent_removed(int port_fd, int agent_id);
void shim_tail_port_closed(int port_fd);
/* The relay runs: the process is under the shim. */
int shim_tail_active(void);

/* Restores bytes 224..255 of a MAD the shim delivered, if the relay saw it. */
void shim_tail_repair(struct ib_user_mad *umad, size_t mad_len);

#endif
