/* The engine's entry points: which MADs are RMPP traffic of an RMPP agent
 * (the rest passes through untouched), dispatch by RMPP type as the kernel's
 * ib_process_rmpp_recv_wc does, timers, and replies to a peer. */
#include "rmpp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

rmpp_msg *rmpp_msg_alloc(size_t mad_len) {
  rmpp_msg *m = calloc(1, sizeof(*m) + sizeof(struct ib_user_mad) + mad_len);
  if (m) m->mad_len = mad_len;
  return m;
}

rmpp_config rmpp_config_default(void) {
  rmpp_config c = {.ack_timeout_ms = 2000, .recv_timeout_ms = 40000, .linger_ms = 10000, .window_segs = 64};
  return c;
}

void rmpp_engine_init(rmpp_engine *e, rmpp_io io, rmpp_config cfg) {
  memset(e, 0, sizeof(*e));
  e->io = io;
  e->cfg = cfg;
  if (e->cfg.window_segs == 0) e->cfg.window_segs = 1;
}

void rmpp_engine_fini(rmpp_engine *e) {
  rmpp_send_cancel(e, -1);
  rmpp_recv_cancel(e, -1);
}

void rmpp_engine_set_agent(rmpp_engine *e, int agent_id, uint8_t rmpp_version) {
  if (agent_id < 0 || agent_id >= kRmppAgentsMax) return;
  if (!rmpp_version) {
    rmpp_send_cancel(e, agent_id);
    rmpp_recv_cancel(e, agent_id);
  }
  e->agent_rmpp[agent_id] = rmpp_version;
}

static int agent_does_rmpp(const rmpp_engine *e, uint32_t agent_id) {
  return agent_id < kRmppAgentsMax && e->agent_rmpp[agent_id] != 0;
}

int rmpp_engine_agent_does_rmpp(const rmpp_engine *e, uint32_t agent_id) { return agent_does_rmpp(e, agent_id); }

/* Remembers a request; a full table forgets the untimed one closest to
 * expiry, or else the timed one closest to its deadline. */
static void note_request(rmpp_engine *e, const struct ib_user_mad *umad, size_t mad_len, int timed, uint64_t now_ms) {
  const uint8_t *mad = umad->data;
  rmpp_request *slot = NULL;
  for (int i = 0; i < kRmppRequestsMax && !slot; i++) {
    rmpp_request *r = &e->requests[i];
    if (!r->used || (!r->timed && r->expires_ms <= now_ms)) slot = r;
  }
  for (int i = 0; i < kRmppRequestsMax && !slot; i++)
    if (!e->requests[i].timed) slot = &e->requests[i];
  for (int i = 0; i < kRmppRequestsMax && !slot; i++)
    if (!slot || e->requests[i].deadline_ms < slot->deadline_ms) slot = &e->requests[i];
  slot->used = 1;
  slot->tid_lo = (uint32_t)mad_tid(mad);
  slot->mgmt_class = mad_class(mad);
  slot->agent_id = (uint8_t)umad->agent_id;
  slot->timed = timed && umad->timeout_ms && mad_len <= sizeof(slot->mad);
  slot->expires_ms = now_ms + (uint64_t)umad->timeout_ms * (umad->retries + 1) + e->cfg.recv_timeout_ms;
  if (slot->timed) {
    slot->umad = *umad;
    memset(slot->mad, 0, sizeof(slot->mad));
    memcpy(slot->mad, mad, mad_len);
    slot->mad_len = mad_len;
    slot->timeout_ms = umad->timeout_ms;
    slot->retries_left = umad->retries;
    slot->deadline_ms = now_ms + umad->timeout_ms;
  }
}

/* The last segment of a segmented request was acknowledged: its response
 * is now awaited for the send's timeout, without resends (the kernel resets
 * the send's timer to timeout_ms when the transfer ends). */
void rmpp_request_transferred(rmpp_engine *e, const struct ib_user_mad *umad, const uint8_t *hdr, uint64_t now_ms) {
  if (!umad->timeout_ms) return;
  for (int i = 0; i < kRmppRequestsMax; i++) {
    rmpp_request *r = &e->requests[i];
    if (!r->used || r->timed || r->tid_lo != (uint32_t)mad_tid(hdr) ||
        r->mgmt_class != mad_class(hdr) || r->agent_id != (uint8_t)umad->agent_id)
      continue;
    r->timed = 1;
    r->umad = *umad;
    memset(r->mad, 0, sizeof(r->mad));
    memcpy(r->mad, hdr, kMadHdrLen);
    r->mad_len = kMadHdrLen;
    r->timeout_ms = umad->timeout_ms;
    r->retries_left = 0;
    r->deadline_ms = now_ms + umad->timeout_ms;
    return;
  }
}

/* Resends timed requests whose answer is late, reports those out of
 * retries: the MAD header with status ETIMEDOUT (the kernel's send_handler). */
static uint64_t tick_requests(rmpp_engine *e, uint64_t now_ms) {
  uint64_t next = UINT64_MAX;
  for (int i = 0; i < kRmppRequestsMax; i++) {
    rmpp_request *r = &e->requests[i];
    if (!r->used || !r->timed) continue;
    if (now_ms >= r->deadline_ms) {
      if (r->retries_left == 0) {
        r->used = 0;
        e->stats.requests_timed_out++;
        rmpp_msg *m = rmpp_msg_alloc(kMadHdrLen);
        if (!m) continue;
        struct ib_user_mad *u = rmpp_msg_umad(m);
        *u = r->umad;
        u->status = ETIMEDOUT;
        u->length = (uint32_t)(sizeof(*u) + kMadHdrLen);
        memcpy(rmpp_msg_mad(m), r->mad, kMadHdrLen);
        e->io.deliver(e->io.ctx, m);
        continue;
      }
      r->retries_left--;
      r->deadline_ms = now_ms + r->timeout_ms;
      e->stats.requests_resent++;
      e->io.send(e->io.ctx, &r->umad, r->mad_len);
    }
    if (r->deadline_ms < next) next = r->deadline_ms;
  }
  return next;
}

void rmpp_deliver(rmpp_engine *e, rmpp_msg *msg) {
  const struct ib_user_mad *umad = rmpp_msg_umad(msg);
  const uint8_t *mad = rmpp_msg_mad(msg);
  if (umad->status == 0 && msg->mad_len >= kMadHdrLen && mad_is_response(mad) && agent_does_rmpp(e, umad->agent_id)) {
    rmpp_request *match = NULL;
    for (int i = 0; i < kRmppRequestsMax && !match; i++) {
      rmpp_request *r = &e->requests[i];
      if (r->used && r->tid_lo == (uint32_t)mad_tid(mad) && r->mgmt_class == mad_class(mad) &&
          r->agent_id == umad->agent_id)
        match = r;
    }
    /* A response nobody here asked for: under ibsim, typically a late
     * retransmission to an earlier process on the same node. */
    if (!match) {
      e->stats.unsolicited_dropped++;
      free(msg);
      return;
    }
    match->used = 0;
  }
  e->io.deliver(e->io.ctx, msg);
}

int rmpp_engine_send(rmpp_engine *e, const struct ib_user_mad *umad, size_t mad_len, uint64_t now_ms) {
  const uint8_t *mad = umad->data;
  if (!agent_does_rmpp(e, umad->agent_id) || mad_len < kMadHdrLen) return 1;
  /* The kernel segments on the Active flag alone and writes the type itself
   * (OpenSM leaves it 0); an ACK, STOP or ABORT an agent builds goes out as
   * a single MAD. */
  const int rmpp = mad_len >= kRmppHdrLen && rmpp_class_has_rmpp(mad_class(mad)) && rmpp_active(mad);
  const int segmented = rmpp && (mad[kOffRmppType] == 0 || mad[kOffRmppType] == kRmppTypeData);
  if (!mad_is_response(mad) && (segmented || !rmpp)) note_request(e, umad, mad_len, !segmented, now_ms);
  return segmented ? rmpp_send_start(e, umad, mad_len, now_ms) : 1;
}

static void pass_up(rmpp_engine *e, rmpp_msg *msg) {
  e->stats.msgs_passed++;
  rmpp_deliver(e, msg);
}

void rmpp_engine_input(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms) {
  struct ib_user_mad *umad = rmpp_msg_umad(msg);
  uint8_t *mad = rmpp_msg_mad(msg);
  /* Type 0 with Active is no RMPP at all: what an SA that leaves RMPP to
   * its kernel puts on the wire without one (OpenSM on the bare shim). The
   * kernel would ABORT it; passing it up keeps such a peer's first MAD. */
  if (umad->status != 0 || !agent_does_rmpp(e, umad->agent_id) || msg->mad_len < kMadSize ||
      !rmpp_class_has_rmpp(mad_class(mad)) || !rmpp_active(mad) || mad[kOffRmppType] == 0) {
    pass_up(e, msg);
    return;
  }
  if (mad[kOffRmppVersion] != kRmppVersion) {
    rmpp_send_abort(e, msg);
    rmpp_nack(e, msg, kRmppStatusUnv);
    free(msg);
    return;
  }
  const uint8_t status = mad[kOffRmppStatus];
  switch (mad[kOffRmppType]) {
  case kRmppTypeData:
    rmpp_recv_data(e, msg, now_ms); /* owns msg */
    return;
  case kRmppTypeAck:
    e->stats.acks_received++;
    rmpp_send_on_ack(e, msg, now_ms);
    break;
  case kRmppTypeStop:
    /* Only "resources exhausted" is a valid STOP (IBA 13.6.3.3). */
    e->stats.stops_received++;
    rmpp_send_abort(e, msg);
    if (status != kRmppStatusResx) rmpp_nack(e, msg, kRmppStatusBadStatus);
    break;
  case kRmppTypeAbort:
    e->stats.aborts_received++;
    rmpp_send_abort(e, msg);
    rmpp_recv_abort(e, msg);
    if (status < kRmppStatusAbortMin || status > kRmppStatusAbortMax) rmpp_nack(e, msg, kRmppStatusBadStatus);
    break;
  default:
    rmpp_send_abort(e, msg);
    rmpp_nack(e, msg, kRmppStatusBadT);
    break;
  }
  free(msg);
}

uint64_t rmpp_engine_tick(rmpp_engine *e, uint64_t now_ms) {
  uint64_t next = rmpp_send_tick(e, now_ms);
  const uint64_t r = rmpp_recv_tick(e, now_ms);
  const uint64_t q = tick_requests(e, now_ms);
  if (r < next) next = r;
  return q < next ? q : next;
}

void rmpp_reply(rmpp_engine *e, rmpp_msg *msg, uint8_t type, uint8_t status, uint32_t seg_num,
                uint32_t paylen_newwin) {
  struct {
    struct ib_user_mad umad;
    uint8_t mad[kMadSize];
  } out;
  memset(&out, 0, sizeof(out));
  const struct ib_user_mad *in = rmpp_msg_umad(msg);
  const uint8_t *mad = rmpp_msg_mad(msg);
  out.umad.agent_id = in->agent_id;
  out.umad.addr = in->addr;
  /* A received address carries no Q_Key; GSI traffic uses the well-known one. */
  if (out.umad.addr.qkey == 0 && out.umad.addr.qpn == htonl(1)) out.umad.addr.qkey = htonl(0x80010000u);
  out.umad.length = (uint32_t)(sizeof(out.umad) + kMadSize);

  memcpy(out.mad, mad, rmpp_class_hdr_len(mad_class(mad)));
  out.mad[kOffMethod] ^= kMethodResp;
  out.mad[kOffRmppVersion] = kRmppVersion;
  out.mad[kOffRmppType] = type;
  rmpp_set_flags(out.mad, kRmppFlagActive);
  out.mad[kOffRmppStatus] = status;
  rmpp_put_be32(out.mad + kOffRmppSegNum, seg_num);
  rmpp_put_be32(out.mad + kOffRmppPaylen, paylen_newwin);
  if (type == kRmppTypeAck)
    e->stats.acks_sent++;
  else
    e->stats.aborts_sent++;
  e->io.send(e->io.ctx, &out.umad, kMadSize);
}
