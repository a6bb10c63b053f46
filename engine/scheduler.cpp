// The per-core task scheduler and its deadline heap (see scheduler.hpp).
// Frames are resumed only from poll(); anything that completes an await from
// outside (a timer, a response, a cancel) goes through the ready queue, so a
// task never runs inside another component's call stack.
#include "engine/scheduler.hpp"

#include <utility>

namespace madengine {

// ---- DeadlineHeap ----------------------------------------------------------

DeadlineHeap::DeadlineHeap(std::uint32_t capacity) : entries_(capacity), pos_(capacity, kAbsent) {}

void DeadlineHeap::place(std::uint32_t i, const Entry& e) noexcept {
  entries_[i] = e;
  pos_[e.id] = i;
}

void DeadlineHeap::sift_up(std::uint32_t i) noexcept {
  const Entry e = entries_[i];
  while (i > 0) {
    const std::uint32_t parent = (i - 1) / 2;
    if (!before(e, entries_[parent])) break;
    place(i, entries_[parent]);
    i = parent;
  }
  place(i, e);
}

void DeadlineHeap::sift_down(std::uint32_t i) noexcept {
  const Entry e = entries_[i];
  for (;;) {
    std::uint32_t child = 2 * i + 1;
    if (child >= size_) break;
    if (child + 1 < size_ && before(entries_[child + 1], entries_[child])) ++child;
    if (!before(entries_[child], e)) break;
    place(i, entries_[child]);
    i = child;
  }
  place(i, e);
}

void DeadlineHeap::push(std::uint32_t id, Nanos deadline_ns) noexcept {
  assert(id < pos_.size());
  if (contains(id)) remove(id);
  const std::uint32_t i = size_++;
  place(i, Entry{deadline_ns, next_seq_++, id});
  sift_up(i);
}

void DeadlineHeap::remove(std::uint32_t id) noexcept {
  assert(id < pos_.size() && contains(id));
  const std::uint32_t i = pos_[id];
  pos_[id] = kAbsent;
  const std::uint32_t last = --size_;
  if (i == last) return;
  place(i, entries_[last]);
  // The moved entry may belong above or below its new place.
  if (i > 0 && before(entries_[i], entries_[(i - 1) / 2])) {
    sift_up(i);
  } else {
    sift_down(i);
  }
}

void DeadlineHeap::clear() noexcept {
  for (std::uint32_t i = 0; i < size_; ++i) pos_[entries_[i].id] = kAbsent;
  size_ = 0;
}

// ---- Scheduler -------------------------------------------------------------

Scheduler::Scheduler(const Clock& clock, SchedulerConfig cfg)
    : clock_(clock), slots_(cfg.tasks_max), ready_(cfg.tasks_max), timers_(cfg.tasks_max), free_head_(0) {
  assert(cfg.tasks_max > 0);
  for (std::uint32_t i = 0; i < cfg.tasks_max; ++i) {
    slots_[i].ctx.sched = this;
    slots_[i].ctx.index = i;
    slots_[i].next_free = i + 1;  // == tasks_max marks the end
  }
}

Scheduler::~Scheduler() {
  // Nothing may resume from here on: forget timers and the ready queue first,
  // then destroy each root frame (which destroys the tasks it awaits). Awaiters
  // registered with other components unhook themselves in their destructors.
  shutting_down_ = true;
  timers_.clear();
  ready_count_ = 0;
  for (Slot& s : slots_) {
    if (!s.live) continue;
    s.live = false;
    s.sleeper = nullptr;
    s.ctx.hook = nullptr;
    const std::coroutine_handle<> root = std::exchange(s.ctx.root, {});
    root.destroy();
  }
  live_ = 0;
}

TaskHandle Scheduler::spawn(Task<void> task) noexcept {
  auto h = task.release();
  if (!h) return {};
  if (free_head_ >= slots_.size()) {
    h.destroy();
    return {};
  }
  Slot& s = slots_[free_head_];
  free_head_ = s.next_free;
  s.live = true;
  s.sleeper = nullptr;
  s.ctx.root = h;
  s.ctx.hook = nullptr;
  s.ctx.cancel_requested = false;
  s.ctx.queued = false;
  h.promise().ctx = &s.ctx;
  ++live_;
  post(s.ctx, h);
  return TaskHandle{s.ctx.index, s.ctx.generation};
}

bool Scheduler::alive(TaskHandle h) const noexcept {
  return h.valid() && h.index < slots_.size() && slots_[h.index].live &&
         slots_[h.index].ctx.generation == h.generation;
}

bool Scheduler::cancel(TaskHandle h) noexcept {
  if (!alive(h)) return false;
  detail::TaskContext& ctx = slots_[h.index].ctx;
  ctx.cancel_requested = true;
  if (detail::CancelHook* hook = std::exchange(ctx.hook, nullptr)) {
    hook->cancel_fn(hook);  // unhooks the waiter and stores kCancelled in it
    post(ctx, ctx.resume_point);
  }
  return true;
}

bool Scheduler::wake(TaskHandle h) noexcept {
  if (!alive(h)) return false;
  Slot& s = slots_[h.index];
  if (s.sleeper == nullptr) return false;
  if (timers_.contains(h.index)) timers_.remove(h.index);
  s.sleeper = nullptr;
  s.ctx.hook = nullptr;
  post(s.ctx, s.ctx.resume_point);
  return true;
}

void Scheduler::post(detail::TaskContext& ctx, std::coroutine_handle<> h) noexcept {
  if (shutting_down_) return;
  assert(!ctx.queued && ready_count_ < ready_.size());
  ctx.resume_point = h;
  ctx.queued = true;
  const auto tail = static_cast<std::uint32_t>((ready_head_ + ready_count_) % ready_.size());
  ready_[tail] = ReadyEntry{ctx.index, ctx.generation};
  ++ready_count_;
}

void Scheduler::release(detail::TaskContext& ctx) noexcept {
  Slot& s = slots_[ctx.index];
  assert(s.live && !ctx.queued);
  if (timers_.contains(ctx.index)) timers_.remove(ctx.index);
  s.live = false;
  s.sleeper = nullptr;
  ctx.hook = nullptr;
  ++ctx.generation;  // stale handles and ready entries no longer match
  const std::coroutine_handle<> root = std::exchange(ctx.root, {});
  s.next_free = free_head_;
  free_head_ = ctx.index;
  --live_;
  root.destroy();
}

std::size_t Scheduler::poll(Nanos now_ns) noexcept {
  std::size_t work = 0;
  while (!timers_.empty() && timers_.top_deadline_ns() <= now_ns) {
    Slot& s = slots_[timers_.top_id()];
    timers_.remove(s.ctx.index);
    s.sleeper = nullptr;
    s.ctx.hook = nullptr;
    post(s.ctx, s.ctx.resume_point);
  }
  // Only what was ready when poll began: a task that yields runs again on the
  // next iteration, after the core has had a chance to do its I/O.
  for (std::uint32_t n = ready_count_; n > 0 && ready_count_ > 0; --n) {
    const ReadyEntry e = ready_[ready_head_];
    ready_head_ = static_cast<std::uint32_t>((ready_head_ + 1) % ready_.size());
    --ready_count_;
    Slot& s = slots_[e.index];
    if (!s.live || s.ctx.generation != e.generation) continue;
    s.ctx.queued = false;
    const std::coroutine_handle<> h = std::exchange(s.ctx.resume_point, {});
    ++work;
    h.resume();
  }
  return work;
}

bool Scheduler::SleepAwaiter::suspend(detail::TaskContext* ctx, std::coroutine_handle<> h) noexcept {
  if (ctx == nullptr || ctx->sched != sched_) {
    // Only tasks spawned on this scheduler can sleep on it.
    assert(!"sleep awaited outside a task of this scheduler");
    status_ = WakeStatus::kCancelled;
    return false;
  }
  if (ctx->cancel_requested) {
    status_ = WakeStatus::kCancelled;
    return false;
  }
  ctx_ = ctx;
  Slot& s = sched_->slots_[ctx->index];
  s.sleeper = this;
  ctx->hook = this;
  ctx->resume_point = h;
  sched_->timers_.push(ctx->index, deadline_ns_);
  return true;
}

void Scheduler::cancel_sleep(detail::CancelHook* hook) noexcept {
  auto* self = static_cast<SleepAwaiter*>(hook);
  Scheduler& sched = *self->sched_;
  Slot& s = sched.slots_[self->ctx_->index];
  if (sched.timers_.contains(s.ctx.index)) sched.timers_.remove(s.ctx.index);
  s.sleeper = nullptr;
  self->status_ = WakeStatus::kCancelled;
}

namespace detail {

void post_resume(TaskContext& ctx, std::coroutine_handle<> h) noexcept {
  ctx.hook = nullptr;
  ctx.sched->post(ctx, h);
}

void root_done(TaskContext& ctx) noexcept { ctx.sched->release(ctx); }

}  // namespace detail

}  // namespace madengine
