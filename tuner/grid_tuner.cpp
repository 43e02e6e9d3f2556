#include "tuner/grid_tuner.h"

#include "base/error.h"

namespace kiln {

GridTuner::GridTuner(const ConfigSpace& space) : space_(&space), keyer_(space), size_(space_->size()) {}

void GridTuner::skip_measured() {
  if (measured_.empty()) return;
  while (next_ < size_ && measured_.count(keyer_(space_->get(next_)))) ++next_;
}

std::vector<Config> GridTuner::next_batch(int n) {
  std::vector<Config> out;
  skip_measured();
  while (static_cast<int>(out.size()) < n && next_ < size_) {
    out.push_back(space_->get(next_++));
    skip_measured();
  }
  return out;
}

void GridTuner::update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) {
  internal_assert(configs.size() == results.size()) << configs.size() << " configs, " << results.size() << " results";
  for (const Config& c : configs) {
    internal_assert(c.space() == space_) << "config of another space";
    measured_.insert(keyer_(c));
  }
  skip_measured();
}

}  // namespace kiln
