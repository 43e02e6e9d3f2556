// Cost-model features of a lowered kernel (AutoTVM-style "itervar"
// features), read from the IR at LowerDepth::kAnnotatedLoops: loops still
// carry their kinds (serial / parallel / vectorized / unrolled) and buffers
// are flat (Allocate / Store / Load with one affine index).
//
// The features describe the loop nest around the *hottest store*: the Store
// executed most often (product of its enclosing loop extents; ties go to the
// one with more loads, then to the first). For a matmul or a convolution that
// is the accumulation statement. Along its loop path (outermost to
// innermost) every loop gets loop features and, for up to kBuffers buffers,
// access features; the innermost kLoopSlots loops fill fixed slots, innermost
// first, so configs of one task (and shapes of one op) line up position by
// position. Missing loops and buffers are zeros. The outer loops (cache
// blocking, parallel, packing) enter through the kernel-wide features: cache
// traffic estimates, reuse distances, parallel extent. Four slots rank
// measured configs better than eight or twelve at 100-300 training samples
// (the extra slots mostly add noise for the trees).
//
// Buffers of the hottest store, in slot order: slot 0 is the stored buffer,
// slots 1.. are the other buffers it loads, in order of first appearance in
// the stored value (reads of the stored buffer itself count as accesses of
// slot 0). For `C[i*N+j] = C[i*N+j] + A[i*K+k] * B[k*N+j]`: C, A, B.
//
// Magnitudes are stored as log2(1 + x); flags are 0/1; small counts raw.
//
// Layout (kFeatureLength = 211 floats):
//
//   [0, kLoopSlots * kLoopStride): per loop slot s (0 = innermost loop of the
//   path, 1 = its parent, ...), kLoopStride floats from s * kLoopStride:
//     +0  present (1 when the path has a loop in this slot)
//     +1  log extent
//     +2  nesting level (0 = outermost loop of the path)
//     +3  serial, +4 parallel (thread bindings count as parallel),
//     +5  vectorized, +6 unrolled (one-hot)
//     +7  log iterations of one run of this loop, inner loops included
//         (product of the extents from this loop inward)
//     +8  log number of times this loop's body runs in the whole kernel
//         (product of the extents from the outermost loop to this one)
//     +9  log working set: the sum over buffers of +11+5b+1 below
//     +10 guarded: 1 when an if-condition enclosing the store uses this
//         loop's variable (a non-divisible tile's guard)
//     then per buffer slot b (kBuffers of them), 5 floats from
//     +11 + 5*b:
//       +0 log |stride|: the coefficient of this loop's variable in the
//          buffer's flat index, in elements (floordiv/floormod by a
//          constant scale it by 1/c / drop multiples of c)
//       +1 log touched bytes: distinct elements accessed during one run of
//          this loop (this loop and every inner loop of the path varying),
//          times the element size
//       +2 log touched cache lines (64 bytes each) during one run
//       +3 log access count during one run (accesses per innermost
//          iteration times the iterations of one run)
//       +4 log reuse ratio: access count / distinct elements
//
//   [kGlobalOffset, kFeatureLength): kernel-wide features:
//     +0  log executions of the hottest store
//     +1  loops on its path
//     +2  log executions of all stores
//     +3  log executions of the other stores (packing, init, copy-out)
//     +4  number of Store statements
//     +5..+8  number of serial / parallel / vectorized / unrolled loops
//             in the whole kernel
//     +9  log product of the parallel extents on the path (0: none)
//     +10 1 when the outermost loop of the path is parallel
//     +11 log extent of the innermost vectorized loop on the path
//     +12 1 when the innermost loop of the path is vectorized
//     +13 log product of the unrolled extents on the path (0: none)
//     +14 log iterations of the innermost run of vectorized / unrolled
//         loops on the path (0: none)
//     +15 log bytes allocated in local scope, +16 in global scope
//     +17 arithmetic operations in the hottest store's value
//     +18 loads in the hottest store's value
//     +19 innermost loops whose working set fits 32 KiB (L1)
//     +20 innermost loops whose working set fits 1 MiB (L2)
//     +21 log loops on the path beyond kLoopSlots (those the slots drop)
//     +22 log bytes moved into L1 (32 KiB), estimated: the cache lines the
//         innermost loops that fit L1 touch, once per entry of the
//         outermost of them (every access's bytes when none fits)
//     +23 the same for L2 (1 MiB)
//     +24 log vector operations of the hottest store: executions / lanes,
//         lanes being the innermost loop's extent when vectorized, else 1
//     +25 log register tile: distinct elements of the stored buffer over
//         the innermost run of vectorized / unrolled loops of the path
//     +26 log the vector registers (64 bytes) that tile needs
//     +27 log register-level intensity: iterations of that run times the
//         number of buffers, over the distinct elements they touch in it
//     +28 if-conditions enclosing the hottest store
//     +29 1 when one of them uses the innermost loop's variable
//     +30 log vector operations per parallel iteration: +24 over the
//         product of the parallel extents
//     +31 vector fill: lanes (+24) over lanes rounded up to whole 64-byte
//         vectors (1 when full vectors, 0.5 for half of one)
//     then per buffer slot b, 9 floats from +32 + 9*b:
//       +0 log touched bytes of the whole path (the buffer's footprint)
//       +1 log access count of the whole path
//       +2..+4 stride with respect to the innermost vectorized loop of the
//              path is 0 / 1 / other (one-hot; all 0 without one)
//       +5 log reuse distance in iterations: the innermost loop whose
//          variable the index does not use carries the reuse; the
//          iterations of the loops inside it (0 without such a loop)
//       +6 log reuse distance in bytes: the working set of those loops
//       +7 log reuse count: that loop's extent
//       +8 log distinct elements over the register tile's loops
//
//   [kGpuOffset, kLatencyOffset): GPU kernels (all zeros on a CPU):
//     +0  1 for a GPU kernel (a loop bound to a thread or block index)
//     +1  log threads per block: the thread-bound loops on the path
//     +2  log blocks: the block-bound loops on the path
//     +3  log shared-memory bytes
//     +4  estimated occupancy (resident warps / 64), from the threads, the
//         shared bytes and registers estimated from the local arrays, with
//         an H100's per-SM limits
//     +5  log waves: blocks over the blocks 132 SMs hold at once
//     +6  log estimated registers per thread
//     +7  reductions across threads (ThreadAllReduce statements)
//     +8  log mean 32-byte sectors one warp's request touches, over every
//         global access of every store weighted by executions
//         (coalescing: 4 for adjacent floats, 32 for scattered ones)
//     +9  log mean bank conflict degree of shared accesses, likewise
//     +10 log mean vector lanes of global accesses (float4: 4), likewise
//     +11 log mean vector lanes of shared accesses, likewise
//
//   [kLatencyOffset, kFeatureLength): latency hiding and memory traffic
//   (Stage::pipeline, Stage::prefetch, Stage::stream_stores), CPU and GPU:
//     +0  the most slots of a pipelined loop (0 without one), on the GPU
//         from the loop's mark, on the CPU (pipelined before the depth
//         the features are read at) from the lowered pipeline's fill
//     +1  log prefetch instructions run (Prefetch statements weighted by
//         their executions)
//     +2  log bytes written by streaming stores (Stage::stream_stores),
//         which skip the caches
//     +3  the producer warps of a warp-specialized pipeline (0 without
//         one), from the loop's mark
//     +4  1 when that pipeline's producer moves its fills by bulk copies
//         (sm_90's cp.async.bulk, Stage::pipeline's BulkCopies), 2 when
//         it moves boxes by tensor copies (BulkCopyForm::kTensorMaps), else 0
//     +5  the iterations whose wgmma products that pipeline keeps in flight
//         (Stage::mma_in_flight: 0 or 1), from the loop's mark
//     +6  the most operands of a wgmma call read 128-byte swizzled
//         (Stage::storage_swizzle: 0, 1 or 2)
#pragma once

#include "compute/function.h"
#include "costmodel/cost_model.h"

namespace kiln {

namespace features {
constexpr int kLoopSlots = 4;
constexpr int kBuffers = 4;
constexpr int kBufferStride = 5;
constexpr int kLoopBufferOffset = 11;
constexpr int kLoopStride = kLoopBufferOffset + kBuffers * kBufferStride;
constexpr int kGlobalOffset = kLoopSlots * kLoopStride;
constexpr int kGlobalBufferOffset = 32;
constexpr int kGlobalBufferStride = 9;
constexpr int kGlobalCount = kGlobalBufferOffset + kBuffers * kGlobalBufferStride;
constexpr int kGpuOffset = kGlobalOffset + kGlobalCount;
constexpr int kGpuCount = 12;
constexpr int kLatencyOffset = kGpuOffset + kGpuCount;
constexpr int kLatencyCount = 7;
constexpr int kFeatureLength = kLatencyOffset + kLatencyCount;
static_assert(kFeatureLength == 211, "update the layout comment");

// Offsets of a loop slot's features and of a buffer's features within a slot.
constexpr int loop_offset(int slot) { return slot * kLoopStride; }
constexpr int buffer_offset(int slot, int buffer) {
  return slot * kLoopStride + kLoopBufferOffset + buffer * kBufferStride;
}
}  // namespace features

// The features of `f` (lowered to LowerDepth::kAnnotatedLoops; a fully
// lowered function also works but its vectorized and unrolled loops are gone).
// A function without any Store gives all zeros.
FeatureVector extract_features(const LoweredFunc& f);

// log2(1 + |x|), the transform of every magnitude above.
float feature_log(double x);

}  // namespace kiln
