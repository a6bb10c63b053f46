/* vendor_sm: an example vendor SM on libmadengine's C ABI. madengine runs
 * the subnet (discovery, LIDs, bring-up, HA, the SA); this program brings its
 * own routing and a vendor MAD class, and listens to the node's events.
 *
 * Routing: shortest paths between switches (BFS), and among the equally
 * short next hops the one at index DLID mod count (d-mod-k). A port can be
 * quarantined: no switch routes to its LIDs, so the SA has no path to it.
 *
 *   vendor_sm --sim ft2:4 [--check] [--list] [--quarantine GUID] [--lfts FILE]
 *   vendor_sm --config node.toml [--run-ms N] ...   (umad: an HCA or ibsim)
 *
 * --list prints every CA port (GUID, LID, node description) of the epoch;
 * --lfts writes the LFTs it computed as "SWITCH_GUID LID PORT" lines.
 * --check compares, after subnet up, the LFTs of the published epoch with the
 * ones this program computed, and every PathRecord between CA ports (as
 * me_path_query answers it) with a walk of those LFTs; exit status 1 if
 * anything differs. Build: cc vendor_sm.c $(pkg-config --cflags --libs madengine)
 */
#define _POSIX_C_SOURCE 200809L

#include <madengine/madengine.h>

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PORTS 255
#define VENDOR_CLASS 0x09
#define VENDOR_ATTR_HELLO 0x0010

struct options {
  const char *config; /* a TOML file (the daemon's format) */
  const char *sim;    /* or a simulated fabric: "ft2:4", "ft3:4:2"... */
  uint64_t quarantine;
  const char *lfts_path;
  int check;
  int list;
  unsigned wait_ms;
  unsigned run_ms;
};

/* The LFTs this program computed, by switch GUID (the epoch is compared with them). */
struct switch_lft {
  uint64_t guid;
  uint16_t top;
  uint8_t *ports; /* [lid] */
};

struct vendor {
  struct options opt;
  pthread_mutex_t mu; /* the routing callback (compute pool) writes what main reads */
  struct switch_lft *lfts;
  uint32_t lft_count;
  unsigned routing_passes;
};

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* ---- routing (called by the SM on its compute pool) ---------------------------- */

/* The fabric as routing reads it: every node, and every port of every node. */
struct graph {
  uint32_t n;
  struct me_node_info *nodes;
  struct me_port_info *ports; /* [node * (MAX_PORTS + 1) + port] */
  uint32_t *dist;             /* [switch * n + switch]: switch-to-switch hops; UINT32_MAX: none */
};

static const struct me_port_info *port_at(const struct graph *g, uint32_t node, unsigned port) {
  return &g->ports[(size_t)node * (MAX_PORTS + 1) + port];
}

static int is_switch(const struct graph *g, uint32_t node) { return g->nodes[node].type == ME_NODE_SWITCH; }

static void graph_free(struct graph *g) {
  free(g->nodes), free(g->ports), free(g->dist);
}

static int graph_read(struct graph *g, const me_fabric *f) {
  g->n = me_fabric_node_count(f);
  g->nodes = calloc(g->n, sizeof *g->nodes);
  g->ports = calloc((size_t)g->n * (MAX_PORTS + 1), sizeof *g->ports);
  g->dist = malloc((size_t)g->n * g->n * sizeof *g->dist);
  uint32_t *queue = malloc((size_t)g->n * sizeof *queue);
  if (g->nodes == NULL || g->ports == NULL || g->dist == NULL || queue == NULL) {
    free(queue);
    return -1;
  }
  for (uint32_t i = 0; i < g->n; ++i) {
    me_fabric_node(f, i, &g->nodes[i]);
    for (unsigned p = is_switch(g, i) ? 0 : 1; p <= g->nodes[i].num_ports; ++p) {
      struct me_port_info *pi = &g->ports[(size_t)i * (MAX_PORTS + 1) + p];
      if (me_fabric_port(f, i, (uint8_t)p, pi) != ME_OK) pi->peer_node = ME_NO_NODE;
    }
  }
  for (size_t i = 0; i < (size_t)g->n * g->n; ++i) g->dist[i] = UINT32_MAX;
  for (uint32_t s = 0; s < g->n; ++s) { /* BFS over switch-to-switch links from every switch */
    if (!is_switch(g, s)) continue;
    uint32_t *d = &g->dist[(size_t)s * g->n];
    uint32_t head = 0, tail = 0;
    d[s] = 0;
    queue[tail++] = s;
    while (head < tail) {
      const uint32_t u = queue[head++];
      for (unsigned p = 1; p <= g->nodes[u].num_ports; ++p) {
        const uint32_t q = port_at(g, u, p)->peer_node;
        if (q == ME_NO_NODE || !is_switch(g, q) || d[q] != UINT32_MAX) continue;
        d[q] = d[u] + 1;
        queue[tail++] = q;
      }
    }
  }
  free(queue);
  return 0;
}

/* Switch `s`'s port towards `dsw` for `lid`: d-mod-k among the shortest next hops. */
static uint8_t next_hop(const struct graph *g, uint32_t s, uint32_t dsw, uint32_t lid) {
  const uint32_t d = g->dist[(size_t)s * g->n + dsw];
  uint8_t cand[MAX_PORTS];
  unsigned count = 0;
  for (unsigned p = 1; d != UINT32_MAX && p <= g->nodes[s].num_ports; ++p) {
    const uint32_t q = port_at(g, s, p)->peer_node;
    if (q != ME_NO_NODE && is_switch(g, q) && g->dist[(size_t)q * g->n + dsw] + 1 == d) cand[count++] = (uint8_t)p;
  }
  return count == 0 ? ME_NO_ROUTE : cand[lid % count];
}

static int route(void *user, const me_fabric *f, me_lfts *lfts) {
  struct vendor *v = user;
  struct graph g;
  memset(&g, 0, sizeof g);
  if (graph_read(&g, f) != 0) {
    me_lfts_error(lfts, "vendor_sm: out of memory");
    graph_free(&g);
    return -1;
  }
  const uint16_t top = me_fabric_top_lid(f);
  /* Every end port: the switch it hangs off, the exit port there, its LIDs. */
  for (uint32_t e = 0; e < g.n; ++e) {
    const int sw = is_switch(&g, e);
    for (unsigned ep = sw ? 0 : 1; ep <= (sw ? 0u : g.nodes[e].num_ports); ++ep) {
      const struct me_port_info *pi = port_at(&g, e, ep);
      if (pi->lid == 0) continue;
      if (v->opt.quarantine != 0 && pi->port_guid == v->opt.quarantine) continue; /* nobody reaches it */
      uint32_t dsw = e;
      uint8_t exit_port = 0;
      if (!sw) {
        if (pi->peer_node == ME_NO_NODE || !is_switch(&g, pi->peer_node)) continue;
        dsw = pi->peer_node;
        exit_port = pi->peer_port;
      }
      for (uint32_t lid = pi->lid; lid < pi->lid + (1u << pi->lmc) && lid <= top; ++lid)
        for (uint32_t s = 0; s < g.n; ++s) {
          if (!is_switch(&g, s)) continue;
          const uint8_t port = s == dsw ? exit_port : next_hop(&g, s, dsw, lid);
          if (port != ME_NO_ROUTE && me_lft_set(lfts, s, (uint16_t)lid, port) != ME_OK) {
            me_lfts_error(lfts, me_last_error());
            graph_free(&g);
            return -1;
          }
        }
    }
  }
  /* Keep a copy by GUID for --lfts and --check (main reads it under the lock). */
  pthread_mutex_lock(&v->mu);
  for (uint32_t i = 0; i < v->lft_count; ++i) free(v->lfts[i].ports);
  free(v->lfts);
  v->lfts = calloc(g.n, sizeof *v->lfts);
  v->lft_count = 0;
  for (uint32_t s = 0; v->lfts != NULL && s < g.n; ++s) {
    if (!is_switch(&g, s)) continue;
    struct switch_lft *l = &v->lfts[v->lft_count++];
    l->guid = g.nodes[s].node_guid;
    l->top = top;
    l->ports = malloc((size_t)top + 1);
    for (uint32_t lid = 0; l->ports != NULL && lid <= top; ++lid)
      l->ports[lid] = lid == 0 ? ME_NO_ROUTE : (uint8_t)me_lft_get(lfts, s, (uint16_t)lid);
  }
  ++v->routing_passes;
  pthread_mutex_unlock(&v->mu);
  graph_free(&g);
  return 0;
}

/* ---- a vendor class (engine cores): Get(Hello) answers with our name ------------ */

static int vendor_mad(void *user, const struct me_mad *req, struct me_mad *resp) {
  (void)user;
  const uint8_t method = req->data[3];
  const uint16_t attr = (uint16_t)(req->data[16] << 8 | req->data[17]);
  if (method != 0x01 || attr != VENDOR_ATTR_HELLO) {
    resp->data[4] = 0x00, resp->data[5] = 0x0c; /* status: method/attribute unsupported */
    return 1;
  }
  static const char hello[] = "madengine vendor_sm example";
  memcpy(resp->data + 24, hello, sizeof hello); /* class 0x09 (range 1): data right after the common header */
  return 1;
}

/* ---- events (the node's event thread) ------------------------------------------ */

static const char *sm_state_name(int32_t s) {
  switch (s) {
    case ME_SM_NOT_ACTIVE: return "NOTACTIVE";
    case ME_SM_DISCOVERING: return "DISCOVERING";
    case ME_SM_STANDBY: return "STANDBY";
    case ME_SM_MASTER: return "MASTER";
    default: return "?";
  }
}

static void on_subnet_up(void *user, uint64_t epoch) {
  (void)user;
  printf("vendor_sm: event: subnet up (epoch %" PRIu64 ")\n", epoch);
  fflush(stdout);
}

static void on_sm_state(void *user, int32_t from, int32_t to) {
  (void)user;
  printf("vendor_sm: event: SM %s -> %s\n", sm_state_name(from), sm_state_name(to));
  fflush(stdout);
}

static void on_notice(void *user, const struct me_notice *n) {
  (void)user;
  printf("vendor_sm: event: trap %u from LID %u\n", n->trap_number, n->issuer_lid);
  fflush(stdout);
}

static void on_port_change(void *user, const struct me_port_change *c) {
  (void)user;
  printf("vendor_sm: event: port 0x%016" PRIx64 "/%u LID %u -> %u, state %u -> %u (epoch %" PRIu64 ")\n",
         c->port_guid, c->port_num, c->old_lid, c->new_lid, c->old_state, c->new_state, c->epoch);
  fflush(stdout);
}

/* ---- after subnet up ------------------------------------------------------------ */

static const struct switch_lft *lft_of(const struct vendor *v, uint64_t guid) {
  for (uint32_t i = 0; i < v->lft_count; ++i)
    if (v->lfts[i].guid == guid) return &v->lfts[i];
  return NULL;
}

static int write_lfts(const struct vendor *v, const char *path) {
  FILE *out = fopen(path, "w");
  if (out == NULL) return -1;
  for (uint32_t i = 0; i < v->lft_count; ++i)
    for (uint32_t lid = 1; lid <= v->lfts[i].top; ++lid)
      if (v->lfts[i].ports[lid] != ME_NO_ROUTE)
        fprintf(out, "0x%016" PRIx64 " %u %u\n", v->lfts[i].guid, lid, v->lfts[i].ports[lid]);
  return fclose(out);
}

/* Hops from the switch `sw` to `dlid` by our own LFTs; -1 if they drop or loop. */
static int walk(const struct vendor *v, const me_fabric *f, uint32_t sw, uint16_t dlid) {
  const uint32_t n = me_fabric_node_count(f);
  for (int hops = 0; hops <= (int)n; ++hops) {
    struct me_node_info ni;
    me_fabric_node(f, sw, &ni);
    const struct switch_lft *l = lft_of(v, ni.node_guid);
    if (l == NULL || dlid > l->top || l->ports[dlid] == ME_NO_ROUTE) return -1;
    const uint8_t port = l->ports[dlid];
    if (port == 0) return ni.lid == dlid ? hops : -1;
    struct me_port_info pi;
    if (me_fabric_port(f, sw, port, &pi) != ME_OK || pi.peer_node == ME_NO_NODE) return -1;
    struct me_node_info peer;
    me_fabric_node(f, pi.peer_node, &peer);
    if (peer.type != ME_NODE_SWITCH) {
      struct me_port_info dp;
      return me_fabric_port(f, pi.peer_node, pi.peer_port, &dp) == ME_OK && dlid >= dp.lid &&
                     dlid < dp.lid + (1u << dp.lmc)
                 ? hops
                 : -1;
    }
    sw = pi.peer_node;
  }
  return -1;
}

/* The epoch's LFTs are ours, and the SA's paths follow them. Returns the number of mismatches. */
static unsigned check(me_node *node, const struct vendor *v) {
  unsigned bad = 0, lft_entries = 0, paths = 0, no_paths = 0;
  me_fabric *f = me_node_fabric(node);
  if (f == NULL) {
    fprintf(stderr, "vendor_sm: no epoch: %s\n", me_last_error());
    return 1;
  }
  const uint32_t n = me_fabric_node_count(f);
  for (uint32_t s = 0; s < n; ++s) {
    struct me_node_info ni;
    me_fabric_node(f, s, &ni);
    if (ni.type != ME_NODE_SWITCH) continue;
    const struct switch_lft *l = lft_of(v, ni.node_guid);
    for (uint32_t lid = 1; l != NULL && lid <= l->top; ++lid, ++lft_entries) {
      const int got = me_fabric_lft_port(f, s, (uint16_t)lid);
      if (got != l->ports[lid]) {
        fprintf(stderr, "vendor_sm: switch 0x%016" PRIx64 " LID %u: programmed %d, computed %u\n", ni.node_guid,
                lid, got, l->ports[lid]);
        ++bad;
      }
    }
    if (l == NULL) {
      fprintf(stderr, "vendor_sm: switch 0x%016" PRIx64 " was not routed by us\n", ni.node_guid);
      ++bad;
    }
  }
  /* CA ports: LID, and the switch each one hangs off. */
  enum { kMaxEnds = 64 };
  uint16_t lids[kMaxEnds];
  uint32_t attach[kMaxEnds];
  unsigned ends = 0;
  for (uint32_t i = 0; i < n && ends < kMaxEnds; ++i) {
    struct me_node_info ni;
    me_fabric_node(f, i, &ni);
    if (ni.type == ME_NODE_SWITCH) continue;
    for (unsigned p = 1; p <= ni.num_ports && ends < kMaxEnds; ++p) {
      struct me_port_info pi;
      if (me_fabric_port(f, i, (uint8_t)p, &pi) != ME_OK || pi.lid == 0 || pi.peer_node == ME_NO_NODE) continue;
      lids[ends] = pi.lid;
      attach[ends++] = pi.peer_node;
    }
  }
  for (unsigned a = 0; a < ends; ++a)
    for (unsigned b = 0; b < ends; ++b) {
      if (a == b) continue;
      struct me_path path;
      const int rc = me_path_query(node, lids[a], lids[b], &path);
      const int hops = walk(v, f, attach[a], lids[b]);
      if (rc == ME_OK && hops >= 0 && path.hops == hops) {
        ++paths;
      } else if (rc == ME_ERR_NO_PATH && hops < 0) {
        ++no_paths;
      } else {
        fprintf(stderr, "vendor_sm: path %u -> %u: %s (%d hops) but the LFTs give %d hops\n", lids[a], lids[b],
                me_strerror(rc), rc == ME_OK ? path.hops : -1, hops);
        ++bad;
      }
    }
  printf("vendor_sm: check: %u LFT entries as computed, %u paths follow them, %u pairs without a path, %u mismatches\n",
         lft_entries, paths, no_paths, bad);
  me_fabric_release(f);
  return bad;
}

/* ---- main ------------------------------------------------------------------------ */

static char *read_file(const char *path) {
  FILE *in = fopen(path, "rb");
  if (in == NULL) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap * 2 + 8192;
      char *grown = realloc(buf, cap);
      if (grown == NULL) break;
      buf = grown;
    }
    const size_t got = fread(buf + len, 1, cap - len - 1, in);
    len += got;
    if (got == 0) break;
  }
  fclose(in);
  if (buf != NULL) buf[len] = '\0';
  return buf;
}

static int usage(void) {
  fprintf(stderr,
          "usage: vendor_sm (--sim SPEC | --config FILE) [--check] [--list] [--quarantine PORT_GUID] [--lfts FILE]\n"
          "                 [--wait-ms N] [--run-ms N]\n");
  return 2;
}

int main(int argc, char **argv) {
  struct vendor v;
  memset(&v, 0, sizeof v);
  pthread_mutex_init(&v.mu, NULL);
  v.opt.wait_ms = 60000;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--check") == 0) v.opt.check = 1;
    else if (strcmp(a, "--list") == 0) v.opt.list = 1;
    else if (next == NULL) return usage();
    else if (strcmp(a, "--sim") == 0) v.opt.sim = argv[++i];
    else if (strcmp(a, "--config") == 0) v.opt.config = argv[++i];
    else if (strcmp(a, "--quarantine") == 0) v.opt.quarantine = strtoull(argv[++i], NULL, 0);
    else if (strcmp(a, "--lfts") == 0) v.opt.lfts_path = argv[++i];
    else if (strcmp(a, "--wait-ms") == 0) v.opt.wait_ms = (unsigned)strtoul(argv[++i], NULL, 0);
    else if (strcmp(a, "--run-ms") == 0) v.opt.run_ms = (unsigned)strtoul(argv[++i], NULL, 0);
    else return usage();
  }
  if ((v.opt.sim == NULL) == (v.opt.config == NULL)) return usage();

  char *toml = NULL;
  if (v.opt.config != NULL) {
    toml = read_file(v.opt.config);
    if (toml == NULL) {
      fprintf(stderr, "vendor_sm: cannot read %s\n", v.opt.config);
      return 2;
    }
  } else {
    static const char fmt[] =
        "[transport]\nkind = \"sim\"\ngenerate = \"%s\"\nsim_speed = 0.0\n"
        "[engine]\ncores = 1\npin = false\n"
        "[log]\nlevel = \"warn\"\n";
    const size_t len = sizeof fmt + strlen(v.opt.sim);
    toml = malloc(len);
    if (toml == NULL) return 2;
    snprintf(toml, len, fmt, v.opt.sim);
  }

  printf("vendor_sm: libmadengine %s\n", me_version());
  char err[512];
  me_node *node = me_node_create(toml, err, sizeof err);
  free(toml);
  if (node == NULL) {
    fprintf(stderr, "vendor_sm: %s\n", err);
    return 2;
  }
  me_set_routing_callback(node, route, &v);
  me_set_subnet_up_callback(node, on_subnet_up, &v);
  me_set_sm_state_callback(node, on_sm_state, &v);
  me_set_notice_callback(node, on_notice, &v);
  me_set_port_change_callback(node, on_port_change, &v);
  me_register_mad_handler(node, VENDOR_CLASS, vendor_mad, &v);

  int status = 0;
  if (me_node_start(node) != ME_OK) {
    fprintf(stderr, "vendor_sm: start: %s\n", me_last_error());
    me_node_destroy(node);
    return 2;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  if (me_node_wait_subnet_up(node, v.opt.wait_ms) != ME_OK) {
    fprintf(stderr, "vendor_sm: %s\n", me_last_error());
    status = 1;
  } else {
    struct me_node_status st;
    me_node_get_status(node, &st);
    me_fabric *f = me_node_fabric(node);
    printf("vendor_sm: subnet up (epoch %" PRIu64 "): SM %s at LID %u; %u nodes, %u ports, %u links; %u routing passes\n",
           st.epoch, sm_state_name(st.sm_state), st.sm_lid, me_fabric_node_count(f), me_fabric_port_count(f),
           me_fabric_link_count(f), v.routing_passes);
    for (uint32_t i = 0; v.opt.list && i < me_fabric_node_count(f); ++i) {
      struct me_node_info ni;
      struct me_port_info pi;
      me_fabric_node(f, i, &ni);
      for (unsigned p = 1; ni.type != ME_NODE_SWITCH && p <= ni.num_ports; ++p)
        if (me_fabric_port(f, i, (uint8_t)p, &pi) == ME_OK && pi.lid != 0)
          printf("vendor_sm: port 0x%016" PRIx64 " LID %u node '%s'\n", pi.port_guid, pi.lid, ni.description);
    }
    me_fabric_release(f);
    pthread_mutex_lock(&v.mu);
    if (v.opt.lfts_path != NULL && write_lfts(&v, v.opt.lfts_path) != 0) {
      fprintf(stderr, "vendor_sm: cannot write %s\n", v.opt.lfts_path);
      status = 1;
    }
    if (v.opt.check && check(node, &v) != 0) status = 1;
    pthread_mutex_unlock(&v.mu);
    printf("vendor_sm: ready\n");
    fflush(stdout);
    /* Serve (the SA answers, the SM sweeps) until told to stop or run_ms passes. */
    const struct timespec nap = {0, 50 * 1000 * 1000};
    for (unsigned waited = 0; !g_stop && waited < v.opt.run_ms; waited += 50) nanosleep(&nap, NULL);
  }
  if (me_node_stop(node) != ME_OK) {
    fprintf(stderr, "vendor_sm: stop: %s\n", me_last_error());
    status = 1;
  }
  me_node_destroy(node);
  for (uint32_t i = 0; i < v.lft_count; ++i) free(v.lfts[i].ports);
  free(v.lfts);
  pthread_mutex_destroy(&v.mu);
  printf("vendor_sm: stopped\n");
  return status;
}
