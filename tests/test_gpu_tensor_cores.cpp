// The GPU GEMM template on tensor cores (kernels/gpu_mma_gemm.h): f16 and
// bf16 matmul, dense and batch_matmul through mma.sync m16n8k16 and
// ldmatrix, run on the CPU through the emulation header (which implements
// the instructions lane by lane in the PTX ISA's fragment layouts) and
// compared with the interpreter; NVRTC compiles them for sm_80 and sm_90.
// Also warp scope's rules and the tensor-core knob's offers.
#include <catch2/catch.hpp>
#include <random>

#include "codegen/cuda_codegen.h"
#include "compute/expr_ops.h"
#include "schedule/gpu_kernels.h"
#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

bool offers_mma(const std::string& workload, const std::string& arch) {
  OpInstance op = build_workload(workload);
  auto space = find_op(op.op).gpu.define_space(op, gpu_limits_for_arch(arch));
  for (const Knob& k : space->knobs())
    if (k.name == "tensor_core") return true;
  return false;
}

// `random` random configs of the workload's space with the tensor-core
// schedule chosen, plus the default (which chooses it), emulated.
Tally check_mma_configs(const std::string& workload, int random, uint64_t seed, const std::string& dir) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload(workload);
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  const Config def = t.default_config(op, gpu, *space);
  CHECK(def.annotate("tensor_core") == "mma");
  std::mt19937_64 rng(seed);
  Tally tally;
  check_config(op, def, dir, seed, &tally, kDefaultConfigSpillBytes);
  for (int c = 0; c < random; ++c) {
    nlohmann::json j = space->random(rng).to_json();
    j["tensor_core"] = "mma";
    check_config(op, space->from_json(j), dir, seed + 1 + static_cast<uint64_t>(c), &tally);
  }
  return tally;
}

}  // namespace

TEST_CASE("cuda tensor cores: offered for f16/bf16 GEMMs of whole fragments on sm_80 and later",
          "[gpu][tensorcore]") {
  CHECK(offers_mma("matmul:M=64,N=64,K=32,dtype=f16", "sm_80"));
  CHECK(offers_mma("matmul:M=64,N=64,K=32,dtype=bf16", "sm_90"));
  CHECK(offers_mma("batch_matmul:B=2,M=16,N=8,K=16,dtype=f16", "sm_86"));
  CHECK(offers_mma("dense:N=32,IN=64,OUT=24,dtype=bf16", "sm_80"));
  CHECK_FALSE(offers_mma("matmul:M=64,N=64,K=32,dtype=f16", "sm_75"));  // no m16n8k16 f16 before sm_80
  CHECK_FALSE(offers_mma("matmul:M=64,N=64,K=32", "sm_90"));            // f32
  CHECK_FALSE(offers_mma("matmul:M=17,N=64,K=32,dtype=f16", "sm_90"));  // M not whole fragments
  CHECK_FALSE(offers_mma("matmul:M=64,N=12,K=32,dtype=f16", "sm_90"));
  CHECK_FALSE(offers_mma("matmul:M=64,N=64,K=24,dtype=f16", "sm_90"));
  // conv2d_nhwc: at least 16 output positions an image (padded to whole
  // fragments), any C (padded to 16-channel steps), 8-channel fragments of K.
  CHECK(offers_mma("conv2d_nhwc:N=1,C=64,H=7,W=7,K=64,R=3,S=3,pad=1,dtype=f16", "sm_80"));
  CHECK(offers_mma("conv2d_nhwc:N=1,C=16,H=5,W=5,K=8,R=1,S=1,dtype=bf16", "sm_90"));
  CHECK(offers_mma("conv2d_nhwc:N=1,C=3,H=7,W=7,K=64,R=3,S=3,pad=1,dtype=f16", "sm_80"));  // C padded to 16
  CHECK_FALSE(offers_mma("conv2d_nhwc:N=1,C=32,H=7,W=7,K=12,R=3,S=3,pad=1,dtype=f16", "sm_80"));
  CHECK_FALSE(offers_mma("conv2d_nhwc:N=1,C=32,H=3,W=3,K=32,R=3,S=3,pad=1,dtype=f16", "sm_80"));  // 9 positions
  CHECK_FALSE(offers_mma("conv2d_nhwc:N=1,C=32,H=7,W=7,K=32,R=3,S=3,pad=1", "sm_80"));
  CHECK_FALSE(offers_mma("conv2d:N=1,C=32,H=7,W=7,K=32,R=3,S=3,pad=1,dtype=f16", "sm_80"));  // NCHW
}

TEST_CASE("cuda tensor cores: the default config's CUDA C loads fragments with ldmatrix and runs mma.sync",
          "[gpu][tensorcore]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_80");
  OpInstance op = build_workload("matmul:M=64,N=64,K=64,dtype=bf16,bias=1,relu=1");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  const CudaSource src = gpu_source(op, t.default_config(op, gpu, *space), gpu);
  CHECK(src.code.find("kiln_mma_bf16(") != std::string::npos);
  CHECK(src.code.find("kiln_mma_load_a<0>(") != std::string::npos);
  CHECK(src.code.find("kiln_mma_load_b<0>(") != std::string::npos);
  CHECK(src.code.find("kiln_mma_store(C_shared") != std::string::npos);
  REQUIRE(src.launches.size() == 1);
  CHECK(src.launches[0].block == std::array<int64_t, 3>{{32, 4, 1}});  // 2 x 2 warps
  // A config stored before the knob existed keeps the plain schedule.
  nlohmann::json j = t.default_config(op, gpu, *space).to_json();
  for (const char* k : {"tensor_core", "mma_m", "mma_n", "mma_k"}) j.erase(k);
  const CudaSource plain = gpu_source(op, space->from_json(j), gpu);
  CHECK(plain.code.find("kiln_mma") == std::string::npos);
}

TEST_CASE("cuda tensor cores: more batches than grid.z allows fold into blockIdx.x", "[gpu][tensorcore]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload("batch_matmul:B=70000,M=16,N=16,K=16,dtype=f16");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  const Config cfg = t.default_config(op, gpu, *space);
  REQUIRE(cfg.annotate("tensor_core") == "mma");
  const CudaSource src = gpu_source(op, cfg, gpu);
  REQUIRE(src.launches.size() == 1);
  CHECK(src.launches[0].grid[0] * src.launches[0].grid[1] * src.launches[0].grid[2] >= 70000);
  CHECK(src.launches[0].grid[2] == 1);
}

TEST_CASE("cuda tensor cores: f16 and bf16 GEMMs on mma, emulated against the interpreter",
          "[gpu][tensorcore][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_mma");
  Tally t;
  t.add(check_mma_configs("matmul:M=64,N=64,K=32,dtype=f16", 2, 1, dir.path));
  // Odd numbers of fragments (3 x 5 x 3), bias and relu.
  t.add(check_mma_configs("matmul:M=48,N=40,K=48,dtype=bf16,bias=1,relu=1", 2, 2, dir.path));
  t.add(check_mma_configs("matmul:M=32,N=24,K=32,dtype=f16,trans_a=1,gelu=1", 2, 3, dir.path));
  t.add(check_mma_configs("matmul:M=16,N=16,K=64,dtype=bf16,trans_b=1", 2, 4, dir.path));
  t.add(check_mma_configs("dense:N=32,IN=32,OUT=24,dtype=f16,bias=1", 2, 5, dir.path));
  t.add(check_mma_configs("batch_matmul:B=3,M=16,N=16,K=32,dtype=bf16,trans_b=1", 2, 6, dir.path));
  t.add(check_mma_configs("batch_matmul:B=2,M=32,N=8,K=16,dtype=f16", 2, 7, dir.path));
  CHECK(t.ran + t.rejected == 21);
  CHECK(t.ran >= 14);
}

TEST_CASE("cuda tensor cores: NHWC convolutions as implicit GEMMs on mma, emulated against the interpreter",
          "[gpu][tensorcore][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_mma_conv");
  Tally t;
  // 49 positions padded to 64 rows; stride 2 with bias and relu; a 1x1
  // layer; dilation with padding wider than the window's reach.
  t.add(check_mma_configs("conv2d_nhwc:N=1,C=16,H=7,W=7,K=8,R=3,S=3,pad=1,dtype=f16", 2, 21, dir.path));
  t.add(check_mma_configs("conv2d_nhwc:N=2,C=32,H=9,W=9,K=16,R=3,S=3,stride=2,pad=1,dtype=bf16,bias=1,relu=1", 2, 22,
                          dir.path));
  t.add(check_mma_configs("conv2d_nhwc:N=1,C=16,H=5,W=5,K=24,R=1,S=1,dtype=f16", 2, 23, dir.path));
  t.add(check_mma_configs("conv2d_nhwc:N=1,C=16,H=9,W=9,K=8,R=3,S=3,pad=2,dilation=2,dtype=bf16", 2, 24, dir.path));
  // Channels padded with zeros to a 16-channel step (3 -> 16, 20 -> 32).
  t.add(check_mma_configs("conv2d_nhwc:N=1,C=3,H=11,W=11,K=16,R=3,S=3,stride=2,pad=1,dtype=f16,bias=1,relu=1", 2, 25,
                          dir.path));
  t.add(check_mma_configs("conv2d_nhwc:N=1,C=20,H=5,W=5,K=8,R=1,S=1,dtype=bf16", 2, 26, dir.path));
  CHECK(t.ran + t.rejected == 18);
  CHECK(t.ran >= 12);
}

TEST_CASE("cuda tensor cores: realistic shapes compile with NVRTC for sm_80 and sm_90", "[gpu][tensorcore][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const Tally t = check_nvrtc({"matmul:M=4096,N=4096,K=4096,dtype=f16", "dense:N=128,IN=768,OUT=3072,dtype=bf16,bias=1,gelu=1",
                               "batch_matmul:B=12,M=128,N=128,K=64,dtype=f16",
                               "conv2d_nhwc:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=f16,bias=1,relu=1",
                               "conv2d_nhwc:N=1,C=256,H=14,W=14,K=512,R=1,S=1,stride=2,dtype=bf16",
                               "conv2d_nhwc:N=1,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,dtype=f16,bias=1,relu=1"},
                              2, 8);
  CHECK(t.ran >= 24);
}

TEST_CASE("cuda tensor cores: warp scope is for tensor intrinsics on whole warps", "[gpu][tensorcore][errors]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_80");
  OpInstance op = build_workload("matmul:M=64,N=64,K=32,dtype=f16");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  const Config cfg = t.default_config(op, gpu, *space);
  ScheduledOp so = t.apply_config(op, cfg);
  LoweredFunc f = lower_gpu(*so.schedule, so.args, "mm", gpu);
  // The same kernel for an architecture without the instructions.
  GpuLimits turing = gpu_limits_for_arch("sm_75");
  CHECK_THROWS_WITH(emit_cuda(f, turing), Catch::Contains("needs sm_80 or later; the target is sm_75"));

  // A warp-scope stage read element by element.
  {
    Tensor A = placeholder({Expr(32), Expr(32)}, DType::f16(), "A");
    Tensor B = compute({Expr(32), Expr(32)}, [&](Var i, Var j) { return A(i, j) + A(i, j); }, "B");
    Schedule s({B});
    Tensor Aw = s.cache_read(A, MemScope::kWarp, {s.current_op(B)});
    s[Aw].compute_at(s[B], s[B].axis()[0]);
    s[B].bind(s[B].axis()[0], "blockIdx.x");
    s[B].bind(s[B].axis()[1], "threadIdx.x");
    CHECK_THROWS_WITH(lower_gpu(s, {A, B}, "bad", gpu), Catch::Contains("no tensorized stage reads or writes it"));
  }
}
