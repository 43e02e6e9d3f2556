// kiln's mbarrier prelude: barriers in shared memory that count arrivals in
// phases, so that one group of threads (a producer filling a pipeline's
// slot) can hand data to another (the consumers of the slot) and back
// without stopping the whole block at a __syncthreads(). This is the
// dependency-token protocol of schedule/passes/inject_pipeline.h in
// hardware: an arrival pushes a token, a wait for the phase pops it. The
// code generator appends it after cuda_prelude() (and the async-copy prelude,
// whose copies can arrive on a barrier). It compiles under NVRTC for sm_80
// and later, and as host C++ after the emulation header
// (codegen/cuda_emulation.h), where the phases order the arrivals before
// the waits for the race checks, and a wait that can never complete fails
// the launch as a deadlock.
#pragma once

#include <string>

namespace kiln {

// The prelude's CUDA C text (ends with a newline). Functions:
//   KILN_SHARED_MBARRIER(name, N)      N barriers in shared memory
//   kiln_mbarrier_init(name, i, count) one thread sets barrier i to complete
//       a phase every `count` arrivals (1 to 2^20 - 1); other threads may use
//       it after the __syncthreads() that follows
//   kiln_mbarrier_arrive(name, i)      this thread arrives on the phase in
//       progress; what it wrote before is visible to the threads that then
//       wait for that phase
//   kiln_mbarrier_wait(name, i, parity) returns once the phase of that parity
//       has completed: the one in progress when its parity (phases completed
//       so far, mod 2) is `parity`, else the one just before it
//   kiln_cp_async_mbarrier_arrive(name, i) an arrival made once all of this
//       thread's cp.async copies so far have landed (one of the `count`)
// and, for sm_90 (Hopper's bulk copy engine, one thread moving a whole run):
//   kiln_fence_mbarrier_init()         after the initializing thread's
//       kiln_mbarrier_init calls: the bulk copy engine (the async proxy),
//       which completes their transactions, sees the initialized barriers
//       once the __syncthreads() that follows has run
//   kiln_mbarrier_arrive_expect_tx(name, i, bytes) the phase in progress
//       also waits for `bytes` more bytes of bulk copies; then this thread
//       arrives
//   kiln_bulk_copy(dst, dst_index, src, bytes, name, i) copies `bytes` (a
//       multiple of 16, both addresses 16-byte aligned) from global memory at
//       `src` to dst[dst_index ..] asynchronously, and completes them on
//       barrier i (cp.async.bulk ... mbarrier::complete_tx::bytes); the data
//       may be read once that phase has completed
//   kiln_tensor_map                    a tensor map kernel parameter (taken
//       as const __grid_constant__ kiln_tensor_map), encoded at launch
//   kiln_tensor_copy_2d(dst, dst_index, map, c0, c1, name, i) copies the box
//       of the 2-D tensor map at coordinates (c0, c1) (innermost first) to
//       dst[dst_index ..] (128-byte aligned), its rows one after another
//       (kiln_tensor_copy_3d to _5d: the same with 3 to 5 coordinates),
//       zeros where the box passes the tensor's edges, and completes its
//       bytes on barrier i (cp.async.bulk.tensor)
// A ring of S slots waits for the k-th use of slot k % S with parity
// (k / S) & 1.
const std::string& cuda_mbarrier_prelude();

}  // namespace kiln
