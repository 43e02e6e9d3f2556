// The task scheduler of kiln tune-model (graph/task_scheduler.h) on
// synthetic tasks whose latency falls as trials are spent.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "graph/task_scheduler.h"

using namespace kiln::graph;

namespace {

ScheduledTask task(const std::string& name, int weight, double flops, double ms) {
  ScheduledTask t;
  t.workload = name;
  t.weight = weight;
  t.flops = flops;
  t.best_ms = ms;
  return t;
}

// A task whose best latency after n trials is floor + (start - floor) * exp(-n / scale).
struct Curve {
  double start, floor, scale;
  double at(int n) const { return floor + (start - floor) * std::exp(-n / scale); }
};

// Spends `budget` trials in rounds of at most 16, as kiln tune-model does;
// returns the trials each task got.
std::vector<int> simulate(SchedulePolicy policy, const std::vector<ScheduledTask>& tasks,
                          const std::vector<Curve>& curves, int budget, double* estimate) {
  TaskScheduler s(tasks, policy, 1.0);
  while (s.total_trials() < budget) {
    const int i = s.next();
    REQUIRE(i >= 0);
    const int batch = std::min(s.batch_for(i, 16), budget - s.total_trials());
    const int trials = s.tasks()[static_cast<size_t>(i)].trials + batch;
    s.record(i, trials, curves[static_cast<size_t>(i)].at(trials), false);
  }
  *estimate = s.estimated_ms();
  std::vector<int> out;
  for (const auto& t : s.tasks()) out.push_back(t.trials);
  return out;
}

}  // namespace

TEST_CASE("task scheduler: every task is probed first, the heaviest first") {
  TaskScheduler s({task("a", 1, 1e6, 0.1), task("b", 4, 1e6, 0.5), task("c", 2, 1e6, 0.2)}, SchedulePolicy::kGradient, 0);
  CHECK(s.next() == 1);  // 4 x 0.5 ms
  CHECK(s.batch_for(1, 16) == TaskScheduler::kProbeTrials);
  CHECK(s.batch_for(1, 2) == 2);
  s.record(1, 4, 0.4, false);
  CHECK(s.batch_for(1, 16) == 16);
  CHECK(s.next() == 2);  // 2 x 0.2 ms
  s.record(2, 4, 0.2, false);
  CHECK(s.next() == 0);
  s.record(0, 4, 0.1, false);
  CHECK(s.estimated_ms() == Approx(4 * 0.4 + 2 * 0.2 + 0.1));
  CHECK(s.total_trials() == 12);
}

TEST_CASE("task scheduler: round-robin gives every task a whole batch") {
  TaskScheduler s({task("a", 1, 1e6, 0.1), task("b", 4, 1e6, 0.5)}, SchedulePolicy::kRoundRobin, 0);
  CHECK(s.next() == 0);
  CHECK(s.batch_for(0, 16) == 16);
  s.record(0, 16, 0.1, false);
  CHECK(s.next() == 1);
  CHECK(s.batch_for(1, 16) == 16);
}

TEST_CASE("task scheduler: light tasks cost a probe, so a small budget reaches the heavy one sooner") {
  // One heavy task that needs many trials and twenty light ones that their
  // first few trials settle; 640 trials are too few for round-robin to come
  // back to the heavy task often.
  std::vector<ScheduledTask> tasks = {task("heavy", 4, 4e7, 2.0)};
  std::vector<Curve> curves = {{2.0, 0.5, 80}};
  for (int k = 0; k < 20; ++k) {
    tasks.push_back(task("light" + std::to_string(k), 1, 1e6, 0.06));
    curves.push_back({0.06, 0.05, 2});
  }
  double gradient_ms = 0, robin_ms = 0;
  const std::vector<int> g = simulate(SchedulePolicy::kGradient, tasks, curves, 640, &gradient_ms);
  const std::vector<int> rr = simulate(SchedulePolicy::kRoundRobin, tasks, curves, 640, &robin_ms);
  CHECK(rr[0] == 32);
  // A whole first batch for every light task would leave the heavy one
  // 640 - 20 x 16 = 320 trials at most.
  CHECK(g[0] > 320);
  for (size_t k = 1; k < g.size(); ++k) CHECK(g[k] >= TaskScheduler::kProbeTrials);
  CHECK(gradient_ms < robin_ms);
}

TEST_CASE("task scheduler: trials go where the network's latency falls most, and beat round-robin") {
  // A heavy task with much room, a light one already near its floor, and a
  // heavy one that cannot improve.
  const std::vector<ScheduledTask> tasks = {task("heavy", 3, 4e7, 2.0), task("light", 1, 1e6, 0.05),
                                            task("stuck", 3, 4e7, 0.4)};
  const std::vector<Curve> curves = {{2.0, 0.3, 60}, {0.05, 0.045, 30}, {0.4, 0.4, 1}};
  double gradient_ms = 0, robin_ms = 0;
  const std::vector<int> g = simulate(SchedulePolicy::kGradient, tasks, curves, 192, &gradient_ms);
  const std::vector<int> rr = simulate(SchedulePolicy::kRoundRobin, tasks, curves, 192, &robin_ms);
  CHECK(rr == std::vector<int>{64, 64, 64});
  CHECK(g[0] > g[1]);
  CHECK(g[0] > g[2]);
  CHECK(g[0] + g[1] + g[2] == 192);
  CHECK(gradient_ms < robin_ms);
}

TEST_CASE("task scheduler: exhausted tasks are skipped, and none left is -1") {
  for (SchedulePolicy p : {SchedulePolicy::kGradient, SchedulePolicy::kRoundRobin}) {
    TaskScheduler s({task("a", 1, 1e6, 0.1), task("b", 1, 1e6, 0.1)}, p, 0);
    int i = s.next();
    s.record(i, 3, 0.1, true);
    const int j = s.next();
    CHECK(j == 1 - i);
    s.record(j, 5, 0.09, true);
    CHECK(s.next() == -1);
  }
}
