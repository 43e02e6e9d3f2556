// cost_model_accuracy: how well the tuner's cost model ranks measured
// configs it has not seen (issue 3 acceptance: pairwise accuracy >= 0.8).
//
//   build/bench/cost_model_accuracy --db F [--folds K] [--seed S] [--target T] WORKLOAD...
//
// For each workload, the successful records of its task in the database are
// split into K folds at random; for each fold, an XGBoostRanker (the tuner's
// options) is fitted on the other folds' features and per-task normalized
// GFLOP/s, and the pairwise ranking accuracy of its predictions is taken on
// the held-out fold. Prints every fold's accuracy and their mean.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <random>

#include "tasks/task_factory.h"
#include "base/error.h"
#include "costmodel/features.h"
#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "tuner/database.h"

using namespace kiln;

namespace {

struct Sample {
  FeatureVector x;
  double gflops;
};

std::vector<Sample> load_samples(Database& db, const Task& task) {
  std::vector<Sample> out;
  for (const auto& rec : db.records(task.key())) {
    if (!rec.ok() || rec.gflops <= 0) continue;
    try {
      Config c = task.space->from_json(rec.config);
      out.push_back({config_features(task, c), rec.gflops});
    } catch (const UserError&) {
      // a record from another version of the template: not comparable
    }
  }
  return out;
}

double fold_accuracy(const std::vector<Sample>& s, const std::vector<size_t>& order, int folds, int k) {
  std::vector<FeatureVector> train_x, test_x;
  std::vector<float> train_y, test_y;
  double best = 0;
  for (size_t i = 0; i < order.size(); ++i)
    if (static_cast<int>(i % folds) != k) best = std::max(best, s[order[i]].gflops);
  for (size_t i = 0; i < order.size(); ++i) {
    const Sample& x = s[order[i]];
    if (static_cast<int>(i % folds) == k) {
      test_x.push_back(x.x);
      test_y.push_back(static_cast<float>(x.gflops));
    } else {
      train_x.push_back(x.x);
      train_y.push_back(static_cast<float>(x.gflops / best));
    }
  }
  XGBoostRanker model;  // the tuner's defaults
  model.fit(train_x, train_y, std::vector<int>(train_x.size(), 0));
  return pairwise_accuracy(model.predict(test_x), test_y);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cost_model_accuracy: held-out pairwise ranking accuracy of the cost model"};
  std::string db_path, target_str;
  int folds = 5;
  uint64_t seed = 1;
  std::vector<std::string> workloads;
  app.add_option("--db", db_path, "tuning database")->required();
  app.add_option("--folds", folds, "number of folds (each is held out once)")->check(CLI::Range(2, 100));
  app.add_option("--seed", seed, "seed of the random split");
  app.add_option("--target", target_str, "target of the records (default: host)");
  app.add_option("workloads", workloads, "workload strings")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    Target target = target_str.empty() ? Target::host() : Target::parse(target_str);
    auto db = Database::open_existing(db_path);
    std::cout << std::fixed << std::setprecision(3);
    for (const std::string& w : workloads) {
      Task task = make_task(w, target, /*with_reference=*/false);
      std::vector<Sample> s = load_samples(*db, task);
      std::cout << task.workload << ": " << s.size() << " measured configs\n";
      if (static_cast<int>(s.size()) < 2 * folds) {
        std::cout << "  too few records for " << folds << " folds\n";
        continue;
      }
      std::vector<size_t> order(s.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
      double sum = 0;
      std::cout << "  fold accuracy:";
      for (int k = 0; k < folds; ++k) {
        double a = fold_accuracy(s, order, folds, k);
        sum += a;
        std::cout << " " << a;
      }
      std::cout << "\n  mean held-out pairwise accuracy: " << sum / folds << "\n";
    }
  } catch (const UserError& e) {
    std::cerr << "cost_model_accuracy: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
