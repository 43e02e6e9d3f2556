#include "tuner/random_tuner.h"

#include "base/error.h"

namespace kiln {

RandomTuner::RandomTuner(const ConfigSpace& space, uint64_t seed)
    : space_(&space), keyer_(space), rng_(seed), size_(space_->size()) {}

uint64_t RandomTuner::value_at(uint64_t pos) const {
  auto it = pos_to_value_.find(pos);
  return it == pos_to_value_.end() ? pos : it->second;
}

uint64_t RandomTuner::position_of(uint64_t value) const {
  auto it = value_to_pos_.find(value);
  return it == value_to_pos_.end() ? value : it->second;
}

void RandomTuner::swap_positions(uint64_t a, uint64_t b) {
  if (a == b) return;
  uint64_t va = value_at(a), vb = value_at(b);
  // After the swap position a holds vb and b holds va; identity entries are dropped.
  auto set = [&](uint64_t pos, uint64_t value) {
    if (pos == value) {
      pos_to_value_.erase(pos);
      value_to_pos_.erase(value);
    } else {
      pos_to_value_[pos] = value;
      value_to_pos_[value] = pos;
    }
  };
  set(a, vb);
  set(b, va);
}

void RandomTuner::take_position(uint64_t pos) {
  swap_positions(pos, taken_);
  ++taken_;
}

std::vector<Config> RandomTuner::next_batch(int n) {
  std::vector<Config> out;
  if (!keyer_.exact()) {
    for (int i = 0; i < n; ++i) {
      Config c = space_->random(rng_);
      while (!taken_keys_.insert(keyer_(c)).second) c = space_->random(rng_);
      out.push_back(c);
    }
    return out;
  }
  for (int i = 0; i < n && taken_ < size_; ++i) {
    uint64_t pos = std::uniform_int_distribution<uint64_t>(taken_, size_ - 1)(rng_);
    take_position(pos);
    out.push_back(space_->get(value_at(taken_ - 1)));
  }
  return out;
}

void RandomTuner::exclude(const Config& c) {
  internal_assert(c.space() == space_) << "config of another space";
  if (!keyer_.exact()) {
    taken_keys_.insert(keyer_(c));
    return;
  }
  uint64_t pos = position_of(c.index());
  if (pos >= taken_) take_position(pos);
}

bool RandomTuner::taken(const Config& c) const {
  if (!keyer_.exact()) return taken_keys_.count(keyer_(c)) > 0;
  return position_of(c.index()) < taken_;
}

void RandomTuner::update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) {
  internal_assert(configs.size() == results.size()) << configs.size() << " configs, " << results.size() << " results";
  for (const Config& c : configs) exclude(c);
}

bool RandomTuner::has_next() const { return !keyer_.exact() || taken_ < size_; }

uint64_t RandomTuner::remaining() const { return keyer_.exact() ? size_ - taken_ : UINT64_MAX; }

}  // namespace kiln
