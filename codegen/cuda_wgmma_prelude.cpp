// The warpgroup tensor-core prelude's text (see cuda_wgmma_prelude.h).
#include "codegen/cuda_wgmma_prelude.h"

#include <sstream>

#include "base/error.h"
#include "compute/hw_instructions.h"

namespace kiln {

namespace {

// What every width shares: the warp's rank in its warpgroup, the
// descriptors and, in the emulation, the product itself.
const char* kCommon = R"KILN(// ---- kiln warpgroup tensor-core prelude ----
// wgmma.mma_async.m64nNk16 (sm_90a) from 8 x 8 tiles in shared memory. The
// warpgroup's four warps call it together; warp w gets rows 16w..16w+15 of
// the group's 64-row tile of A, in mma.m16n8k16's accumulator layout per
// 8 columns. Each call passes its own rows' offset; the group's is 16 rows
// (two tiles along m) less per warp before it.
__device__ __forceinline__ int kiln_warp_in_group() {
  return (int)(((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5) & 3);
}
#ifdef KILN_CUDA_EMULATION
#include <map>
#include <tuple>
// What the hardware requires of the four warps of a warpgroup: each one
// there, and all naming the same tiles (the same descriptors, k steps and
// layouts). Lane 0 of each warp records its call, by warpgroup and by the
// number of calls its warp made in the block, and compares it with what the
// other warps of its group recorded for that call.
inline void kiln_wgmma_emu_group(const char* op, const long long (&call)[9]) {
  if (kiln_emu::cur_lane != 0) return;
  kiln_emu::Team& team = kiln_emu::team();
  const int warp = kiln_emu::cur_tid / 32, group = warp / 4;
  auto fail = [&](const std::string& what) {
    kiln_emu::check_error(std::string(op) + " " + kiln_emu::where() + ", " + kiln_emu::thread_str(kiln_emu::cur_tid) +
                          ": " + what);
  };
  if ((group + 1) * 128 > team.n)
    return fail("warp " + std::to_string(warp) + " is in warpgroup " + std::to_string(group) + ", which the block's " +
                std::to_string(team.n) + " threads leave short of four whole warps");
  struct Seen {
    long long call[9];
    unsigned warps;
    int first;
  };
  static std::mutex mu;
  static std::map<std::tuple<uint64_t, long long, int, long long>, Seen> seen;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(team.launch, team.block, group, kiln_emu::cur_wgmma_calls++);
  auto it = seen.find(key);
  if (it == seen.end()) it = seen.emplace(key, Seen{{}, 0u, warp}).first, memcpy(it->second.call, call, sizeof call);
  static const char* const names[9] = {"A's tiles at", "B's tiles at", "a_m", "a_k", "b_k", "b_n", "a_mn_major",
                                       "b_mn_major", "steps"};
  for (int i = 0; i < 9; ++i)
    if (it->second.call[i] != call[i])
      return fail("warp " + std::to_string(warp) + " passes " + names[i] + " " + std::to_string(call[i]) + ", warp " +
                  std::to_string(it->second.first) + " of its warpgroup " + std::to_string(it->second.call[i]) +
                  "; the four warps of a warpgroup must name the same tiles (warp 4g+w's rows 16*w after warp 4g's)");
  if ((it->second.warps |= 1u << (warp % 4)) == 0xFu) seen.erase(it);
}

#endif

// A shared memory matrix descriptor (wgmma's): the start address, the
// leading and the stride byte offsets, each in 16-byte units, and the
// layout (0: 8 x 8 tiles, 1: the 128-byte swizzle). Both builds make the
// same descriptors; the emulation then reads the elements they name.
__device__ __forceinline__ unsigned long long kiln_wgmma_desc(unsigned long long addr, long long leading_bytes,
                                                               long long stride_bytes, int swizzle) {
  return ((addr & 0x3FFFFull) >> 4) | ((unsigned long long)((leading_bytes & 0x3FFFF) >> 4) << 16) |
         ((unsigned long long)((stride_bytes & 0x3FFFF) >> 4) << 32) | ((unsigned long long)swizzle << 62);
}
// The first element of this warp's warpgroup's A, given the warp's own
// `a_off`: 16 rows a warp before it (two groups of 8 rows, a_m apart),
// along a swizzled MN-major A's rows 16 elements.
template <int Mn, int Sw>
__device__ __forceinline__ long long kiln_wgmma_group_first(long long a_off, long long a_m) {
  return a_off - (Sw && Mn ? 16LL : 2LL * a_m) * kiln_warp_in_group();
}
// The descriptor of an operand's k step `step` (16 of k), `addr` the
// shared address of the group's first element (its place before the
// swizzle), along_mn and along_k the distances the call passes, in
// elements of e bytes. 8 x 8 tiles: leading along k, stride along m or n,
// two tiles along k a step. Swizzled with k along the 128-byte rows:
// stride between groups of 8 rows; a step moves 32 bytes along the row,
// into the next strip past 128 (the hardware swizzles the address, so the
// start names the element's place before the swizzle). Swizzled with m or
// n along the rows: leading between strips, stride between groups of 8
// rows of k, two groups a step.
template <int Mn, int Sw>
__device__ __forceinline__ unsigned long long kiln_wgmma_step_desc(unsigned long long addr, long long e,
                                                                    long long along_mn, long long along_k, int step) {
  if (!Sw) return kiln_wgmma_desc(addr + 2LL * step * along_k * e, along_k * e, along_mn * e, 0);
  if (!Mn) {
    const long long w = 128 / e, k = 16LL * step;
    return kiln_wgmma_desc(addr + ((k / w) * along_k + k % w) * e, 16, along_mn * e, 1);
  }
  return kiln_wgmma_desc(addr + 2LL * step * along_k * e, along_mn * e, along_k * e, 1);
}

#ifdef KILN_CUDA_EMULATION
template <typename T>
inline long long kiln_wgmma_emu_elem_bytes(const kiln_emu::SharedBuffer<T>&) {
  return (long long)sizeof(T);
}
// The shared address of an operand's element `off`: the array's byte
// offset in the block's shared memory (0 for an array of its own) plus the
// element's.
template <typename S>
inline unsigned long long kiln_wgmma_addr(S& s, long long off) {
  long long base = 0;
  auto& buf = kiln_mma_emu_buffer(s, base);
  return (unsigned long long)(std::max(0LL, buf.pool_offset()) + (base + off) * kiln_wgmma_emu_elem_bytes(buf));
}

// What the hardware reads for element (mn, k), k < 16, of an operand
// whose descriptor is `desc`: the element's byte address in the canonical
// layout the descriptor's fields give (PTX's shared memory matrix layouts,
// K-major or MN-major), swizzled (address bits 4-6 XOR bits 7-9) under the
// 128-byte swizzle; returned as an index into the array at `array_addr`.
inline long long kiln_wgmma_emu_element(unsigned long long desc, int mn_major, long long mn, long long k,
                                        long long e, long long array_addr) {
  const long long start = (long long)(desc & 0x3FFF) << 4, lbo = (long long)((desc >> 16) & 0x3FFF) << 4,
                  sbo = (long long)((desc >> 32) & 0x3FFF) << 4;
  const int swizzle = (int)(desc >> 62);
  long long byte = 0;
  if (swizzle == 0)
    byte = start + (mn / 8) * sbo + (k / 8) * lbo + (mn_major ? (k % 8) * 16 + (mn % 8) * e : (mn % 8) * 16 + (k % 8) * e);
  else if (!mn_major)
    byte = start + (mn / 8) * sbo + (mn % 8) * 128 + (k / 8) * 16 + (k % 8) * e;
  else
    byte = start + (mn / 64) * lbo + ((mn / 8) % 8) * 16 + (k / 8) * sbo + (k % 8) * 128 + (mn % 8) * e;
  if (swizzle == 1) byte = kiln_emu::swizzle_128b(byte);
  return (byte - array_addr) / e;
}

// Each thread computes its N/2 accumulators in k order, in f32, from the
// elements the descriptors of each k step name: rows g and g+8 of its
// warp's 16, columns 8j + 2t and 8j + 2t + 1. An async call (a pipeline's,
// which keeps it in flight) reads the tiles now, which the fill must have
// completed, holds them (a write to them meanwhile, its slot released too
// early, is an error) and reads them again when the kiln_wgmma_commit_wait
// that retires it runs, where it adds the products into the accumulators.
template <int AMn, int BMn, int ASw, int BSw, typename SA, typename SB>
inline void kiln_wgmma_emu(const char* op, int n, float (*to_f32)(unsigned short), bool async, float* acc, SA& a,
                           long long a_off, long long a_m, long long a_k, SB& b, long long b_off, long long b_k,
                           long long b_n, int steps) {
  long long a_base = 0, b_base = 0;
  auto& abuf = kiln_mma_emu_buffer(a, a_base);
  auto& bbuf = kiln_mma_emu_buffer(b, b_base);
  const int w = kiln_warp_in_group();
  // What the descriptor names: the group's first row.
  const long long a_group = kiln_wgmma_group_first<AMn, ASw>(a_off, a_m), group = a_base + a_group;
  const long long e = kiln_wgmma_emu_elem_bytes(abuf);
  auto fail = [&](const std::string& what) {
    kiln_emu::check_error(std::string(op) + " " + kiln_emu::where() + ", " + kiln_emu::thread_str(kiln_emu::cur_tid) +
                          ": " + what);
  };
  if (group % 8 != 0 || (b_base + b_off) % 8 != 0)
    fail("a tile of A or B starts at an element that is not 16-byte aligned; the GPU would fault");
  // A swizzled operand's first element sits where the swizzle's pattern
  // starts: a 1024-byte boundary of the block's shared memory.
  auto check_swizzled = [&](const char* which, long long pool_offset, unsigned long long addr) {
    if (pool_offset < 0)
      return fail(std::string(which) + " is stored swizzled in an array of its own, which is only 16-byte aligned; "
                  "the swizzle needs its array 1024-byte aligned in the block's shared memory");
    if (addr % 1024 != 0)
      fail(std::string(which) + " is stored swizzled and its tiles start at byte " + std::to_string(addr) +
           " of the block's shared memory, not at a 1024-byte boundary where the swizzle's pattern starts; the GPU "
           "would read other elements");
  };
  const unsigned long long a_addr = kiln_wgmma_addr(a, a_group), b_addr = kiln_wgmma_addr(b, b_off);
  if (ASw) check_swizzled("A", abuf.pool_offset(), a_addr);
  if (BSw) check_swizzled("B", bbuf.pool_offset(), b_addr);
  const long long call[9] = {group, b_base + b_off, a_m, a_k, b_k, b_n, AMn, BMn, steps};
  kiln_wgmma_emu_group(op, call);
  std::vector<unsigned long long> da(steps), db(steps);
  for (int s = 0; s < steps; ++s) {
    da[s] = kiln_wgmma_step_desc<AMn, ASw>(a_addr, e, a_m, a_k, s);
    db[s] = kiln_wgmma_step_desc<BMn, BSw>(b_addr, e, b_n, b_k, s);
  }
  const long long a_array = std::max(0LL, abuf.pool_offset()), b_array = std::max(0LL, bbuf.pool_offset());
  auto a_at = [=](long long i, long long k) { return kiln_wgmma_emu_element(da[k / 16], AMn, i, k % 16, e, a_array); };
  auto b_at = [=](long long k, long long j) { return kiln_wgmma_emu_element(db[k / 16], BMn, j, k % 16, e, b_array); };
  auto A = [=, &abuf](long long i, long long k) { return to_f32((unsigned short)abuf.read(a_at(i, k))); };
  auto B = [=, &bbuf](long long k, long long j) { return to_f32((unsigned short)bbuf.read(b_at(k, j))); };
  const int g = kiln_emu::cur_lane / 4, t = kiln_emu::cur_lane % 4;
  auto product = [=]() {
    for (int j = 0; j < n / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        const long long i = 16 * w + g + 8 * (e >> 1), col = 8 * j + 2 * t + (e & 1);
        float d = acc[4 * j + e];
        for (long long k = 0; k < 16LL * steps; ++k) d += A(i, k) * B(k, col);
        acc[4 * j + e] = d;
      }
  };
  if (!async) {  // commit_group and wait_group 0: the older products in flight retire first
    kiln_emu::wgmma_commit_wait(0);
    return product();
  }
  // Every element this thread's products read: its rows of A, its columns of B.
  auto each = [=, &abuf, &bbuf](auto&& on_a, auto&& on_b) {
    for (long long k = 0; k < 16LL * steps; ++k) {
      for (int e = 0; e < 2; ++e) on_a(abuf, a_at(16 * w + g + 8 * e, k));
      for (int j = 0; j < n / 8; ++j)
        for (int e = 0; e < 2; ++e) on_b(bbuf, b_at(k, 8 * j + 2 * t + e));
    }
  };
  // Read now (the fill must be complete), then held until the product
  // retires (or is dropped, when the launch fails).
  auto read = [](auto& buf, long long i) { (void)buf.read(i); };
  auto hold = [](auto& buf, long long i) { buf.hold(i); };
  auto release = [](auto& buf, long long i) { buf.unhold(i); };
  each(read, read);
  each(hold, hold);
  kiln_emu::wgmma_issue(acc, n / 2, product, [=]() { each(release, release); });
}
inline void kiln_wgmma_emu_commit_wait(int in_flight) { kiln_emu::wgmma_commit_wait(in_flight); }
#else
template <typename S>
__device__ __forceinline__ unsigned long long kiln_wgmma_addr(S& s, long long off) {
  return (unsigned)__cvta_generic_to_shared(&s[off]);
}
#endif

// Commits the warpgroup's open group of async products and waits until at
// most InFlight committed groups are in flight; the accumulators of the
// older ones hold their sums, and their tiles may be refilled. `acc`, the
// warp's accumulator array, is fenced after the wait: the compiler may not
// move a read or write of its registers above it (the products in flight
// own them until then).
template <int InFlight, int N>
__device__ __forceinline__ void kiln_wgmma_commit_wait(float (&acc)[N]) {
#ifdef KILN_CUDA_EMULATION
  (void)acc;
  kiln_wgmma_emu_commit_wait(InFlight);
#else
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(InFlight) : "memory");
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(acc[i])::"memory");
#endif
}
)KILN";

std::string operand_list(int64_t first, int64_t count) {
  std::string s;
  for (int64_t i = 0; i < count; ++i) s += (i ? ", %" : "%") + std::to_string(first + i);
  return s;
}

// One width and input type: the PTX (or the emulation's call) and the
// function the printer calls.
std::string width_function(int64_t n, const std::string& t) {
  const std::string fn = cuda_wgmma_function(n, t);
  const int64_t regs = n / 2;
  std::ostringstream os;
  os << "// Async: issue only; kiln_wgmma_commit_wait commits and retires the group.\n"
     << "template <int AMn, int BMn, int ASw, int BSw, int Async, typename SA, typename SB>\n"
     << "__device__ __forceinline__ void " << fn
     << "(float* acc, SA& a, long long a_off, long long a_m, long long a_k, SB& b, long long b_off, long long b_k,\n"
     << "    long long b_n, int steps) {\n"
     << "#ifdef KILN_CUDA_EMULATION\n"
     << "  kiln_wgmma_emu<AMn, BMn, ASw, BSw>(\"" << fn << " (wgmma.mma_async.m64n" << n << "k16)\", " << n
     << ", kiln_mma_emu_" << t << ", Async != 0, acc, a, a_off, a_m, a_k, b, b_off, b_k, b_n, steps);\n"
     << "#else\n"
     << "  const long long a_group = kiln_wgmma_group_first<AMn, ASw>(a_off, a_m);\n"
     << "  const long long e = (long long)sizeof(a[0]);\n"
     << "  const unsigned long long a_addr = kiln_wgmma_addr(a, a_group), b_addr = kiln_wgmma_addr(b, b_off);\n"
     << "  // Shared memory written by plain stores or cp.async, read by the tensor cores' proxy.\n"
     << "  asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
     << "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
     << "  for (int s = 0; s < steps; ++s) {\n"
     << "    const unsigned long long da = kiln_wgmma_step_desc<AMn, ASw>(a_addr, e, a_m, a_k, s);\n"
     << "    const unsigned long long db = kiln_wgmma_step_desc<BMn, BSw>(b_addr, e, b_n, b_k, s);\n"
     << "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << regs + 2 << ", 0;\\n\"\n"
     << "                 \"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << t << "." << t << " {"
     << operand_list(0, regs) << "}, %" << regs << ", %" << regs + 1 << ", p, 1, 1, %" << regs + 3 << ", %" << regs + 4
     << ";\\n}\\n\"\n"
     << "                 : ";
  for (int64_t i = 0; i < regs; ++i) os << (i ? ", " : "") << "\"+f\"(acc[" << i << "])";
  os << "\n                 : \"l\"(da), \"l\"(db), \"r\"(1), \"n\"(AMn), \"n\"(BMn));\n"
     << "  }\n"
     << "  if (!Async) {\n"
     << "    asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
     << "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
     << "  }\n"
     << "#endif\n"
     << "}\n";
  return os.str();
}

}  // namespace

std::pair<int64_t, std::string> cuda_wgmma_shape(const std::string& instruction) {
  const std::string head = kCudaWgmmaPrefix + std::string("m64n");
  const size_t k = instruction.find("k16.", head.size());
  internal_assert(instruction.rfind(head, 0) == 0 && k != std::string::npos) << "not a wgmma: " << instruction;
  const size_t end = is_cuda_wgmma_async(instruction) ? instruction.size() - std::string(".async").size()
                                                      : instruction.size();
  return {std::stoll(instruction.substr(head.size(), k - head.size())), instruction.substr(k + 4, end - k - 4)};
}

std::string cuda_wgmma_function(int64_t n, const std::string& input) {
  return "kiln_wgmma_m64n" + std::to_string(n) + "k16_" + input;
}

std::string cuda_wgmma_prelude(const std::set<std::pair<int64_t, std::string>>& used) {
  std::string s = kCommon;
  for (const auto& [n, t] : used) s += width_function(n, t);
  return s + "// ---- end of kiln warpgroup tensor-core prelude ----\n";
}

}  // namespace kiln
