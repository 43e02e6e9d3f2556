// `kiln tune-model`: tunes a network's tasks (graph/model_tasks.h) round by
// round, a batch of trials at a time, giving each batch to the task the
// scheduler picks (graph/task_scheduler.h), and stores every measurement in
// the tuning database, where `kiln run-model --db` finds the best configs.
// Records already in the database count (a job resumes where the last
// stopped). The estimated end-to-end latency is the sum over tasks of
// weight x best latency, plus the measured latency of the kernels no task
// covers.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/task_scheduler.h"
#include "runtime/measure.h"
#include "tasks/tuner_factory.h"

namespace kiln::graph {

struct ModelTuneOptions {
  std::string model;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::string db = "kiln.db";
  std::string target;      // "" this machine; a cuda target tunes and measures on the first GPU
  int trials = 0;          // measured configs over all tasks, earlier ones included (0: no limit)
  double time_s = 0;       // wall-clock budget of this job (0: no limit)
  int batch = 32;          // trials per round
  SchedulePolicy policy = SchedulePolicy::kGradient;
  TunerChoice tuner;
  MeasureOptions measure;
  std::string job;         // stored with every record
};

struct ModelTuneRound {
  int round = 0;
  std::string workload;    // the task tuned this round
  int trials = 0;          // all tasks' trials after the round
  double best_ms = 0;      // the task's best after the round
  double estimated_ms = 0; // the network's estimated latency after the round
  double elapsed_s = 0;
};

struct ModelTuneResult {
  std::vector<ScheduledTask> tasks;   // after tuning
  double other_ms = 0;                // kernels no task covers
  double initial_estimated_ms = 0;    // before this job
  std::vector<ModelTuneRound> rounds;
  double measured_before_ms = 0;      // the whole network, measured before and after this job
  double measured_after_ms = 0;
  double elapsed_s = 0;
};

// user_error on a bad model, options or database. `on_round` (may be
// empty) is called after every round.
ModelTuneResult tune_model(const ModelTuneOptions& options,
                           const std::function<void(const ModelTuneRound&, const TaskScheduler&)>& on_round);

}  // namespace kiln::graph
