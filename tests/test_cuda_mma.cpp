// The tensor-core prelude (codegen/cuda_mma_prelude.h): hand-written CUDA C
// kernels that load f16/bf16 tiles from padded shared arrays with ldmatrix
// (every Trans mode), multiply them with mma.sync and store the f32 result,
// run under the CPU emulation against a host reference; each lane's raw
// fragments against the PTX ISA's layout formulas (written here again, not
// taken from the prelude); misuse reported as failed launches; and the same
// source compiled by NVRTC.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "codegen/cuda_emulation.h"
#include "codegen/cuda_mma_prelude.h"
#include "codegen/cuda_prelude.h"
#include "codegen/nvrtc.h"
#include "compute/interpreter.h"
#include "runtime/module.h"
#include "support/emulated_module.h"
#include "support/launch_watchdog.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/test_seed.h"

using namespace kiln;
using kiln::testing::build_emulated;
using kiln::testing::Emulated;
using kiln::testing::substitute;
using Catch::Matchers::Contains;

namespace {

using Param = CudaKernelLaunch::Param;

std::string device_source(const std::string& kernels) {
  return cuda_prelude() + cuda_narrow_float_prelude() + cuda_mma_prelude() + kernels;
}

CudaKernelLaunch make_launch(const std::string& kernel, std::array<int64_t, 3> block, std::vector<Param> params) {
  CudaKernelLaunch l;
  l.kernel = kernel;
  l.block = block;
  l.params = std::move(params);
  return l;
}

Emulated build(const testing::TempDir& dir, const std::string& function, const std::string& kernels,
               std::vector<CudaKernelLaunch> launches) {
  return build_emulated(dir, function, device_source(kernels), std::move(launches));
}


// D (16 x 8 per warp) = C (or 0) + A (16 x 32) * B (32 x 8): the tiles are
// copied into shared arrays at offset 8 with padded rows, A by rows
// (Trans 0, ld 40) or by columns (Trans 1, ld 24), B by k rows (Trans 0,
// ld 24) or by n rows (Trans 1, ld 40), then two k tiles of 16 are loaded
// and multiplied. The result goes to global memory directly, or through a
// shared array (offset 4, ld 12) and a copy. Warp w (threadIdx.y) works on
// its own tiles: A + 512 w, B + 256 w, C and D + 128 w.
struct Variant {
  bool bf16;
  int ta, tb;
  bool zero;        // kiln_mma_zero, else C loaded by the fragment layout
  bool via_shared;  // kiln_mma_store to a shared array, else to D
  std::string name() const {
    return std::string(bf16 ? "bf16" : "f16") + "_a" + std::to_string(ta) + "_b" + std::to_string(tb) +
           (zero ? "_zero" : "_c") + (via_shared ? "_shared" : "_global");
  }
};

const char* const kProductKernel = R"(
extern "C" __global__ void $NAME(const kiln_half* __restrict__ A, const kiln_half* __restrict__ B,
                                 const float* __restrict__ C, float* __restrict__ D) {
  KILN_SHARED(kiln_half, As, $W * $SA);
  KILN_SHARED(kiln_half, Bs, $W * $SB);
  KILN_SHARED(float, Cs, $W * 196);
  const int w = threadIdx.y, lane = threadIdx.x;
  for (int i = lane; i < 512; i += 32) {
    const int m = i / 32, k = i % 32;
    As[w * $SA + 8 + ($TA ? k * $LDA + m : m * $LDA + k)] = A[w * 512 + i];
  }
  for (int i = lane; i < 256; i += 32) {
    const int k = i / 8, n = i % 8;
    Bs[w * $SB + 8 + ($TB ? n * $LDB + k : k * $LDB + n)] = B[w * 256 + i];
  }
  __syncthreads();
  float acc[4];
  if ($ZERO) {
    kiln_mma_zero(acc);
  } else {
    for (int i = 0; i < 4; ++i) acc[i] = C[w * 128 + (lane / 4 + 8 * (i >> 1)) * 8 + 2 * (lane % 4) + (i & 1)];
  }
  for (int kt = 0; kt < 2; ++kt) {
    unsigned short a[8], b[4];
    kiln_mma_load_a<$TA>(a, As, w * $SA + 8 + ($TA ? kt * 16 * $LDA : kt * 16), $LDA);
    kiln_mma_load_b<$TB>(b, Bs, w * $SB + 8 + ($TB ? kt * 16 : kt * 16 * $LDB), $LDB);
    $MMA(acc, a, b);
  }
  if ($VIA_SHARED) {
    kiln_mma_store(Cs, w * 196 + 4, 12, acc);
    __syncthreads();
    for (int i = lane; i < 128; i += 32) D[w * 128 + i] = Cs[w * 196 + 4 + (i / 8) * 12 + i % 8];
  } else {
    kiln_mma_store(D, w * 128, 8, acc);
  }
}
)";

std::string product_kernel(const Variant& v, int warps) {
  const int lda = v.ta ? 24 : 40, ldb = v.tb ? 40 : 24;
  const int sa = 8 + (v.ta ? 32 * lda : 16 * lda), sb = 8 + (v.tb ? 8 * ldb : 32 * ldb);
  return substitute(kProductKernel, {{"$NAME", v.name() + "_w" + std::to_string(warps)},
                                     {"$W", std::to_string(warps)},
                                     {"$SA", std::to_string(sa)},
                                     {"$SB", std::to_string(sb)},
                                     {"$LDA", std::to_string(lda)},
                                     {"$LDB", std::to_string(ldb)},
                                     {"$TA", std::to_string(v.ta)},
                                     {"$TB", std::to_string(v.tb)},
                                     {"$ZERO", v.zero ? "1" : "0"},
                                     {"$VIA_SHARED", v.via_shared ? "1" : "0"},
                                     {"$MMA", v.bf16 ? "kiln_mma_bf16" : "kiln_mma_f16"}});
}

// Every Trans mode of A and B, both types; initial accumulators and the
// output path vary with them so that each dtype covers both of each.
std::vector<Variant> all_variants() {
  std::vector<Variant> vs;
  for (bool bf16 : {false, true})
    for (int ta : {0, 1})
      for (int tb : {0, 1}) vs.push_back({bf16, ta, tb, ta == tb, ta == 1});
  return vs;
}

// Inputs for two warps: A (2 x 16 x 32) and B (2 x 32 x 8) of each type as
// 16-bit patterns, C (2 x 16 x 8) in f32, with magnitudes over a few octaves.
struct Inputs {
  std::vector<uint16_t> a16, b16, abf, bbf;
  std::vector<float> c;
  explicit Inputs(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
    std::uniform_int_distribution<int> expo(-4, 3);
    auto draw = [&] { return std::ldexp(mant(rng), expo(rng)); };
    for (int i = 0; i < 1024; ++i)
      a16.push_back(f16_bits_from_float(draw())), abf.push_back(bf16_bits_from_float(draw()));
    for (int i = 0; i < 512; ++i)
      b16.push_back(f16_bits_from_float(draw())), bbf.push_back(bf16_bits_from_float(draw()));
    for (int i = 0; i < 256; ++i) c.push_back(draw());
  }
};

// Checks warp w's D against the host: within 1e-5 of the magnitudes summed
// (a double reference), and bit for bit against f32 sums in k order, which
// is what the emulation promises (products of 16-bit values are exact).
void check_product(const Variant& v, const Inputs& in, const std::vector<float>& d, int w) {
  auto f32 = [&](uint16_t h) { return v.bf16 ? float_from_bf16_bits(h) : float_from_f16_bits(h); };
  const std::vector<uint16_t>& a = v.bf16 ? in.abf : in.a16;
  const std::vector<uint16_t>& b = v.bf16 ? in.bbf : in.b16;
  int bad = 0, inexact = 0;
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      const float c = v.zero ? 0.0f : in.c[w * 128 + m * 8 + n];
      double ref = c, mag = std::fabs(c);
      float seq = c;
      for (int k = 0; k < 32; ++k) {
        const float p = f32(a[w * 512 + m * 32 + k]) * f32(b[w * 256 + k * 8 + n]);
        ref += static_cast<double>(p);
        mag += std::fabs(static_cast<double>(p));
        seq += p;
      }
      const float got = d[w * 128 + m * 8 + n];
      if (std::fabs(got - ref) > 1e-5 * mag) {
        if (++bad <= 4) UNSCOPED_INFO("D(" << m << "," << n << ") = " << got << ", expected " << ref);
      }
      inexact += got != seq;
    }
  }
  INFO(v.name() << ", warp " << w);
  CHECK(bad == 0);
  CHECK(inexact == 0);
}

// Runs `variants` with `warps` warps per block in one module and checks them.
void run_products(const std::string& tag, const std::vector<Variant>& variants, int warps) {
  testing::TempDir dir("kiln_mma");
  const uint64_t seed = testing::run_seed();
  INFO(testing::seed_note(seed));
  const Inputs in(seed);
  std::string kernels;
  std::vector<CudaKernelLaunch> launches;
  std::vector<std::vector<float>> outs(variants.size(), std::vector<float>(256, -1.0f));
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    kernels += product_kernel(v, warps);
    const int a = v.bf16 ? 2 : 0, b = v.bf16 ? 3 : 1;
    launches.push_back(make_launch(
        v.name() + "_w" + std::to_string(warps), {32, warps, 1},
        {{"const kiln_half*", a}, {"const kiln_half*", b}, {"const float*", 4}, {"float*", 5 + static_cast<int>(i)}}));
  }
  Emulated e = build(dir, tag, kernels, launches);
  std::vector<uint16_t> a16 = in.a16, b16 = in.b16, abf = in.abf, bbf = in.bbf;
  std::vector<float> c = in.c;
  std::vector<void*> args{a16.data(), b16.data(), abf.data(), bbf.data(), c.data()};
  for (auto& o : outs) args.push_back(o.data());
  kiln::testing::LaunchWatchdog watchdog("test_cuda_mma", 300);
  REQUIRE(e.run(args) == 0);
  CHECK(e.error().empty());
  for (size_t i = 0; i < variants.size(); ++i) {
    for (int w = 0; w < warps; ++w) check_product(variants[i], in, outs[i], w);
  }
}

// Each lane's raw fragments: A and B loaded in each Trans mode from tiles
// whose elements hold their own coordinates (A(m,k) = 16m + k, B(k,n) =
// 8k + n, as bit patterns), and C after kiln_mma_zero and an f16 mma of the
// identity with B(k,n) = 8k + n (exact in f16), so that C(m,n) = 8m + n.
const char* const kLayoutKernel = R"(
extern "C" __global__ void layout(unsigned short* __restrict__ fa, unsigned short* __restrict__ fb,
                                  float* __restrict__ fc) {
  KILN_SHARED(kiln_half, A_rows, 8 + 16 * 24);
  KILN_SHARED(kiln_half, A_cols, 8 + 16 * 24);
  KILN_SHARED(kiln_half, B_krows, 8 + 16 * 24);
  KILN_SHARED(kiln_half, B_nrows, 8 + 8 * 24);
  KILN_SHARED(kiln_half, eye, 16 * 16);
  KILN_SHARED(kiln_half, bval, 16 * 8);
  const int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) {
    const int m = i / 16, k = i % 16;
    A_rows[8 + m * 24 + k] = i;
    A_cols[8 + k * 24 + m] = i;
    eye[i] = m == k ? kiln_f32_to_f16(1.0f) : 0;
  }
  for (int i = lane; i < 128; i += 32) {
    const int k = i / 8, n = i % 8;
    B_krows[8 + k * 24 + n] = i;
    B_nrows[8 + n * 24 + k] = i;
    bval[i] = kiln_f32_to_f16((float)i);
  }
  __syncthreads();
  unsigned short a[8], b[4];
  kiln_mma_load_a<0>(a, A_rows, 8, 24);
  for (int i = 0; i < 8; ++i) fa[lane * 8 + i] = a[i];
  kiln_mma_load_a<1>(a, A_cols, 8, 24);
  for (int i = 0; i < 8; ++i) fa[256 + lane * 8 + i] = a[i];
  kiln_mma_load_b<0>(b, B_krows, 8, 24);
  for (int i = 0; i < 4; ++i) fb[lane * 4 + i] = b[i];
  kiln_mma_load_b<1>(b, B_nrows, 8, 24);
  for (int i = 0; i < 4; ++i) fb[128 + lane * 4 + i] = b[i];
  float acc[4] = {7.0f, 7.0f, 7.0f, 7.0f};
  kiln_mma_zero(acc);
  kiln_mma_load_a<0>(a, eye, 0, 16);
  kiln_mma_load_b<0>(b, bval, 0, 8);
  kiln_mma_f16(acc, a, b);
  for (int i = 0; i < 4; ++i) fc[lane * 4 + i] = acc[i];
}
)";

// Misuse, one launch per mode on 80 threads (two full warps and one of 16;
// only warp 0 runs unless the mode says otherwise): 0: only lanes 0-15
// load; 1: every thread loads, warp 2 has 16 lanes; 2: the lanes of a warp
// pass different arrays; 3: a row is misaligned; 4: half the lanes load A,
// the others B; 5: warp 1 loads what warp 0 writes, with no
// __syncthreads() in between; 6: rows out of the array's bounds.
const char* const kMisuseKernel = R"(
extern "C" __global__ void misuse(const int* __restrict__ mode_p, unsigned short* __restrict__ out) {
  KILN_SHARED(kiln_half, As, 16 * 16);
  KILN_SHARED(kiln_half, Bs, 16 * 16);
  const int mode = *mode_p, lane = threadIdx.x % 32;
  unsigned short a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (threadIdx.x >= (mode == 1 ? 80 : mode == 5 ? 64 : 32)) return;
  if (mode == 0 && lane < 16) kiln_mma_load_a<0>(a, As, 0, 16);
  if (mode == 1) kiln_mma_load_a<0>(a, As, 0, 16);
  if (mode == 2) {
    if (lane < 16) kiln_mma_load_a<0>(a, As, 0, 16);
    else kiln_mma_load_a<0>(a, Bs, 0, 16);
  }
  if (mode == 3) kiln_mma_load_a<0>(a, As, 4, 16);
  if (mode == 4) {
    if (lane < 16) kiln_mma_load_a<0>(a, As, 0, 16);
    else kiln_mma_load_b<0>(a, Bs, 0, 8);
  }
  if (mode == 5) {
    if (threadIdx.x < 32) for (int i = lane; i < 256; i += 32) As[i] = i;
    else kiln_mma_load_a<0>(a, As, 0, 16);
  }
  if (mode == 6) kiln_mma_load_a<0>(a, As, 128, 16);
  out[threadIdx.x] = a[0];
}
)";

}  // namespace

TEST_CASE("emulated mma: f16 and bf16 products over two k tiles, every Trans mode, one warp",
          "[codegen][cuda][emulation][mma]") {
  SKIP_WITHOUT_COMPILER();
  run_products("mma_one_warp", all_variants(), 1);
}

TEST_CASE("emulated mma: two warps of a (32,2) block multiply their own tiles", "[codegen][cuda][emulation][mma]") {
  SKIP_WITHOUT_COMPILER();
  run_products("mma_two_warps", {{false, 1, 0, false, true}, {true, 0, 1, true, false}}, 2);
}

TEST_CASE("emulated mma: each lane's fragments follow the PTX ISA layout", "[codegen][cuda][emulation][mma]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mma");
  Emulated e =
      build(dir, "mma_layout", kLayoutKernel,
            {make_launch("layout", {32, 1, 1}, {{"unsigned short*", 0}, {"unsigned short*", 1}, {"float*", 2}})});
  std::vector<uint16_t> fa(512), fb(256);
  std::vector<float> fc(128);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_mma", 120);
  REQUIRE(e.run({fa.data(), fb.data(), fc.data()}) == 0);
  for (int lane = 0; lane < 32; ++lane) {
    INFO("lane " << lane);
    const int g = lane / 4, t = lane % 4;
    // a0,a1 = (g, 2t..), a2,a3 = (g+8, 2t..), a4,a5 = (g, 2t+8..), a6,a7 = (g+8, 2t+8..)
    const int a_row[8] = {g, g, g + 8, g + 8, g, g, g + 8, g + 8};
    const int a_col[8] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9, 2 * t + 8, 2 * t + 9};
    for (int trans = 0; trans < 2; ++trans) {
      for (int i = 0; i < 8; ++i) {
        INFO("A, Trans " << trans << ", a" << i);
        CHECK(fa[trans * 256 + lane * 8 + i] == a_row[i] * 16 + a_col[i]);
      }
    }
    // b0,b1 = (k 2t.., n g), b2,b3 = (k 2t+8.., n g)
    const int b_k[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
    for (int trans = 0; trans < 2; ++trans) {
      for (int i = 0; i < 4; ++i) {
        INFO("B, Trans " << trans << ", b" << i);
        CHECK(fb[trans * 128 + lane * 4 + i] == b_k[i] * 8 + g);
      }
    }
    // c0,c1 = (g, 2t..), c2,c3 = (g+8, 2t..)
    const int c_row[4] = {g, g, g + 8, g + 8}, c_col[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int i = 0; i < 4; ++i) {
      INFO("c" << i);
      CHECK(fc[lane * 4 + i] == static_cast<float>(c_row[i] * 8 + c_col[i]));
    }
  }
}

TEST_CASE("emulated mma: warp-collective loads from part of a warp fail the launch with a message",
          "[codegen][cuda][emulation][mma]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mma");
  Emulated e = build(dir, "mma_misuse", kMisuseKernel,
                     {make_launch("misuse", {80, 1, 1}, {{"const int*", 0}, {"unsigned short*", 1}})});
  std::vector<uint16_t> out(80);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_mma", 120);
  auto run_mode = [&](int mode) {
    int m = mode;
    CHECK(e.run({&m, out.data()}) != 0);
    return e.error();
  };
  CHECK_THAT(run_mode(0), Contains("kiln_mma_load_a (ldmatrix.x4) is warp-collective: all 32 lanes of warp 0 must "
                                   "call it together, but they did not in block (0,0,0) of kernel misuse"));
  CHECK_THAT(run_mode(1), Contains("kiln_mma_load_a (ldmatrix.x4) is warp-collective and needs all 32 lanes of a "
                                   "warp, but warp 2 in block (0,0,0) of kernel misuse has only 16 (block (80,1,1))"));
  CHECK_THAT(run_mode(2), Contains("passes the shared array ") && Contains("As") && Contains("Bs") &&
                              Contains("every lane of the warp must pass the same array"));
  CHECK_THAT(run_mode(3), Contains("supplies the row at As[4], which is not 16-byte aligned"));
  CHECK_THAT(run_mode(4), Contains("meet in different warp-level operations") &&
                              Contains("kiln_mma_load_a (ldmatrix.x4)") &&
                              Contains("kiln_mma_load_b (ldmatrix.x2.trans)"));
  // ldmatrix reads through the checked shared arrays: races and bounds apply.
  CHECK_THAT(run_mode(5), Contains("shared-memory race on As[") && Contains("no __syncthreads() in between"));
  CHECK_THAT(run_mode(6), Contains("is out of bounds of As[256] in block (0,0,0) of kernel misuse"));
}

TEST_CASE("NVRTC compiles the tensor-core prelude to ldmatrix and mma.sync for sm_80 and sm_90",
          "[codegen][cuda][nvrtc][mma]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  std::string kernels = kLayoutKernel;
  for (const Variant& v : all_variants()) kernels += product_kernel(v, 1);
  kernels += product_kernel({true, 1, 1, false, true}, 2);
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    NvrtcOutput out = nvrtc_compile(device_source(kernels), "mma.cu", arch);
    CHECK(!out.cubin.empty());
    for (const char* insn :
         {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
          "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
          "ldmatrix.sync.aligned.m8n8.x2.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "%laneid"}) {
      INFO(insn);
      CHECK(out.ptx.find(insn) != std::string::npos);
    }
    // The fragments stay in registers: no kernel needs a stack frame.
    REQUIRE(out.resources.size() == 10);
    for (const CudaKernelResources& r : out.resources) {
      INFO(r.kernel);
      CHECK(r.stack_bytes == 0);
      CHECK(r.spill_store_bytes == 0);
    }
  }
}
