// The node's state files beside guid2lid (docs/ha.md, warm restart): the
// SA journal (the clients' registrations) and the persisted epoch (the last
// snapshot the master published), each written by a poller on the SM's
// core through the I/O pool and read once at start, before serving.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/compute_pool.hpp"
#include "engine/poller.hpp"
#include "madengine/node/config.hpp"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sa/state/fabric_identity.hpp"
#include "sa/state/journal.hpp"
#include "sm/sm.hpp"

namespace madengine::node {

// The master journals the SA's state (docs/ha.md, warm restart): the SM's
// core notices, at most every interval_ms, that state_generation moved and
// hands a copy of the state to the I/O pool, which writes it (an fsync per
// write never holds the MAD core). Writes keep their order: the I/O pool
// has one thread. Only a master whose SA holds the clients' registrations
// (SmStatus::sa_state_current) writes. A standby removes the journal (the
// master's SA takes registrations from then on), and so does a master
// whose clients are still to be asked to reregister: a restart must not
// vouch with a state the clients have moved on from.
class JournalWriter final : public Poller {
 public:
  JournalWriter(const std::string& path, const sa::FabricIdentity& fabric, std::uint32_t interval_ms, sa::SaServer& sa,
                sm::SubnetManager& sm, const Clock& clock, ComputePool& io)
      : path_(path),
        fabric_(fabric),
        interval_ns_(Nanos{interval_ms} * kNanosPerMilli),
        sa_(sa),
        sm_(sm),
        clock_(clock),
        io_(io) {}
  std::size_t poll(Nanos now_ns) noexcept override {
    if (now_ns < next_ns_) return 0;
    next_ns_ = now_ns + interval_ns_;
    const sm::SmStatus st = sm_.status();
    const bool vouches = st.state == wire::SmState::kMaster && st.sa_state_current;
    if (!vouches && (st.state == wire::SmState::kStandby || st.state == wire::SmState::kMaster)) {
      if (withdrawn_) return 0;
      withdraw();
      return 1;
    }
    if (!vouches || sa_.state_generation() == queued_) return 0;
    write();
    return 1;
  }
  JournalCounters counters() const noexcept {
    return {written_.load(std::memory_order_relaxed), failed_.load(std::memory_order_relaxed)};
  }
  // Writes now when we are master (shutdown), on this thread, from the
  // state the SA last published (any thread may read it): the file's time
  // then says the state was current until this moment. Once per shutdown.
  void write_final() noexcept {
    if (final_written_) return;
    final_written_ = true;
    const sm::SmStatus st = sm_.status();
    if (st.state != wire::SmState::kMaster || !st.sa_state_current) {
      spdlog::info("sa journal {}: not written at shutdown: this SM is not a master vouching for the SA state", path_);
      return;
    }
    try {
      std::string err;
      if (sa::write_journal_file(path_, sa_.capture_state(), clock_.now_ns(), err, fabric_))
        spdlog::info("sa journal {}: written at shutdown", path_);
      else
        spdlog::warn("sa journal {}: not written at shutdown: {}", path_, err);
    } catch (const std::exception& e) {
      spdlog::warn("sa journal {}: not written at shutdown: {}", path_, e.what());
    }
  }

 private:
  void withdraw() noexcept {
    withdrawn_ = true;
    queued_ = ~std::uint64_t{0};  // a later mastership writes its state anew
    try {
      const bool queued = io_.submit([path = path_] {
        std::error_code ec;
        if (std::filesystem::remove(path, ec))
          spdlog::info("sa journal {}: removed: it no longer holds every client's registrations", path);
        else if (ec)
          spdlog::warn("sa journal {}: not removed: {}", path, ec.message());
      });
      if (!queued) withdrawn_ = false;  // tried again at the next poll
    } catch (const std::exception& e) {
      spdlog::warn("sa journal {}: not removed: {}", path_, e.what());
    }
  }

  void write() noexcept {
    withdrawn_ = false;
    const std::uint64_t g = sa_.state_generation();
    try {
      const bool queued = io_.submit([this, path = path_, image = sa_.capture_state(), now = clock_.now_ns()] {
        std::string err;
        if (sa::write_journal_file(path, image, now, err, fabric_)) {
          written_.fetch_add(1, std::memory_order_relaxed);
        } else {
          failed_.fetch_add(1, std::memory_order_relaxed);
          spdlog::warn("sa journal {}: not written: {}", path, err);
        }
      });
      if (queued) queued_ = g;
      else spdlog::warn("sa journal {}: not written: the I/O queue is full (retried)", path_);
    } catch (const std::exception& e) {
      spdlog::warn("sa journal {}: not written: {}", path_, e.what());
    }
  }

  std::atomic<std::uint64_t> written_{0}, failed_{0};  // by the I/O thread

  std::string path_;
  sa::FabricIdentity fabric_;
  Nanos interval_ns_;
  sa::SaServer& sa_;
  sm::SubnetManager& sm_;
  const Clock& clock_;
  ComputePool& io_;
  Nanos next_ns_ = 0;
  std::uint64_t queued_ = ~std::uint64_t{0};
  bool final_written_ = false;
  bool withdrawn_ = false;  // removed since our last write
};

// Restores the journal into the SA (applied by its state core before it
// answers) when it vouches for the clients' state: written at most fresh_ms
// ago (by a master running until then) for this fabric (`fabric`: our SM
// port and subnet prefix) and read whole. A bad, stale or foreign file is
// logged with the reason and ignored (a stale one is not read). Returns
// whether it was restored.
bool restore_journal(const SaSection& c, sa::SaServer& sa, Nanos now_ns, const sa::FabricIdentity& fabric);

// The persisted epoch's file: `sa-epoch` beside the journal (none without a
// journal, or with sa.epoch_restore off).
std::string epoch_file_path(const NodeConfig& cfg);

// The last run's epoch, ready to publish before the engine starts, or null
// (the reason logged): the file missing, older than sa.epoch_fresh_ms,
// damaged, written for another SM port or subnet prefix, or holding a LID
// that guid2lid does not give its port (the subnet was numbered since: the
// epoch's answers would not be the fabric's).
std::shared_ptr<sa::Snapshot> restore_epoch(const NodeConfig& cfg, const sa::FabricIdentity& fabric);

// restore_epoch() in two steps, so the file is read while the transport
// opens (the fabric identity needs the port): what load_epoch() read, and
// vouch_epoch(), which checks it against the fabric and guid2lid and logs.
struct EpochLoad {
  std::string path;
  std::shared_ptr<sa::Snapshot> snap;  // null: refused (`refusal`) or none configured (empty path)
  sa::FabricIdentity written_for;
  std::string refusal;
  bool damaged = false;
  std::int64_t age_ms = 0;
  double read_ms = 0;
};
EpochLoad load_epoch(const NodeConfig& cfg);
std::shared_ptr<sa::Snapshot> vouch_epoch(const NodeConfig& cfg, EpochLoad load, const sa::FabricIdentity& fabric);

// The master writes each epoch it publishes (and an MFT view that changed
// inside one) through the I/O pool, at most every interval_ms, and touches
// the file's time at that pace while no heavy sweep runs: the time says the
// fabric was as the epoch holds until then (the freshness a restart checks).
// A standby removes the file. The restored epoch (`restored`, 0: none) is
// taken back from the SA if this SM turns out not to be the master.
class EpochWriter final : public Poller {
 public:
  EpochWriter(std::string path, const sa::FabricIdentity& fabric, std::uint32_t interval_ms, sa::SnapshotStore& store,
              sm::SubnetManager& sm, ComputePool& io, std::uint64_t restored)
      : path_(std::move(path)),
        fabric_(fabric),
        interval_ns_(Nanos{interval_ms} * kNanosPerMilli),
        store_(store),
        sm_(sm),
        io_(io),
        restored_(restored) {}
  std::size_t poll(Nanos now_ns) noexcept override;
  std::uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }

 private:
  void write(std::shared_ptr<const sa::Snapshot> snap) noexcept;
  void touch() noexcept;
  void remove() noexcept;

  std::string path_;
  sa::FabricIdentity fabric_;
  Nanos interval_ns_;
  sa::SnapshotStore& store_;
  sm::SubnetManager& sm_;
  ComputePool& io_;
  std::uint64_t restored_;
  Nanos next_ns_ = 0;
  std::uint64_t queued_epoch_ = 0;
  std::shared_ptr<const std::vector<sa::SwitchMft>> queued_mfts_;
  std::size_t queued_tables_ = 0;  // the epoch's port-table version queued
  bool removed_ = false;
  std::atomic<bool> current_{false};  // the file holds the last epoch queued (the I/O thread sets it)
  std::atomic<std::uint64_t> written_{0};
};

}  // namespace madengine::node
