// kiln's asynchronous-copy prelude: cp.async from global into shared memory,
// the copies a multistage (software-pipelined) kernel issues for the tiles
// of later iterations while it computes on the current one. The code
// generator appends it after cuda_prelude() (codegen/cuda_prelude.h) to
// kernels that pipeline their loads. It compiles under NVRTC for sm_80 and
// later, and as host C++ after the emulation header
// (codegen/cuda_emulation.h), where each thread queues its copies and a wait
// lands them, so that reading a copy's destination before it arrived, or
// without the __syncthreads() that makes it visible to the block, fails the
// launch with a message.
#pragma once

#include <string>

namespace kiln {

// The prelude's CUDA C text (ends with a newline). Functions:
//   kiln_cp_async<Bytes>(dst, dst_index, src[, copy])
//       copies Bytes (4, 8 or 16) from global memory at `src` (a const T*)
//       to dst[dst_index ..], asynchronously; dst is a KILN_SHARED array of
//       T, or a pointer into one (array + offset). dst_index * sizeof(T) and
//       src must be aligned to Bytes. 16 bytes: cp.async.cg (bypasses L1),
//       4 and 8: cp.async.ca. With copy false, src-size 0: nothing is read
//       and zeros land (a gather's padding).
//   kiln_cp_async_commit()  closes this thread's copies issued since the
//       last commit into a group (cp.async.commit_group)
//   kiln_cp_async_wait(n)   waits until at most the newest n (0..7) of this
//       thread's committed groups are in flight (cp.async.wait_group n);
//       copies not yet committed are not waited for. Another thread sees the
//       data only after a __syncthreads() that follows the wait.
// A canonical pipeline over S stages commits one group per stage (empty ones
// too), so kiln_cp_async_wait(S - 2) then __syncthreads() makes the oldest
// stage readable.
const std::string& cuda_async_prelude();

}  // namespace kiln
