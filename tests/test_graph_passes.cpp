// The graph passes (graph/passes.h): each rewrite is checked against the
// interpreter on the model as imported, and that it happened.
#include <catch2/catch.hpp>

#include "graph/passes.h"
#include "support/graph_check.h"

using namespace kiln;
using kiln::test::check_model;
using kiln::test::OnnxBuilder;

namespace {

// x[1,C,H,W] -> Conv (3x3, pad 1, K channels, optional bias).
OnnxBuilder conv_model(int opset, int64_t C, int64_t K, bool bias) {
  OnnxBuilder b(opset);
  b.input("x", {1, C, 9, 7}).weight("w", {K, C, 3, 3}, {}, 2);
  std::vector<std::string> ins = {"x", "w"};
  if (bias) {
    b.weight("b", {K}, {}, 3);
    ins.push_back("b");
  }
  b.node("Conv", ins, {"c"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  return b;
}

// Layouts stay NCHW here: each pass's rewrite is the node it leaves
// (test_graph_layouts covers layout planning).
std::unique_ptr<graph::Executor> run(const OnnxBuilder& b, int64_t C, const std::string& what) {
  graph::ExecutorOptions options;
  options.plan_layouts = false;
  return check_model(b, {{"x", {1, C, 9, 7}}}, 4, what, options);
}

}  // namespace

TEST_CASE("passes: batch normalization folds into the convolution before it") {
  for (bool bias : {false, true}) {
    OnnxBuilder b = conv_model(9, 3, 5, bias);
    b.weight("scale", {5}, {}, 5).weight("shift", {5}, {}, 6).weight("mean", {5}, {}, 7)
        .weight("var", {5}, {0.5f, 1.f, 2.f, 0.25f, 3.f})
        .node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, {{"epsilon", 1e-3f}})
        .output("y");
    auto ex = run(b, 3, bias ? "bn after conv with bias" : "bn after conv");
    CHECK(ex->pass_stats().folded_affine == 1);
    CHECK(ex->steps().size() == 1);
  }
}

TEST_CASE("passes: per-channel Mul and Add fold, a broadcast over the wrong axis does not") {
  OnnxBuilder b = conv_model(11, 4, 6, true);
  b.weight("m", {6, 1, 1}, {}, 8).weight("a", {1, 6, 1, 1}, {}, 9)
      .node("Mul", {"c", "m"}, {"cm"}).node("Add", {"a", "cm"}, {"y"}).output("y");
  auto ex = run(b, 4, "conv * m + a");
  CHECK(ex->pass_stats().folded_affine == 2);
  CHECK(ex->steps().size() == 1);

  OnnxBuilder w = conv_model(11, 4, 6, false);
  w.weight("m", {7}, {}, 8).node("Mul", {"c", "m"}, {"y"}).output("y");  // broadcasts over W
  auto ex2 = run(w, 4, "conv * row");
  CHECK(ex2->pass_stats().folded_affine == 0);
}

TEST_CASE("passes: activations fuse into the convolution's epilogue") {
  struct Case {
    std::string name;
    std::function<void(OnnxBuilder&)> tail;
  };
  const std::vector<Case> cases = {
      {"relu", [](OnnxBuilder& b) { b.node("Relu", {"c"}, {"y"}); }},
      {"relu6 (Clip 0..6, opset 11 inputs)",
       [](OnnxBuilder& b) { b.weight("lo", {}, {0.f}).weight("hi", {}, {6.f}).node("Clip", {"c", "lo", "hi"}, {"y"}); }},
      {"hard-sigmoid 1/6", [](OnnxBuilder& b) { b.node("HardSigmoid", {"c"}, {"y"}, {{"alpha", 1.f / 6.f}, {"beta", 0.5f}}); }},
      {"hard-swish as exporters spell it",
       [](OnnxBuilder& b) {
         b.weight("three", {}, {3.f}).weight("lo", {}, {0.f}).weight("hi", {}, {6.f}).weight("six", {}, {6.f})
             .node("Add", {"c", "three"}, {"c3"}).node("Clip", {"c3", "lo", "hi"}, {"r6"})
             .node("Mul", {"c", "r6"}, {"m"}).node("Div", {"m", "six"}, {"y"});
       }},
  };
  for (const Case& k : cases) {
    OnnxBuilder b = conv_model(11, 3, 8, true);
    k.tail(b);
    b.output("y");
    auto ex = run(b, 3, k.name);
    CHECK(ex->pass_stats().fused_activation == 1);
    REQUIRE(ex->steps().size() == 1);
    CHECK(ex->steps()[0].workload.find("=1") != std::string::npos);
  }
  // HardSigmoid with another slope stays a node of its own.
  OnnxBuilder b = conv_model(11, 3, 8, true);
  b.node("HardSigmoid", {"c"}, {"y"}, {{"alpha", 0.2f}, {"beta", 0.5f}}).output("y");
  CHECK(run(b, 3, "hard-sigmoid 0.2")->pass_stats().fused_activation == 0);
  // A conv output read elsewhere too is not fused.
  OnnxBuilder two = conv_model(11, 3, 8, true);
  two.node("Relu", {"c"}, {"r"}).node("Add", {"r", "c"}, {"y"}).output("y");
  CHECK(run(two, 3, "relu with a second reader")->pass_stats().fused_activation == 0);
}

TEST_CASE("passes: a constant row added to a MatMul becomes its bias") {
  OnnxBuilder b(13);
  b.input("x", {2, 5, 12}).weight("w", {12, 7}, {}, 2).weight("bias", {7}, {}, 3)
      .node("MatMul", {"x", "w"}, {"mm"}).node("Add", {"mm", "bias"}, {"y"}).output("y");
  auto ex = check_model(b, {{"x", {2, 5, 12}}}, 6, "matmul + bias");
  CHECK(ex->pass_stats().fused_bias == 1);
  REQUIRE(ex->steps().size() == 1);
  CHECK(ex->steps()[0].workload.find("bias=1") != std::string::npos);
}

TEST_CASE("passes: constant matrix weights are packed once, at compile time") {
  // N = 37 is not a whole number of 32-column panels; the packing folds, so
  // only the product runs.
  for (bool bias : {false, true}) {
    OnnxBuilder b(13);
    b.input("x", {3, 19}).weight("w", {19, 37}, {}, 2).weight("bias", {37}, {}, 3).node("MatMul", {"x", "w"}, {"mm"});
    if (bias) b.node("Add", {"mm", "bias"}, {"y"}).output("y");
    else b.output("mm");
    auto ex = check_model(b, {{"x", {3, 19}}}, 8, bias ? "packed matmul + bias" : "packed matmul");
    CHECK(ex->pass_stats().packed_weights == 1);
    REQUIRE(ex->steps().size() == 1);
    CHECK(ex->steps()[0].workload.rfind("matmul_packed_b:M=3,N=37,K=19,nb=32", 0) == 0);
  }
  // A B computed at run time is not packed.
  OnnxBuilder dyn(13);
  dyn.input("x", {3, 4}).input("w", {4, 5}).node("MatMul", {"x", "w"}, {"y"}).output("y");
  CHECK(check_model(dyn, {{"x", {3, 4}}, {"w", {4, 5}}}, 9, "matmul by an input")->pass_stats().packed_weights == 0);
}

TEST_CASE("passes: a convolution padded differently on its sides reads a zero-padded copy") {
  // PP-OCRv4's recognizer has 1x3 convolutions with pads (0,1,0,1); an
  // asymmetric padding (a SAME padding written out) is the other case.
  for (const std::vector<int64_t>& pads : {std::vector<int64_t>{0, 1, 0, 1}, std::vector<int64_t>{0, 0, 1, 2}}) {
    for (bool relu : {false, true}) {
      OnnxBuilder b(11);
      b.input("x", {1, 4, 9, 7}).weight("w", {6, 4, 1, 3}, {}, 2).weight("b", {6}, {}, 3);
      b.node("Conv", {"x", "w", "b"}, {"c"},
             {{"kernel_shape", std::vector<int64_t>{1, 3}}, {"pads", pads}, {"strides", std::vector<int64_t>{2, 2}}});
      if (relu)
        b.node("Relu", {"c"}, {"y"}).output("y");
      else
        b.output("c");
      INFO(pads[0] << "," << pads[1] << "," << pads[2] << "," << pads[3] << (relu ? " relu" : ""));
      auto ex = check_model(b, {{"x", {1, 4, 9, 7}}}, 11, "conv with unequal pads");
      CHECK(ex->pass_stats().padded_inputs == 1);
      CHECK(ex->pass_stats().fused_activation == (relu ? 1 : 0));
      // The copy (a generic kernel), then kiln's conv2d, padding nothing.
      REQUIRE(ex->steps().size() == 2);
      CHECK(ex->steps()[0].workload.empty());
      CHECK(ex->steps()[1].workload.rfind("conv2d:", 0) == 0);
      CHECK(ex->steps()[1].workload.find(",pad=0,") != std::string::npos);
    }
  }
  // Equal pads, or unequal strides (the generic convolution either way), add no copy.
  OnnxBuilder same = conv_model(11, 3, 5, false);
  same.output("c");
  CHECK(run(same, 3, "conv with equal pads")->pass_stats().padded_inputs == 0);
  OnnxBuilder strided(11);
  strided.input("x", {1, 3, 9, 7}).weight("w", {5, 3, 3, 3}, {}, 2);
  strided
      .node("Conv", {"x", "w"}, {"c"},
            {{"pads", std::vector<int64_t>{0, 1, 0, 1}}, {"strides", std::vector<int64_t>{2, 1}}})
      .output("c");
  CHECK(run(strided, 3, "conv with unequal strides")->pass_stats().padded_inputs == 0);
}

TEST_CASE("passes: an upsampling ConvTranspose (kernel equal to its stride) runs as a matrix product") {
  using Ints = std::vector<int64_t>;
  // Square and oblong kernels, with and without a bias, then a relu.
  for (const Ints& k : {Ints{2, 2}, Ints{3, 2}, Ints{1, 1}}) {
    for (bool bias : {false, true}) {
      OnnxBuilder b(11);
      b.input("x", {1, 6, 5, 7}).weight("w", {6, 4, k[0], k[1]}, {}, 2).weight("b", {4}, {}, 3);
      std::vector<std::string> ins = {"x", "w"};
      if (bias) ins.push_back("b");
      b.node("ConvTranspose", ins, {"c"}, {{"kernel_shape", k}, {"strides", k}}).node("Relu", {"c"}, {"y"}).output("y");
      INFO(k[0] << "x" << k[1] << (bias ? " bias" : ""));
      auto ex = check_model(b, {{"x", {1, 6, 5, 7}}}, 12, "upsampling ConvTranspose");
      CHECK(ex->pass_stats().gemm_conv_transposes == 1);
      // The product: Wt [4*kh*kw, 6] times x as [6, 35].
      int products = 0;
      for (const graph::PlanStep& s : ex->steps())
        if (s.workload.rfind("matmul:M=" + std::to_string(4 * k[0] * k[1]) + ",N=35,K=6,", 0) == 0) ++products;
      CHECK(products == 1);
    }
  }
  // Padding, output padding, a stride other than the kernel, two groups or a
  // batch of two keep the gather (and still agree with the interpreter).
  struct Case {
    const char* what;
    Ints x, w, strides, pads, out_pad;
    int64_t groups;
  };
  for (const Case& c : {Case{"pads", {1, 4, 5, 5}, {4, 3, 2, 2}, {2, 2}, {1, 0, 1, 0}, {0, 0}, 1},
                        Case{"output padding", {1, 4, 5, 5}, {4, 3, 2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 0}, 1},
                        Case{"stride 3", {1, 4, 5, 5}, {4, 3, 2, 2}, {3, 3}, {0, 0, 0, 0}, {0, 0}, 1},
                        Case{"groups", {1, 4, 5, 5}, {4, 3, 2, 2}, {2, 2}, {0, 0, 0, 0}, {0, 0}, 2},
                        Case{"batch 2", {2, 4, 5, 5}, {4, 3, 2, 2}, {2, 2}, {0, 0, 0, 0}, {0, 0}, 1}}) {
    OnnxBuilder b(11);
    b.input("x", c.x).weight("w", c.w, {}, 4);
    b.node("ConvTranspose", {"x", "w"}, {"y"},
           {{"kernel_shape", Ints{2, 2}},
            {"strides", c.strides},
            {"pads", c.pads},
            {"output_padding", c.out_pad},
            {"group", c.groups}})
        .output("y");
    auto ex = check_model(b, {{"x", c.x}}, 13, c.what);
    CHECK(ex->pass_stats().gemm_conv_transposes == 0);
  }
}

TEST_CASE("import: a depthwise Conv with strides (2, 1) runs on depthwise_conv2d with its own stride in W") {
  // The classifier's MobileNetV3 downsamples rows only.
  OnnxBuilder b(11);
  b.input("x", {1, 6, 11, 9}).weight("w", {6, 1, 3, 3}, {}, 2).weight("b", {6}, {}, 3);
  b.node("Conv", {"x", "w", "b"}, {"y"},
         {{"group", int64_t{6}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 1}}})
      .output("y");
  auto ex = check_model(b, {{"x", {1, 6, 11, 9}}}, 12, "depthwise conv, strides (2, 1)");
  REQUIRE(ex->steps().size() == 1);
  CHECK(ex->steps()[0].workload.rfind("depthwise_conv2d:", 0) == 0);
  CHECK(ex->steps()[0].workload.find(",stride=2,") != std::string::npos);
  CHECK(ex->steps()[0].workload.find(",stride_w=1") != std::string::npos);
}
