// The CUDA emulation header's text (see cuda_emulation.h), in five parts:
// the CUDA built-ins, barriers and warp operations (here); the shared
// arrays and the asynchronous copies into them (cuda_emulation_shared.cpp);
// mbarriers (cuda_emulation_mbarrier.cpp); the fibers the threads run on
// (cuda_emulation_fibers.cpp); then the launcher and the vector accesses
// (here).
#include "codegen/cuda_emulation.h"
#include "codegen/cuda_emulation_fibers.h"
#include "codegen/cuda_emulation_mbarrier.h"
#include "codegen/cuda_emulation_shared.h"

namespace kiln {

namespace {

const char* const kBuiltins = R"KILN(// ---- kiln CUDA emulation header ----
// Makes kiln's CUDA C compile as host C++17 (see codegen/cuda_emulation.h):
// each thread of a block is a fiber (a stack of its own) that the
// launching thread switches to and from, blocks run one after another,
// shared arrays are objects that check races and bounds (and reads of
// cp.async copies still in flight), and warp operations exchange values
// through a per-warp barrier.
#define KILN_CUDA_EMULATION 1
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <climits>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

// The emulator's runtime (the launcher, barriers, warp operations, the
// fibers, the queues of copies in flight) is compiled once per compiler and
// flags and linked into each module that defines KILN_EMU_LINKED_RUNTIME
// (codegen/cuda_emulation_pch.h): such a module keeps only the runtime's
// declarations, its kernels and the templates they use. Its variables are
// inline, so the module and the runtime share one of each, and hidden
// (-fvisibility=hidden): every module keeps an emulator of its own.
#ifdef KILN_EMU_LINKED_RUNTIME
#define KILN_EMU_DEFINE_RUNTIME 0
#else
#define KILN_EMU_DEFINE_RUNTIME 1
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __syncthreads() ::kiln_emu::syncthreads(__LINE__)
#define KILN_SHARED(T, name, count) static ::kiln_emu::SharedArray<T, (count)> name(#name)
// Arrays carved out of a pool are arrays of their own here too; they know
// their byte offset, to catch arrays that share bytes touched with no
// barrier in between. Dynamic ones check that the launch asked for enough.
#define KILN_SHARED_POOL(bytes, align) ((void)0)
#define KILN_SHARED_AT(T, name, count, offset) static ::kiln_emu::SharedArray<T, (count)> name(#name, (offset))
#define KILN_DYNAMIC_SHARED_POOL(align) ((void)0)
#define KILN_DYNAMIC_SHARED(T, name, count, offset) \
  KILN_SHARED_AT(T, name, count, offset);           \
  ::kiln_emu::check_dynamic_shared(#name, (offset) + (count) * (long long)sizeof(T))

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline dim3 threadIdx, blockIdx;  // the running CUDA thread's (see FiberLocals)
inline dim3 blockDim, gridDim;
static const int warpSize = 32;

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline int2 make_int2(int x, int y) { return int2{x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }

// CUDA's math built-ins beyond <math.h> (fast variants are the exact ones here).
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
template <typename T> inline T __ldg(const T* p) { return *p; }
namespace kiln_emu {
// The launcher (below): lets the block's other threads run before this one
// goes on. Atomics and fences call it: a thread may poll a flag that
// another thread sets (a GPU runs them at once; here a thread that never
// waited would keep the launching thread forever).
void fiber_yield();
}  // namespace kiln_emu
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  kiln_emu::fiber_yield();
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  kiln_emu::fiber_yield();
}
// min/max of any two arithmetic types, in their common type (CUDA overloads these).
template <typename A, typename B>
using kiln_emu_arith = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>;
template <typename A, typename B, typename = kiln_emu_arith<A, B>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<C>::value) return std::fmin(C(a), C(b));
  else return C(b) < C(a) ? C(b) : C(a);
}
template <typename A, typename B, typename = kiln_emu_arith<A, B>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point<C>::value) return std::fmax(C(a), C(b));
  else return C(a) < C(b) ? C(b) : C(a);
}
// Atomics on global memory (shared-array elements are not addressable here).
template <typename T> inline T kiln_emu_atomic_update(T* p, T v, int op) {
  T old, next;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do {
    next = op == 0 ? T(old + v) : op == 1 ? (v < old ? v : old) : op == 2 ? (old < v ? v : old) : v;
  } while (!__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  kiln_emu::fiber_yield();
  return old;
}
template <typename T> struct kiln_emu_same { using type = T; };  // the value's type follows the pointer's
template <typename T> using kiln_emu_val = typename kiln_emu_same<T>::type;
template <typename T> inline T atomicAdd(T* p, kiln_emu_val<T> v) { return kiln_emu_atomic_update(p, v, 0); }
template <typename T> inline T atomicMin(T* p, kiln_emu_val<T> v) { return kiln_emu_atomic_update(p, v, 1); }
template <typename T> inline T atomicMax(T* p, kiln_emu_val<T> v) { return kiln_emu_atomic_update(p, v, 2); }
template <typename T> inline T atomicExch(T* p, kiln_emu_val<T> v) { return kiln_emu_atomic_update(p, v, 3); }
template <typename T> inline T atomicCAS(T* p, kiln_emu_val<T> cmp, kiln_emu_val<T> v) {
  __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  kiln_emu::fiber_yield();
  return cmp;
}

namespace kiln_emu {

struct Abort {};  // unwinds the threads of a launch that failed

enum class At : unsigned char { kRunning, kBarrier, kWarp, kMbarrier, kFinished };
struct ThreadState {
  At at = At::kRunning;
  int line = 0;  // of the __syncthreads() it waits at
  const char* mbarrier = nullptr;  // the mbarrier array it waits on (kMbarrier), for messages
  int mbarrier_index = 0;
  const void* waits_on = nullptr;
};
// The launcher (below): suspends the running CUDA thread's fiber until
// `word` no longer holds `ticket`, running the block's other threads.
void fiber_suspend(const std::atomic<uint32_t>* word, uint32_t ticket);
// Threads wait on a word outside the team's mutex; it is bumped when their
// barrier completes or the launch fails. A waiting thread's fiber is
// suspended (never holding the mutex) and resumed once the word changed.
struct Gate {
  std::atomic<uint32_t> word{0};
  uint32_t ticket() const { return word.load(std::memory_order_acquire); }
  void open() { word.fetch_add(1); }
  void wait(uint32_t ticket) {
    while (word.load(std::memory_order_acquire) == ticket) fiber_suspend(&word, ticket);
  }
};
struct WarpState {
  Gate gate;
  uint64_t gen = 0;    // completed warp operations: their parity picks the row of slots
  uint64_t epoch = 1;  // race detection: bumped at each completed warp operation
  int arrived = 0;
  unsigned mask = 0;
  const char* op = nullptr;  // the warp-collective operation (warp_exchange) its lanes wait in, or null
  uint64_t slots[2][32];
  // With mbarriers in the launch: per row, the join of the lanes' clocks
  // that every lane of the operation acquires (see cur_clock).
  std::vector<uint32_t> joined[2];
};

inline std::atomic<uint64_t> g_launches{0};  // numbers the launches (Team::launch)

// One launch: the block's threads, its barrier and its warps.
struct Team {
  const uint64_t launch = ++g_launches;  // unique across launches, unlike the Team's address
  std::mutex mu;
  Gate gate;  // block barrier and next block
  const char* kernel = "";
  const std::function<void()>* body = nullptr;
  int n = 0;
  long long nblocks = 0, block = 0;
  std::vector<ThreadState> ts;
  std::vector<WarpState> warps;
  int running = 0, at_barrier = 0, finished = 0;
  uint64_t epoch = 0;
  std::atomic<bool> failed{false};
  std::string error;
  explicit Team(int threads) : n(threads), ts(threads), warps((threads + 31) / 32), running(threads) {}
};

inline std::mutex g_launch_mu;  // one launch at a time: shared arrays are per module
inline std::atomic<bool> g_failed{false};
inline uint64_t g_epoch = 0;  // race-detection epochs, unique across launches
inline thread_local char tl_error[8192];  // the calling thread's last failed launch
// The running CUDA thread: its fiber's FiberLocals while it runs. Launches
// are one at a time per module (g_launch_mu) and run their fibers on the
// launching thread, so these are plain globals, not thread_locals (whose
// every access from a shared object is a call).
inline Team* cur_team = nullptr;
inline int cur_tid = -1, cur_warp = 0, cur_lane = 0;
inline uint64_t cur_epoch = 0, cur_warp_epoch = 0;
// Happens-before through mbarriers (the mbarrier part): a thread's clock
// counts its arrivals; cur_vc[o] is the latest clock of thread o whose
// arrival this thread has acquired by waiting on a completed phase. An
// access of thread o stamped with clock c is ordered before this thread's
// next access when cur_vc[o] > c. Arrivals publish the arriving thread's
// whole vector, so the order is transitive. Without mbarriers every entry
// stays 0 and the epochs alone order accesses.
inline uint32_t cur_clock = 0;
inline std::vector<uint32_t> cur_vc;
// The wgmma calls this thread made in its block (the warpgroup prelude
// compares each with the same call of the group's other warps).
inline long long cur_wgmma_calls = 0;
inline std::atomic<bool> g_mbarriers{false};  // the launch in progress has initialized an mbarrier
inline bool acquired(int o, uint32_t clock) {
  return o >= 0 && static_cast<size_t>(o) < cur_vc.size() && cur_vc[static_cast<size_t>(o)] > clock;
}

// Block b of the grid, x fastest (blocks run in this order).
dim3 block_index(long long b);
std::string dim_str(dim3 d);
std::string thread_str(int tid);
std::string where();  // "in block (x,y,z) of kernel NAME"
Team& team();         // the running thread's launch
unsigned lanes_of(const Team& t, int warp);
// Records the first failure and wakes every waiting thread (mu held).
void fail(Team& t, const std::string& msg);
// Where the block's threads are, for a divergence report (mu held).
std::string describe(const Team& t);
[[noreturn]] void collective_diverged(Team& t, int warp, const char* op);
[[noreturn]] void diverged(Team& t);
void wait_at_gate(Team& t, std::unique_lock<std::mutex>& lk);
void syncthreads(int line);
unsigned warp_collect(unsigned mask, uint64_t mine, uint64_t* all, const char* op = nullptr);
void warp_exchange(const char* op, const void* mine, size_t bytes, void* all);
void mbarriers_wake();  // the mbarrier part
// The launcher's: thread tid's clocks, in the globals while it runs, else
// where its fiber keeps them while it waits.
std::vector<uint32_t>& vc_of(int tid);
uint32_t& clock_of(int tid);

#if KILN_EMU_DEFINE_RUNTIME
dim3 block_index(long long b) {
  return dim3(static_cast<unsigned>(b % gridDim.x), static_cast<unsigned>(b / gridDim.x % gridDim.y),
              static_cast<unsigned>(b / (1ll * gridDim.x * gridDim.y)));
}
std::string dim_str(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}
std::string thread_str(int tid) {
  const unsigned bx = blockDim.x, by = blockDim.y;
  return "thread " + dim_str(dim3(tid % bx, tid / bx % by, tid / (bx * by)));
}
std::string where() { return "in block " + dim_str(blockIdx) + " of kernel " + (cur_team ? cur_team->kernel : "?"); }
Team& team() {
  if (!cur_team) throw std::runtime_error("a CUDA thread function was called outside a kernel launch");
  return *cur_team;
}
unsigned lanes_of(const Team& t, int warp) {
  const int n = t.n - warp * 32;
  return n >= 32 ? 0xffffffffu : (1u << n) - 1;
}

void fail(Team& t, const std::string& msg) {
  if (!t.failed) t.error = msg;
  t.failed = true;
  g_failed = true;
  t.gate.open();
  for (WarpState& w : t.warps) w.gate.open();
  mbarriers_wake();
}

std::string describe(const Team& t) {
  std::vector<int> lines, counts, first;
  std::vector<std::string> bars;
  std::vector<int> bar_counts, bar_first;
  int warp = 0, fin = 0, run = 0, warp_first = -1, fin_first = -1, run_first = -1;
  for (int i = 0; i < t.n; ++i) {
    switch (t.ts[i].at) {
      case At::kMbarrier: {
        const std::string b = std::string(t.ts[i].mbarrier) + "[" + std::to_string(t.ts[i].mbarrier_index) + "]";
        size_t k = 0;
        while (k < bars.size() && bars[k] != b) ++k;
        if (k == bars.size()) bars.push_back(b), bar_counts.push_back(0), bar_first.push_back(i);
        ++bar_counts[k];
        break;
      }
      case At::kBarrier: {
        size_t k = 0;
        while (k < lines.size() && lines[k] != t.ts[i].line) ++k;
        if (k == lines.size()) lines.push_back(t.ts[i].line), counts.push_back(0), first.push_back(i);
        ++counts[k];
        break;
      }
      case At::kWarp: warp_first = warp++ ? warp_first : i; break;
      case At::kFinished: fin_first = fin++ ? fin_first : i; break;
      case At::kRunning: run_first = run++ ? run_first : i; break;
    }
  }
  std::string s;
  auto part = [&](int count, const std::string& what, int tid) {
    if (!count) return;
    const bool waits = count == 1 && what.compare(0, 5, "wait ") == 0;  // one thread waits, several wait
    s += (s.empty() ? "" : "; ") + std::to_string(count) + (count == 1 ? " thread " : " threads ") +
         (waits ? "waits " + what.substr(5) : what) + " (first: " + thread_str(tid) + ")";
  };
  for (size_t k = 0; k < lines.size(); ++k)
    part(counts[k], "wait at the __syncthreads() on line " + std::to_string(lines[k]), first[k]);
  for (size_t k = 0; k < bars.size(); ++k) part(bar_counts[k], "wait on mbarrier " + bars[k], bar_first[k]);
  part(warp, "wait in a warp-level operation", warp_first);
  part(fin, "finished the kernel", fin_first);
  part(run, "still running", run_first);
  return s;
}
// A warp-collective operation (ldmatrix, mma) that not every lane of the
// warp reached together: on the GPU undefined, here a clear failure.
[[noreturn]] void collective_diverged(Team& t, int warp, const char* op) {
  fail(t, std::string(op) + " is warp-collective: all 32 lanes of warp " + std::to_string(warp) +
              " must call it together, but they did not " + where() + " (" + describe(t) + ")");
  throw Abort{};
}
[[noreturn]] void diverged(Team& t) {
  // Blame a warp-collective operation only if a lane it waits for is at a
  // barrier or finished: it can never complete.
  for (size_t i = 0; i < t.warps.size(); ++i) {
    const WarpState& w = t.warps[i];
    if (w.arrived == 0 || !w.op) continue;
    for (int l = 0; l < 32; ++l) {
      const At at = t.ts[i * 32 + l].at;
      if ((w.mask >> l & 1u) && (at == At::kBarrier || at == At::kFinished))
        collective_diverged(t, static_cast<int>(i), w.op);
    }
  }
  for (const ThreadState& s : t.ts) {
    if (s.at != At::kMbarrier) continue;
    fail(t, "deadlock " + where() + ": " + describe(t) +
                ". No thread is left to complete the mbarrier phases that threads wait for: each phase needs its "
                "whole arrival count (mbarrier.init), and a wait's parity must name the phase in progress or the "
                "one just completed.");
    throw Abort{};
  }
  fail(t, "barrier divergence " + where() + ": " + describe(t) +
              ". Every thread of a block must reach the same __syncthreads() calls.");
  throw Abort{};
}

// Waits until the last thread to arrive opens the team's gate; with no
// thread left running, none ever will: a divergence. Returns unlocked.
void wait_at_gate(Team& t, std::unique_lock<std::mutex>& lk) {
  if (t.running == 0) diverged(t);
  const uint32_t ticket = t.gate.ticket();
  lk.unlock();
  t.gate.wait(ticket);
}

void syncthreads(int line) {
  Team& t = team();
  std::unique_lock<std::mutex> lk(t.mu);
  if (t.failed) throw Abort{};
  t.ts[cur_tid] = {At::kBarrier, line};
  --t.running;
  ++t.at_barrier;
  if (t.finished > 0) diverged(t);
  if (t.at_barrier == t.n) {
    for (int i = 0; i < t.n; ++i) {
      if (t.ts[i].line != line) diverged(t);
    }
    for (ThreadState& s : t.ts) s.at = At::kRunning;
    t.at_barrier = 0;
    t.running = t.n;
    t.epoch = ++g_epoch;
    cur_epoch = t.epoch;
    t.gate.open();
    return;
  }
  wait_at_gate(t, lk);
  if (t.failed) throw Abort{};
  cur_epoch = t.epoch;  // written before the gate opened, stable until this thread arrives again
}

// The warp-level rendezvous behind __syncwarp and the shuffles: every lane
// of mask (within the warp's existing lanes) deposits `mine`; returns the
// participating lanes and copies all deposits to `all`. `op` names a
// warp-collective operation (see warp_exchange), null for the others.
unsigned warp_collect(unsigned mask, uint64_t mine, uint64_t* all, const char* op) {
  Team& t = team();
  std::unique_lock<std::mutex> lk(t.mu);
  if (t.failed) throw Abort{};
  WarpState& w = t.warps[cur_warp];
  const unsigned m = mask & lanes_of(t, cur_warp);
  char hex[16];
  snprintf(hex, sizeof(hex), "0x%08x", mask);
  if (!(m >> cur_lane & 1u)) {
    fail(t, thread_str(cur_tid) + " " + where() + " calls a warp-level function with mask " + hex +
                ", which leaves out its own lane " + std::to_string(cur_lane));
    throw Abort{};
  }
  if (w.arrived == 0) {
    w.mask = m;
    w.op = op;
  } else if ((w.op == nullptr) != (op == nullptr) || (op && strcmp(w.op, op) != 0)) {
    const char* other = "a shuffle, ballot or __syncwarp";
    fail(t, "lanes of warp " + std::to_string(cur_warp) + " " + where() + " meet in different warp-level operations: " +
                thread_str(cur_tid) + " calls " + (op ? op : other) + " while others wait in " + (w.op ? w.op : other));
    throw Abort{};
  } else if (w.mask != m) {
    fail(t, "lanes of warp " + std::to_string(cur_warp) + " " + where() +
                " meet in a warp-level operation with different masks (" + thread_str(cur_tid) + " passes " + hex + ")");
    throw Abort{};
  }
  for (int l = 0; l < 32; ++l) {
    if ((m >> l & 1u) && t.ts[cur_warp * 32 + l].at == At::kFinished) {
      if (op) collective_diverged(t, cur_warp, op);
      diverged(t);
    }
  }
  const int row = static_cast<int>(w.gen & 1);
  w.slots[row][cur_lane] = mine;
  t.ts[cur_tid].at = At::kWarp;
  --t.running;
  if (++w.arrived == __builtin_popcount(m)) {
    // The lanes wait (or this one is the last): what each did and acquired
    // before the operation is ordered before what all do after it.
    if (g_mbarriers) {
      std::vector<uint32_t>& j = w.joined[row];
      j.assign(cur_vc.size(), 0);
      for (int l = 0; l < 32; ++l) {
        if (!(m >> l & 1u)) continue;
        const int lane_tid = cur_warp * 32 + l;
        const std::vector<uint32_t>& v = vc_of(lane_tid);
        for (size_t k = 0; k < j.size() && k < v.size(); ++k) j[k] = std::max(j[k], v[k]);
        const size_t tid = static_cast<size_t>(lane_tid);
        if (tid < j.size()) j[tid] = std::max(j[tid], ++clock_of(lane_tid));
      }
    }
    for (int l = 0; l < 32; ++l) {
      if (m >> l & 1u) t.ts[cur_warp * 32 + l].at = At::kRunning;
    }
    t.running += w.arrived;
    w.arrived = 0;
    ++w.gen;
    ++w.epoch;
    w.gate.open();
  } else {
    if (t.running == 0) diverged(t);
    const uint32_t ticket = w.gate.ticket();
    lk.unlock();
    w.gate.wait(ticket);
    if (t.failed) throw Abort{};
  }
  // The next operation writes the other row, and the one after needs this lane.
  cur_warp_epoch = w.epoch;
  if (g_mbarriers) {
    const std::vector<uint32_t>& j = w.joined[row];
    for (size_t k = 0; k < j.size() && k < cur_vc.size(); ++k) cur_vc[k] = std::max(cur_vc[k], j[k]);
  }
  memcpy(all, w.slots[row], sizeof(w.slots[row]));
  return m;
}

// A warp-collective exchange (the tensor-core prelude's ldmatrix and mma):
// all 32 lanes of a full warp call it together, each with `bytes` at
// `mine`, and each gets every lane's bytes in `all` (32 * bytes, by lane).
// Lanes deposit the address of their bytes and copy the others' directly;
// a second rendezvous keeps every lane's bytes alive until all have copied.
void warp_exchange(const char* op, const void* mine, size_t bytes, void* all) {
  Team& t = team();
  const unsigned lanes = lanes_of(t, cur_warp);
  if (lanes != 0xffffffffu) {
    std::lock_guard<std::mutex> g(t.mu);
    fail(t, std::string(op) + " is warp-collective and needs all 32 lanes of a warp, but warp " +
                std::to_string(cur_warp) + " " + where() + " has only " + std::to_string(__builtin_popcount(lanes)) +
                " (block " + dim_str(blockDim) + ")");
    throw Abort{};
  }
  uint64_t addr[32];
  warp_collect(0xffffffffu, reinterpret_cast<uintptr_t>(mine), addr, op);
  for (int l = 0; l < 32; ++l)
    memcpy(static_cast<char*>(all) + l * bytes, reinterpret_cast<const void*>(addr[l]), bytes);
  warp_collect(0xffffffffu, 0, addr, op);
}
#endif  // KILN_EMU_DEFINE_RUNTIME

enum class Shfl { kIdx, kUp, kDown, kXor };
template <typename T>
T shfl(unsigned mask, T var, long long b, int width, Shfl mode) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffles move values of up to 8 bytes");
  if (width < 1 || width > 32 || (width & (width - 1)))
    throw std::runtime_error("shuffle width " + std::to_string(width) + " " + where() +
                             " is not a power of 2 up to 32");
  uint64_t mine = 0, all[32];
  memcpy(&mine, &var, sizeof(T));
  const unsigned m = warp_collect(mask, mine, all);
  // PTX shfl.sync: a lane reads within its segment of `width` lanes (xor may
  // also read earlier segments); out of range, it keeps its own value.
  const long long lane = cur_lane, lo = lane & ~(width - 1), hi = lo + width - 1;
  long long j = lane;
  switch (mode) {
    case Shfl::kIdx: j = lo | (b & (width - 1)); break;
    case Shfl::kUp: j = lane - b >= lo ? lane - b : lane; break;
    case Shfl::kDown: j = lane + b <= hi ? lane + b : lane; break;
    case Shfl::kXor: j = (lane ^ (b & 31)) <= hi ? lane ^ (b & 31) : lane; break;
  }
  if (!(m >> j & 1u)) j = lane;  // a lane outside the mask: undefined in CUDA, own value here
  T r;
  memcpy(&r, &all[j], sizeof(T));
  return r;
}

}  // namespace kiln_emu

template <typename T> inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
  return kiln_emu::shfl(mask, var, src, width, kiln_emu::Shfl::kIdx);
}
template <typename T> inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return kiln_emu::shfl(mask, var, delta, width, kiln_emu::Shfl::kUp);
}
template <typename T> inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return kiln_emu::shfl(mask, var, delta, width, kiln_emu::Shfl::kDown);
}
template <typename T> inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return kiln_emu::shfl(mask, var, lane_mask, width, kiln_emu::Shfl::kXor);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  uint64_t all[32];
  kiln_emu::warp_collect(mask, 0, all);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  uint64_t all[32];
  const unsigned m = kiln_emu::warp_collect(mask, pred != 0, all);
  unsigned r = 0;
  for (int l = 0; l < 32; ++l) r |= (m >> l & 1u) && all[l] ? 1u << l : 0u;
  return r;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  const unsigned m = mask & kiln_emu::lanes_of(kiln_emu::team(), kiln_emu::cur_warp);
  return __ballot_sync(mask, pred) == m;
}
inline unsigned __activemask() { return kiln_emu::lanes_of(kiln_emu::team(), kiln_emu::cur_warp); }
)KILN";

const char* const kLaunch =
    R"KILN(std::string check_config(dim3 grid, dim3 block, long long static_bytes, long long dynamic_bytes = 0,
                         long long max_dynamic = 0);
int set_error(const std::string& msg);
int launch(dim3 grid, dim3 block, const char* kernel, std::function<void()> body, long long static_bytes = 0,
           long long dynamic_bytes = 0, long long max_dynamic = 0);
void finish_block(Team& t, std::unique_lock<std::mutex>& lk);
void run_thread(Team& t, int tid);
const char* last_error();

#if KILN_EMU_DEFINE_RUNTIME
// CUDA's limits on a launch. A kernel may declare 48 KiB of shared memory
// statically; with dynamic shared memory a block may have up to 48 KiB in
// all, or up to the opt-in limit (227 KiB on sm_90) once the kernel is opted
// in to its dynamic bytes (cuFuncSetAttribute: max_dynamic).
std::string check_config(dim3 grid, dim3 block, long long static_bytes, long long dynamic_bytes,
                         long long max_dynamic) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
    return "a launch dimension is 0 (grid " + dim_str(grid) + ", block " + dim_str(block) + ")";
  if (threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64)
    return "block " + dim_str(block) + " has " + std::to_string(threads) +
           " threads; CUDA allows at most 1024 (x, y <= 1024, z <= 64)";
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    return "grid " + dim_str(grid) + " exceeds CUDA's limits (x < 2^31, y and z <= 65535)";
  const long long shared_bytes = static_bytes + dynamic_bytes;
  if (static_bytes > 48 * 1024)
    return std::to_string(static_bytes) + " bytes of static shared memory exceed the 48 KiB CUDA allows";
  if (shared_bytes > 48 * 1024 && dynamic_bytes > max_dynamic)
    return std::to_string(shared_bytes) + " bytes of shared memory exceed the 48 KiB CUDA allows without an opt-in" +
           (max_dynamic > 0 ? " (the kernel is opted in to " + std::to_string(max_dynamic) + " dynamic bytes)" : "");
  if (shared_bytes > 227 * 1024)
    return std::to_string(shared_bytes) + " bytes of shared memory exceed the 227 KiB a block may have";
  return "";
}

int set_error(const std::string& msg) {
  snprintf(tl_error, sizeof(tl_error), "%s", msg.c_str());
  return 1;
}

// Runs body once per thread of every block; 0 on success, else 1 with
// last_error() set. Blocks run in order, x fastest, on one team of threads.
int launch(dim3 grid, dim3 block, const char* kernel, std::function<void()> body, long long static_bytes,
           long long dynamic_bytes, long long max_dynamic) {
  std::lock_guard<std::mutex> launch_lock(g_launch_mu);
  tl_error[0] = 0;
  const std::string bad = check_config(grid, block, static_bytes, dynamic_bytes, max_dynamic);
  g_dynamic_shared = dynamic_bytes;
  if (!bad.empty()) return set_error("cannot launch kernel " + std::string(kernel) + ": " + bad);
  Team t(static_cast<int>(block.x * block.y * block.z));
  t.kernel = kernel;
  t.body = &body;
  t.nblocks = 1ll * grid.x * grid.y * grid.z;
  t.epoch = ++g_epoch;
  g_mbarriers = false;
  mbarriers_reset();
  gridDim = grid;
  blockDim = block;
  g_failed = false;
  Scheduler s;
  s.team = &t;
  s.fibers = std::vector<Fiber>(static_cast<size_t>(t.n));
  Scheduling scheduling(s);
  for (size_t i = 0; i < s.fibers.size(); ++i) {
    Fiber& f = s.fibers[i];
    char* stack = g_stacks.get(i);
    if (!stack || !context_start(f.context, stack + kGuardBytes, kFiberStackBytes - kGuardBytes, fiber_main)) {
      std::lock_guard<std::mutex> g(t.mu);
      fail(t, "cannot start thread " + std::to_string(i) + " of the emulated block of kernel " + kernel +
                  " (no memory for its stack)");
      for (size_t j = i; j < s.fibers.size(); ++j) s.fibers[j].done = true;
      break;
    }
  }
  run_fibers(s);
  async_drop_unlanded();
  g_failed = false;
  return t.failed ? set_error(t.error) : 0;
}

// A thread has run the block's body: the last one starts the next block.
// Called with the mutex held; returns with it released.
void finish_block(Team& t, std::unique_lock<std::mutex>& lk) {
  t.ts[cur_tid].at = At::kFinished;
  --t.running;
  ++t.finished;
  const WarpState& w = t.warps[cur_warp];
  if (t.at_barrier > 0 || (w.arrived > 0 && (w.mask >> cur_lane & 1u))) diverged(t);
  if (t.finished == t.n) {
    async_drop_unlanded();
    mbarriers_reset();  // the next block's shared memory holds no barrier
    for (ThreadState& s : t.ts) s.at = At::kRunning;
    t.running = t.n;
    t.finished = 0;
    ++t.block;
    t.epoch = ++g_epoch;
    lk.unlock();
    t.gate.open();
    return;
  }
  wait_at_gate(t, lk);
}

void run_thread(Team& t, int tid) {
  cur_team = &t;
  cur_tid = tid;
  cur_warp = tid / 32;
  cur_lane = tid % 32;
  threadIdx = dim3(tid % blockDim.x, tid / blockDim.x % blockDim.y, tid / (blockDim.x * blockDim.y));
  std::unique_lock<std::mutex> lk(t.mu, std::defer_lock);
  // t.block and t.epoch change only when every thread has finished the block.
  while (!t.failed && t.block < t.nblocks) {
    const long long b = t.block;
    blockIdx = block_index(b);
    cur_epoch = t.epoch;
    cur_warp_epoch = t.warps[cur_warp].epoch;
    cur_vc.assign(static_cast<size_t>(t.n), 0);  // clocks only grow: see cur_clock
    cur_wgmma_calls = 0;
    std::string error;
    try {
      (*t.body)();
      wgmma_finish();
    } catch (const Abort&) {
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "an exception of unknown type " + where();
    }
    wgmma_drop();  // after a failure: products whose accumulators are gone
    async_retire();
    lk.lock();
    if (!error.empty()) fail(t, error);
    if (t.failed) break;
    try {
      finish_block(t, lk);
    } catch (const Abort&) {
      break;
    }
  }
  cur_team = nullptr;
}

const char* last_error() { return tl_error; }
#endif  // KILN_EMU_DEFINE_RUNTIME

}  // namespace kiln_emu

// Vector accesses (the prelude's kiln_ld/kiln_st): global or local memory
// with an alignment check, shared arrays with bounds and race checks.
template <typename V, typename T> inline V kiln_ld(const T* p, long long i) {
  kiln_emu::check_aligned(p + i, alignof(V), sizeof(V), "vector load");
  V v;
  memcpy(&v, p + i, sizeof(V));
  return v;
}
template <typename V, typename T> inline void kiln_st(T* p, long long i, V v) {
  kiln_emu::check_aligned(p + i, alignof(V), sizeof(V), "vector store");
  memcpy(p + i, &v, sizeof(V));
}
template <typename V, typename T> inline V kiln_ld(kiln_emu::SharedBuffer<T>& a, long long i) {
  return a.template load<V>(i);
}
template <typename V, typename T> inline V kiln_ld(const kiln_emu::SharedPtr<T>& p, long long i) {
  return p.buf->template load<V>(p.off + i);
}
template <typename V, typename T> inline void kiln_st(kiln_emu::SharedBuffer<T>& a, long long i, V v) {
  a.store(i, v);
}
template <typename V, typename T> inline void kiln_st(const kiln_emu::SharedPtr<T>& p, long long i, V v) {
  p.buf->store(p.off + i, v);
}
// ---- end of kiln CUDA emulation header ----
)KILN";

}  // namespace

const std::string& cuda_emulation_header() {
  static const std::string text = std::string(kBuiltins) + cuda_emulation_shared_text() +
                                  cuda_emulation_mbarrier_text() + cuda_emulation_fibers_text() + kLaunch;
  return text;
}

}  // namespace kiln
