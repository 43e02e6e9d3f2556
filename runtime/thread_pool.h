// The persistent thread pool that runs generated parallel loops, and the C
// entry points kiln_parallel_for / kiln_num_threads of runtime/c_api.h.
//
// A parallel loop of T tasks runs on min(T, threads) threads: the calling
// thread runs task 0 itself, then all participants claim the remaining tasks
// from a shared counter. Idle workers spin for a few microseconds before
// blocking, so back-to-back kernel calls (the time evaluator's loop) do not pay
// a futex wake-up each. A parallel loop started from inside a task (nested)
// runs serially in the calling thread. Tasks must not throw.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/c_api.h"

namespace kiln::rt {

// KILN_NUM_THREADS when set to a positive integer, else the hardware
// concurrency (at least 1).
int default_num_threads();

class ThreadPool {
 public:
  // A pool of `num_threads` threads in all: the caller plus num_threads - 1
  // workers. Throws std::invalid_argument when num_threads < 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(t, num_tasks, closure) for every t in [0, num_tasks) and returns
  // after all have finished: 0, or the first non-zero task result (tasks not
  // yet started when a task fails are skipped). num_tasks <= 0 means one task
  // per thread. Calls from several outside threads are serialized.
  int32_t parallel_for(kiln_task_fn fn, void* closure, int64_t num_tasks);

  // The process-wide pool (default_num_threads() threads), created on first
  // use. A child process after fork() gets a fresh one.
  static ThreadPool& global();

 private:
  struct Job;
  struct Worker;

  void worker_loop(Worker* w);
  Job* wait_for_job(Worker* w);
  void finish_job(Job* job);
  static void run_tasks(Job* job);
  static int32_t run_serial(kiln_task_fn fn, void* closure, int64_t num_tasks);

  int num_threads_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stop_{false};
  std::mutex call_mu_;  // one parallel loop at a time
  std::mutex done_mu_;  // the caller blocks on done_cv_ when a loop runs long
  std::condition_variable done_cv_;
};

}  // namespace kiln::rt
