// The per-core task scheduler: a ready queue, timers and explicit
// cancellation for the coroutine tasks of task.hpp. It is a Poller run by
// its core's loop and is single-threaded by design (owner core only); every
// table is sized at construction, nothing allocates while tasks run.
#pragma once

#include <cassert>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "engine/poller.hpp"
#include "engine/task.hpp"

namespace madengine {

// A bounded min-heap of deadlines over ids 0..capacity-1 (each id at most
// once), with removal by id. Equal deadlines pop in insertion order, which is
// what makes timers (and transaction timeouts) deterministic.
class DeadlineHeap {
 public:
  explicit DeadlineHeap(std::uint32_t capacity);

  bool contains(std::uint32_t id) const noexcept { return pos_[id] != kAbsent; }
  bool empty() const noexcept { return size_ == 0; }
  std::uint32_t size() const noexcept { return size_; }
  // Inserts or re-arms `id`.
  void push(std::uint32_t id, Nanos deadline_ns) noexcept;
  void remove(std::uint32_t id) noexcept;
  std::uint32_t top_id() const noexcept { return entries_[0].id; }
  Nanos top_deadline_ns() const noexcept { return entries_[0].deadline_ns; }
  void clear() noexcept;

 private:
  struct Entry {
    Nanos deadline_ns;
    std::uint64_t seq;
    std::uint32_t id;
  };
  static constexpr std::uint32_t kAbsent = 0xffffffffu;
  static bool before(const Entry& a, const Entry& b) noexcept {
    return a.deadline_ns != b.deadline_ns ? a.deadline_ns < b.deadline_ns : a.seq < b.seq;
  }
  void place(std::uint32_t i, const Entry& e) noexcept;
  void sift_up(std::uint32_t i) noexcept;
  void sift_down(std::uint32_t i) noexcept;

  std::vector<Entry> entries_;
  std::vector<std::uint32_t> pos_;
  std::uint32_t size_ = 0;
  std::uint64_t next_seq_ = 0;
};

struct SchedulerConfig {
  std::uint32_t tasks_max = 1024;  // live spawned tasks (each can sleep on one timer)
};

// Names a spawned task; stays safe to use after the task ended (it just no
// longer refers to anything).
struct TaskHandle {
  std::uint32_t index = 0xffffffffu;
  std::uint32_t generation = 0;
  bool valid() const noexcept { return index != 0xffffffffu; }
  bool operator==(const TaskHandle&) const noexcept = default;
};

class Scheduler final : public Poller {
 public:
  Scheduler(const Clock& clock, SchedulerConfig cfg = {});
  ~Scheduler() override;  // destroys every suspended task frame, resuming none
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Takes the task over and queues it to start at the next poll. Returns an
  // invalid handle (and destroys the task unstarted) when tasks_max are live.
  TaskHandle spawn(Task<void> task) noexcept;

  // Makes the task's current await (or, if it is running or queued, its next
  // one) complete with kCancelled; all later awaits do too. The task is
  // expected to return; false if the handle no longer names a live task.
  bool cancel(TaskHandle h) noexcept;
  bool alive(TaskHandle h) const noexcept;
  // Ends the task's sleep now, as if its deadline had come (Wake kOk); false
  // if it is not sleeping on a timer (then nothing changes).
  bool wake(TaskHandle h) noexcept;
  std::uint32_t live_tasks() const noexcept { return live_; }

  // Runs due timers (in deadline order, ties in insertion order), then every
  // task that was ready when poll began. Returns the number of resumptions.
  std::size_t poll(Nanos now_ns) noexcept override;
  // Earliest timer deadline, or -1 if none (lets an idle core sleep). A
  // ready task is due now (0): an idle core must not block over it.
  Nanos next_deadline_ns() const noexcept override {
    if (ready_count_ != 0) return 0;
    return timers_.empty() ? -1 : timers_.top_deadline_ns();
  }
  bool has_ready() const noexcept { return ready_count_ != 0; }
  const Clock& clock() const noexcept { return clock_; }

  class SleepAwaiter;
  class YieldAwaiter;
  SleepAwaiter sleep_until(Nanos deadline_ns) noexcept;
  SleepAwaiter sleep_for(Nanos duration_ns) noexcept;
  YieldAwaiter yield() noexcept;

  class SleepAwaiter : detail::CancelHook {
   public:
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
      return suspend(detail::context_of(h), h);
    }
    Wake await_resume() const noexcept { return {status_}; }

   private:
    friend class Scheduler;
    SleepAwaiter(Scheduler& s, Nanos deadline_ns) noexcept : sched_(&s), deadline_ns_(deadline_ns) {
      cancel_fn = &Scheduler::cancel_sleep;
    }
    bool suspend(detail::TaskContext* ctx, std::coroutine_handle<> h) noexcept;
    Scheduler* sched_;
    Nanos deadline_ns_;
    detail::TaskContext* ctx_ = nullptr;
    WakeStatus status_ = WakeStatus::kOk;
  };

  class YieldAwaiter {
   public:
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
      ctx_ = detail::context_of(h);
      if (ctx_ == nullptr || ctx_->sched != sched_) return false;  // not ours to queue: no-op
      if (ctx_->cancel_requested) return false;                     // report at once
      sched_->post(*ctx_, h);
      return true;
    }
    Wake await_resume() const noexcept {
      return {ctx_ != nullptr && ctx_->cancel_requested ? WakeStatus::kCancelled : WakeStatus::kOk};
    }

   private:
    friend class Scheduler;
    explicit YieldAwaiter(Scheduler& s) noexcept : sched_(&s) {}
    Scheduler* sched_;
    detail::TaskContext* ctx_ = nullptr;
  };

 private:
  friend void detail::post_resume(detail::TaskContext&, std::coroutine_handle<>) noexcept;
  friend void detail::root_done(detail::TaskContext&) noexcept;

  struct Slot {
    detail::TaskContext ctx;
    SleepAwaiter* sleeper = nullptr;  // set while the task sleeps on a timer
    std::uint32_t next_free = 0;
    bool live = false;
  };
  struct ReadyEntry {
    std::uint32_t index;
    std::uint32_t generation;
  };

  void post(detail::TaskContext& ctx, std::coroutine_handle<> h) noexcept;
  void release(detail::TaskContext& ctx) noexcept;
  static void cancel_sleep(detail::CancelHook* hook) noexcept;

  const Clock& clock_;
  std::vector<Slot> slots_;
  std::vector<ReadyEntry> ready_;  // ring of tasks_max entries: a task is queued at most once
  std::uint32_t ready_head_ = 0;
  std::uint32_t ready_count_ = 0;
  DeadlineHeap timers_;
  std::uint32_t free_head_;
  std::uint32_t live_ = 0;
  bool shutting_down_ = false;
};

inline Scheduler::SleepAwaiter Scheduler::sleep_until(Nanos deadline_ns) noexcept {
  return SleepAwaiter(*this, deadline_ns);
}
inline Scheduler::SleepAwaiter Scheduler::sleep_for(Nanos duration_ns) noexcept {
  return SleepAwaiter(*this, clock_.now_ns() + duration_ns);
}
inline Scheduler::YieldAwaiter Scheduler::yield() noexcept { return YieldAwaiter(*this); }

}  // namespace madengine
