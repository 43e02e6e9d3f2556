// Layout planning (graph/layout_planning.h): convolutions on NCHW[x]c with
// weights packed at compile time, blocked tensors between them, conversions
// only where a node needs NCHW. Each model is checked against the
// interpreter on the model as imported, and the plan is checked too.
#include <catch2/catch.hpp>
#include <random>

#include "graph/layout_planning.h"
#include "support/graph_check.h"
#include "support/random_network.h"

using namespace kiln;
using kiln::test::check_model;
using kiln::test::OnnxBuilder;

namespace {

using Ints = std::vector<int64_t>;

void conv(OnnxBuilder& b, const std::string& in, const std::string& out, int64_t C, int64_t K, int64_t k, int64_t pad,
          int64_t sh, int64_t sw, int64_t groups, uint64_t seed) {
  kiln::test::add_conv(b, in, out, C, K, k, pad, sh, sw, groups, seed);
}

int count_steps(const graph::Executor& ex, const std::string& op_type) {
  int n = 0;
  for (const graph::PlanStep& s : ex.steps()) n += ex.graph().nodes[static_cast<size_t>(s.node)].op_type == op_type;
  return n;
}

std::unique_ptr<graph::Executor> check(const OnnxBuilder& b, const Ints& shape, uint64_t seed,
                                       const std::string& what) {
  return check_model(b, {{"x", shape}}, seed, what);
}

}  // namespace

TEST_CASE("layouts: a chain of convolutions stays blocked, converted at its two ends only") {
  // A first layer of 3 channels (one block of 3), a depthwise layer with
  // strides (2, 1), a pointwise layer, a relu fused on the way.
  OnnxBuilder b(11);
  b.input("x", {1, 3, 17, 15});
  conv(b, "x", "c1", 3, 16, 3, 1, 2, 2, 1, 2);
  b.node("Relu", {"c1"}, {"r1"});
  conv(b, "r1", "c2", 16, 16, 3, 1, 2, 1, 16, 4);
  conv(b, "c2", "c3", 16, 32, 1, 0, 1, 1, 1, 6);
  b.output("c3");
  auto ex = check(b, {1, 3, 17, 15}, 3, "conv chain");
  const graph::PassStats& st = ex->pass_stats();
  CHECK(st.blocked_convs == 3);
  CHECK(st.layout_conversions == 2);
  CHECK(count_steps(*ex, graph::kConvBlocked) == 3);
  CHECK(count_steps(*ex, graph::kToBlocked) == 1);
  CHECK(count_steps(*ex, graph::kFromBlocked) == 1);
  // Weights fold at compile time: no step packs them.
  CHECK(count_steps(*ex, graph::kPackConvWeight) == 0);
  std::vector<std::string> workloads;
  for (const graph::PlanStep& s : ex->steps())
    if (!s.workload.empty()) workloads.push_back(s.workload);
  REQUIRE(workloads.size() == 3);
  CHECK(workloads[0].rfind("conv2d_nchwc:", 0) == 0);
  CHECK(workloads[0].find(",cb=3,kb=16,") != std::string::npos);
  CHECK(workloads[0].find("relu=1") != std::string::npos);
  CHECK(workloads[1].rfind("depthwise_conv2d_nchwc:", 0) == 0);
  CHECK(workloads[1].find(",stride=2,") != std::string::npos);
  CHECK(workloads[1].find(",stride_w=1") != std::string::npos);
  CHECK(workloads[2].find(",cb=16,kb=16,") != std::string::npos);
}

TEST_CASE("layouts: element-wise nodes and global pools run blocked (a squeeze-excite block and a residual add)") {
  OnnxBuilder b(11);
  b.input("x", {1, 32, 9, 11});
  conv(b, "x", "c1", 32, 32, 3, 1, 1, 1, 1, 2);
  b.node("GlobalAveragePool", {"c1"}, {"p"});
  conv(b, "p", "s1", 32, 8, 1, 0, 1, 1, 1, 4);  // 8 channels: blocks of 8
  b.node("Relu", {"s1"}, {"s1r"});
  conv(b, "s1r", "s2", 8, 32, 1, 0, 1, 1, 1, 6);
  b.node("HardSigmoid", {"s2"}, {"s"}, {{"alpha", 0.2f}, {"beta", 0.5f}});  // not fused: slope 0.2
  b.node("Mul", {"c1", "s"}, {"m"});
  b.node("Add", {"m", "x"}, {"a"});
  b.weight("half", {1}, {0.5f});
  b.node("Mul", {"a", "half"}, {"y"});
  b.output("y");
  auto ex = check(b, {1, 32, 9, 11}, 5, "squeeze-excite");
  const graph::PassStats& st = ex->pass_stats();
  CHECK(st.blocked_convs == 3);
  // The pool, the hard-sigmoid, the two Muls and the Add.
  CHECK(st.blocked_nodes == 5);
  // x is blocked once for the conv and the Add; y converts back.
  CHECK(st.layout_conversions == 2);
}

TEST_CASE("layouts: NCHW where a node needs it, blocked where it does not") {
  // c1 (blocked) is read by a Flatten, by a conv whose 20 channels do not
  // block (it runs NCHW) and by a blocked conv; the per-channel constant
  // added after that one's relu is blocked at compile time.
  OnnxBuilder b(11);
  b.input("x", {1, 16, 6, 5});
  conv(b, "x", "c1", 16, 16, 3, 1, 1, 1, 1, 2);
  b.node("Flatten", {"c1"}, {"f"}, {{"axis", int64_t{1}}});
  conv(b, "c1", "c2", 16, 20, 1, 0, 1, 1, 1, 4);
  conv(b, "c1", "c3", 16, 16, 3, 1, 1, 1, 1, 6);
  b.node("Relu", {"c3"}, {"r3"});
  b.weight("k", {1, 16, 1, 1}, {}, 9);
  b.node("Add", {"r3", "k"}, {"y"});
  b.output("f").output("c2").output("y");
  auto ex = check(b, {1, 16, 6, 5}, 7, "mixed layouts");
  const graph::PassStats& st = ex->pass_stats();
  CHECK(st.blocked_convs == 2);
  CHECK(st.blocked_nodes == 1);
  // x blocked; c1 back to NCHW once (the Flatten and c2 share it); y back.
  CHECK(st.layout_conversions == 3);
  CHECK(count_steps(*ex, graph::kToBlocked) == 1);
  CHECK(count_steps(*ex, graph::kFromBlocked) == 2);
  CHECK(count_steps(*ex, "Conv") == 1);
}

TEST_CASE("layouts: without layout planning every tensor stays NCHW") {
  OnnxBuilder b(11);
  b.input("x", {1, 16, 6, 5});
  conv(b, "x", "c1", 16, 32, 3, 1, 1, 1, 1, 2);
  b.output("c1");
  graph::ExecutorOptions options;
  options.plan_layouts = false;
  auto ex = check_model(b, {{"x", {1, 16, 6, 5}}}, 3, "no planning", options);
  CHECK(ex->pass_stats().blocked_convs == 0);
  REQUIRE(ex->steps().size() == 1);
  CHECK(ex->steps()[0].workload.rfind("conv2d:", 0) == 0);
}

TEST_CASE("layouts: random networks of convolutions and element-wise nodes agree with the interpreter") {
  // Channels that block by 16, by 8, by one block of a few, or not at all;
  // depthwise and dense layers, strides, padding, residual adds.
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    kiln::test::RandomNetwork net = kiln::test::random_network(seed, {3, 8, 16, 20, 24, 32, 48}, 5, 9);
    if (!net.empty) check(net.model, net.input_shape, seed, net.what);
  }
}
