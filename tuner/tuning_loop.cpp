#include "tuner/tuning_loop.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"

namespace kiln {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double gflops_of(const Task& task, const MeasureResult& r) {
  return r.ok() && r.median_ms() > 0 ? task.flops / (r.median_ms() * 1e6) : 0;
}

// A database record as the tuner's view of a measurement.
MeasureResult to_result(const Database::Record& rec) {
  MeasureResult r;
  r.samples_ms = rec.samples_ms;
  r.error = rec.error;
  r.message = rec.error_msg;
  r.compile_ms = rec.compile_ms;
  r.resources = rec.resources;
  r.device = rec.device;
  r.timestamp = rec.timestamp;
  return r;
}

}  // namespace

TuneResult tune_task(const Task& task, Tuner& tuner, Builder& builder, Runner& runner, Database& db,
                     const TuneOptions& options, const std::function<void(const TuneProgress&)>& on_progress,
                     const std::function<void(const TuneProgress&)>& on_batch) {
  user_check(options.trials > 0) << "--trials must be positive";
  user_check(options.batch > 0) << "--batch must be positive";
  TuneResult result;
  result.workload = task.workload;
  TuneProgress p;
  p.task = &task;
  p.total = options.trials;

  // Resume: earlier records of this task count as trials and feed the search.
  std::vector<Config> prior_configs;
  std::vector<MeasureResult> prior_results;
  int round = 0;  // batches continue their numbering across resumed jobs
  for (const auto& rec : db.records(task.key())) {
    round = std::max(round, rec.round + 1);
    Config c;
    try {
      c = task.space->from_json(rec.config);
    } catch (const UserError&) {
      continue;  // a record from a different version of the template
    }
    prior_configs.push_back(c);
    prior_results.push_back(to_result(rec));
  }
  int since_best = 0;
  auto account = [&](const Config& c, const MeasureResult& r) {
    ++p.done;
    if (!r.ok()) ++p.errors;
    double g = gflops_of(task, r);
    if (g > p.best_gflops) {
      p.best_gflops = g;
      result.best_config = c.to_json();
      since_best = 0;
    } else {
      ++since_best;
    }
  };
  for (size_t i = 0; i < prior_configs.size(); ++i) account(prior_configs[i], prior_results[i]);
  since_best = 0;
  if (!prior_configs.empty()) tuner.update(prior_configs, prior_results);

  const double start = now_s();
  while (p.done < options.trials && tuner.has_next()) {
    if (options.early_stop > 0 && since_best >= options.early_stop) break;
    int n = std::min(options.batch, options.trials - p.done);
    double t0 = now_s();
    std::vector<Config> configs = tuner.next_batch(n);
    double t1 = now_s();
    if (configs.empty()) break;
    // What the model thought of the batch before seeing it (search health).
    Database::SearchTag tag{options.job, round++, tuner.predict(configs)};
    internal_assert(tag.predicted.empty() || tag.predicted.size() == configs.size())
        << "the tuner predicted " << tag.predicted.size() << " scores for " << configs.size() << " configs";
    t1 = now_s();
    std::vector<BuildResult> builds = builder.build(task, configs);
    double t2 = now_s();
    // Each measurement is stored (its own transaction) and reported as soon
    // as it is measured: a killed job loses at most the one being measured.
    std::vector<bool> stored(configs.size(), false);
    auto on_result = [&](size_t i, const MeasureResult& r) {
      internal_assert(i < configs.size() && !stored[i])
          << "runner reported candidate " << i << " of " << configs.size() << " twice or out of range";
      stored[i] = true;
      Database::SearchTag one{tag.job, tag.round, {}};
      if (!tag.predicted.empty()) one.predicted = {tag.predicted[i]};
      db.add_records(task, {configs[i]}, {r}, one);
      account(configs[i], r);
      ++result.new_trials;
      p.elapsed_s = now_s() - start;
      const double per_trial = p.elapsed_s / std::max(1, result.new_trials);
      p.eta_s = per_trial * std::max(0, options.trials - p.done);
      if (on_progress) on_progress(p);
    };
    std::vector<MeasureResult> results = runner.run(task, builds, on_result);
    double t3 = now_s();
    internal_assert(results.size() == configs.size()) << "runner returned " << results.size() << " results for "
                                                      << configs.size() << " candidates";
    for (size_t i = 0; i < configs.size(); ++i)
      internal_assert(stored[i]) << "runner returned candidate " << i << " without reporting it";
    tuner.update(configs, results);
    double t4 = now_s();
    p.search_s += (t1 - t0) + (t4 - t3);
    p.build_s += t2 - t1;
    p.run_s += t3 - t2;  // storing each record included
    p.elapsed_s = now_s() - start;
    if (on_batch) on_batch(p);
  }
  result.best_gflops = p.best_gflops;
  result.trials = p.done;
  result.errors = p.errors;
  p.elapsed_s = now_s() - start;
  result.timing = p;
  return result;
}

}  // namespace kiln
