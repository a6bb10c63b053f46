// Work another thread hands to one core: an operator's command (set the SM's
// priority, list the SMs seen) or a liveness beat runs on the core that owns
// the state it touches, between MAD bursts, never beside it. The core pays
// one relaxed load per iteration while nothing is posted; the lock is taken
// only by posters and when something was posted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "engine/core.hpp"
#include "engine/poller.hpp"

namespace madengine {

class CommandMailbox final : public Poller {
 public:
  // Commands waiting at once; a post beyond it is refused (the caller says
  // "busy"), so a flood of requests cannot grow memory on the core.
  static constexpr std::size_t kCommandsMax = 64;

  // `core` null: the owner polls without a core to wake (pump mode).
  explicit CommandMailbox(Core* core) noexcept : core_(core) {}
  CommandMailbox(const CommandMailbox&) = delete;
  CommandMailbox& operator=(const CommandMailbox&) = delete;

  // Any thread. False when kCommandsMax are waiting or the mailbox is closed.
  bool post(std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      if (closed_ || queue_.size() >= kCommandsMax) return false;
      queue_.push_back(std::move(fn));
      pending_.store(true, std::memory_order_release);  // pairs with the acquire in poll()
    }
    if (core_ != nullptr) core_->wake();
    return true;
  }
  // No command runs after this; those waiting are dropped (their owners see
  // no answer and time out).
  void close() noexcept {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
  }
  // Commands that ran, for liveness checks from any thread.
  std::uint64_t ran() const noexcept { return ran_.load(std::memory_order_relaxed); }

  std::size_t poll(Nanos) noexcept override {
    if (!pending_.load(std::memory_order_acquire)) return 0;
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard lock(mu_);
      batch.swap(queue_);
      pending_.store(false, std::memory_order_relaxed);
    }
    for (auto& fn : batch) {
      try {
        fn();
      } catch (...) {
        // A command's failure is its poster's to report; the core goes on.
      }
      ran_.store(ran_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // single writer
    }
    return batch.size();
  }
  Nanos next_deadline_ns() const noexcept override { return pending_.load(std::memory_order_acquire) ? 0 : -1; }

 private:
  Core* core_;
  std::mutex mu_;
  std::vector<std::function<void()>> queue_;  // guarded by mu_
  bool closed_ = false;                       // guarded by mu_
  std::atomic<bool> pending_{false};
  std::atomic<std::uint64_t> ran_{0};
};

}  // namespace madengine
