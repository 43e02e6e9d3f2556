// Search strategies: random and grid tuners propose each config once and
// exhaust small spaces; simulated annealing finds the optimum of a synthetic
// function and is deterministic; the XGB tuner (with an oracle cost model,
// and with the real XGBoost ranker when it is built) finds good configs,
// explores, never repeats a config, and stays within its feature budget.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "base/error.h"
#include "tuner/grid_tuner.h"
#include "tuner/random_tuner.h"
#include "tuner/simulated_annealing.h"
#include "tuner/xgb_tuner.h"

#if __has_include("costmodel/xgb_model.h")
#include "costmodel/xgb_model.h"
#define KILN_HAVE_XGB_MODEL 1
#endif

using namespace kiln;

namespace {

std::shared_ptr<ConfigSpace> choice_space(const std::vector<int>& sizes) {
  auto s = std::make_shared<ConfigSpace>();
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<int64_t> values;
    for (int v = 0; v < sizes[k]; ++v) values.push_back(v);
    s->define_choice("k" + std::to_string(k), values);
  }
  return s;
}

// 10*12*8*9*7*10 = 604800 configs.
const std::vector<int> kSynthSizes = {10, 12, 8, 9, 7, 10};

// A separable function of the knob choices: the mean over knobs of a
// per-knob table. Random tables (values in [0.05, 0.8], 1 at one hidden
// choice per knob) have no structure to exploit but a unique maximum 1;
// smooth tables are unimodal bumps a model can learn from few samples.
struct Synthetic {
  std::vector<std::vector<double>> table;
  std::vector<int> best;

  Synthetic(const std::vector<int>& sizes, uint64_t seed, bool smooth) {
    std::mt19937_64 rng(seed);
    for (int n : sizes) {
      int b = std::uniform_int_distribution<int>(0, n - 1)(rng);
      std::vector<double> t(n);
      for (int c = 0; c < n; ++c) {
        double d = static_cast<double>(c - b) / n;
        t[c] = smooth ? 1.0 - 3.0 * d * d : std::uniform_real_distribution<double>(0.05, 0.8)(rng);
      }
      t[b] = 1.0;
      table.push_back(t);
      best.push_back(b);
    }
  }
  double of_choices(const std::vector<float>& x) const {
    double s = 0;
    for (size_t k = 0; k < table.size(); ++k) s += table[k][static_cast<size_t>(x[k])];
    return s / table.size();
  }
  double operator()(const Config& c) const { return of_choices(features(c)); }
  static FeatureVector features(const Config& c) {
    FeatureVector f;
    for (int v : c.choices()) f.push_back(static_cast<float>(v));
    return f;
  }
  // A measurement whose throughput is the function's value (knob 0 at
  // `fail_choice` fails, when >= 0).
  MeasureResult measure(const Config& c, int fail_choice = -1) const {
    MeasureResult r;
    if (c.choices()[0] == fail_choice) {
      r.error = ErrorKind::kRuntimeCrash;
      return r;
    }
    r.samples_ms = {1.0 / (*this)(c), 1.0 / (*this)(c)};
    return r;
  }
};

std::vector<MeasureResult> measure_all(const Synthetic& f, const std::vector<Config>& cs, int fail_choice = -1) {
  std::vector<MeasureResult> out;
  for (auto& c : cs) out.push_back(f.measure(c, fail_choice));
  return out;
}

// A cost model that knows the function exactly (features are the choices).
class OracleModel : public CostModel {
 public:
  explicit OracleModel(const Synthetic& f) : f_(f) {}
  void fit(const std::vector<FeatureVector>& x, const std::vector<float>& scores,
           const std::vector<int>& groups) override {
    REQUIRE(x.size() == scores.size());
    REQUIRE(groups.size() == scores.size());
    ++fits;
    rows = x.size();
    last_groups = groups;
    trained_ = true;
  }
  std::vector<float> predict(const std::vector<FeatureVector>& x) const override {
    std::vector<float> out;
    for (auto& r : x) out.push_back(trained_ ? static_cast<float>(f_.of_choices(r)) : 0.0f);
    return out;
  }
  bool trained() const override { return trained_; }

  int fits = 0;
  size_t rows = 0;
  std::vector<int> last_groups;

 private:
  const Synthetic& f_;
  bool trained_ = false;
};

// The function itself as the annealer's score.
SimulatedAnnealing::ScoreFn exact_score(const Synthetic& f) {
  return [&f](const std::vector<Config>& cs) {
    std::vector<float> s;
    for (auto& c : cs) s.push_back(static_cast<float>(f(c)));
    return s;
  };
}

std::vector<uint64_t> indices(const std::vector<Config>& cs) {
  std::vector<uint64_t> out;
  for (auto& c : cs) out.push_back(c.index());
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Random and grid

TEST_CASE("random tuner proposes each config once and exhausts a small space", "[tuner]") {
  auto space = choice_space({3, 4, 5});
  RandomTuner t(*space, 11);
  std::set<uint64_t> seen;
  while (t.has_next()) {
    auto batch = t.next_batch(7);
    REQUIRE(!batch.empty());
    for (auto& c : batch) CHECK(seen.insert(c.index()).second);
  }
  CHECK(seen.size() == 60);
  CHECK(t.remaining() == 0);
  CHECK(t.next_batch(5).empty());
  // Not in index order.
  RandomTuner u(*space, 11);
  auto first = indices(u.next_batch(10));
  CHECK(!std::is_sorted(first.begin(), first.end()));
}

TEST_CASE("random tuner skips measured configs and is deterministic per seed", "[tuner]") {
  auto space = choice_space({4, 5});
  RandomTuner a(*space, 3), b(*space, 3), c(*space, 4);
  CHECK(indices(a.next_batch(20)) == indices(b.next_batch(20)));
  CHECK(indices(RandomTuner(*space, 3).next_batch(20)) != indices(c.next_batch(20)));

  RandomTuner r(*space, 5);
  std::vector<Config> measured = {space->get(0), space->get(7), space->get(19)};
  r.update(measured, std::vector<MeasureResult>(3));
  r.update({space->get(7)}, std::vector<MeasureResult>(1));  // again: no effect
  CHECK(r.remaining() == 17);
  std::set<uint64_t> seen;
  for (auto& cfg : r.next_batch(100)) seen.insert(cfg.index());
  CHECK(seen.size() == 17);
  CHECK(!seen.count(0));
  CHECK(!seen.count(7));
  CHECK(!seen.count(19));
  CHECK(!r.has_next());
}

TEST_CASE("random tuner draws uniformly", "[tuner]") {
  auto space = choice_space({10});
  std::vector<int> counts(10);
  for (uint64_t seed = 0; seed < 2000; ++seed) ++counts[RandomTuner(*space, seed).next_batch(1)[0].index()];
  for (int n : counts) {  // expected 200, sd ~13
    CHECK(n > 140);
    CHECK(n < 260);
  }
}

TEST_CASE("random tuner handles spaces beyond 2^63 and beyond 2^64", "[tuner]") {
  // 2^63 * 3 / 2: fits in 64 bits, indices above 2^63 must come up.
  std::vector<int> sizes(62, 2);
  sizes.push_back(3);
  auto big = choice_space(sizes);
  REQUIRE(big->size() == (uint64_t{1} << 63) / 2 * 3);
  RandomTuner t(*big, 1);
  std::set<uint64_t> seen;
  int high = 0;
  for (auto& c : t.next_batch(1000)) {
    seen.insert(c.index());
    high += c.index() >= (uint64_t{1} << 63);
  }
  CHECK(seen.size() == 1000);
  CHECK(high > 200);
  CHECK(t.remaining() == big->size() - 1000);

  // 2^70 configs: the size saturates, the tuner tracks choices by hash.
  auto huge = choice_space(std::vector<int>(70, 2));
  REQUIRE(huge->size() == UINT64_MAX);
  RandomTuner h(*huge, 2);
  std::set<std::vector<int>> configs;
  for (auto& c : h.next_batch(2000)) configs.insert(c.choices());
  CHECK(configs.size() == 2000);
  CHECK(h.has_next());
  std::mt19937_64 rng(9);
  Config some = huge->random(rng);
  h.exclude(some);
  CHECK(h.taken(some));
}

TEST_CASE("grid tuner goes in index order, skips measured configs, and ends", "[tuner]") {
  auto space = choice_space({3, 4, 5});
  GridTuner g(*space);
  g.update({space->get(1), space->get(2), space->get(30)}, std::vector<MeasureResult>(3));
  std::vector<uint64_t> got;
  while (g.has_next())
    for (auto& c : g.next_batch(7)) got.push_back(c.index());
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < 60; ++i)
    if (i != 1 && i != 2 && i != 30) want.push_back(i);
  CHECK(got == want);
  CHECK(g.next_batch(3).empty());
}

// ---------------------------------------------------------------------------
// Simulated annealing

TEST_CASE("simulated annealing finds the optimum of a separable function", "[tuner][sa]") {
  auto space = choice_space(kSynthSizes);
  REQUIRE(space->size() == 604800);
  for (uint64_t seed : {1, 2, 3}) {
    Synthetic f(kSynthSizes, 100 + seed, false);
    AnnealOptions o;
    o.num_chains = 64;
    o.max_steps = 300;
    o.early_stop = 60;
    o.seed = seed;
    SimulatedAnnealing sa(*space, o);
    int64_t calls = 0;
    auto score = [&](const std::vector<Config>& cs) {
      ++calls;
      std::vector<float> s;
      for (auto& c : cs) s.push_back(static_cast<float>(f(c)));
      return s;
    };
    AnnealResult r = sa.find_top(8, score, {});
    REQUIRE(r.configs.size() == 8);
    CHECK(r.configs[0].choices() == f.best);
    CHECK(r.scores[0] == Approx(1.0));
    CHECK(std::is_sorted(r.scores.rbegin(), r.scores.rend()));
    // Bounded: at most 64 * 301 evaluations (~3% of the space), one call per step.
    CHECK(r.evaluations <= 64 * 301);
    CHECK(r.evaluations == 64 * (r.steps + 1));
    CHECK(calls == r.steps + 1);
    std::set<uint64_t> distinct;
    for (auto& c : r.configs) distinct.insert(c.index());
    CHECK(distinct.size() == 8);
  }
}

TEST_CASE("simulated annealing is deterministic per seed and keeps its chains", "[tuner][sa]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 5, false);
  auto score = exact_score(f);
  AnnealOptions o;
  o.num_chains = 16;
  o.max_steps = 40;
  o.early_stop = 0;
  o.seed = 9;
  SimulatedAnnealing a(*space, o), b(*space, o);
  auto ra = a.find_top(5, score, {}), rb = b.find_top(5, score, {});
  CHECK(indices(ra.configs) == indices(rb.configs));
  CHECK(ra.scores == rb.scores);
  CHECK(ra.steps == 40);
  CHECK(indices(a.chains()) == indices(b.chains()));
  o.seed = 10;
  SimulatedAnnealing c(*space, o);
  c.find_top(5, score, {});
  CHECK(indices(c.chains()) != indices(a.chains()));

  // A call with no steps only scores the chains (drawn at random the first time).
  AnnealOptions z = o;
  z.max_steps = 0;
  auto r0 = SimulatedAnnealing(*space, z).find_top(100, score, {});
  CHECK(r0.evaluations == 16);
  CHECK(r0.steps == 0);
  CHECK(r0.configs.size() <= 16);
  // The next call starts from where the chains stopped.
  auto before = indices(a.chains());
  std::vector<uint64_t> first_scored;
  auto recording = [&](const std::vector<Config>& cs) {
    if (first_scored.empty()) first_scored = indices(cs);
    return score(cs);
  };
  auto again = a.find_top(5, recording, {});
  CHECK(first_scored == before);
  CHECK(again.evaluations == 16 * 41);
  CHECK(indices(a.chains()) != before);
}

TEST_CASE("simulated annealing excludes given configs and avoids invalid scores", "[tuner][sa]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 21, false);
  uint64_t opt = Config(space.get(), f.best).index();
  AnnealOptions o;
  o.num_chains = 64;
  o.seed = 4;
  SimulatedAnnealing sa(*space, o);
  // Knob 1 at choice 0 is "invalid" (NaN score).
  auto score = [&](const std::vector<Config>& cs) {
    std::vector<float> s;
    for (auto& c : cs) s.push_back(c.choices()[1] == 0 ? NAN : static_cast<float>(f(c)));
    return s;
  };
  std::unordered_set<uint64_t> exclude = {opt};
  auto r = sa.find_top(10, score, exclude);
  REQUIRE(r.configs.size() == 10);
  for (auto& c : r.configs) {
    CHECK(c.index() != opt);
    CHECK(c.choices()[1] != 0);
  }
  for (float s : r.scores) CHECK(std::isfinite(s));
  CHECK(r.scores[0] < 1.0f);
}

TEST_CASE("simulated annealing options are checked", "[tuner][sa][user_error]") {
  auto space = choice_space({4});
  AnnealOptions o;
  o.decay = AnnealOptions::Decay::kGeometric;  // temp_end = 0
  CHECK_THROWS_AS(SimulatedAnnealing(*space, o), UserError);
  o.temp_end = 0.01;
  CHECK_NOTHROW(SimulatedAnnealing(*space, o));
  AnnealOptions c;
  c.num_chains = 0;
  CHECK_THROWS_WITH(SimulatedAnnealing(*space, c), Catch::Contains("at least one chain"));
}

TEST_CASE("geometric annealing also finds the optimum", "[tuner][sa]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 77, false);
  AnnealOptions o;
  o.num_chains = 64;
  o.decay = AnnealOptions::Decay::kGeometric;
  o.temp_start = 0.1;
  o.temp_end = 0.001;
  o.seed = 8;
  SimulatedAnnealing sa(*space, o);
  auto r = sa.find_top(8, exact_score(f), {});
  REQUIRE(r.configs.size() == 8);
  CHECK(r.configs[0].choices() == f.best);
}

// ---------------------------------------------------------------------------
// XGB tuner with an oracle model

namespace {

XGBTunerOptions small_options(uint64_t seed) {
  XGBTunerOptions o;
  o.plan_size = 32;
  o.batch_size = 16;  // warm-up: one batch
  o.epsilon = 0.125;  // 2 of 16
  o.anneal.num_chains = 64;
  o.anneal.max_steps = 200;
  o.anneal.early_stop = 40;
  o.seed = seed;
  return o;
}

struct OracleRun {
  std::vector<std::vector<uint64_t>> batches;
  std::vector<XGBTunerStats> stats;
  int found_at = -1;  // first batch containing the optimum
};

OracleRun run_oracle(const std::shared_ptr<ConfigSpace>& space, const Synthetic& f, const XGBTunerOptions& o,
                     int batches, int fail_choice = -1) {
  OracleRun run;
  XGBTuner t(*space, Synthetic::features, std::make_unique<OracleModel>(f), o);
  for (int b = 0; b < batches && t.has_next(); ++b) {
    auto cs = t.next_batch(16);
    run.batches.push_back(indices(cs));
    run.stats.push_back(t.stats());
    for (auto& c : cs)
      if (c.choices() == f.best && run.found_at < 0) run.found_at = b;
    t.update(cs, measure_all(f, cs, fail_choice));
  }
  return run;
}

}  // namespace

TEST_CASE("xgb tuner with an oracle model proposes the optimum within a few batches", "[tuner][xgb]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 31, false);
  OracleRun run = run_oracle(space, f, small_options(1), 4, /*fail_choice=*/3);
  REQUIRE(run.batches.size() == 4);
  // Warm-up batch random, then 14 from the model and 2 random.
  CHECK(run.stats[0].last_random == 16);
  CHECK(run.stats[0].last_model == 0);
  for (int b = 1; b < 4; ++b) {
    CHECK(run.stats[b].last_model == 14);
    CHECK(run.stats[b].last_random == 2);
  }
  CHECK(run.found_at >= 1);
  CHECK(run.found_at <= 2);
  std::set<uint64_t> seen;
  for (auto& b : run.batches)
    for (uint64_t i : b) CHECK(seen.insert(i).second);
  CHECK(seen.size() == 64);
}

TEST_CASE("xgb tuner predicts a batch before it is measured, once its model is trained", "[tuner][xgb]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 31, false);
  XGBTuner t(*space, Synthetic::features, std::make_unique<OracleModel>(f), small_options(1));
  auto warmup = t.next_batch(16);
  CHECK(t.predict(warmup).empty());  // no trained model yet: no predictions to store
  t.update(warmup, measure_all(f, warmup));
  auto batch = t.next_batch(16);
  std::vector<double> p = t.predict(batch);
  REQUIRE(p.size() == batch.size());
  // The oracle's scores, rescaled: the same order as the function's values.
  int ordered = 0;
  for (size_t i = 0; i < batch.size(); ++i)
    for (size_t j = 0; j < batch.size(); ++j)
      if (f(batch[i]) < f(batch[j])) {
        CHECK(p[i] < p[j]);
        ++ordered;
      }
  CHECK(ordered > 0);
  RandomTuner r(*space, 1);
  CHECK(r.predict(r.next_batch(4)).empty());  // a tuner without a model predicts nothing
}

TEST_CASE("xgb tuner is deterministic per seed", "[tuner][xgb]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 32, false);
  auto a = run_oracle(space, f, small_options(5), 3);
  auto b = run_oracle(space, f, small_options(5), 3);
  auto c = run_oracle(space, f, small_options(6), 3);
  CHECK(a.batches == b.batches);
  CHECK(a.batches != c.batches);
}

TEST_CASE("xgb tuner refits on all records and uses transfer data from the start", "[tuner][xgb]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 33, false);
  auto model = std::make_unique<OracleModel>(f);
  OracleModel* oracle = model.get();
  XGBTuner t(*space, Synthetic::features, std::move(model), small_options(2));
  // Two earlier tasks' records (the oracle ignores the data, but sees the groups).
  std::mt19937_64 rng(1);
  for (int group : {7, 3}) {
    std::vector<FeatureVector> x;
    std::vector<float> y;
    for (int i = 0; i < 5; ++i) {
      x.push_back(Synthetic::features(space->random(rng)));
      y.push_back(0.2f * i);
    }
    t.add_transfer_data(x, y, group);
  }
  auto first = t.next_batch(16);
  CHECK(oracle->fits == 1);
  CHECK(oracle->rows == 10);
  // Groups contiguous, one per earlier task (3 before 7).
  CHECK(oracle->last_groups == std::vector<int>{1, 1, 1, 1, 1, 2, 2, 2, 2, 2});
  CHECK(t.stats().last_model == 14);
  bool found = false;
  for (auto& c : first) found |= c.choices() == f.best;
  CHECK(found);
  t.update(first, measure_all(f, first));
  t.next_batch(16);
  CHECK(oracle->fits == 2);
  CHECK(oracle->rows == 26);
  CHECK(std::count(oracle->last_groups.begin(), oracle->last_groups.end(), 0) == 16);
  CHECK_THROWS_AS(t.add_transfer_data({{1.0f}}, {}, 1), UserError);
}

TEST_CASE("xgb tuner exhausts a small space without repeats", "[tuner][xgb]") {
  auto space = choice_space({3, 4, 5});
  Synthetic f({3, 4, 5}, 34, false);
  XGBTunerOptions o = small_options(3);
  o.num_warmup_random = 8;
  OracleRun run = run_oracle(space, f, o, 10);
  std::set<uint64_t> seen;
  for (auto& b : run.batches)
    for (uint64_t i : b) CHECK(seen.insert(i).second);
  CHECK(seen.size() == 60);
  REQUIRE(run.batches.size() == 4);
  CHECK(run.batches.back().size() == 12);
}

TEST_CASE("xgb tuner keeps to its feature budget and avoids rejected configs", "[tuner][xgb]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 35, false);
  int extractions = 0;
  auto features = [&](const Config& c) {
    ++extractions;
    if (c.choices()[2] == 1) user_error() << "the template rejects this config";
    return Synthetic::features(c);
  };
  XGBTunerOptions o = small_options(4);
  o.max_new_features = 150;
  XGBTuner t(*space, features, std::make_unique<OracleModel>(f), o);
  for (int b = 0; b < 4; ++b) {
    int before = extractions;
    auto cs = t.next_batch(16);
    CHECK(extractions - before <= 150);
    CHECK(t.stats().last_feature_extractions <= 150);
    for (int i = 0; i < t.stats().last_model; ++i) CHECK(cs[i].choices()[2] != 1);
    before = extractions;
    t.update(cs, measure_all(f, cs));
    CHECK(extractions - before <= 16);  // only configs the annealer did not score
  }
  CHECK(t.stats().feature_extractions == extractions);
}

TEST_CASE("xgb tuner options are checked", "[tuner][xgb][user_error]") {
  auto space = choice_space({4});
  Synthetic f({4}, 1, false);
  XGBTunerOptions o;
  o.epsilon = 1.5;
  CHECK_THROWS_WITH(XGBTuner(*space, Synthetic::features, std::make_unique<OracleModel>(f), o),
                    Catch::Contains("epsilon"));
  CHECK_THROWS_AS(XGBTuner(*space, nullptr, std::make_unique<OracleModel>(f)), UserError);
}

// ---------------------------------------------------------------------------
// XGB tuner with the real XGBoost ranker

#ifdef KILN_HAVE_XGB_MODEL
namespace {
// Best function value found by a tuner in `batches` batches of 16.
double best_found(Tuner& t, const Synthetic& f, int batches) {
  double best = 0;
  for (int b = 0; b < batches && t.has_next(); ++b) {
    auto cs = t.next_batch(16);
    for (auto& c : cs) best = std::max(best, f(c));
    t.update(cs, measure_all(f, cs));
  }
  return best;
}
}  // namespace

TEST_CASE("xgb tuner with the XGBoost ranker beats random search", "[tuner][xgb]") {
  auto space = choice_space(kSynthSizes);
  Synthetic f(kSynthSizes, 40, /*smooth=*/true);
  XGBTunerOptions o;
  o.batch_size = 16;
  o.epsilon = 0.125;
  o.seed = 1;
  XGBTuner xgb(*space, Synthetic::features, std::make_unique<XGBoostRanker>(), o);
  RandomTuner random(*space, 1);
  double with_model = best_found(xgb, f, 5), without = best_found(random, f, 5);
  CHECK(xgb.stats().model_proposals == 4 * 14);
  CHECK(with_model > without);
  CHECK(with_model >= 0.97);

  // Same seed, same proposals (the ranker trains deterministically).
  auto proposals = [&](uint64_t seed) {
    XGBTunerOptions p = o;
    p.seed = seed;
    XGBTuner t(*space, Synthetic::features, std::make_unique<XGBoostRanker>(), p);
    std::vector<uint64_t> all;
    for (int b = 0; b < 3; ++b) {
      auto cs = t.next_batch(16);
      for (uint64_t i : indices(cs)) all.push_back(i);
      t.update(cs, measure_all(f, cs));
    }
    return all;
  };
  CHECK(proposals(3) == proposals(3));
}
#endif
