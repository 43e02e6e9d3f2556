// The shared arrays and cp.async part of the CUDA emulation header's text
// (see cuda_emulation_shared.h).
#include "codegen/cuda_emulation_shared.h"

namespace kiln {

const char* cuda_emulation_shared_text() {
  return R"KILN(namespace kiln_emu {

// A read of an element by thread `tid` at its clock and warp epoch.
struct ReadStamp {
  int16_t tid;
  uint32_t clock;
  uint64_t warp_epoch;
};
// Who last wrote and who read an element since, with the epochs that order
// them: the block epoch changes at every __syncthreads() and block start, a
// warp's epoch at every warp operation of that warp; and the threads'
// clocks, which order accesses through mbarriers (cur_clock).
struct Shadow {
  uint64_t w_epoch = 0, w_warp_epoch = 0, r_epoch = 0, r_warp_epoch = 0;
  uint32_t w_clock = 0, r_clock = 0;
  int16_t writer = -1, reader = -1, reader2 = -1;
  int8_t reader_warp = -1;   // the readers' warp, -2 when they are in several
  bool multi = false;        // several readers, none ordered after the others
  int16_t pending = -1;      // the thread whose cp.async into it has not landed yet
  bool async_write = false;  // the last write was a cp.async copy
  bool bulk = false;         // the copy in flight (pending) is a bulk copy
  uint16_t held = 0;         // wgmma products in flight that read it
  int16_t holder = -1;       // the thread that issued the latest of them
  // With mbarriers in the launch, every reader of a multi read, each with
  // its latest read: a producer may refill an element only once it has
  // acquired the reads of all the consumers (their arrivals on a barrier).
  std::unique_ptr<std::vector<ReadStamp>> readers;
};

// Fails the running thread's launch with `msg` (unwinds it quietly when
// another thread has already failed it).
[[noreturn]] void check_error(const std::string& msg);
// The dynamic shared memory of the launch in progress, in bytes.
inline long long g_dynamic_shared = 0;
// A shared array ends at byte `end` of the dynamic shared memory.
void check_dynamic_shared(const char* name, long long end);

#if KILN_EMU_DEFINE_RUNTIME
[[noreturn]] void check_error(const std::string& msg) {
  if (g_failed.load(std::memory_order_relaxed)) throw Abort{};
  throw std::runtime_error(msg);
}

void check_dynamic_shared(const char* name, long long end) {
  if (end > g_dynamic_shared)
    check_error(std::string("shared array ") + name + " ends at byte " + std::to_string(end) +
                " of the dynamic shared memory, but the launch asked for " + std::to_string(g_dynamic_shared));
}
#endif  // KILN_EMU_DEFINE_RUNTIME

// Arrays at a byte offset of the block's shared memory (KILN_SHARED_AT,
// KILN_DYNAMIC_SHARED) may share bytes with arrays that are never live at the
// same time (schedule/shared_memory_plan.h); here each is still an array of
// its own, so per 16 bytes of that memory the array that last touched them,
// in which block epoch, and by which threads at which clocks. Another array
// touching them in the same epoch is a race unless every other thread's
// touch is ordered before it through mbarriers (the touching thread
// acquired a later clock of that thread): on the GPU the bytes change hands
// with nothing in between.
struct PoolGranule {
  const void* owner = nullptr;
  const char* owner_name = nullptr;
  uint64_t epoch = 0;
  std::vector<ReadStamp> touches;  // per thread, its latest touch in that epoch
  // The array that had the bytes before, in the same epoch, and its
  // touches: every later toucher must be ordered after them, not only the
  // first (with mbarriers, one warp may be and another not).
  const char* prev_name = nullptr;
  std::vector<ReadStamp> prev;
};
constexpr long long kPoolGranules = 16384;  // 256 KiB: more than any block's shared memory
inline PoolGranule g_pool[kPoolGranules];
inline std::mutex g_pool_mu[16];

// Another array touched the bytes of granule `byte` / 16 in this epoch.
void pool_unordered(const std::vector<ReadStamp>& touches, const char* before, const char* name, long long byte);
// The running thread touches byte `byte` of the block's shared memory through array `owner`.
void pool_touch(const void* owner, const char* name, long long byte);

#if KILN_EMU_DEFINE_RUNTIME
void pool_unordered(const std::vector<ReadStamp>& touches, const char* before, const char* name, long long byte) {
  int16_t other = -1;
  int unordered = 0;
  for (const ReadStamp& t : touches)
    if (t.tid != cur_tid && !acquired(t.tid, t.clock)) {
      other = t.tid;
      ++unordered;
    }
  if (unordered)
    check_error("shared arrays " + std::string(before) + " and " + name + " share byte " + std::to_string(byte) +
                " of the block's shared memory, " + where() + ": " + thread_str(cur_tid) + " touches " + name +
                " while " + (unordered > 1 ? std::string("other threads") : thread_str(other)) + " touched " + before +
                " with no __syncthreads() in between (nor an mbarrier phase that orders them)");
}

void pool_touch(const void* owner, const char* name, long long byte) {
  const long long g = byte / 16;
  if (g < 0 || g >= kPoolGranules) return;
  std::lock_guard<std::mutex> lock(g_pool_mu[g & 15]);
  PoolGranule& p = g_pool[g];
  const ReadStamp now{static_cast<int16_t>(cur_tid), cur_clock, 0};
  if (p.owner == owner && p.epoch == cur_epoch) {
    if (!p.prev.empty()) pool_unordered(p.prev, p.prev_name, name, byte);
    for (ReadStamp& t : p.touches)
      if (t.tid == now.tid) {
        t.clock = now.clock;
        return;
      }
    p.touches.push_back(now);
    return;
  }
  const bool same_epoch = p.owner && p.owner != owner && p.epoch == cur_epoch;
  if (same_epoch) pool_unordered(p.touches, p.owner_name, name, byte);
  p.prev_name = same_epoch ? p.owner_name : nullptr;
  if (same_epoch)
    p.prev.swap(p.touches);
  else
    p.prev.clear();
  p.owner = owner;
  p.owner_name = name;
  p.epoch = cur_epoch;
  p.touches.assign(1, now);
}
#endif  // KILN_EMU_DEFINE_RUNTIME

template <typename T> class Ref;
template <typename T> struct SharedPtr;

// Hopper's 128-byte swizzle of a byte of shared memory (its address, or
// its offset from a 1024-byte boundary): the 16-byte chunk, bits 4-6, XOR
// the 128-byte row within each 8, bits 7-9. Its own inverse; wgmma reads
// swizzled operands and tensor copies land swizzled boxes so.
inline long long swizzle_128b(long long byte) { return byte ^ (((byte >> 7) & 7) << 4); }

// A block-shared array of T: every access is bounds- and race-checked.
template <typename T>
class SharedBuffer {
 public:
  // `pool_offset`: the array's byte offset in the block's shared memory, or
  // -1 for an array of its own (KILN_SHARED).
  SharedBuffer(const char* name, long long n, long long pool_offset = -1)
      : name_(name), n_(n), pool_offset_(pool_offset), data_(new T[n]()), shadow_(new Shadow[n]) {}
  ~SharedBuffer() {
    delete[] data_;
    delete[] shadow_;
  }
  long long pool_offset() const { return pool_offset_; }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  Ref<T> operator[](long long i) { return Ref<T>(this, i); }
  SharedPtr<T> operator+(long long i) { return SharedPtr<T>{this, i}; }
  const char* name() const { return name_; }  // for messages

  T read(long long i) {
    check(i, 1);
    std::lock_guard<std::mutex> g(stripe(i));
    on_read(i);
    return data_[i];
  }
  void write(long long i, const T& v) {
    check(i, 1);
    std::lock_guard<std::mutex> g(stripe(i));
    on_write(i);
    data_[i] = v;
  }
  template <typename F> void update(long long i, F f) {
    check(i, 1);
    std::lock_guard<std::mutex> g(stripe(i));
    on_read(i);
    on_write(i);
    data_[i] = f(data_[i]);
  }
  template <typename V> V load(long long i) {
    V v;
    vector_access<V>(i, [&](long long k, size_t off) {
      on_read(k);
      memcpy(reinterpret_cast<char*>(&v) + off, &data_[k], sizeof(T));
    });
    return v;
  }
  template <typename V> void store(long long i, const V& v) {
    vector_access<V>(i, [&](long long k, size_t off) {
      on_write(k);
      memcpy(&data_[k], reinterpret_cast<const char*>(&v) + off, sizeof(T));
    });
  }

  // A wgmma product in flight (issued by this thread) reads element i until
  // it retires: no write may land there meanwhile.
  void hold(long long i) {
    check(i, 1);
    std::lock_guard<std::mutex> g(stripe(i));
    ++shadow_[i].held;
    shadow_[i].holder = static_cast<int16_t>(cur_tid);
  }
  void unhold(long long i) {
    std::lock_guard<std::mutex> g(stripe(i));
    if (shadow_[i].held > 0) --shadow_[i].held;
  }

  // cp.async (the async-copy prelude) into elements i..i+count-1: checks
  // bounds and alignment; the copy counts as this thread's write now, and the
  // elements stay pending (no access allowed) until it lands.
  void async_check(long long i, long long count) {
    check(i, count);
    const long long bytes = count * static_cast<long long>(sizeof(T));
    if ((i * static_cast<long long>(sizeof(T))) % bytes != 0)
      check_error("misaligned cp.async of " + std::to_string(bytes) + " bytes into " + elem(i) + " (needs " +
                  std::to_string(bytes) + "-byte alignment: an index that is a multiple of " + std::to_string(count) +
                  ") " + where() + ", " + thread_str(cur_tid) + "; the GPU would fault");
  }
  // The copy is issued (a bulk copy with `bulk`): this thread's write now,
  // and the elements pending until it lands.
  void async_issue(long long i, long long count, bool bulk = false) {
    for (long long k = i; k < i + count; ++k) {
      std::lock_guard<std::mutex> g(stripe(k));
      Shadow& s = shadow_[k];
      if (s.pending >= 0)
        check_error(thread_str(cur_tid) + " " + where() +
                    (bulk ? " issues a bulk copy into " + elem(k) + " while an earlier copy into it, issued by " +
                                issuer(s.pending) + ", is in flight; wait for the mbarrier phase it completes first"
                          : " issues a cp.async into " + elem(k) + " while an earlier cp.async into it, issued by " +
                                issuer(s.pending) + ", is in flight; wait for that one (kiln_cp_async_wait) first"));
      on_write(k, true);
      s.pending = static_cast<int16_t>(cur_tid);
      s.bulk = bulk;
    }
  }
  // The copy arrives: a write by the issuing thread (the caller) now, so
  // that other threads still need a __syncthreads() before they read it.
  void async_land(long long i, long long count, const unsigned char* bytes) {
    for (long long k = i; k < i + count; ++k) {
      std::lock_guard<std::mutex> g(stripe(k));
      shadow_[k].pending = -1;
      on_write(k, true);
      memcpy(&data_[k], bytes + (k - i) * sizeof(T), sizeof(T));
    }
  }
  // A bulk copy (cp.async.bulk) into elements i..i+count-1, issued by this
  // thread: its write, and the elements pending until the mbarrier phase
  // it completes is complete.
  void bulk_issue(long long i, long long count) {
    check(i, count);
    async_issue(i, count, true);
  }
  // The phase is complete: the bytes land (as the issuing thread's write,
  // recorded at issue).
  void bulk_land(long long i, long long count, const unsigned char* bytes) {
    for (long long k = i; k < i + count; ++k) {
      std::lock_guard<std::mutex> g(stripe(k));
      shadow_[k].pending = -1;
      shadow_[k].bulk = false;
      memcpy(&data_[k], bytes + (k - i) * sizeof(T), sizeof(T));
    }
  }
  // The copy is dropped (its thread finished the block, or the launch failed).
  void async_drop(long long i, long long count, int tid) {
    for (long long k = i; k < i + count; ++k) {
      std::lock_guard<std::mutex> g(stripe(k));
      if (shadow_[k].pending == tid) shadow_[k].pending = -1, shadow_[k].bulk = false;
    }
  }

 private:
  std::mutex& stripe(long long i) { return stripes_[i & 15]; }
  std::string elem(long long i) const { return std::string(name_) + "[" + std::to_string(i) + "]"; }
  void check(long long i, long long lanes) {
    if (g_failed.load(std::memory_order_relaxed)) throw Abort{};
    if (i < 0 || i + lanes > n_)
      check_error("shared-memory index " + std::to_string(i) +
                  (lanes > 1 ? " (a vector of " + std::to_string(lanes) + ")" : "") + " is out of bounds of " +
                  name_ + "[" + std::to_string(n_) + "] " + where() + ", " + thread_str(cur_tid));
  }
  template <typename V, typename F> void vector_access(long long i, F f) {
    static_assert(sizeof(V) % sizeof(T) == 0, "a vector of whole elements");
    const long long lanes = sizeof(V) / sizeof(T);
    check(i, lanes);
    if ((i * sizeof(T)) % alignof(V) != 0)
      check_error("misaligned vector access to " + elem(i) + " (" + std::to_string(sizeof(V)) + " bytes, needs " +
                  std::to_string(alignof(V)) + "-byte alignment) " + where() + ", " + thread_str(cur_tid));
    for (long long k = 0; k < lanes; ++k) {
      std::lock_guard<std::mutex> g(stripe(i + k));
      f(i + k, static_cast<size_t>(k) * sizeof(T));
    }
  }
  // Accesses to an element whose cp.async (by thread `tid`) is in flight.
  static std::string issuer(int tid) { return tid == cur_tid ? "this thread" : thread_str(tid); }
  [[noreturn]] void pending_read(long long i, int tid) {
    if (shadow_[i].bulk)
      check_error("shared-memory element " + elem(i) + " was read before its bulk copy arrived, " + where() + ": " +
                  thread_str(cur_tid) + " reads it while the bulk copy issued by " + issuer(tid) +
                  " is in flight. Threads must wait for the mbarrier phase the copy completes (kiln_mbarrier_wait) "
                  "before they read it");
    check_error("shared-memory element " + elem(i) + " was read before its cp.async copy arrived, " + where() + ": " +
                thread_str(cur_tid) + " reads it while the cp.async issued by " + issuer(tid) +
                " is in flight. The issuing " + thread_str(tid) +
                " must wait for the copy (kiln_cp_async_wait: cp.async.wait_group), and the block must "
                "__syncthreads(), before any thread reads it");
  }
  [[noreturn]] void pending_write(long long i, int tid) {
    if (shadow_[i].bulk)
      check_error(thread_str(cur_tid) + " writes " + elem(i) + " " + where() + " while the bulk copy issued into it by " +
                  issuer(tid) + " is in flight: the copy would overwrite the value when it arrives. Wait for the "
                  "mbarrier phase the copy completes (kiln_mbarrier_wait) first");
    check_error(thread_str(cur_tid) + " writes " + elem(i) + " " + where() + " while the cp.async issued into it by " +
                issuer(tid) + " is in flight: the copy would overwrite the value when it arrives. The issuing " +
                thread_str(tid) + " must wait for the copy (kiln_cp_async_wait), and the block must __syncthreads(), "
                "before any thread writes it");
  }
  // This thread's access (`verb`: reads, writes, overwrites; by a cp.async
  // copy when `async`) races with thread `other`'s earlier write or read.
  [[noreturn]] void race(long long i, int other, const char* verb, bool async, bool other_wrote) {
    const bool other_copied = other_wrote && shadow_[i].async_write;
    check_error("shared-memory race on " + elem(i) + " " + where() + ": " + thread_str(cur_tid) +
                (async ? "'s cp.async " : " ") + verb + " what " + thread_str(other) +
                (other_wrote ? (other_copied ? " wrote (a cp.async copy)" : " wrote") : " read") +
                " with no __syncthreads() in between" +
                (g_mbarriers ? " and no mbarrier phase that orders them (the " + std::string(other_wrote ? "writer" : "reader") +
                                   " arriving on it, then this thread waiting for it)"
                             : "") +
                (other_copied ? "; kiln_cp_async_wait makes a copy visible to its issuing thread only" : ""));
  }
  // Whether thread `o`'s access at (epoch, warp epoch, clock) is ordered before this thread's.
  static bool ordered(int o, uint64_t epoch, uint64_t warp_epoch, uint32_t clock) {
    return o == cur_tid || epoch != cur_epoch || (o / 32 == cur_warp && warp_epoch < cur_warp_epoch) ||
           acquired(o, clock);
  }
  // The first read since the last write that is not ordered before this
  // thread's access, or -1 when all are.
  static int unordered_reader(const Shadow& s) {
    if (s.r_epoch != cur_epoch) return -1;
    if (!s.multi) return ordered(s.reader, s.r_epoch, s.r_warp_epoch, s.r_clock) ? -1 : s.reader;
    if (s.readers) {
      for (const ReadStamp& r : *s.readers)
        if (!ordered(r.tid, s.r_epoch, r.warp_epoch, r.clock)) return r.tid;
      return -1;
    }
    if (s.reader_warp == cur_warp && s.r_warp_epoch < cur_warp_epoch) return -1;
    return s.reader != cur_tid ? s.reader : s.reader2;
  }
  void on_read(long long i) {
    if (pool_offset_ >= 0) pool_touch(this, name_, pool_offset_ + i * static_cast<long long>(sizeof(T)));
    Shadow& s = shadow_[i];
    if (s.pending >= 0) pending_read(i, s.pending);
    if (s.w_epoch == cur_epoch && !ordered(s.writer, s.w_epoch, s.w_warp_epoch, s.w_clock))
      race(i, s.writer, "reads", false, true);
    if (unordered_reader(s) < 0) {  // earlier reads are ordered before this one: it stands for them
      s.r_epoch = cur_epoch;
      s.r_warp_epoch = cur_warp_epoch;
      s.r_clock = cur_clock;
      s.reader = static_cast<int16_t>(cur_tid);
      s.reader_warp = static_cast<int8_t>(cur_warp);
      s.multi = false;
      s.readers.reset();
      return;
    }
    if (g_mbarriers) {  // every reader with its latest read
      if (!s.readers) {  // the reads so far (of a multi read before the first mbarrier, the two known)
        s.readers.reset(new std::vector<ReadStamp>{ReadStamp{s.reader, s.r_clock, s.r_warp_epoch}});
        // reader2's clock is not kept, so no arrival orders its read (conservative).
        if (s.multi) s.readers->push_back(ReadStamp{s.reader2, UINT32_MAX, s.r_warp_epoch});
      }
      bool found = false;
      for (ReadStamp& r : *s.readers)
        if (r.tid == cur_tid) r = ReadStamp{r.tid, cur_clock, cur_warp_epoch}, found = true;
      if (!found) s.readers->push_back(ReadStamp{static_cast<int16_t>(cur_tid), cur_clock, cur_warp_epoch});
    }
    if (s.reader != cur_tid) {
      s.multi = true;
      s.reader2 = static_cast<int16_t>(cur_tid);
      if (s.reader_warp != cur_warp) s.reader_warp = -2;
      if (s.r_warp_epoch < cur_warp_epoch) s.r_warp_epoch = cur_warp_epoch;
    }
  }
  // A write, or a cp.async copy (`async`) as it is issued and as it lands.
  void on_write(long long i, bool async = false) {
    if (pool_offset_ >= 0) pool_touch(this, name_, pool_offset_ + i * static_cast<long long>(sizeof(T)));
    Shadow& s = shadow_[i];
    if (s.pending >= 0) pending_write(i, s.pending);
    if (s.held > 0)
      check_error(thread_str(cur_tid) + (async ? "'s copy" : "") + " writes " + elem(i) + " " + where() +
                  " while a wgmma product issued by " + issuer(s.holder) +
                  " still reads it: the product is in flight until a kiln_wgmma_commit_wait (wgmma.wait_group) "
                  "retires it, so its slot was released, or written, too early");
    if (s.w_epoch == cur_epoch && !ordered(s.writer, s.w_epoch, s.w_warp_epoch, s.w_clock))
      race(i, s.writer, "overwrites", async, true);
    const int reader = unordered_reader(s);
    if (reader >= 0) race(i, reader, async ? "overwrites" : "writes", async, false);
    s.async_write = async;
    s.w_epoch = cur_epoch;
    s.w_warp_epoch = cur_warp_epoch;
    s.w_clock = cur_clock;
    s.writer = static_cast<int16_t>(cur_tid);
    s.r_epoch = 0;  // those reads are ordered before this write
    s.readers.reset();
  }

  const char* name_;
  long long n_;
  long long pool_offset_;
  T* data_;
  Shadow* shadow_;
  std::mutex stripes_[16];
};

template <typename T, long long N>
class SharedArray : public SharedBuffer<T> {
 public:
  static_assert(N > 0, "a shared array has at least one element");
  explicit SharedArray(const char* name, long long pool_offset = -1) : SharedBuffer<T>(name, N, pool_offset) {}
};

// name[i]: reads convert to T, writes assign.
template <typename T>
class Ref {
 public:
  Ref(SharedBuffer<T>* b, long long i) : b_(b), i_(i) {}
  Ref(const Ref&) = default;
  operator T() const { return b_->read(i_); }
  Ref& operator=(const T& v) {
    b_->write(i_, v);
    return *this;
  }
  Ref& operator=(const Ref& o) { return *this = static_cast<T>(o); }
  Ref& operator+=(const T& v) { return update([&](const T& x) { return T(x + v); }); }
  Ref& operator-=(const T& v) { return update([&](const T& x) { return T(x - v); }); }
  Ref& operator*=(const T& v) { return update([&](const T& x) { return T(x * v); }); }
  Ref& operator/=(const T& v) { return update([&](const T& x) { return T(x / v); }); }

 private:
  template <typename F> Ref& update(F f) {
    b_->update(i_, f);
    return *this;
  }
  SharedBuffer<T>* b_;
  long long i_;
};

// name + offset: a pointer into a shared array.
template <typename T>
struct SharedPtr {
  SharedBuffer<T>* buf;
  long long off;
  Ref<T> operator[](long long i) const { return Ref<T>(buf, off + i); }
  SharedPtr operator+(long long i) const { return SharedPtr{buf, off + i}; }
};

void check_aligned(const void* p, size_t align, size_t bytes, const char* op);
#if KILN_EMU_DEFINE_RUNTIME
void check_aligned(const void* p, size_t align, size_t bytes, const char* op) {
  if (reinterpret_cast<uintptr_t>(p) % align == 0) return;
  char addr[32];
  snprintf(addr, sizeof(addr), "%p", p);
  check_error(std::string("misaligned ") + op + " of " + std::to_string(bytes) + " bytes at " + addr + " (needs " +
              std::to_string(align) + "-byte alignment) " + where() + ", " + thread_str(cur_tid) +
              "; the GPU would fault");
}
#endif  // KILN_EMU_DEFINE_RUNTIME

// cp.async (the async-copy prelude, codegen/cuda_async_prelude.h): each
// thread queues its copies, issued but not committed, then committed groups
// oldest first, as the GPU does per thread. A copy reads its source when it
// is issued and writes the shared array when a wait lands it.
struct AsyncCopy {
  void* buf;                                    // the SharedBuffer<T>
  void (*finish)(const AsyncCopy&, bool land);  // lands the bytes, or drops the copy
  long long index, count;                       // the destination elements
  int tid;                                      // the issuing thread
  unsigned char bytes[16];
};
struct AsyncQueue {
  std::vector<AsyncCopy> open;
  std::vector<std::vector<AsyncCopy>> groups;
};
inline AsyncQueue cur_async;
// Copies that never landed, of threads that finished their block: their
// elements stay pending until the whole block has finished.
inline std::mutex g_async_mu;
inline std::vector<AsyncCopy> g_unlanded;

template <typename T> void finish_copy(const AsyncCopy& c, bool land) {
  SharedBuffer<T>& b = *static_cast<SharedBuffer<T>*>(c.buf);
  if (land)
    b.async_land(c.index, c.count, c.bytes);
  else
    b.async_drop(c.index, c.count, c.tid);
}

// copy false: cp.async with src-size 0, which reads nothing and lands zeros.
template <int Bytes, typename T> void cp_async(SharedBuffer<T>& dst, long long i, const T* src, bool copy = true) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  static_assert(Bytes % sizeof(T) == 0, "cp.async copies whole elements");
  constexpr long long count = Bytes / static_cast<long long>(sizeof(T));
  dst.async_check(i, count);
  check_aligned(src, Bytes, Bytes, "cp.async source");
  AsyncCopy c{&dst, finish_copy<T>, i, count, cur_tid, {}};
  if (copy)
    memcpy(c.bytes, src, Bytes);
  else
    memset(c.bytes, 0, Bytes);
  cur_async.open.push_back(c);  // queued before the elements are marked, so that a failure still unmarks them
  dst.async_issue(i, count);
}

void cp_async_commit();
// cp.async.wait_group n: lands every committed group but the newest n, in
// order; copies not yet committed stay in flight.
void cp_async_wait(int n);
// A thread's block is over: its copies in flight wait for the whole block.
void async_retire();
// Every thread has finished the block (or the launch): the next one starts
// with no element pending. The arrays keep their data, as they do across blocks.
void async_drop_unlanded();

#if KILN_EMU_DEFINE_RUNTIME
void cp_async_commit() {
  cur_async.groups.push_back(std::move(cur_async.open));
  cur_async.open.clear();
}

void cp_async_wait(int n) {
  if (n < 0 || n > 7)
    check_error("kiln_cp_async_wait(" + std::to_string(n) + ") " + where() + ", " + thread_str(cur_tid) +
                ": cp.async.wait_group takes a count of 0 to 7 groups left in flight");
  std::vector<std::vector<AsyncCopy>>& groups = cur_async.groups;
  const size_t land = groups.size() > static_cast<size_t>(n) ? groups.size() - n : 0;
  for (size_t g = 0; g < land; ++g) {
    for (const AsyncCopy& c : groups[g]) c.finish(c, true);
  }
  groups.erase(groups.begin(), groups.begin() + static_cast<long>(land));
}

void async_retire() {
  if (cur_async.open.empty() && cur_async.groups.empty()) return;
  std::lock_guard<std::mutex> g(g_async_mu);
  for (std::vector<AsyncCopy>& group : cur_async.groups) g_unlanded.insert(g_unlanded.end(), group.begin(), group.end());
  g_unlanded.insert(g_unlanded.end(), cur_async.open.begin(), cur_async.open.end());
  cur_async = AsyncQueue{};
}
void async_drop_unlanded() {
  std::lock_guard<std::mutex> g(g_async_mu);
  for (const AsyncCopy& c : g_unlanded) c.finish(c, false);
  g_unlanded.clear();
}
#endif  // KILN_EMU_DEFINE_RUNTIME

// wgmma products left in flight (the warpgroup prelude's async calls): each
// thread queues its products, the open group and then the committed groups
// oldest first; a commit-and-wait adds the retired ones into their
// accumulators, where plain code may then read them.
struct WgmmaProduct {
  const float* acc;
  int count;                  // accumulators it writes from acc on
  std::function<void()> add;  // adds the product into them
  std::function<void()> let_go;  // lets go of the elements it reads (after add, or instead)
};
struct WgmmaQueue {
  std::vector<WgmmaProduct> open;
  std::vector<std::vector<WgmmaProduct>> groups;
};
inline WgmmaQueue cur_wgmma;

void wgmma_issue(const float* acc, int count, std::function<void()> add, std::function<void()> let_go);
// Every product still queued lets go of its elements, unadded (the thread's
// block ended or failed: the shared arrays outlive the launch).
void wgmma_drop();
// wgmma.commit_group, then wgmma.wait_group in_flight.
void wgmma_commit_wait(int in_flight);
// Plain code (`what`) touches this thread's accumulators [acc, acc + count):
// none may be the target of a product still in flight.
void wgmma_check_idle(const float* acc, int count, const char* what);
// The thread has run its block's body: a product still in flight never
// reached its accumulators.
void wgmma_finish();

#if KILN_EMU_DEFINE_RUNTIME
void wgmma_issue(const float* acc, int count, std::function<void()> add, std::function<void()> let_go) {
  cur_wgmma.open.push_back(WgmmaProduct{acc, count, std::move(add), std::move(let_go)});
}

void wgmma_drop() {
  for (const WgmmaProduct& p : cur_wgmma.open) p.let_go();
  for (const auto& group : cur_wgmma.groups)
    for (const WgmmaProduct& p : group) p.let_go();
  cur_wgmma = WgmmaQueue{};
}

void wgmma_commit_wait(int in_flight) {
  if (in_flight < 0 || in_flight > 7)
    check_error("kiln_wgmma_commit_wait<" + std::to_string(in_flight) + "> " + where() + ", " + thread_str(cur_tid) +
                ": wgmma.wait_group takes a count of 0 to 7 groups left in flight");
  std::vector<std::vector<WgmmaProduct>>& groups = cur_wgmma.groups;
  groups.push_back(std::move(cur_wgmma.open));
  cur_wgmma.open.clear();
  while (groups.size() > static_cast<size_t>(in_flight)) {
    std::vector<WgmmaProduct> group = std::move(groups.front());
    groups.erase(groups.begin());
    for (size_t i = 0; i < group.size(); ++i) {
      try {
        group[i].add();
      } catch (...) {  // a failed read: this group's rest and the others let go too
        for (size_t j = i; j < group.size(); ++j) group[j].let_go();
        wgmma_drop();
        throw;
      }
      group[i].let_go();
    }
  }
}

void wgmma_check_idle(const float* acc, int count, const char* what) {
  auto busy = [&](const WgmmaProduct& p) { return p.acc < acc + count && acc < p.acc + p.count; };
  bool in_flight = false;
  for (const WgmmaProduct& p : cur_wgmma.open) in_flight |= busy(p);
  for (const auto& group : cur_wgmma.groups)
    for (const WgmmaProduct& p : group) in_flight |= busy(p);
  if (in_flight)
    check_error(std::string(what) + " " + where() + ", " + thread_str(cur_tid) +
                " touches accumulators that a wgmma product still in flight writes; retire it first "
                "(kiln_wgmma_commit_wait, wgmma.wait_group)");
}

void wgmma_finish() {
  size_t n = cur_wgmma.open.size();
  for (const auto& group : cur_wgmma.groups) n += group.size();
  wgmma_drop();
  if (n > 0)
    check_error(thread_str(cur_tid) + " finished its block with " + std::to_string(n) +
                " wgmma product(s) still in flight: no kiln_wgmma_commit_wait (wgmma.wait_group) retired them, so "
                "their sums never reached the accumulators");
}
#endif  // KILN_EMU_DEFINE_RUNTIME

)KILN";
}

}  // namespace kiln
