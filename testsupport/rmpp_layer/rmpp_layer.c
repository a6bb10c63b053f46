/* librmpp_layer.so: the kernel MAD layer's RMPP for programs on ibsim.
 * Preloaded before libumad2sim.so, it interposes libibumad's agent, send and
 * receive calls and libc's poll(), and runs an rmpp_engine for every port
 * that has an agent registered with an RMPP version; other ports and agents
 * pass through untouched. It also interposes connect() to put shim_tail.h's
 * relay in front of the shim's socket.
 *
 * Design: one helper thread per such port owns the wire. It alone reads the
 * shim's queue (poll with a bounded wait, then umad_recv with timeout 0), so
 * segments, ACKs and time-outs progress whatever the application is doing:
 * OpenSM sends from several threads and blocks in umad_recv(-1) in another,
 * saquery blocks in umad_recv with a timeout, other clients poll() first. The
 * application sees only whole messages, from a queue of the layer's own:
 * umad_recv takes from it, and poll() on the port's fd waits on an eventfd
 * that is readable exactly while that queue is not empty, so a poll/recv
 * loop keeps its meaning. Progress driven from the application's calls
 * could not time out a window while the application sits in a long
 * computation, and would need every call site to run timers; the thread
 * costs one context switch per MAD on RMPP ports only. */
#define _GNU_SOURCE
#include "rmpp_engine.h"
#include "rmpp_wire.h"
#include "shim_tail.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Built with hidden visibility: only the interposed calls are exported. */
#define RMPP_EXPORT __attribute__((visibility("default")))

enum {
  kPortsMax = 16,
  kIdleWaitMs = 50,    /* bounds the helper's sleep: stop requests and new timers */
  kBurstMax = 64,      /* MADs taken from the shim per wake-up */
  kRecvSliceMs = 50,   /* bounds a pass-through umad_recv so a port going RMPP is noticed */
  kPollLocalMax = 16,
};

typedef struct port {
  int fd;
  int efd; /* readable while ready_head != NULL */
  pthread_t thread;
  atomic_int stop;
  pthread_mutex_t mu; /* guards eng and the ready queue */
  pthread_cond_t ready_cv;
  rmpp_engine eng;
  rmpp_msg *ready_head, *ready_tail;
} port;

static struct {
  int (*umad_register)(int, int, int, uint8_t, long *);
  int (*umad_register_oui)(int, int, uint8_t, uint8_t *, long *);
  int (*umad_register2)(int, struct umad_reg_attr *, uint32_t *);
  int (*umad_unregister)(int, int);
  int (*umad_send)(int, int, void *, int, int, int);
  int (*umad_recv)(int, void *, int *, int);
  int (*umad_close_port)(int);
  int (*poll)(struct pollfd *, nfds_t, int);
  int (*connect)(int, __CONST_SOCKADDR_ARG, socklen_t);
} real;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic(port *) g_ports[kPortsMax];
static atomic_int g_ports_live;
static pthread_mutex_t g_ports_mu = PTHREAD_MUTEX_INITIALIZER; /* port creation and removal */
static int g_disabled, g_debug, g_atexit_done, g_no_tail_fix;
static rmpp_config g_cfg;
/* On an HCA the kernel gives each agent registration its own upper TID half,
 * so a new process never reuses the TIDs of the last one. Under ibsim the
 * upper half carries the shim's agent id and ibsim's client slot, the same
 * for the next process on the node: its first requests would look like the
 * last one's to the SA's RMPP (a finished transfer's duplicate, re-ACKed and
 * dropped) and the last one's late answers like its own. The requests of
 * RMPP agents therefore leave with the lower half XORed with a per-process
 * salt, and their answers come back with it removed. */
static uint32_t g_tid_salt;
static __thread int t_inside; /* set on helper threads: their calls go straight to the shim */

static uint32_t env_u32(const char *name, uint32_t dflt) {
  const char *v = getenv(name);
  return v && *v ? (uint32_t)strtoul(v, NULL, 0) : dflt;
}

/* ISO C has no object-to-function pointer cast; POSIX guarantees the copy works. */
#define RESOLVE(name)                        \
  do {                                       \
    void *sym = dlsym(RTLD_NEXT, #name);     \
    memcpy(&real.name, &sym, sizeof(sym));   \
  } while (0)

static void resolve(void) {
  RESOLVE(umad_register);
  RESOLVE(umad_register_oui);
  RESOLVE(umad_register2);
  RESOLVE(umad_unregister);
  RESOLVE(umad_send);
  RESOLVE(umad_recv);
  RESOLVE(umad_close_port);
  RESOLVE(poll);
  RESOLVE(connect);
  g_disabled = env_u32("RMPP_LAYER_DISABLE", 0) != 0;
  g_debug = (int)env_u32("RMPP_LAYER_DEBUG", 0);
  g_no_tail_fix = env_u32("RMPP_LAYER_NO_TAIL_FIX", 0) != 0;
  g_cfg = rmpp_config_default();
  g_cfg.ack_timeout_ms = env_u32("RMPP_LAYER_ACK_TIMEOUT_MS", g_cfg.ack_timeout_ms);
  g_cfg.recv_timeout_ms = env_u32("RMPP_LAYER_RECV_TIMEOUT_MS", g_cfg.recv_timeout_ms);
  g_cfg.linger_ms = env_u32("RMPP_LAYER_LINGER_MS", g_cfg.linger_ms);
  g_cfg.window_segs = env_u32("RMPP_LAYER_WINDOW", g_cfg.window_segs);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  g_tid_salt = ((uint32_t)getpid() * 2654435761u) ^ (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
  if (g_tid_salt == 0) g_tid_salt = 1;
}

static void salt_tid(uint8_t *mad) { rmpp_put_be32(mad + kOffTid + 4, rmpp_get_be32(mad + kOffTid + 4) ^ g_tid_salt); }

static void init(void) { pthread_once(&g_once, resolve); }

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static port *find_port(int fd) {
  if (atomic_load_explicit(&g_ports_live, memory_order_acquire) == 0) return NULL;
  for (int i = 0; i < kPortsMax; i++) {
    port *p = atomic_load_explicit(&g_ports[i], memory_order_acquire); /* pairs with the release in add/remove */
    if (p && p->fd == fd) return p;
  }
  return NULL;
}

/* rmpp_io callbacks; called with p->mu held. */
/* RMPP_LAYER_DEBUG=2: one line per MAD through the layer. */
static void trace(const char *dir, int fd, const struct ib_user_mad *umad, size_t mad_len) {
  const uint8_t *m = umad->data;
  fprintf(stderr, "rmpp_layer: fd %d %s agent %u lid %u len %zu class 0x%02x method 0x%02x tid 0x%016llx rmpp %u/%u/0x%02x seg %u paylen %u tail",
          fd, dir, umad->agent_id, ntohs(umad->addr.lid), mad_len, m[1], m[3], (unsigned long long)mad_tid(m),
          m[kOffRmppVersion], m[kOffRmppType], m[kOffRmppFlags], rmpp_seg_num(m), rmpp_paylen(m));
  for (size_t i = mad_len > 16 ? mad_len - 16 : 0; i < mad_len; i++) fprintf(stderr, " %02x", m[i]);
  fprintf(stderr, "\n");
}

static void io_send(void *ctx, const struct ib_user_mad *umad, size_t mad_len) {
  port *p = ctx;
  if (g_debug >= 2) trace("out", p->fd, umad, mad_len);
  int rc = real.umad_send(p->fd, (int)umad->agent_id, (void *)umad, (int)mad_len, 0, 0);
  if (rc < 0 && g_debug) fprintf(stderr, "rmpp_layer: fd %d: send failed: %d\n", p->fd, rc);
}

static void io_deliver(void *ctx, rmpp_msg *msg) {
  port *p = ctx;
  const struct ib_user_mad *u = rmpp_msg_umad(msg);
  /* An answer, or our own request handed back (a time-out): the agent's TID. */
  if (msg->mad_len >= kMadHdrLen && rmpp_engine_agent_does_rmpp(&p->eng, u->agent_id) &&
      (u->status != 0 || mad_is_response(rmpp_msg_mad(msg))))
    salt_tid(rmpp_msg_mad(msg));
  msg->next = NULL;
  if (p->ready_tail)
    p->ready_tail->next = msg;
  else {
    p->ready_head = msg;
    eventfd_write(p->efd, 1);
  }
  p->ready_tail = msg;
  pthread_cond_broadcast(&p->ready_cv);
}

static void *port_main(void *arg) {
  port *p = arg;
  t_inside = 1;
  uint8_t buf[sizeof(struct ib_user_mad) + kMadSize];
  uint64_t next = UINT64_MAX;
  while (!atomic_load(&p->stop)) {
    uint64_t now = now_ms();
    int wait_ms = kIdleWaitMs;
    if (next != UINT64_MAX) wait_ms = next <= now ? 0 : (next - now < kIdleWaitMs ? (int)(next - now) : kIdleWaitMs);
    struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
    const int ready = real.poll(&pfd, 1, wait_ms);
    now = now_ms();
    pthread_mutex_lock(&p->mu);
    for (int i = 0; ready > 0 && i < kBurstMax; i++) {
      int len = kMadSize;
      if (real.umad_recv(p->fd, buf, &len, 0) < 0) break;
      rmpp_msg *m = rmpp_msg_alloc((size_t)len);
      if (!m) break;
      memcpy(m->buf, buf, sizeof(struct ib_user_mad) + (size_t)len);
      shim_tail_repair(rmpp_msg_umad(m), (size_t)len);
      if (g_debug >= 2) trace("in", p->fd, rmpp_msg_umad(m), (size_t)len);
      rmpp_engine_input(&p->eng, m, now);
    }
    next = rmpp_engine_tick(&p->eng, now);
    pthread_mutex_unlock(&p->mu);
  }
  return NULL;
}

static void print_stats(const port *p) {
  const rmpp_stats *s = &p->eng.stats;
  fprintf(stderr,
          "rmpp_layer: fd %d: segs_sent %llu resent %llu acks_sent %llu acks_received %llu aborts_sent %llu "
          "aborts_received %llu stops_received %llu dups_dropped %llu msgs_reassembled %llu msgs_passed %llu "
          "sends_done %llu sends_aborted %llu sends_timed_out %llu unsolicited_dropped %llu requests_resent %llu "
          "requests_timed_out %llu\n",
          p->fd, (unsigned long long)s->segs_sent, (unsigned long long)s->segs_resent,
          (unsigned long long)s->acks_sent, (unsigned long long)s->acks_received,
          (unsigned long long)s->aborts_sent, (unsigned long long)s->aborts_received,
          (unsigned long long)s->stops_received, (unsigned long long)s->dups_dropped,
          (unsigned long long)s->msgs_reassembled, (unsigned long long)s->msgs_passed,
          (unsigned long long)s->sends_done, (unsigned long long)s->sends_aborted,
          (unsigned long long)s->sends_timed_out, (unsigned long long)s->unsolicited_dropped,
          (unsigned long long)s->requests_resent, (unsigned long long)s->requests_timed_out);
}

static void stop_port(port *p) {
  if (atomic_exchange(&p->stop, 1)) return;
  pthread_join(p->thread, NULL);
  if (g_debug) print_stats(p);
}

/* Runs before umad2sim's own exit handler (registered earlier, run later):
 * the helper threads must not outlive the shim's queues. */
static void stop_all_ports(void) {
  for (int i = 0; i < kPortsMax; i++) {
    port *p = atomic_load(&g_ports[i]);
    if (p) stop_port(p);
  }
}

static port *add_port(int fd) {
  pthread_mutex_lock(&g_ports_mu);
  port *p = find_port(fd);
  int slot = -1;
  for (int i = 0; !p && i < kPortsMax && slot < 0; i++)
    if (!atomic_load(&g_ports[i])) slot = i;
  if (p || slot < 0) goto out;
  p = calloc(1, sizeof(*p));
  if (!p) goto out;
  p->fd = fd;
  p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  pthread_mutex_init(&p->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->ready_cv, &ca);
  pthread_condattr_destroy(&ca);
  rmpp_engine_init(&p->eng, (rmpp_io){.ctx = p, .send = io_send, .deliver = io_deliver}, g_cfg);
  if (p->efd < 0 || pthread_create(&p->thread, NULL, port_main, p) != 0) {
    if (p->efd >= 0) close(p->efd);
    free(p);
    p = NULL;
    goto out;
  }
  if (!g_atexit_done) {
    atexit(stop_all_ports);
    g_atexit_done = 1;
  }
  atomic_store_explicit(&g_ports[slot], p, memory_order_release);
  atomic_fetch_add_explicit(&g_ports_live, 1, memory_order_release);
  if (g_debug) fprintf(stderr, "rmpp_layer: fd %d: RMPP on\n", fd);
out:
  pthread_mutex_unlock(&g_ports_mu);
  return p;
}

static void remove_port(int fd) {
  pthread_mutex_lock(&g_ports_mu);
  port *p = NULL;
  for (int i = 0; i < kPortsMax && !p; i++) {
    port *q = atomic_load(&g_ports[i]);
    if (q && q->fd == fd) {
      p = q;
      atomic_store_explicit(&g_ports[i], NULL, memory_order_release);
      atomic_fetch_sub_explicit(&g_ports_live, 1, memory_order_release);
    }
  }
  pthread_mutex_unlock(&g_ports_mu);
  if (!p) return;
  stop_port(p);
  rmpp_engine_fini(&p->eng);
  for (rmpp_msg *m = p->ready_head, *n; m; m = n) {
    n = m->next;
    free(m);
  }
  close(p->efd);
  pthread_cond_destroy(&p->ready_cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* Application threads may be cancelled (OpenSM cancels its receiver): none
 * may leave holding a port's lock. */
static int lock_port(port *p) {
  int old_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state);
  pthread_mutex_lock(&p->mu);
  return old_state;
}

static void unlock_port(port *p, int old_state) {
  pthread_mutex_unlock(&p->mu);
  pthread_setcancelstate(old_state, NULL);
}

static void unlock_on_cancel(void *mu) { pthread_mutex_unlock(mu); }

static void note_agent(int fd, int agent_id, int mgmt_class, uint8_t rmpp_version) {
  if (agent_id < 0 || t_inside) return;
  shim_tail_agent_added(fd, agent_id, mgmt_class);
  const int rmpp = rmpp_version && rmpp_class_has_rmpp((uint8_t)mgmt_class);
  port *p = find_port(fd);
  if (!p && rmpp && !g_disabled) p = add_port(fd);
  if (!p) return;
  const int cs = lock_port(p);
  rmpp_engine_set_agent(&p->eng, agent_id, rmpp ? rmpp_version : 0);
  unlock_port(p, cs);
  if (g_debug) fprintf(stderr, "rmpp_layer: fd %d: agent %d class 0x%02x rmpp %d\n", fd, agent_id, mgmt_class, rmpp);
}

RMPP_EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version, long method_mask[16 / sizeof(long)]) {
  init();
  const int id = real.umad_register(portid, mgmt_class, mgmt_version, rmpp_version, method_mask);
  note_agent(portid, id, mgmt_class, rmpp_version);
  return id;
}

RMPP_EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3], long method_mask[16 / sizeof(long)]) {
  init();
  const int id = real.umad_register_oui(portid, mgmt_class, rmpp_version, oui, method_mask);
  note_agent(portid, id, mgmt_class, rmpp_version);
  return id;
}

RMPP_EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id) {
  init();
  const int rc = real.umad_register2(port_fd, attr, agent_id);
  if (rc == 0 && attr && agent_id) note_agent(port_fd, (int)*agent_id, attr->mgmt_class, attr->rmpp_version);
  return rc;
}

RMPP_EXPORT int umad_unregister(int portid, int agentid) {
  init();
  port *p = t_inside ? NULL : find_port(portid);
  if (p) {
    const int cs = lock_port(p);
    rmpp_engine_set_agent(&p->eng, agentid, 0);
    unlock_port(p, cs);
  }
  if (!t_inside && shim_tail_active()) return 0; /* stays registered with the shim: see umad_close_port */
  if (!t_inside) shim_tail_agent_removed(portid, agentid);
  return real.umad_unregister(portid, agentid);
}

/* The shim hands a MAD whose class has no open fd to a null queue, and the
 * process dies; answers still in flight (a late response, a retransmitted
 * segment) arrive after a close, past the relay's check. So under the shim
 * the fd and its agents stay with it, and such MADs wait there unread. */
RMPP_EXPORT int umad_close_port(int portid) {
  init();
  if (!t_inside) {
    remove_port(portid);
    if (shim_tail_active()) return 0;
    shim_tail_port_closed(portid);
  }
  return real.umad_close_port(portid);
}

RMPP_EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms, int retries) {
  init();
  port *p = t_inside ? NULL : find_port(portid);
  if (!p || !umad || length < 0) return real.umad_send(portid, agentid, umad, length, timeout_ms, retries);
  struct ib_user_mad *u = umad;
  u->agent_id = (uint32_t)agentid;
  u->timeout_ms = (uint32_t)timeout_ms;
  u->retries = (uint32_t)retries;
  const int cs = lock_port(p);
  /* A request of an RMPP agent goes out with its TID salted, from a copy:
   * the application's buffer stays as it wrote it. */
  struct ib_user_mad *salted = NULL;
  if ((size_t)length >= kMadHdrLen && !mad_is_response(u->data) &&
      rmpp_engine_agent_does_rmpp(&p->eng, (uint32_t)agentid)) {
    salted = malloc(sizeof(*u) + (size_t)length);
    if (!salted) {
      unlock_port(p, cs);
      errno = ENOMEM;
      return -EIO;
    }
    memcpy(salted, u, sizeof(*u) + (size_t)length);
    salt_tid(salted->data);
    u = salted;
  }
  const int rc = rmpp_engine_send(&p->eng, u, (size_t)length, now_ms());
  unlock_port(p, cs);
  if (rc == 1) {
    const int sent = real.umad_send(portid, agentid, u, length, timeout_ms, retries);
    const int err = errno;
    free(salted);
    errno = err;
    return sent;
  }
  free(salted);
  if (rc < 0) {
    errno = -rc;
    return -EIO; /* what libibumad returns for a failed write */
  }
  errno = 0;
  return 0;
}

/* Takes the next whole message; the kernel's read() semantics: a buffer too
 * small for a multi-segment message gets the first segment, the needed
 * length and ENOSPC, and the message stays queued. */
static int take_ready(port *p, void *umad, int *length) {
  rmpp_msg *m = p->ready_head;
  const size_t hdr = sizeof(struct ib_user_mad);
  if (m->mad_len > kMadSize && (size_t)*length < m->mad_len) {
    const size_t first = (size_t)*length < kMadSize ? (size_t)*length : kMadSize;
    memcpy(umad, m->buf, hdr + first);
    *length = (int)m->mad_len;
    errno = ENOSPC;
    return -ENOSPC;
  }
  /* A single MAD into a short buffer is cut, as the shim does. */
  const size_t n = m->mad_len < (size_t)*length ? m->mad_len : (size_t)*length;
  memcpy(umad, m->buf, hdr + n);
  p->ready_head = m->next;
  if (!p->ready_head) {
    p->ready_tail = NULL;
    eventfd_t drained;
    eventfd_read(p->efd, &drained);
  }
  const int agent = (int)rmpp_msg_umad(m)->agent_id;
  free(m);
  *length = (int)n;
  errno = 0;
  return agent;
}

/* Called with p->mu held: the agent id, or -errno. */
static int wait_and_take(port *p, void *umad, int *length, int timeout_ms, const struct timespec *deadline) {
  while (!p->ready_head) {
    if (timeout_ms == 0) return -EWOULDBLOCK;
    if (timeout_ms < 0)
      pthread_cond_wait(&p->ready_cv, &p->mu);
    else if (pthread_cond_timedwait(&p->ready_cv, &p->mu, deadline) == ETIMEDOUT && !p->ready_head)
      return -ETIMEDOUT;
  }
  return take_ready(p, umad, length);
}

static int recv_managed(port *p, void *umad, int *length, int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  if (timeout_ms > 0) {
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&p->mu);
  /* The wait is a cancellation point: a cancelled reader gives the lock back.
   * (volatile: the cleanup macros may use setjmp.) */
  volatile int result;
  pthread_cleanup_push(unlock_on_cancel, &p->mu);
  result = wait_and_take(p, umad, length, timeout_ms, &deadline);
  pthread_cleanup_pop(0);
  pthread_mutex_unlock(&p->mu);
  errno = result < 0 ? -result : 0;
  return result;
}

RMPP_EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms) {
  init();
  if (t_inside) return real.umad_recv(portid, umad, length, timeout_ms);
  if (!umad || !length) {
    errno = EINVAL;
    return -EINVAL;
  }
  /* A long wait on a pass-through port is cut in slices: an agent with RMPP
   * registered meanwhile (OpenSM starts its receiver before binding the SA)
   * hands the port to the helper, and this call must then wait on its queue. */
  const uint64_t end = timeout_ms > 0 ? now_ms() + (uint64_t)timeout_ms : 0;
  for (;;) {
    int left = timeout_ms;
    if (timeout_ms > 0) {
      const uint64_t now = now_ms();
      left = end > now ? (int)(end - now) : 1;
    }
    port *p = find_port(portid);
    if (p) return recv_managed(p, umad, length, left);
    const int slice = left < 0 || left > kRecvSliceMs ? kRecvSliceMs : left;
    const int saved_length = *length;
    const int rc = real.umad_recv(portid, umad, length, slice);
    /* Passed through, a MAD still needs its last 32 bytes back (madengine's
     * own RMPP segments carry data there). */
    if (rc >= 0) shim_tail_repair((struct ib_user_mad *)umad, (size_t)*length);
    /* The port went RMPP while this call waited in the shim: the MAD is the
     * engine's to judge (an answer it matches to the request it saw go out),
     * and this call waits on the port's queue instead. */
    if (rc >= 0 && (p = find_port(portid)) != NULL) {
      rmpp_msg *m = rmpp_msg_alloc((size_t)*length);
      if (m) {
        memcpy(m->buf, umad, sizeof(struct ib_user_mad) + (size_t)*length);
        const int cs = lock_port(p);
        rmpp_engine_input(&p->eng, m, now_ms());
        unlock_port(p, cs);
      }
      *length = saved_length;
      continue;
    }
    if (rc >= 0 || timeout_ms == 0 || (rc != -ETIMEDOUT && rc != -EWOULDBLOCK)) return rc;
    if (timeout_ms > 0 && now_ms() >= end) return rc;
    *length = saved_length;
  }
}

RMPP_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  init();
  if (t_inside || atomic_load_explicit(&g_ports_live, memory_order_acquire) == 0)
    return real.poll(fds, nfds, timeout);
  int managed = 0;
  for (nfds_t i = 0; i < nfds; i++) managed += find_port(fds[i].fd) != NULL;
  if (!managed) return real.poll(fds, nfds, timeout);

  /* The port's fd is readable for the application when whole messages wait
   * in the layer's queue: poll its eventfd in its place. */
  struct pollfd local[kPollLocalMax];
  struct pollfd *sub = nfds <= kPollLocalMax ? local : malloc(nfds * sizeof(*sub));
  if (!sub) {
    errno = ENOMEM;
    return -1;
  }
  for (nfds_t i = 0; i < nfds; i++) {
    sub[i] = fds[i];
    port *p = find_port(fds[i].fd);
    if (p) {
      sub[i].fd = p->efd;
      sub[i].events = POLLIN;
    }
  }
  const int rc = real.poll(sub, nfds, timeout);
  for (nfds_t i = 0; i < nfds; i++) {
    fds[i].revents = sub[i].revents;
    if (sub[i].fd != fds[i].fd) fds[i].revents = sub[i].revents & (POLLIN | POLLRDNORM);
  }
  if (sub != local) free(sub);
  return rc;
}

/* umad2sim connects its data socket while it starts, before its receiver
 * thread: the moment to put the tail relay in front of it. */
RMPP_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len) {
  init();
  const int rc = real.connect(fd, addr, len);
  /* glibc's declaration takes a transparent union of address pointers */
  const struct sockaddr *sa = addr.__sockaddr__;
  if (rc == 0 && !g_no_tail_fix && !g_disabled && sa && sa->sa_family == AF_UNIX) {
    const int saved = errno;
    if (shim_tail_adopt(fd) == 0 && g_debug) fprintf(stderr, "rmpp_layer: relaying umad2sim's socket %d\n", fd);
    errno = saved;
  }
  return rc;
}
