// LLVM backend outside the JIT: target strings, cross-compiled objects,
// assembly and IR properties, shared objects loaded by the runtime, user errors
// and compile time.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "codegen/alignment.h"
#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/tensor.h"
#include "runtime/module.h"
#include "runtime/workspace.h"
#include "schedule/lower.h"
#include "support/temp_dir.h"
#include "test_codegen_util.h"
#include "support/skip.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// C[i*16 .. +16] = A[..] * B[..] + C[..]: one 16-lane FMA per iteration.
LoweredFunc fma16(const std::string& name, int64_t n = 256) {
  BufferArg A = buffer("A", DType::f32(), {n}), B = buffer("B", DType::f32(), {n}), C = buffer("C", DType::f32(), {n});
  Var i("i");
  Expr idx = ramp(i * 16, 1, 16);
  return func(name, {A, B, C}, loop(i, n / 16, st(C, ld(A, idx) * ld(B, idx) + ld(C, idx), idx)));
}

// A kernel that exercises parallel outlining, vectors and a local tile.
LoweredFunc mixed_kernel(const std::string& name, int64_t rows = 48) {
  BufferArg A = buffer("A", DType::f32(), {rows * 16}), C = buffer("C", DType::f32(), {rows * 16});
  Var i("i"), k("k");
  Var acc = Var::handle("acc", DType::f32());
  Expr lane = ramp(Expr(0), 1, 16);
  Stmt init = StoreNode::make(acc, BroadcastNode::make(0.0f, 16), lane);
  Stmt update = loop(k, 4,
                     StoreNode::make(acc,
                                     LoadNode::make(DType::f32().with_lanes(16), acc, lane) +
                                         CallNode::make(MathOp::kTanh, {ld(A, ramp(i * 16, 1, 16))}) *
                                             BroadcastNode::make(CastNode::make(DType::f32(), k), 16),
                                     lane));
  Stmt out = st(C, LoadNode::make(DType::f32().with_lanes(16), acc, lane), ramp(i * 16, 1, 16));
  Stmt body = AllocateNode::make(acc, DType::f32(), {Expr(16)}, MemScope::kLocal, SeqNode::make({init, update, out}));
  return func(name, {A, C}, loop(i, rows, body, ForKind::kParallel));
}

uint16_t elf_machine(const std::vector<char>& obj) {
  REQUIRE(obj.size() > 20);
  return static_cast<uint16_t>(static_cast<unsigned char>(obj[18]) | (static_cast<unsigned char>(obj[19]) << 8));
}

}  // namespace

TEST_CASE("target strings parse, print and round-trip", "[codegen][target]") {
  Target t = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx2,+avx512f");
  CHECK(t.kind == "llvm");
  CHECK(t.triple == "x86_64-unknown-linux-gnu");
  CHECK(t.cpu == "znver3");
  CHECK(t.attrs == "+avx2,+avx512f");
  CHECK(t.vector_bits() == 512);
  CHECK(Target::parse(t.str()) == t);
  CHECK(Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3").vector_bits() == 256);
  CHECK(Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512").vector_bits() == 512);
  CHECK(Target::parse("llvm -mtriple=x86_64-linux-gnu").vector_bits() == 128);

  Target arm = Target::parse("llvm -mtriple=aarch64-linux-gnu");
  CHECK(arm.cpu == "generic");
  CHECK(arm.vector_bits() == 128);
  CHECK(!arm.is_host());

  Target cuda = Target::parse("cuda -arch=sm_90");
  CHECK(cuda.kind == "cuda");
  CHECK(cuda.arch == "sm_90");
  CHECK(cuda.str() == "cuda -arch=sm_90");
  CHECK(!cuda.is_host());

  Target host = Target::host();
  CHECK(host.is_host());
  CHECK(Target::parse(host.str()) == host);
  CHECK(Target::parse("llvm") == host);
}

TEST_CASE("host target keeps AVX-512 features the CPU name does not imply", "[codegen][target]") {
  if (!host_has_avx512f()) {
    KILN_SKIP("host has no avx512f");
  }
  Target host = Target::host();
  INFO(host.str());
  CHECK(host.attrs.find("+avx512f") != std::string::npos);
  CHECK(host.vector_bits() == 512);
}

TEST_CASE("target string errors are user errors in the user's terms", "[codegen][target]") {
  auto fails_with = [](const std::string& s, const std::string& msg) {
    INFO(s);
    CHECK_THAT(user_error_of([&] { Target::parse(s); }), Catch::Contains(msg));
  };
  fails_with("llvm -foo=bar", "unknown option '-foo'");
  fails_with("llvm -mtriple=nonsense-foo-bar", "unknown target triple 'nonsense-foo-bar'");
  fails_with("llvm mtriple", "malformed option 'mtriple'");
  fails_with("llvm -mtriple=", "malformed option '-mtriple='");
  fails_with("opencl", "unknown target kind 'opencl'");
  fails_with("", "empty target string");
  CHECK(Target::parse("cuda").str() == "cuda -arch=sm_90");
  CHECK(Target::parse("cuda -arch=sm_90a").arch == "sm_90a");
  fails_with("cuda -arch=sm_60", "unknown CUDA architecture 'sm_60'");
  fails_with("cuda -arch=volta", "-arch must look like sm_90");
  fails_with("cuda -mcpu=x", "unknown option '-mcpu' for a cuda target");
  fails_with("llvm -mtriple=x86_64-linux-gnu -mcpu=notacpu", "unknown CPU 'notacpu'");
  fails_with("llvm -mtriple=x86_64-linux-gnu -mattr=avx2", "+feature or -feature");
  fails_with("llvm -mtriple=x86_64-linux-gnu -mattr=+avx513", "unknown feature 'avx513'");
  fails_with("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mcpu=znver2", "given twice");
}

TEST_CASE("emit_object cross-compiles ELF for x86-64 and AArch64", "[codegen][object]") {
  std::vector<LoweredFunc> funcs = {fma16("fma_obj"), mixed_kernel("mixed_obj")};
  std::vector<char> x86 = emit_object(funcs, Target::parse("llvm -mtriple=x86_64-linux-gnu"));
  REQUIRE(x86.size() > 64);
  CHECK(std::string(x86.data(), 4) ==
        "\x7f"
        "ELF");
  CHECK(elf_machine(x86) == 62);  // EM_X86_64
  std::vector<char> arm = emit_object(funcs, Target::parse("llvm -mtriple=aarch64-linux-gnu"));
  CHECK(std::string(arm.data(), 4) ==
        "\x7f"
        "ELF");
  CHECK(elf_machine(arm) == 183);  // EM_AARCH64
  // The baseline CPU of a triple whose backend has no CPU named "generic".
  std::vector<char> riscv = emit_object(funcs, Target::parse("llvm -mtriple=riscv64-linux-gnu"));
  CHECK(elf_machine(riscv) == 243);  // EM_RISCV
}

TEST_CASE("host assembly of a 16-lane FMA loop uses zmm registers and vfmadd", "[codegen][asm]") {
  if (!host_has_avx512f()) {
    KILN_SKIP("host has no avx512f");
  }
  std::string asm_text = emit_assembly({fma16("fma_asm")}, Target::host());
  CHECK(asm_text.find("zmm") != std::string::npos);
  CHECK(asm_text.find("vfmadd") != std::string::npos);
}

TEST_CASE("optimized IR: copy and fill loops stay loops, not memcpy or memset calls", "[codegen][ir]") {
  const Target avx512 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx512f");
  BufferArg A = buffer("A", DType::f32(), {4096}), C = buffer("C", DType::f32(), {4096}),
            Z = buffer("Z", DType::f32(), {4096});
  Var i("i"), j("j");
  Expr idx = ramp(i * 16, 1, 16);
  Stmt copy = loop(i, 256, st(C, ld(A, idx), idx));
  Stmt fill = loop(j, 256, st(Z, BroadcastNode::make(0.0f, 16), ramp(j * 16, 1, 16)));
  std::string ir = emit_llvm_ir({func("copy_fill", {A, C, Z}, SeqNode::make({copy, fill}))}, avx512);
  INFO(ir);
  CHECK(ir.find("memcpy") == std::string::npos);
  CHECK(ir.find("memset") == std::string::npos);
  CHECK(ir.find("store <16 x float>") != std::string::npos);
}

TEST_CASE("optimized IR: aligned vector accesses, promoted tiles, the parallel slot", "[codegen][ir]") {
  const Target avx512 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx512f");
  std::string ir = emit_llvm_ir({fma16("fma_ir")}, avx512);
  INFO(ir);
  CHECK(ir.find("define i32 @fma_ir(i8** ") != std::string::npos);
  CHECK(ir.find("@__kiln_parallel_for = protected") != std::string::npos);
  CHECK(ir.find("load <16 x float>, <16 x float>* ") != std::string::npos);
  CHECK(ir.find("align 64") != std::string::npos);  // i*16 floats from a 64-byte base
  CHECK(ir.find("\"prefer-vector-width\"=\"512\"") != std::string::npos);
  CHECK(ir.find("fmul contract") != std::string::npos);

  // The local accumulator tile of the parallel body lives in registers after O3.
  std::string mixed = emit_llvm_ir({mixed_kernel("mixed_ir")}, avx512);
  INFO(mixed);
  CHECK(mixed.find("alloca [16 x float]") == std::string::npos);
  CHECK(mixed.find("i8** @__kiln_parallel_for") != std::string::npos);  // the parallel loop calls through the slot
  CHECK(mixed.find("tanhf") != std::string::npos);
}

TEST_CASE("a kernel's heap intermediates come from the workspace cache, reused call after call",
          "[codegen][workspace]") {
  // B is 4 MiB, too large for the stack: a heap block per call.
  const int64_t n = int64_t{1} << 20;
  Tensor A = placeholder({n}, DType::f32(), "A");
  Tensor B = compute({n}, [&](Var i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute({n}, [&](Var i) { return B(i) + 1.0f; }, "C");
  Schedule sch({C});
  LoweredFunc f = lower(sch, {A, C}, "twice_plus_one");
  std::string ir = emit_llvm_ir({f}, Target::host());
  CHECK(ir.find("@__kiln_workspace_alloc = protected") != std::string::npos);
  CHECK(ir.find("@__kiln_workspace_free = protected") != std::string::npos);

  auto jit = JitModule::compile({f}, Target::host());
  rt::NDArray a = rt::NDArray::empty({n}, rt::DataType::f32()), c = rt::NDArray::empty({n}, rt::DataType::f32());
  a.fill_random(3);
  std::vector<void*> args{a.data(), c.data()};
  rt::workspace_release_all();
  REQUIRE(jit->get_function(f.name)(args.data()) == 0);
  const uint64_t cached = rt::workspace_cached_bytes();
  CHECK(cached >= static_cast<uint64_t>(n) * 4);  // B's block went back to the cache
  REQUIRE(jit->get_function(f.name)(args.data()) == 0);
  CHECK(rt::workspace_cached_bytes() == cached);  // and was taken out and returned again
  CHECK(c.get(5) == Approx(a.get(5) * 2 + 1));
  rt::workspace_release_all();
}

TEST_CASE("JIT and shared object give identical results", "[codegen][so]") {
  const int64_t rows = 48;
  std::vector<LoweredFunc> funcs = {mixed_kernel("mixed_so", rows), fma16("fma_so")};
  BufferArg A = funcs[0].args[0], C = funcs[0].args[1];
  auto fa = array(A), c_jit = array(C), c_so = array(C);
  fa.fill_random(11);
  std::vector<rt::NDArray> fma_jit = {array(funcs[1].args[0]), array(funcs[1].args[1]), array(funcs[1].args[2])};
  for (auto& x : fma_jit) x.fill_random(12);
  std::vector<rt::NDArray> fma_so = {fma_jit[0], fma_jit[1], fma_jit[2].copy()};

  auto jit = JitModule::compile(funcs, Target::host());
  CHECK(jit->entry_points() == std::vector<std::string>{"mixed_so", "fma_so"});
  void* args_jit[] = {fa.data(), c_jit.data()};
  REQUIRE(jit->get_function("mixed_so")(args_jit) == 0);
  void* fma_args_jit[] = {fma_jit[0].data(), fma_jit[1].data(), fma_jit[2].data()};
  REQUIRE(jit->get_function("fma_so")(fma_args_jit) == 0);

  kiln::testing::TempDir dir("kiln_test_codegen");
  Artifact art = build_shared_object(funcs, Target::host(), dir.path);
  CHECK(art.entry_points == std::vector<std::string>{"mixed_so", "fma_so"});
  CHECK(art.target == Target::host().str());
  CHECK(art.compile_ms > 0);
  CHECK(std::filesystem::exists(art.path));
  {
    auto mod = rt::Module::load(art.path);
    void* args_so[] = {fa.data(), c_so.data()};
    REQUIRE(mod->get_function("mixed_so") != nullptr);
    REQUIRE(mod->get_function("mixed_so")(args_so) == 0);
    void* fma_args_so[] = {fma_so[0].data(), fma_so[1].data(), fma_so[2].data()};
    REQUIRE(mod->get_function("fma_so")(fma_args_so) == 0);
  }
  CHECK(std::memcmp(c_jit.data(), c_so.data(), c_jit.nbytes()) == 0);
  CHECK(std::memcmp(fma_jit[2].data(), fma_so[2].data(), fma_so[2].nbytes()) == 0);
  // And the values are right: C = sum_k tanh(A) * k = 6 tanh(A).
  for (int64_t x = 0; x < rows * 16; ++x) {
    CHECK(c_jit.data_as<float>()[x] == Approx(6.0f * std::tanh(fa.data_as<float>()[x])).epsilon(1e-5));
  }
}

TEST_CASE("codegen user errors", "[codegen][errors]") {
  BufferArg C = buffer("C", DType::f32(), {64});
  Var i("i");
  Stmt gpu = ForNode::make(i, Expr(0), Expr(64), ForKind::kThreadBinding, st(C, 1.0f, i), "threadIdx.x");
  CHECK_THAT(user_error_of([&] { JitModule::compile({func("gpu", {C}, gpu)}, Target::host()); }),
             Catch::Matchers::Contains("GPU thread binding") && Catch::Matchers::Contains("cuda target"));

  LoweredFunc ok = func("k", {C}, loop(i, 64, st(C, 1.0f, i)));
  CHECK_THAT(user_error_of([&] { JitModule::compile({ok}, Target::parse("llvm -mtriple=aarch64-linux-gnu")); }),
             Catch::Matchers::Contains("needs a host target"));
  CHECK_THAT(user_error_of([&] { emit_object({ok}, Target::parse("cuda -arch=sm_90")); }),
             Catch::Matchers::Contains("cannot compile for target 'cuda -arch=sm_90'"));
  CHECK_THAT(user_error_of([&] {
               emit_object({ok, ok}, Target::host());
             }),
             Catch::Matchers::Contains("both named 'k'"));
  CHECK_THAT(user_error_of([&] { emit_object({func("my-kernel", {C}, ok.body)}, Target::host()); }),
             Catch::Matchers::Contains("not a valid C identifier"));
  CHECK_THAT(user_error_of([&] { emit_object({func("expf", {C}, ok.body)}, Target::host()); }),
             Catch::Matchers::Contains("reserved"));
  auto jit = JitModule::compile({ok}, Target::host());
  CHECK_THAT(user_error_of([&] { jit->get_function("nope"); }), Catch::Matchers::Contains("no kernel named 'nope'"));
}

TEST_CASE("a small kernel JIT-compiles to a working function and reports its compile time", "[codegen][jit]") {
  // (How fast it compiles is a benchmark's business, not a unit test's.)
  auto m = JitModule::compile({fma16("timed")}, Target::host());
  CHECK(m->compile_ms() > 0);
  alignas(64) float a[256], b[256], c[256];  // kernels may assume aligned buffers (as NDArray's are)
  for (int i = 0; i < 256; ++i) {
    a[i] = static_cast<float>(i % 7);
    b[i] = static_cast<float>(i % 5) - 2;
    c[i] = static_cast<float>(i);
  }
  void* args[] = {a, b, c};
  REQUIRE(m->get_function("timed")(args) == 0);
  for (int i = 0; i < 256; ++i) {
    INFO("C[" << i << "]");
    CHECK(c[i] == static_cast<float>(i % 7) * (static_cast<float>(i % 5) - 2) + static_cast<float>(i));
  }
}

TEST_CASE("alignment of accesses from the index's congruence", "[codegen][align]") {
  Var i("i"), t("t");
  Analyzer an;
  an.bind(t, i * 32);
  auto align = [&](Expr e, int64_t elem_bytes) { return access_alignment(an.modular_set(e), elem_bytes); };
  CHECK(align(i * 16, 4) == 64);
  CHECK(align(i * 16 + 8, 4) == 32);
  CHECK(align(i * 16 + 3, 4) == 4);
  CHECK(align(i, 1) == 1);
  CHECK(align(i, 8) == 8);
  CHECK(align(Expr(24), 4) == 32);
  CHECK(align(Expr(0), 4) == 64);
  CHECK(align(floordiv(i * 32, Expr(2)), 4) == 64);      // exactly i*16
  CHECK(align(floormod(i * 8, Expr(12)) * 4, 2) == 32);  // congruent to 0 mod 16 elements
  CHECK(align(t + 16, 2) == 32);                         // let-bound t = i*32
  CHECK(align(min(i * 16, i * 32 + 8), 4) == 32);

  // In the IR: a 16-lane access at i*16+8 floats is 32-byte aligned.
  BufferArg A = buffer("A", DType::f32(), {1024}), C = buffer("C", DType::f32(), {1024});
  Var v("v");
  Expr idx = ramp(v * 16 + 8, 1, 8);
  std::string ir = emit_llvm_ir({func("align8", {A, C}, loop(v, 32, st(C, ld(A, idx) + ld(A, idx), idx)))},
                                Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx512f"));
  INFO(ir);
  CHECK(ir.find("load <8 x float>, <8 x float>* ") != std::string::npos);
  CHECK(ir.find("align 32") != std::string::npos);
  CHECK(ir.find("align 64") == std::string::npos);
}
