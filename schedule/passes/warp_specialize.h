// Warp specialization of a GPU pipeline (inject_pipeline's second form):
// the block's warp loop gets producer warps that only fill the pipeline's
// slots, while the warps it had only compute.
//
// Expects: `warp_loop`, a loop bound to threadIdx.y over the block's W
// consumer warps (from 0, constant extent), whose mutated body `body`
// holds the pipeline's consumer side under the marker
// AttrStmt kConsumerMarker that inject_pipeline left, with
// only sequences, allocations and annotations between the two. `region`
// is what inject_pipeline built for it.
//
// Guarantees: the loop runs over W + P warps and its body is
//
//   [the pipeline's slot buffers]
//   attr warp_specialized = slots
//     if (warp >= W) producer  else  body (the marker replaced by the consumer)
//
// The producer's loops bound to threadIdx.y become serial loops that its P
// warps share; a fill without such a loop runs on the first producer warp. User errors: the fills depend on the
// consumer's warp index, the pipeline sits under a loop, condition or let inside the warp loop, or the consumer's other
// statements touch shared memory where the producer could race with them (any access before the pipeline, a read after
// it).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "compute/stmt.h"

namespace kiln {
namespace passes {

// Where the consumer side goes, until warp_specialize places it.
constexpr const char* kConsumerMarker = "warp_specialized_consumer";

struct WarpSpecializedRegion {
  int64_t producer_warps = 0;
  bool bulk_copies = false;      // box-shaped fills move by bulk copies (bulk_copy.h)
  bool bulk_every_fill = false;  // and every fill must be one
  bool bulk_tensor_maps = false;  // boxes move by tensor copies (TMA)
  int64_t slots = 0;
  std::string loop_name;  // the pipelined loop, for messages
  Stmt producer;          // the producer warps' loop over the pipeline's iterations
  Stmt consumer;          // the consumer warps' loop and drain
  // The slot buffers (allocated around the region), outermost first.
  std::vector<const AllocateNode*> slot_buffers;
  std::vector<Expr> slot_buffer_sizes;
};

Stmt warp_specialize(const ForNode* warp_loop, const Stmt& body, const WarpSpecializedRegion& region,
                     const std::unordered_set<const VarNode*>& shared_buffers);

}  // namespace passes
}  // namespace kiln
