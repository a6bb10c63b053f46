/* The relay behind shim_tail.h. The shim's data socket (bound to the
 * abstract name "<IBSIM_SOCKNAME>:in<pid>", connected to ibsim) is swapped
 * for one end of a socket pair with dup2; a thread moves datagrams between
 * the pair's other end and the real socket, both ways, unchanged, and keeps
 * the packets ibsim sends in a ring for shim_tail_repair. recv/send, not
 * read/write, so the shim's own wrappers stay out of the relay. */
#define _GNU_SOURCE
#include "shim_tail.h"
#include "rmpp_wire.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ibsim's packet on its data sockets (a sim_request): addresses, status,
 * length, one MAD. */
typedef struct ibsim_packet {
  uint32_t dlid, slid, dqp, sqp, status;
  uint64_t length;
  uint8_t mad[kMadSize];
} ibsim_packet;
_Static_assert(sizeof(ibsim_packet) == 288, "ibsim packet layout");

enum {
  kRingMads = 2048,  /* MADs remembered: far more than the shim queues between reads */
  kRelayWaitMs = 50, /* bounds the relay's sleep so a stop is seen */
};

typedef struct kept_mad {
  uint32_t slid, sqp;
  uint8_t mad[kMadSize];
  int live;
} kept_mad;

static struct {
  int real_fd;  /* the socket ibsim talks to */
  int inner_fd; /* our end of the pair the shim now holds */
  pthread_t thread;
  atomic_int stop, running;
  pthread_mutex_t mu; /* guards ring, head, count */
  kept_mad ring[kRingMads];
  size_t head, count; /* oldest entry, entries in use (live or not) */
  uint64_t from_ibsim, to_ibsim, repaired;
} g = {.real_fd = -1, .inner_fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER};

enum { kAgentsMax = 64 };

/* Registered agents; agents_mu guards them, class_agents counts per class. */
static struct {
  int port_fd, agent_id, mgmt_class, used;
} g_agents[kAgentsMax];
static pthread_mutex_t g_agents_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_class_agents[256];
static atomic_ullong g_orphans_dropped;

void shim_tail_agent_added(int port_fd, int agent_id, int mgmt_class) {
  pthread_mutex_lock(&g_agents_mu);
  for (int i = 0; i < kAgentsMax; i++)
    if (!g_agents[i].used) {
      g_agents[i].port_fd = port_fd;
      g_agents[i].agent_id = agent_id;
      g_agents[i].mgmt_class = mgmt_class & 0xff;
      g_agents[i].used = 1;
      atomic_fetch_add(&g_class_agents[mgmt_class & 0xff], 1);
      break;
    }
  pthread_mutex_unlock(&g_agents_mu);
}

static void agents_remove(int port_fd, int agent_id) { /* agent_id < 0: all of the port */
  pthread_mutex_lock(&g_agents_mu);
  for (int i = 0; i < kAgentsMax; i++)
    if (g_agents[i].used && g_agents[i].port_fd == port_fd && (agent_id < 0 || g_agents[i].agent_id == agent_id)) {
      g_agents[i].used = 0;
      atomic_fetch_sub(&g_class_agents[g_agents[i].mgmt_class], 1);
    }
  pthread_mutex_unlock(&g_agents_mu);
}

void shim_tail_agent_removed(int port_fd, int agent_id) { agents_remove(port_fd, agent_id); }
void shim_tail_port_closed(int port_fd) { agents_remove(port_fd, -1); }
int shim_tail_active(void) { return atomic_load(&g.running); }

static void keep(const ibsim_packet *pk) {
  pthread_mutex_lock(&g.mu);
  if (g.count == kRingMads) { /* forget the oldest */
    g.head = (g.head + 1) % kRingMads;
    g.count--;
  }
  kept_mad *k = &g.ring[(g.head + g.count) % kRingMads];
  k->slid = pk->slid;
  k->sqp = pk->sqp;
  memcpy(k->mad, pk->mad, kMadSize);
  k->live = 1;
  g.count++;
  pthread_mutex_unlock(&g.mu);
}

/* A MAD sent shorter than 256 bytes (OpenSM sends a one-record answer as
 * SA header plus record) reaches a process on an HCA as 256 bytes, the rest
 * zero: the kernel's send buffer is zeroed and every received MAD has the
 * full size. umad2sim forwards the short length and leaves the rest of its
 * packet uninitialized, so the receiver would get neither the bytes past 224
 * (the shim's copy bug) nor a whole MAD. */
static void pad_to_mad_size(ibsim_packet *pk) {
  const uint64_t len = be64toh(pk->length);
  if (len < kMadHdrLen || len >= kMadSize) return; /* not a short MAD: as sent */
  memset(pk->mad + len, 0, kMadSize - len);
  pk->length = htobe64(kMadSize);
}

static void *relay_main(void *arg) {
  (void)arg;
  union {
    ibsim_packet pk;
    uint8_t raw[sizeof(ibsim_packet) + 64];
  } buf;
  struct pollfd pfd[2] = {{.fd = g.real_fd, .events = POLLIN}, {.fd = g.inner_fd, .events = POLLIN}};
  while (!atomic_load(&g.stop)) {
    if (poll(pfd, 2, kRelayWaitMs) <= 0) continue;
    if (pfd[0].revents & POLLIN) {
      const ssize_t n = recv(g.real_fd, &buf, sizeof(buf), MSG_DONTWAIT);
      if (n == (ssize_t)sizeof(ibsim_packet)) {
        if (atomic_load(&g_class_agents[buf.pk.mad[kOffMgmtClass]]) == 0) {
          atomic_fetch_add(&g_orphans_dropped, 1);
          continue;
        }
        pad_to_mad_size(&buf.pk);
        keep(&buf.pk);
      }
      if (n > 0) g.from_ibsim++;
      if (n > 0) send(g.inner_fd, &buf, (size_t)n, 0);
    }
    if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(g.inner_fd, &buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0 && send(g.real_fd, &buf, (size_t)n, 0) == n) g.to_ibsim++;
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break; /* the shim closed its end */
    }
  }
  return NULL;
}

/* Is fd the shim's data socket, bound to "<IBSIM_SOCKNAME>:in<pid>"? */
static int is_shim_data_socket(int fd) {
  const char *host = getenv("IBSIM_SERVER_NAME");
  if (host && *host) return 0; /* remote ibsim: UDP, not relayed */
  const char *base = getenv("IBSIM_SOCKNAME");
  char want[108];
  const int want_len = snprintf(want, sizeof(want), "%s:in%d", base ? base : "sim", (int)getpid());
  struct sockaddr_un sa;
  socklen_t len = sizeof(sa);
  if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sun_family != AF_UNIX) return 0;
  const size_t name_len = len - offsetof(struct sockaddr_un, sun_path);
  /* abstract: a leading NUL; the shim's length counts a trailing one too */
  return (name_len == (size_t)want_len + 1 || (name_len == (size_t)want_len + 2 && !sa.sun_path[want_len + 1])) &&
         sa.sun_path[0] == '\0' && memcmp(sa.sun_path + 1, want, (size_t)want_len) == 0;
}

int shim_tail_adopt(int fd) {
  if (atomic_load(&g.running) || !is_shim_data_socket(fd)) return -1;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
  /* Room for a window of segments in each direction. */
  const int bytes = 1 << 20;
  setsockopt(pair[0], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  setsockopt(pair[1], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  g.real_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (g.real_fd < 0 || dup2(pair[0], fd) < 0) {
    if (g.real_fd >= 0) close(g.real_fd);
    close(pair[0]);
    close(pair[1]);
    g.real_fd = -1;
    return -1;
  }
  close(pair[0]);
  g.inner_fd = pair[1];
  atomic_store(&g.stop, 0);
  if (pthread_create(&g.thread, NULL, relay_main, NULL) != 0) return -1;
  atomic_store(&g.running, 1);
  atexit(shim_tail_stop);
  return 0;
}

void shim_tail_stop(void) {
  if (!atomic_exchange(&g.running, 0)) return;
  atomic_store(&g.stop, 1);
  pthread_join(g.thread, NULL);
  if (getenv("RMPP_LAYER_DEBUG"))
    fprintf(stderr, "rmpp_layer: relay: from_ibsim %llu to_ibsim %llu repaired %llu orphans_dropped %llu\n",
            (unsigned long long)g.from_ibsim, (unsigned long long)g.to_ibsim, (unsigned long long)g.repaired,
            (unsigned long long)atomic_load(&g_orphans_dropped));
}

void shim_tail_repair(struct ib_user_mad *umad, size_t mad_len) {
  if (mad_len < kMadSize || !atomic_load(&g.running)) return;
  pthread_mutex_lock(&g.mu);
  /* The shim hands MADs out in arrival order per fd: the oldest match is it. */
  for (size_t i = 0; i < g.count; i++) {
    kept_mad *k = &g.ring[(g.head + i) % kRingMads];
    if (!k->live || k->slid != umad->addr.lid || k->sqp != umad->addr.qpn ||
        memcmp(k->mad, umad->data, kShimTailKept) != 0)
      continue;
    memcpy(umad->data + kShimTailKept, k->mad + kShimTailKept, kMadSize - kShimTailKept);
    k->live = 0;
    g.repaired++;
    break;
  }
  while (g.count && !g.ring[g.head].live) { /* drop consumed entries at the front */
    g.head = (g.head + 1) % kRingMads;
    g.count--;
  }
  pthread_mutex_unlock(&g.mu);
}
