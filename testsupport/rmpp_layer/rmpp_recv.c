/* Receiver side of RMPP (IBA 13.6.5.2, the kernel's start_rmpp and
 * continue_rmpp): collect DATA segments of one transfer, ACK each window and
 * the last segment, hand the whole message up once, re-ACK duplicates for a
 * while, ABORT a transfer that takes too long. */
#include "rmpp_internal.h"

#include <stdlib.h>
#include <string.h>

static int same_transfer(const rmpp_recv *r, rmpp_msg *msg) {
  const uint8_t *mad = rmpp_msg_mad(msg);
  const struct ib_user_mad *u = rmpp_msg_umad(msg);
  return r->tid == mad_tid(mad) && r->src_qpn == u->addr.qpn && r->slid == u->addr.lid &&
         r->mgmt_class == mad_class(mad) && r->class_version == mad[kOffClassVersion] &&
         r->method == mad_method(mad);
}

static rmpp_recv *find_recv(rmpp_engine *e, rmpp_msg *msg) {
  for (rmpp_recv *r = e->recvs; r; r = r->next)
    if (same_transfer(r, msg)) return r;
  return NULL;
}

static void free_segments(rmpp_recv *r) {
  for (uint32_t i = 0; i < r->segs_cap; i++) free(r->segs[i]);
  free(r->segs);
  r->segs = NULL;
  r->segs_cap = 0;
  free(r->first);
  r->first = NULL;
}

static void unlink_recv(rmpp_engine *e, rmpp_recv *r) {
  for (rmpp_recv **p = &e->recvs; *p; p = &(*p)->next)
    if (*p == r) {
      *p = r->next;
      break;
    }
  free_segments(r);
  free(r);
}

static void ack(rmpp_engine *e, rmpp_recv *r, rmpp_msg *about) {
  r->last_ack = r->seg_num;
  rmpp_reply(e, about, kRmppTypeAck, 0, r->seg_num, r->newwin);
}

static rmpp_msg *segment(rmpp_recv *r, uint32_t n) {
  if (n == 1) return r->first;
  return n < r->segs_cap ? r->segs[n] : NULL;
}

/* The message as the kernel hands it to an agent: segment 1 whole, then
 * each later segment's data after its class header; the length drops the
 * last segment's padding (get_mad_len). */
static void complete(rmpp_engine *e, rmpp_recv *r, uint64_t now_ms) {
  r->complete = 1;
  ack(e, r, r->first);
  const uint8_t *first_mad = rmpp_msg_mad(r->first);
  const size_t hdr_len = rmpp_class_hdr_len(r->mgmt_class);
  const size_t data_size = kMadSize - hdr_len;
  const uint32_t last_paylen = rmpp_paylen(rmpp_msg_mad(segment(r, r->seg_num)));
  size_t pad = last_paylen <= kRmppData ? kRmppData - last_paylen : 0;
  if (pad > data_size) pad = 0;
  const size_t len = hdr_len + (size_t)r->seg_num * data_size - pad;

  rmpp_msg *m = rmpp_msg_alloc(len);
  if (m) {
    struct ib_user_mad *u = rmpp_msg_umad(m);
    *u = *rmpp_msg_umad(r->first);
    u->status = 0;
    u->length = (uint32_t)(sizeof(*u) + len);
    uint8_t *out = rmpp_msg_mad(m);
    size_t off = len < kMadSize ? len : kMadSize;
    memcpy(out, first_mad, off);
    for (uint32_t n = 2; n <= r->seg_num && off < len; n++) {
      const size_t chunk = len - off < data_size ? len - off : data_size;
      memcpy(out + off, rmpp_msg_mad(segment(r, n)) + hdr_len, chunk);
      off += chunk;
    }
    e->stats.msgs_reassembled++;
    rmpp_deliver(e, m);
  }
  free_segments(r);
  r->deadline_ms = now_ms + e->cfg.linger_ms;
}

static int store(rmpp_recv *r, uint32_t n, rmpp_msg *msg) {
  if (n >= r->segs_cap) {
    uint32_t cap = r->segs_cap ? r->segs_cap : 16;
    while (cap <= n) cap *= 2;
    rmpp_msg **segs = realloc(r->segs, cap * sizeof(*segs));
    if (!segs) return -1;
    memset(segs + r->segs_cap, 0, (cap - r->segs_cap) * sizeof(*segs));
    r->segs = segs;
    r->segs_cap = cap;
  }
  r->segs[n] = msg;
  return 0;
}

static void continue_transfer(rmpp_engine *e, rmpp_recv *r, rmpp_msg *msg, uint64_t now_ms) {
  const uint32_t n = rmpp_seg_num(rmpp_msg_mad(msg));
  if (!r || n > r->newwin) { /* no transfer, or beyond the window we granted */
    e->stats.dups_dropped++;
    free(msg);
    return;
  }
  if (n <= r->last_ack || r->complete) {
    /* The sender missed our ACK: say again where we are. */
    e->stats.dups_dropped++;
    ack(e, r, msg);
    free(msg);
    return;
  }
  if (n <= r->seg_num || segment(r, n) || store(r, n, msg) != 0) {
    e->stats.dups_dropped++;
    free(msg);
    return;
  }
  const uint32_t before = r->seg_num;
  while (!(rmpp_flags(rmpp_msg_mad(segment(r, r->seg_num))) & kRmppFlagLast) && segment(r, r->seg_num + 1))
    r->seg_num++;
  if (r->seg_num == before) return; /* a gap: wait, the sender's time-out fills it */
  if (rmpp_flags(rmpp_msg_mad(segment(r, r->seg_num))) & kRmppFlagLast) {
    complete(e, r, now_ms);
  } else if (r->seg_num == r->newwin) {
    r->newwin += e->cfg.window_segs;
    ack(e, r, msg);
  }
}

static void start_transfer(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms) {
  rmpp_recv *r = find_recv(e, msg);
  if (r) { /* a repeated first segment */
    continue_transfer(e, r, msg, now_ms);
    return;
  }
  r = calloc(1, sizeof(*r));
  if (!r) {
    free(msg);
    return;
  }
  const uint8_t *mad = rmpp_msg_mad(msg);
  const struct ib_user_mad *u = rmpp_msg_umad(msg);
  r->agent_id = u->agent_id;
  r->tid = mad_tid(mad);
  r->src_qpn = u->addr.qpn;
  r->slid = u->addr.lid;
  r->mgmt_class = mad_class(mad);
  r->class_version = mad[kOffClassVersion];
  r->method = mad_method(mad);
  r->first = msg;
  r->seg_num = 1;
  r->newwin = 1;
  r->next = e->recvs;
  e->recvs = r;
  if (rmpp_flags(mad) & kRmppFlagLast) {
    complete(e, r, now_ms);
    return;
  }
  /* The whole message must arrive within this, progress or not (kernel). */
  r->deadline_ms = now_ms + e->cfg.recv_timeout_ms;
  r->newwin += e->cfg.window_segs;
  ack(e, r, msg);
}

void rmpp_recv_data(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms) {
  const uint8_t *mad = rmpp_msg_mad(msg);
  uint8_t bad = 0;
  if (mad[kOffRmppStatus])
    bad = kRmppStatusBadStatus;
  else if ((rmpp_seg_num(mad) == 1) != ((rmpp_flags(mad) & kRmppFlagFirst) != 0))
    bad = kRmppStatusBadSeg; /* First flag on any segment but 1, or missing on 1 */
  if (bad) {
    rmpp_nack(e, msg, bad);
    free(msg);
    return;
  }
  if (rmpp_seg_num(mad) == 1)
    start_transfer(e, msg, now_ms);
  else
    continue_transfer(e, find_recv(e, msg), msg, now_ms);
}

void rmpp_recv_abort(rmpp_engine *e, rmpp_msg *msg) {
  /* The sender gave up (its ABORT carries its DATA's method): drop the
   * partial message now rather than at the time-out. */
  rmpp_recv *r = find_recv(e, msg);
  if (r && !r->complete) unlink_recv(e, r);
}

uint64_t rmpp_recv_tick(rmpp_engine *e, uint64_t now_ms) {
  uint64_t next = UINT64_MAX;
  for (rmpp_recv *r = e->recvs, *n; r; r = n) {
    n = r->next;
    if (now_ms >= r->deadline_ms) {
      if (!r->complete) rmpp_nack(e, r->first, kRmppStatusT2L);
      unlink_recv(e, r);
      continue;
    }
    if (r->deadline_ms < next) next = r->deadline_ms;
  }
  return next;
}

void rmpp_recv_cancel(rmpp_engine *e, int agent_id) {
  for (rmpp_recv *r = e->recvs, *n; r; r = n) {
    n = r->next;
    if (agent_id < 0 || r->agent_id == (uint32_t)agent_id) unlink_recv(e, r);
  }
}
