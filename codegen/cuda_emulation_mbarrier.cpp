// The mbarrier part of the CUDA emulation header's text (see
// cuda_emulation_mbarrier.h).
#include "codegen/cuda_emulation_mbarrier.h"

namespace kiln {

const char* cuda_emulation_mbarrier_text() {
  return R"KILN(// mbarriers. PTX keeps a barrier's phase, its pending arrivals and its
// arrival count in 8 bytes of shared memory; here each is an object, and
// every operation on it holds the team's mutex.

// A bulk copy (cp.async.bulk) whose bytes land when its phase completes.
struct BulkCopy {
  void* buf;                                   // the SharedBuffer<T>
  void (*finish)(const BulkCopy&, bool land);  // lands the bytes, or drops the copy
  long long index, count;                      // the destination elements
  int tid;                                     // the issuing thread
  std::vector<unsigned char> bytes;
};
template <typename T> void finish_bulk(const BulkCopy& c, bool land) {
  SharedBuffer<T>& b = *static_cast<SharedBuffer<T>*>(c.buf);
  if (land)
    b.bulk_land(c.index, c.count, c.bytes.data());
  else
    b.async_drop(c.index, c.count, c.tid);
}

struct Mbarrier {
  bool live = false;  // initialized in this block
  uint64_t init_epoch = 0;
  int init_tid = -1;
  int count = 0, pending = 0;
  long long tx = 0;                // transaction bytes expected and not yet completed, this phase
  std::vector<BulkCopy> copies;    // this phase's bulk copies
  uint64_t phase = 0;              // phases completed; the one in progress has parity phase & 1
  std::vector<uint32_t> acc;       // the join of this phase's arrivals' clocks (cur_vc)
  std::vector<uint32_t> done;      // the same, of the last completed phase
  Gate gate;                       // opened when a phase completes
  int waiters = 0;                 // threads waiting on it
};

// A tensor map (CUtensorMap) as the host entry point and kiln's stand-in
// driver (tests/support/fake_libcuda.cpp, which writes the same layout)
// encode it: [0] a mark, [1] the tensor's address, [2] the element's bytes,
// [3] the rank, [4..8] the dims, [9..12] the strides in bytes, [13] and
// [14] the box's sides, 16 bits each, [15] the swizzle's bytes (0 or 128).
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};
constexpr unsigned long long kTensorMapMark = 0x70616d746e6c696bull;  // "kilntmap"
inline TensorMap encode_tensor_map(void* base, int element_bytes, int rank, std::initializer_list<unsigned long long> dims,
                                   std::initializer_list<unsigned long long> strides,
                                   std::initializer_list<unsigned> box, int swizzle = 0) {
  TensorMap m{};
  m.opaque[0] = kTensorMapMark;
  m.opaque[1] = reinterpret_cast<uintptr_t>(base);
  m.opaque[2] = static_cast<unsigned long long>(element_bytes);
  m.opaque[3] = static_cast<unsigned long long>(rank);
  int d = 0;
  for (unsigned long long x : dims) m.opaque[4 + d++] = x;
  d = 0;
  for (unsigned long long x : strides) m.opaque[9 + d++] = x;
  d = 0;
  for (unsigned x : box) m.opaque[13 + d / 4] |= static_cast<unsigned long long>(x) << (16 * (d % 4)), ++d;
  m.opaque[15] = static_cast<unsigned long long>(swizzle);
  return m;
}
inline unsigned long long tensor_map_box(const TensorMap& m, int d) {
  return (m.opaque[13 + d / 4] >> (16 * (d % 4))) & 0xffff;
}

class MbarrierArrayBase {
 public:
  virtual ~MbarrierArrayBase() = default;
  virtual void reset() = 0;  // a new block: no barrier is initialized
  virtual void wake() = 0;   // the launch failed: waiters must see it
};
inline std::mutex g_mbarrier_arrays_mu;
inline std::vector<MbarrierArrayBase*> g_mbarrier_arrays;

void mbarriers_reset();  // a new block (mbarriers_wake: above)
#if KILN_EMU_DEFINE_RUNTIME
void mbarriers_reset() {
  std::lock_guard<std::mutex> g(g_mbarrier_arrays_mu);
  for (MbarrierArrayBase* a : g_mbarrier_arrays) a->reset();
}
void mbarriers_wake() {
  std::lock_guard<std::mutex> g(g_mbarrier_arrays_mu);
  for (MbarrierArrayBase* a : g_mbarrier_arrays) a->wake();
}
#endif  // KILN_EMU_DEFINE_RUNTIME

// KILN_SHARED_MBARRIER(name, N): N barriers of the block.
template <long long N>
class MbarrierArray : public MbarrierArrayBase {
 public:
  static_assert(N > 0, "an mbarrier array has at least one barrier");
  explicit MbarrierArray(const char* name) : name_(name) {
    std::lock_guard<std::mutex> g(g_mbarrier_arrays_mu);
    g_mbarrier_arrays.push_back(this);
  }
  ~MbarrierArray() override {
    std::lock_guard<std::mutex> g(g_mbarrier_arrays_mu);
    for (size_t k = 0; k < g_mbarrier_arrays.size(); ++k)
      if (g_mbarrier_arrays[k] == this) g_mbarrier_arrays.erase(g_mbarrier_arrays.begin() + static_cast<long>(k));
  }
  void reset() override {
    for (Mbarrier& b : bars_) {
      for (const BulkCopy& c : b.copies) c.finish(c, false);  // never landed
      b.copies.clear();
      b.live = false;
      b.phase = 0;
      b.tx = 0;
      b.waiters = 0;
    }
  }
  void wake() override {
    for (Mbarrier& b : bars_) b.gate.open();
  }

  // mbarrier.init: one thread sets the arrival count of every phase.
  void init(long long i, long long count) {
    Team& t = team();
    std::unique_lock<std::mutex> lk(t.mu);
    if (t.failed) throw Abort{};
    Mbarrier& b = at(t, i, "initializes");
    if (count < 1 || count >= (1 << 20))
      failure(t, thread_str(cur_tid) + " " + where() + " initializes mbarrier " + elem(i) + " with an arrival count of " +
                     std::to_string(count) + "; PTX allows 1 to 2^20 - 1");
    if (b.live)
      failure(t, thread_str(cur_tid) + " " + where() + " initializes mbarrier " + elem(i) + ", which " +
                     thread_str(b.init_tid) + " already initialized in this block; a barrier in use is not initialized again");
    b.live = true;
    b.init_epoch = cur_epoch;
    b.init_tid = cur_tid;
    b.count = b.pending = static_cast<int>(count);
    b.tx = 0;
    b.phase = 0;
    b.acc.assign(static_cast<size_t>(t.n), 0);
    b.done.assign(static_cast<size_t>(t.n), 0);
    g_mbarriers = true;
  }

  // mbarrier.arrive: this thread's accesses so far are ordered before the
  // waits that see the phase complete.
  void arrive(long long i) {
    Team& t = team();
    std::unique_lock<std::mutex> lk(t.mu);
    if (t.failed) throw Abort{};
    arrive_on(t, usable(t, i, "arrives on"), i);
  }

  // mbarrier.arrive.expect_tx: the phase also waits for `bytes` more bytes
  // of bulk copies, then this thread arrives.
  void arrive_expect_tx(long long i, long long bytes) {
    Team& t = team();
    std::unique_lock<std::mutex> lk(t.mu);
    if (t.failed) throw Abort{};
    Mbarrier& b = usable(t, i, "arrives on");
    transaction(t, b, i, bytes, "expects");
    arrive_on(t, b, i);
  }

  // cp.async.bulk into dst[index..] of `bytes` from `src`, completing its
  // bytes on barrier i: a write of this thread now, landing with the phase.
  template <typename T> void bulk_copy(SharedBuffer<T>& dst, long long index, const T* src, long long bytes, long long i) {
    Team& t = team();
    std::unique_lock<std::mutex> lk(t.mu);
    if (t.failed) throw Abort{};
    Mbarrier& b = usable(t, i, "completes a bulk copy on");
    const long long at = index * static_cast<long long>(sizeof(T));
    if (bytes <= 0 || bytes % 16 != 0 || at % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0)
      failure(t, thread_str(cur_tid) + " " + where() + " issues a bulk copy of " + std::to_string(bytes) +
                     " bytes into " + dst.name() + "[" + std::to_string(index) +
                     "]: the size must be a positive multiple of 16 bytes, and both addresses 16-byte aligned");
    BulkCopy c{&dst, finish_bulk<T>, index, bytes / static_cast<long long>(sizeof(T)), cur_tid, {}};
    c.bytes.resize(static_cast<size_t>(bytes));
    memcpy(c.bytes.data(), src, static_cast<size_t>(bytes));
    dst.bulk_issue(c.index, c.count);
    b.copies.push_back(std::move(c));
    // The copy completes its bytes on the barrier: the phase then orders
    // the issuing thread's write (and what it did before) before the waits.
    publish_clock(b);
    transaction(t, b, i, -bytes, "completes");
    if (b.pending == 0 && b.tx == 0) complete(t, b);
  }

  // cp.async.bulk.tensor.Rd: the box of the R-D tensor map `m` at the
  // coordinates c[0..R), zeros where it passes the tensor's edges, into
  // dst[index..] densely, dimension 0 innermost, completing its bytes on
  // barrier i. A map with the 128-byte swizzle lands each 16-byte chunk
  // where the GPU does: its shared address's bits 4-6 XOR bits 7-9, which
  // keeps the pattern of Stage::storage_swizzle(128) only from a 1024-byte
  // boundary, so a destination off one is reported (and the copy stops);
  // from one, the address's bits are those of the offset within the box,
  // which is what the landing swizzles.
  template <typename T>
  void tensor_copy(SharedBuffer<T>& dst, long long index, const TensorMap& m, const int* c, int rank, long long i) {
    const std::string what = thread_str(cur_tid) + " " + where() + " issues a tensor copy into " + dst.name() + "[" +
                             std::to_string(index) + "]";
    unsigned long long box_sides[5] = {}, dims[5] = {}, strides[5] = {sizeof(T)};
    unsigned long long elements = 1;
    for (int d = 0; d < rank; ++d) {
      box_sides[d] = tensor_map_box(m, d);
      dims[d] = m.opaque[4 + d];
      if (d > 0) strides[d] = m.opaque[9 + d - 1];
      elements *= box_sides[d];
    }
    {
      Team& t = team();
      std::unique_lock<std::mutex> lk(t.mu);
      if (t.failed) throw Abort{};
      if (m.opaque[0] != kTensorMapMark)
        failure(t, what + " with a tensor map that was never encoded (a kernel parameter, filled at launch)");
      if (m.opaque[3] != static_cast<unsigned long long>(rank) || m.opaque[2] != sizeof(T))
        failure(t, what + " with a tensor map of rank " + std::to_string(m.opaque[3]) + " and " +
                       std::to_string(m.opaque[2]) + "-byte elements; the copy is " + std::to_string(rank) +
                       "-D of " + std::to_string(sizeof(T)) + "-byte elements");
      // Where the box lands in the block's shared memory (an array of its own is 16-byte aligned).
      const long long at = dst.pool_offset() < 0 ? -1 : dst.pool_offset() + index * static_cast<long long>(sizeof(T));
      if (at < 0 || at % 128 != 0)
        failure(t, what + ": a tensor copy's destination must be 128-byte aligned in the block's shared memory, " +
                       (at < 0 ? std::string("and an array of its own is only 16-byte aligned")
                               : "and it is at byte " + std::to_string(at)));
      if (m.opaque[15] != 0 && (m.opaque[15] != 128 || box_sides[0] * sizeof(T) != 128))
        failure(t, what + " with a tensor map that swizzles " + std::to_string(m.opaque[15]) + " bytes, rows of " +
                       std::to_string(box_sides[0] * sizeof(T)) + " bytes; kiln's swizzled maps swizzle 128-byte rows");
      if (m.opaque[15] == 128 && at % 1024 != 0)
        failure(t, what + " through a 128-byte swizzled tensor map at byte " + std::to_string(at) +
                       " of the block's shared memory, not at a 1024-byte boundary where the swizzle's pattern starts");
      // What cuTensorMapEncodeTiled would have refused.
      bool encodable = m.opaque[1] % 16 == 0 && box_sides[0] * sizeof(T) % 16 == 0;
      std::string sides;
      for (int d = 0; d < rank; ++d) {
        encodable &= box_sides[d] >= 1 && box_sides[d] <= 256 && (d == 0 || (strides[d] != 0 && strides[d] % 16 == 0));
        sides += (d ? " x " : "") + std::to_string(box_sides[d]);
      }
      if (!encodable)
        failure(t, what + " with a tensor map no driver encodes: its tensor at an address 16-byte aligned, its " +
                       (rank == 2 ? "row stride (" + std::to_string(strides[1]) + " bytes)" : std::string("strides")) +
                       " positive multiples of 16, its box (" + sides +
                       ") at most 256 along each dimension with rows of whole 16-byte units");
    }
    const unsigned char* base = reinterpret_cast<const unsigned char*>(static_cast<uintptr_t>(m.opaque[1]));
    std::vector<T> box(static_cast<size_t>(elements));
    for (unsigned long long e = 0; e < elements; ++e) {
      unsigned long long rest = e, offset = 0;
      bool inside = true;
      for (int d = 0; d < rank; ++d) {
        const long long x = c[d] + static_cast<long long>(rest % box_sides[d]);
        rest /= box_sides[d];
        inside &= x >= 0 && static_cast<unsigned long long>(x) < dims[d];
        offset += static_cast<unsigned long long>(x) * strides[d];
      }
      // Where it lands: its byte in the box, swizzled when the map swizzles.
      long long to = static_cast<long long>(e * sizeof(T));
      if (m.opaque[15] == 128) to = swizzle_128b(to);
      if (inside) memcpy(&box[static_cast<size_t>(to) / sizeof(T)], base + offset, sizeof(T));  // zeros outside
    }
    bulk_copy(dst, index, box.data(), static_cast<long long>(box.size() * sizeof(T)), i);
  }

  // mbarrier.test_wait.parity in a loop: returns once the phase of parity
  // `parity` has completed, which is the one in progress when its parity is
  // `parity`, else the one just before it (PTX's rule: on the GPU, a barrier
  // two phases ahead reads as not yet complete, and so does it here).
  void wait(long long i, unsigned parity) {
    Team& t = team();
    std::unique_lock<std::mutex> lk(t.mu);
    if (t.failed) throw Abort{};
    Mbarrier& b = usable(t, i, "waits on");
    if (parity > 1)
      failure(t, thread_str(cur_tid) + " " + where() + " waits on mbarrier " + elem(i) + " with parity " +
                     std::to_string(parity) + "; a phase's parity is 0 or 1");
    while ((b.phase & 1) == parity) {
      ThreadState& s = t.ts[static_cast<size_t>(cur_tid)];
      s.at = At::kMbarrier;
      s.mbarrier = name_;
      s.mbarrier_index = static_cast<int>(i);
      s.waits_on = &b;
      ++b.waiters;
      --t.running;
      if (t.running == 0) diverged(t);
      const uint32_t ticket = b.gate.ticket();
      lk.unlock();
      b.gate.wait(ticket);
      lk.lock();
      if (t.failed) throw Abort{};
    }
    for (size_t k = 0; k < b.done.size(); ++k) cur_vc[k] = std::max(cur_vc[k], b.done[k]);
  }

 private:
  // This thread arrives on barrier b (mu held).
  void arrive_on(Team& t, Mbarrier& b, long long i) {
    if (b.pending == 0)
      failure(t, thread_str(cur_tid) + " " + where() + " arrives on mbarrier " + elem(i) + ", whose phase has all its " +
                     std::to_string(b.count) + " arrivals already and waits only for " + std::to_string(b.tx) +
                     " bytes of bulk copies");
    for (size_t k = 0; k < b.acc.size(); ++k) b.acc[k] = std::max(b.acc[k], cur_vc[k]);
    publish_clock(b);
    if (--b.pending == 0 && b.tx == 0) complete(t, b);
  }
  // This thread's accesses so far are ordered before the phase's waits.
  void publish_clock(Mbarrier& b) {
    ++cur_clock;
    uint32_t& mine = b.acc[static_cast<size_t>(cur_tid)];
    mine = std::max(mine, cur_clock);
  }
  // Adds `bytes` to the phase's transaction count (PTX's range: 2^20 - 1 either way).
  void transaction(Team& t, Mbarrier& b, long long i, long long bytes, const char* verb) {
    b.tx += bytes;
    if (b.tx >= (1 << 20) || b.tx <= -(1 << 20))
      failure(t, thread_str(cur_tid) + " " + where() + " " + verb + " " + std::to_string(bytes < 0 ? -bytes : bytes) +
                     " bytes on mbarrier " + elem(i) + ", which takes its pending transaction bytes to " +
                     std::to_string(b.tx) + "; PTX allows 2^20 - 1 either way");
  }
  // The phase in progress completes: its copies land, its waiters run again.
  void complete(Team& t, Mbarrier& b) {
    for (const BulkCopy& c : b.copies) c.finish(c, true);
    b.copies.clear();
    b.done.swap(b.acc);
    b.acc.assign(b.done.size(), 0);
    ++b.phase;
    b.pending = b.count;
    for (int k = 0; k < t.n; ++k) {  // its waiters run again
      ThreadState& s = t.ts[static_cast<size_t>(k)];
      if (s.at == At::kMbarrier && s.waits_on == &b) s.at = At::kRunning;
    }
    t.running += b.waiters;
    b.waiters = 0;
    b.gate.open();
  }
  std::string elem(long long i) const { return std::string(name_) + "[" + std::to_string(i) + "]"; }
  [[noreturn]] void failure(Team& t, const std::string& msg) {
    fail(t, msg);
    throw Abort{};
  }
  Mbarrier& at(Team& t, long long i, const char* verb) {
    if (i < 0 || i >= N)
      failure(t, thread_str(cur_tid) + " " + where() + " " + verb + " mbarrier " + elem(i) + ", out of bounds of " +
                     name_ + "[" + std::to_string(N) + "]");
    return bars_[i];
  }
  // A barrier this thread may use: initialized, and the initialization
  // made visible to this thread by a __syncthreads() (or its own).
  Mbarrier& usable(Team& t, long long i, const char* verb) {
    Mbarrier& b = at(t, i, verb);
    if (!b.live)
      failure(t, thread_str(cur_tid) + " " + where() + " " + verb + " mbarrier " + elem(i) +
                     " before it is initialized in this block (kiln_mbarrier_init)");
    if (b.init_epoch == cur_epoch && b.init_tid != cur_tid)
      failure(t, thread_str(cur_tid) + " " + where() + " " + verb + " mbarrier " + elem(i) + ", which " +
                     thread_str(b.init_tid) +
                     " initialized with no __syncthreads() in between: other threads see the initialization only "
                     "after a barrier");
    return b;
  }

  const char* name_;
  Mbarrier bars_[N];
};

// cp.async.mbarrier.arrive.noinc: the barrier sees an arrival of this
// thread once all its cp.async copies so far have landed (the arrival is
// one of the count mbarrier.init set). Here they land at once, before the
// arrival, as this thread's writes; a thread that reads the data must still
// wait for the phase.
template <long long N> void cp_async_mbarrier_arrive(MbarrierArray<N>& b, long long i) {
  for (std::vector<AsyncCopy>& group : cur_async.groups)
    for (const AsyncCopy& c : group) c.finish(c, true);
  for (const AsyncCopy& c : cur_async.open) c.finish(c, true);
  cur_async = AsyncQueue{};
  b.arrive(i);
}

)KILN";
}

}  // namespace kiln
