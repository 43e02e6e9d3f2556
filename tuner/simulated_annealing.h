// Parallel simulated annealing over a ConfigSpace, guided by a batch score
// function (in the XGB tuner: the cost model's predictions).
//
// `num_chains` chains step together: each step moves every chain to a random
// neighbour (ConfigSpace::random_neighbor), scores all new points in one call
// of the score function, and accepts a move with probability
// min(1, exp((new - old) / T)). Scores are expected to be roughly in [0, 1]
// (the XGB tuner rescales predictions so), which is what the default
// temperatures are for: one knob changed moves such a score by a few
// hundredths, and T = 0.05 accepts a loss of 0.05 with probability 1/e. (A
// start at T = 1, as in AutoTVM, is a random walk at this scale: on the
// synthetic test function it found the optimum in 12 of 50 seeds, against
// 50 of 50 at 0.05.) With T <= 0 only moves that do not lower the score are
// accepted. A non-finite score (NaN, +-inf) marks a point that must
// not be chosen: a move onto it is rejected, it never enters the top-k, and a
// chain standing on such a point leaves it at the next move.
//
// The chains live in the object and continue from where they stopped at the
// next call (the model changes between calls, so their points are rescored
// first). Every point visited in a call competes for the top-k, except the
// excluded keys (ConfigKeyer keys of configs already measured or proposed).
// A call ends after `max_steps` steps, or earlier when the top-k has not
// changed for `early_stop` steps. The temperature goes from temp_start to
// temp_end over the max_steps steps of each call (linear or geometric), so
// an early stop ends a call before it has cooled: too hot a start lets the
// top-k stall while the chains still wander.
// Given the seed, the score function and the exclusions, the result is
// deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <unordered_set>
#include <vector>

#include "schedule/config_space.h"
#include "tuner/config_key.h"

namespace kiln {

struct AnnealOptions {
  enum class Decay { kLinear, kGeometric };
  int num_chains = 128;
  int max_steps = 300;  // per call
  int early_stop = 50;  // steps without a change of the top-k; 0: never stop early
  double temp_start = 0.05;
  double temp_end = 0.0;  // geometric decay needs both temperatures > 0
  Decay decay = Decay::kLinear;
  uint64_t seed = 0;
};

struct AnnealResult {
  std::vector<Config> configs;  // best first (ties: lower key first)
  std::vector<float> scores;
  int steps = 0;            // steps taken by this call
  int64_t evaluations = 0;  // configs passed to the score function by this call
};

class SimulatedAnnealing {
 public:
  using ScoreFn = std::function<std::vector<float>(const std::vector<Config>&)>;

  // `space` must outlive the annealer.
  SimulatedAnnealing(const ConfigSpace& space, AnnealOptions options);

  // The k best-scored distinct configs visited by this call whose keys are
  // not in `exclude` (fewer when fewer were found).
  AnnealResult find_top(int k, const ScoreFn& score, const std::unordered_set<uint64_t>& exclude);

  // The chains' current points (empty before the first call).
  const std::vector<Config>& chains() const { return points_; }
  const AnnealOptions& options() const { return options_; }
  int64_t total_evaluations() const { return total_evaluations_; }

 private:
  double temperature(int step) const;

  const ConfigSpace* space_;  // outlives the search, like the Configs it makes
  AnnealOptions options_;
  ConfigKeyer keyer_;
  std::mt19937_64 rng_;
  std::vector<Config> points_;
  int64_t total_evaluations_ = 0;
};

}  // namespace kiln
