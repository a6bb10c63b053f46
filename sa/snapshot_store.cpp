// Publication of epochs and their changes (see snapshot.hpp).
#include <algorithm>

#include "sa/snapshot.hpp"

namespace madengine::sa {

std::vector<std::shared_ptr<const EpochChange>> EpochFeed::take() {
  std::vector<std::shared_ptr<const EpochChange>> out;
  std::lock_guard lock(mu_);
  out.assign(q_.begin(), q_.end());
  q_.clear();
  pending_.store(false, std::memory_order_relaxed);
  return out;
}

void EpochFeed::push(const std::shared_ptr<const EpochChange>& c) noexcept {
  {
    std::lock_guard lock(mu_);
    try {
      if (q_.size() >= max_) {
        q_.pop_front();
        dropped_.fetch_add(1, std::memory_order_relaxed);
      }
      q_.push_back(c);
    } catch (...) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  pending_.store(true, std::memory_order_release);  // pairs with the acquire in pending()
}

std::shared_ptr<const EpochChange> SnapshotStore::publish(std::shared_ptr<const Snapshot> s, PreparedChange prepared,
                                                          std::shared_ptr<const Snapshot>* replaced) noexcept {
  std::shared_ptr<const Snapshot> before = current();
  const std::uint64_t e = s ? s->epoch : 0;
  std::shared_ptr<const EpochChange> change;
  if (s) {
    try {
      // Computed against the epoch still current (owner equality: an
      // expired base can never be the current one).
      const bool fits = prepared.computed && !prepared.base.owner_before(before) && !before.owner_before(prepared.base);
      EpochChange c = fits ? std::move(prepared.change) : diff_epochs(before.get(), *s);
      c.epoch = e;
      c.from_epoch = before ? before->epoch : 0;
      change = std::make_shared<const EpochChange>(std::move(c));
    } catch (...) {
      // Out of memory: the epoch is still published; its change is lost.
    }
  }
  current_.store(std::move(s), std::memory_order_release);  // pairs with the acquire in current()
  epoch_.store(e, std::memory_order_release);
  if (change) {
    // After the swap: a consumer that reads current() on a change sees its epoch.
    std::lock_guard lock(feeds_mu_);
    std::erase_if(feeds_, [&](const std::weak_ptr<EpochFeed>& w) {
      const std::shared_ptr<EpochFeed> f = w.lock();
      if (f) f->push(change);
      return !f;
    });
  }
  if (replaced != nullptr) *replaced = std::move(before);
  return change;
}

std::shared_ptr<EpochFeed> SnapshotStore::subscribe(std::size_t max) const {
  auto f = std::make_shared<EpochFeed>(std::max<std::size_t>(1, max));
  std::lock_guard lock(feeds_mu_);
  feeds_.push_back(f);
  return f;
}

}  // namespace madengine::sa
