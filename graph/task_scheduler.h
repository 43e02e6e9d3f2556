// Which task of a network to tune next, round by round. The gradient policy
// (after Ansor's task scheduler) gives the next batch of trials to the task
// whose trials are expected to cut the network's latency most:
//   weight x current latency x recent gain x headroom
// where the recent gain is the relative improvement of the task's best over
// its last batch (floored by 0.05 / batches, so a stalled task is revisited
// ever less often) and the headroom is 1 - its GFLOP/s over twice the best
// GFLOP/s among the tasks of the same operator (floored at 0.05; as Ansor
// does, a task is compared only with similar ones, since a depthwise
// convolution never reaches a dense one's GFLOP/s, and the best of them may
// still double). Every task is probed before any gets a second batch, the
// heaviest first: the probe is a short batch of kProbeTrials, enough for the
// tuner's seeds (the best configs of tuned neighbours) and the default, so
// that light tasks cost little and the full batches go where the score
// sends them. Round-robin, the baseline, cycles through the tasks a full
// batch at a time.
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

  static constexpr int kProbeTrials = 4;

  // The task to tune next, or -1 when every task is exhausted.
  int next();
  // How many of a round's `batch` trials task i gets now: the gradient
  // policy's probe for a task not yet tuned, else the whole batch.
  int batch_for(int i, int batch) const;
  // The outcome of a batch of task i: its trials and best latency now.
  void record(int i, int trials, double best_ms, bool exhausted);
  // Estimated end-to-end latency: sum of weight x best latency, plus the rest.
  double estimated_ms() const;
  int total_trials() const;
  const std::vector<ScheduledTask>& tasks() const { return tasks_; }

 private:
  // The best GFLOP/s so far among the tasks of t's operator.
  double family_best_gflops(const ScheduledTask& t) const;
  double score(const ScheduledTask& t) const;
  std::vector<ScheduledTask> tasks_;
  SchedulePolicy policy_;
  double other_ms_;
  size_t cursor_ = 0;
};

}  // namespace kiln::graph
