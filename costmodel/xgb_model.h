// XGBoostRanker: the CostModel of the model-based tuner, gradient-boosted
// trees (XGBoost's C API) trained with the pairwise ranking objective
// ("rank:pairwise") on per-group normalized throughputs, as in AutoTVM.
//
// Every fit() trains a new booster from scratch. Pairs are formed only
// within a group (one group per task), so scores of different tasks are
// never compared. A fit with no usable pair (fewer than two samples, or all
// scores equal within every group) leaves the model untrained: predict()
// then returns zeros. Training and prediction are deterministic for a given
// seed. Errors reported by XGBoost are InternalErrors carrying
// XGBGetLastError(); inconsistent inputs (feature vectors of different
// lengths, non-finite scores, mismatched sizes) are user errors.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "costmodel/cost_model.h"

namespace kiln {

class XGBoostRanker : public CostModel {
 public:
  struct Options {
    // Tuned on measured matmul configs (100-300 training samples): shallow
    // trees, a small step and half the features per tree rank better than
    // depth 6 / eta 0.2 / all features.
    int num_rounds = 200;
    int max_depth = 4;
    double eta = 0.1;
    double min_child_weight = 1;
    double subsample = 1;
    double colsample_bytree = 0.5;
    // XGBoost's OpenMP threads spin while they wait: on a loaded 2-core
    // machine nthread = 2 made a fit ~10x slower (OMP_WAIT_POLICY=passive
    // avoids that). Results are the same for any thread count.
    int nthread = 1;
    uint64_t seed = 0;
    std::string objective = "rank:pairwise";  // any XGBoost objective, for experiments
    std::string tree_method = "hist";
  };

  XGBoostRanker();
  explicit XGBoostRanker(const Options& options);
  ~XGBoostRanker() override;
  XGBoostRanker(const XGBoostRanker&) = delete;
  XGBoostRanker& operator=(const XGBoostRanker&) = delete;

  void fit(const std::vector<FeatureVector>& x, const std::vector<float>& scores,
           const std::vector<int>& groups) override;
  // Thread-safe (calls are serialized).
  std::vector<float> predict(const std::vector<FeatureVector>& x) const override;
  bool trained() const override;

  // Length of the feature vectors the current model was trained on (0 when
  // untrained).
  size_t num_features() const;
  const Options& options() const { return options_; }

 private:
  struct Booster;
  Options options_;
  std::unique_ptr<Booster> booster_;
  size_t num_features_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace kiln
