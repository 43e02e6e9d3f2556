// Bulk copies for a warp-specialized pipeline's fills (Stage::pipeline with
// bulk_copies): a fill that copies a box (evenly spaced rows, each a
// contiguous run in both the source and the slot) moves by Hopper's bulk
// copy engine, one cp.async.bulk per row, instead of a cp.async per vector
// from every producer thread.
//
// Expects: `producer`, a warp-specialized region's producer side after
// warp_specialize split it (its loop over the pipeline's iterations, whose
// body is: the pop of the slot's free token, the fills, the push of its
// full token); `warp` the block's warp variable, whose values W to W + P - 1
// are the producer warps. A fill qualifies when it is a nest of loops with
// constant bounds and guards on those loops alone, around one cp.async copy
// with no bounds predicate, whose source and slot indices each add a part of
// the fill's loops to a part of the loops outside it, and whose rows are
// whole multiples of 16 bytes, 16-byte aligned whatever the outer loops'
// values.
//
// Guarantees: each qualifying fill becomes
//
//   attr bulk_copy_bytes = its bytes
//     thread_binding(threadIdx.x) (lane, 0, X)
//       [if (warp == W)] for (round) [if (row < rows)]
//         bulk_copy(slot row, source row, slot index)
//
// with the lanes X of its threadIdx.x loop, each lane of the first producer
// warp issuing every X-th row. It copies the same elements from the same
// places as the fill did. Other fills are left as they were, unless
// `every_fill`: then a fill that does not qualify is a user error that says
// why.
//
// With `tensor_maps`, a qualifying fill whose rows of L elements land one
// after another in the slot from a 128-byte aligned start, and whose rows'
// starts in the source split into up to four evenly spaced dimensions
// (a dense box of rows S elements apart: one; an operand stored as 8 x 8
// tiles, Stage::storage_tile: the tile's rows, the tiles along the row and
// the tiles across it, where the last merges with the first when the tiles
// across follow each other, as the templates store them: two) that a
// tensor map of the source views with no coordinate passing its dimension
// (compute/tensor_copy_box.h), whatever the values of the loops around the
// fill (from the ranges of those within the producer and the modular sets
// of all), becomes instead
//
//   attr bulk_copy_bytes = its bytes
//     thread_binding(threadIdx.x) (lane, 0, X)
//       [if (warp == W)] if (lane == 0) for (part)
//         tensor_copy(slot box [extent n, stride L], source box [extent n, stride S], slot index, swizzle,
//                     further dims)
//
// in parts of at most 256 along the outermost dimension, issued by the
// first producer thread; the printer gives the kernel a tensor map of the
// source with the box's dimensions: the row's elements, then each of the
// rows' dimensions. A fill that passes all this but not the instruction's
// own limits (hw_call_problem) is no box.
//
// A fill into a slot stored 128-byte swizzled (Stage::storage_swizzle) has
// no such rows: its 16-byte chunks are permuted within each row. Its
// copies are read at their places before the swizzle (each copy within one
// chunk); when those make rows of 128 bytes that form a box as above, from
// a 1024-byte aligned start (each part too), the tensor copy lands them
// swizzled (swizzle 1, a map with CU_TENSOR_MAP_SWIZZLE_128B): each element
// goes where the fill put it, since the hardware's swizzle of the shared
// address is the layout's swizzle of the offset once the slot is 1024-byte
// aligned (schedule/shared_memory_plan.h aligns it so).
#pragma once

#include <cstdint>
#include <string>

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt bulk_copy_fills(const Stmt& producer, const Var& warp, int64_t consumer_warps, int64_t producer_warps,
                     bool every_fill, bool tensor_maps, const std::string& loop_name);

}  // namespace passes
}  // namespace kiln
