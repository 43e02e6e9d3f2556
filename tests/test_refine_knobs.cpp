// Refine knobs (Knob::refine, e.g. a prefetch distance): a search holds
// them at their first option (search_task), then refine_task measures the
// search's fastest configs with each of their other options. On a toy
// space with a scripted runner: what is measured, in what order, the best
// it finds, that nothing is measured twice, and that a pinned knob or a
// space without refine knobs measures nothing, nor does a variant that
// lowers to its base's kernel (its trial goes back to the search). The CPU
// templates' prefetch knobs and the GEMM's double-buffered packing are
// refine knobs. Then confirm_task: the fastest configs measured again in
// fresh processes, a config fast only once not taken as the best, within
// the budget, and not again once confirmed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/stmt.h"
#include "kernels/op_registry.h"
#include "support/temp_dir.h"
#include "support/template_check.h"
#include "tuner/database.h"
#include "tuner/random_tuner.h"
#include "tuner/tuning_loop.h"

using namespace kiln;
using kiln::testing::TempDir;

namespace {

// A space of `tiles` tiles by 3 prefetch distances (prefetch refined last).
Task toy_task(bool refine = true, int64_t tiles = 6) {
  auto space = std::make_shared<ConfigSpace>();
  std::vector<int64_t> tile_values;
  for (int64_t t = 1; t <= tiles; ++t) tile_values.push_back(t);
  space->define_choice("tile", tile_values);
  space->define_choice("prefetch", {0, 4, 8});
  if (refine) space->set_refine("prefetch");
  Task t;
  t.workload = "toy:N=1";
  t.op = "toy";
  t.target = "llvm";
  t.flops = 1e6;
  t.space = std::move(space);
  t.instantiate = [](const Config&, LowerDepth) -> LoweredFunc { throw std::logic_error("not built"); };
  return t;
}

// toy_task whose config lowers to a kernel printed as the number `kernel`
// gives it: configs with the same number lower to the same kernel.
Task toy_task_with_kernels(int64_t tiles, std::function<int64_t(const Config&)> kernel) {
  Task t = toy_task(true, tiles);
  t.instantiate = [kernel](const Config& c, LowerDepth) {
    LoweredFunc f;
    f.name = "toy";
    f.body = EvaluateNode::make(make_const(DType::i64(), kernel(c)));
    return f;
  };
  return t;
}

// Time: tile 3 fastest (1 ms), then 2 (1.5), the rest 2 ms and more; a
// prefetch of 8 halves tile 2's time only, 4 slows everything. Tile
// `lucky` (none: 0) with prefetch 0 takes 0.5 ms the first time it is
// measured, 5 after.
class ToyRunner : public Runner {
 public:
  using Runner::run;
  std::vector<std::pair<int64_t, int64_t>> seen;  // (tile, prefetch) in measuring order
  std::vector<double> screens;                    // screen_ms() at each batch
  std::vector<double> times;                      // each candidate's ms, in measuring order
  int64_t lucky = 0;
  int afresh = 0;  // measure_afresh() calls
  void measure_afresh() override { ++afresh; }
  std::vector<MeasureResult> run(const Task&, const std::vector<BuildResult>& builds,
                                 const OnResult& on_result) override {
    screens.push_back(screen_ms());
    std::vector<MeasureResult> out;
    for (size_t i = 0; i < builds.size(); ++i) {
      const Config& c = *configs->at(i);
      const int64_t tile = c.choice("tile"), prefetch = c.choice("prefetch");
      seen.emplace_back(tile, prefetch);
      double ms = tile == 3 ? 1.0 : tile == 2 ? 1.5 : 1.0 + static_cast<double>(tile);
      if (prefetch == 8 && tile == 2) ms /= 2;
      if (prefetch == 4) ms *= 1.2;
      if (tile == lucky && prefetch == 0) ms = std::count(seen.begin(), seen.end(), seen.back()) == 1 ? 0.5 : 5.0;
      times.push_back(ms);
      MeasureResult r;
      r.samples_ms = {ms};
      r.device = "local";
      out.push_back(r);
      if (on_result) on_result(i, out.back());
    }
    return out;
  }
  const std::vector<const Config*>* configs = nullptr;
};

// The builder hands the runner the configs it built (the runner sees only
// build results).
class PassingBuilder : public Builder {
 public:
  explicit PassingBuilder(ToyRunner* r) : runner_(r) {}
  std::vector<BuildResult> build(const Task&, const std::vector<Config>& configs) override {
    held_ = configs;
    pointers_.clear();
    for (const Config& c : held_) pointers_.push_back(&c);
    runner_->configs = &pointers_;
    return std::vector<BuildResult>(configs.size());
  }

 private:
  ToyRunner* runner_;
  std::vector<Config> held_;
  std::vector<const Config*> pointers_;
};

// What tune_toy returns: the job's result, and the records it left.
struct ToyJob {
  TuneResult result;
  int records = 0;
};

// tune_and_refine on `task` with 10 trials in batches of 3, a random
// search from `seed`, measured by `runner`, recorded in a fresh database.
ToyJob tune_toy(const Task& task, uint64_t seed, ToyRunner& runner, const char* name) {
  TempDir tmp(name);
  auto db = Database::open(tmp / "t.db");
  const Task search = search_task(task);
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.trials = 10;
  o.batch = 3;
  RandomTuner tuner(*search.space, seed);
  ToyJob job;
  job.result = tune_and_refine(task, search, tuner, builder, runner, *db, o, nullptr);
  job.records = count_records(task, *db);
  return job;
}

}  // namespace

TEST_CASE("refine knobs: the search holds them, then the best two configs are swept", "[tuning][refine]") {
  TempDir tmp("kiln_refine");
  auto db = Database::open(tmp / "t.db");
  const Task task = toy_task();
  const Task search = search_task(task);
  CHECK(search.key() == task.key());
  CHECK(search.space->size() == 6);
  CHECK(task.space->size() == 18);
  for (uint64_t i = 0; i < search.space->size(); ++i) CHECK(search.space->get(i).choice("prefetch") == 0);

  ToyRunner runner;
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.trials = 10;  // 6 for the search, 4 left for the refinement
  o.batch = 3;
  o.job = "j";
  RandomTuner tuner(*search.space, 1);
  const TuneResult r = tune_and_refine(task, search, tuner, builder, runner, *db, o, nullptr);
  // The search: all six tiles with prefetch 0; then tiles 3 and 2 (the two
  // fastest), each with prefetch 4 and 8.
  for (size_t i = 0; i < 6 && i < runner.seen.size(); ++i) CHECK(runner.seen[i].second == 0);
  REQUIRE(runner.seen.size() == 10);
  CHECK(std::vector<std::pair<int64_t, int64_t>>(runner.seen.begin() + 6, runner.seen.end()) ==
        std::vector<std::pair<int64_t, int64_t>>{{3, 4}, {3, 8}, {2, 4}, {2, 8}});
  CHECK(r.trials == 10);
  CHECK(r.new_trials == 10);
  CHECK(r.best_config["tile"] == 2);
  CHECK(r.best_config["prefetch"] == 8);
  CHECK(r.best_gflops == Approx(1e6 / (0.75 * 1e6)));
  CHECK(count_records(task, *db) == 10);
  CHECK(count_records(search, *db) == 6);  // the refined records lie outside the search's space
  auto records = db->records(task.key());
  CHECK(records.back().round == 2);  // after the search's two batches
  CHECK(records.back().job == "j");

  // Resumed with the same budget: nothing more; the best from the records.
  RandomTuner again(*search.space, 1);
  const TuneResult s = tune_and_refine(task, search, again, builder, runner, *db, o, nullptr);
  CHECK(runner.seen.size() == 10);
  CHECK(s.trials == 10);
  CHECK(s.new_trials == 0);
  CHECK(s.best_config["prefetch"] == 8);
}

TEST_CASE("refine knobs: the budget holds the refinement, and a small one the search alone", "[tuning][refine]") {
  TempDir tmp("kiln_refine");
  auto db = Database::open(tmp / "t.db");
  const Task task = toy_task();
  const Task search = search_task(task);
  ToyRunner runner;
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.batch = 2;
  for (int trials : {5, 9}) {  // 5: under twice the refinement's room of 4
    o.trials = trials;
    RandomTuner tuner(*search.space, 3);
    const TuneResult r = tune_and_refine(task, search, tuner, builder, runner, *db, o, nullptr);
    CHECK(r.trials == trials);
    CHECK(count_records(task, *db) == trials);
  }
  // The first job searched 5; the second searched none more (9 - 4 of room)
  // and refined the two best, 4 records.
  CHECK(count_records(search, *db) == 5);
}

TEST_CASE("refine knobs: a pinned knob or a space without them measures nothing", "[tuning][refine]") {
  TempDir tmp("kiln_refine");
  auto db = Database::open(tmp / "t.db");
  ToyRunner runner;
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.trials = 3;
  o.batch = 3;
  for (bool pinned : {true, false}) {
    Task task = toy_task(pinned);
    if (pinned) {
      auto space = std::make_shared<ConfigSpace>(*task.space);
      space->pin("prefetch", 4);  // kiln tune --fix '{"prefetch":4}'
      task.space = space;
    }
    task.workload = pinned ? "toy:N=2" : "toy:N=3";
    const Task search = search_task(task);
    RandomTuner tuner(*search.space, 2);
    const size_t before = runner.seen.size();
    const TuneResult r = tune_and_refine(task, search, tuner, builder, runner, *db, o, nullptr);
    CHECK(runner.seen.size() == before + 3);
    CHECK(r.trials == 3);
  }
}

TEST_CASE("refine knobs: a variant that lowers to the same kernel as its base is not measured", "[tuning][refine]") {
  // Tile 3's kernel ignores the prefetch distance (as B packed at a parallel
  // loop ignores pack_buffers); the other tiles' kernels differ with it.
  const Task task = toy_task_with_kernels(6, [](const Config& c) {
    const int64_t tile = c.choice("tile");
    return tile * 100 + (tile == 3 ? 0 : c.choice("prefetch"));
  });
  ToyRunner runner;
  const TuneResult r = tune_toy(task, 1, runner, "kiln_refine_same").result;
  // The search's six, then tile 2's two variants; tile 3's would run its
  // own kernel again.
  REQUIRE(runner.seen.size() == 8);
  CHECK(std::vector<std::pair<int64_t, int64_t>>(runner.seen.begin() + 6, runner.seen.end()) ==
        std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {2, 8}});
  CHECK(r.trials == 8);
  CHECK(r.best_config["tile"] == 2);
  CHECK(r.best_config["prefetch"] == 8);
}

TEST_CASE("refine knobs: the trials of variants not measured go back to the search", "[tuning][refine]") {
  // No tile's kernel depends on the prefetch distance: the refinement
  // measures nothing, and the 4 trials it was given go to the search.
  const Task task = toy_task_with_kernels(12, [](const Config& c) { return c.choice("tile"); });
  ToyRunner runner;
  const ToyJob job = tune_toy(task, 5, runner, "kiln_refine_back");
  const TuneResult& r = job.result;
  REQUIRE(runner.seen.size() == 10);
  for (const auto& [tile, prefetch] : runner.seen) CHECK(prefetch == 0);
  CHECK(std::set<std::pair<int64_t, int64_t>>(runner.seen.begin(), runner.seen.end()).size() == 10);
  CHECK(r.trials == 10);
  CHECK(r.new_trials == 10);
  CHECK(job.records == 10);
}

TEST_CASE("refine knobs: the CPU GEMM and conv2d_nchwc templates refine their prefetch distance",
          "[tuning][refine][ops]") {
  for (const char* w : {"matmul:M=64,N=64,K=64", "conv2d_nchwc:C=32,H=8,W=8,K=32,R=3,S=3,pad=1"}) {
    INFO(w);
    OpInstance op = build_workload(w);
    auto space = find_op(op.op).define_space(op, kiln::testing::avx512_cpu());
    CHECK(space->knob("prefetch").refine);
    CHECK(space->knob("prefetch").options.front() == std::vector<int64_t>{0});
  }
  // The GEMM's double-buffered packing too, one buffer first.
  OpInstance mm = build_workload("matmul:M=64,N=64,K=64");
  auto space = find_op("matmul").define_space(mm, kiln::testing::avx512_cpu());
  CHECK(space->knob("pack_buffers").refine);
  CHECK(space->knob("pack_buffers").options.front() == std::vector<int64_t>{1});
}

TEST_CASE("screening: each batch is screened at a factor over the best median so far", "[tuning][screen]") {
  TempDir tmp("kiln_screen");
  auto db = Database::open(tmp / "t.db");
  const Task task = toy_task();
  ToyRunner runner;
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.trials = 6;
  o.batch = 2;
  RandomTuner tuner(*task.space, 1);
  tune_task(task, tuner, builder, runner, *db, o, nullptr);
  REQUIRE(runner.times.size() == 6);
  REQUIRE(runner.screens.size() == 3);
  CHECK(runner.screens[0] == 0);  // nothing measured yet: no yardstick
  double best = 1e9;
  for (size_t batch = 1; batch < 3; ++batch) {
    for (size_t i = 2 * (batch - 1); i < 2 * batch; ++i) best = std::min(best, runner.times[i]);
    CHECK(runner.screens[batch] == Approx(1.5 * best));
  }
  for (size_t i = 4; i < 6; ++i) best = std::min(best, runner.times[i]);

  // Resumed: the records' best is the yardstick from the first batch on.
  TuneOptions more = o;
  more.trials = 8;
  runner.screens.clear();
  RandomTuner again(*task.space, 2);
  tune_task(task, again, builder, runner, *db, more, nullptr);
  REQUIRE(runner.screens.size() == 1);
  CHECK(runner.screens[0] == Approx(1.5 * best));

  // --screen 0: no screening; a factor under 1 would screen the best.
  TuneOptions off = more;
  off.trials = 10;
  off.screen_factor = 0;
  runner.screens.clear();
  RandomTuner third(*task.space, 3);
  tune_task(task, third, builder, runner, *db, off, nullptr);
  CHECK(runner.screens == std::vector<double>{0});
  TuneOptions bad = off;
  bad.screen_factor = 0.5;
  CHECK_THROWS_WITH(tune_task(task, third, builder, runner, *db, bad, nullptr),
                    Catch::Contains("--screen must be 0 (no screening) or a factor of at least 1"));
}

TEST_CASE("confirmation: the fastest configs measured again, judged by their medians", "[tuning][confirm]") {
  TempDir tmp("kiln_confirm");
  auto db = Database::open(tmp / "t.db");
  const Task task = toy_task();
  const Task search = search_task(task);
  ToyRunner runner;
  runner.lucky = 4;  // 0.5 ms once, 5 ms after
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.trials = 64;  // more than the space: the search measures all 6, the refinement 4
  o.batch = 3;
  o.job = "j";
  RandomTuner tuner(*search.space, 1);
  const TuneResult r = tune_and_refine(task, search, tuner, builder, runner, *db, o, nullptr);
  // The search's two fastest, tile 4 (lucky) and 3, refined; then the four
  // fastest, tile 4, tile 3 with prefetch 0, 8 and 4, each measured twice
  // more, a round of all four at a time, each round afresh.
  REQUIRE(runner.seen.size() == 18);
  const std::vector<std::pair<int64_t, int64_t>> round{{4, 0}, {3, 0}, {3, 8}, {3, 4}};
  CHECK(std::vector<std::pair<int64_t, int64_t>>(runner.seen.begin() + 10, runner.seen.begin() + 14) == round);
  CHECK(std::vector<std::pair<int64_t, int64_t>>(runner.seen.begin() + 14, runner.seen.end()) == round);
  CHECK(runner.afresh == 2);
  CHECK(runner.screens.back() == 0);  // confirmations are never screened
  CHECK(r.trials == 18);
  CHECK(r.new_trials == 18);
  // Tile 4 measured 0.5, 5 and 5 ms: its median is 5. Tile 3 at 1 ms, with
  // prefetch 0 recorded first.
  CHECK(r.best_config["tile"] == 3);
  CHECK(r.best_config["prefetch"] == 0);
  CHECK(r.best_gflops == Approx(1.0));
  CHECK(db->best(task.key())->config == r.best_config);
  const auto records = db->records(task.key());
  CHECK(records.back().job == "j");
  CHECK(records.back().round == records[records.size() - 5].round + 1);  // a batch number per round

  // Resumed: the four are confirmed; tile 2 (1.5 ms), now among the four
  // fastest, is measured twice more, and then nothing.
  RandomTuner again(*search.space, 1);
  const TuneResult s = tune_and_refine(task, search, again, builder, runner, *db, o, nullptr);
  CHECK(runner.seen.size() == 20);
  CHECK(runner.seen.back() == std::pair<int64_t, int64_t>{2, 0});
  CHECK(s.new_trials == 2);
  CHECK(s.best_config == r.best_config);
  RandomTuner third(*search.space, 1);
  CHECK(tune_and_refine(task, search, third, builder, runner, *db, o, nullptr).new_trials == 0);
  CHECK(runner.seen.size() == 20);
}

TEST_CASE("confirmation: the search leaves it room within the budget, and small budgets skip it", "[tuning][confirm]") {
  TempDir tmp("kiln_confirm");
  auto db = Database::open(tmp / "t.db");
  const Task task = toy_task(true, 60);  // 60 configs to search
  const Task search = search_task(task);
  ToyRunner runner;
  PassingBuilder builder(&runner);
  TuneOptions o;
  o.trials = 64;
  o.batch = 16;
  RandomTuner tuner(*search.space, 5);
  const TuneResult r = tune_and_refine(task, search, tuner, builder, runner, *db, o, nullptr);
  // 52 searched, 4 refined, 8 confirming measurements.
  CHECK(count_records(search, *db) <= 52 + 8);
  CHECK(count_records(task, *db) == 64);
  CHECK(r.trials == 64);
  CHECK(runner.afresh == 2);

  // Under 64 trials: no confirmation, and the best by the same rule.
  Task small = toy_task(true, 60);
  small.workload = "toy:N=2";
  runner.lucky = 7;
  o.trials = 63;
  const Task small_search = search_task(small);  // the tuner keeps a reference to its space
  RandomTuner other(*small_search.space, 5);
  const TuneResult t = tune_and_refine(small, small_search, other, builder, runner, *db, o, nullptr);
  CHECK(runner.afresh == 2);
  CHECK(t.trials == 63);
  CHECK(db->best(small.key())->config == t.best_config);
}
