// ComputePool (see compute_pool.hpp): a mutex-guarded job queue. Jobs are
// coarse (a routing pass, a journal write), so a lock per job costs nothing
// next to the job; the MAD fast path never touches this.
#include "engine/compute_pool.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include <spdlog/spdlog.h>

namespace madengine {

struct ComputePool::State final : ParallelExecutor {
  std::mutex mu;
  std::condition_variable work_cv;  // a job was queued, or stopping
  std::condition_variable idle_cv;  // a job ended
  std::deque<std::function<void()>> queue;
  std::size_t running = 0;
  std::size_t queue_max = 0;
  bool stopping = false;

  bool push(std::function<void()> job, bool front) {
    {
      std::lock_guard lock(mu);
      if (stopping || queue.size() >= queue_max) return false;
      if (front) queue.push_front(std::move(job));
      else queue.push_back(std::move(job));
    }
    work_cv.notify_one();
    return true;
  }

  // A parallel loop on this pool: helpers are queued ahead of other jobs;
  // whoever runs (the caller first) takes the next index until none is left.
  // The caller waits only for helpers that started before it finished, so
  // a helper that starts late finds nothing and touches only `loop`.
  void run_parallel(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn) override {
    struct Loop {
      std::atomic<std::size_t> next{0};
      std::mutex mu;
      std::condition_variable cv;
      unsigned active = 0;
      bool closed = false;
      const std::function<void(std::size_t)>* fn = nullptr;
      std::size_t count = 0;
    };
    auto loop = std::make_shared<Loop>();
    loop->fn = &fn;
    loop->count = count;
    auto drain = [](Loop& l) {
      for (std::size_t i = l.next.fetch_add(1, std::memory_order_relaxed); i < l.count;
           i = l.next.fetch_add(1, std::memory_order_relaxed))
        (*l.fn)(i);
    };
    for (unsigned h = 1; h < threads; ++h) {
      const bool queued = push(
          [loop, drain] {
            {
              std::lock_guard lock(loop->mu);
              if (loop->closed) return;
              ++loop->active;
            }
            drain(*loop);
            std::lock_guard lock(loop->mu);
            if (--loop->active == 0) loop->cv.notify_all();
          },
          true);
      if (!queued) break;  // full or stopping: the caller does the rest
    }
    drain(*loop);
    std::unique_lock lock(loop->mu);
    loop->closed = true;
    loop->cv.wait(lock, [&] { return loop->active == 0; });
  }
};

namespace {

void name_thread(const std::string& name) {
  const std::string n = name.substr(0, 15);  // the kernel's limit
  pthread_setname_np(pthread_self(), n.c_str());
}

void worker(std::shared_ptr<ComputePool::State> st, std::string name, int nice) {
  name_thread(name);
  {
    // A real-time policy inherited from the process (chrt) would make a
    // routing job or an epoch file's write outrank the MAD cores until it
    // ends: pool threads run under the normal policy (where the compute
    // pool's niceness applies), beside the cores, never ahead of them.
    int policy = 0;
    sched_param param{};
    if (pthread_getschedparam(pthread_self(), &policy, &param) == 0 && (policy == SCHED_FIFO || policy == SCHED_RR)) {
      param.sched_priority = 0;
      (void)pthread_setschedparam(pthread_self(), SCHED_OTHER, &param);
    }
  }
  if (nice != 0) {
    // Linux: a TID names one thread. Refusal (lower limits) is harmless.
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
    if (errno == 0) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), now + nice);
  }
  detail::t_parallel_executor = st.get();
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(st->mu);
      st->work_cv.wait(lock, [&] { return st->stopping || !st->queue.empty(); });
      if (st->queue.empty()) return;  // stopping and nothing left
      job = std::move(st->queue.front());
      st->queue.pop_front();
      ++st->running;
    }
    try {
      job();
    } catch (const std::exception& e) {
      spdlog::error("{}: a job failed: {}", name, e.what());
    } catch (...) {
      spdlog::error("{}: a job failed", name);
    }
    job = nullptr;  // what it captured goes before the pool hears it ended
    {
      std::lock_guard lock(st->mu);
      --st->running;
    }
    st->idle_cv.notify_all();
  }
}

}  // namespace

ComputePool::ComputePool(ComputePoolConfig cfg) : cfg_(std::move(cfg)), state_(std::make_shared<State>()) {
  state_->queue_max = cfg_.queue_max;
  threads_.reserve(cfg_.threads);
  for (unsigned i = 0; i < cfg_.threads; ++i)
    threads_.emplace_back(worker, state_, cfg_.name + std::to_string(i), cfg_.nice);
}

ComputePool::~ComputePool() {
  {
    std::unique_lock lock(state_->mu);
    state_->stopping = true;
    if (!cfg_.finish_queued) state_->queue.clear();  // their awaiters are going away too
    state_->work_cv.notify_all();
    state_->idle_cv.wait_for(lock, std::chrono::milliseconds(cfg_.shutdown_wait_ms),
                             [&] { return state_->running == 0 && state_->queue.empty(); });
    if (state_->running != 0 || !state_->queue.empty())
      spdlog::warn("{}: {} job(s) running and {} queued at shutdown: left to finish on their own", cfg_.name,
                   state_->running, state_->queue.size());
  }
  for (std::thread& t : threads_) {
    // A thread still in a job holds its own reference to the state.
    std::unique_lock lock(state_->mu);
    const bool busy = state_->running != 0 || !state_->queue.empty();
    lock.unlock();
    if (busy) t.detach();
    else t.join();
  }
}

bool ComputePool::submit(std::function<void()> job) {
  if (inline_mode()) {
    job();
    return true;
  }
  return state_->push(std::move(job), false);
}

std::size_t ComputePool::pending() const {
  std::lock_guard lock(state_->mu);
  return state_->queue.size() + state_->running;
}

}  // namespace madengine
