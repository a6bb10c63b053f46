// Task<T>: the coroutine type long-lived SM logic (sweeps, SMInfo polling,
// handover) is written in. Tasks start lazily, await each other with
// symmetric transfer and return results as values; a root task is spawned
// onto a Scheduler (scheduler.hpp), which owns its frame and its cancellation.
#pragma once

#include <cassert>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace madengine {

class Scheduler;

// How an await that can be interrupted ended. Converts to true only for kOk.
// Write `if (const Wake w = co_await sched.sleep_for(d); !w) co_return;` or
// await in a statement of its own: g++ 12.2 miscompiles a co_await placed
// directly in an if/while condition (the coroutine body is skipped; see
// tests/engine/scheduler_test.cpp, GccAwaitInConditionWorkaround).
enum class WakeStatus : std::uint8_t { kOk, kCancelled };

struct Wake {
  WakeStatus status = WakeStatus::kOk;
  explicit operator bool() const noexcept { return status == WakeStatus::kOk; }
  bool cancelled() const noexcept { return status == WakeStatus::kCancelled; }
};

namespace detail {

// What the current await of a task registers so cancel() can interrupt it:
// cancel_fn unhooks the waiter from whatever it waits on (timer, transaction)
// and stores a cancelled result; the scheduler then resumes the task.
struct CancelHook {
  void (*cancel_fn)(CancelHook* self) noexcept = nullptr;
};

// Per spawned (root) task, owned by the Scheduler's slot table. Every
// coroutine in the chain below the root shares its root's context.
struct TaskContext {
  Scheduler* sched = nullptr;
  std::coroutine_handle<> root{};
  std::coroutine_handle<> resume_point{};  // innermost suspended coroutine
  CancelHook* hook = nullptr;              // current interruptible await, if any
  std::uint32_t index = 0;
  std::uint32_t generation = 0;
  bool cancel_requested = false;  // sticky: every later await reports kCancelled
  bool queued = false;            // on the ready queue
};

// Resumes the task of `ctx` from the scheduler's ready queue (scheduler.cpp).
// Used by awaiters that complete outside the task (timers, responses).
void post_resume(TaskContext& ctx, std::coroutine_handle<> h) noexcept;
// Called from a root task's final suspend: releases the slot and the frame.
void root_done(TaskContext& ctx) noexcept;

struct PromiseBase {
  TaskContext* ctx = nullptr;
  std::coroutine_handle<> continuation{};

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.continuation) return p.continuation;  // symmetric transfer to the awaiter
      if (p.ctx != nullptr && p.ctx->root == h) root_done(*p.ctx);  // destroys h
      return std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }

  // Results are values; an exception escaping a task is a programmer error.
  void unhandled_exception() noexcept { std::terminate(); }
};

// The context of the coroutine `h` if its promise carries one (every Task does).
template <typename P>
TaskContext* context_of(std::coroutine_handle<P> h) noexcept {
  if constexpr (std::is_base_of_v<PromiseBase, P>) {
    return h.promise().ctx;
  } else {
    return nullptr;
  }
}

}  // namespace detail

template <typename T = void>
class [[nodiscard]] Task;

namespace detail {

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
    requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    value.emplace(std::forward<U>(v));
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
};

}  // namespace detail

template <typename T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() noexcept = default;
  explicit Task(Handle h) noexcept : h_(h) {}
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const noexcept { return static_cast<bool>(h_); }
  bool done() const noexcept { return h_ && h_.done(); }
  // Gives up ownership of the frame (the Scheduler takes it on spawn).
  Handle release() noexcept { return std::exchange(h_, {}); }

  // Awaiting a task starts it; it inherits the awaiter's context (scheduler,
  // cancellation) and resumes the awaiter by symmetric transfer when done.
  // The awaiting side keeps owning the frame until the Task object dies.
  bool await_ready() const noexcept { return !h_ || h_.done(); }
  template <typename P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) noexcept {
    h_.promise().continuation = caller;
    h_.promise().ctx = detail::context_of(caller);
    return h_;
  }
  T await_resume() noexcept {
    assert(h_ && h_.done());
    if constexpr (!std::is_void_v<T>) {
      return std::move(*h_.promise().value);
    }
  }

 private:
  void reset() noexcept {
    if (h_) h_.destroy();  // destroys a suspended chain below it too (it owns its awaited tasks)
    h_ = {};
  }
  Handle h_{};
};

namespace detail {
template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>{std::coroutine_handle<Promise<T>>::from_promise(*this)};
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>{std::coroutine_handle<Promise<void>>::from_promise(*this)};
}
}  // namespace detail

}  // namespace madengine
