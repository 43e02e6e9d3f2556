// Helpers shared by the cuda schedule templates: registering a template on
// an OpDef, the block/thread/element split of an output axis, and the
// cooperative fill of a shared tile by a 2-D block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace kiln {

// Sets d.gpu: the space and default as given; apply_config refuses an
// instance of another op ("the <op> cuda template cannot schedule op ...")
// before calling `schedule`.
void set_gpu_template(OpDef& d, decltype(GpuTemplate::define_space) space,
                      decltype(GpuTemplate::default_config) default_config,
                      std::function<ScheduledOp(const OpInstance&, const Config&)> schedule);

// Splits `axis` of `st` into (block, thread, element) loops from a knob's
// factors {blocks, threads, tile}: axis = (b * threads + t) * tile + i, so
// that a thread's register tile covers adjacent elements. (Tiles strided by
// the thread count would coalesce better, but bound inference gives such a
// tile a box as wide as the whole block row: that needs virtual threads.)
void split_three(Stage& st, const IterVar& axis, const std::vector<int64_t>& f, IterVar* b, IterVar* t, IterVar* i);

// The block's threads copy a shared tile: its axes fused, then split into
// [rounds, threadIdx.y, threadIdx.x, vector lanes], so that adjacent threads
// copy adjacent elements of the tile's rows; `vec` only when every row of
// the tile (and of the tensor) is whole vectors.
void cooperative_fill(Stage st, int64_t threads_y, int64_t threads_x, int64_t vec);
// The same for a stage stored in tiles of `tile` x `tile` (storage_tile;
// its last two extents multiples of the tile, vec dividing it): the threads
// go down a tile's rows first, so that each group of `tile` of them writes
// one tile's `tile` consecutive rows (with 8 x 8 tiles of 16-bit elements
// and 16-byte copies, 128 contiguous bytes: no bank conflict), the next
// group the next tile along the row.
void cooperative_tile_fill(Stage st, int64_t threads_y, int64_t threads_x, int64_t vec, int64_t tile);

// The element types the cuda templates take: f32, and f16 or bf16 stored in
// 16 bits and computed (accumulated) in f32. Anything else is a user error
// naming `what` (the template).
void check_gpu_dtype(DType t, const std::string& what);

// The largest power of two at most v (1 for v < 2).
int64_t floor_pow2(int64_t v);

}  // namespace kiln
