// The tuning loop for one task: propose a batch, build it, measure it, store
// every record, update the search; resume from the database without
// re-measuring; stop at the trial budget or when the best has not improved
// for `early_stop` trials.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "tuner/builder.h"
#include "tuner/database.h"
#include "tuner/runner.h"
#include "tuner/tuner.h"

namespace kiln {

struct TuneOptions {
  int trials = 256;     // measured configs of the task in total, earlier runs included
  int batch = 64;
  int early_stop = 0;   // 0: never
  std::string job;      // stored with each record (Database::Record::job)
};

struct TuneProgress {
  const Task* task;
  int done = 0, total = 0, errors = 0;
  double best_gflops = 0;
  double elapsed_s = 0;
  double eta_s = 0;
  // Seconds spent, for reporting where the time goes.
  double build_s = 0, run_s = 0, search_s = 0;
};

struct TuneResult {
  std::string workload;
  double best_gflops = 0;
  nlohmann::json best_config;  // null when no config ran correctly
  int trials = 0;              // measured configs of the task, earlier runs included
  int new_trials = 0;          // measured by this job
  int errors = 0;
  TuneProgress timing;
};

// on_progress is called after each measurement, on_batch after each batch
// (both may be empty).
TuneResult tune_task(const Task& task, Tuner& tuner, Builder& builder, Runner& runner, Database& db,
                     const TuneOptions& options, const std::function<void(const TuneProgress&)>& on_progress,
                     const std::function<void(const TuneProgress&)>& on_batch = {});

}  // namespace kiln
