// XGBoostRanker over XGBoost's C API: RAII wrappers for the DMatrix and
// Booster handles, group-contiguous training rows, serialized prediction.
#include "costmodel/xgb_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "base/error.h"

namespace kiln {

namespace {

void xgb_check(int rc, const char* what) {
  if (rc != 0) internal_error() << "XGBoost " << what << " failed: " << XGBGetLastError();
}

class DMatrix {
 public:
  // Rows of `x` in the order given by `rows` (all rows when empty).
  DMatrix(const std::vector<FeatureVector>& x, const std::vector<size_t>& rows, size_t num_features) {
    size_t n = rows.empty() ? x.size() : rows.size();
    std::vector<float> flat;
    flat.reserve(n * num_features);
    for (size_t i = 0; i < n; ++i) {
      const FeatureVector& v = x[rows.empty() ? i : rows[i]];
      flat.insert(flat.end(), v.begin(), v.end());
    }
    xgb_check(XGDMatrixCreateFromMat(flat.data(), n, num_features, std::numeric_limits<float>::quiet_NaN(), &handle_),
              "XGDMatrixCreateFromMat");
  }
  ~DMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

size_t checked_width(const std::vector<FeatureVector>& x) {
  size_t width = x.empty() ? 0 : x[0].size();
  for (size_t i = 0; i < x.size(); ++i)
    user_check(x[i].size() == width) << "cost model: feature vector " << i << " has " << x[i].size()
                                     << " features, the first one has " << width;
  return width;
}

}  // namespace

struct XGBoostRanker::Booster {
  BoosterHandle handle = nullptr;
  explicit Booster(const DMatrix& train) {
    DMatrixHandle m = train.get();
    xgb_check(XGBoosterCreate(&m, 1, &handle), "XGBoosterCreate");
  }
  ~Booster() {
    if (handle) XGBoosterFree(handle);
  }
  void set(const char* name, const std::string& value) const {
    xgb_check(XGBoosterSetParam(handle, name, value.c_str()), "XGBoosterSetParam");
  }
};

XGBoostRanker::XGBoostRanker() : XGBoostRanker(Options()) {}

XGBoostRanker::XGBoostRanker(const Options& options) : options_(options) {
  user_check(options.num_rounds > 0 && options.max_depth > 0 && options.eta > 0 && options.nthread > 0)
      << "XGBoost ranker: num_rounds, max_depth, eta and nthread must be positive";
}

XGBoostRanker::~XGBoostRanker() = default;

void XGBoostRanker::fit(const std::vector<FeatureVector>& x, const std::vector<float>& scores,
                        const std::vector<int>& groups) {
  user_check(x.size() == scores.size() && x.size() == groups.size())
      << "cost model: fit got " << x.size() << " feature vectors, " << scores.size() << " scores and " << groups.size()
      << " group ids";
  const size_t width = checked_width(x);
  for (size_t i = 0; i < scores.size(); ++i)
    user_check(std::isfinite(scores[i])) << "cost model: score " << i << " is " << scores[i];
  std::lock_guard<std::mutex> lock(mutex_);
  booster_.reset();
  num_features_ = 0;

  // XGBoost wants each group's rows contiguous: order rows by group id
  // (stable, so the result does not depend on the sort).
  std::vector<size_t> rows(x.size());
  std::iota(rows.begin(), rows.end(), 0);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return groups[a] < groups[b]; });
  std::vector<unsigned> group_sizes;
  bool has_pair = false;
  for (size_t begin = 0; begin < rows.size();) {
    size_t end = begin;
    float lo = scores[rows[begin]], hi = lo;
    while (end < rows.size() && groups[rows[end]] == groups[rows[begin]]) {
      lo = std::min(lo, scores[rows[end]]);
      hi = std::max(hi, scores[rows[end]]);
      ++end;
    }
    has_pair = has_pair || lo != hi;
    group_sizes.push_back(static_cast<unsigned>(end - begin));
    begin = end;
  }
  if (!has_pair || width == 0) return;  // nothing to rank: stay untrained

  DMatrix train(x, rows, width);
  std::vector<float> labels(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) labels[i] = scores[rows[i]];
  xgb_check(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()), "XGDMatrixSetFloatInfo");
  xgb_check(XGDMatrixSetUIntInfo(train.get(), "group", group_sizes.data(), group_sizes.size()), "XGDMatrixSetUIntInfo");

  auto booster = std::make_unique<Booster>(train);
  booster->set("objective", options_.objective);
  booster->set("booster", "gbtree");
  booster->set("tree_method", options_.tree_method);
  booster->set("max_depth", std::to_string(options_.max_depth));
  booster->set("eta", std::to_string(options_.eta));
  booster->set("min_child_weight", std::to_string(options_.min_child_weight));
  booster->set("subsample", std::to_string(options_.subsample));
  booster->set("colsample_bytree", std::to_string(options_.colsample_bytree));
  booster->set("gamma", "0.0001");
  booster->set("nthread", std::to_string(options_.nthread));
  booster->set("seed", std::to_string(options_.seed));
  booster->set("verbosity", "0");
  booster->set("disable_default_eval_metric", "1");
  for (int i = 0; i < options_.num_rounds; ++i)
    xgb_check(XGBoosterUpdateOneIter(booster->handle, i, train.get()), "XGBoosterUpdateOneIter");
  booster_ = std::move(booster);
  num_features_ = width;
}

std::vector<float> XGBoostRanker::predict(const std::vector<FeatureVector>& x) const {
  const size_t width = checked_width(x);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<float> out(x.size(), 0.0f);
  if (!booster_ || x.empty()) return out;
  user_check(width == num_features_) << "cost model: predict got feature vectors of length " << width
                                     << ", the model was trained on length " << num_features_;
  DMatrix m(x, {}, width);
  bst_ulong len = 0;
  const float* result = nullptr;
  xgb_check(XGBoosterPredict(booster_->handle, m.get(), 0, 0, 0, &len, &result), "XGBoosterPredict");
  internal_assert(len == x.size()) << "XGBoost returned " << len << " predictions for " << x.size() << " rows";
  std::copy(result, result + len, out.begin());
  return out;
}

bool XGBoostRanker::trained() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return booster_ != nullptr;
}

size_t XGBoostRanker::num_features() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_features_;
}

}  // namespace kiln
