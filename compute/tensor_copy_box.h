// The box of a tensor copy (cuda.tensor_copy.*, compute/hw_instructions.h)
// as the dimensions of a tensor map of its source. A box's dimensions, in
// the order its elements land in shared memory (innermost first), each
// have a count of elements in the box and a distance between neighbours in
// the source, in elements: the row itself (L, 1), its rows (c1, S), and
// the call's further (count, distance) pairs.
//
// The map views the source as a mixed radix: sorted by distance, each
// dimension's extent is the next distance over its own (which must divide
// it), the farthest's whatever the source's elements fill. An element at
// source offset `at` then has coordinate (at / distance) % extent along
// each dimension, the farthest at / distance, and the box at a first
// element's coordinates covers exactly the copy's elements when no
// coordinate passes its extent (the caller proves that for every value of
// the loops around the copy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/stmt.h"
#include "compute/tensor.h"  // completes the types stmt.h declares

namespace kiln {

struct TensorCopyDim {
  int64_t box = 0;        // elements of the box along it
  int64_t distance = 0;   // between neighbours in the source, in elements
  int64_t extent = 0;     // the map's elements along it
  bool farthest = false;  // the largest distance: its coordinate is not wrapped
};

// The box's dimensions from a call that hw_call_problem accepts.
std::vector<std::pair<int64_t, int64_t>> tensor_copy_box_dims(const TensorIntrinCallNode& copy);

// The map's dimensions for `box` ((count, distance) per dimension, in the
// box's order, the first (L, 1)) over a source of `elements`; "" or why no
// map views the source so (distances that repeat or do not divide each
// other once sorted, or a box wider than its dimension).
std::string tensor_copy_map_dims(const std::vector<std::pair<int64_t, int64_t>>& box, int64_t elements,
                                 std::vector<TensorCopyDim>* out);

// The coordinate along `dim` of the element at source offset `at`.
Expr tensor_copy_coordinate(const Expr& at, const TensorCopyDim& dim);

}  // namespace kiln
