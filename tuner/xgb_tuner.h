// XGBTuner: model-guided search (AutoTVM's XGBTuner). A cost model trained
// on the measured configs ranks candidates; simulated annealing over the
// config space proposes the top predicted unmeasured configs, and an epsilon
// share of each batch is random unmeasured configs, for exploration.
//
// - Warm-up: until `num_warmup_random` configs of this task (default: one
//   batch) are measured and the model could be trained, batches are random.
//   With transfer data the model is used from the first batch.
// - update() records results; a config's score is its throughput
//   (1 / median ms) divided by the best throughput of this task so far; a
//   failed config scores 0. The model is refit from scratch (CostModel::fit)
//   before the next batch, on this task's records (group 0) plus the transfer
//   data (one group per earlier task).
// - Features (feature_fn: lower the config, extract features; a few ms each)
//   are cached by config key; a feature_fn that throws UserError (a config
//   the template rejects) marks the config invalid, and the search avoids it.
//   Predictions are cached per model version. The annealer's moves may reach
//   many new configs; at most `max_new_features` new feature extractions are
//   spent per batch, after which configs without cached features score as
//   invalid (the chains then only move among known configs and the search
//   ends by its early stop). With the default annealer (128 chains, up to
//   300 steps) the budget of 2000 is usually spent in every batch; on the
//   synthetic function of tests/test_tuners.cpp (6 knobs, 604800 configs, 5
//   batches of 16) the mean best found over 20 seeds was 0.87 / 0.89 / 0.93
//   / 0.94 / 0.93 with budgets 250 / 500 / 1000 / 2000 / 8000, random search
//   0.75.
// - Predictions are rescaled to [0, 1] over this model's predictions of its
//   own training rows, so the annealing temperatures mean the same across
//   models.
// Same seed and same update inputs (and a deterministic model) give the same
// proposals.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "costmodel/cost_model.h"
#include "tuner/random_tuner.h"
#include "tuner/simulated_annealing.h"
#include "tuner/tuner.h"

namespace kiln {

struct XGBTunerOptions {
  int batch_size = 64;  // configs the tuning loop asks for per batch (next_batch's n)
  // Top configs the annealer keeps per batch; at least the batch's model share is used.
  int plan_size = 64;
  double epsilon = 0.05;        // share of each batch that is random (rounded to nearest)
  int num_warmup_random = -1;   // measured configs of this task before the model proposes; < 0: batch_size
  int max_new_features = 2000;  // new feature extractions the annealer may spend per batch
  AnnealOptions anneal;         // anneal.seed is replaced by one derived from `seed`
  uint64_t seed = 0;
};

struct XGBTunerStats {
  int64_t batches = 0;
  int64_t model_proposals = 0;   // proposed from the annealer's top-k
  int64_t random_proposals = 0;  // warm-up, epsilon share, and fill when the annealer found too few
  int64_t fits = 0;
  int64_t feature_extractions = 0;  // feature_fn calls in total
  // The last batch: how it was made.
  int last_model = 0, last_random = 0, last_seeded = 0;
  int last_feature_extractions = 0;  // by the annealer in next_batch
  int last_anneal_steps = 0;
  int64_t last_anneal_evaluations = 0;
};

class XGBTuner : public Tuner {
 public:
  using FeatureFn = std::function<FeatureVector(const Config&)>;

  // `space` must outlive the tuner (as it must outlive its Configs).
  XGBTuner(const ConfigSpace& space, FeatureFn feature_fn, std::unique_ptr<CostModel> model,
           XGBTunerOptions options = {});

  // Up to n unproposed, unmeasured configs: the model's share first, then the random ones.
  std::vector<Config> next_batch(int n) override;
  void update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) override;
  bool has_next() const override { return random_.has_next(); }
  // The current model's rescaled scores (see above); refits first when new
  // data arrived. Features are extracted as needed (not from the annealer's
  // budget).
  std::vector<double> predict(const std::vector<Config>& configs) override;

  // Records of one earlier task of the same op (warm start): features and
  // normalized scores (1 = best of that task, 0 = failed). Call once per task
  // with a distinct `group`; calls with the same group add to that group.
  void add_transfer_data(const std::vector<FeatureVector>& features, const std::vector<float>& scores, int group);
  // Configs to measure first (the best configs of neighbouring tuned shapes,
  // mapped into this space): the next batch starts with those not yet
  // measured or proposed, in the order given, before the model's and the
  // random share.
  void add_seeds(const std::vector<Config>& seeds);

  const XGBTunerStats& stats() const { return stats_; }
  const CostModel& model() const { return *model_; }
  const XGBTunerOptions& options() const { return options_; }

 private:
  struct Record {
    Config config;
    double throughput = 0;  // 1 / median ms; 0 when failed
  };
  // Cached features of a config; nullptr when its features are invalid;
  // `budget` new extractions may be spent (decremented), none when null.
  const FeatureVector* features_of(const Config& c, uint64_t key, int* budget);
  // Rescaled predictions (-inf: invalid, or no features within `budget`:
  // see features_of).
  std::vector<float> score(const std::vector<Config>& configs, int* budget);
  void refit();
  void propose(const Config& c, std::vector<Config>* out);

  const ConfigSpace* space_;  // outlives the search, like the Configs it makes
  FeatureFn feature_fn_;
  std::unique_ptr<CostModel> model_;
  XGBTunerOptions options_;
  ConfigKeyer keyer_;
  RandomTuner random_;  // random picks; also tracks every taken config
  SimulatedAnnealing anneal_;

  std::unordered_set<uint64_t> taken_;  // keys proposed or measured
  std::vector<Config> seeds_;            // not proposed yet
  std::vector<uint64_t> record_order_;  // keys of this task's records, first measured first
  std::unordered_map<uint64_t, Record> records_;
  std::map<int, std::pair<std::vector<FeatureVector>, std::vector<float>>> transfer_;  // by group

  std::unordered_map<uint64_t, FeatureVector> features_;
  std::unordered_set<uint64_t> invalid_;
  int batch_budget_ = 0;  // new extractions left to the annealer in this batch

  bool dirty_ = false;  // data changed since the last fit
  float score_lo_ = 0, score_scale_ = 1;
  std::unordered_map<uint64_t, float> predictions_;  // of the current model

  XGBTunerStats stats_;
};

}  // namespace kiln
