// A node's configuration, the daemon's TOML format (config/madengine.toml):
// one struct, filled from defaults, then a TOML file, then (in the daemon)
// command-line flags. Every bad value is rejected with a message naming the
// file line (ConfigError), before anything starts.
#pragma once

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "madengine/sm/port_settings.hpp"

#include "madengine/export.h"

namespace madengine::node {

struct MADENGINE_API ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class TransportKind : std::uint8_t { kUmad, kSim };

struct EngineSection {
  unsigned cores = 2;
  bool pin = true;
  // "block": idle cores sleep in ppoll() on the transport fd and their
  // eventfd (no CPU while idle: right when the SM shares its CPUs, and on
  // ibsim); "spin": they spin, yield and nap (lowest latency on dedicated cores).
  std::string idle = "block";
  unsigned idle_spin_loops = 256;  // idle iterations spent spinning before blocking (or yielding)
  unsigned idle_spin_loops_min = 8;  // "block": the spin adapts between this and idle_spin_loops
};

struct TransportSection {
  // umad: the port a management node's SM runs on; the in-process simulator
  // is one flag away (--transport sim).
  TransportKind kind = TransportKind::kUmad;
  std::string ca;             // umad: CA name; empty = the CA of the first active InfiniBand port
  unsigned port = 0;          // umad: port number; 0 = the first active port (else the first with link up)
  std::string topology;       // sim: an ibnetdiscover/ibsim topology file
  std::string generate = "ft2:36";  // sim: generator spec when no topology (see docs/operations.md)
  std::uint64_t seed = 1;     // sim: fault injection and timing seed
  std::string sim_node;       // sim: the node our SM port is on; empty = the first CA
  // sim: simulated seconds per wall second while the node drives the fabric
  // itself (Node::start); 0 = as fast as possible.
  double sim_speed = 1.0;
};

// One class of OpenSM's QoS options (qos_*, qos_ca_*, qos_sw0_*, qos_swe_*,
// qos_rtr_*); unset values fall back as OpenSM's do (sm/qos/qos_options.hpp).
struct QosClassSection {
  unsigned max_vls = 0;    // 0: unset
  int high_limit = -1;     // -1: unset
  std::string vlarb_high;  // "": unset; "VL:weight,..."
  std::string vlarb_low;
  std::string sl2vl;       // 16 VLs, "0,1,...,7"
};

struct SmSection {
  unsigned priority = 15;     // 0..15 (IBA SMInfo.Priority)
  std::uint64_t sm_key = 1;   // OpenSM's default
  // Empty: LIDs are not kept. The daemon defaults it to
  // kStateDir/guid2lid with the umad transport (apply_state_defaults).
  std::string guid2lid;
  unsigned lmc = 0;           // 0..7
  std::string routing = "minhop";  // an engine or a chain "a,b,c": minhop | updn | ftree | dfsssp | nue | dor
  std::vector<std::uint64_t> roots;  // updn/ftree root switch GUIDs; empty = detect
  unsigned sweep_interval_ms = 10000;
  unsigned local_port_check_ms = 250;    // master: our own port's PortInfo, to see a cable pulled or put back
  unsigned standby_refresh_ms = 60000;   // standby: re-read the fabric for its prepared snapshot this often
  unsigned smps_in_flight_max = 64;
  unsigned smps_per_node_max = 4;
  unsigned transaction_timeout_ms = 200;
  unsigned transaction_retries = 3;
  unsigned routing_threads = 0;  // 0 = engine cores
  // Standby: how often the master is polled and how many failed polls mean
  // it is gone (OpenSM's defaults: 10 s x 4; down to 100 ms x 3).
  unsigned ha_poll_interval_ms = 10000;
  unsigned ha_poll_retries = 4;
  // Standby: how often the master's SA state (services, groups,
  // subscriptions) is copied; a takeover keeps it, without asking clients to
  // reregister, when it is at most ha_replica_max_age_ms older than the
  // master's last answered poll (0: 3 intervals). See docs/ha.md.
  unsigned ha_replica_interval_ms = 1000;
  unsigned ha_replica_max_age_ms = 0;
  // Partitions (docs/operations.md): OpenSM's partitions.conf, unchanged;
  // empty: none (the default partition, every port full). SIGHUP re-reads it.
  std::string partition_config;
  std::string part_enforce = "both";  // both | in | out | off (OpenSM's part_enforce)
  bool allow_both_pkeys = false;      // OpenSM's allow_both_pkeys
  // M_Key (IBA 14.2.4, OpenSM's names): the key the SM writes to every
  // port and protects them with; 0 = no protection. The lease is in seconds.
  std::uint64_t m_key = 0;
  unsigned m_key_lease_period = 0;
  unsigned m_key_protection_level = 0;  // 0..3 (IBA 14.2.4.1)
  // QoS, OpenSM's option names (docs/operations.md): off by default (the SM
  // writes no SL2VL/VLArb table, as OpenSM without -Q).
  bool qos = false;
  std::string qos_policy_file;  // OpenSM's qos-policy.conf (a subset, sm/qos/qos_policy.hpp); "" = none
  QosClassSection qos_all, qos_ca, qos_sw0, qos_swe, qos_rtr;
  // Ports' M_Keys kept across restarts (OpenSM's guid2mkey format); empty:
  // none. The daemon defaults it beside guid2lid with the umad transport.
  std::string guid2mkey;
  // VLs, timeouts and link widths and speeds written to every port, with
  // OpenSM's key names (max_op_vls, packet_life_time, head_of_queue_lifetime,
  // leaf_head_of_queue_lifetime, vl_stall_count, leaf_vl_stall_count,
  // force_link_width, force_link_speed, force_link_speed_ext).
  sm::PortSettings ports;
  // IPv6 solicited-node multicast groups share one MLID per partition and
  // scope (OpenSM's consolidate_ipv6_snm_req): thousands of IPoIB hosts,
  // one MFT entry. MLIDs stop at the least MulticastFDBCap of the switches.
  bool consolidate_ipv6_snm_req = false;
};

struct SaSection {
  unsigned queue_depth = 4096;      // admitted queries per core before BUSY
  unsigned requester_share_max = 256;  // queries one requester may have queued
  // Warm restart (docs/ha.md): the master journals the SA's state here when
  // it changed, at most every journal_interval_ms, and at a clean shutdown;
  // a start restores it before serving when it is at most journal_fresh_ms
  // old (file time): then the first sweep sets no ClientReregister. A bad or
  // older journal is logged and ignored. Empty path: no journal.
  std::string journal;  // empty: none; the daemon defaults it like sm.guid2lid
  unsigned journal_interval_ms = 1000;
  unsigned journal_fresh_ms = 60000;
  // The last epoch the master published, kept beside the journal
  // (`sa-epoch`; docs/ha.md, warm restart): a restart publishes it before
  // its first sweep when the master vouched for it (file time, touched every
  // journal_interval_ms while no sweep runs) at most epoch_fresh_ms ago, for
  // this SM port and subnet prefix, with every LID as guid2lid gives it.
  bool epoch_restore = true;
  unsigned epoch_fresh_ms = 60000;
};

struct LogSection {
  std::string level = "info";  // trace | debug | info | warn | error
  std::string file;            // empty = stderr
};

struct NodeConfig {
  EngineSection engine;
  TransportSection transport;
  SmSection sm;
  SaSection sa;
  LogSection log;
  std::set<std::string> given;  // "section.key" of every key the file set
};

// Where a daemon on a management node keeps its state.
inline constexpr const char* kStateDir = "/var/lib/madengine";

// The daemon on a real port keeps LIDs, ports' M_Keys and SA state in
// kStateDir unless the file or a flag named them (`guid2lid_given`,
// `journal_given`, `guid2mkey_given`: a flag did);
// a simulated fabric keeps nothing unless asked, so a demo run on a
// management node never touches the real state.
MADENGINE_API void apply_state_defaults(NodeConfig& c, bool guid2lid_given, bool journal_given,
                                        bool guid2mkey_given = false);

// "fe80::", "fe80::/64" or "0xfe80000000000000": a /64 subnet prefix.
MADENGINE_API bool parse_subnet_prefix(const std::string& text, std::uint64_t& out) noexcept;

// Parses TOML text (`name` is used in messages). Throws ConfigError naming
// the line of an unknown key or a bad value.
MADENGINE_API NodeConfig parse_config(const std::string& toml_text, const std::string& name);
MADENGINE_API NodeConfig load_config_file(const std::string& path);
// Checks the relations between values (after CLI overrides); throws ConfigError.
MADENGINE_API void validate(const NodeConfig& c);

MADENGINE_API const char* to_string(TransportKind k) noexcept;

// Points the process's log at [log] (level, file; the daemon's line format).
// Throws std::runtime_error (spdlog's) if the file cannot be opened.
MADENGINE_API void apply_log_config(const LogSection& log);

}  // namespace madengine::node
