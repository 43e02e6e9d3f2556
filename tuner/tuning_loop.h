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
  // Screening: a candidate whose first timing sample is this many times
  // slower than the best median so far gets no more samples
  // (Runner::screen_slower_than). 0: every candidate gets all its repeats.
  double screen_factor = 1.5;
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
  // The search proposed everything it could (the space, or what the tuner
  // can reach, is used up) before the budget did.
  bool exhausted = false;
  bool stopped_early = false;  // options.early_stop trials passed without a new best
  TuneProgress timing;
};

// How many of the search's fastest configs refine_task sweeps.
constexpr int kRefineTop = 2;

// The task a search runs on: `task` with its space's refine knobs held at
// their first option (ConfigSpace::hold_refine_knobs; the same key, so its
// records are the task's). The tuner is built on it, tune_task searches it,
// refine_task then sweeps the held knobs.
Task search_task(const Task& task);

// After a search of search_task(task): the `top` fastest correct configs
// among the task's records with every refine knob at its first option, each
// measured with every other option of one refine knob at a time (those not
// measured before; at most as many as keep the task's records within
// options.trials), stored as tune_task stores its measurements. Returns
// `searched` with these trials counted and the best updated (over all the
// task's records). A variant that lowers to the same kernel as its base
// (the knob does nothing in that config: e.g. B packed at the parallel loop
// cannot be double-buffered) is not measured. A space without refine knobs
// measures nothing. on_measured is called after each stored measurement (may be empty).
TuneResult refine_task(const Task& task, TuneResult searched, Builder& builder, Runner& runner, Database& db,
                       const TuneOptions& options, int top = kRefineTop,
                       const std::function<void(const TuneResult&)>& on_measured = {});

// How many of the fastest configs confirm_task measures again, and how many
// more times each.
constexpr int kConfirmTop = 4;
constexpr int kConfirmRounds = 2;
// The smallest budget tune_and_refine confirms within.
constexpr int kConfirmMinTrials = 64;

// After the search and its refinement: the `top` fastest configs of the
// task's records (Database::configs_by_speed: each config by the median of
// its measurements) are measured again until each has rounds + 1
// measurements, one round of all of them at a time, each round in fresh
// processes (Runner::measure_afresh), unscreened, within options.trials
// records in all; configs confirmed before are not measured again. The
// fastest single measurement of hundreds is an optimistic pick: the
// machine's noise, and a kernel whose speed depends on where its buffers
// landed, favour a config that was lucky once. Returns `r` with these
// measurements counted and the best config and speed taken from the task's
// records by Database::best's rule (so when nothing is measured, too).
// on_measured is called after each stored measurement (may be empty).
TuneResult confirm_task(const Task& task, TuneResult r, Builder& builder, Runner& runner, Database& db,
                        const TuneOptions& options, int top = kConfirmTop, int rounds = kConfirmRounds,
                        const std::function<void(const TuneResult&)>& on_measured = {});

// tune_task on search_task(task) (`tuner` built on that task), then
// refine_task, then confirm_task, within options.trials records in all: the
// search leaves room for the refinement (unless the budget is under twice
// that room) and for the confirmation (budgets of at least
// kConfirmMinTrials). Room the refinement left unused (variants that
// lowered to their base's kernel) goes back to the search, unless it had
// stopped early or run out of configs, and the refinement then sweeps the
// fastest configs again. Progress
// counts all the task's records against options.trials, the refinement's
// and confirmation's measurements included.
TuneResult tune_and_refine(const Task& task, const Task& search, Tuner& tuner, Builder& builder, Runner& runner,
                           Database& db, const TuneOptions& options,
                           const std::function<void(const TuneProgress&)>& on_progress,
                           const std::function<void(const TuneProgress&)>& on_batch = {});

// How many of the task's records are configs of its space (those of
// another template version, or outside held knobs, are not).
int count_records(const Task& task, Database& db);

// on_progress is called after each measurement, on_batch after each batch
// (both may be empty).
TuneResult tune_task(const Task& task, Tuner& tuner, Builder& builder, Runner& runner, Database& db,
                     const TuneOptions& options, const std::function<void(const TuneProgress&)>& on_progress,
                     const std::function<void(const TuneProgress&)>& on_batch = {});

}  // namespace kiln
