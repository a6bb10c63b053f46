// The madengine daemon's configuration: one struct, filled from defaults,
// then a TOML file, then command-line flags. Every bad value is rejected
// with a message naming the file line (ConfigError), before anything starts.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace madengine::daemon {

struct ConfigError : std::runtime_error {
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
};

struct TransportSection {
  TransportKind kind = TransportKind::kSim;
  std::string ca;             // umad: CA name; empty = the first
  unsigned port = 0;          // umad: port number; 0 = the CA's first
  std::string topology;       // sim: an ibnetdiscover/ibsim topology file
  std::string generate = "ft2:36";  // sim: generator spec when no topology (see docs/operations.md)
  std::uint64_t seed = 1;     // sim: fault injection and timing seed
  std::string sim_node;       // sim: the node our SM port is on; empty = the first CA
};

struct SmSection {
  unsigned priority = 15;     // 0..15 (IBA SMInfo.Priority)
  std::uint64_t sm_key = 1;   // OpenSM's default
  std::string guid2lid = "/var/lib/madengine/guid2lid";
  unsigned lmc = 0;           // 0..7
  std::string routing = "minhop";  // minhop | updn | ftree
  std::vector<std::uint64_t> roots;  // updn/ftree root switch GUIDs; empty = detect
  unsigned sweep_interval_ms = 10000;
  unsigned smps_in_flight_max = 64;
  unsigned smps_per_node_max = 4;
  unsigned transaction_timeout_ms = 200;
  unsigned transaction_retries = 3;
  unsigned subnet_timeout = 18;  // 4.096 us * 2^18 ~ 1 s (OpenSM's default)
  unsigned routing_threads = 0;  // 0 = engine cores
  // Standby: how often the master is polled and how many failed polls mean
  // it is gone (OpenSM's defaults: 10 s x 4; down to 100 ms x 3).
  unsigned ha_poll_interval_ms = 10000;
  unsigned ha_poll_retries = 4;
};

struct SaSection {
  unsigned queue_depth = 4096;      // admitted queries per core before BUSY
  unsigned requester_share_max = 256;  // queries one requester may have queued
};

struct LogSection {
  std::string level = "info";  // trace | debug | info | warn | error
  std::string file;            // empty = stderr
};

struct Config {
  EngineSection engine;
  TransportSection transport;
  SmSection sm;
  SaSection sa;
  LogSection log;
};

// Parses TOML text (`name` is used in messages). Throws ConfigError naming
// the line of an unknown key or a bad value.
Config parse_config(const std::string& toml_text, const std::string& name);
Config load_config_file(const std::string& path);
// Checks the relations between values (after CLI overrides); throws ConfigError.
void validate(const Config& c);

const char* to_string(TransportKind k) noexcept;

}  // namespace madengine::daemon
