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

// Each thread computes its N/2 accumulators in k order, in f32, from the
// tiles: rows g and g+8 of its warp's 16, columns 8j + 2t and 8j + 2t + 1.
// An async call (a pipeline's, which keeps it in flight) reads the tiles
// now, which the fill must have completed, holds them (a write to them
// meanwhile, its slot released too early, is an error) and reads them again
// when the kiln_wgmma_commit_wait that retires it runs, where it adds the
// products into the accumulators.
template <typename SA, typename SB>
inline void kiln_wgmma_emu(const char* op, int n, float (*to_f32)(unsigned short), bool async, float* acc, int a_mn,
                           SA& a, long long a_off, long long a_m, long long a_k, int b_mn, SB& b, long long b_off,
                           long long b_k, long long b_n, int steps) {
  long long a_base = 0, b_base = 0;
  auto& abuf = kiln_mma_emu_buffer(a, a_base);
  auto& bbuf = kiln_mma_emu_buffer(b, b_base);
  const int w = kiln_warp_in_group();
  const long long group = a_base + a_off - 2 * w * a_m;  // what the descriptor names
  if (group % 8 != 0 || (b_base + b_off) % 8 != 0)
    kiln_emu::check_error(std::string(op) + " " + kiln_emu::where() + ", " + kiln_emu::thread_str(kiln_emu::cur_tid) +
                          ": a tile of A or B starts at an element that is not 16-byte aligned; the GPU would fault");
  const long long call[9] = {group, b_base + b_off, a_m, a_k, b_k, b_n, a_mn, b_mn, steps};
  kiln_wgmma_emu_group(op, call);
  auto a_at = [=](long long i, long long k) {
    return group + (i / 8) * a_m + (k / 8) * a_k + (a_mn ? (k % 8) * 8 + i % 8 : (i % 8) * 8 + k % 8);
  };
  auto b_at = [=](long long k, long long j) {
    return b_base + b_off + (k / 8) * b_k + (j / 8) * b_n + (b_mn ? (k % 8) * 8 + j % 8 : (j % 8) * 8 + k % 8);
  };
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
// A shared memory matrix descriptor without swizzling: the start address,
// the distance between tiles along k (leading) and along m or n (stride),
// each in 16-byte units.
template <typename S>
__device__ __forceinline__ unsigned long long kiln_wgmma_desc(S& s, long long off, long long along_k_bytes,
                                                               long long along_mn_bytes) {
  const unsigned long long addr = (unsigned)__cvta_generic_to_shared(&s[off]);
  return ((addr & 0x3FFFFull) >> 4) | ((unsigned long long)((along_k_bytes & 0x3FFFF) >> 4) << 16) |
         ((unsigned long long)((along_mn_bytes & 0x3FFFF) >> 4) << 32);
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
     << "template <int AMn, int BMn, int Async, typename SA, typename SB>\n"
     << "__device__ __forceinline__ void " << fn
     << "(float* acc, SA& a, long long a_off, long long a_m, long long a_k, SB& b, long long b_off, long long b_k,\n"
     << "    long long b_n, int steps) {\n"
     << "#ifdef KILN_CUDA_EMULATION\n"
     << "  kiln_wgmma_emu(\"" << fn << " (wgmma.mma_async.m64n" << n << "k16)\", " << n << ", kiln_mma_emu_" << t
     << ", Async != 0, acc, AMn, a, a_off, a_m, a_k, BMn, b, b_off, b_k, b_n, steps);\n"
     << "#else\n"
     << "  const long long e = (long long)sizeof(a[0]);\n"
     << "  unsigned long long da = kiln_wgmma_desc(a, a_off - 2 * kiln_warp_in_group() * a_m, a_k * e, a_m * e);\n"
     << "  unsigned long long db = kiln_wgmma_desc(b, b_off, b_k * e, b_n * e);\n"
     << "  // Shared memory written by plain stores or cp.async, read by the tensor cores' proxy.\n"
     << "  asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
     << "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
     << "  for (int s = 0; s < steps; ++s) {\n"
     << "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << regs + 2 << ", 0;\\n\"\n"
     << "                 \"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << t << "." << t << " {"
     << operand_list(0, regs) << "}, %" << regs << ", %" << regs + 1 << ", p, 1, 1, %" << regs + 3 << ", %" << regs + 4
     << ";\\n}\\n\"\n"
     << "                 : ";
  for (int64_t i = 0; i < regs; ++i) os << (i ? ", " : "") << "\"+f\"(acc[" << i << "])";
  os << "\n                 : \"l\"(da), \"l\"(db), \"r\"(1), \"n\"(AMn), \"n\"(BMn));\n"
     << "    // The next 16 of k: two tiles on along k, in 16-byte units.\n"
     << "    da += (unsigned long long)((2 * a_k * e) >> 4);\n"
     << "    db += (unsigned long long)((2 * b_k * e) >> 4);\n"
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
