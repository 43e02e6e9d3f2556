// What `kiln report` shows, computed from a tuning database's records,
// bench results and `kiln tune-model` curves, before any chart is specified (report_charts.h) or any HTML
// written (report_html.h): per task its curves thinned to their improving
// points, its errors by kind, the cost model's ranking accuracy per batch
// and its predictions against the measurements; the machines' roofs; the
// short names of targets; per model tuning job its estimated end-to-end
// latency against trials.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tuner/database.h"

namespace kiln {

struct CurvePoint {
  double x = 0, y = 0;
};

struct RoundAccuracy {
  int round = 0;
  double accuracy = 0;  // share of ordered pairs the model ranked the right way round
  int64_t pairs = 0;
};

struct PredictionPoint {
  double predicted = 0;
  double measured = 0;  // GFLOP/s as a share of the task's best (0: failed)
};

struct TaskStats {
  std::string key, workload, op, target;
  int trials = 0, errors = 0;
  double best_gflops = 0;
  nlohmann::json best_config;  // null when no trial ran correctly
  double flops = 0;
  double min_bytes = 0;  // inputs read once and outputs written once; 0 when unknown
  // Best GFLOP/s so far against trials (1-based, in insertion order) and
  // against seconds since the task's earliest record (records in time order,
  // those without a timestamp left out): the improving points, plus the last.
  std::vector<CurvePoint> by_trial, by_seconds;
  std::map<std::string, int> errors_by_kind;  // error_kind_name -> count
  std::vector<RoundAccuracy> rounds;          // batches the model scored before measuring
  std::vector<PredictionPoint> predictions;
};

// One tuning job (a `kiln tune` run): per task, the best so far as a
// percentage of the task's best over the whole database, against the trials
// of this job; improving points only.
struct JobStats {
  std::string job;
  int64_t first_timestamp = 0;
  std::vector<std::pair<std::string, std::vector<CurvePoint>>> tasks;  // task key -> curve
};

// One `kiln tune-model` job (a `--curve` file, read_model_curve): the
// network's estimated end-to-end latency against the trials of all its
// tasks, from trials 0 (the estimate before the job) to its last round.
struct ModelCurveStats {
  std::string label;  // "<scheduler> (<model's file name>, <database's file name>)"
  std::string file, model, scheduler, db;
  std::vector<CurvePoint> points;  // (trials, estimated ms): trials 0, then one per round
  std::vector<std::string> tips;   // per point: the round and the task it tuned
  int rounds = 0, trials = 0;      // trials after the last round (0 without rounds)
  double initial_estimated_ms = 0, final_estimated_ms = 0;
  double measured_before_ms = 0, measured_after_ms = 0;  // NaN: not measured
  double elapsed_s = 0;                                  // NaN: not in the file
};

ModelCurveStats model_curve_stats(const nlohmann::json& curve);

// Pairwise ranking accuracy of predictions against measurements: among the
// pairs whose measurements differ, the share the predictions order the same
// way (a tie in prediction counts half). pairs = 0 when none differ.
RoundAccuracy pairwise_accuracy(const std::vector<double>& predicted, const std::vector<double>& measured);

// Keeps the points where y rises, the first point and the last.
std::vector<CurvePoint> improving_points(const std::vector<CurvePoint>& curve);

// Per task, in task-key order; records in insertion order. flops by task key.
std::vector<TaskStats> task_stats(const std::vector<Database::Record>& records,
                                  const std::map<std::string, double>& flops);
std::vector<JobStats> job_stats(const std::vector<Database::Record>& records, const std::vector<TaskStats>& tasks);

// The bytes a workload must move at least (its inputs and outputs once);
// nullopt when the workload does not build (an op of another kiln version).
std::optional<double> workload_min_bytes(const std::string& workload);

// "x86-64 rocketlake avx512" from "llvm -mtriple=x86_64-... -mcpu=rocketlake
// -mattr=+avx512f,...": the architecture, the CPU, the widest vector
// extension. Unparsable strings are returned as they are.
std::string short_target_name(const std::string& target);

}  // namespace kiln
