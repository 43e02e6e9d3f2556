#include "tuner/simulated_annealing.h"

#include <cmath>
#include <map>

#include "base/error.h"

namespace kiln {

namespace {

// Best first; equal scores by key, so the order never depends on hashing.
struct TopOrder {
  bool operator()(const std::pair<float, uint64_t>& a, const std::pair<float, uint64_t>& b) const {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  }
};

// The top-k distinct configs seen so far.
class TopK {
 public:
  TopK(size_t k, const std::unordered_set<uint64_t>& exclude) : k_(k), exclude_(exclude) {}
  // True when the set changed.
  bool offer(const Config& c, uint64_t key, float score) {
    if (!std::isfinite(score) || exclude_.count(key) || members_.count(key)) return false;
    std::pair<float, uint64_t> entry{score, key};
    if (best_.size() >= k_) {
      auto worst = std::prev(best_.end());
      if (!TopOrder()(entry, worst->first)) return false;
      members_.erase(worst->first.second);
      best_.erase(worst);
    }
    best_.emplace(entry, c);
    members_.insert(key);
    return true;
  }
  const std::map<std::pair<float, uint64_t>, Config, TopOrder>& best() const { return best_; }

 private:
  size_t k_;
  const std::unordered_set<uint64_t>& exclude_;
  std::map<std::pair<float, uint64_t>, Config, TopOrder> best_;
  std::unordered_set<uint64_t> members_;
};

}  // namespace

SimulatedAnnealing::SimulatedAnnealing(const ConfigSpace& space, AnnealOptions options)
    : space_(&space), options_(options), keyer_(space), rng_(options.seed) {
  user_check(options_.num_chains >= 1) << "simulated annealing needs at least one chain, got " << options_.num_chains;
  user_check(options_.max_steps >= 0) << "simulated annealing steps must be >= 0, got " << options_.max_steps;
  user_check(options_.early_stop >= 0) << "simulated annealing early_stop must be >= 0, got " << options_.early_stop;
  user_check(options_.decay != AnnealOptions::Decay::kGeometric || (options_.temp_start > 0 && options_.temp_end > 0))
      << "geometric temperature decay needs positive start and end temperatures, got " << options_.temp_start << " -> "
      << options_.temp_end;
}

double SimulatedAnnealing::temperature(int step) const {
  double frac = options_.max_steps > 1 ? static_cast<double>(step) / (options_.max_steps - 1) : 0.0;
  if (options_.decay == AnnealOptions::Decay::kGeometric)
    return options_.temp_start * std::pow(options_.temp_end / options_.temp_start, frac);
  return options_.temp_start + (options_.temp_end - options_.temp_start) * frac;
}

AnnealResult SimulatedAnnealing::find_top(int k, const ScoreFn& score, const std::unordered_set<uint64_t>& exclude) {
  AnnealResult result;
  if (k <= 0) return result;
  auto evaluate = [&](const std::vector<Config>& configs) {
    std::vector<float> s = score(configs);
    internal_assert(s.size() == configs.size())
        << "score function returned " << s.size() << " scores for " << configs.size() << " configs";
    result.evaluations += static_cast<int64_t>(configs.size());
    return s;
  };

  const size_t n = static_cast<size_t>(options_.num_chains);
  if (points_.size() != n) {
    points_.clear();
    for (size_t i = 0; i < n; ++i) points_.push_back(space_->random(rng_));
  }
  std::vector<float> scores = evaluate(points_);
  TopK top(static_cast<size_t>(k), exclude);
  for (size_t i = 0; i < n; ++i) top.offer(points_[i], keyer_(points_[i]), scores[i]);

  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int unchanged = 0;
  std::vector<Config> next(n);
  for (int step = 0; step < options_.max_steps; ++step) {
    if (options_.early_stop > 0 && unchanged >= options_.early_stop) break;
    for (size_t i = 0; i < n; ++i) next[i] = space_->random_neighbor(points_[i], rng_);
    std::vector<float> next_scores = evaluate(next);
    double t = temperature(step);
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      float s_new = next_scores[i], s_old = scores[i];
      changed |= top.offer(next[i], keyer_(next[i]), s_new);
      double u = unit(rng_);  // drawn for every chain, so the stream does not depend on outcomes
      bool accept;
      if (!std::isfinite(s_old))
        accept = true;
      else if (!std::isfinite(s_new))
        accept = false;
      else if (s_new >= s_old)
        accept = true;
      else
        accept = t > 0 && u < std::exp((static_cast<double>(s_new) - s_old) / t);
      if (accept) {
        points_[i] = next[i];
        scores[i] = s_new;
      }
    }
    unchanged = changed ? 0 : unchanged + 1;
    ++result.steps;
  }

  for (const auto& [entry, config] : top.best()) {
    result.configs.push_back(config);
    result.scores.push_back(entry.first);
  }
  total_evaluations_ += result.evaluations;
  return result;
}

}  // namespace kiln
