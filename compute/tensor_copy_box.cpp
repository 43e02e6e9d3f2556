#include "compute/tensor_copy_box.h"

#include <algorithm>
#include <numeric>

#include "compute/expr_ops.h"

namespace kiln {

std::vector<std::pair<int64_t, int64_t>> tensor_copy_box_dims(const TensorIntrinCallNode& c) {
  const int64_t n = *as_const_int(c.operands[0].extent), len = *as_const_int(c.operands[0].stride);
  int64_t further = 1;
  std::vector<std::pair<int64_t, int64_t>> dims{{len, 1}, {0, *as_const_int(c.operands[1].stride)}};
  for (size_t k = 2; k + 1 < c.scalars.size(); k += 2) {
    dims.emplace_back(*as_const_int(c.scalars[k]), *as_const_int(c.scalars[k + 1]));
    further *= dims.back().first;
  }
  dims[1].first = n / len / further;
  return dims;
}

std::string tensor_copy_map_dims(const std::vector<std::pair<int64_t, int64_t>>& box, int64_t elements,
                                 std::vector<TensorCopyDim>* out) {
  std::vector<size_t> order(box.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return box[a].second < box[b].second; });
  out->assign(box.size(), TensorCopyDim{});
  for (size_t i = 0; i < order.size(); ++i) {
    const auto [count, distance] = box[order[i]];
    TensorCopyDim& d = (*out)[order[i]];
    d.box = count;
    d.distance = distance;
    if (i + 1 == order.size()) {
      d.extent = std::max<int64_t>(1, (elements + distance - 1) / distance);
      d.farthest = true;
    } else {
      const int64_t next = box[order[i + 1]].second;
      if (next == distance)
        return "two of its dimensions are " + std::to_string(distance) + " elements apart in the source";
      if (next % distance != 0)
        return "its dimensions " + std::to_string(distance) + " and " + std::to_string(next) +
               " elements apart do not nest (the larger distance is no multiple of the smaller)";
      d.extent = next / distance;
    }
    if (d.box > d.extent)
      return "its box is " + std::to_string(d.box) + " elements along the dimension " + std::to_string(distance) +
             " elements apart, wider than the map's " + std::to_string(d.extent) +
             " there (the next distance over this one)";
  }
  if (order.empty() || box[order[0]].second != 1) return "its innermost dimension is not contiguous in the source";
  return "";
}

Expr tensor_copy_coordinate(const Expr& at, const TensorCopyDim& dim) {
  const Expr c = floordiv(at, make_const(at.dtype(), dim.distance));
  return dim.farthest ? c : floormod(c, make_const(at.dtype(), dim.extent));
}

}  // namespace kiln
