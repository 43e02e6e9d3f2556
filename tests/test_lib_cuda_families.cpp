// The fallback kernels of cuda libraries (library/cuda_fallback_kernels.h)
// without a GPU: their CUDA C is built once as an emulated module, and each
// kernel is launched the way a library's dispatcher launches it (the stand-in
// driver's per-kernel launchers, codegen/cuda_emulation.h) on awkward shapes
// (1, primes, odd sizes; strides, padding, dilation; every epilogue; f32,
// f16 and bf16), its output compared with the reference interpreter. Then
// the same source is compiled by NVRTC for sm_80 and sm_90. Last, a library
// with tuned convolutions and pools (f32, f16, bf16) built with emulated
// images and loaded under the stand-in driver: its dispatchers on the tuned
// shapes and on untuned ones, and its entry points, against the interpreter,
// and the dispatchers' argument errors.
#include <dlfcn.h>

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <deque>
#include <map>
#include <utility>

#include "codegen/cuda_emulation.h"
#include "codegen/nvrtc.h"
#include "codegen/runtime_dtype.h"
#include "kernels/conv2d_common.h"
#include "library/cuda_fallback_kernels.h"
#include "library/cuda_library_families.h"
#include "runtime/ndarray.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "tasks/reference_check.h"
#include "tests/lib_cuda_test_util.h"
#include "tests/lib_test_util.h"
#include "kernels/op_registry.h"
#include "library/library_builder.h"

namespace kiln {
namespace {

using Launcher = int (*)(const unsigned*, const unsigned*, unsigned, unsigned, void**);

// A kernel's parameter values, each at a stable address (cuLaunchKernel's params).
struct Params {
  std::deque<long long> sizes;
  std::deque<int> flags;
  std::deque<void*> pointers;
  std::vector<void*> values;
  void size(int64_t v) { values.push_back(&sizes.emplace_back(v)); }
  void flag(int v) { values.push_back(&flags.emplace_back(v)); }
  void pointer(void* p) { values.push_back(&pointers.emplace_back(p)); }
};

// The kernel a dispatcher of the op's family launches for it, and its
// parameters (as cuda_fallback_call passes them), on the op's buffers.
struct Call {
  std::string kind;
  Params params;
  int64_t items = 0;
};

Call fallback_call_of(const OpInstance& op, const std::vector<rt::NDArray>& a) {
  std::string why;
  const std::string family = cuda_family_name(op, &why);
  INFO(why);
  REQUIRE(!family.empty());
  const CudaFamily f = cuda_family(family);
  auto at = [&](const char* n) { return op.ints.at(n); };
  Call c;
  Params& p = c.params;
  void* none = nullptr;
  void* bias = f.bias ? a[2].data() : none;
  void* out = a.back().data();
  if (f.op == "matmul" || f.op == "dense" || f.op == "batch_matmul") {
    c.kind = "gemm";
    const bool dense = f.op == "dense";
    const int64_t batch = f.op == "batch_matmul" ? at("B") : 1;
    const int64_t M = at(dense ? "N" : "M"), N = at(dense ? "OUT" : "N"), K = at(dense ? "IN" : "K");
    for (int64_t v : {batch, M, N, K}) p.size(v);
    for (void* q : {a[0].data(), a[1].data(), bias, out}) p.pointer(q);
    p.flag(dense ? 1 : 0);
    p.flag(f.act);
    c.items = batch * M * N;
  } else if (f.window && f.op.find("pool") == std::string::npos) {
    c.kind = "conv2d";
    const bool depthwise = f.op == "depthwise_conv2d";
    const int64_t C = at("C"), K = depthwise ? C : at("K");
    const int64_t OH = window_out_extent(at("H"), at("R"), at("stride"), at("pad"), at("dilation"));
    const int64_t OW = window_out_extent(at("W"), at("S"), at("stride"), at("pad"), at("dilation"));
    for (int64_t v : {at("N"), C, at("H"), at("W"), K, at("R"), at("S"), at("stride"), at("pad"), at("dilation"),
                      depthwise ? C : int64_t{1}, OH, OW})
      p.size(v);
    for (void* q : {a[0].data(), a[1].data(), bias, out}) p.pointer(q);
    p.flag(f.op == "conv2d_nhwc" ? 1 : 0);
    p.flag(f.act);
    c.items = at("N") * K * OH * OW;
  } else if (f.window) {
    c.kind = "pool2d";
    const int64_t OH = window_out_extent(at("H"), at("R"), at("stride"), at("pad"), 1);
    const int64_t OW = window_out_extent(at("W"), at("S"), at("stride"), at("pad"), 1);
    for (int64_t v : {at("N"), at("C"), at("H"), at("W"), at("R"), at("S"), at("stride"), at("pad"), OH, OW})
      p.size(v);
    p.pointer(a[0].data());
    p.pointer(out);
    p.flag(f.op == "avg_pool2d" ? 1 : 0);
    c.items = at("N") * at("C") * OH * OW;
  } else {
    c.kind = f.op;
    p.size(at("M"));
    p.size(at("N"));
    for (size_t i = 0; i < a.size(); ++i) p.pointer(a[i].data());
    c.items = at("M");
  }
  return c;
}

// The op's buffers (inputs, then the output), inputs random.
std::vector<rt::NDArray> buffers_of(const OpInstance& op, uint64_t seed) {
  std::vector<rt::NDArray> arrays;
  const std::vector<Tensor> args = op.args();
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<int64_t> shape;
    for (const Expr& e : args[i].shape()) shape.push_back(*as_const_int(e));
    rt::NDArray t = rt::NDArray::empty(shape, to_runtime_dtype(args[i].dtype()));
    if (i < op.inputs.size())
      t.fill_random(seed + i);
    else
      t.fill_zero();
    arrays.push_back(t);
  }
  return arrays;
}

// "" when the op's output in `arrays` matches the interpreter's.
std::string check_against_interpreter(const OpInstance& op, const std::vector<rt::NDArray>& arrays, uint64_t seed) {
  const std::vector<rt::NDArray> ins(arrays.begin(), arrays.begin() + static_cast<long>(op.inputs.size()));
  const std::vector<rt::NDArray> outs(arrays.begin() + static_cast<long>(op.inputs.size()), arrays.end());
  const CheckResult r = check_outputs(op, ins, outs, seed);
  return r.ok ? "" : r.detail;
}

// Runs the fallback kernel of `workload` in the emulated module `so`; "" when
// its output matches the interpreter's.
std::string run_fallback(void* so, const std::string& workload, uint64_t seed) {
  const OpInstance op = build_workload(workload);
  const std::vector<rt::NDArray> arrays = buffers_of(op, seed);
  Call c = fallback_call_of(op, arrays);
  const std::string kernel = "kiln_fallback_" + c.kind + "_" + op.dtype.str();
  auto launch = reinterpret_cast<Launcher>(dlsym(so, (kEmulatedKernelPrefix + kernel).c_str()));
  if (!launch) return "the module has no kernel " + kernel;
  const unsigned grid[3] = {static_cast<unsigned>((c.items + 127) / 128), 1, 1}, block[3] = {128, 1, 1};
  if (launch(grid, block, 0, 0, c.params.values.data()) != 0) return kernel + ": the emulated launch failed";
  const std::string wrong = check_against_interpreter(op, arrays, seed);
  return wrong.empty() ? "" : kernel + ": " + wrong;
}

const std::vector<std::string> kF32 = {
    "matmul:M=1,N=1,K=1",
    "matmul:M=7,N=13,K=5,bias=1,gelu=1",
    "matmul:M=3,N=17,K=11,bias=1,relu=1",
    "dense:N=5,IN=7,OUT=3,bias=1,relu=1",
    "batch_matmul:B=3,M=5,N=2,K=7",
    "conv2d:N=1,C=1,H=1,W=1,K=1,R=1,S=1",
    "conv2d:N=2,C=3,H=7,W=5,K=5,R=3,S=2,stride=2,pad=1,bias=1,relu6=1",
    "conv2d:N=1,C=5,H=11,W=13,K=3,R=3,S=3,pad=2,dilation=2,hswish=1",
    "conv2d:N=1,C=2,H=6,W=5,K=7,R=2,S=3,stride=3,bias=1,hsigmoid=1",
    "conv2d_nhwc:N=2,H=5,W=7,C=3,K=5,R=3,S=3,stride=2,pad=1,bias=1,relu=1",
    "conv2d_nhwc:N=1,H=9,W=6,C=7,K=2,R=2,S=3,pad=2,dilation=3,hsigmoid=1",
    "conv2d_nhwc:N=1,H=1,W=1,C=1,K=1,R=1,S=1",
    "depthwise_conv2d:N=2,C=5,H=7,W=9,R=3,S=3,stride=2,pad=1,bias=1,relu6=1",
    "depthwise_conv2d:N=1,C=3,H=13,W=5,R=5,S=2,pad=2,dilation=2,hswish=1",
    "max_pool2d:N=1,C=1,H=1,W=1,R=1,S=1",
    "max_pool2d:N=2,C=3,H=7,W=5,R=3,S=2,stride=2,pad=1",
    "avg_pool2d:N=1,C=3,H=13,W=7,R=3,S=3,stride=2,pad=1",
    "avg_pool2d:N=2,C=2,H=5,W=11,R=5,S=4,stride=3,pad=2",
    "softmax:M=3,N=301",
    "layer_norm:M=7,N=19",
};

const std::vector<std::string> kNarrow = {
    "matmul:M=7,N=13,K=5,bias=1,gelu=1",
    "dense:N=3,IN=9,OUT=5,bias=1,relu=1",
    "batch_matmul:B=2,M=3,N=5,K=7",
    "conv2d:N=1,C=3,H=7,W=5,K=5,R=3,S=2,stride=2,pad=1,bias=1,hsigmoid=1",
    "conv2d_nhwc:N=2,H=5,W=7,C=3,K=5,R=3,S=3,stride=2,pad=1,bias=1,relu6=1",
    "depthwise_conv2d:N=1,C=5,H=7,W=9,R=3,S=3,pad=2,dilation=2,bias=1,hswish=1",
    "max_pool2d:N=1,C=3,H=7,W=5,R=3,S=2,stride=2,pad=1",
    "avg_pool2d:N=1,C=2,H=5,W=11,R=5,S=4,stride=3,pad=2",
    "softmax:M=3,N=37",
    "layer_norm:M=5,N=19",
};

TEST_CASE("lib_cuda fallback kernels: every family, epilogue and dtype against the interpreter", "[lib][emulation]") {
  if (host_cxx_compiler().empty()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  testing::TempDir dir("kiln_lib_cuda_fallback");
  const CudaSource src = cuda_fallback_source();
  REQUIRE(src.launches.size() == cuda_fallback_kernels().size());
  const EmulatedModule em = build_emulated_module(src, dir.path);
  void* so = dlopen(em.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(so);
  uint64_t seed = 100;
  for (const std::string& w : kF32) {
    INFO(w);
    CHECK(run_fallback(so, w, seed++) == "");
  }
  for (const char* dtype : {"f16", "bf16"})
    for (const std::string& w : kNarrow) {
      const std::string workload = w + ",dtype=" + dtype;
      INFO(workload);
      CHECK(run_fallback(so, workload, seed++) == "");
    }
  dlclose(so);
}

TEST_CASE("lib_cuda fallback kernels: NVRTC compiles them for sm_80 and sm_90", "[lib]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not installed: " << why);
  const CudaSource src = cuda_fallback_source();
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    const NvrtcOutput out = nvrtc_compile(src.code, "kiln_fallback.cu", arch);
    CHECK(!out.cubin.empty());
    CHECK(out.resources.size() == cuda_fallback_kernels().size());
    for (const CudaKernelResources& r : out.resources) {
      INFO(r.kernel);
      CHECK(r.registers > 0);
      CHECK(r.spill_store_bytes == 0);
    }
  }
}

// ---- a library's dispatchers and entry points ----

// Calls a library function (int64_t sizes..., buffers..., void* stream): every
// parameter is one 8-byte integer-class value, so buffer pointers of any type
// pass as void*.
template <size_t... I, size_t... J>
int call_with(void* fn, const std::vector<int64_t>& s, const std::vector<void*>& b, std::index_sequence<I...>,
              std::index_sequence<J...>) {
  using Fn = int (*)(std::conditional_t<true, int64_t, std::integral_constant<size_t, I>>...,
                     std::conditional_t<true, void*, std::integral_constant<size_t, J>>..., void*);
  return reinterpret_cast<Fn>(fn)(s[I]..., b[J]..., nullptr);
}

template <size_t NS>
int call_sizes(void* fn, const std::vector<int64_t>& s, const std::vector<void*>& b) {
  auto seq = std::make_index_sequence<NS>{};
  if (b.size() == 2) return call_with(fn, s, b, seq, std::make_index_sequence<2>{});
  if (b.size() == 3) return call_with(fn, s, b, seq, std::make_index_sequence<3>{});
  REQUIRE(b.size() == 4);
  return call_with(fn, s, b, seq, std::make_index_sequence<4>{});
}

int call_library(void* fn, const std::vector<int64_t>& s, const std::vector<void*>& b) {
  REQUIRE(fn);
  switch (s.size()) {
    case 0:
      return call_sizes<0>(fn, s, b);
    case 3:
      return call_sizes<3>(fn, s, b);
    case 8:
      return call_sizes<8>(fn, s, b);
    case 9:
      return call_sizes<9>(fn, s, b);
    default:
      REQUIRE(s.size() == 10);
      return call_sizes<10>(fn, s, b);
  }
}

struct LoadedLibrary {
  void* so = nullptr;
  explicit LoadedLibrary(const std::string& path) : so(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~LoadedLibrary() {
    if (so) dlclose(so);
  }
  void* symbol(const std::string& name) const { return dlsym(so, name.c_str()); }
  std::string last_error() const {
    auto fn = reinterpret_cast<const char* (*)()>(symbol("kf_last_error"));
    return fn ? fn() : "no kf_last_error";
  }
  int synchronize() const { return reinterpret_cast<int (*)(void*)>(symbol("kf_synchronize"))(nullptr); }
};

// Runs `workload` through the library's dispatcher of its family (or the
// entry point `entry`); "" when the output matches the interpreter's.
std::string run_library(const LoadedLibrary& lib, const std::string& workload, const std::string& entry,
                        uint64_t seed) {
  const OpInstance op = build_workload(workload);
  std::string why;
  const CudaFamily f = cuda_family(cuda_family_name(op, &why));
  std::vector<rt::NDArray> arrays = buffers_of(op, seed);
  std::vector<int64_t> sizes;
  if (entry.empty())
    for (const std::string& p : f.size_params) sizes.push_back(op.ints.at(p));
  std::vector<void*> buffers;
  for (const rt::NDArray& a : arrays) buffers.push_back(a.data());  // the stand-in's device memory is host memory
  const std::string fn = entry.empty() ? "kf_" + f.name + "_" + op.dtype.str() : entry;
  const int rc = call_library(lib.symbol(fn), sizes, buffers);
  if (rc != 0) return fn + " returned " + std::to_string(rc) + ": " + lib.last_error();
  if (lib.synchronize() != 0) return "kf_synchronize: " + lib.last_error();
  const std::string wrong = check_against_interpreter(op, arrays, seed);
  return wrong.empty() ? "" : fn + ": " + wrong;
}

// The tuned workloads of the library kf, and untuned shapes of their families.
const std::vector<std::pair<std::string, std::vector<std::string>>> kLibraryWorkloads = {
    {"conv2d_nhwc:N=1,H=6,W=6,C=4,K=8,R=3,S=3,pad=1,bias=1,relu=1",
     {"conv2d_nhwc:N=2,H=5,W=7,C=3,K=5,R=3,S=3,stride=2,pad=1,bias=1,relu=1",
      "conv2d_nhwc:N=1,H=9,W=6,C=7,K=2,R=2,S=3,pad=2,dilation=3,bias=1,relu=1"}},
    {"conv2d:N=1,C=3,H=8,W=8,K=4,R=3,S=3,stride=2,pad=1,dtype=f16",
     {"conv2d:N=2,C=3,H=7,W=5,K=5,R=3,S=2,stride=2,pad=1,dtype=f16", "conv2d:N=1,C=1,H=1,W=1,K=1,R=1,S=1,dtype=f16"}},
    {"depthwise_conv2d:N=1,C=4,H=7,W=7,R=3,S=3,pad=1,bias=1,relu6=1",
     {"depthwise_conv2d:N=2,C=5,H=7,W=9,R=3,S=3,stride=2,pad=1,bias=1,relu6=1",
      "depthwise_conv2d:N=1,C=3,H=13,W=5,R=5,S=2,pad=2,dilation=2,bias=1,relu6=1"}},
    {"max_pool2d:N=1,C=3,H=8,W=8,R=2,S=2,stride=2",
     {"max_pool2d:N=2,C=3,H=7,W=5,R=3,S=2,stride=2,pad=1", "max_pool2d:N=1,C=1,H=1,W=1,R=1,S=1"}},
    {"avg_pool2d:N=1,C=3,H=7,W=7,R=3,S=3,stride=2,pad=1,dtype=bf16",
     {"avg_pool2d:N=2,C=2,H=5,W=11,R=5,S=4,stride=3,pad=2,dtype=bf16"}},
};

const std::string kDynamicShared = "matmul:M=128,N=128,K=64,dtype=f16";

TEST_CASE(
    "lib_cuda families: convolutions, pools and a GEMM past 48 KiB of shared memory through a library's dispatchers",
    "[lib][emulation]") {
  if (host_cxx_compiler().empty()) KILN_SKIP("no host C++ compiler for the emulated kernels");
  if (test::shell("command -v clang-14 || command -v clang").status != 0) KILN_SKIP("no clang for the library's C code");
  testing::TempDir dir("kiln_lib_cuda_families");
  const std::string db = dir / "cuda.db";
  {
    auto d = Database::open(db);
    for (const auto& [tuned, untuned] : kLibraryWorkloads) test::add_cuda_record(*d, tuned, "cuda -arch=sm_90", 0.01);
    // A tensor-core block of 65536 bytes (its staging tile; the k tiles'
    // slots reuse them): dynamic shared memory, which the library opts its
    // kernel in to when it loads.
    test::add_cuda_record(*d, kDynamicShared, "cuda -arch=sm_90", 0.01, -1,
                          R"({"tensor_core":"mma","mma_m":[1,2,4],"mma_n":[1,2,8],"mma_k":[2,2],"stages":2})");
  }
  test::ImageKind kind("emulated");
  LibraryOptions o;
  o.db_path = db;
  o.out_dir = dir / "out";
  o.name = "kf";
  o.target = "cuda -arch=sm_90";
  const LibraryResult built = build_library(o);
  REQUIRE(built.kernels.size() == kLibraryWorkloads.size() + 1);
  std::map<std::string, std::string> entries;  // canonical workload -> entry point
  for (const LibraryKernel& k : built.kernels) entries[k.workload] = k.entry;

  const std::string header = test::read_text(dir / "out/kf.h");
  CHECK(header.find("int kf_conv2d_f16(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, "
                    "int64_t stride, int64_t pad, int64_t dilation, const uint16_t* data, const uint16_t* weight, "
                    "uint16_t* out, void* stream);") != std::string::npos);
  CHECK(header.find("int kf_conv2d_nhwc_bias_relu_f32(int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, int64_t "
                    "R, int64_t S, int64_t stride, int64_t pad, int64_t dilation, const float* data, const float* "
                    "weight, const float* bias, float* out, void* stream);") != std::string::npos);
  CHECK(header.find("int kf_depthwise_conv2d_bias_relu6_f32(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, "
                    "int64_t S, int64_t stride, int64_t pad, int64_t dilation,") != std::string::npos);
  CHECK(header.find("int kf_avg_pool2d_bf16(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, "
                    "int64_t stride, int64_t pad, const uint16_t* data, uint16_t* out, void* stream);") !=
        std::string::npos);
  CHECK(header.find("#define kf_HAVE_max_pool2d_f32 1") != std::string::npos);

  setenv("KILN_LIBCUDA", KILN_FAKE_LIBCUDA, 1);
  const LoadedLibrary lib(dir / "out/libkf.so");
  REQUIRE(lib.so);
  uint64_t seed = 500;
  for (const auto& [tuned, untuned] : kLibraryWorkloads) {
    INFO(tuned);
    const std::string canonical = build_workload(tuned).canonical;
    REQUIRE(entries.count(canonical));
    CHECK(run_library(lib, tuned, "", seed++) == "");
    CHECK(run_library(lib, tuned, entries[canonical], seed++) == "");
    for (const std::string& w : untuned) {
      INFO(w);
      CHECK(run_library(lib, w, "", seed++) == "");
    }
  }

  {
    INFO(kDynamicShared);
    const auto manifest = nlohmann::json::parse(test::read_text(dir / "out/kf.json"));
    int64_t dynamic = 0;
    for (const auto& k : manifest.at("kernels"))
      for (const auto& l : k.at("launches")) dynamic = std::max(dynamic, l.at("dynamic_shared_bytes").get<int64_t>());
    CHECK(dynamic == 65536);
    const std::string canonical = build_workload(kDynamicShared).canonical;
    CHECK(run_library(lib, kDynamicShared, "", seed++) == "");
    CHECK(run_library(lib, kDynamicShared, entries[canonical], seed++) == "");
  }

  // Argument errors: each a clear message, nothing launched.
  std::vector<void*> bufs(4, &seed);
  void* conv = lib.symbol("kf_conv2d_nhwc_bias_relu_f32");
  void* pool = lib.symbol("kf_max_pool2d_f32");
  struct Bad {
    void* fn;
    std::vector<int64_t> sizes;
    size_t buffers;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {conv, {1, 6, 6, 4, 8, 3, 3, 0, 1, 1}, 4, "kf_conv2d_nhwc_bias_relu_f32: stride is 0; it must be >= 1"},
      {conv, {1, 6, 6, -4, 8, 3, 3, 1, 1, 1}, 4, "kf_conv2d_nhwc_bias_relu_f32: C is -4; it must be >= 0"},
      {conv, {1, 2, 2, 4, 8, 3, 5, 1, 1, 2}, 4,
       "kf_conv2d_nhwc_bias_relu_f32: the window (3x5, dilation 2) does not fit the padded input (4x4)"},
      {conv, {1, 6, 6, 4, 8, 3, 3, 1, int64_t{1} << 40, 1}, 4, "pad is 1099511627776, too large (at most 2147483647)"},
      {pool, {1, 3, 8, 8, 2, 2, 2, 2}, 2, "kf_max_pool2d_f32: pad (2) must be smaller than the window (2x2)"},
      {pool, {1 << 30, 1 << 30, 1 << 20, 1 << 20, 1, 1, 1, 0}, 2, "the sizes are too large"},
  };
  for (const Bad& b : bad) {
    INFO(b.message);
    CHECK(call_library(b.fn, b.sizes, std::vector<void*>(bufs.begin(), bufs.begin() + static_cast<long>(b.buffers))) ==
          1);  // kf_ERROR_ARGUMENT
    CHECK(lib.last_error().find(b.message) != std::string::npos);
  }
  {
    std::vector<void*> with_null(bufs.begin(), bufs.begin() + 4);
    with_null[2] = nullptr;
    CHECK(call_library(conv, {1, 6, 6, 4, 8, 3, 3, 1, 1, 1}, with_null) == 1);
    CHECK(lib.last_error().find("kf_conv2d_nhwc_bias_relu_f32: bias is NULL") != std::string::npos);
  }
  // An empty output launches nothing and succeeds.
  CHECK(call_library(pool, {0, 3, 8, 8, 2, 2, 2, 0}, std::vector<void*>(bufs.begin(), bufs.begin() + 2)) == 0);
}

}  // namespace
}  // namespace kiln
