/* user_rmpp_probe: an SA client asks GetTable(NodeRecord) two ways.
 * Default: it does RMPP itself (an agent registered with no RMPP version, as
 * madengine's are) and ACKs each segment; under the layer its agent must see
 * the raw DATA segments, and a layered OpenSM must finish its send on these
 * ACKs. Prints: segments S records R payload_bytes B.
 * --kernel-rmpp: an agent with RMPP version 1 that waits in poll() and reads
 * with timeout 0 from a 256-byte buffer first: the layer must wake poll()
 * only for the whole message and answer the short read with ENOSPC and the
 * length. Prints: enospc E length L records R.
 *   LD_PRELOAD="librmpp_layer.so libumad2sim.so" user_rmpp_probe [--kernel-rmpp] */
#include "rmpp_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kSaClass = 0x03, kSaVersion = 2, kGetTable = 0x12, kNodeRecord = 0x11, kSaHdr = 56 };

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

/* Waits in poll() for the whole answer, then reads it, short buffer first. */
static int kernel_rmpp_answer(int fd) {
  int enospc = 0, len = kMadSize;
  uint8_t *buf = calloc(1, sizeof(struct ib_user_mad) + kMadSize);
  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, 3000) != 1) {
      fprintf(stderr, "poll timed out\n");
      return 2;
    }
    const int rc = umad_recv(fd, buf, &len, 0);
    if (rc == -ENOSPC && errno == ENOSPC) {
      enospc++;
      buf = realloc(buf, sizeof(struct ib_user_mad) + (size_t)len);
      if (umad_recv(fd, buf, &len, 0) < 0) return 3;
    } else if (rc < 0) {
      continue;
    }
    const uint8_t *m = buf + sizeof(struct ib_user_mad);
    if (m[kOffMgmtClass] != kSaClass || m[kOffMethod] != (kGetTable | kMethodResp)) continue;
    const int attr_offset = (m[44] << 8 | m[45]) * 8;
    printf("enospc %d length %d records %d\n", enospc, len, attr_offset ? (len - kSaHdr) / attr_offset : 0);
    free(buf);
    return 0;
  }
}

int main(int argc, char **argv) {
  const int kernel_rmpp = argc > 1 && strcmp(argv[1], "--kernel-rmpp") == 0;
  if (umad_init() < 0) return 1;
  const int fd = umad_open_port(NULL, 0);
  umad_port_t port;
  if (fd < 0 || umad_get_port(NULL, 0, &port) < 0) {
    fprintf(stderr, "no port\n");
    return 1;
  }
  const int agent = umad_register(fd, kSaClass, kSaVersion, kernel_rmpp ? 1 : 0, NULL);
  if (agent < 0) return 1;

  struct {
    struct ib_user_mad umad;
    uint8_t mad[kMadSize];
  } q, a;
  memset(&q, 0, sizeof(q));
  q.mad[0] = 1;
  q.mad[kOffMgmtClass] = kSaClass;
  q.mad[kOffClassVersion] = kSaVersion;
  q.mad[kOffMethod] = kGetTable;
  /* A new TID each run: an SA takes a repeated one for a retransmission. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  rmpp_put_be32(q.mad + kOffTid + 4, (uint32_t)now.tv_nsec ^ (uint32_t)now.tv_sec ^ (uint32_t)getpid() << 16);
  put16(q.mad + 16, kNodeRecord);
  umad_set_addr(&q.umad, port.sm_lid, 1, 0, 0x80010000);
  if (umad_send(fd, agent, &q.umad, kMadSize, 1000, 0) < 0) return 1;
  if (kernel_rmpp) return kernel_rmpp_answer(fd);

  uint32_t segments = 0, expect = 1, paylen_total = 0, attr_offset = 0;
  for (;;) {
    int len = kMadSize;
    if (umad_recv(fd, &a.umad, &len, 3000) < 0) {
      fprintf(stderr, "no segment %u\n", expect);
      return 2;
    }
    const uint8_t *m = a.mad;
    if (m[kOffMgmtClass] != kSaClass || !rmpp_active(m) || m[kOffRmppType] != kRmppTypeData) continue;
    const uint32_t seg = rmpp_seg_num(m);
    if (seg == 1) {
      paylen_total = rmpp_paylen(m);
      attr_offset = (uint32_t)(m[44] << 8 | m[45]) * 8;
    }
    if (seg == expect) {
      segments++;
      expect++;
    }
    /* ACK what we hold in order, grant four more (the response bit cleared). */
    struct {
      struct ib_user_mad umad;
      uint8_t mad[kMadSize];
    } ack;
    memset(&ack, 0, sizeof(ack));
    memcpy(ack.mad, m, kSaHdr);
    ack.mad[kOffMethod] ^= kMethodResp;
    ack.mad[kOffRmppType] = kRmppTypeAck;
    rmpp_set_flags(ack.mad, kRmppFlagActive);
    rmpp_put_be32(ack.mad + kOffRmppSegNum, expect - 1);
    rmpp_put_be32(ack.mad + kOffRmppPaylen, expect - 1 + 4);
    ack.umad.addr = a.umad.addr;
    ack.umad.addr.qkey = htonl(0x80010000);
    umad_send(fd, agent, &ack.umad, kMadSize, 0, 0);
    if (seg == expect - 1 && (rmpp_flags(m) & kRmppFlagLast)) break;
  }
  /* PayloadLength counts each segment's 20 bytes of SA header too. */
  const uint32_t data = paylen_total - segments * (kSaHdr - kRmppHdrLen);
  printf("segments %u records %u payload_bytes %u\n", segments, attr_offset ? data / attr_offset : 0, data);
  umad_unregister(fd, agent);
  umad_close_port(fd);
  return 0;
}
