/* The C ABI between generated kernels and the runtime (no C++ types cross it).
 *
 * Every generated module exports, per kernel NAME:
 *   int32_t NAME(void** args);   -- args[i] is the data pointer of the i-th
 *                                   buffer in the LoweredFunc's argument order;
 *                                   returns 0 on success.
 * and one writable global slot
 *   void* __kiln_parallel_for;   -- set by whoever loads the module to the
 *                                   address of a kiln_parallel_for_fn (the
 *                                   runtime pool's kiln_parallel_for). Parallel
 *                                   loops call through it, so a module needs
 *                                   no symbol from its host process.
 * and two optional slots for its buffers too large for the stack
 *   void* __kiln_workspace_alloc;  -- a kiln_workspace_alloc_fn, and
 *   void* __kiln_workspace_free;   -- its kiln_workspace_free_fn: the
 *                                   runtime's cache of freed blocks, so that
 *                                   a kernel called again reuses its
 *                                   intermediate arrays instead of mapping
 *                                   fresh pages. Left null, the kernel uses
 *                                   aligned_alloc and free.
 */
#ifndef KILN_RUNTIME_C_API_H_
#define KILN_RUNTIME_C_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One task of a parallel loop: runs the share `task_id` of `num_tasks`. */
typedef int32_t (*kiln_task_fn)(int64_t task_id, int64_t num_tasks, void* closure);

/* Runs fn(t, num_tasks, closure) for t in [0, num_tasks) on the thread pool
 * and returns when all are done; 0 on success, else the first non-zero
 * task result. num_tasks <= 0 means "one task per pool thread". */
typedef int32_t (*kiln_parallel_for_fn)(kiln_task_fn fn, void* closure, int64_t num_tasks);

int32_t kiln_parallel_for(kiln_task_fn fn, void* closure, int64_t num_tasks);

/* Number of threads the pool runs parallel loops on. */
int32_t kiln_num_threads(void);

typedef int32_t (*kiln_packed_fn)(void** args);

/* A 64-byte aligned block of `bytes` (a multiple of 64), or null; freed with
 * the same size. Thread-safe. */
typedef void* (*kiln_workspace_alloc_fn)(uint64_t bytes);
typedef void (*kiln_workspace_free_fn)(void* block, uint64_t bytes);

void* kiln_workspace_alloc(uint64_t bytes);
void kiln_workspace_free(void* block, uint64_t bytes);

#define KILN_PARALLEL_FOR_SLOT "__kiln_parallel_for"
#define KILN_WORKSPACE_ALLOC_SLOT "__kiln_workspace_alloc"
#define KILN_WORKSPACE_FREE_SLOT "__kiln_workspace_free"

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_C_API_H_ */
