// Lowering for cuda targets: launch dimensions, limits and their messages,
// shared-memory regions (thread axes relaxed), barrier insertion and the
// barrier verifier, and the CUDA C the backend prints.
#include <catch2/catch.hpp>
#include <tuple>

#include "codegen/cuda_codegen.h"
#include "codegen/target.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "schedule/gpu_kernels.h"
#include "schedule/lower.h"
#include "schedule/passes/thread_sync.h"
#include "tasks/kernel_build.h"
#include "tasks/task_factory.h"
#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::test;
using Catch::Matchers::Contains;

namespace {

const GpuLimits kSm90 = gpu_limits_for_arch("sm_90");

// O[i] = A[i] + 1 over n elements, split by `threads` and bound.
LoweredFunc add_one(int64_t n, int64_t threads, const std::string& outer_tag = "blockIdx.x") {
  Tensor A = placeholder({n}, DType::f32(), "A");
  Tensor O = compute(
      {n}, [&](Var i) { return A(i) + 1.0f; }, "O");
  Schedule s({O});
  IterVar bx, tx;
  s[O].split(s[O].axis()[0], threads, &bx, &tx);
  if (!outer_tag.empty()) s[O].bind(bx, outer_tag);
  s[O].bind(tx, "threadIdx.x");
  return lower_gpu(s, {A, O}, "add_one", kSm90);
}

// O[i] = A[i] * 2 over 64 elements, unscheduled.
std::pair<Tensor, Tensor> doubling() {
  Tensor A = placeholder({64}, DType::f32(), "A");
  Tensor O = compute(
      {64}, [&](Var i) { return A(i) * 2.0f; }, "O");
  return {A, O};
}

LoweredFunc gpu_matmul(const std::string& workload, const std::string& config = "") {
  return build_kernel(workload, "cuda -arch=sm_90", "", config).func;
}

}  // namespace

TEST_CASE("cuda targets: sm_70 to sm_90a with their limits", "[gpu][target]") {
  CHECK(Target::parse("cuda").arch == "sm_90");
  CHECK(Target::parse("cuda -arch=sm_80").is_cuda());
  const GpuLimits a100 = gpu_limits_for_arch("sm_80");
  CHECK(a100.max_shared_optin_per_block == 163 * 1024);
  CHECK(a100.sm_count == 108);
  CHECK(gpu_limits_for_arch("sm_90a").sm_version == 90);
  CHECK(gpu_limits_for_arch("sm_75").max_threads_per_sm == 1024);
  CHECK_THAT(user_error_of([] { gpu_limits_for_arch("sm_61"); }),
             Contains("unknown CUDA architecture 'sm_61'") && Contains("sm_70"));
  // Every compute capability of sm_70..sm_90a, the embedded ones included.
  CHECK(known_gpu_archs() == "sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a");
  const GpuLimits xavier = gpu_limits_for_arch("sm_72");  // Volta's SM
  CHECK(xavier.sm_version == 72);
  CHECK(xavier.max_shared_optin_per_block == 96 * 1024);
  CHECK(xavier.max_shared_per_sm == 96 * 1024);
  CHECK(xavier.max_threads_per_sm == 2048);
  CHECK(xavier.max_blocks_per_sm == 32);
  CHECK(xavier.registers_per_sm == 65536);
  const GpuLimits orin = gpu_limits_for_arch("sm_87");  // A100's shared memory, sm_86's threads
  CHECK(orin.sm_version == 87);
  CHECK(orin.max_shared_optin_per_block == 163 * 1024);
  CHECK(orin.max_shared_per_sm == 164 * 1024);
  CHECK(orin.max_threads_per_sm == 1536);
  CHECK(orin.max_blocks_per_sm == 16);
  CHECK(orin.registers_per_sm == 65536);
  CHECK(Target::parse("cuda -arch=sm_72").arch == "sm_72");
  CHECK(Target::parse("cuda -arch=sm_87").str() == "cuda -arch=sm_87");
  CHECK_THAT(user_error_of([] { gpu_limits_for_arch("sm_71"); }), Contains("unknown CUDA architecture 'sm_71'"));
}

TEST_CASE("cuda kernels: launch dimensions from the bound loops", "[gpu][lower]") {
  LoweredFunc f = add_one(70, 32);
  auto ks = gpu_kernels(f, kSm90);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].grid == std::array<int64_t, 3>{{3, 1, 1}});
  CHECK(ks[0].block == std::array<int64_t, 3>{{32, 1, 1}});
  CHECK(ks[0].arg_indices == std::vector<int>{0, 1});
  CudaSource src = emit_cuda(f, kSm90);
  REQUIRE(src.launches.size() == 1);
  CHECK(src.launches[0].grid[0] == 3);
  CHECK(src.launches[0].params.size() == 2);
  CHECK(src.launches[0].params[0].c_type == "const float*");
  CHECK(src.launches[0].params[1].c_type == "float*");
  CHECK_THAT(src.code, Contains("extern \"C\" __global__ void __launch_bounds__(32) add_one_kernel0("));
  CHECK_THAT(src.code, Contains("= (int)blockIdx.x;"));
  CHECK_THAT(src.code, Contains("= (int)threadIdx.x;"));
  CHECK_THAT(src.code, Contains("< 70"));  // the tail of the last block is guarded
}

TEST_CASE("cuda kernels: schedules that cannot launch are user errors in schedule terms", "[gpu][lower][user_error]") {
  CHECK_THAT(user_error_of([] { add_one(4096, 2048); }),
             Contains("2048 threads") && Contains("sm_90 allows at most 1024 threads per block"));
  {
    // No binding at all.
    Tensor A, O;
    std::tie(A, O) = doubling();
    Schedule s({O});
    CHECK_THAT(user_error_of([&] {
                 lower_gpu(s, {A, O}, "f", kSm90);
               }),
               Contains("no loop bound to blockIdx or threadIdx") && Contains("O.i"));
  }
  {
    // blockIdx under a serial loop.
    Tensor A, O;
    std::tie(A, O) = doubling();
    Schedule s({O});
    IterVar o, i;
    s[O].split(s[O].axis()[0], 8, &o, &i);
    s[O].bind(i, "blockIdx.x");
    CHECK_THAT(user_error_of([&] {
                 lower_gpu(s, {A, O}, "f", kSm90);
               }),
               Contains("bound to blockIdx.x inside another loop"));
  }
  {
    // A parallel (CPU) loop.
    Tensor A, O;
    std::tie(A, O) = doubling();
    Schedule s({O});
    IterVar o, i;
    s[O].split(s[O].axis()[0], 8, &o, &i);
    s[O].parallel(o);
    s[O].bind(i, "threadIdx.x");
    CHECK_THAT(user_error_of([&] { lower_gpu(s, {A, O}, "f", kSm90); }), Contains("is parallel, a CPU annotation"));
  }
  {
    // Too much shared memory: a 128 x 512 f32 tile (256 KiB).
    Tensor A = placeholder({256, 512}, DType::f32(), "A");
    Tensor O = compute(
        {256, 512}, [&](Var i, Var j) { return A(i, j) + 1.0f; }, "O");
    Schedule s({O});
    Tensor AS = s.cache_read(A, MemScope::kShared, {s[O]->op});
    IterVar bx, tx;
    s[O].split(s[O].axis()[0], 128, &bx, &tx);
    s[O].bind(bx, "blockIdx.x");
    s[O].bind(tx, "threadIdx.x");
    s[AS].compute_at(s[O], bx);
    IterVar f = s[AS].fuse(s[AS].axis());
    IterVar fo, fi;
    s[AS].split(f, 128, &fo, &fi);
    s[AS].bind(fi, "threadIdx.x");
    CHECK_THAT(user_error_of([&] {
                 lower_gpu(s, {A, O}, "f", kSm90);
               }),
               Contains("the block needs 262144 bytes of shared memory (A.shared 262144)") &&
                   Contains("sm_90 allows at most 232448 bytes per block (dynamic shared memory, opted in)"));
  }
  {
    Tensor A = placeholder({8, 8}, DType::f32(), "A");
    IterVar k = reduce_axis(8, "k");
    Tensor O = compute(
        {8}, [&](Var i) { return sum(A(i, k->var), {k}); }, "O");
    Schedule s({O});
    CHECK_THAT(user_error_of([&] { s[O].bind(k, "blockIdx.x"); }),
               Contains("bind: axis 'k' of stage 'O' is a reduction axis and cannot be bound to blockIdx.x"));
  }
  CHECK_THAT(user_error_of([] { make_task("conv2d_nchwc:N=1,C=16,H=8,W=8,K=16,R=3,S=3", Target::parse("cuda")); }),
             Contains("has no cuda schedule template yet"));
  CHECK_THAT(user_error_of([] { build_kernel("conv2d_nchwc:N=1,C=16,H=8,W=8,K=16,R=3,S=3", "cuda"); }),
             Contains("op 'conv2d_nchwc' has no cuda schedule template yet") && Contains("matmul") &&
                 Contains("conv2d_nhwc"));
}

TEST_CASE("cuda kernels: a shared stage holds the whole block's tile", "[gpu][lower]") {
  // 64 x 64 block tiles (16 x 16 threads of 4 x 4), k-tiles of 8: the A
  // tile is 64 x 8 whichever thread reads it.
  LoweredFunc f = gpu_matmul("matmul:M=128,N=128,K=64",
                             R"({"tile_y":[2,16,4],"tile_x":[2,16,4],"tile_k":[8,8],"shared":"both","pad":0})");
  const std::string ir = to_string(f);
  CHECK_THAT(ir, Contains("allocate A.shared[f32 * 512]"));
  CHECK_THAT(ir, Contains("allocate B.shared[f32 * 512]"));
  auto ks = gpu_kernels(f, kSm90);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].grid == std::array<int64_t, 3>{{2, 2, 1}});
  CHECK(ks[0].block == std::array<int64_t, 3>{{16, 16, 1}});
  CHECK(ks[0].shared_bytes == 4096);
}

TEST_CASE("cuda kernels: past 48 KiB the shared arrays are carved out of dynamic shared memory", "[gpu][lower]") {
  // A 128 x 128 block on tensor cores: the f32 staging tile (64 KiB) and
  // three slots of the A and B k tiles (3 x 16 KiB), which the staging tile
  // reuses once the k loop is over (schedule/shared_memory_plan.h).
  const std::string mma = R"({"tensor_core":"mma","mma_m":[1,2,4],"mma_n":[1,2,8],"mma_k":[4,2],"pad":0,"stages":)";
  LoweredFunc f = gpu_matmul("matmul:M=128,N=128,K=128,dtype=f16", mma + "3}");
  auto ks = gpu_kernels(f, kSm90);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].shared_bytes == 65536);
  CHECK(ks[0].dynamic_shared_bytes == ks[0].shared_bytes);
  const CudaSource src = emit_cuda(f, kSm90);
  REQUIRE(src.launches.size() == 1);
  CHECK(src.launches[0].shared_bytes == 65536);
  CHECK(src.launches[0].dynamic_shared_bytes == 65536);
  CHECK_THAT(src.code, Contains("65536 bytes of shared memory (dynamic)"));
  CHECK(count(src.code, "  KILN_DYNAMIC_SHARED_POOL(128);") == 1);
  // Each array at its 16-byte aligned offset of the plan.
  CHECK(count(src.code, "  KILN_DYNAMIC_SHARED(") == 3);
  CHECK(count(src.code, "KILN_DYNAMIC_SHARED(kiln_half, B_shared, 12288, 0);") == 1);
  CHECK(count(src.code, "KILN_DYNAMIC_SHARED(kiln_half, A_shared, 12288, 24576);") == 1);
  CHECK(count(src.code, "KILN_DYNAMIC_SHARED(float, C_shared, 16384, 0);") == 1);
  CHECK(src.code.find("  KILN_SHARED(") == std::string::npos);
  // At 48 KiB and below, static arrays as before.
  LoweredFunc small = gpu_matmul("matmul:M=64,N=64,K=64,dtype=f16");
  auto sk = gpu_kernels(small, kSm90);
  REQUIRE(sk.size() == 1);
  CHECK(sk[0].shared_bytes <= 49152);
  CHECK(sk[0].dynamic_shared_bytes == 0);
  CHECK(emit_cuda(small, kSm90).code.find("  KILN_DYNAMIC_SHARED") == std::string::npos);
  // An architecture with less to opt in to: sm_86 allows 99 KiB a block,
  // less than the 128 KiB staging tile of a 128 x 256 block.
  LoweredFunc wide =
      gpu_matmul("matmul:M=128,N=256,K=128,dtype=f16",
                 R"({"tensor_core":"mma","mma_m":[1,2,4],"mma_n":[1,4,8],"mma_k":[4,2],"pad":0,"stages":3})");
  CHECK_THAT(user_error_of([&] { gpu_kernels(wide, gpu_limits_for_arch("sm_86")); }),
             Contains("the block needs 131072 bytes") && Contains("share bytes: 131072 in all") &&
                 Contains("sm_86 allows at most 101376 bytes per block"));
}

TEST_CASE("cuda kernels: barriers around each shared tile, and the verifier", "[gpu][lower][sync]") {
  LoweredFunc f =
      gpu_matmul("matmul:M=64,N=64,K=32", R"({"tile_y":[1,16,4],"tile_x":[1,16,4],"tile_k":[4,8],"shared":"both"})");
  const std::string ir = to_string(f);
  // One barrier before the tiles are overwritten (the previous k step still
  // reads them), one before they are read.
  CHECK(count(ir, "barrier(shared)") == 2);
  CHECK_NOTHROW(passes::verify_thread_syncs(f.body));
  Stmt without = DropBarriers().mutate(f.body);
  CHECK_THAT(user_error_of([&] { passes::verify_thread_syncs(without); }),
             Contains("missing barrier") && Contains("shared"));
  // Without shared staging there is nothing to synchronize.
  LoweredFunc plain = gpu_matmul("matmul:M=64,N=64,K=32", R"({"shared":"none"})");
  CHECK(count(to_string(plain), "barrier") == 0);
  CudaSource src = emit_cuda(f, kSm90);
  CHECK(count(src.code, "__syncthreads();") == 2);
  CHECK_THAT(src.code, Contains("KILN_SHARED(float, A_shared, 512);"));
}

TEST_CASE("cuda kernels: a barrier under a thread-dependent condition is rejected", "[gpu][lower][sync]") {
  BufferArg O = buffer("O", DType::f32(), {32});
  Var tx("tx"), bx("bx");
  Var sh = Var::handle("S", DType::f32());
  Stmt body =
      SeqNode::make({StoreNode::make(sh, 1.0f, tx), IfThenElseNode::make(tx < 5, BarrierNode::make(MemScope::kShared)),
                     st(O, LoadNode::make(DType::f32(), sh, 31 - tx), tx)});
  Stmt k = ForNode::make(tx, 0, 32, ForKind::kThreadBinding, body, "threadIdx.x");
  k = AllocateNode::make(sh, DType::f32(), {Expr(32)}, MemScope::kShared, k);
  k = ForNode::make(bx, 0, 1, ForKind::kThreadBinding, k, "blockIdx.x");
  CHECK_THAT(user_error_of([&] { passes::verify_thread_syncs(k); }),
             Contains("barrier sits under thread-dependent control flow"));
  // The pass puts the barrier where every thread meets it.
  Stmt fixed = passes::insert_thread_syncs(DropBarriers().mutate(k));
  CHECK_NOTHROW(passes::verify_thread_syncs(fixed));
  CHECK(count(to_string(fixed), "barrier(shared)") == 1);
}

namespace {

// A block of 4 x 8 threads fills shared S[64] from global A in `rounds`
// rounds (element r * step + ty * 8 + tx), then every thread reads S in a
// loop of 4 and writes O.
Stmt fill_then_read(int64_t rounds, int64_t step) {
  BufferArg A = buffer("A", DType::f32(), {256}), O = buffer("O", DType::f32(), {128});
  Var ty("ty"), tx("tx"), ty2("ty2"), tx2("tx2"), r("r"), k("k"), bx("bx");
  Var S = Var::handle("S", DType::f32());
  Stmt fill = StoreNode::make(S, LoadNode::make(DType::f32(), A.data, r * 32 + ty * 8 + tx), r * step + ty * 8 + tx);
  fill = ForNode::make(tx, 0, 8, ForKind::kThreadBinding, fill, "threadIdx.x");
  fill = ForNode::make(ty, 0, 4, ForKind::kThreadBinding, fill, "threadIdx.y");
  fill = ForNode::make(r, 0, static_cast<int>(rounds), ForKind::kSerial, fill);
  Stmt read = st(O, LoadNode::make(DType::f32(), S, k * 16 + tx2 + ty2 * 4), k * 32 + ty2 * 8 + tx2);
  read = ForNode::make(k, 0, 4, ForKind::kSerial, read);
  read = ForNode::make(tx2, 0, 8, ForKind::kThreadBinding, read, "threadIdx.x");
  read = ForNode::make(ty2, 0, 4, ForKind::kThreadBinding, read, "threadIdx.y");
  Stmt body = AllocateNode::make(S, DType::f32(), {Expr(64)}, MemScope::kShared, SeqNode::make({fill, read}));
  return ForNode::make(bx, 0, 1, ForKind::kThreadBinding, body, "blockIdx.x");
}

// The statement a barrier precedes: "fill" (inside the rounds loop), "read"
// (inside the read loop) or "before read" (ahead of the read loops).
std::vector<std::string> barrier_places(const Stmt& s) {
  std::vector<std::string> out;
  std::string ir = to_string(s);
  for (size_t at = ir.find("barrier(shared)"); at != std::string::npos; at = ir.find("barrier(shared)", at + 1)) {
    const std::string after = ir.substr(at, 200);
    out.push_back(after.find("S[") < after.find("for") ? (after.find("O[") < after.find("S[") ? "read" : "fill")
                                                        : "before loop");
  }
  return out;
}

}  // namespace

TEST_CASE("cuda kernels: a fill in rounds writing distinct elements needs no barrier between rounds",
          "[gpu][lower][sync]") {
  // 4 rounds of 32 distinct elements: one barrier, before the reads' loop
  // (not one per round, nor one per iteration of the reads).
  Stmt distinct = passes::insert_thread_syncs(fill_then_read(2, 32));
  CHECK(count(to_string(distinct), "barrier(shared)") == 1);
  CHECK(barrier_places(distinct) == std::vector<std::string>{"before loop"});
  CHECK_NOTHROW(passes::verify_thread_syncs(distinct));
  // Rounds 16 apart overlap (ty * 8 + tx reaches 31): another thread's write
  // of the next round may land on an element, so each round waits.
  Stmt overlapping = passes::insert_thread_syncs(fill_then_read(2, 16));
  CHECK(count(to_string(overlapping), "barrier(shared)") == 2);
  CHECK_NOTHROW(passes::verify_thread_syncs(overlapping));
  // The verifier accepts the distinct fill without per-round barriers and
  // still wants the one before the reads.
  CHECK_THAT(user_error_of([&] { passes::verify_thread_syncs(fill_then_read(2, 32)); }),
             Contains("missing barrier") && Contains("'S'"));
  // The same store every round (no round in the index): kept apart.
  Stmt same = passes::insert_thread_syncs(fill_then_read(2, 0));
  CHECK(count(to_string(same), "barrier(shared)") == 2);
}

TEST_CASE("cuda kernels: the GEMM template's k step has two barriers however many rounds its fills take",
          "[gpu][lower][sync]") {
  // 4 x 8 threads with 4 x 4 tiles: a 16 x 32 block tile; a k-tile of 32
  // makes the A tile 512 elements, 16 rounds of 32 threads.
  const std::string cfg = R"({"tile_y":[2,4,4],"tile_x":[2,8,4],"tile_k":[2,32],)"
                          R"("shared":"both","vec":1,"pad":0,"unroll_k":"none"})";
  CudaSource src = emit_cuda(gpu_matmul("matmul:M=32,N=64,K=64", cfg), kSm90);
  CHECK(count(src.code, "__syncthreads();") == 2);
  INFO(src.code);
}

TEST_CASE("cuda kernels: vector stores and loads when aligned, lanes otherwise", "[gpu][codegen]") {
  // N % 4 == 0 and contiguous register-tile columns: float4 stores.
  CudaSource v = emit_cuda(gpu_matmul("matmul:M=32,N=64,K=16", R"({"vec":4,"tile_x":[1,16,4]})"), kSm90);
  CHECK_THAT(v.code, Contains("kiln_st(out, ") || Contains("kiln_st(C, "));
  CHECK_THAT(v.code, Contains("kiln_ld<float4>(A, ") || Contains("kiln_ld<float4>(B, "));
  // N odd: no vector access can be proved aligned.
  CudaSource s = emit_cuda(gpu_matmul("matmul:M=32,N=63,K=17", R"({"vec":4})"), kSm90);
  CHECK_THAT(s.code, !Contains("kiln_ld<float4>(B, "));
}
