// Reductions across the threads of a GPU block (a reduction axis bound to
// threadIdx), without a GPU: hand schedules of every strategy
// (warp shuffles, whole warps then shared memory, a shared-memory tree),
// every combiner and both result scopes, and the cuda templates of softmax
// and layer_norm on random configs and shapes, run through the CUDA
// emulation against the reference interpreter and compiled by NVRTC; plus
// the user errors of binding reductions.
#include <catch2/catch.hpp>
#include <random>

#include "compute/expr_ops.h"
#include "compute/printer.h"
#include "schedule/gpu_kernels.h"
#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/test_seed.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

struct RowReduceCase {
  int64_t M = 5, N = 37;
  int64_t threads = 32;  // threads of the reduction (along the reduce tag)
  int64_t rows = 2;      // rows per block (along the other tag)
  Combiner combiner = Combiner::kSum;
  bool along_y = false;  // reduce across threadIdx.y, rows along threadIdx.x
  MemScope scope = MemScope::kLocal;
  int64_t reduce_threads = 0;  // the reduction's own thread count, when it differs
};

// out[i, j] = x[i, j] - reduce_k x[i, k], the reduction across threads at
// the output's row loop, its result in local or shared memory.
struct RowReduce {
  OpInstance op;
  ScheduledOp so;
};

RowReduce row_reduce(const RowReduceCase& c) {
  RowReduce r;
  Tensor x = placeholder({c.M, c.N}, DType::f32(), "x");
  IterVar k = reduce_axis(static_cast<int>(c.N), "k");
  Tensor red = compute(
      {c.M},
      [&](Var i) {
        switch (c.combiner) {
          case Combiner::kSum:
            return sum(x(i, k->var), {k});
          case Combiner::kMax:
            return max_reduce(x(i, k->var), {k});
          case Combiner::kMin:
            return min_reduce(x(i, k->var), {k});
          case Combiner::kProd:
            break;
        }
        // Products near 1, so that long rows neither vanish nor overflow.
        return ReduceNode::make(Combiner::kProd, make_const(DType::f32(), 1.0) + x(i, k->var) * 0.01f, {k});
      },
      "red");
  Tensor out = compute(
      {c.M, c.N}, [&](Var i, Var j) { return x(i, j) - red(i); }, "out");
  r.op.op = "row_reduce";
  r.op.inputs = {x};
  r.op.outputs = {out};
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  const std::string reduce_tag = c.along_y ? "threadIdx.y" : "threadIdx.x";
  const std::string row_tag = c.along_y ? "threadIdx.x" : "threadIdx.y";
  Stage so = s[out];
  IterVar ib, ii, jo, jt;
  so.split(so.axis()[0], c.rows, &ib, &ii);
  so.split(so.axis()[1], c.threads, &jo, &jt);
  so.reorder({ib, ii, jt, jo});
  so.bind(ib, "blockIdx.x");
  so.bind(ii, row_tag);
  so.bind(jt, reduce_tag);
  Stage sr = s[red];
  sr.compute_at(so, ii);
  sr.set_scope(c.scope);
  // In shared memory the stage holds the block's rows: each row's threads
  // reduce their own row.
  if (c.scope == MemScope::kShared) sr.bind(sr.axis()[0], row_tag);
  IterVar ko, kt;
  sr.split(sr.reduce_axis()[0], c.reduce_threads ? c.reduce_threads : c.threads, &ko, &kt);
  sr.bind(kt, reduce_tag);
  r.so = ScheduledOp{sch, {x, out}};
  return r;
}

CudaSource row_reduce_source(const RowReduceCase& c) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  RowReduce r = row_reduce(c);
  return emit_cuda(lower_gpu(*r.so.schedule, r.so.args, "row_reduce", gpu), gpu);
}

std::string run_row_reduce(const RowReduceCase& c, const std::string& dir, uint64_t seed) {
  RowReduce r = row_reduce(c);
  return run_emulated_and_check(r.op, row_reduce_source(c), dir, seed);
}

std::string lowering_error(const RowReduceCase& c) {
  try {
    row_reduce_source(c);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const std::vector<int64_t> kSizes{1, 2, 3, 5, 7, 13, 16, 31, 37, 64, 100};

int64_t pick(std::mt19937_64& rng, const std::vector<int64_t>& v) { return v[rng() % v.size()]; }

// The default and `random` random configs of a row template's workload,
// emulated and checked. Returns how many there were.
int check_row_template(const std::string& workload, int random, uint64_t seed, const std::string& dir) {
  check_emulated(workload, {}, random, seed, dir);
  return random + 1;
}

}  // namespace

TEST_CASE("cross-thread reduction: the strategy follows the group's shape", "[gpu][reduction]") {
  CHECK(allreduce_strategy(0, {{32, 4, 1}}) == AllreduceStrategy::kWarpShuffle);
  CHECK(allreduce_strategy(0, {{8, 3, 1}}) == AllreduceStrategy::kWarpShuffle);
  CHECK(allreduce_strategy(0, {{256, 1, 1}}) == AllreduceStrategy::kWarpsThenShared);
  CHECK(allreduce_strategy(0, {{48, 2, 1}}) == AllreduceStrategy::kSharedTree);
  CHECK(allreduce_strategy(1, {{4, 8, 1}}) == AllreduceStrategy::kSharedTree);
  CHECK(allreduce_scratch_elems(AllreduceStrategy::kWarpShuffle, {{32, 4, 1}}) == 0);
  CHECK(allreduce_scratch_elems(AllreduceStrategy::kWarpsThenShared, {{256, 2, 1}}) == 16);
  CHECK(allreduce_scratch_elems(AllreduceStrategy::kSharedTree, {{48, 2, 1}}) == 96);

  RowReduceCase c;
  c.N = 300;
  c.threads = 128;
  c.rows = 2;
  const CudaSource src = row_reduce_source(c);
  INFO(src.code);
  CHECK(src.code.find("kiln_allreduce<kiln_sum_op, 1, 0, 128, 2, 1>") != std::string::npos);
  CHECK(src.code.find("KILN_SHARED(float, kiln_reduce_scratch_float, 8)") != std::string::npos);
  CHECK(src.launches.at(0).shared_bytes == 32);
  c.threads = 16;
  const CudaSource warp = row_reduce_source(c);
  CHECK(warp.code.find("kiln_allreduce<kiln_sum_op, 0, 0, 16, 2, 1>") != std::string::npos);
  CHECK(warp.code.find("kiln_reduce_scratch") == std::string::npos);
  CHECK(warp.launches.at(0).shared_bytes == 0);
}

namespace {

struct GroupShape {
  int64_t threads, rows;
  bool along_y;
};
// Shuffles (1, 4, 32 lanes; a partial last warp), whole warps (64, 128),
// trees (48 along x; 6 along y).
const std::vector<GroupShape> kGroupShapes{{1, 3, false},   {4, 3, false},  {32, 2, false}, {64, 1, false},
                                           {128, 3, false}, {48, 2, false}, {6, 5, true}};

std::string run_group_case(const GroupShape& sh, Combiner comb, MemScope scope, const std::string& dir, uint64_t seed) {
  RowReduceCase c;
  c.M = 7;
  c.N = 131;  // a prime: every reduction has a tail
  c.threads = sh.threads;
  c.rows = sh.rows;
  c.along_y = sh.along_y;
  c.combiner = comb;
  c.scope = scope;
  return run_row_reduce(c, dir, seed);
}

}  // namespace

TEST_CASE("cross-thread reduction: every strategy and scope, emulated against the interpreter",
          "[gpu][reduction][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_red");
  int ran = 0;
  for (size_t i = 0; i < kGroupShapes.size(); ++i)
    for (MemScope scope : {MemScope::kLocal, MemScope::kShared}) {
      // The combiners take turns over the shapes.
      const Combiner comb = static_cast<Combiner>((i + (scope == MemScope::kShared ? 1 : 0)) % 4);
      INFO("threads " << kGroupShapes[i].threads << (kGroupShapes[i].along_y ? " along y" : " along x") << ", rows "
                      << kGroupShapes[i].rows << ", combiner " << combiner_name(comb) << ", scope "
                      << mem_scope_name(scope));
      CHECK(run_group_case(kGroupShapes[i], comb, scope, dir.path, 100 + ran) == "");
      ++ran;
    }
  CHECK(ran == 14);
}

TEST_CASE("cross-thread reduction: every strategy, combiner and scope together", "[gpu][reduction][emulation][.slow]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_red_all");
  int ran = 0;
  for (const GroupShape& sh : kGroupShapes)
    for (Combiner comb : {Combiner::kSum, Combiner::kMax, Combiner::kMin, Combiner::kProd})
      for (MemScope scope : {MemScope::kLocal, MemScope::kShared}) {
        INFO("threads " << sh.threads << (sh.along_y ? " along y" : " along x") << ", rows " << sh.rows
                        << ", combiner " << combiner_name(comb) << ", scope " << mem_scope_name(scope));
        CHECK(run_group_case(sh, comb, scope, dir.path, 200 + ran) == "");
        ++ran;
      }
  CHECK(ran == 56);
}

TEST_CASE("cross-thread reduction: random shapes and thread counts, emulated", "[gpu][reduction][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_red_rand");
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  for (int i = 0; i < 6; ++i) {
    RowReduceCase c;
    c.M = pick(rng, kSizes);
    c.N = pick(rng, kSizes);
    c.threads = pick(rng, {1, 2, 3, 8, 16, 32, 33, 64, 96, 128});
    c.rows = pick(rng, {1, 2, 3, 4});
    c.along_y = rng() % 4 == 0 && c.threads <= 64;
    c.combiner = static_cast<Combiner>(rng() % 3);
    c.scope = rng() % 2 ? MemScope::kLocal : MemScope::kShared;
    INFO("M " << c.M << " N " << c.N << " threads " << c.threads << " rows " << c.rows << " along_y " << c.along_y
              << " combiner " << combiner_name(c.combiner) << " scope " << mem_scope_name(c.scope));
    CHECK(run_row_reduce(c, dir.path, run + static_cast<uint64_t>(i)) == "");
  }
}

TEST_CASE("cross-thread reduction: binding errors in schedule terms", "[gpu][reduction][errors]") {
  Tensor x = placeholder({4, 8}, DType::f32(), "x");
  IterVar k = reduce_axis(8, "k");
  IterVar l = reduce_axis(8, "l");
  Tensor r = compute(
      {4}, [&](Var i) { return sum(x(i, k->var) * x(i, l->var), {k, l}); }, "r");
  Schedule s({r});
  REQUIRE_THROWS_WITH(s[r].bind(s[r].reduce_axis()[0], "blockIdx.x"),
                      Catch::Contains("reduction axis and cannot be bound to blockIdx.x") &&
                          Catch::Contains("the blocks of a kernel cannot combine their results"));
  s[r].bind(s[r].reduce_axis()[0], "threadIdx.x");
  REQUIRE_THROWS_WITH(s[r].bind(s[r].reduce_axis()[1], "threadIdx.y"),
                      Catch::Contains("already reduces across threads along 'k'") &&
                          Catch::Contains("at most one reduction axis per stage"));

  // The reduction's threads fewer than the block's: the others would skip
  // the barriers inside it.
  RowReduceCase c;
  c.threads = 64;
  c.reduce_threads = 32;
  CHECK_THAT(lowering_error(c), Catch::Contains("a reduction across threads sits under thread-dependent control flow"));

  // On a CPU target the llvm backend says what is wrong.
  RowReduceCase cpu;
  RowReduce rr = row_reduce(cpu);
  LoweredFunc f = lower(*rr.so.schedule, rr.so.args, "row_reduce");
  std::string printed;
  CHECK_NOTHROW(printed = to_string(f.body));
  CHECK_THAT(printed, Catch::Contains("allreduce_sum("));
}

TEST_CASE("cuda softmax and layer_norm templates: fixed shapes, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_rows");
  int n = 0;
  n += check_row_template("softmax:M=1,N=1", 2, 31, dir.path);
  n += check_row_template("softmax:M=7,N=131", 3, 32, dir.path);
  n += check_row_template("softmax:M=12,N=128", 3, 33, dir.path);
  n += check_row_template("layer_norm:M=3,N=768", 2, 34, dir.path);
  n += check_row_template("layer_norm:M=13,N=37", 3, 35, dir.path);
  CHECK(n == 18);
}

TEST_CASE("cuda softmax and layer_norm templates: random shapes and configs, emulated", "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_rows_rand");
  const EmulatedNvrtcCounts nvrtc_before = emulated_nvrtc_counts();
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  for (int i = 0; i < 6; ++i) {
    const std::string w = std::string(rng() % 2 ? "softmax" : "layer_norm") + ":M=" +
                          std::to_string(pick(rng, kSizes)) + ",N=" + std::to_string(pick(rng, kSizes));
    check_row_template(w, 1, run + static_cast<uint64_t>(i), dir.path);
  }
  check_nvrtc_covered(nvrtc_before);  // and NVRTC compiled each for sm_80 and sm_90
}

TEST_CASE("cuda softmax and layer_norm templates: a longer random sweep", "[gpu][template][emulation][.slow]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_rows_sweep");
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run + 3);
  for (int i = 0; i < 30; ++i) {
    const std::string w = std::string(rng() % 2 ? "softmax" : "layer_norm") + ":M=" +
                          std::to_string(pick(rng, kSizes)) + ",N=" + std::to_string(pick(rng, {1, 7, 100, 257, 768, 1031}));
    check_row_template(w, 2, run + static_cast<uint64_t>(i), dir.path);
  }
}

TEST_CASE("cuda softmax and layer_norm templates: NVRTC compiles random configs for sm_80 and sm_90",
          "[gpu][template][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  // bert-base: attention softmax at sequence 128 and 512, layer_norm of 768.
  const int compiled = check_nvrtc(
      {"softmax:M=1536,N=128", "softmax:M=6144,N=512", "layer_norm:M=128,N=768", "layer_norm:M=7,N=131"}, 2, run)
                           .ran;
  CHECK(compiled >= 8);  // the default configs at least, which always fit
}
