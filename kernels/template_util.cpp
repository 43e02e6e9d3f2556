#include "kernels/template_util.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.h"

namespace kiln {

DType accumulator_type(DType t) {
  if (!t.is_float()) return DType::i32();
  return t.bits == 16 ? DType::f32() : t;
}

DType bias_type(DType t) { return t.is_float() ? t : DType::i32(); }

int vector_lanes(const CpuInfo& cpu, DType acc) {
  return std::max(1, cpu.vector_bits / std::max(1, static_cast<int>(acc.bits)));
}

int vector_registers(const CpuInfo& cpu) { return cpu.vector_bits >= 512 ? 32 : 16; }

std::vector<int64_t> block_candidates(int64_t extent, int64_t max_value) {
  std::set<int64_t> c{1};
  for (int64_t d = 1; d * d <= extent; ++d)
    if (extent % d == 0) {
      c.insert(d);
      c.insert(extent / d);
    }
  for (int64_t p = 1; p <= extent; p *= 2) c.insert(p);
  std::vector<int64_t> out;
  for (int64_t v : c)
    if (v <= max_value) out.push_back(v);
  return out;
}

std::vector<int64_t> capped_candidates(int64_t extent, const std::vector<int64_t>& wanted) {
  std::set<int64_t> c;
  int64_t largest = 0;
  for (int64_t v : wanted) {
    largest = std::max(largest, v);
    if (v >= 1 && v <= extent) c.insert(v);
  }
  if (extent < largest) c.insert(extent);
  return {c.begin(), c.end()};
}

std::vector<int64_t> vector_tile_candidates(int64_t extent, int lanes) {
  std::vector<int64_t> wanted;
  if (lanes >= 2) wanted.push_back(lanes / 2);
  for (int v = 1; v <= 4; ++v) wanted.push_back(int64_t{v} * lanes);
  return capped_candidates(extent, wanted);
}

const std::vector<int64_t>& nearest_split(const ConfigSpace& space, const std::string& name,
                                          const std::vector<int64_t>& want_inner) {
  const Knob& k = space.knob(name);
  internal_assert(k.kind == Knob::kSplit) << "knob " << name << " is not a split";
  const std::vector<int64_t>* best = nullptr;
  double best_cost = 0;
  for (auto& opt : k.options) {
    internal_assert(opt.size() == want_inner.size() + 1) << "knob " << name << " has another number of factors";
    // Inner-most factors weigh most: they are the register tile.
    double cost = 0, weight = 1;
    for (size_t i = opt.size(); i-- > 1;) {
      cost += weight *
              std::fabs(std::log2(static_cast<double>(opt[i])) - std::log2(static_cast<double>(want_inner[i - 1])));
      weight *= 1e-3;
    }
    if (!best || cost < best_cost) {
      best = &opt;
      best_cost = cost;
    }
  }
  return *best;
}

LoopBand::LoopBand(Stage stage, const std::vector<IterVar>& loops, const std::vector<int64_t>& order,
                   const std::vector<IterVar>& inner, int fused, bool parallel)
    : order_(order), fused_(fused) {
  internal_assert(order.size() == loops.size()) << "loop band order has the wrong size";
  for (int64_t i : order) ordered_.push_back(loops.at(static_cast<size_t>(i)));
  std::vector<IterVar> all = ordered_;
  all.insert(all.end(), inner.begin(), inner.end());
  stage.reorder(all);
  fused_ = std::max(0, std::min(fused, size()));
  if (fused_ >= 1) {
    fused_loop_ =
        fused_ == 1 ? ordered_[0] : stage.fuse(std::vector<IterVar>(ordered_.begin(), ordered_.begin() + fused_));
    if (parallel) stage.parallel(fused_loop_);
  }
}

IterVar LoopBand::at(int position) const {
  internal_assert(position >= 0 && position < size()) << "loop band position " << position << " out of range";
  return position < fused_ ? fused_loop_ : ordered_[static_cast<size_t>(position)];
}

int LoopBand::position_of(int index) const {
  for (int p = 0; p < size(); ++p)
    if (order_[static_cast<size_t>(p)] == index) return p;
  internal_error() << "loop band has no loop " << index;
}

}  // namespace kiln
