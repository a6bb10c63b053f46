// The madengine daemon as a library: builds the transport (umad or the
// in-process sim), the engine, the SA server and the SM from a Config and
// wires them together. The `madengine` executable, madstorm's embedded
// target and end-to-end tests all use it.
#pragma once

#include <chrono>
#include <memory>

#include "config.hpp"
#include "madengine/engine/engine.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/sm.hpp"

namespace madengine::sim {
class Fabric;
}

namespace madengine::daemon {

class Daemon {
 public:
  // Throws ConfigError (bad config or topology) or std::runtime_error (the
  // transport does not open) before anything runs.
  explicit Daemon(const Config& cfg);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // umad: starts one thread per engine core. sim: nothing runs until pump()
  // is called, because the simulated fabric is single-threaded by design.
  void start();
  void stop() noexcept;

  // sim: one turn of every engine core; when nothing was due, advances the
  // fabric's clock to its next event. Returns the work done.
  std::size_t pump(Nanos step_ns = 10 * kNanosPerMicro);
  // umad: waits (wall time); sim: pumps until subnet up or `sim_limit` of
  // simulated time passes.
  bool wait_subnet_up(std::chrono::milliseconds limit);

  // Re-reads the files an operator edits while the SM runs (the partitions
  // file, the qos-policy file; SIGHUP, and the admin command): good files are applied by the next
  // heavy sweep, which is requested; a bad one is logged with file:line and
  // what is in use stays. Any thread. False when a file was refused.
  bool reload_config_files();

  bool is_sim() const noexcept;
  sim::Fabric* fabric() noexcept;  // sim only, else nullptr
  Engine& engine() noexcept;
  sm::SubnetManager& sm() noexcept;
  sa::SaServer& sa() noexcept;
  const Config& config() const noexcept;

 private:
  struct Parts;
  std::unique_ptr<Parts> p_;
};

}  // namespace madengine::daemon
