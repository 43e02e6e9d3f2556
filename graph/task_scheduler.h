// Which task of a network to tune next, round by round. The gradient policy
// (after Ansor's task scheduler) gives the next batch of trials to the task
// whose trials are expected to cut the network's latency most:
//   weight x current latency x recent gain x headroom
// where the recent gain is the relative improvement of the task's best over
// its last batch (floored by 0.05 / batches, so a stalled task is revisited
// ever less often) and the headroom is 1 - its GFLOP/s over the best
// GFLOP/s among the tasks (floored at 0.05). Every task gets one batch
// before any gets a second. Round-robin, the baseline, cycles through them.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace kiln::graph {

enum class SchedulePolicy { kGradient, kRoundRobin };

struct ScheduledTask {
  std::string workload;
  int weight = 1;
  double flops = 0;
  double best_ms = std::numeric_limits<double>::infinity();  // one run's best latency so far
  int trials = 0;                                             // measured configs so far
  int batches = 0;                                            // batches given by this scheduler
  double last_gain = 0;                                       // relative improvement of the last batch
  bool exhausted = false;                                     // the search has nothing left to propose
};

class TaskScheduler {
 public:
  // `other_ms`: the latency of everything no task covers (generic kernels).
  TaskScheduler(std::vector<ScheduledTask> tasks, SchedulePolicy policy, double other_ms);

  // The task to tune next, or -1 when every task is exhausted.
  int next();
  // The outcome of a batch of task i: its trials and best latency now.
  void record(int i, int trials, double best_ms, bool exhausted);
  // Estimated end-to-end latency: sum of weight x best latency, plus the rest.
  double estimated_ms() const;
  int total_trials() const;
  const std::vector<ScheduledTask>& tasks() const { return tasks_; }

 private:
  double score(const ScheduledTask& t, double best_gflops) const;
  std::vector<ScheduledTask> tasks_;
  SchedulePolicy policy_;
  double other_ms_;
  size_t cursor_ = 0;
};

}  // namespace kiln::graph
