#include "tuner/xgb_tuner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace kiln {

namespace {

// Independent seeds for the random picks and the annealer from one seed.
uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  uint64_t x = seed + 0x9e3779b97f4a7c15ull * (stream + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

AnnealOptions seeded(AnnealOptions a, uint64_t seed) {
  a.seed = derive_seed(seed, 2);
  return a;
}

}  // namespace

XGBTuner::XGBTuner(const ConfigSpace& space, FeatureFn feature_fn, std::unique_ptr<CostModel> model,
                   XGBTunerOptions options)
    : space_(&space),
      feature_fn_(std::move(feature_fn)),
      model_(std::move(model)),
      options_(options),
      keyer_(space),
      random_(space, derive_seed(options.seed, 1)),
      anneal_(space, seeded(options.anneal, options.seed)) {
  user_check(feature_fn_ != nullptr) << "the XGB tuner needs a feature function";
  user_check(model_ != nullptr) << "the XGB tuner needs a cost model";
  user_check(options_.plan_size >= 1) << "plan size must be at least 1, got " << options_.plan_size;
  user_check(options_.epsilon >= 0 && options_.epsilon <= 1)
      << "the random share epsilon must be in [0, 1], got " << options_.epsilon;
  user_check(options_.batch_size >= 1) << "batch size must be at least 1, got " << options_.batch_size;
  if (options_.num_warmup_random < 0) options_.num_warmup_random = options_.batch_size;
  user_check(options_.max_new_features >= 0)
      << "the feature extraction budget must be >= 0, got " << options_.max_new_features;
}

const FeatureVector* XGBTuner::features_of(const Config& c, uint64_t key, int* budget) {
  if (invalid_.count(key)) return nullptr;
  auto it = features_.find(key);
  if (it != features_.end()) return &it->second;
  if (budget) {
    if (*budget <= 0) return nullptr;
    --*budget;
  }
  ++stats_.feature_extractions;
  try {
    FeatureVector f = feature_fn_(c);
    return &features_.emplace(key, std::move(f)).first->second;
  } catch (const UserError&) {
    invalid_.insert(key);  // the template rejects this config
    return nullptr;
  }
}

std::vector<float> XGBTuner::score(const std::vector<Config>& configs, int* budget) {
  const float invalid = -std::numeric_limits<float>::infinity();
  std::vector<float> out(configs.size(), invalid);
  std::vector<size_t> pending;
  std::vector<uint64_t> pending_keys;
  std::vector<FeatureVector> rows;
  for (size_t i = 0; i < configs.size(); ++i) {
    uint64_t key = keyer_(configs[i]);
    auto it = predictions_.find(key);
    if (it != predictions_.end()) {
      out[i] = it->second;
      continue;
    }
    // Invalid, or over this batch's extraction budget: not a candidate now.
    const FeatureVector* f = features_of(configs[i], key, budget);
    if (!f) continue;
    pending.push_back(i);
    pending_keys.push_back(key);
    rows.push_back(*f);
  }
  if (rows.empty()) return out;
  std::vector<float> p = model_->predict(rows);
  internal_assert(p.size() == rows.size()) << "cost model returned " << p.size() << " predictions for " << rows.size();
  for (size_t j = 0; j < p.size(); ++j) {
    float v = (p[j] - score_lo_) * score_scale_;
    out[pending[j]] = v;
    predictions_[pending_keys[j]] = v;
  }
  return out;
}

void XGBTuner::refit() {
  dirty_ = false;
  double best = 0;
  for (uint64_t key : record_order_) best = std::max(best, records_.at(key).throughput);
  std::vector<FeatureVector> x;
  std::vector<float> y;
  std::vector<int> groups;
  for (uint64_t key : record_order_) {
    const Record& r = records_.at(key);
    const FeatureVector* f = features_of(r.config, key, nullptr);
    if (!f) continue;  // rejected by the template: nothing to learn from
    x.push_back(*f);
    y.push_back(best > 0 ? static_cast<float>(r.throughput / best) : 0.0f);
    groups.push_back(0);
  }
  int group = 1;  // contiguous ids, one per earlier task, in group order
  for (const auto& [id, data] : transfer_) {
    (void)id;
    x.insert(x.end(), data.first.begin(), data.first.end());
    y.insert(y.end(), data.second.begin(), data.second.end());
    groups.insert(groups.end(), data.first.size(), group++);
  }
  if (std::none_of(y.begin(), y.end(), [](float s) { return s > 0; })) return;  // nothing to rank yet
  model_->fit(x, y, groups);
  ++stats_.fits;
  predictions_.clear();
  // Rescale predictions to [0, 1] over the training rows (see the header).
  std::vector<float> p = model_->predict(x);
  internal_assert(p.size() == x.size()) << "cost model returned " << p.size() << " predictions for " << x.size();
  auto [lo, hi] = std::minmax_element(p.begin(), p.end());
  score_lo_ = *lo;
  score_scale_ = *hi - *lo > 1e-12f ? 1.0f / (*hi - *lo) : 1.0f;
}

void XGBTuner::propose(const Config& c, std::vector<Config>* out) {
  random_.exclude(c);
  taken_.insert(keyer_(c));
  out->push_back(c);
}

std::vector<Config> XGBTuner::next_batch(int n) {
  std::vector<Config> out;
  stats_.last_model = stats_.last_random = stats_.last_seeded = stats_.last_feature_extractions =
      stats_.last_anneal_steps = 0;
  stats_.last_anneal_evaluations = 0;
  if (n <= 0 || !has_next()) return out;
  if (dirty_) refit();
  ++stats_.batches;
  std::vector<Config> seeded;  // first in the batch
  for (const Config& c : seeds_) {
    if (static_cast<int>(seeded.size()) >= n) break;
    internal_assert(c.space() == space_) << "a seed config of another space";
    if (!taken_.count(keyer_(c))) propose(c, &seeded);
  }
  seeds_.clear();
  stats_.last_seeded = static_cast<int>(seeded.size());
  n -= stats_.last_seeded;

  bool use_model =
      model_->trained() && (!transfer_.empty() || static_cast<int>(record_order_.size()) >= options_.num_warmup_random);
  if (use_model) {
    int n_random = std::clamp(static_cast<int>(std::lround(n * options_.epsilon)), 0, n);
    int n_model = n - n_random;
    if (n_model > 0) {
      batch_budget_ = options_.max_new_features;
      int64_t extractions = stats_.feature_extractions;
      AnnealResult top = anneal_.find_top(
          std::max(options_.plan_size, n_model),
          [this](const std::vector<Config>& cs) { return score(cs, &batch_budget_); }, taken_);
      stats_.last_feature_extractions = static_cast<int>(stats_.feature_extractions - extractions);
      stats_.last_anneal_steps = top.steps;
      stats_.last_anneal_evaluations = top.evaluations;
      for (const Config& c : top.configs) {
        if (static_cast<int>(out.size()) >= n_model) break;
        propose(c, &out);
      }
      stats_.last_model = static_cast<int>(out.size());
    }
  }
  // The epsilon share, the warm-up, and whatever the annealer could not fill.
  for (const Config& c : random_.next_batch(n - static_cast<int>(out.size()))) {
    taken_.insert(keyer_(c));
    out.push_back(c);
  }
  stats_.last_random = static_cast<int>(out.size()) - stats_.last_model;
  stats_.model_proposals += stats_.last_model;
  stats_.random_proposals += stats_.last_random;
  out.insert(out.begin(), seeded.begin(), seeded.end());
  return out;
}

void XGBTuner::update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) {
  internal_assert(configs.size() == results.size()) << configs.size() << " configs, " << results.size() << " results";
  for (size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    internal_assert(c.space() == space_) << "config of another space";
    uint64_t key = keyer_(c);
    random_.exclude(c);
    taken_.insert(key);
    const MeasureResult& r = results[i];
    Record rec{c, r.ok() ? 1.0 / std::max(r.median_ms(), 1e-9) : 0.0};
    auto [it, inserted] = records_.emplace(key, rec);
    if (inserted)
      record_order_.push_back(key);
    else
      it->second = rec;            // measured again: the latest result counts
    features_of(c, key, nullptr);  // training needs them; usually cached by the annealer
  }
  if (!configs.empty()) dirty_ = true;
}

std::vector<double> XGBTuner::predict(const std::vector<Config>& configs) {
  if (dirty_) refit();
  if (!model_->trained() || configs.empty()) return {};
  std::vector<float> scores = score(configs, nullptr);  // every config's features, whatever the budget
  std::vector<double> out;
  for (float v : scores) out.push_back(std::isfinite(v) ? v : std::numeric_limits<double>::quiet_NaN());
  return out;
}

void XGBTuner::add_seeds(const std::vector<Config>& seeds) {
  for (const Config& c : seeds) {
    internal_assert(c.space() == space_) << "a seed config of another space";
    seeds_.push_back(c);
  }
}

void XGBTuner::add_transfer_data(const std::vector<FeatureVector>& features, const std::vector<float>& scores,
                                 int group) {
  user_check(features.size() == scores.size())
      << "transfer data has " << features.size() << " feature rows but " << scores.size() << " scores";
  for (float s : scores) user_check(std::isfinite(s) && s >= 0) << "transfer scores must be finite and >= 0, got " << s;
  if (features.empty()) return;
  auto& data = transfer_[group];
  data.first.insert(data.first.end(), features.begin(), features.end());
  data.second.insert(data.second.end(), scores.begin(), scores.end());
  dirty_ = true;
}

}  // namespace kiln
