// inject_pipeline: software pipelining of the loops Stage::pipeline marks.
//
// Expects: flattened IR in which a loop to pipeline sits directly under an
// AttrStmt "pipeline_stages" (value N), serial, with a constant extent T,
// and its body is the Allocates of the stages computed at it (the access
// stage's buffers), then those stages' fills (statements that write only
// those buffers and read none of them), then the compute (the execute
// stage), which reads them and writes none of them.
//
// Guarantees: with S = min(N, T) slots (nothing changes when S < 2), each
// buffer is allocated once, outside the loop, with S slots (its size rounded
// up to 16 bytes, the alignment asynchronous copies need), and the loop
// becomes
//
//   for p in [0, S-1):                       prologue
//     pop_token(free, p); fill(p) into slot p; push_token(full, p)
//   for k in [0, T):                         steady state and epilogue
//     pop_token(full, k % S, in_flight = min(S-2, T-1-k))
//     [gpu: barrier]                         the slot's fills are visible to
//                                            the block, and every thread is
//                                            done with slot (k-1) % S
//     if (k + S-1 < T)                       attr pipeline_fill (value S)
//       pop_token(free, (k+S-1) % S); fill(k+S-1) into that slot; push_token(full, ..)
//     compute(k) on slot k % S
//     push_token(free, k % S)
//
// so the fills of iteration k + S - 1 are issued before the compute of
// iteration k. With `gpu`, a fill's vector copy of 4, 8 or 16 bytes from a
// global buffer into a slot (same element type, contiguous on both sides)
// becomes a cp.async instruction call. A copy of select(cond, load, 0), or
// of a masked load, whose condition is the same for all lanes, becomes one
// that zero-fills where the condition is false (the call's scalar); other
// fills stay plain stores, still ordered by the tokens. The tokens it emits pass
// verify_pipeline_tokens. A loop that does not have the expected shape is a
// user error that says what is missing.
//
// Warp specialization (`gpu`; the loop's kWarpSpecialized mark, P producer
// warps): the loop must sit in the loop bound to threadIdx.y, with only
// sequences and allocations between the two; S = min(N, T) slots, even 1.
// The producer warps run
//
//   for k in [0, T):  pop_token(free, k % S, phase k/S - 1); fill(k); push_token(full, k % S, phase k/S)
//
// and the warps the loop had run
//
//   for k in [0, T):  pop_token(full, k % S, phase k/S); compute(k); push_token(free, k % S, phase k/S)
//   for d in [T-S, T):  wait_token(free, d % S, phase d/S)      the drain
//
// at once, and the warp loop takes P more warps (warp_specialize.h); the
// steady state has no barrier.
//
// With the loop's kMmaInFlight mark (1) and S >= 2, the compute's wgmma
// products become their async forms and one iteration's stay in flight
// while the next iteration's are issued (compute/hw_instructions.h):
//
//   for k in [0, T):  pop_token(full, k % S, phase k/S); compute(k), issued;
//                     wgmma commit-and-wait(1)           iteration k-1's retire
//                     if (k >= 1) push_token(free, (k-1) % S, phase (k-1)/S)
//   wgmma commit-and-wait(0); push_token(free, (T-1) % S, phase (T-1)/S)
//   the drain, as above
//
// so no slot is released before the products that read it have retired. A
// compute with no wgmma product under the mark is a user error; with S < 2
// the mark changes nothing (no slot could stay taken).
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt inject_pipeline(const Stmt& body, bool gpu);

}  // namespace passes
}  // namespace kiln
