// RandomTuner: configs drawn uniformly at random without replacement.
//
// In a space of fewer than 2^64 - 1 configs the draws are a lazy Fisher-Yates
// shuffle of the indices (memory grows with the number of draws, not with
// the space), so a small space is exhausted exactly, each config once. In a
// larger space (where indices overflow) each knob is drawn uniformly and a
// repeat, identified by its ConfigKeyer hash, is drawn again; such a space
// is never exhausted.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "tuner/config_key.h"
#include "tuner/tuner.h"

namespace kiln {

class RandomTuner : public Tuner {
 public:
  // `space` must outlive the tuner (as it must outlive its Configs).
  RandomTuner(const ConfigSpace& space, uint64_t seed);

  std::vector<Config> next_batch(int n) override;
  // Measured configs (e.g. earlier records on resume) are never proposed.
  void update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) override;
  bool has_next() const override;

  // Marks a config as taken without proposing it (another strategy chose it).
  void exclude(const Config& c);
  bool taken(const Config& c) const;
  // Configs not yet taken (UINT64_MAX in a space too large to count).
  uint64_t remaining() const;

 private:
  uint64_t value_at(uint64_t pos) const;
  uint64_t position_of(uint64_t value) const;
  void swap_positions(uint64_t a, uint64_t b);
  void take_position(uint64_t pos);

  const ConfigSpace* space_;  // outlives the search, like the Configs it makes
  ConfigKeyer keyer_;
  std::mt19937_64 rng_;
  uint64_t size_;
  // Indexed spaces: positions [0, taken_) of a virtual permutation of the
  // indices hold the taken configs. Only positions whose value moved are
  // stored, in both directions.
  uint64_t taken_ = 0;
  std::unordered_map<uint64_t, uint64_t> pos_to_value_, value_to_pos_;
  // Spaces too large to index: keys of the taken configs.
  std::unordered_set<uint64_t> taken_keys_;
};

}  // namespace kiln
