// Cost model: feature values on hand-written loop nests (checked against
// hand-computed numbers), fixed feature length across schedules, the
// pairwise ranking metric, and the XGBoost ranker on synthetic data
// (learning, determinism, untrained and degenerate fits, errors).
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <random>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "costmodel/features.h"
#include "costmodel/ranking_metrics.h"
#include "costmodel/xgb_model.h"
#include "kernels/conv2d.h"
#include "kernels/matmul.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "support/te_examples.h"

using namespace kiln;
namespace ft = kiln::features;

namespace {

float lg(double x) { return static_cast<float>(std::log2(1.0 + x)); }

// parallel (i, 0, 8)
//   for (k, 0, 16)
//     vectorized (j, 0, 4)
//       if (i*4 + j < 30)
//         C[i*4 + j] = C[i*4 + j] + A[i*16 + k] * B[k*4 + j]
// (preceded by an init nest that stores zeros, executed less often).
LoweredFunc hand_written_matmul() {
  Var a = Var::handle("A", DType::f32()), b = Var::handle("B", DType::f32()), c = Var::handle("C", DType::f32());
  Var i("i"), k("k"), j("j"), i0("i0"), j0("j0");
  Expr c_index = i * 4 + j;
  Expr value = LoadNode::make(DType::f32(), c, c_index) +
               LoadNode::make(DType::f32(), a, i * 16 + k) * LoadNode::make(DType::f32(), b, k * 4 + j);
  Stmt update = ForNode::make(
      i, 0, 8, ForKind::kParallel,
      ForNode::make(k, 0, 16, ForKind::kSerial,
                    ForNode::make(j, 0, 4, ForKind::kVectorized,
                                  IfThenElseNode::make(c_index < 30, StoreNode::make(c, value, c_index)))));
  Stmt init = ForNode::make(
      i0, 0, 8, ForKind::kSerial,
      ForNode::make(j0, 0, 4, ForKind::kSerial, StoreNode::make(c, make_zero(DType::f32()), i0 * 4 + j0)));
  LoweredFunc f;
  f.name = "hand";
  f.args = {{a, "A", DType::f32(), {8, 16}}, {b, "B", DType::f32(), {16, 4}}, {c, "C", DType::f32(), {8, 4}}};
  f.body = SeqNode::make({init, update});
  return f;
}

// Checks one buffer's five features at one loop slot.
void check_buffer(const FeatureVector& v, int slot, int buffer, double stride, double bytes, double lines, double count,
                  double reuse) {
  const float* q = v.data() + ft::buffer_offset(slot, buffer);
  INFO("slot " << slot << " buffer " << buffer);
  CHECK(q[0] == Approx(lg(stride)));
  CHECK(q[1] == Approx(lg(bytes)));
  CHECK(q[2] == Approx(lg(lines)));
  CHECK(q[3] == Approx(lg(count)));
  CHECK(q[4] == Approx(lg(reuse)));
}

LoweredFunc lower_plain_matmul(int variant) {
  auto mm = testing::plain_matmul(16, 16, 16);
  Schedule s({mm.C});
  Stage st = s[mm.C];
  IterVar i = st.axis()[0], j = st.axis()[1], k = st.reduce_axis()[0];
  IterVar jo, ji, ko, ki;
  if (variant == 0) {  // j split by 4 and vectorized, innermost
    st.split(j, 4, &jo, &ji);
    st.reorder({i, k, jo, ji});
    st.vectorize(ji);
  } else if (variant == 1) {  // plus k split and unrolled
    st.split(j, 8, &jo, &ji);
    st.split(k, 2, &ko, &ki);
    st.reorder({i, jo, ko, ki, ji});
    st.unroll(ki);
    st.vectorize(ji);
  } else {  // i parallel, k innermost (strided reads of B)
    st.parallel(i);
  }
  return lower(s, {mm.A, mm.B, mm.C}, "mm", LowerDepth::kAnnotatedLoops);
}

}  // namespace

TEST_CASE("features of a hand-written loop nest match hand-computed values", "[costmodel]") {
  FeatureVector v = extract_features(hand_written_matmul());
  REQUIRE(v.size() == static_cast<size_t>(ft::kFeatureLength));

  // Loops of the hottest store (the update), innermost first: j, k, i.
  struct LoopWant {
    double extent;
    int level, kind;  // kind: 0 serial, 1 parallel, 2 vectorized, 3 unrolled
    double inner, outer, working_set;
    int guarded;
  };
  // Working sets: j: C 16 + A 4 + B 16; k: C 16 + A 64 + B 256; i: C 128 + A 512 + B 256.
  const LoopWant want[] = {{4, 2, 2, 4, 512, 36, 1}, {16, 1, 0, 64, 128, 336, 0}, {8, 0, 1, 512, 8, 896, 1}};
  for (int s = 0; s < 3; ++s) {
    const float* p = v.data() + ft::loop_offset(s);
    INFO("slot " << s);
    CHECK(p[0] == 1);
    CHECK(p[1] == Approx(lg(want[s].extent)));
    CHECK(p[2] == want[s].level);
    for (int kind = 0; kind < 4; ++kind) CHECK(p[3 + kind] == (kind == want[s].kind ? 1 : 0));
    CHECK(p[7] == Approx(lg(want[s].inner)));
    CHECK(p[8] == Approx(lg(want[s].outer)));
    CHECK(p[9] == Approx(lg(want[s].working_set)));
    CHECK(p[10] == want[s].guarded);
  }
  // Buffers: 0 = C (stored, and read back: 2 accesses), 1 = A, 2 = B, 3 = none.
  // slot 0 (j): C[i*4+j] 4 elements in one line; A[i*16+k] one element.
  check_buffer(v, 0, 0, 1, 16, 1, 8, 2);
  check_buffer(v, 0, 1, 0, 4, 1, 4, 4);
  check_buffer(v, 0, 2, 1, 16, 1, 4, 1);
  // slot 1 (k): C still 4 elements; A 16 contiguous; B[k*4+j] 64 contiguous (4 lines).
  check_buffer(v, 1, 0, 0, 16, 1, 128, 32);
  check_buffer(v, 1, 1, 1, 64, 1, 64, 4);
  check_buffer(v, 1, 2, 4, 256, 4, 64, 1);
  // slot 2 (i): C 32 elements (2 lines), A 128 (8 lines), B unchanged.
  check_buffer(v, 2, 0, 4, 128, 2, 1024, 32);
  check_buffer(v, 2, 1, 16, 512, 8, 512, 4);
  check_buffer(v, 2, 2, 0, 256, 4, 512, 8);
  for (int s = 0; s < 3; ++s)
    for (int f = 0; f < ft::kBufferStride; ++f) CHECK(v[ft::buffer_offset(s, 3) + f] == 0);
  // Slots past the path are empty.
  for (int s = 3; s < ft::kLoopSlots; ++s)
    for (int f = 0; f < ft::kLoopStride; ++f) CHECK(v[ft::loop_offset(s) + f] == 0);

  const float* g = v.data() + ft::kGlobalOffset;
  CHECK(g[0] == Approx(lg(512)));  // update executions
  CHECK(g[1] == 3);                // loops on the path
  CHECK(g[2] == Approx(lg(512 + 32)));
  CHECK(g[3] == Approx(lg(32)));  // the init nest
  CHECK(g[4] == 2);               // stores
  CHECK(g[5] == 3);               // serial loops: k, i0, j0
  CHECK(g[6] == 1);               // parallel
  CHECK(g[7] == 1);               // vectorized
  CHECK(g[8] == 0);               // unrolled
  CHECK(g[9] == Approx(lg(8)));   // parallel extent
  CHECK(g[10] == 1);              // outermost loop parallel
  CHECK(g[11] == Approx(lg(4)));  // vector extent
  CHECK(g[12] == 1);              // innermost loop vectorized
  CHECK(g[13] == 0);              // no unrolled loop
  CHECK(g[14] == Approx(lg(4)));  // register tile: the vectorized j
  CHECK(g[15] == 0);
  CHECK(g[16] == 0);  // no allocations
  CHECK(g[17] == 2);  // + and *
  CHECK(g[18] == 3);  // loads
  CHECK(g[19] == 3);  // every level fits L1
  CHECK(g[20] == 3);
  CHECK(g[21] == 0);
  // Everything fits L1: each buffer's lines of the whole nest, once
  // (C 2 + A 8 + B 4 lines of 64 bytes).
  CHECK(g[22] == Approx(lg(14 * 64)));
  CHECK(g[23] == Approx(lg(14 * 64)));
  CHECK(g[24] == Approx(lg(512 / 4)));  // vector operations
  CHECK(g[25] == Approx(lg(4)));        // register tile: 4 elements of C
  CHECK(g[26] == Approx(lg(1)));        // one vector register
  CHECK(g[27] == Approx(lg(4.0 * 3 / (4 + 1 + 4))));
  CHECK(g[28] == 1);  // one guard
  CHECK(g[29] == 1);  // on the vectorized j
  CHECK(g[30] == Approx(lg(512 / 4 / 8)));
  CHECK(g[31] == Approx(0.25));  // 4 of 16 lanes
  struct BufferWant {
    double footprint, count, reuse_iters, reuse_bytes, reuse_count, tile;
    int stride_class;  // along the vectorized j: 0, 1, other
  };
  // C reused along k (inside: j, 4 iterations, 36 bytes), A along j
  // (innermost: distance 1), B along i (inside: k and j, 336 bytes).
  const BufferWant bw[] = {{128, 1024, 4, 36, 16, 4, 1}, {512, 512, 1, 0, 4, 1, 0}, {256, 512, 64, 336, 8, 4, 1}};
  for (int b = 0; b < 3; ++b) {
    const float* q = g + ft::kGlobalBufferOffset + b * ft::kGlobalBufferStride;
    INFO("buffer " << b);
    CHECK(q[0] == Approx(lg(bw[b].footprint)));
    CHECK(q[1] == Approx(lg(bw[b].count)));
    for (int c = 0; c < 3; ++c) CHECK(q[2 + c] == (c == bw[b].stride_class ? 1 : 0));
    CHECK(q[5] == Approx(lg(bw[b].reuse_iters)));
    CHECK(q[6] == Approx(lg(bw[b].reuse_bytes)));
    CHECK(q[7] == Approx(lg(bw[b].reuse_count)));
    CHECK(q[8] == Approx(lg(bw[b].tile)));
  }
  for (int f = 0; f < ft::kGlobalBufferStride; ++f)
    CHECK(g[ft::kGlobalBufferOffset + 3 * ft::kGlobalBufferStride + f] == 0);
}

TEST_CASE("features of lowered schedules have a fixed length and follow the schedule", "[costmodel]") {
  FeatureVector v0 = extract_features(lower_plain_matmul(0));
  FeatureVector v1 = extract_features(lower_plain_matmul(1));
  FeatureVector v2 = extract_features(lower_plain_matmul(2));
  REQUIRE(v0.size() == static_cast<size_t>(ft::kFeatureLength));
  REQUIRE(v1.size() == v0.size());
  REQUIRE(v2.size() == v0.size());
  CHECK(v0 != v1);
  CHECK(v1 != v2);

  // Variant 0: i, k, jo, ji(vectorized 4).
  CHECK(v0[ft::loop_offset(0) + 5] == 1);
  CHECK(v0[ft::loop_offset(0) + 1] == Approx(lg(4)));
  CHECK(v0[ft::buffer_offset(0, 0)] == Approx(lg(1)));   // C stride 1 along ji
  CHECK(v0[ft::buffer_offset(0, 1)] == 0);               // A broadcast along ji
  CHECK(v0[ft::buffer_offset(1, 2)] == Approx(lg(4)));   // B stride 4 along jo
  CHECK(v0[ft::buffer_offset(2, 2)] == Approx(lg(16)));  // B stride 16 along k
  CHECK(v0[ft::kGlobalOffset + 1] == 4);                 // four loops

  // Variant 1: ki unrolled by 2 just outside the vectorized ji (8 lanes).
  CHECK(v1[ft::loop_offset(1) + 6] == 1);
  CHECK(v1[ft::loop_offset(1) + 1] == Approx(lg(2)));
  CHECK(v1[ft::kGlobalOffset + 14] == Approx(lg(16)));  // register tile 2 x 8
  CHECK(v1[ft::kGlobalOffset + 1] == 5);

  // Variant 2: k innermost, serial; the outer i parallel.
  CHECK(v2[ft::loop_offset(0) + 3] == 1);
  CHECK(v2[ft::buffer_offset(0, 2)] == Approx(lg(16)));  // B[k*16 + j]
  CHECK(v2[ft::buffer_offset(0, 0)] == 0);               // C reused along k
  CHECK(v2[ft::kGlobalOffset + 10] == 1);
  CHECK(v2[ft::kGlobalOffset + 12] == 0);
}

TEST_CASE("features see through let-bound indices and bound symbolic tail extents", "[costmodel]") {
  // for (o, 0, 3)
  //   for (t, 0, min(4, 10 - o*4))
  //     let x = o*4 + t
  //     C[x] = A[x*2]
  Var a = Var::handle("A", DType::f32()), c = Var::handle("C", DType::f32());
  Var o("o"), t("t"), x("x");
  Stmt body = LetStmtNode::make(x, o * 4 + t, StoreNode::make(c, LoadNode::make(DType::f32(), a, x * 2), x));
  Stmt nest =
      ForNode::make(o, 0, 3, ForKind::kSerial, ForNode::make(t, 0, min(Expr(4), 10 - o * 4), ForKind::kSerial, body));
  LoweredFunc f;
  f.name = "tail";
  f.args = {{a, "A", DType::f32(), {20}}, {c, "C", DType::f32(), {10}}};
  f.body = nest;
  FeatureVector v = extract_features(f);
  CHECK(v[ft::loop_offset(0) + 1] == Approx(lg(4)));   // t: at most 4 iterations
  CHECK(v[ft::buffer_offset(0, 0)] == Approx(lg(1)));  // C stride along t
  CHECK(v[ft::buffer_offset(0, 1)] == Approx(lg(2)));  // A stride along t
  CHECK(v[ft::buffer_offset(1, 0)] == Approx(lg(4)));  // C stride along o
  CHECK(v[ft::buffer_offset(1, 1)] == Approx(lg(8)));  // A stride along o
  CHECK(v[ft::kGlobalOffset] == Approx(lg(12)));
}

TEST_CASE("features of an empty function are zeros", "[costmodel]") {
  LoweredFunc f;
  f.name = "empty";
  f.body = EvaluateNode::make(Expr(0));
  FeatureVector v = extract_features(f);
  REQUIRE(v.size() == static_cast<size_t>(ft::kFeatureLength));
  for (float x : v) CHECK(x == 0);
}

TEST_CASE("feature extraction of real matmul and conv kernels is deterministic and follows the schedule", "[costmodel]") {
  OpInstance mm = matmul_define(1024, 1024, 1024, DType::f32(), false, false);
  mm.op = "matmul";
  MatmulSchedule mcfg;
  mcfg.kb = 256;
  mcfg.k_unroll = 4;
  ScheduledOp smm = matmul_schedule(mm, mcfg);
  OpInstance conv = conv2d_define(1, 128, 28, 28, 128, 3, 3, 1, 1, 1, DType::f32());
  conv.op = "conv2d";
  Conv2dSchedule ccfg;
  ccfg.kb = 32;
  ccfg.owb = 14;
  ScheduledOp sconv = conv2d_schedule(conv, ccfg);
  for (auto* so : {&smm, &sconv}) {
    LoweredFunc f = lower(*so->schedule, so->args, "k", LowerDepth::kAnnotatedLoops);
    // (Its speed is bench/'s business; here: deterministic and right.)
    FeatureVector v = extract_features(f);
    CHECK(extract_features(f) == v);
    CHECK(v[ft::kGlobalOffset + 12] == 1);  // innermost loop vectorized
    CHECK(v[ft::kGlobalOffset + 9] > 0);    // parallel outer loop
  }
}

TEST_CASE("pairwise accuracy counts ordered pairs with different actual values", "[costmodel]") {
  CHECK(pairwise_accuracy({1, 2, 3}, {10, 20, 30}) == 1.0);
  CHECK(pairwise_accuracy({3, 2, 1}, {10, 20, 30}) == 0.0);
  CHECK(pairwise_accuracy({1, 1}, {1, 2}) == 0.5);                            // predicted tie: half
  CHECK(pairwise_accuracy({1, 2, 0}, {5, 5, 1}) == 1.0);                      // the equal pair is skipped
  CHECK(pairwise_accuracy({2, 1, 3, 0}, {1, 2, 3, 4}) == Approx(2.0 / 6.0));  // 2 of 6 pairs right
  CHECK(pairwise_accuracy({}, {}) == 0.5);
  CHECK(pairwise_accuracy({1, 2}, {7, 7}) == 0.5);
  CHECK_THROWS_AS(pairwise_accuracy({1}, {1, 2}), UserError);
}

namespace {

// Synthetic task: a nonlinear score of 12 random features (8 of them noise).
struct Synthetic {
  std::vector<FeatureVector> x;
  std::vector<float> y;
};

Synthetic synthetic(int n, uint64_t seed, float scale = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  Synthetic s;
  for (int i = 0; i < n; ++i) {
    FeatureVector v(12);
    for (auto& f : v) f = u(rng);
    double t = 2 * v[0] + (v[1] > 0.5 ? 1 : 0) + v[2] * v[3];
    s.x.push_back(v);
    s.y.push_back(scale * static_cast<float>(1 / (1 + t)));
  }
  return s;
}

}  // namespace

TEST_CASE("the XGBoost ranker learns a ranking of synthetic data", "[costmodel]") {
  // Three groups whose scores are normalized differently (per-task
  // normalization): only the order within a group matters.
  std::vector<FeatureVector> x;
  std::vector<float> y;
  std::vector<int> groups;
  for (int g = 0; g < 3; ++g) {
    Synthetic s = synthetic(200, 11 + g, 1.0f / (g + 1));
    x.insert(x.end(), s.x.begin(), s.x.end());
    y.insert(y.end(), s.y.begin(), s.y.end());
    groups.insert(groups.end(), s.x.size(), 2 - g);  // group ids need not be sorted or contiguous
  }
  XGBoostRanker model;
  CHECK_FALSE(model.trained());
  model.fit(x, y, groups);
  REQUIRE(model.trained());
  CHECK(model.num_features() == 12);
  Synthetic held_out = synthetic(150, 99);
  double acc = pairwise_accuracy(model.predict(held_out.x), held_out.y);
  std::cout << "synthetic held-out pairwise accuracy: " << acc << "\n";
  CHECK(acc > 0.9);
}

TEST_CASE("the XGBoost ranker is deterministic", "[costmodel]") {
  // One thread (the default): OpenMP teams of XGBoost spin-wait, which is
  // very slow on a loaded 2-core machine.
  Synthetic train = synthetic(120, 5), test = synthetic(40, 6);
  std::vector<int> groups(train.x.size(), 0);
  XGBoostRanker::Options o;
  o.num_rounds = 60;
  XGBoostRanker a(o), b(o);
  a.fit(train.x, train.y, groups);
  b.fit(train.x, train.y, groups);
  std::vector<float> pa = a.predict(test.x);
  CHECK(pa == b.predict(test.x));
  a.fit(train.x, train.y, groups);  // refit from scratch: same model
  CHECK(pa == a.predict(test.x));
  // Another seed samples other feature columns: another model.
  o.seed = 1;
  XGBoostRanker c(o);
  c.fit(train.x, train.y, groups);
  CHECK(pa != c.predict(test.x));
}

TEST_CASE("the XGBoost ranker stays untrained without pairs to rank", "[costmodel]") {
  Synthetic s = synthetic(20, 3);
  XGBoostRanker model;
  CHECK(model.predict(s.x) == std::vector<float>(20, 0.0f));
  CHECK(model.predict({}).empty());

  model.fit({s.x[0]}, {0.5f}, {0});  // one sample
  CHECK_FALSE(model.trained());
  model.fit({}, {}, {});
  CHECK_FALSE(model.trained());
  // Scores differ only across groups: no pair inside a group.
  model.fit({s.x[0], s.x[1], s.x[2], s.x[3]}, {1, 1, 0.5f, 0.5f}, {0, 0, 1, 1});
  CHECK_FALSE(model.trained());
  CHECK(model.predict(s.x) == std::vector<float>(20, 0.0f));

  model.fit(s.x, s.y, std::vector<int>(20, 0));
  REQUIRE(model.trained());
  std::vector<float> p = model.predict(s.x);
  CHECK(p != std::vector<float>(20, 0.0f));
  // A later fit with all-equal scores starts from scratch: untrained again.
  model.fit(s.x, std::vector<float>(20, 1.0f), std::vector<int>(20, 0));
  CHECK_FALSE(model.trained());
  CHECK(model.num_features() == 0);
  CHECK(model.predict(s.x) == std::vector<float>(20, 0.0f));
}

TEST_CASE("the XGBoost ranker rejects inconsistent inputs", "[costmodel][user_error]") {
  Synthetic s = synthetic(10, 4);
  XGBoostRanker model;
  CHECK_THROWS_AS(model.fit(s.x, {1, 2}, std::vector<int>(10, 0)), UserError);
  std::vector<FeatureVector> ragged = s.x;
  ragged[3].push_back(1);
  CHECK_THROWS_AS(model.fit(ragged, s.y, std::vector<int>(10, 0)), UserError);
  std::vector<float> nan_scores = s.y;
  nan_scores[2] = std::nanf("");
  CHECK_THROWS_AS(model.fit(s.x, nan_scores, std::vector<int>(10, 0)), UserError);
  model.fit(s.x, s.y, std::vector<int>(10, 0));
  REQUIRE(model.trained());
  CHECK_THROWS_AS(model.predict({FeatureVector(5, 0.0f)}), UserError);
  CHECK_THROWS_AS(XGBoostRanker(XGBoostRanker::Options{0, 6, 0.2, 1, 1, 1, 0}), UserError);
}

namespace {

// The GPU block of a GPU-lowered function's features.
std::vector<float> gpu_block(const LoweredFunc& f) {
  FeatureVector v = extract_features(f);
  REQUIRE(v.size() == static_cast<size_t>(ft::kFeatureLength));
  return std::vector<float>(v.begin() + ft::kGpuOffset, v.begin() + ft::kLatencyOffset);
}

std::vector<float> gpu_template_block(const std::string& workload, const nlohmann::json& knobs) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload(workload);
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  ScheduledOp so = t.apply_config(op, space->nearest(knobs));
  return gpu_block(lower_gpu(*so.schedule, so.args, "f", gpu, LowerDepth::kAnnotatedLoops));
}

// B = A * 2 over 64 x 64, threads along the rows (adjacent addresses) or
// down the columns (a row apart).
LoweredFunc gpu_copy(bool threads_along_rows) {
  Tensor A = placeholder({64, 64}, DType::f32(), "A");
  Tensor B = compute(
      {64, 64}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "B");
  Schedule s({B});
  IterVar i = s[B].axis()[0], j = s[B].axis()[1];
  s[B].bind(threads_along_rows ? i : j, "blockIdx.x");
  s[B].bind(threads_along_rows ? j : i, "threadIdx.x");
  if (!threads_along_rows) s[B].reorder({j, i});
  return lower_gpu(s, {A, B}, "copy", gpu_limits_for_arch("sm_90"), LowerDepth::kAnnotatedLoops);
}

}  // namespace

TEST_CASE("features: the GPU block describes launch, occupancy, coalescing and bank conflicts", "[costmodel][gpu]") {
  // CPU kernels leave it zero.
  const OpInstance mm = build_workload("matmul:M=64,N=64,K=64");
  const OpDef& def = find_op("matmul");
  const ScheduledOp so = def.apply_config(mm, def.define_space(mm, CpuInfo{})->get(0));
  const FeatureVector cpu = extract_features(lower(*so.schedule, so.args, "cpu", LowerDepth::kAnnotatedLoops));
  for (int k = ft::kGpuOffset; k < ft::kLatencyOffset; ++k) CHECK(cpu[k] == 0.0f);

  // The GEMM template: 16 x 16 threads, 4 x 4 blocks, both tiles in shared memory.
  const std::vector<float> g = gpu_template_block(
      "matmul:M=256,N=256,K=64", {{"tile_y", {4, 16, 4}}, {"tile_x", {4, 16, 4}}, {"tile_k", {8, 8}}, {"shared", "both"}});
  CHECK(g[0] == 1.0f);
  CHECK(g[1] == Approx(feature_log(256)));
  CHECK(g[2] == Approx(feature_log(16)));
  CHECK(g[3] == Approx(feature_log(2 * 64 * 8 * 4)));
  CHECK(g[4] > 0.0f);
  CHECK(g[4] <= 1.0f);

  // Coalescing: 4 sectors per request when adjacent threads read adjacent
  // floats, 32 when they read a row apart.
  CHECK(gpu_block(gpu_copy(true))[8] == Approx(feature_log(4)));
  CHECK(gpu_block(gpu_copy(false))[8] == Approx(feature_log(32)));

  // Bank conflicts: softmax's shared row read 4 floats per thread apart
  // (vec 4) conflicts 4 ways, read by adjacent threads (vec 1) not at all;
  // and its reductions across threads are counted.
  const nlohmann::json base = {{"tile_rows", {64, 1}}, {"threads", 32}, {"cache", "shared"}};
  nlohmann::json v4 = base, v1 = base;
  v4["vec"] = 4;
  v1["vec"] = 1;
  const std::vector<float> s4 = gpu_template_block("softmax:M=64,N=128", v4);
  const std::vector<float> s1 = gpu_template_block("softmax:M=64,N=128", v1);
  CHECK(s1[9] == Approx(feature_log(1)));
  CHECK(s4[9] > s1[9]);
  CHECK(s1[7] == 2.0f);

  // Vector widths: softmax's shared row is read 4 lanes at a time with vec 4,
  // one with vec 1; the plain copy moves one float per access.
  CHECK(s1[11] == Approx(feature_log(1)));
  CHECK(s4[11] > s1[11]);
  CHECK(s4[10] > s1[10]);
  CHECK(gpu_block(gpu_copy(true))[10] == Approx(feature_log(1)));
  CHECK(gpu_block(gpu_copy(true))[11] == 0.0f);
}

TEST_CASE("features: a tensorized nest's instruction call is its hottest store", "[costmodel]") {
  // qmatmul with VNNI: the vpdpbusd call (8 operations per accumulator lane,
  // two operands read) is what runs most often, not the reset or the epilogue.
  CpuInfo cpu;
  cpu.avx512_vnni = true;
  const OpInstance op = build_workload("qmatmul:M=64,N=64,K=64");
  const OpDef& def = find_op("qmatmul");
  auto space = def.define_space(op, cpu);
  nlohmann::json j = def.default_config(op, cpu, *space).to_json();
  REQUIRE(j["tensorize"] == "vnni");
  auto features_of = [&](const nlohmann::json& cfg) {
    const ScheduledOp so = def.apply_config(op, space->from_json(cfg));
    return extract_features(lower(*so.schedule, so.args, "q", LowerDepth::kAnnotatedLoops));
  };
  const FeatureVector v = features_of(j);
  CHECK(v[ft::kGlobalOffset + 17] == 8.0f);
  CHECK(v[ft::kGlobalOffset + 18] == 2.0f);
  j["tensorize"] = "none";
  CHECK(features_of(j) != v);
}

TEST_CASE("features: the latency block counts pipeline slots, producer warps, bulk copies and the prefetches run",
          "[costmodel]") {
  auto latency = [](const LoweredFunc& f) {
    FeatureVector v = extract_features(f);
    return std::vector<float>(v.begin() + ft::kLatencyOffset, v.end());
  };
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  const OpInstance mm = build_workload("matmul:M=128,N=128,K=256,dtype=f16");
  const GpuTemplate& t = find_op("matmul").gpu;
  auto space = t.define_space(mm, gpu);
  for (int stages : {1, 3})
    for (int producers : {0, 2}) {
      nlohmann::json j = t.default_config(mm, gpu, *space).to_json();
      j["stages"] = stages;
      j["producer_warps"] = producers;
      j["bulk_copy"] = stages > 1 ? 1 : 0;
      ScheduledOp so = t.apply_config(mm, space->from_json(j));
      const std::vector<float> l = latency(lower_gpu(*so.schedule, so.args, "f", gpu, LowerDepth::kAnnotatedLoops));
      // (Producer warps with one stage take turns with the compute on one slot.)
      CHECK(l[0] == (stages > 1 ? 3.0f : producers > 0 ? 1.0f : 0.0f));
      CHECK(l[1] == 0.0f);
      CHECK(l[3] == static_cast<float>(producers));  // warp specialization
      CHECK(l[4] == (stages > 1 && producers > 0 ? 1.0f : 0.0f));  // bulk copies (with producer warps only)
      CHECK(l[5] == 0.0f);                                         // no wgmma products in flight
    }
  // wgmma products kept in flight (sm_90a, producer warps, 2 or more stages).
  const GpuLimits hopper = gpu_limits_for_arch("sm_90a");
  auto wg_space = t.define_space(mm, hopper);
  for (int in_flight : {0, 1}) {
    nlohmann::json j = t.default_config(mm, hopper, *wg_space).to_json();
    j.update({{"tensor_core", "wgmma"}, {"stages", 3}, {"producer_warps", 1}, {"mma_in_flight", in_flight}});
    ScheduledOp so = t.apply_config(mm, wg_space->from_json(j));
    const std::vector<float> l = latency(lower_gpu(*so.schedule, so.args, "f", hopper, LowerDepth::kAnnotatedLoops));
    CHECK(l[5] == static_cast<float>(in_flight));
    CHECK(l[6] == 0.0f);  // 8 x 8 tiles
  }
  // wgmma's operands swizzled: both with k tiles of 64, B alone with 32.
  for (int k16 : {2, 4}) {
    nlohmann::json j = t.default_config(mm, hopper, *wg_space).to_json();
    j.update({{"tensor_core", "wgmma"},
              {"wgmma_m", {1, 2}},
              {"wgmma_n", {2, 1, 8}},
              {"mma_k", {16 / k16, k16}},
              {"swizzle", 1}});
    ScheduledOp so = t.apply_config(mm, wg_space->from_json(j));
    const std::vector<float> l = latency(lower_gpu(*so.schedule, so.args, "f", hopper, LowerDepth::kAnnotatedLoops));
    CHECK(l[6] == (k16 == 4 ? 2.0f : 1.0f));
  }
  const OpInstance cpu_mm = build_workload("matmul:M=64,N=64,K=64");
  const OpDef& def = find_op("matmul");
  auto cpu_space = def.define_space(cpu_mm, CpuInfo{});
  nlohmann::json j = def.default_config(cpu_mm, CpuInfo{}, *cpu_space).to_json();
  j["prefetch"] = 4;
  j["tile_k"] = {1, 64};
  ScheduledOp so = def.apply_config(cpu_mm, cpu_space->from_json(j));
  const std::vector<float> l = latency(lower(*so.schedule, so.args, "f", LowerDepth::kAnnotatedLoops));
  CHECK(l[0] == 0.0f);
  CHECK(l[1] > 0.0f);
  j["prefetch"] = 0;
  so = def.apply_config(cpu_mm, cpu_space->from_json(j));
  CHECK(latency(lower(*so.schedule, so.args, "f", LowerDepth::kAnnotatedLoops))[1] == 0.0f);

  // The CPU's pipelines are lowered before the features are read: a
  // double-buffered pack of B (at the serial column-block loop, outside the
  // accumulator) still counts its two slots.
  const OpInstance packed = build_workload("matmul:M=12,N=64,K=16");
  auto packed_space = def.define_space(packed, CpuInfo{});
  for (int buffers : {1, 2}) {
    nlohmann::json p = def.default_config(packed, CpuInfo{}, *packed_space).to_json();
    p.update({{"tile_x", {4, 1, 16}},
              {"tile_y", {1, 1, 12}},
              {"order", {0, 1, 2, 3}},
              {"pack_b", 1},
              {"parallel", 0},
              {"acc_at", 3},
              {"pack_buffers", buffers}});
    so = def.apply_config(packed, packed_space->from_json(p));
    CHECK(latency(lower(*so.schedule, so.args, "f", LowerDepth::kAnnotatedLoops))[0] == (buffers == 2 ? 2.0f : 0.0f));
  }
}
