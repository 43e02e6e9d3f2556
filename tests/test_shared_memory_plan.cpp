// Shared arrays whose lifetimes do not overlap share bytes
// (schedule/shared_memory_plan.h): the plan on hand-built kernels and on the
// tensor-core GEMM (its f32 staging tile takes the A and B slots' bytes), the
// barrier thread_sync puts where the bytes change hands and the verifier's
// message without it, the CUDA declarations, the emulated GEMM against the
// interpreter, and a planted missing barrier that the emulator reports.
#include <catch2/catch.hpp>

#include "codegen/cuda_codegen.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "kernels/gpu_mma_gemm.h"
#include "kernels/matmul_template.h"
#include "kernels/op_registry.h"
#include "schedule/gpu_kernels.h"
#include "schedule/passes/thread_sync.h"
#include "schedule/shared_memory_plan.h"
#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::testing;
using namespace kiln::test;
using Catch::Matchers::Contains;

namespace {

// A block of 32 threads: S is filled, read back reversed into O, then T is
// filled and read back into P. With `loop`, both halves run in one serial
// loop of 3 iterations, so S and T are live together.
Stmt two_phases(bool loop) {
  BufferArg O = buffer("O", DType::f32(), {32}), P = buffer("P", DType::f32(), {32});
  Var tx("tx"), bx("bx");
  Var S = Var::handle("S", DType::f32()), T = Var::handle("T", DType::f32());
  Stmt body = SeqNode::make(
      {StoreNode::make(S, cast(DType::f32(), tx), tx), BarrierNode::make(MemScope::kShared),
       st(O, LoadNode::make(DType::f32(), S, 31 - tx), tx), StoreNode::make(T, cast(DType::f32(), tx) * 2.0f, tx),
       BarrierNode::make(MemScope::kShared), st(P, LoadNode::make(DType::f32(), T, 31 - tx), tx)});
  if (loop) body = ForNode::make(Var("r"), 0, 3, ForKind::kSerial, body);
  Stmt k = ForNode::make(tx, 0, 32, ForKind::kThreadBinding, body, "threadIdx.x");
  k = AllocateNode::make(T, DType::f32(), {Expr(32)}, MemScope::kShared, k);
  k = AllocateNode::make(S, DType::f32(), {Expr(32)}, MemScope::kShared, k);
  return ForNode::make(bx, 0, 1, ForKind::kThreadBinding, k, "blockIdx.x");
}

const SharedArrayPlace& place(const SharedMemoryPlan& p, const std::string& name) {
  for (const SharedArrayPlace& a : p.arrays)
    if (a.alloc->buffer->name == name) return a;
  FAIL("no shared array " << name);
  return p.arrays.front();
}

LoweredFunc gpu_gemm(const std::string& workload, const std::string& config) {
  return build_kernel(workload, "cuda -arch=sm_90", "", config).func;
}

// A 128 x 128 block on tensor cores, k tiles of 32 in `stages` slots.
std::string mma_128(int stages) {
  return R"({"tensor_core":"mma","mma_m":[1,2,4],"mma_n":[1,2,8],"mma_k":[4,2],"pad":0,"stages":)" +
         std::to_string(stages) + "}";
}

const GpuLimits kSm90 = gpu_limits_for_arch("sm_90");

}  // namespace

TEST_CASE("shared memory plan: arrays never live together share bytes, a loop over both keeps them apart",
          "[gpu][lower][shared]") {
  const SharedMemoryPlan apart = plan_shared_memory(two_phases(false));
  REQUIRE(apart.arrays.size() == 2);
  CHECK(apart.shares_bytes);
  CHECK(apart.bytes == 128);
  CHECK(place(apart, "S").offset == 0);
  CHECK(place(apart, "T").offset == 0);
  CHECK(place(apart, "S").last < place(apart, "T").first);
  CHECK(apart.overlap(place(apart, "S").alloc->buffer.node(), place(apart, "T").alloc->buffer.node()));

  // In one loop the next iteration's S comes after this one's T.
  const SharedMemoryPlan together = plan_shared_memory(two_phases(true));
  CHECK_FALSE(together.shares_bytes);
  CHECK(together.bytes == 256);
  CHECK(place(together, "T").offset == 0);  // post-order: the inner Allocate first, as before
  CHECK(place(together, "S").offset == 128);
}

TEST_CASE("shared memory plan: arrays touched under thread-dependent control are live together",
          "[gpu][lower][shared]") {
  // Threads 0-15 read S (another thread's element) and then write T. No
  // barrier can go between the two under `tx < 16`, so S and T must not
  // share bytes; run by every thread, they may (a barrier goes between).
  auto kernel = [](bool guarded) {
    BufferArg O = buffer("O", DType::f32(), {32});
    Var tx("tx"), bx("bx");
    Var S = Var::handle("S", DType::f32()), T = Var::handle("T", DType::f32());
    Stmt tail = SeqNode::make({st(O, LoadNode::make(DType::f32(), S, 15 - tx), tx), StoreNode::make(T, 1.0f, tx)});
    if (guarded) tail = IfThenElseNode::make(tx < 16, tail);
    Stmt body = SeqNode::make({StoreNode::make(S, cast(DType::f32(), tx), tx), tail});
    Stmt k = ForNode::make(tx, 0, 32, ForKind::kThreadBinding, body, "threadIdx.x");
    k = AllocateNode::make(T, DType::f32(), {Expr(32)}, MemScope::kShared, k);
    k = AllocateNode::make(S, DType::f32(), {Expr(32)}, MemScope::kShared, k);
    return ForNode::make(bx, 0, 2, ForKind::kThreadBinding, k, "blockIdx.x");
  };
  CHECK(plan_shared_memory(kernel(false)).shares_bytes);
  const SharedMemoryPlan guarded = plan_shared_memory(kernel(true));
  CHECK_FALSE(guarded.shares_bytes);
  CHECK(guarded.bytes == 256);
  // And the barriers: the guarded kernel needs only the one before S's read.
  CHECK_NOTHROW(passes::verify_thread_syncs(passes::insert_thread_syncs(kernel(true))));
  CHECK_NOTHROW(passes::verify_thread_syncs(passes::insert_thread_syncs(kernel(false))));
  CHECK(count(to_string(passes::insert_thread_syncs(kernel(false))), "barrier(shared)") == 2);
}

TEST_CASE("shared memory plan: a barrier where the bytes change hands, and the verifier without it",
          "[gpu][lower][shared][sync]") {
  // No same-array conflict between reading S and filling T: only the bytes
  // they share need the barrier.
  const Stmt bare = DropBarriers().mutate(two_phases(false));
  const Stmt synced = passes::insert_thread_syncs(bare);
  CHECK(count(to_string(synced), "barrier(shared)") == 3);
  CHECK_NOTHROW(passes::verify_thread_syncs(synced));
  CHECK_THAT(user_error_of([&] { passes::verify_thread_syncs(two_phases(false)); }),
             Contains("missing barrier: shared buffers 'S' and 'T' share bytes"));
  // Kept apart, they need only the two barriers before each read.
  const Stmt looped = passes::insert_thread_syncs(DropBarriers().mutate(two_phases(true)));
  CHECK_NOTHROW(passes::verify_thread_syncs(looped));
  // (the one before T's read also orders this round's reads of S before the
  // next round's fill)
  CHECK(count(to_string(looped), "barrier(shared)") == 2);
}

TEST_CASE("shared memory plan: the tensor-core GEMM's staging tile takes the bytes of its A and B slots",
          "[gpu][lower][shared]") {
  // 128 x 128: the f32 staging tile is 64 KiB, three slots of the 8 KiB A
  // and B k tiles 48 KiB: 64 KiB in all (112 KiB before they shared).
  LoweredFunc f = gpu_gemm("matmul:M=128,N=128,K=128,dtype=f16", mma_128(3));
  auto ks = gpu_kernels(f, kSm90);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].shared_bytes == 65536);
  CHECK(ks[0].dynamic_shared_bytes == 65536);
  const SharedMemoryPlan plan = plan_shared_memory(ks[0].body);
  CHECK(plan.shares_bytes);
  CHECK(place(plan, "C.shared").offset == 0);
  CHECK(place(plan, "A.shared").last < place(plan, "C.shared").first);
  CHECK(place(plan, "B.shared").last < place(plan, "C.shared").first);
  const VarNode* A = place(plan, "A.shared").alloc->buffer.node();
  const VarNode* B = place(plan, "B.shared").alloc->buffer.node();
  const VarNode* C = place(plan, "C.shared").alloc->buffer.node();
  CHECK_FALSE(plan.overlap(A, B));
  CHECK(plan.overlap(A, C));
  CHECK(plan.overlap(B, C));
  const CudaSource src = emit_cuda(f, kSm90);
  CHECK(count(src.code, "  KILN_DYNAMIC_SHARED(") == 3);
  CHECK_THAT(src.code, Contains("KILN_DYNAMIC_SHARED(float, C_shared, 16384, 0);"));
  CHECK_THAT(src.code, Contains("65536 bytes of shared memory (dynamic)"));
  // The template counts the same bytes when it picks its defaults.
  nlohmann::json j = nlohmann::json::parse(mma_128(3));
  const GemmShape g = matmul_gemm_shape(build_workload("matmul:M=128,N=128,K=128,dtype=f16"));
  CHECK(gpu_mma_shared_bytes(g, j, 3) == 65536);

  // A 64 x 64 block: three slots (about 29 KiB) outgrow the 16 KiB staging
  // tile, which takes their bytes; below 48 KiB, a static pool.
  LoweredFunc small =
      gpu_gemm("matmul:M=64,N=64,K=128,dtype=f16",
               R"({"tensor_core":"mma","mma_m":[1,2,2],"mma_n":[1,2,4],"mma_k":[4,2],"pad":1,"stages":3})");
  auto sk = gpu_kernels(small, kSm90);
  REQUIRE(sk.size() == 1);
  CHECK(sk[0].dynamic_shared_bytes == 0);
  const SharedMemoryPlan sp = plan_shared_memory(sk[0].body);
  CHECK(sp.shares_bytes);
  CHECK(sk[0].shared_bytes == sp.bytes);
  CHECK(sp.bytes < place(sp, "A.shared").bytes + place(sp, "B.shared").bytes + place(sp, "C.shared").bytes);
  const CudaSource ssrc = emit_cuda(small, kSm90);
  CHECK(count(ssrc.code, "  KILN_SHARED_POOL(" + std::to_string(sp.bytes) + ", 128);") == 1);
  CHECK(count(ssrc.code, "  KILN_SHARED_AT(") == 3);
  CHECK(ssrc.code.find("  KILN_SHARED(") == std::string::npos);
}

TEST_CASE("shared memory plan: arrays that are live together keep their own bytes", "[gpu][lower][shared]") {
  // The f32 GEMM's A and B tiles are read together: nothing to share, the
  // arrays are declared as before.
  LoweredFunc f =
      gpu_gemm("matmul:M=64,N=64,K=32", R"({"tile_y":[1,16,4],"tile_x":[1,16,4],"tile_k":[4,8],"shared":"both"})");
  auto ks = gpu_kernels(f, kSm90);
  REQUIRE(ks.size() == 1);
  CHECK_FALSE(plan_shared_memory(ks[0].body).shares_bytes);
  const CudaSource src = emit_cuda(f, kSm90);
  CHECK(src.code.find("  KILN_SHARED_POOL(") == std::string::npos);
  CHECK(count(src.code, "  KILN_SHARED(") == 2);
}

TEST_CASE("shared memory plan: the emulated GEMM whose staging tile shares bytes agrees with the interpreter",
          "[gpu][lower][shared][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_shared_plan");
  const OpInstance op = build_workload("matmul:M=64,N=64,K=128,dtype=f16");
  const std::string cfg = R"({"tensor_core":"mma","mma_m":[1,2,2],"mma_n":[1,2,4],"mma_k":[4,2],"pad":1,"stages":3})";
  LoweredFunc f = gpu_gemm("matmul:M=64,N=64,K=128,dtype=f16", cfg);
  CudaSource src = emit_cuda(f, kSm90);
  REQUIRE(src.code.find("  KILN_SHARED_POOL(") != std::string::npos);
  CHECK(run_emulated_and_check(op, src, dir.path + "/good", 5) == "");
  // Plant the bug: drop the barrier before the first staging store (the
  // last one before the staging tile's first use).
  const size_t declared = src.code.find("KILN_SHARED_AT(float, C_shared");
  REQUIRE(declared != std::string::npos);
  const size_t first_use = src.code.find("C_shared", src.code.find("\n", declared));
  REQUIRE(first_use != std::string::npos);
  const size_t barrier = src.code.rfind("__syncthreads();", first_use);
  REQUIRE(barrier != std::string::npos);
  src.code.replace(barrier, std::string("__syncthreads();").size(), "/* dropped */");
  const std::string err = run_emulated_and_check(op, src, dir.path + "/planted", 5);
  CHECK_THAT(err, Contains("share byte") && Contains("with no __syncthreads() in between"));
}
