// The node's state files (see state_files.hpp): the journal's restore and
// the persisted epoch's writer and restore.
#include "node/state_files.hpp"

#include <fmt/format.h>

#include <chrono>

#include "sa/state/epoch_file.hpp"
#include "sm/lids/guid2lid_file.hpp"
#include "sm/lids/lid_assign.hpp"

namespace madengine::node {

bool restore_journal(const SaSection& c, sa::SaServer& sa, Nanos now_ns, const sa::FabricIdentity& fabric) {
  if (c.journal.empty()) return false;
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(c.journal, ec);
  if (ec) {
    spdlog::info("sa journal {}: none yet", c.journal);
    return false;
  }
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(std::filesystem::file_time_type::clock::now() - written);
  if (age.count() < 0 || age.count() > static_cast<std::int64_t>(c.journal_fresh_ms)) {
    // Clients may have changed their registrations since (another master, or
    // changes this one did not live to journal): start clean and ask them.
    spdlog::info("sa journal {}: written {} ms ago (more than {} ms): stale, ignored; clients will be asked to reregister",
                 c.journal, age.count(), c.journal_fresh_ms);
    return false;
  }
  // Leases were written as time left then: they ran on while the daemon was down.
  const Nanos written_ns = now_ns - Nanos{age.count()} * kNanosPerMilli;
  sa::SaStateImage img;
  sa::FabricIdentity written_for;
  bool found = false;
  std::string err;
  if (!sa::read_journal_file(c.journal, written_ns, img, found, err, &written_for) || !found) {
    spdlog::warn("sa journal {}: ignored: {}; clients will be asked to reregister", c.journal,
                 found ? err : std::string("it vanished while read"));
    return false;
  }
  // Another port's or fabric's records would be served, and vouched for, as ours.
  if (!written_for.known()) {
    spdlog::warn("sa journal {}: not restored: it does not name the fabric it describes (written by an earlier "
                 "version); this is {}; clients will be asked to reregister",
                 c.journal, sa::to_string(fabric));
    return false;
  }
  if (written_for != fabric) {
    spdlog::warn("sa journal {}: not restored: written for {}, this is {}; clients will be asked to reregister",
                 c.journal, sa::to_string(written_for), sa::to_string(fabric));
    return false;
  }
  spdlog::info("sa journal {}: {} services, {} groups, {} subscriptions restored; written {} ms ago: fresh, clients "
               "keep their registrations",
               c.journal, img.services.size(), img.groups.size(), img.subscriptions.size(), age.count());
  sa.restore_state(std::move(img));
  return true;
}


std::string epoch_file_path(const NodeConfig& cfg) {
  if (!cfg.sa.epoch_restore || cfg.sa.journal.empty()) return {};
  return (std::filesystem::path(cfg.sa.journal).parent_path() / "sa-epoch").string();
}

namespace {

// The first end port whose LID guid2lid does not give it ("" when every one agrees).
std::string lid_disagreement(const sa::Snapshot& snap, const sm::Guid2Lid& map) {
  for (const fabric::EndPort e : snap.fabric.end_ports()) {
    const std::uint64_t guid = sm::end_port_guid(snap.fabric, e);
    const std::uint16_t lid = snap.fabric.lid_of(e);
    const auto it = map.find(guid);
    if (it == map.end())
      return fmt::format("port 0x{:016x} (LID {}) is not in guid2lid", guid, lid);
    if (it->second.min_lid != lid)
      return fmt::format("port 0x{:016x} has LID {} in the epoch, {} in guid2lid", guid, lid, it->second.min_lid);
  }
  return {};
}

}  // namespace

EpochLoad load_epoch(const NodeConfig& cfg) {
  EpochLoad l;
  l.path = epoch_file_path(cfg);
  if (l.path.empty()) return l;
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(l.path, ec);
  if (ec) {
    l.refusal = "none yet";
    return l;
  }
  l.age_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::filesystem::file_time_type::clock::now() - written).count();
  if (l.age_ms < 0 || l.age_ms > static_cast<std::int64_t>(cfg.sa.epoch_fresh_ms)) {
    l.refusal = fmt::format("not published: stale (the master last vouched for it {} ms ago, more than "
                            "sa.epoch_fresh_ms = {})", l.age_ms, cfg.sa.epoch_fresh_ms);
    return l;
  }
  auto snap = std::make_shared<sa::Snapshot>();
  bool found = false;
  std::string err;
  if (!sa::read_epoch_file(l.path, *snap, l.written_for, found, err) || !found) {
    l.refusal = "not published: " + (found ? err : std::string("it vanished while read"));
    l.damaged = true;
    return l;
  }
  l.snap = std::move(snap);
  l.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return l;
}

std::shared_ptr<sa::Snapshot> restore_epoch(const NodeConfig& cfg, const sa::FabricIdentity& fabric) {
  return vouch_epoch(cfg, load_epoch(cfg), fabric);
}

std::shared_ptr<sa::Snapshot> vouch_epoch(const NodeConfig& cfg, EpochLoad l, const sa::FabricIdentity& fabric) {
  const std::string& path = l.path;
  if (path.empty()) return nullptr;
  if (l.snap == nullptr) {
    if (l.damaged) spdlog::warn("sa epoch {}: {}; the SA answers after the first sweep", path, l.refusal);
    else spdlog::info("sa epoch {}: {}; the SA answers after the first sweep", path, l.refusal);
    return nullptr;
  }
  const std::shared_ptr<sa::Snapshot> snap = std::move(l.snap);
  const sa::FabricIdentity& written_for = l.written_for;
  const auto age = std::chrono::milliseconds(l.age_ms);
  const auto t1 = std::chrono::steady_clock::now();
  if (written_for != fabric) {
    spdlog::warn("sa epoch {}: not published: written for {}, this is {}; the SA answers after the first sweep", path,
                 sa::to_string(written_for), sa::to_string(fabric));
    return nullptr;
  }
  // LIDs are what a persisted answer cannot check against the fabric before
  // the first sweep: the SM numbers from guid2lid, so the two must agree.
  sm::Guid2Lid map;
  sm::Guid2LidError gerr;
  if (cfg.sm.guid2lid.empty() || !sm::load_guid2lid(cfg.sm.guid2lid, map, gerr) || map.empty()) {
    spdlog::warn("sa epoch {}: not published: no guid2lid to vouch for its LIDs ({}); the SA answers after the "
                 "first sweep", path, cfg.sm.guid2lid.empty() ? std::string("none configured") : cfg.sm.guid2lid);
    return nullptr;
  }
  if (const std::string why = lid_disagreement(*snap, map); !why.empty()) {
    spdlog::warn("sa epoch {}: not published: stale: {} (the subnet was numbered since); the SA answers after the "
                 "first sweep", path, why);
    return nullptr;
  }
  const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  spdlog::info("sa epoch {}: epoch {} of the last run published ({} nodes, top LID {}; the master vouched for it {} "
               "ms ago; read and indexed in {:.1f} ms, LIDs checked against guid2lid in {:.1f} ms): the SA answers "
               "from it until the first sweep publishes",
               path, snap->epoch, snap->fabric.nodes.size(), snap->top_lid, age.count(), l.read_ms,
               ms(t1, std::chrono::steady_clock::now()));
  return snap;
}

std::size_t EpochWriter::poll(Nanos now_ns) noexcept {
  if (now_ns < next_ns_) return 0;
  next_ns_ = now_ns + interval_ns_;
  const sm::SmStatus st = sm_.status();
  if (restored_ != 0 && (st.state == wire::SmState::kStandby || st.sweeps_not_programmed != 0)) {
    // Another master's SA answers for the subnet: ours must not, from our last run's epoch.
    if (store_.withdraw(restored_))
      spdlog::info("sa epoch {}: the last run's epoch {} withdrawn: this SM is not the master", path_, restored_);
    restored_ = 0;
  }
  if (st.state == wire::SmState::kStandby) {
    if (!removed_) remove();
    return removed_ ? 1 : 0;
  }
  if (st.state != wire::SmState::kMaster) return 0;
  const std::shared_ptr<const sa::Snapshot> snap = store_.current();
  if (snap == nullptr || snap->epoch == restored_) return 0;  // nothing of this run's own yet
  if (snap->epoch != queued_epoch_ || snap->mfts->load() != queued_mfts_ ||
      snap->port_tables->version() != queued_tables_) {
    write(snap);
    return 1;
  }
  if (sm_.sweep_started_ns() < 0 && current_.load(std::memory_order_acquire)) touch();
  return 0;
}

void EpochWriter::write(std::shared_ptr<const sa::Snapshot> snap) noexcept {
  try {
    const std::uint64_t epoch = snap->epoch;
    auto mfts = snap->mfts->load();
    const std::size_t tables = snap->port_tables->version();
    current_.store(false, std::memory_order_release);
    const bool queued = io_.submit([this, snap = std::move(snap)] {
      const auto t0 = std::chrono::steady_clock::now();
      std::string err;
      if (sa::write_epoch_file(path_, *snap, fabric_, err)) {
        const auto n = written_.fetch_add(1, std::memory_order_relaxed);
        current_.store(true, std::memory_order_release);  // pairs with the acquire in poll()
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (n == 0) spdlog::info("sa epoch {}: epoch {} written ({:.1f} ms); later epochs replace it", path_, snap->epoch, ms);
        else spdlog::debug("sa epoch {}: epoch {} written ({:.1f} ms)", path_, snap->epoch, ms);
      } else {
        spdlog::warn("sa epoch {}: not written: {}", path_, err);
      }
    });
    if (!queued) return;  // the I/O queue is full: tried again at the next poll
    queued_epoch_ = epoch;
    queued_mfts_ = std::move(mfts);
    queued_tables_ = tables;
    removed_ = false;
  } catch (const std::exception& e) {
    spdlog::warn("sa epoch {}: not written: {}", path_, e.what());
  }
}

void EpochWriter::touch() noexcept {
  try {
    io_.submit([this] {
      if (!current_.load(std::memory_order_acquire)) return;  // a newer epoch is on its way
      std::error_code ec;
      std::filesystem::last_write_time(path_, std::filesystem::file_time_type::clock::now(), ec);
    });
  } catch (const std::exception&) {
    // out of memory: the next poll tries again
  }
}

void EpochWriter::remove() noexcept {
  try {
    if (!io_.submit([path = path_] {
          std::error_code ec;
          if (std::filesystem::remove(path, ec)) spdlog::info("sa epoch {}: removed: this SM stands by", path);
        }))
      return;
    removed_ = true;
    queued_epoch_ = 0;
    queued_mfts_.reset();
    queued_tables_ = 0;
    current_.store(false, std::memory_order_release);
  } catch (const std::exception&) {
    // tried again at the next poll
  }
}

}  // namespace madengine::node
