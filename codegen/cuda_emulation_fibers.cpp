// The fibers part of the CUDA emulation header's text (see
// cuda_emulation_fibers.h).
#include "codegen/cuda_emulation_fibers.h"

namespace kiln {

const char* cuda_emulation_fibers_text() {
  return R"KILN(#if KILN_EMU_DEFINE_RUNTIME  // all of it is the runtime's (see the header's top)
// Each CUDA thread of a block runs on a fiber of the launching thread: a
// stack of its own that the launcher switches to and from. A thread runs
// until it waits (a barrier, a warp operation, an mbarrier phase); the
// launcher then resumes the next thread that can go on. One OS thread per CUDA thread made every wait a trip through the
// kernel's scheduler: hundreds of threads yielding or sleeping on futexes
// took most of an emulated launch's time on a machine of few cores.
// While a fiber runs, its CUDA thread's state (threadIdx, blockIdx, the
// cur_ variables) sits in the globals the emulation reads; while it waits,
// in its Fiber.
struct FiberLocals {
  dim3 thread_idx, block_idx;
  Team* team = nullptr;
  int tid = -1, warp = 0, lane = 0;
  uint64_t epoch = 0, warp_epoch = 0;
  uint32_t clock = 0;
  std::vector<uint32_t> vc;
  AsyncQueue async;
  WgmmaQueue wgmma;
  long long wgmma_calls = 0;
};
// Exchanges `l` with the globals: in before a fiber runs, out after.
void swap_locals(FiberLocals& l) {
  std::swap(threadIdx, l.thread_idx);
  std::swap(blockIdx, l.block_idx);
  std::swap(cur_team, l.team);
  std::swap(cur_tid, l.tid);
  std::swap(cur_warp, l.warp);
  std::swap(cur_lane, l.lane);
  std::swap(cur_epoch, l.epoch);
  std::swap(cur_warp_epoch, l.warp_epoch);
  std::swap(cur_clock, l.clock);
  cur_vc.swap(l.vc);
  std::swap(cur_async, l.async);
  std::swap(cur_wgmma, l.wgmma);
  std::swap(cur_wgmma_calls, l.wgmma_calls);
}

// Switching between fibers. On x86-64 a few instructions save the
// callee-saved registers on the stack being left and restore them from the
// one entered; swapcontext also saves the signal mask (a system call) and
// the floating-point environment, which fibers of one launch share, and
// switching with it took a third of a barrier-heavy launch. Elsewhere:
// ucontext.
#if defined(__x86_64__)
struct Context {
  void* sp = nullptr;
};
extern "C" void kiln_emu_switch(void** save_sp, void* sp);
asm(R"ASM(
  .text
  .p2align 4
  .hidden kiln_emu_switch
  .type kiln_emu_switch, @function
kiln_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kiln_emu_switch, .-kiln_emu_switch
)ASM");
inline void context_switch(Context& from, Context& to) { kiln_emu_switch(&from.sp, to.sp); }
// The first switch to `c` pops six zeroed registers and returns into entry,
// with the stack aligned as at a call (entry must never return).
inline bool context_start(Context& c, char* stack, size_t bytes, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;  // entry's return address: none
  *--sp = reinterpret_cast<void*>(entry);
  for (int r = 0; r < 6; ++r) *--sp = nullptr;
  c.sp = sp;
  return true;
}
#else
struct Context {
  ucontext_t uc;
};
inline void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
inline bool context_start(Context& c, char* stack, size_t bytes, void (*entry)()) {
  if (getcontext(&c.uc) != 0) return false;
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;  // entry never returns
  makecontext(&c.uc, entry, 0);
  return true;
}
#endif

constexpr size_t kFiberStackBytes = 512 * 1024, kGuardBytes = 4096;
struct Fiber {
  Context context;
  bool done = false;
  const std::atomic<uint32_t>* word = nullptr;  // it waits while *word == ticket
  uint32_t ticket = 0;
  FiberLocals locals;
};
struct Scheduler {
  Context launcher;
  pthread_t launching_thread = pthread_self();
  std::vector<Fiber> fibers;
  size_t current = 0;
  Team* team = nullptr;
};
Scheduler* g_scheduler = nullptr;  // the launch in progress (one at a time: g_launch_mu)
// Sets g_scheduler for a launch, and clears it however the launch ends.
struct Scheduling {
  explicit Scheduling(Scheduler& s) { g_scheduler = &s; }
  ~Scheduling() { g_scheduler = nullptr; }
  Scheduling(const Scheduling&) = delete;
  Scheduling& operator=(const Scheduling&) = delete;
};

// The fibers' stacks, kept for the module's later launches. Each one's
// lowest page is a guard: an overflow faults rather than overwriting the
// next stack.
struct StackPool {
  std::vector<char*> stacks;
  ~StackPool() {
    for (char* p : stacks) munmap(p, kFiberStackBytes);
  }
  char* get(size_t i) {
    while (stacks.size() <= i) {
      void* p = mmap(nullptr, kFiberStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
      if (p == MAP_FAILED) return nullptr;
      mprotect(p, kGuardBytes, PROT_NONE);
      stacks.push_back(static_cast<char*>(p));
    }
    return stacks[i];
  }
} g_stacks;

void fiber_suspend(const std::atomic<uint32_t>* word, uint32_t ticket) {
  Scheduler& s = *g_scheduler;
  Fiber& f = s.fibers[s.current];
  f.word = word;
  f.ticket = ticket;
  context_switch(f.context, s.launcher);
}

// A waiting word of null: the fiber may run again at the launcher's next pass.
void fiber_yield() {
  if (g_scheduler && pthread_equal(pthread_self(), g_scheduler->launching_thread)) fiber_suspend(nullptr, 0);
}

std::vector<uint32_t>& vc_of(int tid) {
  return tid == cur_tid ? cur_vc : g_scheduler->fibers[static_cast<size_t>(tid)].locals.vc;
}
uint32_t& clock_of(int tid) {
  return tid == cur_tid ? cur_clock : g_scheduler->fibers[static_cast<size_t>(tid)].locals.clock;
}

void run_thread(Team& t, int tid);
[[noreturn]] void fiber_main() {
  Scheduler& s = *g_scheduler;
  const size_t i = s.current;
  run_thread(*s.team, static_cast<int>(i));
  s.fibers[i].done = true;
  context_switch(s.fibers[i].context, s.launcher);  // never resumed
  __builtin_unreachable();
}

// Resumes every fiber that can go on, in thread order, until all have
// finished. With every unfinished fiber waiting, no thread is left to wake
// them: the launch fails as deadlocked, which opens every gate.
void run_fibers(Scheduler& s) {
  Team& t = *s.team;
  for (;;) {
    size_t live = 0, resumed = 0;
    for (size_t i = 0; i < s.fibers.size(); ++i) {
      Fiber& f = s.fibers[i];
      if (f.done) continue;
      ++live;
      if (f.word && f.word->load(std::memory_order_acquire) == f.ticket) continue;
      f.word = nullptr;
      s.current = i;
      swap_locals(f.locals);
      context_switch(s.launcher, f.context);
      swap_locals(f.locals);
      ++resumed;
    }
    if (live == 0) return;
    if (resumed > 0) continue;
    std::lock_guard<std::mutex> g(t.mu);
    if (t.failed) {  // a wait that failing did not open: its fibers are left where they wait
      for (Fiber& f : s.fibers) f.done = true;
      return;
    }
    fail(t, "deadlock in block " + dim_str(block_index(t.block)) + " of kernel " + t.kernel + ": " + describe(t) +
                ". Every thread waits and none is left to wake the others.");
  }
}
#endif  // KILN_EMU_DEFINE_RUNTIME

)KILN";
}

}  // namespace kiln
