// The SA's state core (see core_worker.hpp): service leases, traps 64/65
// of the store's epoch changes, forwarded notices, Reports with retries, and the
// images and partition groups other threads leave for it.
#include <cstring>
#include <mutex>

#include "sa/server/core_worker.hpp"

namespace madengine::sa {

std::size_t SaServer::CoreWorker::state_poll(Nanos now_ns) noexcept {
  std::size_t work = txn_->poll(now_ns);
  try {
    if (const std::size_t n = server_.services_.expire(now_ns)) {
      bump(counters_.lease_expired, n);
      server_.bump_state_generation();
      ++work;
    }
    if (server_.store_.epoch() != targets_epoch_) {
      targets_epoch_ = server_.store_.epoch();
      if (const auto snap = server_.store_.current()) refresh_report_targets(*snap);
    }
    if (server_.epoch_feed_->pending()) work += report_epoch_changes();
    if (server_.notices_pending_.load(std::memory_order_acquire)) {  // pairs with the release in forward_notice
      std::vector<wire::Notice> pending;
      {
        std::lock_guard lock(server_.notices_mu_);
        pending.swap(server_.notices_);
        server_.notices_pending_.store(false, std::memory_order_relaxed);
      }
      for (const auto& n : pending) report(n);
      work += pending.size();
    }
    const std::uint64_t g = server_.groups_.generation();
    if (g != mc_generation_) {
      mc_generation_ = g;
      server_.notify_mcast_change();
      ++work;
    }
  } catch (...) {
    // Out of memory in the bookkeeping: try again next poll.
  }
  return work;
}

std::size_t SaServer::CoreWorker::apply_partition_groups() {
  std::optional<std::vector<wire::McMemberRecord>> g;
  {
    std::lock_guard lock(server_.partition_groups_mu_);
    g.swap(server_.partition_groups_);
    server_.partition_groups_pending_.store(false, std::memory_order_relaxed);
  }
  if (!g) return 0;
  const std::uint64_t before = server_.groups_.generation();
  server_.groups_.set_well_known(*g);
  if (server_.groups_.generation() != before) server_.bump_state_generation();
  return 1;
}

std::size_t SaServer::CoreWorker::apply_restore() {
  std::optional<SaStateImage> img;
  {
    std::lock_guard lock(server_.restore_mu_);
    img.swap(server_.restore_image_);
    server_.restore_pending_.store(false, std::memory_order_relaxed);
  }
  if (!img) return 0;
  apply(std::move(*img), server_.services_, server_.groups_, server_.subs_);  // invalid groups are dropped
  if (const auto snap = server_.store_.current()) refresh_report_targets(*snap);
  server_.bump_state_generation();
  return 1;
}

void SaServer::CoreWorker::refresh_report_targets(const Snapshot& snap) {
  const auto v = server_.subs_.view();
  std::vector<Subscription> next;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Subscription& s = (*v)[i];
    const auto it = snap.by_port_guid.find(s.subscriber.guid.get());
    if (it == snap.by_port_guid.end() || !snap.local_prefix(s.subscriber.prefix.get())) continue;
    const std::uint16_t lid = snap.fabric.lid_of(it->second);
    if (lid == 0 || lid == s.addr.lid) continue;
    if (next.empty()) next.assign(v->begin(), v->end());
    next[i].addr.lid = lid;
  }
  if (next.empty()) return;
  server_.subs_.restore(std::move(next));
  server_.bump_state_generation();
}

std::size_t SaServer::CoreWorker::report_epoch_changes() {
  std::size_t n = 0;
  for (const auto& change : server_.epoch_feed_->take()) {
    for (const wire::Notice& trap : change->gid_traps) report(trap);
    n += change->gid_traps.size() + 1;
  }
  return n;
}

void SaServer::CoreWorker::report(const wire::Notice& n) noexcept {
  const auto subs = server_.subs_.view();
  for (const auto& s : *subs) {
    if (!InformStore::covers(s.info, n.trap_number.get(), static_cast<std::uint8_t>(n.type()),
                             n.producer_type(), n.issuer_lid.get()))
      continue;
    MadBuf b;
    auto& sa = b.as<wire::SaMad>();
    sa = wire::SaMad{};
    sa.hdr.base_version = 1;
    sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
    sa.hdr.class_version = wire::kSaClassVersion;
    sa.hdr.method = m::kReport;
    sa.hdr.attr_id = wire::be16::from(a::kNotice);
    std::memcpy(sa.data.data(), &n, sizeof(n));
    b.addr = s.addr;
    if (b.addr.qkey == 0) b.addr.qkey = kGsiQkey;
    if (b.addr.remote_qpn == 0) b.addr.remote_qpn = 1;
    if (txn_->request(b, cfg_.report, &CoreWorker::on_report_done, this) == TxnStatus::kOk)
      bump(counters_.reports_sent);
    else
      bump(counters_.reports_failed);
  }
}

void SaServer::CoreWorker::on_report_done(void* user, const TxnResult& r) noexcept {
  auto* self = static_cast<CoreWorker*>(user);
  bump(r.status == TxnStatus::kOk ? self->counters_.reports_acked : self->counters_.reports_failed);
}

}  // namespace madengine::sa
