// The fixed part of a kernel library's NAME.c (see library_c_source.h): the
// thread pool that fills the kernels' parallel-for slot, and the helpers
// the dispatchers and entry points share (argument checks, overlap tests,
// aligned temporaries around tuned kernels). Placeholders: @N@ (library
// name), @SLOT@ (slot symbol).
#pragma once

namespace kiln {

// Why a pool of its own rather than runtime/'s: a kiln lib library is plain
// C that an application links with nothing of kiln's (no C++ runtime, no
// libkiln), so the pool is written into the library's C source. It follows
// runtime/thread_pool.h: persistent workers, the caller
// runs task 0 and then claims tasks with the workers from a shared counter;
// idle workers spin ~10 us before blocking; nested parallel loops run
// serially; loops from several threads run one at a time. KILN_NUM_THREADS
// (a positive integer) sets the thread count, else one per online CPU. The
// pool starts on the first parallel loop; a child after fork() starts its own.
inline const char* const kLibraryRuntimeC = R"C(
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "@N@.h"

#define API __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))

typedef int32_t (*task_fn)(int64_t task, int64_t num_tasks, void* closure);
typedef int32_t (*parallel_for_fn)(task_fn fn, void* closure, int64_t num_tasks);
typedef int32_t (*packed_kernel_fn)(void** args);

/* ---- AMX ---- */

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
long syscall(long number, ...);
/* Tuned kernels may use AMX tiles, whose data Linux (5.16+) lets a process
   use only once it asks (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA);
   asked when the library loads. On a CPU without AMX the request fails and
   no kernel uses it. */
__attribute__((constructor)) static void request_amx_tiles(void) { syscall(SYS_arch_prctl, 0x1023, 18); }
#endif

/* ---- thread pool ---- */

struct job {
  task_fn fn;
  void* closure;
  int64_t num_tasks;
  atomic_llong next; /* task 0 belongs to the caller */
  atomic_int result;
  atomic_int pending; /* workers not yet done with this job */
};

struct pool;

struct worker {
  _Alignas(64) _Atomic(struct job*) job;
  atomic_int sleeping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct pool* pool;
};

struct pool {
  int num_threads; /* the caller plus the workers */
  struct worker* workers;
  pthread_mutex_t call_mu; /* one parallel loop at a time */
  pthread_mutex_t done_mu;
  pthread_cond_t done_cv;
};

static _Thread_local int in_parallel_region;
static _Atomic(struct pool*) g_pool;
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_atfork_registered;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int pool__default_threads(void) {
  const char* env = getenv("KILN_NUM_THREADS");
  if (env) {
    char* end = NULL;
    long n = strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0 && n <= 4096) return (int)n;
  }
  long hw = sysconf(_SC_NPROCESSORS_ONLN);
  return hw > 0 ? (int)hw : 1;
}

static void run_tasks(struct job* job) {
  for (;;) {
    if (atomic_load_explicit(&job->result, memory_order_relaxed) != 0) return;
    int64_t t = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (t >= job->num_tasks) return;
    int32_t r = job->fn(t, job->num_tasks, job->closure);
    if (r != 0) {
      int none = 0;
      atomic_compare_exchange_strong(&job->result, &none, r);
    }
  }
}

static struct job* wait_for_job(struct worker* w) {
  struct job* job = NULL;
  double deadline = now_us() + 10.0;
  for (int i = 0;; ++i) {
    job = atomic_load_explicit(&w->job, memory_order_acquire);
    if (job || ((i & 31) == 31 && now_us() >= deadline)) break;
    cpu_relax();
  }
  if (!job) {
    pthread_mutex_lock(&w->mu);
    /* Publish `sleeping`, then re-check the mailbox; the caller publishes the
       job, then checks `sleeping` (both seq_cst): one of us sees the other. */
    atomic_store(&w->sleeping, 1);
    while ((job = atomic_load(&w->job)) == NULL) pthread_cond_wait(&w->cv, &w->mu);
    atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
    pthread_mutex_unlock(&w->mu);
  }
  atomic_store_explicit(&w->job, NULL, memory_order_relaxed);
  return job;
}

static void finish_job(struct pool* p, struct job* job) {
  /* After the decrement the caller may return and end *job's lifetime. */
  if (atomic_fetch_sub_explicit(&job->pending, 1, memory_order_acq_rel) == 1) {
    pthread_mutex_lock(&p->done_mu);
    pthread_mutex_unlock(&p->done_mu);
    pthread_cond_broadcast(&p->done_cv);
  }
}

static void* worker_main(void* arg) {
  struct worker* w = (struct worker*)arg;
  in_parallel_region = 1;
  for (;;) {
    struct job* job = wait_for_job(w);
    run_tasks(job);
    finish_job(w->pool, job);
  }
  return NULL;
}

/* fork() keeps only the calling thread: the child forgets the parent's pool
   (leaking it) and starts its own on its first parallel loop. */
static void atfork_prepare(void) { pthread_mutex_lock(&g_pool_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_pool_mu); }
static void atfork_child(void) {
  atomic_store_explicit(&g_pool, NULL, memory_order_relaxed);
  pthread_mutex_unlock(&g_pool_mu);
}

static struct pool* create_pool(void) {
  int n = pool__default_threads();
  struct pool* p = (struct pool*)calloc(1, sizeof(struct pool));
  if (!p) return NULL;
  p->num_threads = 1;
  pthread_mutex_init(&p->call_mu, NULL);
  pthread_mutex_init(&p->done_mu, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  if (n > 1) p->workers = (struct worker*)aligned_alloc(64, sizeof(struct worker) * (size_t)(n - 1));
  if (!p->workers) return p;
  /* Workers block every signal: the program's handlers run on its own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < n - 1; ++i) {
    struct worker* w = &p->workers[i];
    atomic_init(&w->job, NULL);
    atomic_init(&w->sleeping, 0);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->pool = p;
    pthread_t thread;
    if (pthread_create(&thread, &attr, worker_main, w) != 0) break; /* run with the threads we got */
    p->num_threads = i + 2;
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return p;
}

/* NULL only when memory ran out: loops then run serially. */
static struct pool* get_pool(void) {
  struct pool* p = atomic_load_explicit(&g_pool, memory_order_acquire);
  if (p) return p;
  pthread_mutex_lock(&g_pool_mu);
  if (!g_atfork_registered) {
    g_atfork_registered = pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0;
  }
  p = atomic_load_explicit(&g_pool, memory_order_relaxed);
  if (!p) {
    p = create_pool();
    atomic_store_explicit(&g_pool, p, memory_order_release);
  }
  pthread_mutex_unlock(&g_pool_mu);
  return p;
}

static int32_t run_serial(task_fn fn, void* closure, int64_t num_tasks) {
  for (int64_t t = 0; t < num_tasks; ++t) {
    int32_t r = fn(t, num_tasks, closure);
    if (r != 0) return r;
  }
  return 0;
}

static int32_t pool_parallel_for(task_fn fn, void* closure, int64_t num_tasks) {
  if (in_parallel_region) return run_serial(fn, closure, num_tasks > 0 ? num_tasks : 1);
  struct pool* p = get_pool();
  int threads = p ? p->num_threads : 1;
  if (num_tasks <= 0) num_tasks = threads;
  if (threads == 1 || num_tasks == 1) return run_serial(fn, closure, num_tasks);
  pthread_mutex_lock(&p->call_mu);
  struct job job;
  job.fn = fn;
  job.closure = closure;
  job.num_tasks = num_tasks;
  atomic_init(&job.next, 1);
  atomic_init(&job.result, 0);
  int helpers = (int)(num_tasks < threads ? num_tasks : threads) - 1;
  atomic_init(&job.pending, helpers);
  for (int i = 0; i < helpers; ++i) {
    struct worker* w = &p->workers[i];
    atomic_store(&w->job, &job);
    if (atomic_load(&w->sleeping)) {
      /* Taking the mutex orders this signal after the worker's wait began. */
      pthread_mutex_lock(&w->mu);
      pthread_mutex_unlock(&w->mu);
      pthread_cond_signal(&w->cv);
    }
  }
  in_parallel_region = 1;
  int32_t r0 = fn(0, num_tasks, closure);
  if (r0 != 0) {
    int none = 0;
    atomic_compare_exchange_strong(&job.result, &none, r0);
  }
  run_tasks(&job);
  in_parallel_region = 0;
  double deadline = now_us() + 50.0;
  for (int i = 0; atomic_load_explicit(&job.pending, memory_order_acquire) != 0; ++i) {
    if ((i & 31) == 31 && now_us() >= deadline) {
      pthread_mutex_lock(&p->done_mu);
      while (atomic_load_explicit(&job.pending, memory_order_acquire) != 0) pthread_cond_wait(&p->done_cv, &p->done_mu);
      pthread_mutex_unlock(&p->done_mu);
      break;
    }
    cpu_relax();
  }
  int32_t result = atomic_load_explicit(&job.result, memory_order_relaxed);
  pthread_mutex_unlock(&p->call_mu);
  return result;
}

/* The tuned kernels' parallel loops call through this slot (declared, not
   defined, in the kernels' object), so it is set before any kernel runs. */
HIDDEN parallel_for_fn @SLOT@ = pool_parallel_for;

API int @N@_num_threads(void) {
  struct pool* p = get_pool();
  return p ? p->num_threads : 1;
}

/* ---- helpers of the dispatchers and entry points ---- */

/* *count = product of the dims, when it and its size in bytes fit. */
static int count_of(int64_t* count, size_t elem_size, int num_dims, const int64_t* dims) {
  int64_t c = 1;
  for (int i = 0; i < num_dims; ++i) {
    if (dims[i] < 0) return 0;
    if (dims[i] != 0 && c > INT64_MAX / dims[i]) return 0;
    c *= dims[i];
  }
  if ((uint64_t)c > (uint64_t)PTRDIFF_MAX / elem_size) return 0;
  *count = c;
  return 1;
}

static int overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return a && b && a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
}

struct buffer {
  const void* ptr;
  size_t bytes;
};

#define MAX_KERNEL_ARGS 8

/* Runs a tuned kernel (inputs first, then one output). Tuned kernels need
   64-byte-aligned buffers that do not overlap the output: other pointers go
   through aligned temporaries. */
static int call_tuned(packed_kernel_fn kernel, const struct buffer* bufs, int num_args, int num_inputs) {
  void* args[MAX_KERNEL_ARGS];
  void* temps[MAX_KERNEL_ARGS] = {0};
  int rc = @N@_OK;
  for (int i = 0; i < num_args; ++i) {
    args[i] = (void*)bufs[i].ptr;
    int copy = ((uintptr_t)bufs[i].ptr & 63u) != 0;
    for (int j = 0; j < num_inputs && i >= num_inputs && !copy; ++j)
      copy = overlaps(bufs[i].ptr, bufs[i].bytes, bufs[j].ptr, bufs[j].bytes);
    if (!copy) continue;
    temps[i] = aligned_alloc(64, (bufs[i].bytes + 63u) & ~(size_t)63u);
    if (!temps[i]) {
      rc = @N@_ERROR_MEMORY;
      goto done;
    }
    if (i < num_inputs) memcpy(temps[i], bufs[i].ptr, bufs[i].bytes);
    args[i] = temps[i];
  }
  if (kernel(args) != 0) {
    rc = @N@_ERROR_KERNEL;
    goto done;
  }
  for (int i = num_inputs; i < num_args; ++i)
    if (temps[i]) memcpy((void*)bufs[i].ptr, temps[i], bufs[i].bytes);
done:
  for (int i = 0; i < num_args; ++i) free(temps[i]);
  return rc;
}

/* Work (multiply-adds) from which a generic kernel runs on the pool. */
#define PARALLEL_WORK 32768.0
)C";

}  // namespace kiln
