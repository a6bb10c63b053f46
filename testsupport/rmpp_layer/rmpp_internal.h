/* Transfer state shared by the engine's files: one outgoing segmented
 * message (rmpp_send) and one incoming reassembly (rmpp_recv), and the
 * helpers both sides use to answer a peer. */
#ifndef RMPP_INTERNAL_H
#define RMPP_INTERNAL_H

#include "rmpp_engine.h"
#include "rmpp_wire.h"

enum { kClassHdrMax = 64 };

typedef struct rmpp_send {
  struct rmpp_send *next;
  struct ib_user_mad umad;     /* address and agent of every segment */
  uint8_t hdr[kClassHdrMax];   /* class header repeated in every segment */
  size_t hdr_len, seg_size;    /* seg_size = 256 - hdr_len data bytes a segment */
  uint8_t *data;               /* seg_count * seg_size bytes, zero padded */
  uint32_t seg_count, pad;
  uint64_t tid, tid_mask;      /* the mask hides TID bits the transport rewrites */
  uint8_t mgmt_class;
  uint32_t last_ack, sent, newwin;
  uint32_t high_sent;          /* tells resends from first sends */
  uint32_t retries_left, max_retries, ack_timeout_ms;
  uint64_t deadline_ms;
} rmpp_send;

typedef struct rmpp_recv {
  struct rmpp_recv *next;
  int complete;
  uint32_t agent_id;
  uint64_t tid;
  uint32_t src_qpn;
  uint16_t slid;
  uint8_t mgmt_class, class_version, method;
  rmpp_msg *first;     /* segment 1 with its umad header (freed once complete) */
  rmpp_msg **segs;     /* segs[n]: segment n (n >= 2) until the message is whole */
  uint32_t segs_cap;
  uint32_t seg_num;    /* last segment of the contiguous prefix */
  uint32_t newwin, last_ack;
  uint64_t deadline_ms;
} rmpp_recv;

/* Answers the source of msg with an RMPP MAD of the given type, built from
 * msg's class header with the method's response bit flipped (the kernel's
 * format_ack and nack_recv). */
void rmpp_reply(rmpp_engine *e, rmpp_msg *msg, uint8_t type, uint8_t status, uint32_t seg_num,
                uint32_t paylen_newwin);

static inline void rmpp_nack(rmpp_engine *e, rmpp_msg *msg, uint8_t status) {
  rmpp_reply(e, msg, kRmppTypeAbort, status, 0, 0);
}

/* Hands a whole message to the agent, unless it is a response to nothing
 * the agent asked. */
void rmpp_deliver(rmpp_engine *e, rmpp_msg *msg);

/* A segmented request's last segment was acknowledged: wait for its response. */
void rmpp_request_transferred(rmpp_engine *e, const struct ib_user_mad *umad, const uint8_t *hdr, uint64_t now_ms);

/* rmpp_send.c */
int rmpp_send_start(rmpp_engine *e, const struct ib_user_mad *umad, size_t mad_len, uint64_t now_ms);
void rmpp_send_on_ack(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms);
void rmpp_send_abort(rmpp_engine *e, rmpp_msg *msg);
uint64_t rmpp_send_tick(rmpp_engine *e, uint64_t now_ms);
void rmpp_send_cancel(rmpp_engine *e, int agent_id); /* -1: all */

/* rmpp_recv.c */
void rmpp_recv_data(rmpp_engine *e, rmpp_msg *msg, uint64_t now_ms);
void rmpp_recv_abort(rmpp_engine *e, rmpp_msg *msg);
uint64_t rmpp_recv_tick(rmpp_engine *e, uint64_t now_ms);
void rmpp_recv_cancel(rmpp_engine *e, int agent_id); /* -1: all */

#endif
