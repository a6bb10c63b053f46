/* The RMPP engine of one port: what the kernel's MAD layer does for agents
 * registered with an RMPP version (segmenting sends, reassembling and
 * acknowledging receives, time-outs, ABORT/STOP). No threads, no locks, no
 * clock: the caller serialises calls and passes the time, so a test drives it
 * deterministically and the preload layer drives it from its port thread. */
#ifndef RMPP_ENGINE_H
#define RMPP_ENGINE_H

#include <infiniband/umad.h>
#include <stddef.h>
#include <stdint.h>

/* A MAD or a whole reassembled message with its umad header, as umad_recv
 * hands it to the application: buf holds struct ib_user_mad, then mad_len
 * bytes of MAD. */
typedef struct rmpp_msg {
  struct rmpp_msg *next;
  size_t mad_len;
  uint8_t buf[];
} rmpp_msg;

static inline struct ib_user_mad *rmpp_msg_umad(rmpp_msg *m) { return (struct ib_user_mad *)m->buf; }
static inline uint8_t *rmpp_msg_mad(rmpp_msg *m) { return m->buf + sizeof(struct ib_user_mad); }
rmpp_msg *rmpp_msg_alloc(size_t mad_len);

typedef struct rmpp_io {
  void *ctx;
  /* Puts one MAD (umad header, then mad_len bytes) on the wire. A failed send
   * is left to the time-outs, as a lost MAD would be. */
  void (*send)(void *ctx, const struct ib_user_mad *umad, size_t mad_len);
  /* Hands a message to the application; the callee owns msg. */
  void (*deliver)(void *ctx, rmpp_msg *msg);
} rmpp_io;

/* Defaults are the kernel's (drivers/infiniband/core/mad_rmpp.c). */
typedef struct rmpp_config {
  uint32_t ack_timeout_ms;  /* sender's wait for an ACK: 2000, or the send's timeout if shorter */
  uint32_t recv_timeout_ms; /* receiver's limit for a whole message: 40000, then ABORT T2L */
  uint32_t linger_ms;       /* a completed receive re-ACKs duplicates this long: 10000 */
  uint32_t window_segs;     /* segments granted per ACK: 64 (receive queue 512 >> 3) */
} rmpp_config;

rmpp_config rmpp_config_default(void);

typedef struct rmpp_stats {
  uint64_t segs_sent, segs_resent, acks_sent, acks_received;
  uint64_t aborts_sent, aborts_received, stops_received, dups_dropped;
  uint64_t msgs_reassembled, msgs_passed, sends_done, sends_aborted, sends_timed_out;
  uint64_t unsolicited_dropped, requests_resent, requests_timed_out;
} rmpp_stats;

enum { kRmppAgentsMax = 64, kRmppRequestsMax = 1024 };

/* A request an RMPP agent sent. Its response is delivered, any other is
 * dropped, as the kernel drops responses it cannot match to a send; a
 * single-MAD request with a timeout is resent and then reported ETIMEDOUT,
 * as the kernel does for such agents, and a segmented one (a GetMulti) waits
 * its timeout for the response once its last segment is acknowledged, then
 * is reported ETIMEDOUT. */
typedef struct rmpp_request {
  uint64_t expires_ms;  /* untimed: forgotten after this */
  uint64_t deadline_ms; /* timed: next resend or report */
  uint32_t tid_lo;      /* the transport rewrites the upper half */
  uint32_t timeout_ms, retries_left;
  uint8_t mgmt_class, agent_id, used, timed;
  size_t mad_len;
  struct ib_user_mad umad; /* timed: the request, to resend */
  uint8_t mad[256];
} rmpp_request;

struct rmpp_send;
struct rmpp_recv;

typedef struct rmpp_engine {
  rmpp_io io;
  rmpp_config cfg;
  rmpp_stats stats;
  uint8_t agent_rmpp[kRmppAgentsMax]; /* RMPP version per agent id; 0: pass through */
  struct rmpp_send *sends;
  struct rmpp_recv *recvs;
  rmpp_request requests[kRmppRequestsMax];
} rmpp_engine;

void rmpp_engine_init(rmpp_engine *e, rmpp_io io, rmpp_config cfg);
void rmpp_engine_fini(rmpp_engine *e);

/* Records an agent's RMPP version; 0 (or unregistering) cancels its transfers. */
void rmpp_engine_set_agent(rmpp_engine *e, int agent_id, uint8_t rmpp_version);
/* Whether the engine does RMPP for the agent. */
int rmpp_engine_agent_does_rmpp(const rmpp_engine *e, uint32_t agent_id);

/* An application send. Returns 1 when the engine does not own it (send it
 * as is), 0 when the engine took it, or -errno. */
int rmpp_engine_send(rmpp_engine *e, const struct ib_user_mad *umad, size_t mad_len, uint64_t now_ms);

/* A MAD from the wire; the engine owns msg. */
void rmpp_engine_input(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms);

/* Runs expired timers; returns the next deadline (UINT64_MAX: none). */
uint64_t rmpp_engine_tick(rmpp_engine *e, uint64_t now_ms);

#endif
