/* libmadengine's C ABI (C99): a madengine node (SM + SA + HA on one port)
 * inside a vendor's process. Opaque handles, status codes with a message,
 * no exception ever crosses it. The C++ API is madengine/node/node.hpp;
 * docs/embedding.md shows both with the example vendor SM.
 *
 * Life cycle: me_node_create(toml) -> me_set_*_callback / me_register_* ->
 * me_node_start -> (queries) -> me_node_stop -> me_node_destroy. The TOML is
 * the daemon's format (config/madengine.toml); callbacks and handlers are set
 * before me_node_start and stay until me_node_destroy.
 *
 * Threading contract:
 *  - The node's functions may be called from any thread. Queries
 *    (me_node_get_status, me_path_query, me_node_fabric and the me_fabric_*
 *    readers) never block on the SM: they read the current epoch.
 *  - Event callbacks (subnet up, SM state, notices, port changes, port
 *    errors) run on the
 *    node's event thread, one at a time and in the order things happened,
 *    never on a MAD core. They may call any query; they must not call
 *    me_node_start, me_node_stop, me_node_destroy, me_node_wait_subnet_up or
 *    a setter (those return ME_ERR_CONTEXT there). What happened before
 *    me_node_stop is delivered before it returns. A slow callback delays
 *    the next one, never the SM or the SA; events beyond the queue are
 *    counted in me_node_get_status (events_dropped).
 *  - The routing callback runs where routing runs: on the compute pool (a
 *    thread beside the MAD cores; with transport.kind = "sim", inline on the
 *    thread that drives the simulated fabric). The SA keeps answering from
 *    the previous epoch meanwhile. It may read the fabric it is given and
 *    call me_lft_set/me_lft_get/me_lfts_error on its me_lfts, and any query;
 *    the same functions as events are refused there.
 *  - Vendor MAD handlers run on the engine core that received the request;
 *    with engine.cores > 1 several may run at once. They must return quickly
 *    (the core answers nothing else meanwhile) and call nothing of the node
 *    but queries.
 *  - No callback runs after me_node_stop returns ME_OK.
 *  - me_node_destroy may run while other threads are inside calls on the
 *    same node: it refuses new ones, ends waits, and frees the node only
 *    after the calls in flight returned. No call may start after it did.
 */
#ifndef MADENGINE_MADENGINE_H
#define MADENGINE_MADENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "madengine/export.h"
#include "madengine/version.h" /* ME_VERSION_MAJOR, _MINOR, _PATCH, ME_VERSION_STRING */

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: ME_OK, or a negative error; me_last_error() has the message. */
enum me_result {
  ME_OK = 0,
  ME_ERR_INVALID = -1,     /* a bad argument (null handle, class not vendor-specific...) */
  ME_ERR_CONFIG = -2,      /* bad TOML or value; the message names the line */
  ME_ERR_STATE = -3,       /* not in this state (a hook after start, a wait before it) */
  ME_ERR_TRANSPORT = -4,   /* the port did not open */
  ME_ERR_TIMEOUT = -5,     /* the subnet did not come up in time */
  ME_ERR_NO_SUBNET = -6,   /* no epoch published yet */
  ME_ERR_NO_PATH = -7,     /* no path between these LIDs in the current epoch */
  ME_ERR_CONTEXT = -8,     /* not allowed from a callback (threading contract above) */
  ME_ERR_NO_MEMORY = -9,
  ME_ERR_INTERNAL = -10
};

/* "MAJOR.MINOR.PATCH" of the library actually loaded (ME_VERSION_STRING is
 * the one compiled against; their MAJOR is the same, the SONAME's). */
MADENGINE_API const char *me_version(void);
/* A constant description of a status code. */
MADENGINE_API const char *me_strerror(int status);
/* The message of the last call that failed on this thread ("" if none);
 * valid until this thread's next failing call. */
MADENGINE_API const char *me_last_error(void);

typedef struct me_node me_node;      /* a node: engine, transport, SM, SA, HA, journal */
typedef struct me_fabric me_fabric;  /* a fabric as discovered and routed (an epoch, or the one being routed) */
typedef struct me_lfts me_lfts;      /* the LFTs a routing callback fills */

/* ---- the node ------------------------------------------------------------------ */

/* Parses and checks `toml` (the daemon's format; NULL or "" = every default,
 * which opens the first active InfiniBand port). On failure returns NULL and
 * writes the reason into err (errlen bytes, NUL-terminated; err may be NULL).
 * [log] level and file, when given, set the library's log. Nothing opens or
 * runs until me_node_start. */
MADENGINE_API me_node *me_node_create(const char *toml, char *err, size_t errlen);
/* Opens the transport and starts the node: the engine's cores (umad), or a
 * thread driving the simulated fabric at transport.sim_speed (sim); and the
 * event thread. ME_ERR_TRANSPORT if the port does not open. May be called
 * again after me_node_stop. */
MADENGINE_API int me_node_start(me_node *node);
/* Waits (wall time) until the subnet is up: ME_OK or ME_ERR_TIMEOUT;
 * ME_ERR_STATE when the node is stopped or destroyed meanwhile. */
MADENGINE_API int me_node_wait_subnet_up(me_node *node, uint32_t timeout_ms);
/* How long me_node_stop waits for the node's threads. */
#define ME_NODE_STOP_WAIT_MS 1000
/* Stops every thread of the node; afterwards no callback runs. Idempotent.
 * Bounded: a thread still inside a call after ME_NODE_STOP_WAIT_MS (a
 * callback or vendor handler that does not return, a device call that
 * hangs) makes it return ME_ERR_TIMEOUT, naming what did not stop. The
 * node is then still stopping: that thread ends when its call returns (a
 * callback may still run until then), me_node_start refuses (ME_ERR_STATE),
 * me_node_stop may be called again to wait another bound, and
 * me_node_destroy waits for it without a bound. */
MADENGINE_API int me_node_stop(me_node *node);
/* Stops the node if needed and frees it (NULL is fine). The SA journal, when
 * configured, is written one last time. Waits for calls other threads are
 * making on it and for every thread of the node (no bound: what the node's
 * threads use is freed only after they ended). */
MADENGINE_API void me_node_destroy(me_node *node);

enum me_sm_state { /* SMInfo states, IBA 14.4.1 */
  ME_SM_NOT_ACTIVE = 0,
  ME_SM_DISCOVERING = 1,
  ME_SM_STANDBY = 2,
  ME_SM_MASTER = 3
};

struct me_node_status {
  int32_t subnet_up;        /* 1 once the subnet came up */
  int32_t sm_state;         /* enum me_sm_state */
  uint16_t sm_lid;
  uint64_t epoch;           /* of the current snapshot; 0 before the first */
  uint64_t heavy_sweeps;
  uint64_t light_sweeps;
  uint64_t traps;
  uint64_t events_dropped;  /* events the queue had no room for */
  uint64_t reserved[4];
};
MADENGINE_API int me_node_get_status(me_node *node, struct me_node_status *out);

/* ---- paths: answered in process from the current epoch ------------------------- */

struct me_path { /* a PathRecord (IBA 15.2.5.16) as the SA would answer it */
  uint16_t slid, dlid;
  uint64_t sgid_prefix, sgid_guid;
  uint64_t dgid_prefix, dgid_guid;
  uint16_t pkey;
  uint8_t sl;
  uint8_t mtu;          /* IBA code: 1 = 256 ... 5 = 4096 */
  uint8_t rate;         /* IBA code */
  uint8_t packet_life;  /* IBA code */
  uint8_t hop_limit;
  uint8_t reversible;
  uint8_t hops;         /* switch-to-switch hops along the LFTs */
  uint64_t epoch;       /* the epoch that answered */
  uint64_t reserved[4];
};
/* ME_OK, ME_ERR_NO_PATH (unknown LID, or the LFTs do not lead there) or
 * ME_ERR_NO_SUBNET. */
MADENGINE_API int me_path_query(me_node *node, uint16_t slid, uint16_t dlid, struct me_path *out);

/* ---- fabric read access --------------------------------------------------------- */

#define ME_NO_NODE UINT32_MAX
#define ME_NO_ROUTE 0xff

enum me_node_type { ME_NODE_CA = 1, ME_NODE_SWITCH = 2, ME_NODE_ROUTER = 3 };

struct me_node_info {
  uint64_t node_guid;
  uint64_t system_guid;
  int32_t type;             /* enum me_node_type */
  uint8_t num_ports;        /* physical ports; a switch also has port 0 */
  uint8_t lmc;
  uint16_t lid;             /* a switch's LID (its port 0); 0 for a CA (see its ports) */
  char description[65];     /* NodeDescription, NUL-terminated */
  uint64_t reserved[2];
};

struct me_port_info {
  uint64_t port_guid;       /* a switch's ports share port 0's */
  uint16_t lid;             /* CA ports and switch port 0; 0 for switch external ports */
  uint8_t lmc;
  uint8_t state;            /* PortState, IBA 14.2.5.6: 1 Down, 2 Init, 3 Armed, 4 Active */
  uint32_t peer_node;       /* node index at the other end of the link, or ME_NO_NODE */
  uint8_t peer_port;
  uint8_t link_width;       /* LinkWidthActive, IBA code */
  uint8_t link_speed;       /* LinkSpeedActive, IBA code */
  uint8_t mtu;              /* IBA code */
  uint64_t reserved[2];
};

/* The link at a port with today's speeds: the extended speed fields count
 * where the port's capability masks advertise them (a switch's port 0's for
 * all of its ports), as the SA reads them for PathRecord rates. */
struct me_port_link {
  uint8_t width;        /* LinkWidthActive: 1 1x, 16 2x, 2 4x, 4 8x, 8 12x */
  uint8_t speed;        /* LinkSpeedActive: 1 SDR, 2 DDR, 4 QDR (FDR10 reports QDR) */
  uint8_t speed_ext;    /* LinkSpeedExtActive: 1 FDR, 2 EDR, 4 HDR, 8 NDR; 0 none */
  uint8_t speed_ext2;   /* LinkSpeedExtActive2: 1 XDR; 0 none */
  uint8_t port_rate;    /* IBA rate code of this port (PathRecord rate codes, up to 24 = 1200 Gb/s) */
  uint8_t link_rate;    /* of the link: the lesser of its two ends */
  uint8_t mtu_cap;      /* IBA code */
  uint8_t vl_cap;       /* VLCap code */
  uint8_t op_vls;       /* OperationalVLs code */
  uint32_t data_mbps;   /* this port's data rate, Mb/s (width x lane rate) */
  uint64_t reserved[2];
};
MADENGINE_API int me_fabric_port_link(const me_fabric *fabric, uint32_t node, uint8_t port, struct me_port_link *out);

/* The current epoch, kept alive until me_fabric_release; NULL (and
 * ME_ERR_NO_SUBNET in me_last_error) before the first publication. */
MADENGINE_API me_fabric *me_node_fabric(me_node *node);
MADENGINE_API void me_fabric_release(me_fabric *fabric);

MADENGINE_API uint64_t me_fabric_epoch(const me_fabric *fabric);  /* 0 while being routed */
MADENGINE_API uint32_t me_fabric_node_count(const me_fabric *fabric);
MADENGINE_API uint32_t me_fabric_port_count(const me_fabric *fabric);  /* physical ports plus switch port 0s */
MADENGINE_API uint32_t me_fabric_link_count(const me_fabric *fabric);
MADENGINE_API uint16_t me_fabric_top_lid(const me_fabric *fabric);     /* highest unicast LID assigned */
/* Node indices run 0 .. node_count - 1. */
MADENGINE_API int me_fabric_node(const me_fabric *fabric, uint32_t node, struct me_node_info *out);
/* Ports: 1 .. num_ports, and 0 on a switch. */
MADENGINE_API int me_fabric_port(const me_fabric *fabric, uint32_t node, uint8_t port, struct me_port_info *out);
/* The end port that has `lid` (any LID of an LMC range): ME_OK, or ME_ERR_INVALID. */
MADENGINE_API int me_fabric_lid_owner(const me_fabric *fabric, uint16_t lid, uint32_t *node, uint8_t *port);
/* A switch's LFT entry for `lid` in this epoch: a port, ME_NO_ROUTE, or a
 * negative error (not a switch). Always ME_NO_ROUTE while being routed. */
MADENGINE_API int me_fabric_lft_port(const me_fabric *fabric, uint32_t node, uint16_t lid);

/* ---- events (event thread; see the threading contract) -------------------------- */

struct me_notice { /* a Notice, IBA 13.4.8.2 */
  uint8_t is_generic;
  uint8_t type;
  uint32_t producer_or_vendor;  /* ProducerType (generic) or VendorID */
  uint16_t trap_number;         /* TrapNumber (generic) or DeviceID */
  uint16_t issuer_lid;
  uint8_t toggle;
  uint16_t count;
  uint8_t data_details[54];     /* as on the wire; traps 64/65 carry a GID at offset 6 */
  uint64_t issuer_gid_prefix, issuer_gid_guid;
};

struct me_port_change { /* a port whose LID or state differs from the previous epoch */
  uint64_t node_guid;
  uint64_t port_guid;
  uint8_t port_num;
  uint8_t is_switch;
  uint16_t old_lid, new_lid;
  uint8_t old_state, new_state;  /* 0: the port was not there / is gone */
  uint64_t epoch;
};

/* A port whose error counters rose past the performance manager's
 * thresholds ([perfmgr] thresholds) between two reads: reported once, then
 * again only after a read found it below them. Counters are IBA
 * PortCounters values (16.1.3.5); changes are since the previous read. */
struct me_port_errors {
  uint64_t node_guid;
  uint64_t port_guid;
  uint8_t port_num;
  uint8_t is_switch;
  uint16_t lid;                 /* the LID the PMA was read at (a switch's port 0 LID) */
  char name[65];                /* the node name map's name, else NodeDescription; NUL-terminated */
  uint32_t over;                /* ME_PERF_* bits of the counters that reached their threshold */
  uint64_t symbol_errors, link_error_recovery, link_downed, rcv_errors, xmit_discards, xmit_wait;  /* changes */
  double interval_s;            /* between the two reads */
  uint64_t reserved[4];
};
#define ME_PERF_SYMBOL_ERRORS 0x01u
#define ME_PERF_LINK_ERROR_RECOVERY 0x02u
#define ME_PERF_LINK_DOWNED 0x04u
#define ME_PERF_RCV_ERRORS 0x08u
#define ME_PERF_XMIT_DISCARDS 0x40u
#define ME_PERF_XMIT_WAIT 0x1000u

typedef void (*me_subnet_up_fn)(void *user, uint64_t epoch);
typedef void (*me_sm_state_fn)(void *user, int32_t from, int32_t to); /* enum me_sm_state */
typedef void (*me_notice_fn)(void *user, const struct me_notice *notice);
typedef void (*me_port_change_fn)(void *user, const struct me_port_change *change);
typedef void (*me_port_errors_fn)(void *user, const struct me_port_errors *errors);

/* Before me_node_start (ME_ERR_STATE after); fn NULL clears. */
MADENGINE_API int me_set_subnet_up_callback(me_node *node, me_subnet_up_fn fn, void *user);
MADENGINE_API int me_set_sm_state_callback(me_node *node, me_sm_state_fn fn, void *user);
MADENGINE_API int me_set_notice_callback(me_node *node, me_notice_fn fn, void *user);
MADENGINE_API int me_set_port_change_callback(me_node *node, me_port_change_fn fn, void *user);
/* Needs [perfmgr] enabled = true in the node's TOML (otherwise never called). */
MADENGINE_API int me_set_port_errors_callback(me_node *node, me_port_errors_fn fn, void *user);

/* ---- the routing hook (compute pool) ------------------------------------------- */

/* Fills the LFT of every switch of `fabric` (its LIDs assigned) with
 * me_lft_set; entries start as ME_NO_ROUTE. Return 0 to have the SM program
 * them and the SA serve paths from them; non-zero fails this routing pass
 * (nothing is programmed; the message from me_lfts_error, if any, is
 * logged). Replaces sm.routing. */
typedef int (*me_routing_fn)(void *user, const me_fabric *fabric, me_lfts *lfts);
MADENGINE_API int me_set_routing_callback(me_node *node, me_routing_fn fn, void *user);
/* Switch `node` forwards `lid` to `port` (0 = the switch itself,
 * 1..num_ports, or ME_NO_ROUTE). ME_ERR_INVALID for a non-switch, a LID above
 * the top LID or a port the switch does not have. */
MADENGINE_API int me_lft_set(me_lfts *lfts, uint32_t node, uint16_t lid, uint8_t port);
/* What me_lft_set left there: a port, ME_NO_ROUTE, or a negative error. */
MADENGINE_API int me_lft_get(const me_lfts *lfts, uint32_t node, uint16_t lid);
/* The reason this pass fails (copied), for the SM's log. */
MADENGINE_API void me_lfts_error(me_lfts *lfts, const char *message);

/* ---- vendor-specific MAD classes (engine cores) -------------------------------- */

struct me_mad {
  uint8_t data[256];    /* the MAD, common header first (IBA 13.4.2) */
  uint32_t length;      /* valid bytes of data */
  uint16_t lid;         /* the requester's LID (where the response goes) */
  uint32_t remote_qpn;
  uint32_t qkey;
  uint8_t sl;
  uint16_t pkey_index;
  uint8_t port_num;
};
/* `response` arrives as the request turned into its response (GetResp for
 * Get and Set, status 0, same TID and address); fill in what to answer and
 * return non-zero to send it, 0 to send nothing. */
typedef int (*me_mad_handler_fn)(void *user, const struct me_mad *request, struct me_mad *response);
/* mgmt_class 0x09 or 0x30..0x4F (class version 1); before me_node_start. */
MADENGINE_API int me_register_mad_handler(me_node *node, uint8_t mgmt_class, me_mad_handler_fn fn, void *user);

#ifdef __cplusplus
}
#endif

#endif /* MADENGINE_MADENGINE_H */
