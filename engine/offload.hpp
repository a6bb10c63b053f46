// Awaiting work on a ComputePool from a core's task: `R r = co_await
// offload(pool, mailbox, fn)` runs fn() on a pool thread while the core goes
// on polling (the SA answers, SMInfo is answered), and resumes the task on
// its own core with fn's result. The mailbox is the core's Poller that hears
// finished jobs; its owner closes it before destroying its scheduler.
//
// A job owns what it touches (capture by value or shared_ptr): if its task
// is cancelled or destroyed meanwhile, the job still finishes, and its
// result is dropped.
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/compute_pool.hpp"
#include "engine/core.hpp"
#include "engine/poller.hpp"
#include "engine/task.hpp"

namespace madengine {

namespace detail {

// What a finished job hands back to its core: the task to resume.
struct OffloadWaiter {
  TaskContext* ctx = nullptr;
  std::coroutine_handle<> h{};
  bool abandoned = false;  // core only: the task was cancelled while the job ran
};

}  // namespace detail

class OffloadMailbox final : public Poller {
 public:
  // Finished jobs wake `core` (its eventfd) so a blocked core resumes at once.
  explicit OffloadMailbox(Core& core) noexcept : core_(&core) {}
  ~OffloadMailbox() override { close(); }
  OffloadMailbox(const OffloadMailbox&) = delete;
  OffloadMailbox& operator=(const OffloadMailbox&) = delete;

  // No job is delivered after this (any thread; its owner calls it before
  // the scheduler whose tasks wait here goes away).
  void close() noexcept {
    std::lock_guard lock(mu_);
    closed_ = true;
    done_.clear();
  }
  // A pool thread: the job of `w` ended.
  void complete(std::shared_ptr<detail::OffloadWaiter> w) noexcept {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      try {
        done_.push_back(std::move(w));
      } catch (...) {
        return;  // out of memory: the task stays suspended until its owner goes
      }
      has_done_.store(true, std::memory_order_release);
      core_->wake();  // under the lock: close() cannot finish while the core is being woken
    }
  }

  std::size_t poll(Nanos) noexcept override {
    if (!has_done_.load(std::memory_order_acquire)) return 0;  // pairs with complete()
    std::vector<std::shared_ptr<detail::OffloadWaiter>> ready;
    {
      std::lock_guard lock(mu_);
      ready.swap(done_);
      has_done_.store(false, std::memory_order_relaxed);
    }
    for (const auto& w : ready)
      if (!w->abandoned) detail::post_resume(*w->ctx, w->h);
    return ready.size();
  }
  Nanos next_deadline_ns() const noexcept override {
    return has_done_.load(std::memory_order_acquire) ? 0 : -1;
  }

 private:
  Core* core_;
  std::mutex mu_;
  std::vector<std::shared_ptr<detail::OffloadWaiter>> done_;  // guarded by mu_
  std::atomic<bool> has_done_{false};
  bool closed_ = false;  // guarded by mu_
};

// The result of an offloaded job: a value, or why there is none.
template <typename R>
struct Offloaded {
  std::optional<R> value;  // empty: cancelled, or the job threw (see error)
  bool cancelled = false;
  std::exception_ptr error;
  explicit operator bool() const noexcept { return value.has_value(); }
};

template <typename R>
class OffloadAwaiter : detail::CancelHook {
 public:
  template <typename Fn>
  OffloadAwaiter(ComputePool& pool, std::shared_ptr<OffloadMailbox> box, Fn&& fn)
      : pool_(&pool), box_(std::move(box)), state_(std::make_shared<State>()) {
    state_->fn = std::forward<Fn>(fn);
    cancel_fn = &OffloadAwaiter::cancel;
  }

  // Inline pools (and a full queue) run the job here: no suspension.
  bool await_ready() noexcept {
    if (!pool_->inline_mode()) return false;
    run(*state_);
    return true;
  }
  template <typename P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    detail::TaskContext* ctx = detail::context_of(h);
    if (ctx == nullptr || ctx->cancel_requested) {
      state_->cancelled = true;
      return false;
    }
    state_->waiter = std::make_shared<detail::OffloadWaiter>();
    state_->waiter->ctx = ctx;
    state_->waiter->h = h;
    bool queued = false;
    try {
      queued = pool_->submit([st = state_, box = box_] {
        run(*st);
        box->complete(st->waiter);
      });
    } catch (...) {
      queued = false;
    }
    if (!queued) {
      run(*state_);  // the queue is full: correct late rather than never
      return false;
    }
    ctx->hook = this;
    ctx->resume_point = h;
    return true;
  }
  Offloaded<R> await_resume() noexcept {
    Offloaded<R> out;
    out.cancelled = state_->cancelled;
    out.error = state_->error;
    if (!out.cancelled) out.value = std::move(state_->value);
    return out;
  }

 private:
  struct State {
    std::function<R()> fn;
    std::optional<R> value;
    std::exception_ptr error;
    bool cancelled = false;
    std::shared_ptr<detail::OffloadWaiter> waiter;
  };
  static void run(State& st) noexcept {
    try {
      st.value.emplace(st.fn());
    } catch (...) {
      st.error = std::current_exception();
    }
    st.fn = nullptr;  // what the job captured goes now, on the thread that ran it
  }
  static void cancel(detail::CancelHook* hook) noexcept {
    auto* self = static_cast<OffloadAwaiter*>(hook);
    self->state_->cancelled = true;
    if (self->state_->waiter) self->state_->waiter->abandoned = true;
  }

  ComputePool* pool_;
  std::shared_ptr<OffloadMailbox> box_;
  std::shared_ptr<State> state_;
};

// `fn` runs on `pool`; the awaiting task resumes on the mailbox's core.
template <typename Fn, typename R = std::invoke_result_t<Fn&>>
OffloadAwaiter<R> offload(ComputePool& pool, std::shared_ptr<OffloadMailbox> box, Fn&& fn) {
  return OffloadAwaiter<R>(pool, std::move(box), std::forward<Fn>(fn));
}

}  // namespace madengine
