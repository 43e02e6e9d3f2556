#include "graph/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace kiln::graph {

TaskScheduler::TaskScheduler(std::vector<ScheduledTask> tasks, SchedulePolicy policy, double other_ms)
    : tasks_(std::move(tasks)), policy_(policy), other_ms_(other_ms) {}

namespace {

double gflops_of(const ScheduledTask& t) {
  return std::isfinite(t.best_ms) && t.best_ms > 0 ? t.flops / (t.best_ms * 1e6) : 0;
}

std::string_view op_of(const ScheduledTask& t) {
  const std::string_view w = t.workload;
  return w.substr(0, w.find(':'));
}

}  // namespace

double TaskScheduler::family_best_gflops(const ScheduledTask& t) const {
  double best = 0;
  for (const ScheduledTask& u : tasks_)
    if (op_of(u) == op_of(t)) best = std::max(best, gflops_of(u));
  return best;
}

double TaskScheduler::score(const ScheduledTask& t) const {
  const double family_best = family_best_gflops(t);
  const double headroom = std::max(0.05, family_best > 0 ? 1.0 - gflops_of(t) / (2 * family_best) : 1.0);
  const double gain = std::max(t.last_gain, 0.05 / std::max(1, t.batches));
  const double latency = std::isfinite(t.best_ms) ? t.best_ms : 1e9;
  return t.weight * latency * gain * headroom;
}

int TaskScheduler::next() {
  const int n = static_cast<int>(tasks_.size());
  if (policy_ == SchedulePolicy::kRoundRobin) {
    for (int k = 0; k < n; ++k) {
      const size_t i = (cursor_ + static_cast<size_t>(k)) % tasks_.size();
      if (!tasks_[i].exhausted) {
        cursor_ = i + 1;
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  // Every task's probe, heaviest first.
  int pick = -1;
  for (int i = 0; i < n; ++i) {
    const ScheduledTask& t = tasks_[static_cast<size_t>(i)];
    if (t.exhausted || t.batches > 0) continue;
    if (pick < 0 || t.weight * t.best_ms > tasks_[static_cast<size_t>(pick)].weight * tasks_[static_cast<size_t>(pick)].best_ms) pick = i;
  }
  if (pick >= 0) return pick;
  double top = -1;
  for (int i = 0; i < n; ++i) {
    const ScheduledTask& t = tasks_[static_cast<size_t>(i)];
    if (t.exhausted) continue;
    const double s = score(t);
    if (s > top) {
      top = s;
      pick = i;
    }
  }
  return pick;
}

int TaskScheduler::batch_for(int i, int batch) const {
  if (policy_ == SchedulePolicy::kGradient && tasks_[static_cast<size_t>(i)].batches == 0)
    return std::min(batch, kProbeTrials);
  return batch;
}

void TaskScheduler::record(int i, int trials, double best_ms, bool exhausted) {
  ScheduledTask& t = tasks_[static_cast<size_t>(i)];
  const double before = t.best_ms;
  if (best_ms < t.best_ms) t.best_ms = best_ms;
  t.last_gain = std::isfinite(before) && before > 0 ? std::max(0.0, (before - t.best_ms) / before) : 1.0;
  t.trials = trials;
  ++t.batches;
  t.exhausted = exhausted;
}

double TaskScheduler::estimated_ms() const {
  double total = other_ms_;
  for (const ScheduledTask& t : tasks_) total += t.weight * (std::isfinite(t.best_ms) ? t.best_ms : 0.0);
  return total;
}

int TaskScheduler::total_trials() const {
  int n = 0;
  for (const ScheduledTask& t : tasks_) n += t.trials;
  return n;
}

}  // namespace kiln::graph
