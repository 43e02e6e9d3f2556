// Thread pool implementation and the extern "C" entry points of the C ABI.
#include "runtime/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace kiln::rt {
namespace {

using Clock = std::chrono::steady_clock;

// How long an idle worker polls for the next job before it blocks, and how
// long a caller polls for the workers' completion before it blocks.
constexpr auto kWorkerSpin = std::chrono::microseconds(10);
constexpr auto kCallerSpin = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` until it returns true or `budget` has passed.
template <class Pred>
bool spin_until(Pred ready, Clock::duration budget) {
  Clock::time_point deadline = Clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 31) == 31 && Clock::now() >= deadline) return ready();
  }
}

// True in pool workers, and in a caller while it runs its share of a loop:
// a parallel_for seen there is nested and runs serially.
thread_local bool t_in_parallel_region = false;

}  // namespace

struct ThreadPool::Job {
  kiln_task_fn fn;
  void* closure;
  int64_t num_tasks;
  std::atomic<int64_t> next{1};  // task 0 belongs to the caller
  std::atomic<int32_t> result{0};
  std::atomic<int> pending{0};  // workers that have not finished with this job
};

struct alignas(64) ThreadPool::Worker {
  std::atomic<Job*> job{nullptr};
  std::atomic<bool> sleeping{false};
  std::mutex mu;
  std::condition_variable cv;
  std::thread thread;
};

int default_num_threads() {
  if (const char* env = std::getenv("KILN_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0 && n <= 4096) return static_cast<int>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  if (num_threads < 1)
    throw std::invalid_argument("ThreadPool: num_threads must be >= 1, got " + std::to_string(num_threads));
  for (int i = 1; i < num_threads; ++i) workers_.push_back(std::make_unique<Worker>());
  for (auto& w : workers_) {
    Worker* raw = w.get();
    w->thread = std::thread([this, raw] { worker_loop(raw); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  for (auto& w : workers_) {
    { std::lock_guard<std::mutex> lock(w->mu); }
    w->cv.notify_one();
  }
  for (auto& w : workers_) w->thread.join();
}

void ThreadPool::run_tasks(Job* job) {
  for (;;) {
    if (job->result.load(std::memory_order_relaxed) != 0) return;
    int64_t t = job->next.fetch_add(1, std::memory_order_relaxed);
    if (t >= job->num_tasks) return;
    int32_t r = job->fn(t, job->num_tasks, job->closure);
    if (r != 0) {
      int32_t none = 0;
      job->result.compare_exchange_strong(none, r);
    }
  }
}

int32_t ThreadPool::run_serial(kiln_task_fn fn, void* closure, int64_t num_tasks) {
  for (int64_t t = 0; t < num_tasks; ++t) {
    int32_t r = fn(t, num_tasks, closure);
    if (r != 0) return r;
  }
  return 0;
}

ThreadPool::Job* ThreadPool::wait_for_job(Worker* w) {
  Job* job = nullptr;
  auto take = [&] {
    job = w->job.load(std::memory_order_acquire);
    return job != nullptr || stop_.load(std::memory_order_relaxed);
  };
  if (!spin_until(take, kWorkerSpin)) {
    std::unique_lock<std::mutex> lock(w->mu);
    // Dekker-style handshake with parallel_for: we publish `sleeping` and then
    // re-check the mailbox; the caller publishes the job and then checks
    // `sleeping`. With seq_cst at least one of us sees the other.
    w->sleeping.store(true, std::memory_order_seq_cst);
    while ((job = w->job.load(std::memory_order_seq_cst)) == nullptr && !stop_.load(std::memory_order_seq_cst)) {
      w->cv.wait(lock);
    }
    w->sleeping.store(false, std::memory_order_relaxed);
  }
  if (job) w->job.store(nullptr, std::memory_order_relaxed);
  return job;
}

void ThreadPool::finish_job(Job* job) {
  // After this decrement the caller may return and destroy *job: do not touch
  // it again. The pool-level mutex/condvar outlive every job.
  if (job->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    { std::lock_guard<std::mutex> lock(done_mu_); }
    done_cv_.notify_all();
  }
}

void ThreadPool::worker_loop(Worker* w) {
  t_in_parallel_region = true;
  while (Job* job = wait_for_job(w)) {
    run_tasks(job);
    finish_job(job);
  }
}

int32_t ThreadPool::parallel_for(kiln_task_fn fn, void* closure, int64_t num_tasks) {
  if (num_tasks <= 0) num_tasks = num_threads_;
  if (t_in_parallel_region || num_tasks == 1 || workers_.empty()) {
    return run_serial(fn, closure, num_tasks);
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  Job job;
  job.fn = fn;
  job.closure = closure;
  job.num_tasks = num_tasks;
  int helpers = static_cast<int>(std::min<int64_t>(num_tasks, num_threads_) - 1);
  job.pending.store(helpers, std::memory_order_relaxed);
  for (int i = 0; i < helpers; ++i) {
    Worker* w = workers_[i].get();
    w->job.store(&job, std::memory_order_seq_cst);
    if (w->sleeping.load(std::memory_order_seq_cst)) {
      // Taking the mutex orders this notify after the worker's wait began.
      { std::lock_guard<std::mutex> lock(w->mu); }
      w->cv.notify_one();
    }
  }

  // Whatever happens in the caller's share (even an exception from a C++
  // task), wait for the workers before `job` leaves scope.
  struct Join {
    ThreadPool* pool;
    Job* job;
    ~Join() {
      t_in_parallel_region = false;
      auto done = [this] { return job->pending.load(std::memory_order_acquire) == 0; };
      if (!spin_until(done, kCallerSpin)) {
        std::unique_lock<std::mutex> lock(pool->done_mu_);
        pool->done_cv_.wait(lock, done);
      }
    }
  };
  {
    Join join{this, &job};
    t_in_parallel_region = true;
    int32_t r0 = fn(0, num_tasks, closure);
    if (r0 != 0) {
      int32_t none = 0;
      job.result.compare_exchange_strong(none, r0);
    }
    run_tasks(&job);
  }
  return job.result.load(std::memory_order_relaxed);
}

namespace {

// The global pool is never destroyed: workers may still be parked when static
// destructors run at exit. After fork() only the forking thread survives in
// the child, so the child drops the parent's pool (leaking it) and makes its own.
std::atomic<ThreadPool*> g_pool{nullptr};
std::mutex g_pool_mu;

void atfork_prepare() { g_pool_mu.lock(); }
void atfork_parent() { g_pool_mu.unlock(); }
void atfork_child() {
  g_pool.store(nullptr, std::memory_order_relaxed);
  g_pool_mu.unlock();
}

}  // namespace

ThreadPool& ThreadPool::global() {
  if (ThreadPool* p = g_pool.load(std::memory_order_acquire)) return *p;
  static const bool registered = [] {
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    return true;
  }();
  (void)registered;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  ThreadPool* p = g_pool.load(std::memory_order_relaxed);
  if (!p) {
    p = new ThreadPool(default_num_threads());
    g_pool.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace kiln::rt

extern "C" int32_t kiln_parallel_for(kiln_task_fn fn, void* closure, int64_t num_tasks) {
  return kiln::rt::ThreadPool::global().parallel_for(fn, closure, num_tasks);
}

extern "C" int32_t kiln_num_threads(void) { return kiln::rt::ThreadPool::global().num_threads(); }
