/* RMPP wire format (IBA 13.6.2): the common MAD header fields and the RMPP
 * header the layer reads and writes, with the per-class header lengths the
 * kernel's MAD layer uses. Big-endian accessors only; no state. */
#ifndef RMPP_WIRE_H
#define RMPP_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum {
  kMadSize = 256,
  kMadHdrLen = 24,       /* common MAD header */
  kRmppHdrLen = 36,      /* common MAD header + RMPP header */
  kRmppData = kMadSize - kRmppHdrLen, /* PayloadLength counts from here (220) */

  kOffMgmtClass = 1,
  kOffClassVersion = 2,
  kOffMethod = 3,
  kOffStatus = 4,
  kOffTid = 8,
  kOffRmppVersion = 24,
  kOffRmppType = 25,
  kOffRmppFlags = 26,   /* RRespTime (5 bits) | Flags (3 bits) */
  kOffRmppStatus = 27,
  kOffRmppSegNum = 28,
  kOffRmppPaylen = 32,  /* PayloadLength, or NewWindowLast in an ACK */

  kMethodResp = 0x80,
  kRmppVersion = 1,
};

enum RmppType { kRmppTypeData = 1, kRmppTypeAck = 2, kRmppTypeStop = 3, kRmppTypeAbort = 4 };
enum RmppFlag { kRmppFlagActive = 1, kRmppFlagFirst = 2, kRmppFlagLast = 4 };

/* RMPP status codes (IBA table 170). */
enum RmppStatus {
  kRmppStatusResx = 1,
  kRmppStatusAbortMin = 118,
  kRmppStatusT2L = 118,
  kRmppStatusBadSeg = 120,
  kRmppStatusBadT = 121,
  kRmppStatusW2S = 122,
  kRmppStatusS2B = 123,
  kRmppStatusBadStatus = 124,
  kRmppStatusUnv = 125,
  kRmppStatusAbortMax = 126,
};

static inline uint32_t rmpp_get_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void rmpp_put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline uint64_t rmpp_get_be64(const uint8_t *p) {
  return (uint64_t)rmpp_get_be32(p) << 32 | rmpp_get_be32(p + 4);
}

static inline uint8_t mad_class(const uint8_t *mad) { return mad[kOffMgmtClass]; }
static inline uint8_t mad_method(const uint8_t *mad) { return mad[kOffMethod]; }
static inline int mad_is_response(const uint8_t *mad) { return (mad[kOffMethod] & kMethodResp) != 0; }
static inline uint64_t mad_tid(const uint8_t *mad) { return rmpp_get_be64(mad + kOffTid); }
static inline uint8_t rmpp_flags(const uint8_t *mad) { return mad[kOffRmppFlags] & 0x7; }
static inline int rmpp_active(const uint8_t *mad) { return (mad[kOffRmppFlags] & kRmppFlagActive) != 0; }
static inline uint32_t rmpp_seg_num(const uint8_t *mad) { return rmpp_get_be32(mad + kOffRmppSegNum); }
static inline uint32_t rmpp_paylen(const uint8_t *mad) { return rmpp_get_be32(mad + kOffRmppPaylen); }

/* Keeps RRespTime, replaces the three flag bits. */
static inline void rmpp_set_flags(uint8_t *mad, uint8_t flags) {
  mad[kOffRmppFlags] = (uint8_t)((mad[kOffRmppFlags] & 0xF8) | (flags & 0x7));
}

/* Classes that carry an RMPP header (the kernel's ib_is_mad_class_rmpp):
 * SA, DevMgt, DevAdm, BIS and the second vendor range. */
static inline int rmpp_class_has_rmpp(uint8_t cls) {
  return cls == 0x03 || cls == 0x06 || cls == 0x10 || cls == 0x12 || (cls >= 0x30 && cls <= 0x4F);
}

/* Bytes of class header repeated in every segment (ib_get_mad_data_offset):
 * SA 56, DevMgt/DevAdm/BIS 64, vendor range 2: 40, others 24. */
static inline size_t rmpp_class_hdr_len(uint8_t cls) {
  if (cls == 0x03) return 56;
  if (cls == 0x06 || cls == 0x10 || cls == 0x12) return 64;
  if (cls >= 0x30 && cls <= 0x4F) return 40;
  return kMadHdrLen;
}

#endif
