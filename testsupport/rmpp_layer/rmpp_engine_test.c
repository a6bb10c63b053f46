/* Self-test of the RMPP engine without ibsim: two engines (a sender at LID 1,
 * a receiver at LID 2) joined by a fake wire that the test owns, with a
 * virtual clock and seeded faults: loss, duplicates, an ACK out of window,
 * ABORT and STOP from the receiver, a receiver that stops answering. The
 * wire rewrites request TIDs as umad2sim does. Prints the seed on failure. */
#include "rmpp_engine.h"
#include "rmpp_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSides = 2, kWireMax = 1 << 16 };
enum Fault { kDeliver, kDrop, kDup };

typedef struct wire_mad {
  int to;
  rmpp_msg *msg;
} wire_mad;

typedef struct net net;
typedef enum Fault (*fault_fn)(net *n, int from, const uint8_t *mad);

typedef struct side {
  rmpp_engine eng;
  net *n;
  int idx;
  rmpp_msg *got[64]; /* messages handed to this side's application */
  int got_count;
} side;

struct net {
  side s[kSides];
  wire_mad wire[kWireMax];
  size_t head, tail;
  uint64_t now_ms, rng;
  fault_fn fault;
  int dead; /* the receiver neither receives nor answers */
  uint64_t counter;
};

static uint32_t rnd(net *n) {
  n->rng ^= n->rng << 13;
  n->rng ^= n->rng >> 7;
  n->rng ^= n->rng << 17;
  return (uint32_t)n->rng;
}

static void push(net *n, int to, const struct ib_user_mad *umad, size_t mad_len, int from) {
  rmpp_msg *m = rmpp_msg_alloc(mad_len);
  struct ib_user_mad *u = rmpp_msg_umad(m);
  memcpy(m->buf, umad, sizeof(*umad) + mad_len);
  uint8_t *mad = rmpp_msg_mad(m);
  if (!mad_is_response(mad)) { /* umad2sim puts the agent in TID bits 32..47 */
    mad[kOffTid + 2] = (uint8_t)(u->agent_id >> 8);
    mad[kOffTid + 3] = (uint8_t)u->agent_id;
  }
  u->agent_id = 0;
  u->addr.lid = htons((uint16_t)(from + 1));
  u->addr.qpn = htonl(1);
  u->status = 0;
  n->wire[n->tail++ % kWireMax] = (wire_mad){.to = to, .msg = m};
}

static void io_send(void *ctx, const struct ib_user_mad *umad, size_t mad_len) {
  side *s = ctx;
  net *n = s->n;
  const int to = ntohs(umad->addr.lid) - 1;
  if (to < 0 || to >= kSides || n->dead) return;
  n->counter++;
  const enum Fault f = n->fault ? n->fault(n, s->idx, umad->data) : kDeliver;
  if (f == kDrop) return;
  push(n, to, umad, mad_len, s->idx);
  if (f == kDup) push(n, to, umad, mad_len, s->idx);
}

static void io_deliver(void *ctx, rmpp_msg *msg) {
  side *s = ctx;
  if (s->got_count < 64)
    s->got[s->got_count++] = msg;
  else
    free(msg);
}

static void net_init(net *n, uint64_t seed, rmpp_config cfg) {
  memset(n, 0, sizeof(*n));
  n->rng = seed ? seed : 1;
  for (int i = 0; i < kSides; i++) {
    n->s[i].n = n;
    n->s[i].idx = i;
    rmpp_engine_init(&n->s[i].eng, (rmpp_io){.ctx = &n->s[i], .send = io_send, .deliver = io_deliver}, cfg);
    rmpp_engine_set_agent(&n->s[i].eng, 0, 1);
  }
}

static void net_fini(net *n) {
  while (n->head != n->tail) free(n->wire[n->head++ % kWireMax].msg);
  for (int i = 0; i < kSides; i++) {
    rmpp_engine_fini(&n->s[i].eng);
    for (int k = 0; k < n->s[i].got_count; k++) free(n->s[i].got[k]);
  }
}

/* Delivers everything in flight, runs timers, jumps the clock to the next
 * deadline when the wire is idle; stops when nothing is left to do. */
static void net_run(net *n, uint64_t limit_ms) {
  while (n->now_ms <= limit_ms) {
    while (n->head != n->tail) {
      wire_mad w = n->wire[n->head++ % kWireMax];
      if (n->dead && w.to == 1) {
        free(w.msg);
        continue;
      }
      rmpp_engine_input(&n->s[w.to].eng, w.msg, n->now_ms);
    }
    uint64_t next = UINT64_MAX;
    for (int i = 0; i < kSides; i++) {
      const uint64_t d = rmpp_engine_tick(&n->s[i].eng, n->now_ms);
      if (d < next) next = d;
    }
    if (n->head != n->tail) continue;
    if (next == UINT64_MAX) return;
    n->now_ms = next > n->now_ms ? next : n->now_ms + 1;
  }
}

/* An SA GetTableResp of data_len bytes after the SA header, Active. */
static struct ib_user_mad *make_resp(size_t data_len, uint8_t method, int retries, size_t *mad_len) {
  *mad_len = 56 + data_len;
  struct ib_user_mad *u = calloc(1, sizeof(*u) + *mad_len);
  uint8_t *mad = u->data;
  mad[0] = 1;
  mad[kOffMgmtClass] = 0x03;
  mad[kOffClassVersion] = 2;
  mad[kOffMethod] = method;
  for (int i = 0; i < 8; i++) mad[kOffTid + i] = (uint8_t)(0x10 + i);
  mad[kOffTid + 2] = mad[kOffTid + 3] = 0; /* a response carries its requester's agent there */
  mad[16] = 0x00;
  mad[17] = 0x11; /* NodeRecord */
  mad[kOffRmppVersion] = 1;
  mad[kOffRmppType] = kRmppTypeData;
  mad[kOffRmppFlags] = (uint8_t)(14 << 3) | kRmppFlagActive;
  for (size_t i = 0; i < data_len; i++) mad[56 + i] = (uint8_t)(i * 7 + 3);
  u->agent_id = 0;
  u->addr.lid = htons(2);
  u->addr.qpn = htonl(1);
  u->retries = (uint32_t)retries;
  return u;
}

/* The receiving side asks first: responses nobody asked for are dropped. */
static int ask(net *n, int side_idx, const struct ib_user_mad *resp) {
  struct {
    struct ib_user_mad umad;
    uint8_t mad[kMadSize];
  } q;
  memset(&q, 0, sizeof(q));
  memcpy(q.mad, resp->data, kRmppHdrLen);
  q.mad[kOffMethod] &= (uint8_t)~kMethodResp;
  q.mad[kOffRmppFlags] = 0;
  q.umad.timeout_ms = 0; /* no timer: the transfers below may take long in virtual time */
  q.umad.addr.lid = htons((uint16_t)(2 - side_idx));
  return rmpp_engine_send(&n->s[side_idx].eng, &q.umad, kMadSize, n->now_ms);
}

static int failures;
static uint64_t g_seed;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "FAIL %s:%d: %s (seed %llu)\n", __FILE__, __LINE__, #cond,             \
              (unsigned long long)g_seed);                                                   \
      failures++;                                                                            \
    }                                                                                        \
  } while (0)

/* The receiver got exactly the sender's message, header and payload. */
static int same_message(const struct ib_user_mad *sent, size_t mad_len, rmpp_msg *got) {
  if (got->mad_len != mad_len) return 0;
  const uint8_t *a = sent->data, *b = rmpp_msg_mad(got);
  return memcmp(a, b, kOffRmppVersion) == 0 && memcmp(a + kRmppHdrLen, b + kRmppHdrLen, mad_len - kRmppHdrLen) == 0 &&
         rmpp_msg_umad(got)->length == sizeof(struct ib_user_mad) + mad_len;
}

static rmpp_config fast_cfg(void) {
  rmpp_config c = rmpp_config_default();
  return c;
}

/* One transfer of data_len bytes with a fault function; returns the net for checks. */
static void transfer(net *n, size_t data_len, int retries, fault_fn fault, uint64_t seed) {
  g_seed = seed;
  net_init(n, seed, fast_cfg());
  n->fault = fault;
  size_t mad_len;
  struct ib_user_mad *u = make_resp(data_len, 0x92, retries, &mad_len);
  CHECK(ask(n, 1, u) == 1);
  CHECK(rmpp_engine_send(&n->s[0].eng, u, mad_len, 0) == 0);
  net_run(n, 200000);
  if (n->s[1].got_count == 1) CHECK(same_message(u, mad_len, n->s[1].got[0]));
  free(u);
}

static enum Fault lossy(net *n, int from, const uint8_t *mad) {
  (void)from;
  (void)mad;
  return rnd(n) % 100 < 10 ? kDrop : kDeliver;
}

static enum Fault dupy(net *n, int from, const uint8_t *mad) {
  (void)from;
  (void)mad;
  const uint32_t r = rnd(n) % 100;
  return r < 20 ? kDup : kDeliver;
}

static enum Fault lossy_dupy(net *n, int from, const uint8_t *mad) {
  const uint32_t r = rnd(n) % 100;
  (void)from;
  (void)mad;
  return r < 8 ? kDrop : r < 16 ? kDup : kDeliver;
}

static void test_clean(void) {
  static net n;
  const size_t sizes[] = {0, 1, 199, 200, 201, 400, 12999, 64 * 200, 64 * 200 + 1, 300 * 200 - 37};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    transfer(&n, sizes[i], 3, NULL, 1);
    const uint32_t segs = sizes[i] ? (uint32_t)((sizes[i] + 199) / 200) : 1;
    CHECK(n.s[1].got_count == 1);
    CHECK(n.s[0].eng.stats.sends_done == 1);
    CHECK(n.s[0].eng.stats.segs_sent == segs);
    CHECK(n.s[0].eng.stats.segs_resent == 0);
    CHECK(n.s[0].got_count == 0);
    CHECK(n.s[0].eng.sends == NULL);
    /* first ACK opens the window, then one per 64 segments, one at the end */
    CHECK(n.s[1].eng.stats.acks_sent == (segs == 1 ? 1 : 1 + (segs - 1) / 64 + ((segs - 1) % 64 != 0)));
    net_fini(&n);
  }
}

static void test_loss_and_duplicates(void) {
  static net n;
  fault_fn faults[] = {lossy, dupy, lossy_dupy};
  for (int f = 0; f < 3; f++)
    for (uint64_t seed = 1; seed <= 40; seed++) {
      transfer(&n, 150 * 200 + 17, 20, faults[f], seed * 7919);
      CHECK(n.s[1].got_count == 1);
      CHECK(n.s[0].eng.stats.sends_done == 1);
      if (faults[f] == dupy) CHECK(n.s[1].eng.stats.dups_dropped > 0);
      if (faults[f] == lossy) CHECK(n.s[0].eng.stats.segs_resent > 0);
      net_fini(&n);
    }
}

/* Forges one ACK from the receiver for segment 50 while the window is 1..65. */
static int forged;
static enum Fault forge_ack(net *n, int from, const uint8_t *mad) {
  if (from == 1 && mad[kOffRmppType] == kRmppTypeAck && !forged) {
    forged = 1;
    struct {
      struct ib_user_mad umad;
      uint8_t mad[kMadSize];
    } f;
    memset(&f, 0, sizeof(f));
    memcpy(f.mad, mad, kMadSize);
    rmpp_put_be32(f.mad + kOffRmppSegNum, 100);
    rmpp_put_be32(f.mad + kOffRmppPaylen, 120);
    f.umad.addr.lid = htons(1);
    push(n, 0, &f.umad, kMadSize, 1);
    return kDrop;
  }
  return kDeliver;
}

static void test_ack_out_of_window(void) {
  static net n;
  forged = 0;
  transfer(&n, 150 * 200, 3, forge_ack, 5);
  CHECK(n.s[0].eng.stats.sends_aborted == 1);
  CHECK(n.s[0].eng.stats.aborts_sent == 1); /* ABORT S2B to the receiver */
  CHECK(n.s[1].eng.stats.aborts_received == 1);
  CHECK(n.s[1].got_count == 0);
  CHECK(n.s[1].eng.recvs == NULL); /* the sender's ABORT ends the reassembly */
  CHECK(n.s[0].got_count == 0);    /* an aborted send is not reported */
  net_fini(&n);
}

/* The receiver answers its second DATA segment with ABORT (or STOP). */
static uint8_t reject_type, reject_status;
static enum Fault reject(net *n, int from, const uint8_t *mad) {
  if (from == 0 && mad[kOffRmppType] == kRmppTypeData && rmpp_seg_num(mad) == 2) {
    struct {
      struct ib_user_mad umad;
      uint8_t mad[kMadSize];
    } f;
    memset(&f, 0, sizeof(f));
    memcpy(f.mad, mad, 56);
    f.mad[kOffMethod] ^= kMethodResp;
    f.mad[kOffRmppType] = reject_type;
    f.mad[kOffRmppStatus] = reject_status;
    rmpp_put_be32(f.mad + kOffRmppSegNum, 0);
    rmpp_put_be32(f.mad + kOffRmppPaylen, 0);
    f.umad.addr.lid = htons(1);
    push(n, 0, &f.umad, kMadSize, 1);
  }
  return kDeliver;
}

static void test_abort_and_stop(void) {
  static net n;
  reject_type = kRmppTypeAbort;
  reject_status = kRmppStatusT2L;
  transfer(&n, 150 * 200, 3, reject, 9);
  CHECK(n.s[0].eng.stats.sends_aborted == 1);
  CHECK(n.s[0].eng.stats.aborts_received >= 1); /* and the receiver's T2L 40 s later */
  CHECK(n.s[0].eng.stats.aborts_sent == 0);
  CHECK(n.s[0].got_count == 0);
  CHECK(n.s[1].got_count == 0);
  net_fini(&n);

  reject_type = kRmppTypeStop;
  reject_status = kRmppStatusResx;
  transfer(&n, 150 * 200, 3, reject, 10);
  CHECK(n.s[0].eng.stats.sends_aborted == 1);
  CHECK(n.s[0].eng.stats.stops_received == 1);
  CHECK(n.s[0].eng.stats.aborts_sent == 0);
  net_fini(&n);

  /* A STOP with another status is itself answered with ABORT BadStatus. */
  reject_status = 7;
  transfer(&n, 150 * 200, 3, reject, 11);
  CHECK(n.s[0].eng.stats.sends_aborted == 1);
  CHECK(n.s[0].eng.stats.aborts_sent == 1);
  net_fini(&n);
}

/* After 10 segments the receiver goes silent. */
static enum Fault die_after_10(net *n, int from, const uint8_t *mad) {
  if (from == 0 && mad[kOffRmppType] == kRmppTypeData && rmpp_seg_num(mad) == 10) n->dead = 1;
  return kDeliver;
}

static void test_receiver_stops(void) {
  static net n;
  transfer(&n, 150 * 200, 3, die_after_10, 12);
  CHECK(n.s[0].eng.stats.sends_timed_out == 1);
  CHECK(n.s[0].eng.stats.segs_resent == 3 * 64); /* 3 retries of the window after the last ACK (2..65) */
  CHECK(n.s[0].got_count == 1);
  if (n.s[0].got_count == 1) {
    CHECK(rmpp_msg_umad(n.s[0].got[0])->status == ETIMEDOUT);
    CHECK(n.s[0].got[0]->mad_len == kMadHdrLen);
  }
  CHECK(n.s[1].got_count == 0);
  CHECK(n.s[1].eng.recvs == NULL); /* the receiver gave up after its 40 s */
  CHECK(n.s[1].eng.stats.aborts_sent == 1);
  CHECK(n.now_ms >= 40000);
  net_fini(&n);
}

static void test_pass_through(void) {
  static net n;
  g_seed = 0;
  net_init(&n, 3, fast_cfg());
  size_t mad_len;
  struct ib_user_mad *u = make_resp(1000, 0x92, 0, &mad_len);
  rmpp_engine_set_agent(&n.s[0].eng, 0, 0); /* user RMPP: the engine keeps out */
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, 0) == 1);
  rmpp_engine_set_agent(&n.s[0].eng, 0, 1);
  u->data[kOffRmppFlags] = 0; /* not Active */
  CHECK(rmpp_engine_send(&n.s[0].eng, u, 256, 0) == 1);
  u->data[kOffRmppFlags] = kRmppFlagActive;
  u->data[kOffRmppType] = kRmppTypeAck; /* an agent's own ACK */
  CHECK(rmpp_engine_send(&n.s[0].eng, u, 256, 0) == 1);
  u->data[kOffMgmtClass] = 0x04; /* PerfMgt has no RMPP */
  u->data[kOffRmppType] = kRmppTypeData;
  CHECK(rmpp_engine_send(&n.s[0].eng, u, 256, 0) == 1);

  /* Received: an Active DATA for an agent without RMPP reaches it as is. */
  rmpp_engine_set_agent(&n.s[1].eng, 0, 0);
  CHECK(ask(&n, 1, u) == 1); /* no RMPP: no bookkeeping either */
  u->data[kOffMgmtClass] = 0x03;
  push(&n, 1, u, 256, 0);
  net_run(&n, 1000);
  CHECK(n.s[1].got_count == 1);
  CHECK(n.s[1].eng.stats.acks_sent == 0);
  CHECK(n.s[1].eng.stats.msgs_passed == 1);

  /* Active with type 0, as OpenSM hands its answers to the kernel: received
   * as is (the bare shim's first MAD), sent segmented as DATA. */
  rmpp_engine_set_agent(&n.s[1].eng, 0, 1);
  u->data[kOffRmppType] = 0;
  CHECK(ask(&n, 1, u) == 1);
  push(&n, 1, u, 256, 0);
  net_run(&n, 1000);
  CHECK(n.s[1].got_count == 2);
  CHECK(n.s[1].eng.stats.aborts_sent == 0);
  CHECK(ask(&n, 1, u) == 1);
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, n.now_ms) == 0);
  net_run(&n, 100000);
  CHECK(n.s[0].eng.stats.sends_done == 1);
  CHECK(n.s[1].got_count == 3);
  if (n.s[1].got_count == 3) CHECK(n.s[1].got[2]->mad_len == mad_len);
  free(u);
  net_fini(&n);
}

/* A multi-MAD request (method without the response bit), whose TID the wire
 * rewrites: ACKs still match, and come back as responses. */
static void test_request_direction(void) {
  static net n;
  g_seed = 4;
  net_init(&n, 4, fast_cfg());
  size_t mad_len;
  struct ib_user_mad *u = make_resp(5000, 0x14 /* GetMulti */, 2, &mad_len);
  u->data[kOffTid + 2] = 0x12; /* rewritten on the wire */
  u->data[kOffTid + 3] = 0x13;
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, 0) == 0);
  net_run(&n, 100000);
  CHECK(n.s[0].eng.stats.sends_done == 1);
  CHECK(n.s[1].got_count == 1);
  free(u);
  net_fini(&n);
}

/* A multi-MAD request with a timeout (osmtest's GetMulti): once its last
 * segment is acknowledged its response is awaited for that timeout, then it
 * is reported ETIMEDOUT with its header, as the kernel does; an answer in
 * time is delivered and nothing is reported. */
static void test_request_transferred_then_unanswered(void) {
  static net n;
  g_seed = 8;
  net_init(&n, 8, fast_cfg());
  size_t mad_len;
  struct ib_user_mad *u = make_resp(600, 0x14 /* GetMulti */, 2, &mad_len);
  u->timeout_ms = 500;
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, 0) == 0);
  net_run(&n, 499); /* the transfer takes no virtual time: the wait is on */
  CHECK(n.s[0].eng.stats.sends_done == 1);
  CHECK(n.s[1].got_count == 1);
  CHECK(n.s[0].eng.stats.requests_timed_out == 0);
  net_run(&n, 100000);
  CHECK(n.s[0].eng.stats.requests_timed_out == 1);
  CHECK(n.s[0].got_count == 1);
  if (n.s[0].got_count == 1) {
    CHECK(rmpp_msg_umad(n.s[0].got[0])->status == ETIMEDOUT);
    CHECK(memcmp(rmpp_msg_mad(n.s[0].got[0]), u->data, kMadHdrLen) == 0);
  }

  /* Answered within its timeout: the answer only. */
  u->data[kOffTid + 7] ^= 1;
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, n.now_ms) == 0);
  size_t resp_len;
  struct ib_user_mad *resp = make_resp(1000, 0x94 /* GetMultiResp */, 0, &resp_len);
  resp->data[kOffTid + 7] ^= 1;
  resp->addr.lid = htons(1);
  CHECK(rmpp_engine_send(&n.s[1].eng, resp, resp_len, n.now_ms) == 0);
  net_run(&n, 200000);
  CHECK(n.s[0].got_count == 2);
  if (n.s[0].got_count == 2) CHECK(rmpp_msg_umad(n.s[0].got[1])->status == 0 && n.s[0].got[1]->mad_len == resp_len);
  CHECK(n.s[0].eng.stats.requests_timed_out == 1);
  free(resp);
  free(u);
  net_fini(&n);
}

/* A response to no request of the receiver (a late retransmission to an
 * earlier process under ibsim): ACKed, so its sender stops, but not handed up;
 * a second copy of an answered response is dropped too. */
static void test_unsolicited(void) {
  static net n;
  g_seed = 6;
  net_init(&n, 6, fast_cfg());
  size_t mad_len;
  struct ib_user_mad *u = make_resp(3000, 0x92, 1, &mad_len);
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, 0) == 0);
  net_run(&n, 100000);
  CHECK(n.s[0].eng.stats.sends_done == 1);
  CHECK(n.s[1].got_count == 0);
  CHECK(n.s[1].eng.stats.unsolicited_dropped == 1);

  u->data[kOffTid + 7] ^= 1; /* a new transaction, asked for */
  CHECK(ask(&n, 1, u) == 1);
  CHECK(rmpp_engine_send(&n.s[0].eng, u, mad_len, n.now_ms) == 0);
  net_run(&n, 200000);
  CHECK(n.s[1].got_count == 1);
  u->data[kOffRmppFlags] = 0; /* the same answer again, single MAD */
  push(&n, 1, u, 256, 0);
  net_run(&n, 300000);
  CHECK(n.s[1].got_count == 1);
  CHECK(n.s[1].eng.stats.unsolicited_dropped == 2);
  free(u);
  net_fini(&n);
}

/* A single-MAD request with a timeout is resent, then reported ETIMEDOUT
 * with its header; its answer after that is dropped. An answered one is not. */
static int requests_seen;
static enum Fault count_requests(net *n, int from, const uint8_t *mad) {
  (void)n;
  if (from == 0 && !mad_is_response(mad) && !rmpp_active(mad)) requests_seen++; /* not ACKs */
  return kDeliver;
}

static void test_request_timeout(void) {
  static net n;
  g_seed = 7;
  net_init(&n, 7, fast_cfg());
  n.fault = count_requests;
  requests_seen = 0;
  size_t mad_len;
  struct ib_user_mad *resp = make_resp(1000, 0x92, 0, &mad_len);
  struct {
    struct ib_user_mad umad;
    uint8_t mad[kMadSize];
  } q;
  memset(&q, 0, sizeof(q));
  memcpy(q.mad, resp->data, kRmppHdrLen);
  q.mad[kOffMethod] = 0x12;
  q.mad[kOffRmppFlags] = 0;
  q.umad.timeout_ms = 100;
  q.umad.retries = 2;
  q.umad.addr.lid = htons(2);
  CHECK(rmpp_engine_send(&n.s[0].eng, &q.umad, kMadSize, 0) == 1); /* the caller sends the first copy */
  net_run(&n, 10000);
  CHECK(requests_seen == 2); /* the two resends */
  CHECK(n.s[0].eng.stats.requests_timed_out == 1);
  CHECK(n.s[0].got_count == 1);
  if (n.s[0].got_count == 1) {
    CHECK(rmpp_msg_umad(n.s[0].got[0])->status == ETIMEDOUT);
    CHECK(n.s[0].got[0]->mad_len == kMadHdrLen);
    CHECK(memcmp(rmpp_msg_mad(n.s[0].got[0]), q.mad, kMadHdrLen) == 0);
  }
  CHECK(n.now_ms == 300);
  resp->addr.lid = htons(1);
  CHECK(rmpp_engine_send(&n.s[1].eng, resp, mad_len, n.now_ms) == 0); /* too late */
  net_run(&n, 20000);
  CHECK(n.s[0].got_count == 1);
  CHECK(n.s[0].eng.stats.unsolicited_dropped == 1);

  /* Answered within its timeout: delivered once, never resent. */
  requests_seen = 0;
  q.mad[kOffTid + 7] ^= 1;
  resp->data[kOffTid + 7] ^= 1;
  CHECK(rmpp_engine_send(&n.s[0].eng, &q.umad, kMadSize, n.now_ms) == 1);
  CHECK(rmpp_engine_send(&n.s[1].eng, resp, mad_len, n.now_ms) == 0);
  net_run(&n, 40000);
  CHECK(requests_seen == 0);
  CHECK(n.s[0].got_count == 2);
  CHECK(n.s[0].eng.stats.requests_timed_out == 1);
  free(resp);
  net_fini(&n);
}

int main(void) {
  test_request_timeout();
  test_unsolicited();
  test_clean();
  test_loss_and_duplicates();
  test_ack_out_of_window();
  test_abort_and_stop();
  test_receiver_stops();
  test_pass_through();
  test_request_direction();
  test_request_transferred_then_unanswered();
  if (failures) {
    fprintf(stderr, "rmpp_engine_test: %d failure(s)\n", failures);
    return 1;
  }
  printf("rmpp_engine_test: all passed\n");
  return 0;
}
