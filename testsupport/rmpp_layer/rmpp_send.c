/* Sender side of RMPP (IBA 13.6.5.1, the kernel's send path): cut a message
 * into segments carrying the class header, send one window at a time, move
 * on with each ACK, resend from the last ACK on a time-out, give up after the
 * send's retries. */
#include "rmpp_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void send_seg(rmpp_engine *e, rmpp_send *s, uint32_t n) {
  struct {
    struct ib_user_mad umad;
    uint8_t mad[kMadSize];
  } out;
  out.umad = s->umad;
  out.umad.length = (uint32_t)(sizeof(out.umad) + kMadSize);
  memcpy(out.mad, s->hdr, s->hdr_len);
  memcpy(out.mad + s->hdr_len, s->data + (size_t)(n - 1) * s->seg_size, s->seg_size);
  uint8_t flags = kRmppFlagActive;
  uint32_t paylen = 0;
  /* PayloadLength counts every byte after the RMPP header, class header
   * included, less the last segment's padding (the kernel's send_next_seg). */
  if (n == 1) {
    flags |= kRmppFlagFirst;
    paylen = s->seg_count * kRmppData - s->pad;
  }
  if (n == s->seg_count) {
    flags |= kRmppFlagLast;
    paylen = kRmppData - s->pad;
  }
  rmpp_set_flags(out.mad, flags);
  out.mad[kOffRmppStatus] = 0;
  rmpp_put_be32(out.mad + kOffRmppSegNum, n);
  rmpp_put_be32(out.mad + kOffRmppPaylen, paylen);
  e->io.send(e->io.ctx, &out.umad, kMadSize);
}

/* Sends what the window allows and restarts the ACK timer. */
static void pump(rmpp_engine *e, rmpp_send *s, uint64_t now_ms) {
  while (s->sent < s->newwin && s->sent < s->seg_count) {
    s->sent++;
    if (s->sent <= s->high_sent)
      e->stats.segs_resent++;
    else
      e->stats.segs_sent++;
    send_seg(e, s, s->sent);
  }
  if (s->sent > s->high_sent) s->high_sent = s->sent;
  s->deadline_ms = now_ms + s->ack_timeout_ms;
}

static void unlink_send(rmpp_engine *e, rmpp_send *s) {
  for (rmpp_send **p = &e->sends; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  free(s->data);
  free(s);
}

int rmpp_send_start(rmpp_engine *e, const struct ib_user_mad *umad, size_t mad_len, uint64_t now_ms) {
  const uint8_t *mad = umad->data;
  const size_t hdr_len = rmpp_class_hdr_len(mad_class(mad));
  if (mad_len < hdr_len) return -EINVAL;
  const size_t data_len = mad_len - hdr_len;
  const size_t seg_size = kMadSize - hdr_len;
  size_t pad = data_len ? seg_size - data_len % seg_size : seg_size;
  if (data_len && pad == seg_size) pad = 0;

  rmpp_send *s = calloc(1, sizeof(*s));
  if (!s) return -ENOMEM;
  s->seg_count = (uint32_t)((data_len + pad) / seg_size);
  s->data = calloc(s->seg_count, seg_size);
  if (!s->data) {
    free(s);
    return -ENOMEM;
  }
  memcpy(s->data, mad + hdr_len, data_len);
  s->umad = *umad;
  s->hdr_len = hdr_len;
  s->seg_size = seg_size;
  s->pad = (uint32_t)pad;
  memcpy(s->hdr, mad, hdr_len);
  s->hdr[kOffRmppVersion] = e->agent_rmpp[umad->agent_id];
  s->hdr[kOffRmppType] = kRmppTypeData;
  s->mgmt_class = mad_class(mad);
  s->tid = mad_tid(mad);
  /* A request's TID gets the agent in its upper half on the way out (the
   * kernel and umad2sim both rewrite it): match ACKs on the lower half. */
  s->tid_mask = mad_is_response(mad) ? ~(uint64_t)0 : 0xffffffffu;
  s->newwin = 1; /* the receiver grants more with its first ACK */
  s->retries_left = s->max_retries = umad->retries;
  s->ack_timeout_ms = umad->timeout_ms && umad->timeout_ms < e->cfg.ack_timeout_ms ? umad->timeout_ms
                                                                                   : e->cfg.ack_timeout_ms;
  s->next = e->sends;
  e->sends = s;
  pump(e, s, now_ms);
  return 0;
}

static rmpp_send *find_send(rmpp_engine *e, rmpp_msg *msg) {
  const uint8_t *mad = rmpp_msg_mad(msg);
  const uint64_t tid = mad_tid(mad);
  for (rmpp_send *s = e->sends; s; s = s->next)
    if (s->mgmt_class == mad_class(mad) && (s->tid & s->tid_mask) == (tid & s->tid_mask) &&
        s->umad.addr.lid == rmpp_msg_umad(msg)->addr.lid)
      return s;
  return NULL;
}

void rmpp_send_abort(rmpp_engine *e, rmpp_msg *msg) {
  rmpp_send *s = find_send(e, msg);
  if (!s) return;
  e->stats.sends_aborted++;
  unlink_send(e, s);
}

/* The kernel's process_rmpp_ack, less dual-sided RMPP. */
void rmpp_send_on_ack(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms) {
  const uint8_t *mad = rmpp_msg_mad(msg);
  if (mad[kOffRmppStatus]) {
    rmpp_send_abort(e, msg);
    rmpp_nack(e, msg, kRmppStatusBadStatus);
    return;
  }
  const uint32_t seg = rmpp_seg_num(mad);
  const uint32_t newwin = rmpp_paylen(mad);
  if (newwin < seg) {
    rmpp_send_abort(e, msg);
    rmpp_nack(e, msg, kRmppStatusW2S);
    return;
  }
  rmpp_send *s = find_send(e, msg);
  if (!s) return; /* unmatched, or the transfer is over */
  if (seg > s->seg_count || seg > s->newwin) {
    /* An ACK beyond what this sender allowed: the peer is confused. */
    rmpp_send_abort(e, msg);
    rmpp_nack(e, msg, kRmppStatusS2B);
    return;
  }
  if (newwin < s->newwin || seg < s->last_ack) return; /* stale ACK */
  if (seg > s->last_ack) {
    s->last_ack = seg;
    s->retries_left = s->max_retries;
    s->deadline_ms = now_ms + s->ack_timeout_ms;
  }
  s->newwin = newwin;
  if (s->last_ack == s->seg_count) {
    e->stats.sends_done++;
    if (!mad_is_response(s->hdr)) rmpp_request_transferred(e, &s->umad, s->hdr, now_ms);
    unlink_send(e, s);
    return;
  }
  if (s->sent < s->newwin && s->sent < s->seg_count) pump(e, s, now_ms);
}

/* The kernel reports a send that ran out of retries to the agent as the MAD
 * header with status ETIMEDOUT; an aborted one silently. */
static void report_timeout(rmpp_engine *e, rmpp_send *s) {
  rmpp_msg *m = rmpp_msg_alloc(kMadHdrLen);
  if (!m) return;
  struct ib_user_mad *u = rmpp_msg_umad(m);
  *u = s->umad;
  u->status = ETIMEDOUT;
  u->length = (uint32_t)(sizeof(*u) + kMadHdrLen);
  memcpy(rmpp_msg_mad(m), s->hdr, kMadHdrLen);
  e->io.deliver(e->io.ctx, m);
}

uint64_t rmpp_send_tick(rmpp_engine *e, uint64_t now_ms) {
  uint64_t next = UINT64_MAX;
  for (rmpp_send *s = e->sends, *n; s; s = n) {
    n = s->next;
    if (now_ms >= s->deadline_ms) {
      if (s->retries_left == 0) {
        e->stats.sends_timed_out++;
        report_timeout(e, s);
        unlink_send(e, s);
        continue;
      }
      s->retries_left--;
      s->sent = s->last_ack; /* resend the whole unacknowledged window */
      pump(e, s, now_ms);
    }
    if (s->deadline_ms < next) next = s->deadline_ms;
  }
  return next;
}

void rmpp_send_cancel(rmpp_engine *e, int agent_id) {
  for (rmpp_send *s = e->sends, *n; s; s = n) {
    n = s->next;
    if (agent_id < 0 || s->umad.agent_id == (uint32_t)agent_id) unlink_send(e, s);
  }
}
