// The cost model on real measurements: configs of a small matmul schedule
// space (tile sizes, loop order, vectorize / unroll) are lowered, JIT-built
// and timed on this machine; the XGBoost ranker is trained on some and its
// pairwise ranking accuracy measured on the others. Timings are noisy, so the
// assertion is loose; the accuracy is printed.
//
// LLVM's O3 pipeline costs ~20-50 ms of CPU per kernel, so the default test
// uses 60 configs; the hidden "[.slow]" variant uses 150 (100 train, 50
// held out): run it with `test_costmodel_measured "[slow]"`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <random>

#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "compute/error.h"
#include "costmodel/features.h"
#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"
#include "schedule/config_space.h"
#include "schedule/lower.h"
#include "support/te_examples.h"

using namespace kiln;

namespace {

constexpr int kSize = 64;

ConfigSpace matmul_space() {
  ConfigSpace sp;
  sp.define_split("tile_i", kSize, 2);
  sp.define_split("tile_j", kSize, 2, 16);
  sp.define_split("tile_k", kSize, 2, 4);
  // Permutations of {io, jo, ko, ii, ki, ji}.
  sp.define_reorder("order", {{0, 1, 2, 3, 4, 5},
                              {0, 1, 2, 4, 3, 5},
                              {1, 0, 2, 4, 5, 3},
                              {0, 2, 1, 3, 4, 5},
                              {0, 1, 3, 2, 5, 4}});
  sp.define_annotate("ann_j", {"none", "vec", "unroll"});
  sp.define_annotate("ann_k", {"none", "unroll"});
  return sp;
}

// The plain 64^3 matmul scheduled by a config; UserError when the schedule
// is illegal (e.g. ji vectorized while not innermost).
LoweredFunc instantiate(const Config& c, const std::string& name, LowerDepth depth) {
  auto mm = testing::plain_matmul(kSize, kSize, kSize);
  Schedule s({mm.C});
  Stage st = s[mm.C];
  IterVar io, ii, jo, ji, ko, ki;
  st.split(st.axis()[0], c.split("tile_i")[1], &io, &ii);
  st.split(st.axis()[1], c.split("tile_j")[1], &jo, &ji);
  st.split(st.reduce_axis()[0], c.split("tile_k")[1], &ko, &ki);
  const std::vector<IterVar> loops = {io, jo, ko, ii, ki, ji};
  std::vector<IterVar> order;
  for (int64_t p : c.reorder("order")) order.push_back(loops[p]);
  st.reorder(order);
  if (c.annotate("ann_j") == "vec") st.vectorize(ji);
  if (c.annotate("ann_j") == "unroll") st.unroll(ji);
  if (c.annotate("ann_k") == "unroll") st.unroll(ki);
  return lower(s, {mm.A, mm.B, mm.C}, name, depth);
}

// Measures n distinct random configs, trains on the first n_train and
// returns the pairwise accuracy on the rest.
double measured_ranking_accuracy(int n, int n_train, uint64_t seed) {
  ConfigSpace sp = matmul_space();
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> seen;
  std::vector<LoweredFunc> funcs;
  std::vector<FeatureVector> features;
  while (static_cast<int>(funcs.size()) < n) {
    Config c = sp.random(rng);
    if (std::find(seen.begin(), seen.end(), c.index()) != seen.end()) continue;
    seen.push_back(c.index());
    try {
      std::string name = "mm" + std::to_string(funcs.size());
      funcs.push_back(instantiate(c, name, LowerDepth::kFull));
      features.push_back(extract_features(instantiate(c, name, LowerDepth::kAnnotatedLoops)));
    } catch (const UserError&) {
      continue;  // an illegal point of the space, as a tuner would skip it
    }
  }
  auto jit = JitModule::compile(funcs, Target::host());
  rt::NDArray a = rt::NDArray::empty({kSize, kSize}, to_runtime_dtype(DType::f32()));
  rt::NDArray b = rt::NDArray::empty({kSize, kSize}, to_runtime_dtype(DType::f32()));
  rt::NDArray out = rt::NDArray::empty({kSize, kSize}, to_runtime_dtype(DType::f32()));
  a.fill_random(1);
  b.fill_random(2);
  void* args[3] = {a.data(), b.data(), out.data()};
  std::vector<float> throughput;
  for (auto& f : funcs) {
    kiln_packed_fn fn = jit->get_function(f.name);
    rt::TimeOptions o;
    o.repeat = 5;
    o.min_repeat_ms = 0.3;
    rt::TimeResult r = rt::time_function([&] { REQUIRE(fn(args) == 0); }, o);
    throughput.push_back(static_cast<float>(1.0 / r.min_ms));
  }
  float best = *std::max_element(throughput.begin(), throughput.end());
  for (auto& t : throughput) t /= best;  // normalized like the tuner's scores

  std::vector<FeatureVector> x_train(features.begin(), features.begin() + n_train);
  std::vector<FeatureVector> x_test(features.begin() + n_train, features.end());
  std::vector<float> y_train(throughput.begin(), throughput.begin() + n_train);
  std::vector<float> y_test(throughput.begin() + n_train, throughput.end());
  XGBoostRanker model;
  model.fit(x_train, y_train, std::vector<int>(x_train.size(), 0));
  REQUIRE(model.trained());
  double acc = pairwise_accuracy(model.predict(x_test), y_test);
  float worst = *std::min_element(throughput.begin(), throughput.end());
  std::cout << "measured matmul " << kSize << "^3: " << n << " configs (best/worst " << 1 / worst
            << "x), trained on " << n_train << ", held-out pairwise accuracy " << acc << "\n";
  return acc;
}

}  // namespace

TEST_CASE("the ranker orders measured matmul configs better than chance", "[costmodel][measured]") {
  CHECK(measured_ranking_accuracy(60, 40, 7) > 0.6);
}

TEST_CASE("the ranker orders 150 measured matmul configs", "[.slow][costmodel][measured]") {
  CHECK(measured_ranking_accuracy(150, 100, 7) > 0.6);
}
