#include "tuner/tuning_loop.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "base/error.h"
#include "compute/printer.h"

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

// The kernel `c` lowers to, printed; empty where it cannot be lowered here
// (the builder then reports why).
std::string lowered_kernel(const Task& task, const Config& c) {
  if (!task.instantiate) return "";
  try {
    return to_string(task.instantiate(c, LowerDepth::kFull).body);
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

TuneResult tune_task(const Task& task, Tuner& tuner, Builder& builder, Runner& runner, Database& db,
                     const TuneOptions& options, const std::function<void(const TuneProgress&)>& on_progress,
                     const std::function<void(const TuneProgress&)>& on_batch) {
  user_check(options.trials > 0) << "--trials must be positive";
  user_check(options.batch > 0) << "--batch must be positive";
  user_check(options.screen_factor == 0 || options.screen_factor >= 1)
      << "--screen must be 0 (no screening) or a factor of at least 1 over the best time so far, got "
      << options.screen_factor;
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
  double best_ms = 0;  // the fastest median so far (screening's yardstick)
  auto account = [&](const Config& c, const MeasureResult& r) {
    ++p.done;
    if (!r.ok()) ++p.errors;
    if (r.ok() && r.median_ms() > 0 && (best_ms == 0 || r.median_ms() < best_ms)) best_ms = r.median_ms();
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
    if (options.early_stop > 0 && since_best >= options.early_stop) {
      result.stopped_early = true;
      break;
    }
    int n = std::min(options.batch, options.trials - p.done);
    double t0 = now_s();
    std::vector<Config> configs = tuner.next_batch(n);
    double t1 = now_s();
    if (configs.empty()) {
      result.exhausted = true;
      break;
    }
    // What the model thought of the batch before seeing it (search health).
    Database::SearchTag tag{options.job, round++, tuner.predict(configs)};
    internal_assert(tag.predicted.empty() || tag.predicted.size() == configs.size())
        << "the tuner predicted " << tag.predicted.size() << " scores for " << configs.size() << " configs";
    t1 = now_s();
    runner.screen_slower_than(options.screen_factor > 0 ? best_ms * options.screen_factor : 0);
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
  if (p.done < options.trials && !tuner.has_next()) result.exhausted = true;
  result.best_gflops = p.best_gflops;
  result.trials = p.done;
  result.errors = p.errors;
  p.elapsed_s = now_s() - start;
  result.timing = p;
  return result;
}

Task search_task(const Task& task) {
  Task search = task;
  auto space = std::make_shared<ConfigSpace>(*task.space);
  space->hold_refine_knobs();
  search.space = space;
  return search;
}

int count_records(const Task& task, Database& db) {
  int n = 0;
  for (const auto& rec : db.records(task.key())) {
    try {
      task.space->from_json(rec.config);
      ++n;
    } catch (const UserError&) {
    }
  }
  return n;
}

TuneResult refine_task(const Task& task, TuneResult r, Builder& builder, Runner& runner, Database& db,
                       const TuneOptions& options, int top, const std::function<void(const TuneResult&)>& on_measured) {
  const ConfigSpace& space = *task.space;
  std::vector<size_t> refine;
  for (size_t k = 0; k < space.knobs().size(); ++k)
    if (space.knobs()[k].refine && space.knobs()[k].size() > 1) refine.push_back(k);
  if (refine.empty()) return r;
  // What the task has measured, and the search's correct configs by speed.
  std::set<std::string> measured;
  std::vector<std::pair<double, Config>> searched;
  int round = 0;
  for (const auto& rec : db.records(task.key())) {
    round = std::max(round, rec.round + 1);
    Config c;
    try {
      c = space.from_json(rec.config);
    } catch (const UserError&) {
      continue;
    }
    measured.insert(c.str());
    const MeasureResult m = to_result(rec);
    if (gflops_of(task, m) > r.best_gflops) {  // an earlier job's refinement
      r.best_gflops = gflops_of(task, m);
      r.best_config = c.to_json();
    }
    const bool held = std::all_of(refine.begin(), refine.end(), [&](size_t k) { return c.choices()[k] == 0; });
    if (m.ok() && held) searched.emplace_back(m.median_ms(), c);
  }
  const int room = options.trials - static_cast<int>(measured.size());
  std::stable_sort(searched.begin(), searched.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> candidates;
  std::set<std::string> bases;
  for (const auto& [ms, c] : searched) {
    if (static_cast<int>(bases.size()) >= top) break;
    if (!bases.insert(c.str()).second) continue;
    std::string base_kernel;
    bool base_lowered = false;
    for (size_t k : refine)
      for (int o = 1; o < static_cast<int>(space.knobs()[k].size()); ++o) {
        std::vector<int> choices = c.choices();
        choices[k] = o;
        Config v(&space, choices);
        if (!measured.insert(v.str()).second) continue;
        if (!base_lowered) {
          base_kernel = lowered_kernel(task, c);
          base_lowered = true;
        }
        if (!base_kernel.empty() && lowered_kernel(task, v) == base_kernel) continue;  // the same kernel
        candidates.push_back(v);
      }
  }
  if (room < static_cast<int>(candidates.size())) candidates.resize(static_cast<size_t>(std::max(0, room)));
  if (candidates.empty()) return r;
  std::vector<BuildResult> builds = builder.build(task, candidates);
  std::vector<bool> stored(candidates.size(), false);
  auto on_result = [&](size_t i, const MeasureResult& m) {
    internal_assert(i < candidates.size() && !stored[i]) << "runner reported refinement candidate " << i << " twice";
    stored[i] = true;
    db.add_records(task, {candidates[i]}, {m}, Database::SearchTag{options.job, round, {}});
    ++r.trials;
    ++r.new_trials;
    if (!m.ok()) ++r.errors;
    const double g = gflops_of(task, m);
    if (g > r.best_gflops) {
      r.best_gflops = g;
      r.best_config = candidates[i].to_json();
    }
    if (on_measured) on_measured(r);
  };
  runner.run(task, builds, on_result);
  return r;
}

TuneResult confirm_task(const Task& task, TuneResult r, Builder& builder, Runner& runner, Database& db,
                        const TuneOptions& options, int top, int rounds,
                        const std::function<void(const TuneResult&)>& on_measured) {
  const ConfigSpace& space = *task.space;
  // The task's records of this space (not those of another template version).
  std::vector<Database::Record> mine;
  int round = 0;
  auto read_records = [&] {
    mine.clear();
    for (auto& rec : db.records(task.key())) {
      round = std::max(round, rec.round + 1);
      try {
        space.from_json(rec.config);
      } catch (const UserError&) {
        continue;
      }
      mine.push_back(std::move(rec));
    }
  };
  read_records();
  std::map<std::string, int> times_measured;  // by the config's knob values
  for (const auto& rec : mine)
    if (rec.ok()) ++times_measured[rec.config.dump()];
  std::vector<Config> configs;
  std::vector<int> more;  // measurements each still needs
  const std::vector<Database::Record> ranked = configs_by_speed(mine);
  for (size_t k = 0; k < ranked.size() && static_cast<int>(k) < top; ++k) {
    const Database::Record& rec = ranked[k];
    const int need = rounds + 1 - times_measured[rec.config.dump()];
    if (need <= 0) continue;  // confirmed by an earlier job
    configs.push_back(space.from_json(rec.config));
    more.push_back(need);
  }
  int room = options.trials - static_cast<int>(mine.size());
  if (!configs.empty() && room > 0) {
    const std::vector<BuildResult> builds = builder.build(task, configs);
    runner.screen_slower_than(0);  // every sample: these are the contenders
    for (int pass = 0; pass < rounds && room > 0; ++pass) {
      std::vector<size_t> which;
      for (size_t i = 0; i < configs.size() && static_cast<int>(which.size()) < room; ++i)
        if (more[i] > pass) which.push_back(i);
      if (which.empty()) break;
      std::vector<BuildResult> these;
      for (size_t i : which) these.push_back(builds[i]);
      std::vector<bool> stored(which.size(), false);
      auto on_result = [&](size_t j, const MeasureResult& m) {
        internal_assert(j < which.size() && !stored[j]) << "runner reported confirmation " << j << " twice";
        stored[j] = true;
        db.add_records(task, {configs[which[j]]}, {m}, Database::SearchTag{options.job, round, {}});
        ++r.trials;
        ++r.new_trials;
        if (!m.ok()) ++r.errors;
        --room;
        if (on_measured) on_measured(r);
      };
      runner.measure_afresh();
      runner.run(task, these, on_result);
      ++round;
    }
    read_records();
  }
  if (const auto best = fastest_config(mine)) {
    r.best_gflops = best->gflops;
    r.best_config = space.from_json(best->config).to_json();
  }
  return r;
}

TuneResult tune_and_refine(const Task& task, const Task& search, Tuner& tuner, Builder& builder, Runner& runner,
                           Database& db, const TuneOptions& options,
                           const std::function<void(const TuneProgress&)>& on_progress,
                           const std::function<void(const TuneProgress&)>& on_batch) {
  // The refinement's room: each other option of each refine knob, for the
  // `top` configs.
  int room = 0;
  for (const Knob& k : task.space->knobs())
    if (k.refine) room += kRefineTop * static_cast<int>(k.size() - 1);
  if (options.trials < 2 * room) room = 0;
  // The confirmation's, at most: each of its configs measured again.
  const int confirm_top = options.trials >= kConfirmMinTrials ? kConfirmTop : 0;
  const int confirm_room = confirm_top * kConfirmRounds;
  room += confirm_room;
  // Records the search cannot resume from (earlier refinements) count too.
  int others = count_records(task, db) - count_records(search, db);
  TuneOptions so = options;
  so.trials = std::max(1, options.trials - room - others);
  // Progress against the whole budget, the other records counted.
  TuneProgress last;
  last.task = &search;
  auto whole = [&](const TuneProgress& p) {
    last = p;
    last.done += others;
    last.total = options.trials;
    if (on_progress) on_progress(last);
  };
  TuneResult r = tune_task(search, tuner, builder, runner, db, so, whole, on_batch);
  r.trials += others;
  last.task = &task;
  last.total = options.trials;
  auto report = [&](const TuneResult& now) {
    last.done = now.trials;
    last.errors = now.errors;
    last.best_gflops = now.best_gflops;
    last.eta_s = 0;
    if (on_progress) on_progress(last);
  };
  // The refinement within the budget less the confirmation's room.
  TuneOptions ro = options;
  ro.trials = options.trials - confirm_room;
  TuneResult searched = r;  // the last stretch of search
  r = refine_task(task, r, builder, runner, db, ro, kRefineTop, report);
  // Trials the refinement left unused go back to the search, and the
  // refinement then looks at the fastest configs again. (Both refine_task
  // and confirm_task take the best from all the task's records.)
  while (!searched.exhausted && !searched.stopped_early) {
    const int left = ro.trials - count_records(task, db);
    if (left <= 0) break;
    const int search_records = count_records(search, db);
    others = count_records(task, db) - search_records;
    so.trials = search_records + left;
    const int errors_before = searched.errors;
    searched = tune_task(search, tuner, builder, runner, db, so, whole, on_batch);
    last.task = &task;
    if (searched.new_trials == 0) break;
    r.trials += searched.new_trials;
    r.new_trials += searched.new_trials;
    r.errors += searched.errors - errors_before;
    r = refine_task(task, r, builder, runner, db, ro, kRefineTop, report);
  }
  return confirm_task(task, r, builder, runner, db, options, confirm_top, kConfirmRounds, report);
}

}  // namespace kiln
